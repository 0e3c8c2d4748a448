//! Load: many userns + host-network containers started at once through
//! containerd and the wrapper. Each create converts its own bundle; none may
//! fail, see another's spec, or leave a shim, a runtime state or a cgroup.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::containerd::Containerd;
use common::{Bundle, Probe};
use serde_json::json;

const CONTAINERS: usize = 50;
/// On 2 cores a run takes about 6 s.
const BUDGET: Duration = Duration::from_secs(60);

#[test]
fn fifty_parallel_containers_through_containerd_and_the_wrapper() {
    let mut ctd = Containerd::start();
    let bundle = Bundle::userns_hostnet(&common::probe_args());
    bundle.edit(|spec| {
        spec["process"]["env"] = json!(["PATH=/bin"]);
        // One spec for fifty containers: without a cgroup path each gets
        // its own (runc's default, named after the container), as the
        // kubelet's distinct paths would give them.
        spec["linux"].as_object_mut().unwrap().remove("cgroupsPath");
    });
    let spec = Arc::new(bundle.config_path());
    let ctd_ref = &ctd;

    let started = Instant::now();
    let results: Vec<(String, common::Outcome)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CONTAINERS)
            .map(|i| {
                let spec = Arc::clone(&spec);
                s.spawn(move || {
                    let id = common::unique_id(&format!("load{i}"));
                    let out = ctd_ref.run(Path::new(common::WRAPPER), &spec, &id);
                    (id, out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("runner thread"))
            .collect()
    });
    let elapsed = started.elapsed();
    eprintln!("{CONTAINERS} containers through containerd and the wrapper in {elapsed:?}");

    let failed: Vec<String> = results
        .iter()
        .filter(|(_, out)| !out.success())
        .map(|(id, out)| format!("{id}:\n{}", out.describe()))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {CONTAINERS} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    for (_, out) in &results {
        common::assert_converted_view(&Probe::parse(&out.stdout), true);
    }
    assert!(elapsed < BUDGET, "{CONTAINERS} containers took {elapsed:?}");

    assert!(
        ctd.list("containers").is_empty(),
        "containers left: {:?}",
        ctd.list("containers")
    );
    assert!(
        ctd.runtime_states().is_empty(),
        "runtime states left: {:?}",
        ctd.runtime_states()
    );
    let leaked = ctd.stop();
    assert!(leaked.is_empty(), "left behind: {leaked:#?}");
    // runc creates each container's cgroup in the cgroup v2 tree and
    // removes it on delete.
    let cgroups: Vec<String> = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.filter_map(|e| e.ok()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| results.iter().any(|(id, _)| id == n))
        .collect();
    assert!(cgroups.is_empty(), "cgroups left: {cgroups:?}");
}
