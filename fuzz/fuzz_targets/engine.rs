//! Bytes to decision: whatever config.json holds, the strict reader
//! refuses it or reads what serde_json reads, the engine answers with a
//! plan or a refusal, and nothing panics. A plan's output, written as the
//! wrapper writes it, read and converted again, must change nothing.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use userns_hostnet_engine::strict::read_spec;
use userns_hostnet_engine::write::write;
use userns_hostnet_engine::{evaluate, HostFacts, Policy, Spec};

fuzz_target!(|data: &[u8]| {
    // What the wrapper does with config.json: read it strictly or refuse.
    let value = match read_spec(data) {
        Ok(value) => value,
        Err(r) => {
            assert!(!r.to_string().contains('\n'), "refusal spans lines: {r}");
            return;
        }
    };
    assert_eq!(
        serde_json::from_slice::<Value>(data).ok().as_ref(),
        Some(&value),
        "the strict reader reads what serde_json reads"
    );
    let Ok(spec) = Spec::read(data.to_vec()) else {
        return;
    };
    let facts = HostFacts::default();
    let policy = Policy::default();
    let Ok(plan) = evaluate(spec, &facts, &policy) else {
        return;
    };
    if !plan.changed() {
        return;
    }
    let bytes = write(&plan.spec);
    let again = Spec::read(bytes).expect("a written plan reads strictly");
    let second = evaluate(again, &facts, &policy).expect("a converted spec is accepted");
    assert!(
        !second.changed(),
        "converting a converted spec changed it: {:?}",
        second.findings.changes
    );
});
