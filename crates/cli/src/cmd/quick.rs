//! `pmscope quick`: the main job on the embedded default targets. Maps dram:4k, dram:thp
//! and shm:4k, verifies each, and gives a first figure per target: the idle latency of a
//! random dependent-load chain over the whole mapping and the sequential read bandwidth of
//! all CPUs — side by side, with the configuration each figure was measured on.

use crate::args::QuickArgs;
use crate::cmd::verify::verify_targets;
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::{Bytes, page_size_name};
use pmscope_core::vocab::Pattern;
use pmscope_core::vocab::p;
use pmscope_experiment::Env as Context;
use pmscope_experiment::measure::{LatencyPlan, chase_latency, read_bandwidth};
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::chain::ChainSpec;
use pmscope_loops::chase::Chaser;
use pmscope_loops::stream::{StreamOp, Streamer};
use pmscope_mapping::sizing::{Source, Want};
use pmscope_runner::executor::Executor;
use std::time::Duration;

/// The embedded default targets.
pub const DEFAULT_TARGETS: [&str; 3] = ["dram:4k", "dram:thp", "shm:4k"];

/// The least `--size auto` gives (the old fixed default).
pub const SIZE_FLOOR: u64 = 256 << 20;

/// Each target's first figures, from the records.
fn figures(records: &[Record]) -> Vec<Figures> {
    let mut out: Vec<Figures> = Vec::new();
    for r in records.iter().filter(|r| r.experiment == "quick") {
        let (Some(t), Some(s)) = (&r.target, &r.summary) else {
            continue;
        };
        if !out.iter().any(|f| f.target == t.spec) {
            let a = &t.achieved;
            out.push(Figures {
                target: t.spec.clone(),
                page: a
                    .page_size
                    .map(page_size_name)
                    .unwrap_or_else(|| "unclear".into()),
                persistence: a.persistence.describe().into(),
                latency_ns: f64::NAN,
                read_gb_s: f64::NAN,
            });
        }
        let f = out.iter_mut().find(|f| f.target == t.spec).expect("pushed");
        match r.metric.as_deref() {
            Some("latency_ns") => f.latency_ns = s.p50,
            Some("bandwidth_gb_s") => f.read_gb_s = s.p50,
            _ => {}
        }
    }
    out
}

/// A target's first figures.
struct Figures {
    target: String,
    page: String,
    persistence: String,
    latency_ns: f64,
    read_gb_s: f64,
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &QuickArgs) -> Result<()> {
    let (specs, opts) = ctx.targets(&a.targets, &DEFAULT_TARGETS)?;
    let chosen = ctx.size(a.size, Want::one("--size", SIZE_FLOOR), &specs, &opts);
    let size = chosen.bytes;
    let source = chosen.source.name();
    let cpus = pmscope_sys::affinity::allowed_cpus()?;
    let width = Streamer::widest(&ctx.features);
    let read = Streamer::new(StreamOp::Read, width, 64 << 10, &ctx.features)?;
    sink.text(&format!(
        "pmscope quick: {} on {} ({} CPUs, {} NUMA node{})\n",
        specs
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        ctx.system.cpu_model,
        ctx.system.cpus_online,
        ctx.system.numa_nodes,
        if ctx.system.numa_nodes == 1 { "" } else { "s" }
    ));
    let mut h = ctx.start(sink, &cpus, Some(size), false)?;
    let timer = *h.timer();
    verify_targets(&mut h, &specs, size, &opts, &mut |run, m| {
        let executor = run.executor();
        let mut region = Region::from_slice(m.bytes_mut());
        // Latency: a random chain over the whole mapping, on the first CPU.
        let latency = run.on_cpu(cpus[0], &mut region, |r| -> Result<Summary> {
            let ns = executor.run(
                || -> Result<_> {
                    let mut chaser = Chaser::build(r, size as usize, &ChainSpec::default())?;
                    let plan = LatencyPlan {
                        reps: 3,
                        rep_ns: 40e6,
                    };
                    Ok(chase_latency(&mut chaser, &timer, plan))
                },
                || Ok(Executor::synthetic(3, 100.0)),
            )?;
            Ok(Summary::of(&ns).expect("finite"))
        })??;
        let mut r = run
            .record("quick")
            .param(p::PATTERN, Pattern::Rand.name())
            .param(p::WORKING_SET_BYTES, size)
            .param(p::SIZE_SOURCE, source);
        r.metric = Some("latency_ns".into());
        r.summary = Some(latency);
        run.emit(&r)?;
        // Bandwidth: every CPU reads its own part sequentially.
        let gbs = read_bandwidth(run, &cpus, &mut region, read, Duration::from_millis(150), 3)?;
        let mut r = run
            .record("quick")
            .param(p::OP, "read")
            .param(p::THREADS, cpus.len())
            .param(p::WORKING_SET_BYTES, size)
            .param(p::SIZE_SOURCE, source);
        r.metric = Some("bandwidth_gb_s".into());
        r.summary = Some(Summary::of(&gbs).expect("finite"));
        run.emit(&r)
    })?;
    h.finish()?;
    let records: Vec<Record> = sink.of("verify").cloned().collect();
    let figures = figures(sink.records());
    sink.text("configuration achieved:");
    crate::cmd::verify::print_table(sink, &records);
    let mut t = Table::new(&[
        "target",
        "page size",
        "persistence",
        "latency ns",
        "read GB/s",
    ]);
    for f in &figures {
        t.row(vec![
            f.target.clone(),
            f.page.clone(),
            f.persistence.clone(),
            format!("{:.1}", f.latency_ns),
            format!("{:.2}", f.read_gb_s),
        ]);
    }
    let why = match chosen.source {
        Source::Auto => format!("; --size auto: {}", chosen.why),
        Source::Explicit => String::new(),
    };
    sink.text(&format!(
        "\nfirst figures: random-chain latency over {} (one thread{why}), sequential read bandwidth ({} threads); \
         `pmscope latency` and `pmscope bandwidth` give the full curves",
        Bytes(size),
        cpus.len()
    ));
    sink.text(&t.render());
    Ok(())
}
