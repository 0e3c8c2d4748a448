//! The capability classifier's libcap reading against libcap itself: the
//! `cap_from_name` crun calls, from the libcap.so.2 installed with crun,
//! on generated names. Every name libcap reads as a capability must read
//! the same in `cap_names::libcap`, and every name it refuses must be
//! refused there too.

use proptest::prelude::*;
use std::ffi::{c_char, c_int, c_void, CString};
use userns_hostnet_engine::cap_names::{self, Class};

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;

type CapFromName = unsafe extern "C" fn(*const c_char, *mut c_int) -> c_int;

fn cap_from_name() -> CapFromName {
    let lib = CString::new("libcap.so.2").unwrap();
    let sym = CString::new("cap_from_name").unwrap();
    // SAFETY: dlopen and dlsym with valid C strings; the symbol's type is
    // libcap's `int cap_from_name(const char *, cap_value_t *)`, with
    // cap_value_t an int.
    unsafe {
        let h = dlopen(lib.as_ptr(), RTLD_NOW);
        assert!(
            !h.is_null(),
            "libcap.so.2 is missing (Debian package libcap2, a dependency of crun)"
        );
        let f = dlsym(h, sym.as_ptr());
        assert!(!f.is_null(), "libcap.so.2 has no cap_from_name");
        std::mem::transmute::<*mut c_void, CapFromName>(f)
    }
}

/// What libcap reads `name` as (up to its first NUL, as C sees it).
fn real(name: &[u8]) -> Option<u32> {
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    let c = CString::new(name).unwrap();
    let mut v: c_int = -1;
    // SAFETY: a valid C string and a valid out pointer.
    let rc = unsafe { cap_from_name()(c.as_ptr(), &mut v) };
    (rc == 0).then(|| u32::try_from(v).unwrap())
}

fn agree(name: &[u8]) {
    assert_eq!(
        cap_names::libcap(name),
        real(name),
        "{:?}",
        String::from_utf8_lossy(name)
    );
    if let Some(n) = real(name) {
        if cap_names::NETWORK.contains(&n) {
            assert_eq!(cap_names::classify(name), Class::Network(n));
        }
    }
}

#[test]
fn the_issues_spellings_read_as_libcap_reads_them() {
    for name in [
        "CAP_NET_RAW1",
        "cap_net_admin-x",
        "014",
        "0xd",
        "0x",
        "0X1f",
        "09",
        "63",
        "64",
        "99999999999999999999999",
        "18446744073709551616",
        "CAP_NET_RAW",
        "NET_RAW",
        "cap_cap_net_raw",
        " CAP_NET_RAW",
        "+13",
        "CAP_NET_RAW_",
        "CAP_NET_RAWé",
        "cap_net_bind_service.x",
        "CAP_CHECKPOINT_RESTORE",
        "cap_checkpoint_restore9",
        "",
    ] {
        agree(name.as_bytes());
    }
}

/// Names built from the pieces that matter to libcap: prefixes in any
/// case, capability names, digits in every base, and what may follow.
fn names() -> impl Strategy<Value = Vec<u8>> {
    let known: Vec<String> = cap_names::NAMES.iter().map(|s| s.to_string()).collect();
    let cased = prop::sample::select(known).prop_flat_map(|n| {
        prop::collection::vec(any::<bool>(), n.len()).prop_map(move |up| {
            n.chars()
                .zip(up)
                .map(|(c, u)| {
                    if u {
                        c.to_ascii_uppercase()
                    } else {
                        c.to_ascii_lowercase()
                    }
                })
                .collect::<String>()
        })
    });
    let prefix = prop::sample::select(vec![
        "", "cap_", "CAP_", "Cap_", "cAp_", "cap", "cap__", " ", "+",
    ]);
    let tail = prop::sample::select(vec![
        "", "1", "_", "-x", ".", "x", " ", "\t", ",", "é", "\u{0}z", "0", "a",
    ]);
    let word = (prefix, cased, tail).prop_map(|(p, n, t)| format!("{p}{n}{t}").into_bytes());
    let number = (
        prop::sample::select(vec!["", "0", "0x", "0X", "00"]),
        "[0-9a-fA-F]{0,22}",
        prop::sample::select(vec!["", "x", "g", "9", " ", "_"]),
    )
        .prop_map(|(p, d, t)| format!("{p}{d}{t}").into_bytes());
    let bytes = prop::collection::vec(any::<u8>(), 0..16);
    prop_oneof![4 => word, 3 => number, 1 => bytes]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]
    #[test]
    fn the_classifier_reads_as_libcap_does(name in names()) {
        agree(&name);
    }
}
