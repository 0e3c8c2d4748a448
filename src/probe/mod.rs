//! Can this host make the host's /sys read-only all the way down? `rro`
//! (`mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`) needs Linux 5.12 and
//! a runtime that knows the option.
//!
//! The kernel is asked with one system call. The runtime is asked with
//! `<runtime> features` (runc >= 1.1 lists `rro` in `mountOptions`), else
//! `<runtime> --version` (crun 1.8.1 has no `features` yet has known `rro`
//! since 1.4). When those say no, or neither answers, the runtime is asked
//! to do it ([`trial`]): youki 0.7.0 lists no `rro` yet applies it. That
//! costs a process (a container, for a trial), so the settled answer is
//! cached per runtime binary: a container start costs no extra process
//! after the first.
//!
//! This runs inside the wrapper before it becomes the real runtime, so the
//! probe child gets none of the caller's descriptors (conmon's sync pipes,
//! `--preserve-fds`), reads nothing, prints nothing anyone sees, and is
//! killed if it does not answer in time ([`crate::sys::deadline`]).

pub mod answer;
mod cache;
#[cfg(test)]
mod tests;
pub mod trial;

use crate::sys::deadline::{run, RunError};
use crate::sys::mount::kernel_has_mount_setattr;
use answer::{features_list_rro, version_knows_rro, VersionError};
use cache::Identity;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use userns_hostnet_engine::RroSupport;

/// Where runtime answers are cached.
pub const CACHE_DIR: &str = "/run/userns-hostnet";
/// How long the runtime has to answer, both questions together.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// The reason given when the kernel cannot do it.
pub const KERNEL_REASON: &str = "kernel has no mount_setattr (needs 5.12)";

/// Why a runtime is not known to support `rro`, in words an operator can
/// act on. The settled answers are cached, so they serialize.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum ProbeError {
    #[error("{}: \"features\" lists no rro mount option", runtime.display())]
    FeaturesWithoutRro { runtime: PathBuf },
    #[error("{}: {reason}", runtime.display())]
    Version {
        runtime: PathBuf,
        reason: VersionError,
    },
    #[error("{}: neither \"features\" nor \"--version\" answered", runtime.display())]
    NoAnswer { runtime: PathBuf },
    #[error("{}: cannot run: {reason}", runtime.display())]
    Spawn { runtime: PathBuf, reason: String },
    #[error("{}: \"{question}\": cannot read: {reason}", runtime.display())]
    Read {
        runtime: PathBuf,
        question: String,
        reason: String,
    },
    #[error("{}: \"features\" did not answer within {}s", runtime.display(), timeout.as_secs_f64())]
    FeaturesTimeout { runtime: PathBuf, timeout: Duration },
    #[error("{}: \"features\" and \"--version\" did not answer within {}s", runtime.display(), timeout.as_secs_f64())]
    Timeout { runtime: PathBuf, timeout: Duration },
    /// Its answers said no, and so did a trial container.
    #[error("{}: {said}; {trial}", runtime.display())]
    Trial {
        runtime: PathBuf,
        said: String,
        trial: String,
    },
}

impl ProbeError {
    /// What the runtime's own answers said, without its path.
    fn said(&self) -> String {
        let full = self.to_string();
        let runtime = match self {
            ProbeError::FeaturesWithoutRro { runtime } | ProbeError::Version { runtime, .. } => {
                runtime
            }
            _ => return full,
        };
        let prefix = format!("{}: ", runtime.display());
        full.strip_prefix(&prefix).unwrap_or(&full).to_owned()
    }
}

/// Does `runtime` know the `rro` mount option? `Ok` says how that is
/// known. A trial container, if one is needed, is made under `trials`.
pub fn runtime_knows_rro(runtime: &Path, trials: &Path) -> Result<String, ProbeError> {
    probe_runtime(runtime, PROBE_TIMEOUT, trials).answer
}

/// Kernel and runtime together, the runtime's answer from the cache in
/// `cache_dir` when the binary has not changed since it was asked.
pub fn rro_support(runtime: &Path, cache_dir: &Path) -> RroSupport {
    if !kernel_has_mount_setattr() {
        return RroSupport::Unsupported(KERNEL_REASON.to_owned());
    }
    match runtime_knows_rro_cached(runtime, cache_dir, PROBE_TIMEOUT) {
        Ok(_) => RroSupport::Supported,
        Err(reason) => RroSupport::Unsupported(reason.to_string()),
    }
}

/// The runtime's answer, from the cache or asked and then cached.
fn runtime_knows_rro_cached(
    runtime: &Path,
    cache_dir: &Path,
    timeout: Duration,
) -> Result<String, ProbeError> {
    let id = Identity::of(runtime);
    if let Some(id) = &id {
        if let Some(hit) = cache::read(cache_dir, id) {
            return hit;
        }
    }
    let probe = probe_runtime(runtime, timeout, cache_dir);
    if let (Some(id), true) = (&id, probe.definitive) {
        // A cache that cannot be written costs a process next time, nothing
        // more.
        let _ = cache::write(cache_dir, id, &probe.answer);
    }
    probe.answer
}

/// A probe's answer, and whether it would be the same next time (a
/// timeout or a failure to start may not be).
struct Probe {
    answer: Result<String, ProbeError>,
    definitive: bool,
}

impl Probe {
    fn settled(answer: Result<String, ProbeError>) -> Probe {
        Probe {
            answer,
            definitive: true,
        }
    }

    fn transient(reason: ProbeError) -> Probe {
        Probe {
            answer: Err(reason),
            definitive: false,
        }
    }
}

/// Ask the runtime; when its answers settle on no, ask it to do it.
fn probe_runtime(runtime: &Path, timeout: Duration, trials: &Path) -> Probe {
    let asked = ask_runtime(runtime, timeout);
    match &asked.answer {
        Err(said @ (ProbeError::FeaturesWithoutRro { .. } | ProbeError::Version { .. }))
            if asked.definitive =>
        {
            match trial::run(runtime, trials) {
                Ok(seen) => Probe::settled(Ok(format!("{}, but {seen}", said.said()))),
                Err(failed) => {
                    let reason = ProbeError::Trial {
                        runtime: runtime.to_owned(),
                        said: said.said(),
                        trial: failed.reason,
                    };
                    match failed.settled {
                        true => Probe::settled(Err(reason)),
                        false => Probe::transient(reason),
                    }
                }
            }
        }
        _ => asked,
    }
}

/// What the runtime says of itself: `features`, else `--version`.
fn ask_runtime(runtime: &Path, timeout: Duration) -> Probe {
    let deadline = Instant::now() + timeout;
    let rt = || runtime.to_owned();
    let read = |question: &str, e: std::io::Error| ProbeError::Read {
        runtime: rt(),
        question: question.to_owned(),
        reason: e.to_string(),
    };
    let spawn = |e: std::io::Error| ProbeError::Spawn {
        runtime: rt(),
        reason: e.to_string(),
    };
    match run(runtime, "features", deadline) {
        Ok(out) if out.status.success() => match features_list_rro(&out.stdout) {
            Some(true) => return Probe::settled(Ok("\"features\" lists rro".to_owned())),
            Some(false) => {
                return Probe::settled(Err(ProbeError::FeaturesWithoutRro { runtime: rt() }))
            }
            None => {}
        },
        // No `features` subcommand, or no answer from it: ask the version.
        Ok(_) | Err(RunError::TooLarge) => {}
        Err(RunError::Spawn(e)) => return Probe::transient(spawn(e)),
        Err(RunError::Timeout) => {
            return Probe::transient(ProbeError::FeaturesTimeout {
                runtime: rt(),
                timeout,
            })
        }
        Err(RunError::Read(e)) => return Probe::transient(read("features", e)),
    }
    match run(runtime, "--version", deadline) {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let first = text.lines().next().unwrap_or("").trim();
            Probe::settled(
                version_knows_rro(first).map_err(|reason| ProbeError::Version {
                    runtime: rt(),
                    reason,
                }),
            )
        }
        Ok(_) | Err(RunError::TooLarge) => Probe::transient(ProbeError::NoAnswer { runtime: rt() }),
        Err(RunError::Spawn(e)) => Probe::transient(spawn(e)),
        Err(RunError::Timeout) => Probe::transient(ProbeError::Timeout {
            runtime: rt(),
            timeout,
        }),
        Err(RunError::Read(e)) => Probe::transient(read("--version", e)),
    }
}
