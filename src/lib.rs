//! userns-hostnet: run user-namespaced containers on the host network.
//!
//! A fresh sysfs cannot be mounted by a container whose user namespace does
//! not own its network namespace. The engine (the crate
//! `userns_hostnet_engine`) decides, from a runtime spec and facts about the
//! host, whether a container is in that situation and how its spec must
//! change (a recursively read-only bind of the host's /sys, the
//! mount order, its own cgroup view, the network capabilities that grant
//! nothing there, the `net.*` sysctls that cannot apply). The engine is pure;
//! the rest of the crate is the thin shell around it: argv scanning, bundle
//! I/O, host facts, runtime lookup and exec, runc-format error logs.

/// The wrapper's file name, as it names itself in errors.
pub const WRAPPER_NAME: &str = "userns-hostnet-runtime";

/// The short git commit the binaries were built from (`unknown` outside a
/// git checkout), recorded by build.rs.
pub const COMMIT: &str = env!("USERNS_HOSTNET_COMMIT");

/// The build date, UTC in RFC 3339 (`SOURCE_DATE_EPOCH` when the build set
/// it), recorded by build.rs.
pub const BUILD_DATE: &str = env!("USERNS_HOSTNET_BUILD_DATE");

/// The version and the git commit the binaries were built from
/// (`unknown` outside a git checkout): `0.1.0 (commit 0123456789ab)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("USERNS_HOSTNET_COMMIT"),
    ")"
);

pub mod argv;
pub mod bundle;
pub mod config;
pub mod decisionlog;
pub mod hash;
pub mod host;
pub mod plan;
pub mod probe;
pub mod records;
pub mod runclog;
pub mod runtime;
pub mod sys;
pub mod wrapper;
