//! Bytes to decision: whatever config.json holds, the strict reader
//! refuses it or reads what serde_json reads, the engine answers with a
//! plan or a refusal, and nothing panics. A plan's output, read and
//! converted again, must change nothing.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use userns_hostnet_engine::strict::read_spec;
use userns_hostnet_engine::{evaluate, HostFacts, Policy};

fuzz_target!(|data: &[u8]| {
    // What the wrapper does with config.json: read it strictly or refuse.
    let spec = match read_spec(data) {
        Ok(spec) => spec,
        Err(r) => {
            assert!(!r.to_string().contains('\n'), "refusal spans lines: {r}");
            return;
        }
    };
    assert_eq!(
        serde_json::from_slice::<Value>(data).ok().as_ref(),
        Some(&spec),
        "the strict reader reads what serde_json reads"
    );
    let facts = HostFacts::default();
    let policy = Policy::default();
    let Ok(plan) = evaluate(spec, &facts, &policy) else {
        return;
    };
    let bytes = userns_hostnet::bundle::serialize_like(&plan.spec, data);
    let again = read_spec(&bytes).expect("a serialized plan reads strictly");
    assert_eq!(again, plan.spec, "serialization round trip");
    let second = evaluate(again, &facts, &policy).expect("a converted spec is accepted");
    assert!(
        !second.changed(),
        "converting a converted spec changed it: {:?}",
        second.findings.changes
    );
});
