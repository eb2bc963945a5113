//! `pmscope verify`: map each target, pre-fault it, and report what the kernel gave. Its
//! per-target step, [`verify_targets`], is also the first half of `quick`.

pub mod render;

use crate::output::Output;
use crate::params::{Size, TargetArgs};
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};
use pmscope_mapping::{MapOptions, Mapping, TargetSpec};
use pmscope_runner::harness::{Harness, TargetRun};

/// `pmscope verify`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Bytes to map per target.
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub size: Size,
}

/// What `verify` maps, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    size: u64,
    /// The CPUs the environment is judged on (nothing is pinned: the calling thread maps
    /// and pre-faults).
    cpus: Vec<usize>,
}

fn plan(env: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, opts) = env.targets(&a.targets, &["dram:4k"])?;
    Ok(Plan {
        specs,
        opts,
        size: a.size.0,
        cpus: pmscope_sys::affinity::allowed_cpus()?,
    })
}

fn measure(env: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let mut h = env.start_once(out, &p.cpus, None)?;
    verify_targets(&mut h, &p.specs, p.size, &p.opts, &mut |_, _| Ok(()))?;
    h.finish()?;
    Ok(())
}

/// What a caller does with each verified mapping before it is unmapped.
pub type WithMapping<'a> = dyn FnMut(&mut TargetRun<'_, '_>, &mut Mapping) -> Result<()> + 'a;

/// Maps, verifies and unmaps each target in turn; emits one `verify` record per target and
/// hands each mapping to `then` (quick measures it there).
pub fn verify_targets(
    h: &mut Harness<'_>,
    specs: &[TargetSpec],
    size: u64,
    opts: &MapOptions,
    then: &mut WithMapping<'_>,
) -> Result<()> {
    h.per_target(specs, size, opts, None, |run, m| {
        let a = m.achieved();
        let r = run
            .record("verify")
            .param(p::SIZE_BYTES, size)
            .value(v::PREFAULT_MS, a.prefault_ns as f64 / 1e6)
            .value(v::MINOR_FAULTS, a.faults.minor_faults as f64)
            .value(v::BYTES_PER_FAULT, a.faults.bytes_per_fault);
        run.emit(&r)?;
        then(run, m)
    })
    .map(|_| ())
}

/// `pmscope verify`.
pub struct Verify;

impl Experiment for Verify {
    const NAME: &'static str = "verify";
    const IN_BLOCKS: bool = false;
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

    /// The suite's targets; its CPUs mean nothing here, as verify pins no thread (the
    /// calling thread maps and pre-faults each target).
    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
    }
}
