//! The pure core: a runtime spec (JSON) plus host facts and policy in, a plan
//! or a refusal out. No I/O happens here, so every rule is testable on
//! fixtures and generated input, and the wrapper, the hook and `explain`
//! share one engine and one explanation.
//!
//! The spec is a [`Spec`]: the bytes read, the members the rules read as
//! `serde_json::Value`s with their key order kept (typed structs would
//! drop unknown fields and reject unknown capability names), and the
//! mounts as spans of the bytes. The result is written as edits of those
//! bytes ([`write::write`]): everything not deliberately changed comes out
//! byte for byte.

pub mod cap_names;
pub mod decision;
pub mod exec;
pub mod facts;
pub mod fields;
pub mod path;
pub mod policy;
pub mod report;
pub mod rules;
pub mod slices;
pub mod spec;
pub mod strict;
pub mod write;

pub use decision::Decision;
pub use facts::{Extent, HostFacts, IdMaps, NsFacts, NsId, RroSupport, SubIds};
pub use policy::Policy;
pub use report::{Change, Refusal};
pub use spec::{Mount, MountList, MountRef, Spec};

use fields::Namespace;
use serde_json::Value;

/// What the rules see besides the spec.
pub struct Context<'a> {
    pub decision: &'a Decision,
    pub namespaces: &'a [Namespace],
    pub facts: &'a HostFacts,
    pub policy: &'a Policy,
}

/// Which containers a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only those that need the conversion.
    Converted,
    /// Every container with a user namespace.
    UserNamespace,
}

/// What the rules report besides refusals.
#[derive(Debug, Default)]
pub struct Findings {
    /// Every edit, in the order made.
    pub changes: Vec<Change>,
    /// Things the operator should know that do not stop the container.
    pub warnings: Vec<String>,
}

/// One independent step of the conversion. It edits the spec in place and
/// reports each edit, or refuses; it must be idempotent (a second pass over
/// its own output reports nothing).
pub trait Rule: Sync {
    fn name(&self) -> &'static str;
    fn scope(&self) -> Scope {
        Scope::Converted
    }
    fn apply(&self, spec: &mut Spec, cx: &Context<'_>, out: &mut Findings) -> Result<(), Refusal>;
}

/// The rules, in the order they run (after [`rules::own_ns`], which may
/// change the decision itself): refusals that need no edit first (the
/// ID mappings for every user namespace, then the sysctls, then the
/// destinations that links lead elsewhere, judged on the mounts as read,
/// whose indices the shell's facts use), then the /sys mount and the
/// other binds of the host's /sys, every other mount under /sys made
/// read-only, the place of /sys among the mounts, the cgroup view that
/// depends on that place (and what the runtime makes of it), and the
/// capabilities.
pub fn rules() -> &'static [&'static dyn Rule] {
    &[
        &rules::idmap::IdMappings,
        &rules::sysctl::NetSysctls,
        &rules::dest_links::DestinationLinks,
        &rules::sysfs::SysfsBind,
        &rules::sys_binds::HostSysBinds,
        &rules::under_sys::ReadOnlyUnderSys,
        &rules::order::SysBeforeSubmounts,
        &rules::cgroup::OwnCgroupView,
        &rules::cgroup::CgroupUnderlay,
        &rules::cgroup::RuntimeCgroupV1,
        &rules::caps::NetCapabilities,
    ]
}

/// The engine's answer for one spec.
#[derive(Debug)]
pub struct Plan {
    pub decision: Decision,
    /// No change means the spec is untouched and must not be written.
    pub findings: Findings,
    /// The spec after the edits (the input itself when nothing changed),
    /// written with [`write::write`].
    pub spec: Spec,
}

impl Plan {
    pub fn changed(&self) -> bool {
        !self.findings.changes.is_empty()
    }
}

/// A spec whose namespaces are read and whose decision is taken: the
/// first of the engine's two steps ([`decide`], then [`convert`]), so the
/// shell can gather the facts that cost more (the runtime's `rro`
/// support, the policy's subordinate ranges) only for a spec that needs
/// them, without reading or deciding twice.
#[derive(Debug)]
pub struct Decided {
    pub spec: Spec,
    pub namespaces: Vec<Namespace>,
    pub decision: Decision,
}

/// Read the namespaces and decide: the way into the engine. `facts_of`
/// gives the host's facts about the namespaces read (the shell's look at
/// the host; the rules' other facts may be added before [`convert`]).
pub fn decide(
    spec: Spec,
    facts_of: impl FnOnce(&[Namespace]) -> HostFacts,
) -> Result<(Decided, HostFacts), Refusal> {
    let namespaces = fields::namespaces(spec.view())?;
    let facts = facts_of(&namespaces);
    Ok((decided(spec, namespaces, &facts)?, facts))
}

/// The decision on namespaces already read.
fn decided(spec: Spec, namespaces: Vec<Namespace>, facts: &HostFacts) -> Result<Decided, Refusal> {
    let decision = Decision::of(&namespaces, facts)?;
    Ok(Decided {
        spec,
        namespaces,
        decision,
    })
}

/// [`decide`] then [`convert`] on facts known in advance: the whole engine
/// in one call, for tests and benchmarks (the shell goes through
/// `plan::prepare`). Takes the spec by value so that a spec needing
/// nothing costs no copy.
pub fn evaluate(spec: Spec, facts: &HostFacts, policy: &Policy) -> Result<Plan, Refusal> {
    let namespaces = fields::namespaces(spec.view())?;
    convert(decided(spec, namespaces, facts)?, facts, policy)
}

/// [`evaluate`] on a document held as a value ([`Spec::from_value`]).
pub fn evaluate_value(spec: &Value, facts: &HostFacts, policy: &Policy) -> Result<Plan, Refusal> {
    evaluate(Spec::from_value(spec)?, facts, policy)
}

/// The second step: run the rules on a decided spec.
pub fn convert(decided: Decided, facts: &HostFacts, policy: &Policy) -> Result<Plan, Refusal> {
    let Decided {
        mut spec,
        mut namespaces,
        mut decision,
    } = decided;
    let mut findings = Findings::default();
    // Entries that join the runtime's own namespaces go first: without
    // them the decision may read differently (host network).
    if decision.converts() {
        let own = rules::own_ns::joined_own(&namespaces, facts);
        if !own.is_empty()
            && rules::own_ns::remove(spec.view_mut(), &namespaces, &own, &mut findings)
        {
            namespaces = fields::namespaces(spec.view())?;
            decision = Decision::of(&namespaces, facts)?;
        }
    }
    findings.warnings.extend(decision.warning());
    if decision.has_user_namespace() {
        let cx = Context {
            decision: &decision,
            namespaces: &namespaces,
            facts,
            policy,
        };
        for rule in rules() {
            if rule.scope() == Scope::Converted && !decision.converts() {
                continue;
            }
            rule.apply(&mut spec, &cx, &mut findings)?;
        }
    }
    Ok(Plan {
        decision,
        findings,
        spec,
    })
}

#[cfg(test)]
mod tests;

/// The spec fixtures the engine's unit tests and, through the `fixtures`
/// feature, its tests/ share.
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
