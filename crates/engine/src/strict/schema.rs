//! The runtime-spec's objects as Go's encoding/json sees them: for each
//! struct, the JSON names of its fields and the shape of each value. Go
//! matches a key to a struct field case-insensitively, so these names are
//! what a key must equal exactly when it equals one of them under case
//! folding. Maps (`annotations`, `linux.sysctl`, ...) are `map[string]...`
//! in Go: their keys are data, matched exactly.
//!
//! The union of the `json:"..."` names in runtime-spec's
//! `specs-go/config.go` from v1.0.0 to v1.3.0 (runc 1.1 reads 1.0.2-dev;
//! newer runtimes read more), embedded structs' fields promoted as Go does
//! (`LinuxWeightDevice` and `LinuxThrottleDevice` get `major` and `minor`).
//! A name of a newer version that an older runtime ignores is still
//! refused when misspelt by case: a runtime built on that version would
//! read it.

use super::{Shape, Struct};

pub(super) const SPEC: Struct = Struct {
    fields: &[
        ("ociVersion", Shape::Any),
        ("process", Shape::Struct(&PROCESS)),
        ("root", Shape::Struct(&ROOT)),
        ("hostname", Shape::Any),
        ("mounts", Shape::Array(&Shape::Struct(&MOUNT))),
        ("hooks", Shape::Struct(&HOOKS)),
        ("annotations", Shape::Map(&Shape::Any)),
        ("linux", Shape::Struct(&LINUX)),
        ("solaris", Shape::Struct(&SOLARIS)),
        ("windows", Shape::Struct(&WINDOWS)),
        ("vm", Shape::Struct(&VM)),
        ("domainname", Shape::Any),
        ("zos", Shape::Struct(&ZOS)),
        ("freebsd", Shape::Struct(&FREE_BSD)),
    ],
};

pub(super) const PROCESS: Struct = Struct {
    fields: &[
        ("terminal", Shape::Any),
        ("consoleSize", Shape::Struct(&BOX)),
        ("user", Shape::Struct(&USER)),
        ("args", Shape::Any),
        ("env", Shape::Any),
        ("cwd", Shape::Any),
        ("capabilities", Shape::Struct(&LINUX_CAPABILITIES)),
        ("rlimits", Shape::Array(&Shape::Struct(&POSIX_RLIMIT))),
        ("noNewPrivileges", Shape::Any),
        ("apparmorProfile", Shape::Any),
        ("oomScoreAdj", Shape::Any),
        ("selinuxLabel", Shape::Any),
        ("commandLine", Shape::Any),
        ("scheduler", Shape::Struct(&SCHEDULER)),
        ("ioPriority", Shape::Struct(&LINUX_IO_PRIORITY)),
        ("execCPUAffinity", Shape::Struct(&CPU_AFFINITY)),
    ],
};

const BOX: Struct = Struct {
    fields: &[("height", Shape::Any), ("width", Shape::Any)],
};

const USER: Struct = Struct {
    fields: &[
        ("uid", Shape::Any),
        ("gid", Shape::Any),
        ("additionalGids", Shape::Any),
        ("username", Shape::Any),
        ("umask", Shape::Any),
    ],
};

const LINUX_CAPABILITIES: Struct = Struct {
    fields: &[
        ("bounding", Shape::Any),
        ("effective", Shape::Any),
        ("inheritable", Shape::Any),
        ("permitted", Shape::Any),
        ("ambient", Shape::Any),
    ],
};

const POSIX_RLIMIT: Struct = Struct {
    fields: &[
        ("type", Shape::Any),
        ("hard", Shape::Any),
        ("soft", Shape::Any),
    ],
};

const SCHEDULER: Struct = Struct {
    fields: &[
        ("policy", Shape::Any),
        ("nice", Shape::Any),
        ("priority", Shape::Any),
        ("flags", Shape::Any),
        ("runtime", Shape::Any),
        ("deadline", Shape::Any),
        ("period", Shape::Any),
    ],
};

const LINUX_IO_PRIORITY: Struct = Struct {
    fields: &[("class", Shape::Any), ("priority", Shape::Any)],
};

const CPU_AFFINITY: Struct = Struct {
    fields: &[("initial", Shape::Any), ("final", Shape::Any)],
};

const ROOT: Struct = Struct {
    fields: &[("path", Shape::Any), ("readonly", Shape::Any)],
};

const MOUNT: Struct = Struct {
    fields: &[
        ("destination", Shape::Any),
        ("type", Shape::Any),
        ("source", Shape::Any),
        ("options", Shape::Any),
        (
            "uidMappings",
            Shape::Array(&Shape::Struct(&LINUX_ID_MAPPING)),
        ),
        (
            "gidMappings",
            Shape::Array(&Shape::Struct(&LINUX_ID_MAPPING)),
        ),
    ],
};

const LINUX_ID_MAPPING: Struct = Struct {
    fields: &[
        ("hostID", Shape::Any),
        ("containerID", Shape::Any),
        ("size", Shape::Any),
    ],
};

const HOOKS: Struct = Struct {
    fields: &[
        ("prestart", Shape::Array(&Shape::Struct(&HOOK))),
        ("poststart", Shape::Array(&Shape::Struct(&HOOK))),
        ("poststop", Shape::Array(&Shape::Struct(&HOOK))),
        ("createRuntime", Shape::Array(&Shape::Struct(&HOOK))),
        ("createContainer", Shape::Array(&Shape::Struct(&HOOK))),
        ("startContainer", Shape::Array(&Shape::Struct(&HOOK))),
    ],
};

const HOOK: Struct = Struct {
    fields: &[
        ("path", Shape::Any),
        ("args", Shape::Any),
        ("env", Shape::Any),
        ("timeout", Shape::Any),
    ],
};

const LINUX: Struct = Struct {
    fields: &[
        (
            "uidMappings",
            Shape::Array(&Shape::Struct(&LINUX_ID_MAPPING)),
        ),
        (
            "gidMappings",
            Shape::Array(&Shape::Struct(&LINUX_ID_MAPPING)),
        ),
        ("sysctl", Shape::Map(&Shape::Any)),
        ("resources", Shape::Struct(&LINUX_RESOURCES)),
        ("cgroupsPath", Shape::Any),
        ("namespaces", Shape::Array(&Shape::Struct(&LINUX_NAMESPACE))),
        ("devices", Shape::Array(&Shape::Struct(&LINUX_DEVICE))),
        ("seccomp", Shape::Struct(&LINUX_SECCOMP)),
        ("rootfsPropagation", Shape::Any),
        ("maskedPaths", Shape::Any),
        ("readonlyPaths", Shape::Any),
        ("mountLabel", Shape::Any),
        ("intelRdt", Shape::Struct(&LINUX_INTEL_RDT)),
        ("personality", Shape::Struct(&LINUX_PERSONALITY)),
        (
            "timeOffsets",
            Shape::Map(&Shape::Struct(&LINUX_TIME_OFFSET)),
        ),
        ("netDevices", Shape::Map(&Shape::Struct(&LINUX_NET_DEVICE))),
        ("memoryPolicy", Shape::Struct(&LINUX_MEMORY_POLICY)),
    ],
};

const LINUX_RESOURCES: Struct = Struct {
    fields: &[
        (
            "devices",
            Shape::Array(&Shape::Struct(&LINUX_DEVICE_CGROUP)),
        ),
        ("memory", Shape::Struct(&LINUX_MEMORY)),
        ("cpu", Shape::Struct(&LINUX_CPU)),
        ("pids", Shape::Struct(&LINUX_PIDS)),
        ("blockIO", Shape::Struct(&LINUX_BLOCK_IO)),
        (
            "hugepageLimits",
            Shape::Array(&Shape::Struct(&LINUX_HUGEPAGE_LIMIT)),
        ),
        ("network", Shape::Struct(&LINUX_NETWORK)),
        ("rdma", Shape::Map(&Shape::Struct(&LINUX_RDMA))),
        ("unified", Shape::Map(&Shape::Any)),
    ],
};

const LINUX_DEVICE_CGROUP: Struct = Struct {
    fields: &[
        ("allow", Shape::Any),
        ("type", Shape::Any),
        ("major", Shape::Any),
        ("minor", Shape::Any),
        ("access", Shape::Any),
    ],
};

const LINUX_MEMORY: Struct = Struct {
    fields: &[
        ("limit", Shape::Any),
        ("reservation", Shape::Any),
        ("swap", Shape::Any),
        ("kernel", Shape::Any),
        ("kernelTCP", Shape::Any),
        ("swappiness", Shape::Any),
        ("disableOOMKiller", Shape::Any),
        ("useHierarchy", Shape::Any),
        ("checkBeforeUpdate", Shape::Any),
    ],
};

const LINUX_CPU: Struct = Struct {
    fields: &[
        ("shares", Shape::Any),
        ("quota", Shape::Any),
        ("period", Shape::Any),
        ("realtimeRuntime", Shape::Any),
        ("realtimePeriod", Shape::Any),
        ("cpus", Shape::Any),
        ("mems", Shape::Any),
        ("burst", Shape::Any),
        ("idle", Shape::Any),
    ],
};

const LINUX_PIDS: Struct = Struct {
    fields: &[("limit", Shape::Any)],
};

const LINUX_BLOCK_IO: Struct = Struct {
    fields: &[
        ("weight", Shape::Any),
        ("leafWeight", Shape::Any),
        (
            "weightDevice",
            Shape::Array(&Shape::Struct(&LINUX_WEIGHT_DEVICE)),
        ),
        (
            "throttleReadBpsDevice",
            Shape::Array(&Shape::Struct(&LINUX_THROTTLE_DEVICE)),
        ),
        (
            "throttleWriteBpsDevice",
            Shape::Array(&Shape::Struct(&LINUX_THROTTLE_DEVICE)),
        ),
        (
            "throttleReadIOPSDevice",
            Shape::Array(&Shape::Struct(&LINUX_THROTTLE_DEVICE)),
        ),
        (
            "throttleWriteIOPSDevice",
            Shape::Array(&Shape::Struct(&LINUX_THROTTLE_DEVICE)),
        ),
    ],
};

const LINUX_WEIGHT_DEVICE: Struct = Struct {
    fields: &[
        ("weight", Shape::Any),
        ("leafWeight", Shape::Any),
        ("major", Shape::Any),
        ("minor", Shape::Any),
    ],
};

const LINUX_THROTTLE_DEVICE: Struct = Struct {
    fields: &[
        ("rate", Shape::Any),
        ("major", Shape::Any),
        ("minor", Shape::Any),
    ],
};

const LINUX_HUGEPAGE_LIMIT: Struct = Struct {
    fields: &[("pageSize", Shape::Any), ("limit", Shape::Any)],
};

const LINUX_NETWORK: Struct = Struct {
    fields: &[
        ("classID", Shape::Any),
        (
            "priorities",
            Shape::Array(&Shape::Struct(&LINUX_INTERFACE_PRIORITY)),
        ),
    ],
};

const LINUX_INTERFACE_PRIORITY: Struct = Struct {
    fields: &[("name", Shape::Any), ("priority", Shape::Any)],
};

const LINUX_RDMA: Struct = Struct {
    fields: &[("hcaHandles", Shape::Any), ("hcaObjects", Shape::Any)],
};

const LINUX_NAMESPACE: Struct = Struct {
    fields: &[("type", Shape::Any), ("path", Shape::Any)],
};

const LINUX_DEVICE: Struct = Struct {
    fields: &[
        ("path", Shape::Any),
        ("type", Shape::Any),
        ("major", Shape::Any),
        ("minor", Shape::Any),
        ("fileMode", Shape::Any),
        ("uid", Shape::Any),
        ("gid", Shape::Any),
    ],
};

const LINUX_SECCOMP: Struct = Struct {
    fields: &[
        ("defaultAction", Shape::Any),
        ("architectures", Shape::Any),
        ("syscalls", Shape::Array(&Shape::Struct(&LINUX_SYSCALL))),
        ("flags", Shape::Any),
        ("defaultErrnoRet", Shape::Any),
        ("listenerPath", Shape::Any),
        ("listenerMetadata", Shape::Any),
    ],
};

const LINUX_SYSCALL: Struct = Struct {
    fields: &[
        ("names", Shape::Any),
        ("action", Shape::Any),
        ("args", Shape::Array(&Shape::Struct(&LINUX_SECCOMP_ARG))),
        ("errnoRet", Shape::Any),
    ],
};

const LINUX_SECCOMP_ARG: Struct = Struct {
    fields: &[
        ("index", Shape::Any),
        ("value", Shape::Any),
        ("valueTwo", Shape::Any),
        ("op", Shape::Any),
    ],
};

const LINUX_INTEL_RDT: Struct = Struct {
    fields: &[
        ("l3CacheSchema", Shape::Any),
        ("closID", Shape::Any),
        ("memBwSchema", Shape::Any),
        ("enableCMT", Shape::Any),
        ("enableMBM", Shape::Any),
        ("schemata", Shape::Any),
        ("enableMonitoring", Shape::Any),
    ],
};

const LINUX_PERSONALITY: Struct = Struct {
    fields: &[("domain", Shape::Any), ("flags", Shape::Any)],
};

const LINUX_TIME_OFFSET: Struct = Struct {
    fields: &[("secs", Shape::Any), ("nanosecs", Shape::Any)],
};

const LINUX_NET_DEVICE: Struct = Struct {
    fields: &[("name", Shape::Any)],
};

const LINUX_MEMORY_POLICY: Struct = Struct {
    fields: &[
        ("mode", Shape::Any),
        ("nodes", Shape::Any),
        ("flags", Shape::Any),
    ],
};

const SOLARIS: Struct = Struct {
    fields: &[
        ("milestone", Shape::Any),
        ("limitpriv", Shape::Any),
        ("maxShmMemory", Shape::Any),
        ("anet", Shape::Array(&Shape::Struct(&SOLARIS_ANET))),
        ("cappedCPU", Shape::Struct(&SOLARIS_CAPPED_CPU)),
        ("cappedMemory", Shape::Struct(&SOLARIS_CAPPED_MEMORY)),
    ],
};

const SOLARIS_ANET: Struct = Struct {
    fields: &[
        ("linkname", Shape::Any),
        ("lowerLink", Shape::Any),
        ("allowedAddress", Shape::Any),
        ("configureAllowedAddress", Shape::Any),
        ("defrouter", Shape::Any),
        ("linkProtection", Shape::Any),
        ("macAddress", Shape::Any),
    ],
};

const SOLARIS_CAPPED_CPU: Struct = Struct {
    fields: &[("ncpus", Shape::Any)],
};

const SOLARIS_CAPPED_MEMORY: Struct = Struct {
    fields: &[("physical", Shape::Any), ("swap", Shape::Any)],
};

const WINDOWS: Struct = Struct {
    fields: &[
        ("layerFolders", Shape::Any),
        ("resources", Shape::Struct(&WINDOWS_RESOURCES)),
        ("credentialSpec", Shape::Any),
        ("servicing", Shape::Any),
        ("ignoreFlushesDuringBoot", Shape::Any),
        ("hyperv", Shape::Struct(&WINDOWS_HYPER_V)),
        ("network", Shape::Struct(&WINDOWS_NETWORK)),
        ("devices", Shape::Array(&Shape::Struct(&WINDOWS_DEVICE))),
    ],
};

const WINDOWS_RESOURCES: Struct = Struct {
    fields: &[
        ("memory", Shape::Struct(&WINDOWS_MEMORY_RESOURCES)),
        ("cpu", Shape::Struct(&WINDOWS_CPU_RESOURCES)),
        ("storage", Shape::Struct(&WINDOWS_STORAGE_RESOURCES)),
    ],
};

const WINDOWS_MEMORY_RESOURCES: Struct = Struct {
    fields: &[("limit", Shape::Any)],
};

const WINDOWS_CPU_RESOURCES: Struct = Struct {
    fields: &[
        ("count", Shape::Any),
        ("shares", Shape::Any),
        ("maximum", Shape::Any),
        (
            "affinity",
            Shape::Array(&Shape::Struct(&WINDOWS_CPU_GROUP_AFFINITY)),
        ),
    ],
};

const WINDOWS_CPU_GROUP_AFFINITY: Struct = Struct {
    fields: &[("mask", Shape::Any), ("group", Shape::Any)],
};

const WINDOWS_STORAGE_RESOURCES: Struct = Struct {
    fields: &[
        ("iops", Shape::Any),
        ("bps", Shape::Any),
        ("sandboxSize", Shape::Any),
    ],
};

const WINDOWS_HYPER_V: Struct = Struct {
    fields: &[("utilityVMPath", Shape::Any)],
};

const WINDOWS_NETWORK: Struct = Struct {
    fields: &[
        ("endpointList", Shape::Any),
        ("allowUnqualifiedDNSQuery", Shape::Any),
        ("DNSSearchList", Shape::Any),
        ("networkSharedContainerName", Shape::Any),
        ("networkNamespace", Shape::Any),
    ],
};

const WINDOWS_DEVICE: Struct = Struct {
    fields: &[("id", Shape::Any), ("idType", Shape::Any)],
};

const VM: Struct = Struct {
    fields: &[
        ("hypervisor", Shape::Struct(&VM_HYPERVISOR)),
        ("kernel", Shape::Struct(&VM_KERNEL)),
        ("image", Shape::Struct(&VM_IMAGE)),
        ("hwconfig", Shape::Struct(&HW_CONFIG)),
    ],
};

const VM_HYPERVISOR: Struct = Struct {
    fields: &[("path", Shape::Any), ("parameters", Shape::Any)],
};

const VM_KERNEL: Struct = Struct {
    fields: &[
        ("path", Shape::Any),
        ("parameters", Shape::Any),
        ("initrd", Shape::Any),
    ],
};

const VM_IMAGE: Struct = Struct {
    fields: &[("path", Shape::Any), ("format", Shape::Any)],
};

const HW_CONFIG: Struct = Struct {
    fields: &[
        ("deviceTree", Shape::Any),
        ("vcpus", Shape::Any),
        ("memory", Shape::Any),
        ("dtdevs", Shape::Any),
        ("iomems", Shape::Array(&Shape::Struct(&IO_MEMS))),
        ("irqs", Shape::Any),
    ],
};

const IO_MEMS: Struct = Struct {
    fields: &[
        ("firstGFN", Shape::Any),
        ("firstMFN", Shape::Any),
        ("nrMFNs", Shape::Any),
    ],
};

const ZOS: Struct = Struct {
    fields: &[
        ("devices", Shape::Array(&Shape::Struct(&ZOS_DEVICE))),
        ("namespaces", Shape::Array(&Shape::Struct(&ZOS_NAMESPACE))),
    ],
};

const ZOS_DEVICE: Struct = Struct {
    fields: &[
        ("path", Shape::Any),
        ("type", Shape::Any),
        ("major", Shape::Any),
        ("minor", Shape::Any),
        ("fileMode", Shape::Any),
        ("uid", Shape::Any),
        ("gid", Shape::Any),
    ],
};

const ZOS_NAMESPACE: Struct = Struct {
    fields: &[("type", Shape::Any), ("path", Shape::Any)],
};

const FREE_BSD: Struct = Struct {
    fields: &[
        ("devices", Shape::Array(&Shape::Struct(&FREE_BSD_DEVICE))),
        ("jail", Shape::Struct(&FREE_BSD_JAIL)),
    ],
};

const FREE_BSD_DEVICE: Struct = Struct {
    fields: &[("path", Shape::Any), ("mode", Shape::Any)],
};

const FREE_BSD_JAIL: Struct = Struct {
    fields: &[
        ("parent", Shape::Any),
        ("host", Shape::Any),
        ("ip4", Shape::Any),
        ("ip4Addr", Shape::Any),
        ("ip6", Shape::Any),
        ("ip6Addr", Shape::Any),
        ("vnet", Shape::Any),
        ("interface", Shape::Any),
        ("vnetInterfaces", Shape::Any),
        ("sysvmsg", Shape::Any),
        ("sysvsem", Shape::Any),
        ("sysvshm", Shape::Any),
        ("enforceStatfs", Shape::Any),
        ("allow", Shape::Struct(&FREE_BSD_JAIL_ALLOW)),
    ],
};

const FREE_BSD_JAIL_ALLOW: Struct = Struct {
    fields: &[
        ("setHostname", Shape::Any),
        ("rawSockets", Shape::Any),
        ("chflags", Shape::Any),
        ("mount", Shape::Any),
        ("quotas", Shape::Any),
        ("socketAf", Shape::Any),
        ("mlock", Shape::Any),
        ("reservedPorts", Shape::Any),
        ("suser", Shape::Any),
    ],
};
