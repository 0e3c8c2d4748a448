//! Bytes to decision: whatever config.json holds, the engine answers with a
//! plan, a refusal, or "cannot parse, pass through", and never panics. A
//! plan's output, converted again, must change nothing.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use userns_hostnet::engine::{evaluate, HostFacts, Policy};

fuzz_target!(|data: &[u8]| {
    // What the wrapper does with a config.json it cannot read as an object:
    // pass through to the real runtime.
    let Ok(spec @ Value::Object(_)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let facts = HostFacts::default();
    let policy = Policy::default();
    let Ok(plan) = evaluate(spec, &facts, &policy) else {
        return;
    };
    let bytes = userns_hostnet::bundle::serialize_like(&plan.spec, data);
    let again: Value = serde_json::from_slice(&bytes).expect("serialized plan parses");
    assert_eq!(again, plan.spec, "serialization round trip");
    let second = evaluate(again, &facts, &policy).expect("a converted spec is accepted");
    assert!(
        !second.changed(),
        "converting a converted spec changed it: {:?}",
        second.findings.changes
    );
});
