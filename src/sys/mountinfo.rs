//! `/proc/PID/mountinfo` lines (proc(5)): mount and parent ids, the mount
//! point, the per-mount options and the filesystem type.

use userns_hostnet_engine::path::is_below;

/// One line of mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub id: u64,
    pub parent: u64,
    /// Field 3, `major:minor`: the device of the file system, as `st_dev`
    /// of a file on it reads.
    pub dev: u64,
    /// Field 5, unescaped: relative to the process's root.
    pub mount_point: String,
    /// Field 6: the per-mount options (`ro`, `nosuid`, ...).
    pub options: Vec<String>,
    pub fstype: String,
    /// The optional fields hold `master:N`: mounts made under the master's
    /// peer group propagate into this one.
    pub slave: bool,
}

impl Mount {
    pub fn has(&self, opt: &str) -> bool {
        self.options.iter().any(|o| o == opt)
    }

    pub fn is_at_or_under(&self, dir: &str) -> bool {
        self.mount_point == dir || is_below(&self.mount_point, dir)
    }
}

/// Parse mountinfo text; lines that do not have its shape are skipped.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let f: Vec<&str> = left.split(' ').collect();
    if f.len() < 6 {
        return None;
    }
    Some(Mount {
        id: f[0].parse().ok()?,
        parent: f[1].parse().ok()?,
        dev: parse_dev(f[2])?,
        mount_point: unescape(f[4]),
        options: f[5].split(',').map(str::to_owned).collect(),
        fstype: right.split(' ').next().unwrap_or_default().to_owned(),
        slave: f[6..].iter().any(|o| o.starts_with("master:")),
    })
}

fn parse_dev(field: &str) -> Option<u64> {
    let (major, minor) = field.split_once(':')?;
    Some(nix::sys::stat::makedev(
        major.parse().ok()?,
        minor.parse().ok()?,
    ))
}

/// The kernel writes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct
                    .iter()
                    .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                if let Ok(byte) = u8::try_from(v) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_read_field_by_field() {
        let m = parse("36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n");
        assert_eq!(
            m,
            vec![Mount {
                id: 36,
                parent: 35,
                dev: nix::sys::stat::makedev(98, 0),
                mount_point: "/mnt/with space".into(),
                options: vec!["rw".into(), "noatime".into()],
                fstype: "ext3".into(),
                slave: true,
            }]
        );
        assert!(m[0].has("noatime") && !m[0].has("ro"));
        assert!(m[0].is_at_or_under("/mnt") && !m[0].is_at_or_under("/mn"));
    }

    #[test]
    fn odd_lines_are_skipped_and_escapes_kept_when_invalid() {
        assert!(parse("garbage\n1 2 3\n").is_empty());
        assert_eq!(unescape("a\\999b\\"), "a\\999b\\");
        assert_eq!(unescape("\\134x"), "\\x");
    }
}
