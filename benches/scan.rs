//! The single-pass scanner against the whole-document reader it replaces
//! (the strict reader, then the spans located in the bytes), on the
//! benchmark's configs of 25 KB and 5 MB.
//!
//!     cargo bench --bench scan          # measure
//!     cargo test --bench scan           # run each case once (CI)

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use userns_hostnet::engine::strict::scan::{reference, scan};
use userns_hostnet::engine::strict::spans::SPEC;
use userns_hostnet::engine::strict::Document;

mod support;
use support::config_of_size;

fn scanning(c: &mut Criterion) {
    let mut group = c.benchmark_group("scan");
    for (label, size) in [("25KB", 25_000), ("5MB", 5_000_000)] {
        let bytes = config_of_size(size);
        let fast = scan(&bytes, Document::Spec, SPEC);
        assert!(fast.is_some(), "{label}");
        assert_eq!(fast, reference(&bytes, Document::Spec, SPEC), "{label}");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if bytes.len() > 1_000_000 {
            group.sample_size(20);
        }
        group.bench_with_input(BenchmarkId::new("scan", label), &bytes, |b, x| {
            b.iter(|| scan(x, Document::Spec, SPEC))
        });
        group.bench_with_input(BenchmarkId::new("reference", label), &bytes, |b, x| {
            b.iter(|| reference(x, Document::Spec, SPEC))
        });
    }
    group.finish();
}

criterion_group!(benches, scanning);
criterion_main!(benches);
