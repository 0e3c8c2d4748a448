//! The one path from a spec to a plan, shared by the wrapper, both hook
//! stages and `explain` ([`prepare`], then [`Prepared::evaluate`]): read the namespaces and gather their facts once,
//! decide once, and only for a spec that needs the conversion gather what
//! costs more (the runtime's `rro` support, the policy's subordinate
//! ranges) before the rules run.

use crate::host;
use crate::runtime::RealRuntime;
use std::path::Path;
use userns_hostnet_engine::{
    Decided, Decision, HostFacts, Plan, Policy, Refusal, RroSupport, Spec,
};

/// How the `rro` support the /sys rule needs is known.
#[derive(Debug, Clone, Copy)]
pub enum Rro<'a> {
    /// Ask this runtime (cached per binary).
    Probe(&'a RealRuntime),
    /// Assume it works: the createRuntime hook makes the tree read-only
    /// itself, and `explain` without a runtime says it assumed so.
    Assume,
}

/// A spec with its namespaces read, their facts gathered and the decision
/// taken; cheap, so a container that needs nothing stops here.
#[derive(Debug)]
pub struct Prepared {
    decided: Decided,
    facts: HostFacts,
}

/// Read and decide. A spec whose namespaces cannot be read is refused here,
/// naming the field.
pub fn prepare(spec: Spec) -> Result<Prepared, Refusal> {
    let (decided, facts) = userns_hostnet_engine::decide(spec, host::namespace_facts_of)?;
    Ok(Prepared { decided, facts })
}

impl Prepared {
    pub fn spec(&self) -> &Spec {
        &self.decided.spec
    }

    pub fn decision(&self) -> &Decision {
        &self.decided.decision
    }

    pub fn needs_conversion(&self) -> bool {
        self.decided.decision.converts()
    }

    /// Run the rules under `policy`. `bundle` is the directory the
    /// runtime resolves relative bind sources in (`None`: not known, and a
    /// relative source in a converted container is refused).
    pub fn evaluate(
        self,
        bundle: Option<&Path>,
        policy: &Policy,
        rro: Rro<'_>,
    ) -> Result<Plan, Refusal> {
        self.evaluate_in(bundle, policy, rro, true)
    }

    /// [`Prepared::evaluate`] of a spec whose rootfs is not there (a
    /// config.json copied out of its bundle): the mount destinations are
    /// judged by their text, not resolved in the rootfs. For `explain`
    /// alone, which warns that it did so; the wrapper and the hooks refuse
    /// a destination they cannot resolve.
    pub fn evaluate_without_rootfs(
        self,
        bundle: Option<&Path>,
        policy: &Policy,
        rro: Rro<'_>,
    ) -> Result<Plan, Refusal> {
        self.evaluate_in(bundle, policy, rro, false)
    }

    fn evaluate_in(
        self,
        bundle: Option<&Path>,
        policy: &Policy,
        rro: Rro<'_>,
        resolve_destinations: bool,
    ) -> Result<Plan, Refusal> {
        let Prepared { decided, mut facts } = self;
        if decided.decision.has_user_namespace() {
            host::add_policy_facts(&mut facts, policy);
        }
        if decided.decision.converts() {
            let bases = relative_bases(bundle, rro);
            facts.host_sys_sources = host::host_sys_sources(&decided.spec, &bases);
            if resolve_destinations {
                facts.mount_destinations = host::mount_destinations(&decided.spec, bundle, &bases);
            }
        }
        facts.rro = match rro {
            Rro::Probe(runtime) if decided.decision.converts() => host::rro_support(runtime),
            _ => RroSupport::Supported,
        };
        if let Rro::Probe(runtime) = rro {
            if decided.decision.converts() {
                facts.runtime_cgroup_v1_writable = host::runtime_cgroup_v1_writable(runtime);
                facts.runtime_cgroup_tmpfs_writable = host::runtime_cgroup_tmpfs_writable(runtime);
            }
        }
        userns_hostnet_engine::convert(decided, &facts, policy)
    }
}

/// Where the runtime resolves a relative bind source: in the bundle
/// directory, or for a runtime that does not
/// ([`crate::runtime::Kind::resolves_sources_in_bundle`]) in the bundle
/// and in its working directory, and the worse kept. The hooks, which do
/// not know the runtime, resolve in the bundle the state names.
fn relative_bases<'a>(bundle: Option<&'a Path>, rro: Rro<'_>) -> Vec<&'a Path> {
    let mut bases: Vec<&Path> = bundle.into_iter().collect();
    if let Rro::Probe(runtime) = rro {
        if !runtime.kind.resolves_sources_in_bundle() {
            bases.push(Path::new("."));
        }
    }
    bases
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `doc` read as a spec (the engine's `spec::doc` is built only
    /// into the engine's own tests).
    fn doc(doc: serde_json::Value) -> userns_hostnet_engine::Spec {
        userns_hostnet_engine::Spec::from_value(&doc).expect("a test spec reads")
    }

    #[test]
    fn a_spec_without_user_namespace_is_decided_without_facts() {
        let p = prepare(doc(json!({"linux": {"namespaces": [{"type": "mount"}]}}))).unwrap();
        assert!(!p.needs_conversion());
        assert_eq!(p.decision(), &Decision::NoUserNamespace);
        let plan = p.evaluate(None, &Policy::default(), Rro::Assume).unwrap();
        assert!(!plan.changed());
    }

    #[test]
    fn malformed_namespaces_and_non_objects_are_refused_by_name() {
        let r = prepare(doc(json!({"linux": {"namespaces": {"type": "user"}}}))).unwrap_err();
        assert_eq!(r.field, "linux.namespaces");
        let r = Spec::from_value(&json!([1])).unwrap_err();
        assert_eq!(r.field, "(top level)");
    }

    #[test]
    fn host_network_converts_when_rro_is_assumed() {
        let spec = json!({
            "process": {"capabilities": {}},
            "linux": {
                "namespaces": [{"type": "user"}, {"type": "mount"}],
                "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
            },
            "mounts": [{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid"]}]
        });
        let plan = prepare(doc(spec))
            .and_then(|p| p.evaluate(None, &Policy::default(), Rro::Assume))
            .unwrap();
        assert_eq!(plan.decision, Decision::HostNetwork);
        assert_eq!(plan.spec.to_value().unwrap()["mounts"][0]["type"], "bind");
    }

    /// A bundle without its rootfs: the destinations cannot be resolved,
    /// so [`Prepared::evaluate`] (the wrapper's) refuses; only the
    /// evaluation without the rootfs, explain's, converts.
    #[test]
    fn without_the_rootfs_only_the_evaluation_that_skips_it_converts() {
        let bundle = tempfile::tempdir().unwrap();
        let spec = json!({
            "root": {"path": "rootfs"},
            "process": {"capabilities": {}},
            "linux": {
                "namespaces": [{"type": "user"}, {"type": "mount"}],
                "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
                "gidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}]
            },
            "mounts": [{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid"]}]
        });
        let refused = prepare(doc(spec.clone()))
            .and_then(|p| p.evaluate(Some(bundle.path()), &Policy::default(), Rro::Assume))
            .unwrap_err();
        assert_eq!(refused.rule, "destination-links");
        assert_eq!(refused.field, "mounts[0].destination");
        let plan = prepare(doc(spec))
            .and_then(|p| {
                p.evaluate_without_rootfs(Some(bundle.path()), &Policy::default(), Rro::Assume)
            })
            .unwrap();
        assert_eq!(plan.spec.to_value().unwrap()["mounts"][0]["type"], "bind");
    }
}
