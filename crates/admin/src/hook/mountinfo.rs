//! `/proc/PID/mountinfo`, as far as the hook needs it: which mounts sit at
//! or under a directory, and which of them are not yet hardened. The
//! parsing itself is [`userns_hostnet::sys::mountinfo`].

use userns_hostnet::sys::mountinfo::Mount;
use userns_hostnet_engine::path::is_below;

/// The per-mount flags the hook sets on every mount of the tree.
pub const HARDENED: [&str; 4] = ["ro", "nosuid", "nodev", "noexec"];

/// The mounts at or under `dir`.
pub fn under<'a>(mounts: &'a [Mount], dir: &str) -> Vec<&'a Mount> {
    mounts.iter().filter(|m| m.is_at_or_under(dir)).collect()
}

/// The mount points a recursive `mount_setattr` must start from to cover
/// every mount at or under `dir`: those not below another one of the set.
/// Normally just `dir` itself.
pub fn tops(mounts: &[&Mount]) -> Vec<String> {
    let mut points: Vec<&str> = mounts.iter().map(|m| m.mount_point.as_str()).collect();
    points.sort_unstable();
    points.dedup();
    points
        .iter()
        .filter(|p| !points.iter().any(|q| is_below(p, q)))
        .map(|p| (*p).to_owned())
        .collect()
}

/// The tree a recursive `mount_setattr` on `dir` reaches, as the kernel
/// walks it: from the topmost mount at each of [`tops`], every mount
/// descending from it. A mount below `dir` outside this tree is covered by
/// it and cannot be reached through the container's /sys.
#[derive(Debug, Default)]
pub struct Tree<'a> {
    /// Where `mount_setattr` starts, normally just `dir`.
    pub points: Vec<String>,
    /// Every mount of the tree, the starting ones first.
    pub mounts: Vec<&'a Mount>,
}

pub fn visible_tree<'a>(all: &'a [Mount], dir: &str) -> Tree<'a> {
    let set = under(all, dir);
    let mut tree = Tree::default();
    let mut seen = std::collections::BTreeSet::new();
    for point in tops(&set) {
        let here: Vec<&Mount> = set
            .iter()
            .copied()
            .filter(|m| m.mount_point == point)
            .collect();
        let Some(top) = here
            .iter()
            .copied()
            .find(|m| !here.iter().any(|o| o.parent == m.id && o.id != m.id))
        else {
            continue;
        };
        tree.points.push(point);
        let mut stack = vec![top];
        while let Some(m) = stack.pop() {
            if !seen.insert(m.id) {
                continue;
            }
            tree.mounts.push(m);
            stack.extend(all.iter().filter(|c| c.parent == m.id && c.id != m.id));
        }
    }
    tree
}

/// The mounts of the set that still receive mounts from the host (slaves
/// of a peer group), each with what it is.
pub fn receiving(mounts: &[&Mount]) -> Vec<String> {
    mounts
        .iter()
        .filter(|m| m.slave)
        .map(|m| {
            format!(
                "{} ({}, receives the host's mounts)",
                m.mount_point, m.fstype
            )
        })
        .collect()
}

/// The mounts of the set that lack one of `options`, each with what it
/// lacks.
pub fn lacking(mounts: &[&Mount], options: &[&str]) -> Vec<String> {
    mounts
        .iter()
        .filter_map(|m| {
            let missing: Vec<&str> = options.iter().copied().filter(|o| !m.has(o)).collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "{} ({}, lacks {})",
                    m.mount_point,
                    m.fstype,
                    missing.join(",")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use userns_hostnet::sys::mountinfo::parse;

    const SAMPLE: &str = "\
22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
300 22 0:21 /b/rootfs /b/rootfs rw,relatime - ext4 /dev/vda1 rw
301 300 0:20 / /b/rootfs/sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs rw
302 301 0:30 / /b/rootfs/sys/fs/bpf rw,nosuid,nodev,noexec,relatime master:7 - bpf bpf rw
303 301 0:7 / /b/rootfs/sys/kernel/security rw,nosuid,nodev,noexec,relatime - securityfs securityfs rw
304 300 0:40 / /b/rootfs/sysx rw - tmpfs tmpfs rw
305 300 0:41 / /b/rootfs/with\\040space rw - tmpfs tmpfs rw
";

    #[test]
    fn parses_and_selects_the_tree() {
        let all = parse(SAMPLE);
        assert_eq!(all.len(), 7);
        assert_eq!(all[6].mount_point, "/b/rootfs/with space");
        let sys = under(&all, "/b/rootfs/sys");
        let ids: Vec<u64> = sys.iter().map(|m| m.id).collect();
        assert_eq!(ids, vec![301, 302, 303], "sysx is not under sys");
        assert_eq!(tops(&sys), vec!["/b/rootfs/sys".to_owned()]);
        assert_eq!(
            lacking(&sys, &HARDENED),
            vec![
                "/b/rootfs/sys/fs/bpf (bpf, lacks ro)".to_owned(),
                "/b/rootfs/sys/kernel/security (securityfs, lacks ro)".to_owned()
            ]
        );
        assert_eq!(
            receiving(&sys),
            vec!["/b/rootfs/sys/fs/bpf (bpf, receives the host's mounts)".to_owned()]
        );
    }

    #[test]
    fn the_tree_is_what_the_kernel_walks() {
        let all = parse(
            "10 1 0:1 / /r rw - ext4 d rw\n\
             11 10 0:2 / /r/sys/fs/cgroup ro - cgroup2 none rw\n\
             12 10 0:3 / /r/sys ro - sysfs sysfs rw\n\
             13 12 0:4 / /r/sys/fs/cgroup rw - cgroup2 none rw\n\
             14 13 0:5 / /r/sys/fs/cgroup ro - cgroup2 none rw\n\
             15 12 0:6 / /r/sys/fs/bpf rw - bpf bpf rw\n",
        );
        let tree = visible_tree(&all, "/r/sys");
        assert_eq!(tree.points, vec!["/r/sys".to_owned()]);
        let mut ids: Vec<u64> = tree.mounts.iter().map(|m| m.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![12, 13, 14, 15], "11 is covered by /r/sys");
        assert!(visible_tree(&all, "/r/proc").mounts.is_empty());
    }

    #[test]
    fn tops_without_a_mount_at_the_directory() {
        let all = parse(
            "1 0 0:1 / /r/sys/fs/cgroup ro - cgroup2 none rw\n\
             2 1 0:2 / /r/sys/fs/cgroup/x rw - tmpfs none rw\n\
             3 0 0:3 / /r/sys/kernel/security rw - securityfs none rw\n",
        );
        let sys = under(&all, "/r/sys");
        assert_eq!(
            tops(&sys),
            vec![
                "/r/sys/fs/cgroup".to_owned(),
                "/r/sys/kernel/security".to_owned()
            ]
        );
    }
}
