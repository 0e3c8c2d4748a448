//! Capability names as each runtime reads them: one classifier for the
//! spec's `process.capabilities`, the process file of `exec --process` and
//! `exec --cap`. Each reader below mirrors one parser:
//!
//! - [`runc`]: runc 1.1 to 1.4 look a name up in a map of exact,
//!   upper-case `CAP_` names (`libcontainer/capabilities`); anything else
//!   is ignored with a warning. `exec --cap` adds names to the same lists.
//! - [`libcap`]: crun reads every name (spec, process file, `exec --cap`)
//!   with libcap's `cap_from_name` (`libcap/cap_text.c`, `lookupname`;
//!   libcap 2.66 as Debian 12 builds it, with its gperf table). A name that
//!   starts with an ASCII digit is a C number (`strtoul` base 0: `0x` hex,
//!   a leading `0` octal, whatever follows ignored), accepted below 64.
//!   Otherwise the leading run of ASCII letters and underscores is looked
//!   up in any case among `cap_<name>`, and whatever follows is ignored:
//!   `CAP_NET_RAW1` and `cap_net_admin-x` are network capabilities. crun
//!   runs in the C locale, so nothing outside ASCII is a letter. A libcap
//!   built without gperf (`namcmp`) accepts a subset of these names, with
//!   the same numbers.
//! - [`youki`]: youki (oci-spec 0.10) upper-cases the whole name
//!   (Unicode: `ı` is `I`, `ſ` is `S`, `ﬆ` is `ST`), strips every leading
//!   `CAP_` and matches what is left exactly; `exec --cap` takes exact
//!   names (the `caps` crate), which this reading includes.
//!
//! A name is a network capability when any of them reads it as one. A
//! name none of them reads as a capability of this kernel (CAP_CHOWN, 0,
//! to CAP_CHECKPOINT_RESTORE, 40) cannot be classified with certainty: a
//! runtime or library version the wrapper does not mirror may read it
//! otherwise. The capability rule refuses it in a converted container.

/// The capabilities libcap 2.66, runc and youki know, by number, without
/// the `CAP_` prefix.
pub const NAMES: [&str; 41] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
];

/// CAP_NET_BIND_SERVICE, CAP_NET_BROADCAST, CAP_NET_ADMIN, CAP_NET_RAW.
pub const NETWORK: std::ops::RangeInclusive<u32> = 10..=13;

/// libcap's `__CAP_MAXBITS`: numbers from here on are refused.
const LIBCAP_MAXBITS: u64 = 64;

/// What a capability name is, read by every runtime the wrapper mirrors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Some runtime reads it as this network capability.
    Network(u32),
    /// Some runtime reads it as this capability, none as a network one.
    Other(u32),
    /// No runtime reads it as a capability this kernel has.
    Unknown,
}

/// Classify a name (the bytes a runtime gets: a JSON string, or an argv
/// word).
pub fn classify(name: &[u8]) -> Class {
    // An exact `CAP_` name (nearly every name a spec holds) is read alike
    // by all three: libcap matches it ignoring case, youki strips the one
    // `CAP_` (no name starts with another), and no name holds a digit.
    if let Some(n) = runc(name) {
        return match NETWORK.contains(&n) {
            true => Class::Network(n),
            false => Class::Other(n),
        };
    }
    let readings = [
        runc(name),
        libcap(name),
        std::str::from_utf8(name).ok().and_then(youki),
    ];
    if let Some(n) = readings.iter().flatten().find(|n| NETWORK.contains(n)) {
        return Class::Network(*n);
    }
    match readings
        .iter()
        .flatten()
        .find(|&&n| (n as usize) < NAMES.len())
    {
        Some(&n) => Class::Other(n),
        None => Class::Unknown,
    }
}

/// Whether any runtime reads `name` as a network capability.
pub fn is_network(name: &str) -> bool {
    matches!(classify(name.as_bytes()), Class::Network(_))
}

/// runc: an exact, upper-case `CAP_` name.
pub fn runc(name: &[u8]) -> Option<u32> {
    let bare = name.strip_prefix(b"CAP_")?;
    NAMES
        .iter()
        .position(|n| n.as_bytes() == bare)
        .map(|i| i as u32)
}

/// libcap's `cap_from_name` (see the module text). The name ends at its
/// first NUL, as the C string crun passes does.
pub fn libcap(name: &[u8]) -> Option<u32> {
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    let first = *name.first()?;
    if first.is_ascii_digit() {
        let n = strtoul0(name)?;
        return (n < LIBCAP_MAXBITS).then_some(n as u32);
    }
    let len = name
        .iter()
        .take_while(|b| b.is_ascii_alphabetic() || **b == b'_')
        .count();
    let word = &name[..len];
    let bare = word
        .get(..4)
        .filter(|p| p.eq_ignore_ascii_case(b"cap_"))
        .map(|_| &word[4..])?;
    NAMES
        .iter()
        .position(|n| n.as_bytes().eq_ignore_ascii_case(bare))
        .map(|i| i as u32)
}

/// C's `strtoul(s, &end, 0)` on a string that starts with a digit: the
/// value of the longest prefix it reads, `None` where it overflows (it
/// returns `ULONG_MAX`, which libcap refuses like any number from 64 on).
fn strtoul0(s: &[u8]) -> Option<u64> {
    let (radix, digits) = match s {
        [b'0', b'x' | b'X', h, ..] if h.is_ascii_hexdigit() => (16, &s[2..]),
        [b'0', ..] => (8, s),
        _ => (10, s),
    };
    let mut n: u64 = 0;
    for &b in digits {
        let Some(d) = (b as char).to_digit(radix) else {
            break;
        };
        n = n.checked_mul(u64::from(radix))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// youki's oci-spec reading: Unicode upper case, every leading `CAP_`
/// stripped, the rest exact.
pub fn youki(name: &str) -> Option<u32> {
    let upper = name.to_uppercase();
    let mut bare = upper.as_str();
    while let Some(rest) = bare.strip_prefix("CAP_") {
        bare = rest;
    }
    NAMES.iter().position(|n| *n == bare).map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Class {
        classify(s.as_bytes())
    }

    #[test]
    fn an_exact_name_is_read_alike_by_all_three() {
        for (i, bare) in NAMES.iter().enumerate() {
            assert!(!bare.starts_with("CAP_") && !bare.bytes().any(|b| b.is_ascii_digit()));
            let name = format!("CAP_{bare}");
            let n = Some(i as u32);
            assert_eq!(
                (runc(name.as_bytes()), libcap(name.as_bytes()), youki(&name)),
                (n, n, n)
            );
        }
    }

    #[test]
    fn the_issues_spellings_are_network_capabilities() {
        for (name, n) in [
            ("CAP_NET_RAW", 13),
            ("CAP_NET_RAW1", 13),
            ("cap_net_admin-x", 12),
            ("014", 12),
            ("0xd", 13),
            ("0XA", 10),
            ("11", 11),
            ("13abc", 13),
            ("012", 10),
            ("NET_ADMIN", 12),
            ("net_bind_service", 10),
            ("cap_cap_net_raw", 13),
            ("CAP_NET_BROADCAST\u{0}x", 11),
            ("CAP_NET_RAWé", 13),
            ("cap_net_bind_ſervice", 10),
            ("net_admın", 12),
            ("cap_net_broadcaﬆ", 11),
        ] {
            assert_eq!(class(name), Class::Network(n), "{name:?}");
        }
    }

    #[test]
    fn other_capabilities_and_names_nobody_reads() {
        for (name, n) in [
            ("CAP_CHOWN", 0),
            ("cap_sys_admin.", 21),
            ("chown", 0),
            ("0", 0),
            ("0x", 0),
            ("09", 0),
            ("040", 32),
        ] {
            assert_eq!(class(name), Class::Other(n), "{name:?}");
        }
        for name in [
            "",
            " CAP_NET_RAW",
            "+13",
            "-10",
            "64",
            "41",
            "0x40",
            "99999999999999999999999",
            "CAP_FROBNICATE",
            "CAP_",
            "CAP_10",
            "ÇAP_NET_RAW",
            "NET",
            "CAP_NET_RAW_",
        ] {
            assert_eq!(class(name), Class::Unknown, "{name:?}");
        }
    }

    #[test]
    fn strtoul_reads_c_numbers() {
        assert_eq!(strtoul0(b"10"), Some(10));
        assert_eq!(strtoul0(b"010"), Some(8));
        assert_eq!(strtoul0(b"0x1f"), Some(31));
        assert_eq!(strtoul0(b"0xg"), Some(0));
        assert_eq!(strtoul0(b"019"), Some(1));
        assert_eq!(strtoul0(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(strtoul0(b"18446744073709551616"), None);
    }
}
