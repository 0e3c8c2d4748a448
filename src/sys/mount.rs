//! `mount_setattr(2)` (Linux 5.12): change the flags of a mount, and with
//! `AT_RECURSIVE` of every mount below it, which is what `rro` needs. nix
//! has no wrapper for it yet.

use nix::libc;
use std::ffi::CStr;

pub const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
pub const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
pub const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x0000_0008;

/// `struct mount_attr` (MOUNT_ATTR_SIZE_VER0, 32 bytes).
#[repr(C)]
#[derive(Debug, Default)]
pub struct MountAttr {
    pub attr_set: u64,
    pub attr_clr: u64,
    pub propagation: u64,
    pub userns_fd: u64,
}

/// `mount_setattr(AT_FDCWD, path, flags, attr)`.
pub fn mount_setattr(path: &CStr, flags: libc::c_uint, attr: &MountAttr) -> std::io::Result<()> {
    // SAFETY: a valid C string and a valid `struct mount_attr` of the size
    // passed; the kernel only reads them.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Does the kernel have `mount_setattr(2)`? Asked with arguments it must
/// reject: ENOSYS means no such call, any other answer means it exists.
pub fn kernel_has_mount_setattr() -> bool {
    // SAFETY: a NULL attribute pointer of size 0 with an empty path on an
    // invalid descriptor: the kernel rejects it before touching anything.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            -1 as libc::c_int,
            c"".as_ptr(),
            0 as libc::c_uint,
            std::ptr::null_mut::<libc::c_void>(),
            0 as libc::size_t,
        )
    };
    ret == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attribute_struct_has_the_kernels_size() {
        assert_eq!(std::mem::size_of::<MountAttr>(), 32);
    }

    #[test]
    fn a_bad_call_is_an_error_not_a_crash() {
        if !kernel_has_mount_setattr() {
            return;
        }
        // Not a mount point (or, unprivileged, not allowed): refused.
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            ..MountAttr::default()
        };
        assert!(mount_setattr(c"/nonexistent/userns-hostnet", 0, &attr).is_err());
    }
}
