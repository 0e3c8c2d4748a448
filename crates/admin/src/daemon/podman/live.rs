//! Which containers podman still runs through a runtime: podman has no
//! daemon holding them, but each running container has its conmon, which
//! stays until the container is gone and names the runtime it runs
//! (`-r PATH`), the container (`-c ID`) and its name (`-n NAME`), read
//! from the node's /proc through a `Files` view.

use crate::daemon::live::{self, Files, Live};
use std::path::Path;

/// The value of a conmon option in `argv`: `-r X`, `--runtime X` or
/// `--runtime=X` (conmon parses them with glib's option parser).
fn option<'a>(argv: &'a [&'a str], short: &str, long: &str) -> Option<&'a str> {
    let eq = format!("{long}=");
    argv.iter().enumerate().find_map(|(i, a)| {
        if *a == short || *a == long {
            argv.get(i + 1).copied()
        } else {
            a.strip_prefix(eq.as_str())
        }
    })
}

/// A podman runtime's containers: the runtime binaries it names (its
/// paths in containers.conf, its link), which the conmon of each of its
/// running containers names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conmons {
    pub binaries: Vec<String>,
}

impl live::Handler for Conmons {
    fn containers(&self, files: &dyn Files) -> Vec<Live> {
        live_conmons(files, &|r| self.binaries.iter().any(|b| b == r))
    }
}

/// The containers whose conmon runs a runtime `matches` accepts.
pub fn live_conmons(files: &dyn Files, matches: &dyn Fn(&str) -> bool) -> Vec<Live> {
    let mut out = Vec::new();
    for pid in files.list(Path::new("/proc")) {
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(cmdline) = files.read(&Path::new("/proc").join(&pid).join("cmdline")) else {
            continue;
        };
        let argv: Vec<&str> = cmdline.split('\0').filter(|a| !a.is_empty()).collect();
        let is_conmon = argv
            .first()
            .and_then(|a| Path::new(a).file_name())
            .is_some_and(|n| n == "conmon");
        if !is_conmon {
            continue;
        }
        let (Some(runtime), Some(id)) = (
            option(&argv, "-r", "--runtime"),
            option(&argv, "-c", "--cid"),
        ) else {
            continue;
        };
        if matches(runtime) {
            out.push(Live {
                id: id.to_owned(),
                pod: None,
                name: option(&argv, "-n", "--name").map(str::to_owned),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::live::tests::FakeNode;

    #[test]
    fn a_conmon_names_its_runtime_and_container() {
        let node = FakeNode::default()
            .with(
                "/proc/812/cmdline",
                "/usr/bin/conmon\0--api-version\x001\0-c\0e37ce87fbcaa\0-u\0e37ce87fbcaa\0-r\0/usr/bin/userns-hostnet-runtime\0-n\0web\0",
            )
            .with(
                "/proc/900/cmdline",
                "/usr/bin/conmon\0-c\0aaaa\0--runtime=/usr/bin/runc\0",
            )
            .with("/proc/901/cmdline", "/bin/sleep\0-r\0/usr/bin/userns-hostnet-runtime\0-c\0x\0")
            .with("/proc/self/cmdline", "x");
        let found = live_conmons(&node, &|r| r == "/usr/bin/userns-hostnet-runtime");
        assert_eq!(
            found,
            [Live {
                id: "e37ce87fbcaa".into(),
                pod: None,
                name: Some("web".into()),
            }]
        );
        assert_eq!(live_conmons(&node, &|r| r == "/usr/bin/runc").len(), 1);
    }
}
