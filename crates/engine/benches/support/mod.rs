//! The configs the engine is measured on, shared by `benches/engine.rs`
//! and `examples/engine-rss.rs`.

use serde_json::{json, Value};

#[path = "../../tests/support/whole_writer.rs"]
mod whole_writer;
pub use whole_writer::serialize_like;

pub const FIXTURE: &str = include_str!("../../fixtures/podman-userns-hostnet.json");

/// The podman fixture grown to about `size` bytes with mounts, env entries
/// and annotations; the /sys mount stays last so the order rule has work
/// at every size. Smaller than the fixture: the runc spec with a user
/// namespace on the host network and 40 env entries. 25 KB: the fixture.
pub fn config_of_size(size: usize) -> Vec<u8> {
    if size == 25_000 {
        return FIXTURE.as_bytes().to_vec();
    }
    if size <= FIXTURE.len() {
        let mut spec: Value =
            serde_json::from_str(include_str!("../../fixtures/runc-spec.json")).unwrap();
        let ns = spec["linux"]["namespaces"].as_array_mut().unwrap();
        ns.retain(|n| n["type"] != "network");
        ns.push(json!({"type": "user"}));
        let map = json!([{"containerID": 0, "hostID": 100000, "size": 65536}]);
        spec["linux"]["uidMappings"] = map.clone();
        spec["linux"]["gidMappings"] = map;
        spec["process"]["env"]
            .as_array_mut()
            .unwrap()
            .extend((0..40).map(|i| json!(format!("VAR_{i}=some-value-{i}"))));
        return serde_json::to_vec_pretty(&spec).unwrap();
    }
    let mut spec: Value = serde_json::from_str(FIXTURE).unwrap();
    let mut n = 0;
    while serde_json::to_vec_pretty(&spec).unwrap().len() < size {
        let step = (size / 2000).max(1);
        for _ in 0..step {
            let mounts = spec["mounts"].as_array_mut().unwrap();
            mounts.insert(
                0,
                json!({"destination": format!("/data/vol{n}"), "type": "bind",
                       "source": format!("/var/lib/volumes/{n}"), "options": ["rbind", "ro", "nosuid"]}),
            );
            spec["process"]["env"]
                .as_array_mut()
                .unwrap()
                .push(json!(format!("VAR_{n}=value-{n}")));
            spec["annotations"][format!("io.example/key-{n}")] = json!(format!("annotation {n}"));
            n += 1;
        }
    }
    let mut out = serde_json::to_vec_pretty(&spec).unwrap();
    out.push(b'\n');
    out
}
