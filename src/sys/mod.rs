//! The I/O primitives the shell is built from, each in one place: atomic
//! file replacement, a directory's names, a path resolved, a subprocess with a deadline, `mount_setattr`,
//! mountinfo parsing, whole /proc files, node paths under a root, a mount destination walked
//! as the runtime walks it in a rootfs, TOML files of the daemons, the fallback PATH, and
//! the start-up Rust's runtime would do for a `#![no_main]` binary, and
//! the allocator of a process that ends in `execve`.
//! Nothing here knows about specs or policies.

pub mod arena;
pub mod atomic;
pub mod deadline;
pub mod dest_walk;
pub mod dir;
pub mod in_root;
pub mod mount;
pub mod mountinfo;
pub mod paths;
pub mod procfs;
pub mod realpath;
pub mod start;
pub mod toml;
