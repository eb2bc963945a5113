//! `pmscope numa`: idle latency and read bandwidth from every CPU node to every memory node,
//! memory-only (CXL, kmem) nodes included — Intel MLC's matrix (seed 003 Table 4), with the
//! verified placement of every cell: each memory node's target is mapped with `node=N` and
//! `move_pages` says where its pages really are, in the records and under the table.

mod render;

use crate::error::usage;
use crate::measure::{chase_latency, read_bandwidth, with_repetitions};
use crate::output::Output;
use crate::params::{AutoSize, Count, Seconds, TargetArgs};
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::record::Record;
use pmscope_core::vocab::{Pattern, p, v};
use pmscope_loops::Region;
use pmscope_loops::chain::ChainSpec;
use pmscope_loops::stream::{StreamOp, Streamer};
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::TargetRun;
use pmscope_runner::repeat::{Repeated, Workers};
use pmscope_runner::timer::Timer;
use pmscope_sys::numa::Hmat;
use std::time::Duration;

/// Bytes per bandwidth access (a multiple of every vector width).
const ACCESS: usize = 64 << 10;

/// The least `--size auto` gives (the old fixed default).
pub const SIZE_FLOOR: u64 = 256 << 20;

/// `pmscope numa`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// The memory kind mapped on every node, without node= (dram:4k, dram:thp, dram:2m...).
    #[arg(long, default_value = "dram:4k", value_name = "KIND")]
    pub memory: TargetSpec,
    /// Bytes mapped per memory node (the latency chain covers all of it), or auto: 4x the
    /// last-level cache, at least 256MiB, capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub size: AutoSize,
    /// Repetitions per cell, at least (one more is run first and dropped; more until --precision is met).
    #[arg(long)]
    pub reps: Option<Count>,
    /// Seconds each bandwidth repetition streams [default: 0.15].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// Mapping options (--max-mem, --keep...); targets are made from --memory, not -t.
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// A CPU node and the CPUs of it pmscope may use.
struct CpuNode {
    id: u32,
    cpus: Vec<usize>,
}

/// A memory node, its target (`--memory` bound to it) and what its firmware declares.
struct MemoryNode {
    id: u32,
    spec: TargetSpec,
    /// ACPI HMAT's figures from its nearest initiators: under a hypervisor or an emulator
    /// every node may be the same host memory, and only the declared figures show the tiers.
    declared: Option<Hmat>,
}

/// What `numa` measures, validated before anything is mapped.
pub struct Plan {
    cpu_nodes: Vec<CpuNode>,
    memory_nodes: Vec<MemoryNode>,
    opts: MapOptions,
    size: u64,
    size_source: Source,
    read: Streamer,
    reps: usize,
    duration: Duration,
}

fn plan(env: &mut Env, a: &Params) -> Result<Plan> {
    let nodes = pmscope_sys::numa::nodes(&env.root);
    let allowed = pmscope_sys::affinity::allowed_cpus()?;
    let cpu_nodes: Vec<CpuNode> = nodes
        .iter()
        .map(|n| CpuNode {
            id: n.id,
            cpus: n
                .cpus
                .iter()
                .copied()
                .filter(|c| allowed.contains(c))
                .collect(),
        })
        .filter(|n| !n.cpus.is_empty())
        .collect();
    let memory_nodes: Vec<MemoryNode> = nodes
        .iter()
        .filter(|n| n.mem_total_bytes > 0)
        .map(|n| MemoryNode {
            id: n.id,
            spec: {
                let mut spec = a.memory.clone();
                spec.node = Some(n.id);
                spec
            },
            declared: n.hmat,
        })
        .collect();
    if cpu_nodes.is_empty() || memory_nodes.is_empty() {
        return Err(anyhow::anyhow!(
            "no NUMA node with usable CPUs or memory is listed in /sys/devices/system/node"
        ));
    }
    if a.memory.node.is_some() {
        return Err(usage(format!(
            "--memory {}: give the kind without node=, every memory node is measured",
            a.memory
        )));
    }
    if let Some(t) = a.targets.targets.first() {
        return Err(usage(format!(
            "-t {t}: numa maps --memory on every node itself; give the kind with --memory"
        )));
    }
    let (_, opts) = env.targets(&a.targets, &[])?;
    let specs: Vec<TargetSpec> = memory_nodes.iter().map(|m| m.spec.clone()).collect();
    let chosen = env.size(a.size, Want::one("--size", SIZE_FLOOR), &specs, &opts)?;
    let width = Streamer::widest(&env.features);
    Ok(Plan {
        cpu_nodes,
        memory_nodes,
        opts,
        size: chosen.bytes,
        size_source: chosen.source,
        read: Streamer::new(StreamOp::Read, width, ACCESS, &env.features)?,
        reps: a.reps.map_or(3, |r| r.0),
        duration: Duration::from_secs_f64(a.duration.map_or(0.15, |d| d.0)),
    })
}

fn measure(env: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let all_cpus: Vec<usize> = p.cpu_nodes.iter().flat_map(|n| n.cpus.clone()).collect();
    let specs: Vec<TargetSpec> = p.memory_nodes.iter().map(|m| m.spec.clone()).collect();
    let mut h = env.start(out, &all_cpus, Some(p.size), false)?;
    let timer = *h.timer();
    h.per_target(&specs, p.size, &p.opts, None, |run, m| {
        let memory = &p.memory_nodes[specs
            .iter()
            .position(|s| s.to_string() == run.target().spec)
            .expect("a target of ours")];
        let mut region = Region::from_slice(m.bytes_mut());
        for c in &p.cpu_nodes {
            run.check_interrupt()?;
            measure_cell(run, p, &timer, c, memory, &mut region)?;
        }
        Ok(())
    })?;
    h.finish()?;
    Ok(())
}

/// One cell of both matrices: the latency from CPU node `c` to `memory`'s region (on the
/// node's first CPU), then the read bandwidth of all of `c`'s CPUs.
fn measure_cell(
    run: &mut TargetRun<'_, '_>,
    p: &Plan,
    timer: &Timer,
    c: &CpuNode,
    memory: &MemoryNode,
    region: &mut Region<'_>,
) -> Result<()> {
    let executor = run.executor();
    let reps = p.reps;
    let policy = run.repeat_policy(reps);
    let mut watch = run.watch(&c.cpus[..1], Workers::Busy(1));
    let block = run.block();
    let spec = ChainSpec {
        seed: block.seed(ChainSpec::default().seed),
        ..ChainSpec::default()
    };
    let ns = run.on_cpu(c.cpus[0], &mut *region, |r| {
        executor.run(
            || {
                let len = r.len();
                let mut chaser = crate::measure::chaser(r, len, &spec)?;
                let rep_ns = 40e6 * block.rep_scale(reps);
                chase_latency(&mut chaser, timer, rep_ns, &policy, &mut watch)
            },
            || {
                let ns = Executor::synthetic(reps, 100.0 + 50.0 * memory.id as f64);
                Ok(Repeated::fixed(ns, policy.target))
            },
        )
    })??;
    let cell = |r: Record| {
        r.param(p::CPU_NODE, c.id)
            .param(p::MEMORY_NODE, memory.id)
            .param(p::WORKING_SET_BYTES, p.size)
            .param(p::SIZE_SOURCE, p.size_source.name())
    };
    let mut r = cell(run.record("numa-latency")).param(p::PATTERN, Pattern::Rand.name());
    if let Some(ns) = memory.declared.and_then(|h| h.read_latency_ns) {
        r = r.value(v::HMAT_READ_LATENCY_NS, ns as f64);
    }
    let mut r = with_repetitions(r, &ns);
    r.metric = Some("latency_ns".into());
    run.emit(&r)?;
    let gbs = read_bandwidth(run, &c.cpus, region, p.read, p.duration, reps)?;
    let mut r = cell(run.record("numa-bandwidth"))
        .param(p::OP, StreamOp::Read.name())
        .param(p::THREADS, c.cpus.len())
        .param(p::ACCESS_BYTES, ACCESS);
    if let Some(mb) = memory.declared.and_then(|h| h.read_bandwidth_mb_s) {
        r = r.value(v::HMAT_READ_BANDWIDTH_MB_S, mb as f64);
    }
    let mut r = with_repetitions(r, &gbs);
    r.metric = Some("bandwidth_gb_s".into());
    run.emit(&r)
}

/// `pmscope numa`.
pub struct Numa;

impl Experiment for Numa {
    const NAME: &'static str = "numa";
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

    /// The suite's mapping options, not its targets: numa maps `--memory` on every memory
    /// node itself (and refuses `-t`). Nor its CPUs: every CPU node is measured from its own
    /// CPUs.
    fn place(params: &mut Params, on: &Placement) {
        params.targets = TargetArgs {
            targets: Vec::new(),
            ..on.targets.clone()
        };
    }
}
