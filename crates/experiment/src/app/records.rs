//! `app`'s records: `app-kv` (one client run) and `app-placement` (where the server's heap
//! landed, the `run` record of the launch as its `placement`).

use super::Plan;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_mapping::TargetSpec;
use pmscope_runner::harness::Harness;
use pmscope_runner::launch::Outcome;
use pmscope_workload::kvstore::{self, ClientResult, Server, Workload};
use std::ffi::OsString;
use std::path::Path;

/// The `app-kv` record of one client run.
pub(super) fn kv(
    h: &Harness<'_>,
    plan: &Plan,
    spec: &TargetSpec,
    w: &Workload,
    value_bytes: u64,
    res: &ClientResult,
) -> Record {
    let c = &plan.client;
    let mut r = h
        .record("app-kv")
        .param(p::SERVER, plan.server.name())
        .param(p::TARGET, spec.to_string())
        .param(p::WORKLOAD, w.name)
        .param(p::VALUE_BYTES, value_bytes)
        .param(p::CLIENTS, c.clients)
        .param(p::PERCENTILES_BUCKETED, res.percentiles_bucketed)
        .value(v::MEAN_US, res.mean_us)
        .value(v::P50_US, res.p50_us)
        .value(v::P99_US, res.p99_us)
        .value(v::MAX_US, res.max_us);
    if plan.server == Server::Memcached {
        r = r
            .param(p::KEY_BYTES, kvstore::MEMCACHED_KEY_BYTES)
            .param(p::SET_FRACTION, w.set_fraction)
            .param(p::DURATION_S, c.duration_s);
    } else {
        r = r.param(p::REQUESTS, c.requests);
    }
    r.metric = Some("throughput_ops_s".into());
    r.summary = Some(Summary::of(&[res.ops_per_s]).expect("finite"));
    r
}

/// `r` with the append-only file's directory (`dir`, made inside `parent`), the file
/// system it is on, and whether statx called its inode DAX.
pub(super) fn with_aof(
    r: Record,
    plan: &Plan,
    parent: &Path,
    dir: &Path,
    inode_dax: Option<bool>,
) -> Record {
    crate::filedir::describe_directory(r, parent, plan.aof_mount.as_ref())
        .param(p::AOF_DIRECTORY, dir.display().to_string())
        .param(p::INODE_DAX, inode_dax)
}

/// The `app-placement` record: the launch's `run` record (params and values) as its
/// `placement`, its warnings, its verified target, and a warning if no allocation reached
/// the threshold.
pub(super) fn placement(
    h: &Harness<'_>,
    plan: &Plan,
    spec: &TargetSpec,
    command: &[OsString],
    outcome: &Outcome,
) -> Record {
    let run = crate::run::record(h.session(), command, spec, outcome);
    let mut r = h
        .record("app-placement")
        .param(p::SERVER, plan.server.name())
        .param(p::TARGET, spec.to_string())
        .param(
            p::PLACEMENT,
            serde_json::json!({ "params": run.params, "values": run.values }),
        );
    for w in run.warnings {
        if !r.warnings.iter().any(|x| x.code == w.code) {
            r.warnings.push(w);
        }
    }
    r.target = run.target;
    if outcome.placement.total.served_count == 0 {
        r.warnings.push(Warning {
            code: "app-heap-not-placed".into(),
            message: format!(
                "no allocation of {} reached the threshold: its heap stayed in ordinary memory, not on {spec}",
                plan.server.program().name
            ),
            remedy: "lower --threshold (memcached's slab pages are 1 MiB)".into(),
        });
    }
    r
}
