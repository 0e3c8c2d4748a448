//! doctor's checks of the host and its kernel: mount_setattr, user
//! namespaces, the cgroup mounts, the subordinate ID ranges and the ports.

use super::*;

pub(super) fn kernel_mount_setattr(fx: &Fixes) -> Check {
    if userns_hostnet::sys::mount::kernel_has_mount_setattr() {
        check(
            "kernel.mount_setattr",
            Status::Ok,
            "mount_setattr(2) is available: /sys can be made read-only recursively (rro)",
        )
    } else {
        check("kernel.mount_setattr", Status::Fail, probe::KERNEL_REASON).fix(format!(
            "run Linux >= 5.12; or, to accept a /sys whose submounts stay writable, {}",
            fx.admin(fx.setting("sysfs.fallback=ro"))
        ))
    }
}

pub(super) fn read_number(path: &Path) -> Result<i64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{}: not a number: {:?}", path.display(), text.trim()))
}

pub(super) fn user_namespaces(root: &Root, fx: &Fixes) -> Check {
    const NAME: &str = "kernel.user_namespaces";
    match read_number(&root.at("/proc/sys/user/max_user_namespaces")) {
        Ok(n) if n > 0 => check(NAME, Status::Ok, format!("user.max_user_namespaces = {n}")),
        Ok(n) => check(
            NAME,
            Status::Fail,
            format!("user.max_user_namespaces = {n}: no user namespace can be created"),
        )
        .fix(fx.admin("sysctl -w user.max_user_namespaces=63000 (and set it in /etc/sysctl.d/)")),
        Err(e) => check(NAME, Status::Fail, format!("cannot read: {e}"))
            .fix("a kernel built with CONFIG_USER_NS"),
    }
}

pub(super) fn cgroup(root: &Root) -> Check {
    const NAME: &str = "cgroup";
    let path = root.at("/proc/self/mountinfo");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return check(NAME, Status::Warn, format!("{}: {e}", path.display())),
    };
    let mounts = mountinfo::parse(&text);
    // The filesystem at a mount point: the last mount there is on top.
    let at = |p: &str| {
        mounts
            .iter()
            .rev()
            .find(|m| m.mount_point == p)
            .map(|m| m.fstype.as_str())
    };
    let fix = "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2 only); Kubernetes user namespaces and crun's cgroup management expect it";
    match at("/sys/fs/cgroup") {
        Some("cgroup2") => check(NAME, Status::Ok, "cgroup v2 at /sys/fs/cgroup"),
        Some("tmpfs") if at("/sys/fs/cgroup/unified") == Some("cgroup2") => check(
            NAME,
            Status::Warn,
            "hybrid: cgroup v1 controllers under /sys/fs/cgroup, cgroup v2 only at /sys/fs/cgroup/unified: the cgroup mount the wrapper adds for a container with a cgroup namespace is a v1 view (one mount per controller), Kubernetes user-namespaced pods expect cgroup v2, and crun 1.8.1 needs --cgroup-manager=disabled",
        )
        .fix(fix),
        Some("tmpfs") => check(
            NAME,
            Status::Warn,
            "cgroup v1: the cgroup mount the wrapper adds for a container with a cgroup namespace is a v1 view (one mount per controller), and Kubernetes user-namespaced pods expect cgroup v2",
        )
        .fix(fix),
        Some(other) => check(
            NAME,
            Status::Warn,
            format!("/sys/fs/cgroup is {other}, not cgroup2"),
        )
        .fix(fix),
        None => check(NAME, Status::Warn, "nothing is mounted at /sys/fs/cgroup").fix(fix),
    }
}

/// The kubelet's own range when it reads no /etc/subuid (its
/// getKubeletMappings: every ID from 65536 up).
pub(super) const KUBELET_DEFAULT_FIRST_ID: u64 = 1 << 16;

/// Does the kubelet read /etc/subuid here? Only when a `kubelet` user
/// exists and `getsubids` is installed; otherwise it gives pods IDs from
/// its built-in range. What is missing, when it does not.
pub(super) fn kubelet_reads_subids(root: &Root) -> Result<(), String> {
    let passwd = std::fs::read_to_string(root.at("/etc/passwd")).unwrap_or_default();
    let user = passwd
        .lines()
        .any(|l| l.split(':').next() == Some(KUBELET_USER));
    let getsubids = if root.fake {
        ["/usr/bin/getsubids", "/bin/getsubids"]
            .iter()
            .any(|p| root.at(p).is_file())
    } else {
        in_path("getsubids").is_some()
    };
    match (user, getsubids) {
        (true, true) => Ok(()),
        (false, true) => Err(format!("no `{KUBELET_USER}` user in /etc/passwd")),
        (true, false) => Err("no getsubids (Debian package uidmap)".to_owned()),
        (false, false) => Err(format!(
            "no `{KUBELET_USER}` user in /etc/passwd and no getsubids (Debian package uidmap)"
        )),
    }
}

/// The ranges the kubelet gives pods (from /etc/subuid when it reads it)
/// against the policy's `allowed_ranges`: a finding per way they can be
/// wrong, each with its fix.
pub(super) fn subids(root: &Root, config: Option<&NodeConfig>, fx: &Fixes) -> Check {
    let configured = config.and_then(|c| match &c.policy.idmap.allowed_ranges {
        AllowedRanges::SubidUser(u) => Some(u.clone()),
        _ => None,
    });
    let user = configured
        .clone()
        .unwrap_or_else(|| KUBELET_USER.to_owned());
    let etc = root.at("/etc");
    let example = format!("{user}:{}:{}", IDS_PER_POD * 16, IDS_PER_POD * 110);
    if user == KUBELET_USER {
        if let Err(missing) = kubelet_reads_subids(root) {
            return subids_unread(&user, configured.is_some(), &etc, &example, &missing, fx);
        }
    }
    let ids = match host::read_subids(&user, &etc) {
        Ok(ids) => ids,
        Err(e) if configured.is_some() => {
            return check(
                SUBIDS,
                Status::Fail,
                format!("{e}: idmap.allowed_ranges names {user}, so the wrapper refuses every user-namespaced container"),
            )
            .fix(format!(
                "{}add {user}:<start>:<count> to /etc/subuid and /etc/subgid (a multiple of {IDS_PER_POD} per pod, e.g. {example})",
                fx.as_root
            ))
        }
        Err(e) => {
            return check(
                SUBIDS,
                Status::Fail,
                format!("{e}: a `{KUBELET_USER}` user and getsubids exist, so the kubelet asks getsubids for its range and cannot give pods a user namespace without one"),
            )
            .fix(format!(
                "{}add the same line, e.g. {example}, to /etc/subuid and /etc/subgid, then restart the kubelet",
                fx.as_root
            ))
        }
    };
    subids_ranges(&user, &ids, &example, fx)
}

/// The name of [`subids`]' check.
const SUBIDS: &str = "subids";

/// The kubelet reads no /etc/subuid (`missing`: why): it gives pods its
/// built-in range, which a policy naming the user's ranges refuses, and
/// in which a range listed for the user goes unused.
fn subids_unread(
    user: &str,
    configured: bool,
    etc: &Path,
    example: &str,
    missing: &str,
    fx: &Fixes,
) -> Check {
    let builtin = format!(
        "its built-in range, IDs {KUBELET_DEFAULT_FIRST_ID} to {}",
        u64::from(u32::MAX)
    );
    let make_reader = format!(
        "{}useradd --system --no-create-home --shell /usr/sbin/nologin {KUBELET_USER}; apt-get install uidmap (getsubids); add the same line, e.g. {example}, to /etc/subuid and /etc/subgid; restart the kubelet",
        fx.as_root
    );
    let listed = host::read_subids(user, etc).is_ok();
    match (configured, listed) {
        (true, _) => check(
            SUBIDS,
            Status::Fail,
            format!("idmap.allowed_ranges names {user}'s /etc/subuid ranges, but the kubelet reads /etc/subuid only with a `{KUBELET_USER}` user and getsubids ({missing}): it gives pods {builtin}, which that policy refuses"),
        )
        .fix(format!("{make_reader}; or drop allowed_ranges from {}", fx.config.display())),
        (false, true) => check(
            SUBIDS,
            Status::Warn,
            format!("/etc/subuid has a range for {user}, which the kubelet ignores ({missing}): it gives pods {builtin}"),
        )
        .fix(format!("for the kubelet to use that range: {make_reader}")),
        (false, false) => check(
            SUBIDS,
            Status::Ok,
            format!("the kubelet reads no /etc/subuid ({missing}): it gives pods {builtin}, {IDS_PER_POD} per pod"),
        ),
    }
}

/// The user's ranges as read: one and the same range in both files for
/// the kubelet's user, room for a pod at least, aligned to a pod's IDs.
fn subids_ranges(
    user: &str,
    ids: &userns_hostnet_engine::facts::SubIds,
    example: &str,
    fx: &Fixes,
) -> Check {
    if user == KUBELET_USER && (ids.uid != ids.gid || ids.uid.len() != 1) {
        return check(
            SUBIDS,
            Status::Fail,
            format!("{user}'s ranges in /etc/subuid and /etc/subgid are not one and the same range in both, which the kubelet needs: it refuses them"),
        )
        .fix(format!("{}give {user} the same single line in /etc/subuid and /etc/subgid, e.g. {example}", fx.as_root));
    }
    let total =
        |r: &[userns_hostnet_engine::policy::IdRange]| r.iter().map(|r| r.size).sum::<u64>();
    let pods = total(&ids.uid).min(total(&ids.gid)) / IDS_PER_POD;
    let aligned = ids
        .uid
        .iter()
        .chain(&ids.gid)
        .all(|r| r.start % IDS_PER_POD == 0 && r.size % IDS_PER_POD == 0);
    if pods == 0 {
        return check(
            SUBIDS,
            Status::Fail,
            format!("{user}: the ranges in /etc/subuid and /etc/subgid hold fewer than {IDS_PER_POD} IDs: not one pod fits"),
        )
        .fix(format!("{}give {user} at least {IDS_PER_POD} IDs per pod", fx.as_root));
    }
    let msg = format!(
        "{user}: {} uids, {} gids: room for {pods} pod{} at {IDS_PER_POD} IDs each",
        total(&ids.uid),
        total(&ids.gid),
        if pods == 1 { "" } else { "s" }
    );
    if aligned {
        check(SUBIDS, Status::Ok, msg)
    } else {
        check(
            SUBIDS,
            Status::Warn,
            format!(
                "{msg}; a start or size is not a multiple of {IDS_PER_POD}, which kubelet requires"
            ),
        )
        .fix(format!(
            "{}align {user}'s ranges to multiples of {IDS_PER_POD}",
            fx.as_root
        ))
    }
}

pub(super) fn ports(root: &Root, fx: &Fixes) -> Check {
    const NAME: &str = "ports";
    match read_number(&root.at("/proc/sys/net/ipv4/ip_unprivileged_port_start")) {
        Ok(n) if n <= 0 => check(
            NAME,
            Status::Ok,
            "net.ipv4.ip_unprivileged_port_start = 0: userns containers on the host network can bind every port",
        ),
        Ok(n) if n <= 1024 => check(
            NAME,
            Status::Ok,
            format!("net.ipv4.ip_unprivileged_port_start = {n}: userns containers on the host network can bind ports >= {n} only (CAP_NET_BIND_SERVICE is checked against the host's user namespace; lower it with sysctl if a pod needs a lower port)"),
        ),
        Ok(n) => check(
            NAME,
            Status::Warn,
            format!("net.ipv4.ip_unprivileged_port_start = {n}: userns containers on the host network can bind ports >= {n} only"),
        )
        .fix(fx.admin("sysctl -w net.ipv4.ip_unprivileged_port_start=1024 (or lower, for the ports your pods need)")),
        Err(e) => check(NAME, Status::Warn, format!("cannot read: {e}")),
    }
}
