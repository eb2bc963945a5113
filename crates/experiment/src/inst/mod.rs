//! `pmscope inst`: the latency of single instruction sequences (LATTester, seed 004
//! Figure 8; seed 003 Table 5). Each access — op, per-line flush, fence — is timed on its
//! own between serialising timestamps, the timer overhead subtracted; loads find their
//! lines flushed beforehand so the memory is measured. With two or more targets, the table
//! has a column per target and the slowdown against the first.

mod render;

use crate::error::usage;
use crate::measure::{Sampled, Sampler};
use crate::output::Output;
use crate::params::{AutoSize, Count, Patterns, TargetArgs};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::LogHistogram;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{Pattern, p, v};
use pmscope_loops::Region;
use pmscope_loops::access::{self, FENCES, FenceKind, OPS, Op, Width};
use pmscope_loops::catalog;
use pmscope_loops::offsets::access_offsets;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::{BlockIndex, TargetRun};
use pmscope_runner::interrupt;
use pmscope_runner::repeat::Workers;
use pmscope_runner::timer::Timer;
use pmscope_sys::cpu::CpuFeatures;

/// An op of `--ops`.
fn op(s: &str) -> Result<Op, String> {
    Op::parse(s.trim()).ok_or_else(|| format!("'{s}' is not an op: use {}", catalog::op_names()))
}

/// A fence of `--fences`.
fn fence(s: &str) -> Result<FenceKind, String> {
    FenceKind::parse(s.trim())
        .ok_or_else(|| format!("'{s}' is not a fence: use none, sfence or mfence"))
}

/// `pmscope inst`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Targets and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// The ops (see [`crate::params::inst_ops_help`]); all when not given.
    #[arg(long, value_delimiter = ',', value_parser = op, help = crate::params::inst_ops_help())]
    pub ops: Option<Vec<Op>>,
    /// Fences after each access (comma list): none, sfence, mfence. Default: all.
    #[arg(long, value_delimiter = ',', value_parser = fence)]
    pub fences: Option<Vec<FenceKind>>,
    /// Access sizes in bytes (8 or multiples of 64). Default 8,64,128,256,512,1024,4096.
    #[arg(long, value_name = "AXIS")]
    pub sizes: Option<String>,
    /// Address pattern: seq, rand or both.
    #[arg(long, value_enum, default_value_t = Patterns::Both)]
    pub pattern: Patterns,
    /// Region the addresses fall in, or auto: 4x the last-level cache, at least 1GiB,
    /// capped by available memory and --max-mem.
    #[arg(long, default_value = "auto", value_name = "SIZE")]
    pub region: AutoSize,
    /// Accesses timed per cell [default: 100000; 1000000 with --full].
    #[arg(long)]
    pub count: Option<Count>,
    /// Do not flush lines before timed loads (measure cache hits instead of memory).
    #[arg(long)]
    pub no_flush: bool,
    /// After the table, print every cell's per-access latency histogram (log buckets, seed
    /// 003 Figures 6-7); the records always carry them.
    #[arg(long)]
    pub histograms: bool,
    /// Instruction width in bytes for accesses of 64 bytes and more: 16 (SSE2), 32 (AVX2)
    /// or 64 (AVX-512F) [default: the widest the CPU has].
    #[arg(long, value_parser = pmscope_core::whole::parse::<usize>)]
    pub width: Option<usize>,
    /// CPU to pin the measuring thread to.
    #[arg(long, value_name = "CPU", value_parser = pmscope_core::whole::parse::<usize>)]
    pub cpu: Option<usize>,
    /// Seed of the random addresses.
    #[arg(long, default_value_t = 0x5EED, value_parser = pmscope_core::whole::parse::<u64>)]
    pub seed: u64,
    /// The thorough version: 1 000 000 accesses per cell.
    #[arg(long)]
    pub full: bool,
}

/// A cell of the table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Cell {
    op: Op,
    fence: FenceKind,
    size: usize,
    pattern: Pattern,
}

impl Cell {
    /// The instruction width of its accesses: 8-byte accesses are single 8-byte moves.
    fn width(self, wide: Width) -> Width {
        if self.size == 8 { Width::W8 } else { wide }
    }

    /// Whether its lines are flushed before each timed access: loads only.
    fn flushed(self, no_flush: bool) -> bool {
        !self.op.writes() && !no_flush
    }
}

/// A cell's outcome: latencies in ns, or why it could not run.
pub enum Outcome {
    /// The latencies of its accesses: the point and their histogram.
    Measured(Box<(Sampled, LogHistogram)>),
    /// Why not, as one sentence (the record's `unsupported`).
    Unsupported(String),
}

/// What `inst` measures, validated before anything is mapped.
pub struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    cells: Vec<Cell>,
    region_bytes: u64,
    /// Whether `region_bytes` is `auto`.
    size_source: Source,
    count: usize,
    width: Width,
    cpu: usize,
    seed: u64,
    no_flush: bool,
}

/// The least `--region auto` gives (the old fixed default).
pub const REGION_FLOOR: u64 = 1 << 30;

/// The access sizes of `--sizes`: 8, or whole lines.
fn sizes(axis: Option<&str>) -> Result<Vec<usize>> {
    let default_sizes = "8,64,128,256,512,1024,4096";
    let sizes: Vec<usize> = parse_axis(axis.unwrap_or(default_sizes), AxisKind::Size)
        .map_err(|e| usage(e.to_string()))?
        .into_iter()
        .map(|s| s as usize)
        .collect();
    if let Some(bad) = sizes
        .iter()
        .find(|&&s| !(s == 8 || (s >= 64 && s % 64 == 0)))
    {
        return Err(usage(format!(
            "access size {bad} is not 8 or a multiple of 64 bytes"
        )));
    }
    Ok(sizes)
}

/// The instruction width: `--width` checked against this CPU, or the widest it has.
fn width(given: Option<usize>, f: &CpuFeatures) -> Result<Width> {
    let Some(w) = given else {
        return Ok(Width::widest(f));
    };
    let width =
        Width::from_bytes(w).ok_or_else(|| usage(format!("--width {w}: use 16, 32 or 64")))?;
    Op::Store
        .check(width, f)
        .map_err(|e| usage(format!("--width {w}: {}", e.reason)))?;
    Ok(width)
}

/// Every cell, in the table's order: op, fence, size, pattern.
fn cells(ops: &[Op], fences: &[FenceKind], sizes: &[usize], patterns: &[Pattern]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &op in ops {
        for &fence in fences {
            for &size in sizes {
                for &pattern in patterns {
                    cells.push(Cell {
                        op,
                        fence,
                        size,
                        pattern,
                    });
                }
            }
        }
    }
    cells
}

fn plan(ctx: &mut Env, a: &Params) -> Result<Plan> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let ops = a.ops.clone().unwrap_or_else(|| OPS.to_vec());
    let fences = a.fences.clone().unwrap_or_else(|| FENCES.to_vec());
    let sizes = sizes(a.sizes.as_deref())?;
    // Loads are flushed first, but stores find their lines wherever they are: a region the
    // last-level cache holds would time cache hits.
    let region = ctx.size(a.region, Want::one("--region", REGION_FLOOR), &specs, &opts)?;
    let region_bytes = region.bytes;
    let max_size = *sizes.iter().max().unwrap_or(&64) as u64;
    if region_bytes < max_size * 2 {
        return Err(usage(format!(
            "--region {} is too small for {}-byte accesses",
            Bytes(region_bytes),
            max_size
        )));
    }
    // --full changes only the defaults: an explicit option always wins.
    let count = a
        .count
        .map_or(if a.full { 1_000_000 } else { 100_000 }, |c| c.0);
    let f = &ctx.features;
    let width = width(a.width, f)?;
    // Ops named with --ops must run here; the default list marks what this CPU lacks as
    // unsupported cells. Every cell is timed alone, closed by rdtscp (the machine's limit).
    if a.ops.is_some() {
        for op in &ops {
            if let Some(missing) = op.features().into_iter().find(|&x| !f.has(x)) {
                return Err(usage(format!(
                    "--ops {op}: this CPU lacks {missing} (see `pmscope list ops`)"
                )));
            }
        }
    }
    access::check_timing(f)?;
    Ok(Plan {
        specs,
        opts,
        cells: cells(&ops, &fences, &sizes, &a.pattern.patterns()),
        region_bytes,
        size_source: region.source,
        count,
        width,
        cpu: a.cpu.unwrap_or(0),
        seed: a.seed,
        no_flush: a.no_flush,
    })
}

/// `pmscope inst`.
pub struct Inst;

impl Experiment for Inst {
    const NAME: &'static str = "inst";
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

    fn show(params: &Params, records: &[Record]) -> String {
        let mut out = render::render(records);
        if params.histograms {
            out += &render::histograms(records);
        }
        out
    }

    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
        if let Some(c) = &on.cpus {
            params.cpu = c.0.first().copied();
        }
    }
}

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let features = ctx.features;
    let progress = Progress::new((p.specs.len() * p.cells.len()) as u64, "inst", out.human());
    let mut h = ctx.start(out, &[p.cpu], Some(p.region_bytes), true)?;
    let timer = *h.timer();
    h.per_target(&p.specs, p.region_bytes, &p.opts, None, |run, m| {
        let executor = run.executor();
        let sampler = Sampler::new(run, &[p.cpu], Workers::Busy(1), &timer);
        let block = run.block();
        let (results, overhead_ns) = run.on_cpu(p.cpu, m.bytes_mut(), |bytes| {
            let mut region = Region::from_slice(bytes);
            let overhead = executor.run(|| access::timing_overhead(100_001), || 0);
            let results = measure_cells(
                &mut region,
                p,
                (&timer, overhead, &sampler),
                (executor, block),
                &features,
                &progress,
            );
            (results, timer.tsc_ticks_to_ns(overhead))
        })?;
        emit(run, p, results, overhead_ns)?;
        run.check_interrupt()
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// Every cell on one target's region, in the plan's order (until an interrupt): the
/// block's share of each cell's accesses, at the block's own random addresses. (Timing
/// each cell's share in slices spread over the block, the cells taken in turn, made the
/// blocks of a cell agree less, not more: 8-14 % between blocks against 4-5 % in one
/// burst, on this project's Intel guest.)
fn measure_cells(
    region: &mut Region<'_>,
    p: &Plan,
    (timer, overhead, sampler): (&Timer, u64, &Sampler),
    (executor, block): (Executor, BlockIndex),
    features: &CpuFeatures,
    progress: &Progress,
) -> Vec<(Cell, Outcome)> {
    let count = block.share(p.count);
    let mut results = Vec::new();
    let mut ticks = vec![0u64; count];
    for &c in &p.cells {
        if interrupt::check().is_err() {
            break; // the cells so far are recorded, then the run stops
        }
        let outcome = match catalog::of(c.op, c.fence).sequence(c.width(p.width), features) {
            Err(e) => Outcome::Unsupported(e.to_string()),
            Ok(seq) => {
                // One access per timing: the values come in the timer's steps.
                let (point, ns) = executor.run(
                    || {
                        let random = c.pattern == Pattern::Rand;
                        let seed = block.seed(p.seed) ^ c.size as u64;
                        let offs = access_offsets(count, c.size, region.len(), random, seed);
                        let flush = c.flushed(p.no_flush);
                        // Warm-up: the first accesses of a cell pay for code and TLB.
                        let warm = count.min(1000);
                        seq.time_each(region, c.size, &offs[..warm], flush, &mut ticks[..warm]);
                        sampler.take(|| {
                            seq.time_each(region, c.size, &offs, flush, &mut ticks);
                            ticks.iter().map(|&t| timer.net_ns(t, overhead)).collect()
                        })
                    },
                    || {
                        let ns = Executor::synthetic(count, 50.0 + c.size as f64);
                        (sampler.synthetic(&ns), ns)
                    },
                );
                Outcome::Measured(Box::new((point, LogHistogram::of(&ns, 4))))
            }
        };
        results.push((c, outcome));
        progress.inc();
    }
    results
}

/// A record per cell measured, in the plan's order (which is the table's).
fn emit(
    run: &mut TargetRun<'_, '_>,
    p: &Plan,
    results: Vec<(Cell, Outcome)>,
    overhead_ns: f64,
) -> Result<()> {
    for (c, outcome) in results {
        let mut r: Record = run
            .record("inst")
            .param(p::OP, c.op.name())
            .param(p::FENCE, c.fence.name())
            .param(p::ACCESS_BYTES, c.size)
            .param(p::PATTERN, c.pattern.name())
            .param(p::WIDTH_BYTES, c.width(p.width).bytes())
            .param(p::FLUSHED_BEFORE, c.flushed(p.no_flush))
            .param(p::REGION_BYTES, p.region_bytes)
            .param(p::SIZE_SOURCE, p.size_source.name())
            .value(v::TIMER_OVERHEAD_NS, overhead_ns);
        match outcome {
            Outcome::Measured(measured) => {
                let (point, hist) = *measured;
                r = point.annotate(r);
                r.metric = Some("latency_ns".into());
                r.histogram = Some(hist);
            }
            Outcome::Unsupported(why) => {
                r = r.param(p::UNSUPPORTED, why);
            }
        }
        run.emit(&r)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_measure_every_cell_of_both_patterns() {
        let d = crate::defaults::<Params>();
        assert_eq!(
            (d.pattern, d.ops.as_ref(), d.fences.as_ref()),
            (Patterns::Both, None, None)
        );
        let c = cells(&OPS, &FENCES, &[8, 64], &d.pattern.patterns());
        assert_eq!(c.len(), OPS.len() * FENCES.len() * 2 * 2);
        assert_eq!((c[0].pattern, c[1].pattern), (Pattern::Seq, Pattern::Rand));
        assert_eq!(op("store+clwb"), Ok(Op::StoreClwb));
        assert!(op("foo").is_err() && fence("xfence").is_err());
    }
}
