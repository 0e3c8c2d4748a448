//! Engine scaling: bytes of config.json in, bytes to write out, as the
//! wrapper does it (`Spec::read`: the one-pass strict reader recording
//! spans; decide, convert; the edits written into the bytes read, and the
//! result read back and checked), for configs from 5 KB to 5 MB grown
//! from the podman fixture with mounts, env entries and annotations. The
//! time must grow linearly with the size.
//!
//!     cargo bench --bench engine          # measure
//!     cargo test --bench engine           # run each case once (CI)
//!
//! `read` compares the strict readers (the whole-document one, and
//! `Spec::read`) with serde_json on the same bytes; `whole` builds and
//! serializes the whole document, for comparison.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use serde_json::Value;
use userns_hostnet_engine::strict::read_spec;
use userns_hostnet_engine::{evaluate, evaluate_value, write, HostFacts, Policy, Spec};

mod support;
use support::config_of_size;
use support::serialize_like;

/// What the wrapper does with the bytes of config.json: read them
/// strictly (spans), decide, convert, write the edits into the bytes read
/// and read the result back to check it. The bytes come in owned, as the
/// wrapper's read of the file gives them.
pub fn convert(bytes: Vec<u8>) -> Vec<u8> {
    let spec = Spec::read(bytes).unwrap();
    let plan = evaluate(spec, &HostFacts::default(), &Policy::default()).unwrap();
    assert!(plan.changed());
    write::write_checked(&plan.spec).unwrap()
}

/// The same on the whole document, serialized again.
pub fn convert_whole(bytes: &[u8]) -> Vec<u8> {
    let spec = read_spec(bytes).unwrap();
    let plan = evaluate_value(&spec, &HostFacts::default(), &Policy::default()).unwrap();
    assert!(plan.changed());
    serialize_like(&plan.spec.to_value().unwrap(), bytes)
}

const SIZES: &[(&str, usize)] = &[
    ("5KB", 5_000),
    ("25KB", 25_000),
    ("100KB", 100_000),
    ("500KB", 500_000),
    ("1MB", 1_000_000),
    ("5MB", 5_000_000),
];

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("convert");
    for &(label, size) in SIZES {
        let bytes = config_of_size(size);
        assert_eq!(convert(bytes.clone()), convert_whole(&bytes), "{label}");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if size >= 1_000_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::from_parameter(label), &bytes, |b, x| {
            b.iter_batched(|| x.clone(), convert, BatchSize::LargeInput)
        });
    }
    group.finish();
}

/// `convert` without the read-back check of the written bytes: what the
/// check costs.
fn unchecked(c: &mut Criterion) {
    let mut group = c.benchmark_group("unchecked");
    for (label, size) in [("25KB", 25_000), ("5MB", 5_000_000)] {
        let bytes = config_of_size(size);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if size >= 1_000_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::from_parameter(label), &bytes, |b, x| {
            b.iter_batched(
                || x.clone(),
                |x| {
                    let spec = Spec::read(x).unwrap();
                    let plan = evaluate(spec, &HostFacts::default(), &Policy::default()).unwrap();
                    write::write(&plan.spec)
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn whole(c: &mut Criterion) {
    let mut group = c.benchmark_group("whole");
    for (label, size) in [("25KB", 25_000), ("5MB", 5_000_000)] {
        let bytes = config_of_size(size);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if size >= 1_000_000 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::from_parameter(label), &bytes, |b, x| {
            b.iter(|| convert_whole(x))
        });
    }
    group.finish();
}

/// The strict reader against serde_json's own reading of the same bytes:
/// what checking for duplicate and case-folded keys and NULs costs, and
/// what building only the view saves.
fn reading(c: &mut Criterion) {
    let mut group = c.benchmark_group("read");
    for (label, size) in [("25KB", 25_000), ("5MB", 5_000_000)] {
        let bytes = config_of_size(size);
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
        group.bench_with_input(BenchmarkId::new("spec", label), &bytes, |b, x| {
            b.iter_batched(
                || x.clone(),
                |x| Spec::read(x).unwrap(),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, scaling, unchecked, whole, reading);
criterion_main!(benches);
