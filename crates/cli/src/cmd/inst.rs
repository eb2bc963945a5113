//! `pmscope inst`: the latency of single instruction sequences (LATTester, seed 004
//! Figure 8; seed 003 Table 5). Each access — op, per-line flush, fence — is timed on its
//! own between serialising timestamps, the timer overhead subtracted; loads find their
//! lines flushed beforehand so the memory is measured. With two or more targets, the table
//! has a column per target and the slowdown against the first.

use crate::args::InstArgs;
use crate::error::usage;
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::{LogHistogram, Summary};
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::env::parse_patterns;
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::fields::{by_target, short_reason};
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::access::{self, FENCES, FenceKind, OPS, Op, Width};
use pmscope_loops::catalog;
use pmscope_loops::offsets::access_offsets as offsets;
use pmscope_mapping::sizing::{Source, Want};
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt;
use std::collections::BTreeMap;

/// A cell of the table.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Cell {
    op_index: usize,
    fence_index: usize,
    size: usize,
    random: bool,
}

/// A cell's outcome: latencies in ns, or why it could not run.
pub enum Outcome {
    Measured(Summary, LogHistogram),
    /// Why not, as one sentence (the record's `unsupported`).
    Unsupported(String),
}

/// What `inst` measures, validated before anything is mapped.
struct Plan {
    specs: Vec<TargetSpec>,
    opts: MapOptions,
    ops: Vec<Op>,
    fences: Vec<FenceKind>,
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

fn plan(ctx: &mut Context, a: &InstArgs) -> Result<Plan> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let ops: Vec<Op> = match &a.ops {
        None => OPS.to_vec(),
        Some(list) => list
            .split(',')
            .map(|s| {
                Op::parse(s.trim()).ok_or_else(|| {
                    usage(format!("'{s}' is not an op: use {}", catalog::op_names()))
                })
            })
            .collect::<Result<_>>()?,
    };
    let fences: Vec<FenceKind> = match &a.fences {
        None => FENCES.to_vec(),
        Some(list) => list
            .split(',')
            .map(|s| {
                FenceKind::parse(s.trim()).ok_or_else(|| {
                    usage(format!("'{s}' is not a fence: use none, sfence or mfence"))
                })
            })
            .collect::<Result<_>>()?,
    };
    let default_sizes = "8,64,128,256,512,1024,4096";
    let sizes: Vec<usize> = parse_axis(a.sizes.as_deref().unwrap_or(default_sizes), AxisKind::Size)
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
    let patterns = parse_patterns(&a.pattern)?;
    // Loads are flushed first, but stores find their lines wherever they are: a region the
    // last-level cache holds would time cache hits.
    let region = ctx.size(a.region, Want::one("--region", REGION_FLOOR), &specs, &opts);
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
    let width = match a.width {
        Some(w) => {
            let width = Width::from_bytes(w)
                .ok_or_else(|| usage(format!("--width {w}: use 16, 32 or 64")))?;
            Op::Store
                .check(width, f)
                .map_err(|e| usage(format!("--width {w}: {}", e.reason)))?;
            width
        }
        None => Width::widest(f),
    };
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
    pmscope_loops::access::check_timing(f)?;
    let mut cells: Vec<Cell> = Vec::new();
    for (oi, _) in ops.iter().enumerate() {
        for (fi, _) in fences.iter().enumerate() {
            for &size in &sizes {
                for &random in &patterns {
                    cells.push(Cell {
                        op_index: oi,
                        fence_index: fi,
                        size,
                        random,
                    });
                }
            }
        }
    }
    Ok(Plan {
        specs,
        opts,
        ops,
        fences,
        cells,
        region_bytes,
        size_source: region.source,
        count,
        width,
        cpu: a.cpu.unwrap_or(0),
        seed: a.seed,
        no_flush: a.no_flush,
    })
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &InstArgs) -> Result<()> {
    let plan = plan(ctx, a)?;
    measure(ctx, sink, &plan)?;
    if sink.human() {
        print!("{}", render(sink.records()));
        if a.histograms {
            print_histograms(sink.records());
        }
    }
    Ok(())
}

/// Every measured cell's per-access distribution (seed 003 Figures 6-7), from the records.
fn print_histograms(records: &[Record]) {
    for r in records.iter().filter(|r| r.experiment == "inst") {
        let (Some(s), Some(h)) = (&r.summary, &r.histogram) else {
            continue;
        };
        println!(
            "\n{} {} fence={} {} B {}: p50 {:.1} ns, p99 {:.1}, max {:.1} ({} accesses)",
            r.target.as_ref().map(|t| t.spec.as_str()).unwrap_or("?"),
            r.params.get("op").and_then(|v| v.as_str()).unwrap_or("?"),
            r.params
                .get("fence")
                .and_then(|v| v.as_str())
                .unwrap_or("?"),
            r.count(p::ACCESS_BYTES).unwrap_or_default(),
            r.params
                .get("pattern")
                .and_then(|v| v.as_str())
                .unwrap_or("?"),
            s.p50,
            s.p99,
            s.max,
            s.n
        );
        print!("{}", pmscope_experiment::render::histogram::text(h));
    }
}

fn measure(ctx: &mut Context, sink: &mut Sink, p: &Plan) -> Result<()> {
    let features = ctx.features;
    let progress = Progress::new((p.specs.len() * p.cells.len()) as u64, "inst", sink.human());
    let mut h = ctx.start(sink, &[p.cpu], Some(p.region_bytes), true)?;
    let timer = *h.timer();
    let (ops, fences, count) = (&p.ops, &p.fences, p.count);
    h.per_target(&p.specs, p.region_bytes, &p.opts, None, |run, m| {
        let executor = run.executor();
        let (mut results, overhead_ns) = run.on_cpu(p.cpu, m.bytes_mut(), |bytes| {
            let mut region = Region::from_slice(bytes);
            let overhead = executor.run(|| access::timing_overhead(100_001), || 0);
            let mut results = BTreeMap::new();
            let mut ticks = vec![0u64; count];
            for &c in &p.cells {
                if interrupt::check().is_err() {
                    break; // the cells so far are recorded, then the run stops
                }
                let op = ops[c.op_index];
                let fence = fences[c.fence_index];
                let w = if c.size == 8 { Width::W8 } else { p.width };
                let outcome = match catalog::of(op, fence).sequence(w, &features) {
                    Err(e) => Outcome::Unsupported(e.to_string()),
                    Ok(seq) => {
                        let ns = executor.run(
                            || {
                                let offs = offsets(
                                    count,
                                    c.size,
                                    region.len(),
                                    c.random,
                                    p.seed ^ c.size as u64,
                                );
                                let flush = !op.writes() && !p.no_flush;
                                // Warm-up: the first accesses of a cell pay for code and TLB.
                                let warm = count.min(1000);
                                seq.time_each(
                                    &mut region,
                                    c.size,
                                    &offs[..warm],
                                    flush,
                                    &mut ticks[..warm],
                                );
                                seq.time_each(&mut region, c.size, &offs, flush, &mut ticks);
                                ticks
                                    .iter()
                                    .map(|&t| timer.net_ns(t, overhead))
                                    .collect::<Vec<f64>>()
                            },
                            || Executor::synthetic(count, 50.0 + c.size as f64),
                        );
                        Outcome::Measured(
                            Summary::of(&ns).expect("finite"),
                            LogHistogram::of(&ns, 4),
                        )
                    }
                };
                results.insert(c, outcome);
                progress.inc();
            }
            (results, timer.tsc_ticks_to_ns(overhead))
        })?;
        // In the plan's order, which is the table's.
        for c in &p.cells {
            let Some(outcome) = results.remove(c) else {
                continue;
            };
            let mut r: Record = run
                .record("inst")
                .param(p::OP, ops[c.op_index].name())
                .param(p::FENCE, fences[c.fence_index].name())
                .param(p::ACCESS_BYTES, c.size)
                .param(p::PATTERN, Pattern::from_random(c.random).name())
                .param(
                    p::WIDTH_BYTES,
                    if c.size == 8 { 8 } else { p.width.bytes() },
                )
                .param(p::FLUSHED_BEFORE, !ops[c.op_index].writes() && !p.no_flush)
                .param(p::REGION_BYTES, p.region_bytes)
                .param(p::SIZE_SOURCE, p.size_source.name())
                .value(v::TIMER_OVERHEAD_NS, overhead_ns);
            match outcome {
                Outcome::Measured(s, hist) => {
                    r.metric = Some("latency_ns".into());
                    r.summary = Some(s);
                    r.histogram = Some(hist);
                }
                Outcome::Unsupported(why) => {
                    r = r.param(p::UNSUPPORTED, why);
                }
            }
            run.emit(&r)?;
        }
        run.check_interrupt()
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

/// The seed 003 Table 5 layout, from the `inst` records alone: a row per op x fence x size
/// x pattern (in the order measured), a column pair per target, and the slowdown against
/// the first target.
fn render<'r>(records: &'r [Record]) -> String {
    let columns = by_target(records, "inst");
    let mut rows: Vec<(&str, &str, u64, &str)> = Vec::new();
    for (_, rs) in &columns {
        for r in rs {
            let k = key(r);
            if !rows.contains(&k) {
                rows.push(k);
            }
        }
    }
    // The vector width of the cells wider than 8 bytes (8-byte cells use 8-byte moves).
    let width = records
        .iter()
        .filter(|r| r.experiment == "inst" && r.count(p::ACCESS_BYTES).unwrap_or_default() != 8)
        .map(|r| r.count(p::WIDTH_BYTES).unwrap_or_default())
        .next()
        .unwrap_or(8);
    let mut header: Vec<String> = vec![
        "op".into(),
        "fence".into(),
        "bytes".into(),
        "pattern".into(),
    ];
    for (i, (name, _)) in columns.iter().enumerate() {
        header.push(format!("{name} p50 ns"));
        header.push("p99".into());
        if i > 0 {
            header.push("slowdown".into());
        }
    }
    let h: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    let mut t = Table::new(&h);
    let find = |rs: &[&'r Record], k| rs.iter().find(|r| key(r) == k).copied();
    for k in &rows {
        let mut row = vec![
            k.0.to_string(),
            k.1.to_string(),
            k.2.to_string(),
            k.3.to_string(),
        ];
        let first = columns
            .first()
            .and_then(|(_, rs)| find(rs, *k))
            .and_then(|r| r.summary.as_ref())
            .map(|s| s.p50);
        for (i, (_, rs)) in columns.iter().enumerate() {
            let r = find(rs, *k);
            match (r.and_then(|r| r.summary.as_ref()), r) {
                (Some(s), _) => {
                    row.push(format!("{:.1}", s.p50));
                    row.push(format!("{:.1}", s.p99));
                    if i > 0 {
                        row.push(match first {
                            Some(f) if f > 0.0 => format!("{:.2}x", s.p50 / f),
                            _ => "-".into(),
                        });
                    }
                }
                (None, r) => {
                    row.push(
                        match r.map(|r| r.text(p::UNSUPPORTED).unwrap_or_default()) {
                            Some(why) if !why.is_empty() => format!("n/a: {}", short_reason(why)),
                            _ => "-".into(),
                        },
                    );
                    row.push("-".into());
                    if i > 0 {
                        row.push("-".into());
                    }
                }
            }
        }
        t.row(row);
    }
    format!(
        "single-access latency ({width}-byte instructions; loads flushed first; timer overhead subtracted)\n{}\n",
        t.render()
    )
}

/// A cell of the table, as its records name it.
fn key(r: &Record) -> (&str, &str, u64, &str) {
    (
        r.text(p::OP).unwrap_or_default(),
        r.text(p::FENCE).unwrap_or_default(),
        r.count(p::ACCESS_BYTES).unwrap_or_default(),
        r.text(p::PATTERN).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_every_cell_for_every_target() {
        let record = |spec: &str, op: &str, fence: &str, size: u64, pattern: &str, scale: f64| {
            let mut r = Record::new("inst", vec![], Default::default())
                .param(p::OP, op)
                .param(p::FENCE, fence)
                .param(p::ACCESS_BYTES, size)
                .param(p::PATTERN, pattern)
                .param(p::WIDTH_BYTES, if size == 8 { 8 } else { 32 });
            r = pmscope_experiment::render::fields::on_target(r, spec);
            if op == "ntload" && size == 8 {
                r = r.param(
                    p::UNSUPPORTED,
                    "ntload with 8-byte instructions: movntdqa has no 8-byte form",
                );
            } else {
                r.summary = Some(Summary::of(&[100.0 * scale, 200.0 * scale]).unwrap());
            }
            r
        };
        let mut records = Vec::new();
        for (spec, scale) in [("dram:4k", 1.0), ("shm:4k", 2.0)] {
            for op in ["load", "ntload"] {
                for fence in ["none", "mfence"] {
                    for size in [8, 64] {
                        for pattern in ["seq", "rand"] {
                            records.push(record(spec, op, fence, size, pattern, scale));
                        }
                    }
                }
            }
        }
        let text = render(&records);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("single-access latency (32-byte instructions"));
        assert_eq!(lines.len(), 2 + 16, "a title, a header and a row per cell");
        assert!(
            lines[1].contains("dram:4k p50 ns")
                && lines[1].contains("shm:4k p50 ns")
                && lines[1].contains("slowdown")
        );
        for l in &lines[2..] {
            assert!(
                l.contains("2.00x") || l.contains("n/a: movntdqa has no 8-byte form"),
                "{l}"
            );
        }
        assert_eq!(
            text.matches("n/a:").count(),
            2 * 2 * 2,
            "ntload at 8 B, both fences, both patterns, both targets"
        );
    }
}
