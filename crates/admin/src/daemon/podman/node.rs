//! Where podman's config lives on a node.

/// podman's system-wide containers.conf, which `install podman` edits.
pub const CONFIG: &str = "/etc/containers/containers.conf";

/// The vendor's containers.conf, which podman reads first.
pub const VENDOR_CONFIG: &str = "/usr/share/containers/containers.conf";

/// Where podman looks for hook definitions when containers.conf names no
/// `hooks_dir`.
pub const DEFAULT_HOOKS_DIRS: [&str; 2] = [
    "/usr/share/containers/oci/hooks.d",
    "/etc/containers/oci/hooks.d",
];

/// podman's drop-in directory beside containers.conf.
pub const DROP_INS: &str = "/etc/containers/containers.conf.d";
