//! `pmscope loaded`: loaded latency (seed 004 Figure 14, Intel MLC's loaded-latency mode).
//! One pinned thread measures while the others generate traffic with an injected delay
//! after every access; one point per delay, from no traffic at all (idle) through delays
//! that make the load negligible down to 0 (flat out), giving a bandwidth-latency curve.
//!
//! The probe is a dependent-load chain over a random cycle (the same method and working set
//! as `pmscope latency`), reporting the mean ns per load of the chain and, from
//! individually timed loads, p50/p99/p99.9 — the tail under load, which MLC does not give.
//! It can also be a persist operation (`--probe store+clwb+sfence`, or a persist strategy
//! name): the latency of making a line durable while the other threads load the memory.

mod curve;
mod probe;
mod render;
mod traffic;

use crate::env::Chosen;
use crate::error::usage;
use crate::measure::{LatencyPlan, TrafficMix};
use crate::output::Output;
use crate::params::{AutoSize, Count, Cpus, Size, TargetArgs};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{Pattern, p, v};
use pmscope_loops::access::{self, Sequence, Width};
use pmscope_loops::stream::StreamOp;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};

pub use probe::{Probe, ProbeArg, parse_probe};
pub use traffic::{Rw, TrafficPattern};
use traffic::{traffic, traffic_op, traffic_op_help};

/// `pmscope loaded`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// The probe (see [`crate::params::probe_help`]).
    #[arg(long, default_value = "chase", help = crate::params::probe_help())]
    pub probe: ProbeArg,
    /// Delays injected after every traffic access, in ns (sweep axis; an idle point with no
    /// traffic is always measured first).
    #[arg(
        long,
        default_value = "0,25,50,100,200,400,800,1600,3200,6400,12800,25600"
    )]
    pub delays: String,
    /// The traffic's read:write ratio (1:0 reads only, 2:1, 1:1, 0:1 writes only) [default:
    /// 1:0; 0:1 with a writing --traffic-op].
    #[arg(long)]
    pub rw: Option<Rw>,
    /// The traffic's op (see `traffic_op_help`).
    #[arg(long, value_name = "OP", value_parser = traffic_op, help = traffic_op_help())]
    pub traffic_op: Option<StreamOp>,
    /// The order the traffic visits its region: seq, or rand (a random permutation of every
    /// access-sized block, each once per pass, so the whole region is covered).
    #[arg(long, value_enum, default_value_t = TrafficPattern::Seq, value_name = "PATTERN")]
    pub traffic_pattern: TrafficPattern,
    /// Bytes per traffic access.
    #[arg(long, default_value = "1KiB", value_name = "SIZE")]
    pub traffic_access: Size,
    /// Region each traffic thread streams over, or auto: together the traffic threads cover
    /// 4x the last-level cache, each at least 256MiB, capped by available memory and
    /// --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub traffic_region: AutoSize,
    /// Region of the probe (the chain's working set), or auto: 4x the last-level cache, at
    /// least 1GiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub probe_region: AutoSize,
    /// Individually timed probe operations per point [default: 50000; 200000 with --full].
    #[arg(long)]
    pub samples: Option<Count>,
    /// CPUs: the first measures, the others generate traffic (default: all allowed).
    #[arg(long)]
    pub cpus: Option<Cpus>,
    /// Seed of the chain and random lines.
    #[arg(long, default_value_t = 0x5EED, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
    /// The thorough version: 200 000 samples and longer chain repetitions per point.
    #[arg(long)]
    pub full: bool,
}

/// What `loaded` measures, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    /// `--probe` as given (the records' `probe`) and what it means.
    probe: ProbeArg,
    delays: Vec<u64>,
    /// The traffic's read:write ratio (the records' `traffic_rw`).
    rw: Rw,
    traffic: TrafficMix,
    cpus: Vec<usize>,
    probe_bytes: u64,
    traffic_bytes: u64,
    /// Whether `probe_bytes` and `traffic_bytes` are `auto`.
    probe_source: Source,
    traffic_source: Source,
    access_bytes: usize,
    samples: usize,
    repetition: LatencyPlan,
    seed: u64,
}

impl Plan {
    fn traffic_threads(&self) -> usize {
        self.cpus.len() - 1
    }

    /// What the traffic writes with, or what it reads with (`read`, `read-ahead`) when it
    /// only reads.
    fn traffic_op(&self) -> &'static str {
        if self.traffic.writes == 0 {
            self.traffic.read.op().name()
        } else {
            self.traffic.write.op().name()
        }
    }
}

/// The least `--probe-region auto` gives (the old fixed default).
pub const PROBE_FLOOR: u64 = 1 << 30;
/// The least `--traffic-region auto` gives each traffic thread (the old fixed default).
pub const TRAFFIC_FLOOR: u64 = 256 << 20;

/// The probe's and each traffic thread's region. `auto`: the probe's chain covers 4x the
/// last-level cache, and so does all the traffic together (every traffic thread runs at
/// every loaded point); both live in one mapping, so each is sized beside the other (the
/// traffic's floor reserved first).
fn regions(
    ctx: &mut Env,
    a: &Params,
    threads: u64,
    specs: &[TargetSpec],
    opts: &MapOptions,
) -> Result<(Chosen, Chosen)> {
    let traffic_least = match a.traffic_region {
        AutoSize::Given(b) => b,
        AutoSize::Auto => TRAFFIC_FLOOR,
    };
    let want = Want {
        besides: traffic_least * threads,
        ..Want::one("--probe-region", PROBE_FLOOR)
    };
    let probe_region = ctx.size(a.probe_region, want, specs, opts)?;
    let want = Want {
        shares: threads,
        together: threads,
        besides: probe_region.bytes,
        ..Want::one("--traffic-region", TRAFFIC_FLOOR)
    };
    let traffic_region = ctx.size(a.traffic_region, want, specs, opts)?;
    Ok((probe_region, traffic_region))
}

/// Refuses regions too small for one traffic access of each kind, or for a chain.
fn check_regions(p: &Plan) -> Result<()> {
    let (access_bytes, traffic_bytes) = (p.access_bytes as u64, p.traffic_bytes);
    // Reads and writes each take half the region when the traffic does both (and copy
    // writes to the second half of what it reads).
    let halves = u64::from(p.rw.reads > 0 && p.rw.writes > 0) + 1;
    let copies = if p.traffic.write.op().copies() { 2 } else { 1 };
    let least = access_bytes * halves * copies;
    if traffic_bytes < least {
        return Err(usage(if least == access_bytes {
            format!(
                "--traffic-region {} is smaller than one {access_bytes}-byte traffic access",
                Bytes(traffic_bytes)
            )
        } else {
            format!(
                "--traffic-region {} is smaller than the {} this traffic needs for one {access_bytes}-byte access of each kind",
                Bytes(traffic_bytes),
                Bytes(least)
            )
        }));
    }
    if p.probe.probe == Probe::Chase && p.probe_bytes < 2 * 64 {
        return Err(usage(format!(
            "--probe-region {} cannot hold a chain of two 64-byte elements",
            Bytes(p.probe_bytes)
        )));
    }
    Ok(())
}

fn plan(ctx: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let delays: Vec<u64> =
        parse_axis(&a.delays, AxisKind::Count).map_err(|e| usage(e.to_string()))?;
    let (traffic, rw) = traffic(a, &ctx.features)?;
    let cpus: Vec<usize> = match &a.cpus {
        Some(c) => c.0.clone(),
        None => pmscope_sys::affinity::allowed_cpus()?,
    };
    if cpus.len() < 2 {
        return Err(usage(format!(
            "loaded latency needs a CPU for the probe and at least one for traffic; --cpus gives {}",
            cpus.len()
        )));
    }
    let (probe_region, traffic_region) = regions(ctx, a, (cpus.len() - 1) as u64, &specs, &opts)?;
    if let Probe::Persist(op, fence) = a.probe.probe {
        Sequence::new(op, fence, Width::widest(&ctx.features), &ctx.features)?;
    }
    // Every probe times single operations (the chase's loads too): rdtscp closes them.
    access::check_timing(&ctx.features)?;
    let plan = Plan {
        specs,
        opts,
        probe: a.probe.clone(),
        delays,
        rw,
        traffic,
        cpus,
        probe_bytes: probe_region.bytes,
        traffic_bytes: traffic_region.bytes,
        probe_source: probe_region.source,
        traffic_source: traffic_region.source,
        access_bytes: a.traffic_access.0 as usize,
        samples: a
            .samples
            .map_or(if a.full { 200_000 } else { 50_000 }, |s| s.0),
        repetition: LatencyPlan {
            reps: if a.full { 9 } else { 5 },
            rep_ns: if a.full { 100e6 } else { 40e6 },
        },
        seed: a.seed,
    };
    check_regions(&plan)?;
    Ok(plan)
}

/// `pmscope loaded`.
pub struct Loaded;

impl Experiment for Loaded {
    const NAME: &'static str = "loaded";
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        measure(env, out, plan)
    }

    fn render(records: &[Record]) -> String {
        render::render(records)
    }

    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
        if let Some(c) = &on.cpus {
            params.cpus = Some(c.clone());
        }
    }
}

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let persists = match p.probe.probe {
        Probe::Chase => None,
        Probe::Persist(op, _) => probe::persist_strategy_of(op),
    };
    let features = ctx.features;
    let human = out.human();
    let mut h = ctx.start(out, &p.cpus, Some(p.probe_bytes), true)?;
    let timer = *h.timer();
    let schedule = curve::delay_schedule(&p.delays, timer.info().hz);
    let progress = Progress::new((p.specs.len() * schedule.len()) as u64, "loaded", human);
    let map_bytes = p.probe_bytes + p.traffic_bytes * p.traffic_threads() as u64;
    h.per_target(&p.specs, map_bytes, &p.opts, persists, |run, m| {
        let points = curve::measure_curve(run, m, p, &schedule, &timer, &features, &progress)?;
        for point in &points {
            let active = point.delay_ns.is_some();
            let r = run
                .record("loaded")
                .param(p::PROBE, p.probe.name.as_str())
                .param(p::DELAY_NS, point.delay_ns)
                .param(
                    p::TRAFFIC_THREADS,
                    if active { p.traffic_threads() } else { 0 },
                )
                .param(p::TRAFFIC_RW, p.rw.to_string())
                .param(p::TRAFFIC_OP, p.traffic_op())
                .param(
                    p::TRAFFIC_PATTERN,
                    Pattern::from_random(p.traffic.random).name(),
                )
                .param(p::TRAFFIC_ACCESS_BYTES, p.access_bytes)
                .param(p::PROBE_REGION_BYTES, p.probe_bytes)
                .param(p::SIZE_SOURCE, p.probe_source.name())
                .param(p::TRAFFIC_REGION_BYTES, p.traffic_bytes)
                .param(p::TRAFFIC_SIZE_SOURCE, p.traffic_source.name())
                .param(p::SAMPLES, p.samples)
                .value(v::TRAFFIC_GB_S, point.traffic_gb_s)
                .value(v::MEAN_LATENCY_NS, point.mean_ns);
            let mut r = point.samples.annotate(r);
            r.metric = Some("latency_ns".into());
            run.emit(&r)?;
        }
        run.check_interrupt()
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}
