//! Where the members the rules read are in the bytes of a spec: spans,
//! not values. A mount list of a large spec is most of its bytes, and
//! building every mount as a `Value` costs more than reading it; the rules
//! read a mount's few members straight from the bytes instead.
//!
//! [`locate`] finds the spans in a document the strict reader accepted; the
//! single-pass scanner ([`super::scan`]) must record exactly the same.

use super::super::view;

/// A value's bytes in the document: its first byte to just past its last.
/// Offsets fit in 32 bits: the reader refuses documents over 64 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn bytes(self, src: &[u8]) -> &[u8] {
        &src[self.range()]
    }
}

/// What to record of a value.
#[derive(Debug, Clone, Copy)]
pub enum Record {
    /// Its span.
    Whole,
    /// Of an object, the span of each member named here (each recorded as
    /// said), in document order; a value that is not an object: its span.
    Members(&'static [(&'static str, Record)]),
    /// Of an array, each element's [`MountSpans`]; a value that is not an
    /// array: its span.
    Mounts,
    /// Of an array, each element's span; a value that is not an array:
    /// its span.
    Elements,
}

/// What was recorded of a value, as its [`Record`] said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rec {
    Value(Span),
    Object {
        span: Span,
        members: Vec<(&'static str, Rec)>,
    },
    Mounts {
        span: Span,
        elements: Vec<MountSpans>,
    },
    Elements {
        span: Span,
        elements: Vec<Span>,
    },
}

impl Rec {
    pub fn span(&self) -> Span {
        match self {
            Rec::Value(s)
            | Rec::Object { span: s, .. }
            | Rec::Mounts { span: s, .. }
            | Rec::Elements { span: s, .. } => *s,
        }
    }

    /// The recorded member `key` of an object.
    pub fn member(&self, key: &str) -> Option<&Rec> {
        match self {
            Rec::Object { members, .. } => members.iter().find(|(k, _)| *k == key).map(|(_, r)| r),
            _ => None,
        }
    }
}

/// One element of the mount list: its span and those of the members the
/// rules read. Members of an element that is not an object are all `None`.
/// Kept small (56 bytes): a large spec has tens of thousands of mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MountSpans {
    pub element: Span,
    /// Each member's start and end, in [`MOUNT_MEMBERS`] order; an end of
    /// 0 (no value ends at the first byte) is a member not present.
    members: [(u32, u32); 6],
}

/// The members of a mount the rules read.
pub const MOUNT_MEMBERS: [&str; 6] = [
    "destination",
    "type",
    "source",
    "options",
    "uidMappings",
    "gidMappings",
];

impl MountSpans {
    /// The span of member number `slot` of [`MOUNT_MEMBERS`], if present.
    pub fn at(&self, slot: usize) -> Option<Span> {
        match self.members.get(slot)? {
            (_, 0) => None,
            &(start, end) => Some(Span { start, end }),
        }
    }

    /// Record where member number `slot` is.
    pub fn set(&mut self, slot: usize, span: Span) {
        if let Some(m) = self.members.get_mut(slot) {
            *m = (span.start, span.end);
        }
    }

    /// The number of the member `key`, if the rules read it.
    pub fn slot(key: &str) -> Option<usize> {
        MOUNT_MEMBERS.iter().position(|m| *m == key)
    }

    /// The span of the member `key`, if the rules read it and it is present.
    pub fn member(&self, key: &str) -> Option<Span> {
        self.at(MountSpans::slot(key)?)
    }

    pub fn destination(&self) -> Option<Span> {
        self.at(0)
    }

    pub fn kind(&self) -> Option<Span> {
        self.at(1)
    }

    pub fn options(&self) -> Option<Span> {
        self.at(3)
    }
}

/// What the rules read of a spec: `decide` and `own_ns` the namespaces,
/// `idmap` the mappings, the process's user and every mount's mappings,
/// `sysctl` the sysctls, the mount rules the mounts, `caps` the
/// capabilities, the hook the root path, the decision log the pod's
/// annotations. A rule that reads another member
/// must add it here (and to [`view::VIEW`], which the writer follows).
pub const SPEC: Record = Record::Members(&[
    ("annotations", Record::Members(ANNOTATIONS)),
    ("linux", Record::Members(LINUX)),
    ("mounts", Record::Mounts),
    ("process", Record::Members(PROCESS)),
    ("root", Record::Whole),
]);

/// What the check of a written spec records: as [`SPEC`], but of the
/// mounts only where each is (they are compared in place).
pub const CHECK: Record = Record::Members(&[
    ("annotations", Record::Members(ANNOTATIONS)),
    ("linux", Record::Members(LINUX)),
    ("mounts", Record::Elements),
    ("process", Record::Members(PROCESS)),
    ("root", Record::Whole),
]);

/// The annotations that name a container's pod and the container, which
/// the decision log shows (read, never edited): containerd's CRI plugin
/// writes the first three; CRI-O the last two, its names of the pod
/// (`k8s_POD_NAMESPACE_UID_ATTEMPT`) and of the container
/// (`k8s_CONTAINER_POD_NAMESPACE_UID_ATTEMPT`).
pub const POD_ANNOTATIONS: [&str; 5] = [
    "io.kubernetes.cri.sandbox-name",
    "io.kubernetes.cri.sandbox-namespace",
    "io.kubernetes.cri.container-name",
    "io.kubernetes.cri-o.SandboxName",
    "io.kubernetes.cri-o.Name",
];

const ANNOTATIONS: &[(&str, Record)] = &[
    (POD_ANNOTATIONS[0], Record::Whole),
    (POD_ANNOTATIONS[1], Record::Whole),
    (POD_ANNOTATIONS[2], Record::Whole),
    (POD_ANNOTATIONS[3], Record::Whole),
    (POD_ANNOTATIONS[4], Record::Whole),
];

const LINUX: &[(&str, Record)] = &[
    ("namespaces", Record::Whole),
    ("uidMappings", Record::Whole),
    ("gidMappings", Record::Whole),
    ("sysctl", Record::Whole),
];

const PROCESS: &[(&str, Record)] = &[("user", Record::Whole), ("capabilities", Record::Whole)];

/// The spans `record` names in the value at `at` of `src`, a document the
/// strict reader accepted (so nothing here is checked again).
pub fn locate(src: &[u8], at: usize, record: Record) -> Rec {
    let end = view::skip_value(src, at);
    let span = Span::new(at, end);
    match (record, src[at]) {
        (Record::Members(names), b'{') => Rec::Object {
            span,
            members: view::members(src, at)
                .filter_map(|m| {
                    let (name, r) = names.iter().find(|(n, _)| *n == m.key)?;
                    Some((*name, locate(src, m.value, *r)))
                })
                .collect(),
        },
        (Record::Mounts, b'[') => Rec::Mounts {
            span,
            elements: view::elements(src, at)
                .map(|(s, e)| {
                    let mut spans = MountSpans {
                        element: Span::new(s, e),
                        ..MountSpans::default()
                    };
                    if src[s] == b'{' {
                        for m in view::members(src, s) {
                            if let Some(slot) = MountSpans::slot(&m.key) {
                                spans.set(slot, Span::new(m.value, m.end));
                            }
                        }
                    }
                    spans
                })
                .collect(),
        },
        (Record::Elements, b'[') => Rec::Elements {
            span,
            elements: view::elements(src, at)
                .map(|(s, e)| Span::new(s, e))
                .collect(),
        },
        _ => Rec::Value(span),
    }
}
