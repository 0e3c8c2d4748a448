//! Where programs are looked for when the caller gave no PATH: podman 4.3
//! calls the runtime's `kill` and `delete` with none, and hooks run with
//! only the environment their definition gives them.

/// A system's usual PATH, root's first.
pub const FALLBACK_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
