//! Engine scaling: bytes of config.json in, bytes to write out (parse,
//! decide, convert, serialize), for configs from 5 KB to 5 MB grown from
//! the podman fixture with mounts, env entries and annotations. The time
//! must grow linearly with the size.
//!
//!     cargo bench --bench engine          # measure
//!     cargo test --bench engine           # run each case once (CI)
//!
//! `read` compares the strict reader with serde_json on the same bytes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::{json, Value};
use userns_hostnet::bundle::serialize_like;
use userns_hostnet::engine::strict::read_spec;
use userns_hostnet::engine::{evaluate, HostFacts, Policy};

const FIXTURE: &str = include_str!("../tests/fixtures/podman-userns-hostnet.json");

/// The podman fixture grown to about `size` bytes; the /sys mount stays
/// last so the order rule has work at every size.
pub fn config_of_size(size: usize) -> Vec<u8> {
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

/// What the wrapper does with the bytes of config.json.
pub fn convert(bytes: &[u8]) -> Vec<u8> {
    let spec = read_spec(bytes).unwrap();
    let plan = evaluate(spec, &HostFacts::default(), &Policy::default()).unwrap();
    assert!(plan.changed());
    serialize_like(&plan.spec, bytes)
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("convert");
    for (label, size) in [
        ("5KB", 5_000),
        ("25KB", 25_000),
        ("100KB", 100_000),
        ("500KB", 500_000),
        ("1MB", 1_000_000),
        ("5MB", 5_000_000),
    ] {
        let bytes = if size <= FIXTURE.len() {
            // Smaller than the fixture: the runc spec converted the same way.
            let mut spec: Value =
                serde_json::from_str(include_str!("../tests/fixtures/runc-spec.json")).unwrap();
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
            serde_json::to_vec_pretty(&spec).unwrap()
        } else {
            config_of_size(size)
        };
        if label == "25KB" {
            // The typical config: the podman fixture itself.
            let bytes = FIXTURE.as_bytes().to_vec();
            group.throughput(Throughput::Bytes(bytes.len() as u64));
            group.bench_with_input(BenchmarkId::from_parameter(label), &bytes, |b, x| {
                b.iter(|| convert(x))
            });
            continue;
        }
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if size >= 1_000_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::from_parameter(label), &bytes, |b, x| {
            b.iter(|| convert(x))
        });
    }
    group.finish();
}

/// The strict reader against serde_json's own reading of the same bytes:
/// what checking for duplicate and case-folded keys and NULs costs.
fn reading(c: &mut Criterion) {
    let mut group = c.benchmark_group("read");
    for (label, bytes) in [
        ("25KB", FIXTURE.as_bytes().to_vec()),
        ("5MB", config_of_size(5_000_000)),
    ] {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if bytes.len() > 1_000_000 {
            group.sample_size(20);
        }
        group.bench_with_input(BenchmarkId::new("serde_json", label), &bytes, |b, x| {
            b.iter(|| serde_json::from_slice::<Value>(x).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("strict", label), &bytes, |b, x| {
            b.iter(|| read_spec(x).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, scaling, reading);
criterion_main!(benches);
