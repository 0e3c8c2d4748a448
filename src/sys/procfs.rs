//! Whole files of /proc. The kernel gives them no size, so a read sized
//! from the file starts at a few bytes and doubles: seven system calls for
//! a mountinfo of a few kilobytes, each of which makes the kernel find its
//! place in the mount list again. Read with room for the usual size
//! first, a file costs one read and the one that finds its end.

use std::io::Read;
use std::path::Path;

/// Room for `/proc/PID/stat` or `fdinfo`.
pub const SMALL: usize = 1 << 10;
/// Room for the mountinfo of a node running a few hundred mounts.
pub const MOUNTINFO: usize = 64 << 10;

/// The whole of `path`, read with room for `room` bytes at first.
pub fn read(path: impl AsRef<Path>, room: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(room);
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The same as text.
pub fn read_string(path: impl AsRef<Path>, room: usize) -> std::io::Result<String> {
    String::from_utf8(read(path, room)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_larger_than_its_room_is_read_whole() {
        let stat = super::read("/proc/self/stat", 4).unwrap();
        assert!(stat.ends_with(b"\n"), "{}", String::from_utf8_lossy(&stat));
        let again = super::read_string("/proc/self/mountinfo", 16).unwrap();
        assert!(again.lines().count() >= 1 && again.ends_with('\n'));
    }
}
