//! Everything a converted container sees under its /sys is read-only. The
//! /sys rule and the sys-binds rule harden the binds; this one takes every
//! other mount at or under /sys (a cgroup mount asked `rw`, as runc's and
//! crun's own specs write it, a tmpfs, anything a spec puts there) and
//! appends `ro`: runc and crun apply options in order, so the last of `ro`
//! and `rw` wins. A fresh mount made inside the container's private /sys
//! receives nothing from the host, so its propagation needs no change.

use super::sys_binds::read_only;
use crate::report::{Change, Refusal};
use crate::{Context, Findings, Rule, Spec};
use serde_json::{json, Value};

pub const NAME: &str = "under-sys";

pub struct ReadOnlyUnderSys;

impl Rule for ReadOnlyUnderSys {
    fn name(&self) -> &'static str {
        NAME
    }

    fn apply(&self, spec: &mut Spec, _cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal> {
        let mut edits = Vec::new();
        let mounts = spec.mounts()?;
        for (i, m) in mounts.iter().enumerate() {
            let dest = mounts.destination(i)?;
            if dest != "/sys" && !crate::path::is_below(&dest, "/sys") {
                continue;
            }
            if m.is_bind(i)? {
                continue;
            }
            let options = m.options(i)?;
            if read_only(&options) {
                continue;
            }
            let mut want: Vec<Value> = options.iter().map(|o| json!(o)).collect();
            want.push(json!("ro"));
            edits.push((i, dest.into_owned(), want));
        }
        for (i, dest, want) in edits {
            let mount = spec.mount_mut(i)?;
            let before = Value::Object(mount.clone());
            mount.insert("options".into(), Value::Array(want));
            out.changes.push(Change {
                rule: NAME,
                field: format!("mounts[{i}]"),
                summary: format!(
                    "{dest}, mounted under the container's /sys, becomes read-only: everything under /sys is read-only in a converted container"
                ),
                before,
                after: Value::Object(mount.clone()),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{evaluate, evaluate_value, HostFacts, Policy};
    use serde_json::{json, Value};

    fn converted(mounts: Value) -> crate::Plan {
        let spec = json!({
            "process": {"capabilities": {}},
            "linux": {
                "namespaces": [{"type": "user"}, {"type": "mount"}],
                "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
            },
            "mounts": mounts
        });
        evaluate_value(&spec, &HostFacts::default(), &Policy::default()).unwrap()
    }

    #[test]
    fn a_writable_mount_under_sys_gets_ro_last() {
        let plan = converted(json!([
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid"]},
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["nosuid", "rw"]},
            {"destination": "/sys/kernel/x", "type": "tmpfs", "source": "tmpfs"},
            {"destination": "/sys/fs/../kernel/y", "type": "tmpfs", "source": "tmpfs", "options": ["ro", "rw"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["rw"]}
        ]));
        let m = &plan.spec.to_value().unwrap()["mounts"];
        assert_eq!(m[1]["options"], json!(["nosuid", "rw", "ro"]));
        assert_eq!(m[2]["options"], json!(["ro"]));
        assert_eq!(m[3]["options"], json!(["ro", "rw", "ro"]));
        assert_eq!(m[4]["options"], json!(["rw"]), "outside /sys: as asked");
        let again = evaluate(plan.spec, &HostFacts::default(), &Policy::default()).unwrap();
        assert!(!again.changed(), "{:?}", again.findings.changes);
    }

    #[test]
    fn a_read_only_mount_under_sys_is_left_alone() {
        let plan = converted(json!([
            {"destination": "/sys", "type": "bind", "source": "/sys", "options": ["rbind", "rro", "nosuid", "nodev", "noexec", "rprivate"]},
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["rw", "ro"]}
        ]));
        assert!(!plan.changed(), "{:?}", plan.findings.changes);
    }
}
