//! `pmscope quick`: the main job on the embedded default targets. Maps dram:4k, dram:thp
//! and shm:4k, verifies each, and gives a first figure per target: the idle latency of a
//! random dependent-load chain over the whole mapping and the sequential read bandwidth of
//! all CPUs — side by side, with the configuration each figure was measured on.

use crate::args::QuickArgs;
use crate::cmd::verify::verify_targets;
use crate::context::{Context, parse_size};
use crate::measure::{LatencyPlan, Role, chase_latency, stream_for};
use crate::output::Sink;
use crate::output::table::Table;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::{Bytes, page_size_name};
use pmscope_loops::Region;
use pmscope_loops::chain::ChainSpec;
use pmscope_loops::chase::Chaser;
use pmscope_loops::stream::{StreamOp, StreamView, Streamer};
use pmscope_runner::timer::Timer;
use std::sync::Mutex;
use std::time::Duration;

/// The embedded default targets.
pub const DEFAULT_TARGETS: [&str; 3] = ["dram:4k", "dram:thp", "shm:4k"];

/// A target's first figures.
struct Figures {
    target: String,
    page: String,
    persistence: String,
    latency_ns: f64,
    read_gb_s: f64,
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &QuickArgs) -> Result<()> {
    let size = parse_size(&a.size)?;
    let (specs, opts) = ctx.targets(&a.targets, &DEFAULT_TARGETS)?;
    let timer = Timer::calibrate(&ctx.features, Duration::from_millis(50));
    ctx.set_timer(timer.info());
    let cpus = pmscope_sys::affinity::allowed_cpus()?;
    let width = if ctx.features.avx512f { 64 } else { 32 };
    let read = Streamer::new(StreamOp::Read, width, 64 << 10, &ctx.features)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
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
    let mut figures = Vec::new();
    let base = ctx.record("quick");
    let records = verify_targets(ctx, sink, &specs, size, &opts, &mut |sink, m, verified| {
        let target = m.record();
        let mut region = Region::from_slice(m.bytes_mut());
        // Latency: a random chain over the whole mapping, on the first CPU.
        let latency = {
            let shared = Mutex::new(&mut region);
            let mut out = pmscope_runner::pin::run_pinned(&cpus[..1], |_| -> Result<Summary> {
                let mut r = shared.lock().expect("one worker");
                let mut chaser = Chaser::build(&mut r, size as usize, &ChainSpec::default())?;
                let plan = LatencyPlan {
                    reps: 3,
                    rep_ns: 40e6,
                };
                Ok(Summary::of(&chase_latency(&mut chaser, &timer, plan)).expect("finite"))
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            out.remove(0).0?
        };
        // Bandwidth: every CPU reads its own part sequentially.
        let views = StreamView::of(&mut region, cpus.len(), false);
        let mut gbs = Vec::new();
        for rep in 0..4 {
            let out = pmscope_runner::pin::run_pinned(&cpus, |w| {
                stream_for(
                    Role::Stream(read),
                    views[w],
                    false,
                    Duration::from_millis(150),
                    rep,
                )
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            if rep > 0 {
                let secs = out.iter().map(|((_, s), _)| *s).fold(0.0, f64::max);
                gbs.push(out.iter().map(|((t, _), _)| t.read).sum::<u64>() as f64 / secs / 1e9);
            }
        }
        let bandwidth = Summary::of(&gbs).expect("finite");
        for (metric, summary, params) in [
            (
                "latency_ns",
                latency.clone(),
                [
                    ("pattern", serde_json::Value::from("random")),
                    ("working_set_bytes", size.into()),
                ],
            ),
            (
                "bandwidth_gb_s",
                bandwidth.clone(),
                [
                    ("op", serde_json::Value::from("read")),
                    ("threads", cpus.len().into()),
                ],
            ),
        ] {
            let mut r: Record = base.clone();
            for (k, v) in params {
                r = r.param(k, v);
            }
            r.metric = Some(metric.into());
            r.summary = Some(summary);
            r.target = Some(target.clone());
            r.warnings = verified.warnings.clone();
            sink.emit(&r)?;
        }
        let ach = &target.achieved;
        figures.push(Figures {
            target: target.spec.clone(),
            page: ach
                .page_size
                .map(page_size_name)
                .unwrap_or_else(|| "unclear".into()),
            persistence: ach.persistence.describe().into(),
            latency_ns: latency.p50,
            read_gb_s: bandwidth.p50,
        });
        Ok(())
    })?;
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
    sink.text(&format!(
        "\nfirst figures: random-chain latency over {} (one thread), sequential read bandwidth ({} threads); \
         `pmscope latency` and `pmscope bandwidth` give the full curves",
        Bytes(size),
        cpus.len()
    ));
    sink.text(&t.render());
    Ok(())
}
