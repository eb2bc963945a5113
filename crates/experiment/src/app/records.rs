//! `app`'s records: `app-kv` (one client run) and `app-placement` (where the server's heap
//! landed, the `run` record of the launch as its `placement`).

use super::Plan;
use pmscope_core::cpulist::format_list;
use pmscope_core::precision::Precision;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_mapping::TargetSpec;
use pmscope_runner::harness::Harness;
use pmscope_runner::launch::Outcome;
use pmscope_workload::kvstore::{self, Client, ClientResult, Server, ServerStats, Workload};
use std::ffi::OsString;
use std::path::Path;

/// How one server was run: its store and memory limit, and the CPUs server and client
/// were held to.
pub(super) struct Setup {
    /// `--store-sizes`' size, if any.
    pub store: Option<u64>,
    /// The server's memory limit.
    pub memory_bytes: u64,
    /// The server's CPUs as the kernel reported them.
    pub server_cpus: Vec<usize>,
    /// The CPUs the client was started on, as the kernel granted them.
    pub client_cpus: Vec<usize>,
}

/// One workload and value size: its client runs, and the server after them.
pub(super) struct Point<'p> {
    pub workload: &'p Workload,
    pub value_bytes: u64,
    /// One result per repetition (`--reps`).
    pub runs: Vec<ClientResult>,
    /// What the server held after the runs.
    pub stats: Option<ServerStats>,
    /// Items it evicted during the runs.
    pub evicted: Option<u64>,
    /// Its resident and swapped-out bytes after the runs.
    pub rss: Option<u64>,
    pub swap: Option<u64>,
}

/// The median of some figures (NaN for none).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    Summary::of(&v).map_or(f64::NAN, |s| s.p50)
}

/// The `app-kv` record of one point: its throughput over the runs (median and 95 %
/// interval), their median latencies, the setup, what the server held after them, and a
/// warning for each thing the server did besides serving (evicting, swapping) or a store
/// the runs left mostly empty.
pub(super) fn kv(
    h: &Harness<'_>,
    plan: &Plan,
    c: &Client,
    spec: &TargetSpec,
    setup: &Setup,
    point: &Point<'_>,
) -> Record {
    let w = point.workload;
    let runs = &point.runs;
    let disjoint = !setup.server_cpus.is_empty()
        && !setup.client_cpus.is_empty()
        && !setup
            .server_cpus
            .iter()
            .any(|x| setup.client_cpus.contains(x));
    let mut r = h
        .record("app-kv")
        .param(p::SERVER, plan.server.name())
        .param(p::TARGET, spec.to_string())
        .param(p::WORKLOAD, w.name)
        .param(p::VALUE_BYTES, point.value_bytes)
        .param(p::CLIENTS, c.clients)
        .param(p::CLIENT_THREADS, c.threads)
        .param(p::SERVER_CPUS, format_list(&setup.server_cpus))
        .param(p::CLIENT_CPUS, format_list(&setup.client_cpus))
        .param(p::CPUS_DISJOINT, disjoint)
        .param(p::STORE_BYTES, setup.store)
        .param(p::MEMORY_LIMIT_BYTES, setup.memory_bytes)
        .param(p::KEY_SPACE, c.key_space(point.value_bytes))
        .param(
            p::PERCENTILES_BUCKETED,
            runs.iter().any(|x| x.percentiles_bucketed),
        )
        .value(v::MEAN_US, median(runs.iter().map(|x| x.mean_us)))
        .value(v::P50_US, median(runs.iter().map(|x| x.p50_us)))
        .value(v::P99_US, median(runs.iter().map(|x| x.p99_us)))
        .value(
            v::MAX_US,
            runs.iter().map(|x| x.max_us).fold(f64::NAN, f64::max),
        );
    if let Some(s) = point.stats {
        r = r
            .value(v::STORED_BYTES, s.bytes as f64)
            .value(v::STORED_ITEMS, s.items as f64);
    }
    if let Some(e) = point.evicted {
        r = r.value(v::EVICTIONS, e as f64);
    }
    if let Some(b) = point.rss {
        r = r.value(v::SERVER_RSS_BYTES, b as f64);
    }
    if let Some(b) = point.swap {
        r = r.value(v::SERVER_SWAP_BYTES, b as f64);
    }
    if plan.server == Server::Memcached {
        r = r
            .param(p::KEY_BYTES, kvstore::MEMCACHED_KEY_BYTES)
            .param(p::SET_FRACTION, w.set_fraction)
            .param(p::DURATION_S, c.duration_s);
    } else {
        r = r.param(p::REQUESTS, c.requests);
    }
    r.warnings.extend(what_the_server_did(plan, setup, point));
    let ops: Vec<f64> = runs.iter().map(|x| x.ops_per_s).collect();
    r.metric = Some("throughput_ops_s".into());
    r.summary = Summary::of(&ops);
    r.precision = Precision::of(&ops, None);
    r
}

/// Warnings of what the server did with its store during a point: evicted items, had
/// memory swapped out, or held well under the store asked for.
fn what_the_server_did(plan: &Plan, setup: &Setup, point: &Point<'_>) -> Vec<Warning> {
    let mut out = Vec::new();
    let at = format!(
        "{} {} B{}",
        point.workload.name,
        point.value_bytes,
        setup
            .store
            .map(|s| format!(", {} store", Bytes(s)))
            .unwrap_or_default()
    );
    if let Some(n) = point.evicted.filter(|&n| n > 0) {
        out.push(Warning::new(
            "app-store-evicted",
            format!(
                "{at}: {} evicted {n} items to stay within its {} limit: the store was full, and the misses it caused are in the figures",
                plan.server,
                Bytes(setup.memory_bytes)
            ),
            "nothing to do if a full store is the point; else a larger --store-sizes or --memory",
        ));
    }
    if let Some(b) = point.swap.filter(|&b| b > 0) {
        out.push(Warning::new(
            "app-server-swapped",
            format!(
                "{at}: {} of the server's memory was swapped out: part of the store was on the swap device, not on the target",
                Bytes(b).human()
            ),
            "give a store that fits the machine's memory, or measure swap on purpose",
        ));
    }
    if let (Some(store), Some(s)) = (setup.store, point.stats)
        && s.bytes < store / 2
        && point.evicted.unwrap_or(0) == 0
    {
        out.push(Warning::new(
            "app-store-not-filled",
            format!(
                "{at}: the server held {} of the {} store asked for: the client's runs did not fill it",
                Bytes(s.bytes).human(),
                Bytes(store)
            ),
            "a longer --duration (memcached) or more --requests (redis) fills more of it",
        ));
    }
    out
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
