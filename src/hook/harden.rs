//! The system calls of `hook create-runtime`: the container's process
//! directory held open, its mount namespace entered, and one recursive
//! `mount_setattr` per tree. The hook process is single-threaded (nothing
//! here or before spawns a thread), which `setns(CLONE_NEWNS)` requires.

use crate::sys::mount::{
    self, MountAttr, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};
use nix::fcntl::{openat, OFlag};
use nix::libc;
use nix::sched::{setns, CloneFlags};
use nix::sys::stat::Mode;
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The container's init process, by a descriptor of its `/proc` directory:
/// what is read through it after `setns` is still that process's, whatever
/// `/proc` means in the namespace entered.
pub struct Container {
    pid: i32,
    dir: OwnedFd,
}

impl Container {
    pub fn open(pid: i32) -> Result<Container, String> {
        let path = format!("/proc/{pid}");
        let fd = nix::fcntl::open(
            path.as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("{path}: {}", e.desc()))?;
        // SAFETY: `open` just returned this descriptor and nothing else owns it.
        let dir = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Container { pid, dir })
    }

    fn open_at(&self, name: &str, flags: OFlag) -> Result<OwnedFd, String> {
        let fd = openat(
            Some(self.dir.as_raw_fd()),
            name,
            flags | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("/proc/{}/{name}: {}", self.pid, e.desc()))?;
        // SAFETY: `openat` just returned this descriptor and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The process's mountinfo, read now.
    pub fn mountinfo(&self) -> Result<String, String> {
        let fd = self.open_at("mountinfo", OFlag::O_RDONLY)?;
        let mut text = String::new();
        std::fs::File::from(fd)
            .read_to_string(&mut text)
            .map_err(|e| format!("/proc/{}/mountinfo: {e}", self.pid))?;
        Ok(text)
    }

    /// Move this process into the container's mount namespace. Paths then
    /// resolve as the container's init sees them (before `pivot_root`).
    pub fn enter_mount_namespace(&self) -> Result<(), String> {
        let ns = self.open_at("ns/mnt", OFlag::O_RDONLY)?;
        setns(&ns, CloneFlags::CLONE_NEWNS).map_err(|e| {
            format!(
                "cannot enter the mount namespace of pid {}: {}",
                self.pid,
                e.desc()
            )
        })
    }
}

/// `mount_setattr(path, AT_RECURSIVE)` with read-only, nosuid, nodev and
/// noexec: what `rro,nosuid,nodev,noexec` would have made. Setting flags
/// only restricts, so the kernel allows it on locked mounts too. The last
/// component is not followed: a symlink in the rootfs cannot redirect it.
pub fn make_read_only(path: &str) -> Result<(), String> {
    let c = CString::new(path).map_err(|_| format!("{path}: has a NUL byte"))?;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        ..MountAttr::default()
    };
    let flags = (libc::AT_RECURSIVE | libc::AT_SYMLINK_NOFOLLOW) as libc::c_uint;
    let Err(e) = mount::mount_setattr(&c, flags, &attr) else {
        return Ok(());
    };
    let hint = match e.raw_os_error() {
        Some(libc::ENOSYS) => " (the kernel has no mount_setattr: it needs 5.12)",
        Some(libc::EINVAL) => " (not a mount point, or a symbolic link)",
        _ => "",
    };
    Err(format!("mount_setattr {path}: {e}{hint}"))
}
