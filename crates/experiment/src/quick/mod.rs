//! `pmscope quick`: the main job on the embedded default targets. Maps dram:4k, dram:thp
//! and shm:4k, verifies each, and gives a first figure per target: the idle latency of a
//! random dependent-load chain over the whole mapping and the sequential read bandwidth of
//! all CPUs — side by side, with the configuration each figure was measured on.

mod render;

use crate::measure::{chase_latency, read_bandwidth, with_repetitions};
use crate::output::Output;
use crate::params::{AutoSize, TargetArgs};
use crate::verify::verify_targets;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::record::Record;
use pmscope_core::vocab::{Pattern, p};
use pmscope_loops::Region;
use pmscope_loops::chain::ChainSpec;
use pmscope_loops::stream::{StreamOp, Streamer};
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::repeat::{Repeated, Workers};
use std::time::Duration;

/// The embedded default targets.
pub const DEFAULT_TARGETS: [&str; 3] = ["dram:4k", "dram:thp", "shm:4k"];

/// The least `--size auto` gives (the old fixed default).
pub const SIZE_FLOOR: u64 = 256 << 20;

/// `pmscope quick`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k, dram:thp, shm:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Bytes to map per target (the working set of both figures), or auto: 4x the
    /// last-level cache, at least 256MiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub size: AutoSize,
}

/// What `quick` measures, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    /// Bytes mapped per target: the chain's working set and the streams' region.
    size: u64,
    size_source: Source,
    /// Why an `auto` size is what it is.
    size_why: String,
    /// Every allowed CPU: the first runs the chain, all of them stream.
    cpus: Vec<usize>,
    read: Streamer,
}

fn plan(env: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, opts) = env.targets(&a.targets, &DEFAULT_TARGETS)?;
    let chosen = env.size(a.size, Want::one("--size", SIZE_FLOOR), &specs, &opts)?;
    let width = Streamer::widest(&env.features);
    Ok(Plan {
        specs,
        opts,
        size: chosen.bytes,
        size_source: chosen.source,
        size_why: chosen.why,
        cpus: pmscope_sys::affinity::allowed_cpus()?,
        read: Streamer::new(StreamOp::Read, width, 64 << 10, &env.features)?,
    })
}

fn measure(env: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let (size, cpus) = (p.size, &p.cpus);
    let mut h = env.start(out, cpus, Some(size), false)?;
    let timer = *h.timer();
    // The size's parameters, on both figures of every target.
    let sized = |r: Record| {
        let r = r
            .param(p::WORKING_SET_BYTES, size)
            .param(p::SIZE_SOURCE, p.size_source.name());
        match p.size_source {
            Source::Auto => r.param(p::SIZE_WHY, p.size_why.as_str()),
            Source::Explicit => r,
        }
    };
    verify_targets(&mut h, &p.specs, size, &p.opts, &mut |run, m| {
        let executor = run.executor();
        let mut region = Region::from_slice(m.bytes_mut());
        // Latency: a random chain over the whole mapping, on the first CPU.
        let policy = run.repeat_policy(3);
        let mut watch = run.watch(&cpus[..1], Workers::Busy(1));
        let block = run.block();
        let spec = ChainSpec {
            seed: block.seed(ChainSpec::default().seed),
            ..ChainSpec::default()
        };
        let latency = run.on_cpu(cpus[0], &mut region, |r| {
            executor.run(
                || -> Result<_> {
                    let mut chaser = crate::measure::chaser(r, size as usize, &spec)?;
                    chase_latency(
                        &mut chaser,
                        &timer,
                        40e6 * block.rep_scale(3),
                        &policy,
                        &mut watch,
                    )
                },
                || {
                    Ok(Repeated::fixed(
                        Executor::synthetic(3, 100.0),
                        policy.target,
                    ))
                },
            )
        })??;
        let r = sized(run.record("quick").param(p::PATTERN, Pattern::Rand.name()));
        let mut r = with_repetitions(r, &latency);
        r.metric = Some("latency_ns".into());
        run.emit(&r)?;
        // Bandwidth: every CPU reads its own part sequentially.
        let gbs = read_bandwidth(
            run,
            cpus,
            &mut region,
            p.read,
            Duration::from_millis(150),
            3,
        )?;
        let r = sized(
            run.record("quick")
                .param(p::OP, StreamOp::Read.name())
                .param(p::THREADS, cpus.len()),
        );
        let mut r = with_repetitions(r, &gbs);
        r.metric = Some("bandwidth_gb_s".into());
        run.emit(&r)
    })?;
    h.finish()?;
    Ok(())
}

/// `pmscope quick`.
pub struct Quick;

impl Experiment for Quick {
    const NAME: &'static str = "quick";
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

    /// The suite's targets; quick's bandwidth figure is that of every allowed CPU and its
    /// latency that of the first, so a suite's CPUs are not imposed on it.
    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
    }
}
