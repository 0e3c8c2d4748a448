//! The system calls of `hook create-runtime`: the container's process
//! directory held open, its mount namespace entered, and one recursive
//! `mount_setattr` per tree. The hook process is single-threaded (nothing
//! here or before spawns a thread), which `setns(CLONE_NEWNS)` requires.

use nix::fcntl::{openat, OFlag};
use nix::libc;
use nix::sched::{setns, CloneFlags};
use nix::sys::stat::Mode;
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use userns_hostnet::sys::mount::{
    self, MountAttr, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};

/// Why the container's /sys could not be reached or hardened.
#[derive(Debug, thiserror::Error)]
pub enum HardenError {
    #[error("{path}: {}", errno.desc())]
    Open {
        path: String,
        errno: nix::errno::Errno,
    },
    #[error("/proc/{pid}/mountinfo: {source}")]
    Mountinfo {
        pid: i32,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot enter the mount namespace of pid {pid}: {}", errno.desc())]
    EnterMountNamespace { pid: i32, errno: nix::errno::Errno },
    #[error("{path}: has a NUL byte")]
    NulByte { path: String },
    #[error("mount_setattr {path}: {source}{}", setattr_hint(source))]
    MountSetattr {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What an operator can make of the two errors that have one meaning here.
fn setattr_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => " (the kernel has no mount_setattr: it needs 5.12)",
        Some(libc::EINVAL) => " (not a mount point, or a symbolic link)",
        _ => "",
    }
}

/// The hook's hardening still reports in text.
impl From<HardenError> for String {
    fn from(e: HardenError) -> String {
        e.to_string()
    }
}

/// The container's init process, by a descriptor of its `/proc` directory:
/// what is read through it after `setns` is still that process's, whatever
/// `/proc` means in the namespace entered.
pub struct Container {
    pid: i32,
    dir: OwnedFd,
}

impl Container {
    pub fn open(pid: i32) -> Result<Container, HardenError> {
        let path = format!("/proc/{pid}");
        let fd = nix::fcntl::open(
            path.as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| HardenError::Open { path, errno })?;
        // SAFETY: `open` just returned this descriptor and nothing else owns it.
        let dir = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Container { pid, dir })
    }

    fn open_at(&self, name: &str, flags: OFlag) -> Result<OwnedFd, HardenError> {
        let fd = openat(
            Some(self.dir.as_raw_fd()),
            name,
            flags | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| HardenError::Open {
            path: format!("/proc/{}/{name}", self.pid),
            errno,
        })?;
        // SAFETY: `openat` just returned this descriptor and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The process's mountinfo, read now.
    pub fn mountinfo(&self) -> Result<String, HardenError> {
        let fd = self.open_at("mountinfo", OFlag::O_RDONLY)?;
        let mut text = String::new();
        std::fs::File::from(fd)
            .read_to_string(&mut text)
            .map_err(|source| HardenError::Mountinfo {
                pid: self.pid,
                source,
            })?;
        Ok(text)
    }

    /// Move this process into the container's mount namespace. Paths then
    /// resolve as the container's init sees them (before `pivot_root`).
    pub fn enter_mount_namespace(&self) -> Result<(), HardenError> {
        let ns = self.open_at("ns/mnt", OFlag::O_RDONLY)?;
        setns(&ns, CloneFlags::CLONE_NEWNS).map_err(|errno| HardenError::EnterMountNamespace {
            pid: self.pid,
            errno,
        })
    }
}

/// `mount_setattr(path, AT_RECURSIVE)` with `options`, each of `ro`,
/// `nosuid`, `nodev` and `noexec`: what `rro` and those options would have
/// made. Setting flags only restricts, so the kernel allows it on locked
/// mounts too. The tree is made private in the same call: a mount the host
/// makes later under a slave of its tree would arrive with its own,
/// writable options. The last component is not followed: a symlink in the
/// rootfs cannot redirect it.
pub fn restrict(path: &str, options: &[&str]) -> Result<(), HardenError> {
    let c = CString::new(path).map_err(|_| HardenError::NulByte {
        path: path.to_owned(),
    })?;
    let attr_set = options.iter().fold(0, |set, o| {
        set | match *o {
            "ro" => MOUNT_ATTR_RDONLY,
            "nosuid" => MOUNT_ATTR_NOSUID,
            "nodev" => MOUNT_ATTR_NODEV,
            "noexec" => MOUNT_ATTR_NOEXEC,
            _ => 0,
        }
    });
    let attr = MountAttr {
        attr_set,
        propagation: libc::MS_PRIVATE,
        ..MountAttr::default()
    };
    let flags = (libc::AT_RECURSIVE | libc::AT_SYMLINK_NOFOLLOW) as libc::c_uint;
    mount::mount_setattr(&c, flags, &attr).map_err(|source| HardenError::MountSetattr {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_failed_on_one_line() {
        let e = Container::open(999_999_999).err().unwrap().to_string();
        assert_eq!(e, "/proc/999999999: No such file or directory");
        assert_eq!(
            restrict("/a\0b", &["ro"]).unwrap_err().to_string(),
            "/a\0b: has a NUL byte"
        );
        let e = restrict("/nonexistent/userns-hostnet", &["ro"]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("mount_setattr /nonexistent/userns-hostnet: "),
            "{e}"
        );
        let einval = std::io::Error::from_raw_os_error(libc::EINVAL);
        assert_eq!(
            setattr_hint(&einval),
            " (not a mount point, or a symbolic link)"
        );
    }
}
