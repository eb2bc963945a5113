//! `pmscope inst`: the latency of single instruction sequences (LATTester, seed 004
//! Figure 8; seed 003 Table 5). Each access — op, per-line flush, fence — is timed on its
//! own between serialising timestamps, the timer overhead subtracted; loads find their
//! lines flushed beforehand so the memory is measured. With two or more targets, the table
//! has a column per target and the slowdown against the first.

use crate::args::InstArgs;
use crate::context::{Context, parse_patterns};
use crate::error::usage;
use crate::output::Sink;
use crate::output::progress::Progress;
use crate::output::table::Table;
use anyhow::Result;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_loops::Region;
use pmscope_loops::access::{self, FENCES, FenceKind, OPS, Op, Width};
use pmscope_loops::catalog;
use pmscope_loops::rng::SplitMix64;
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
    Measured(Summary),
    /// The full sentence (for the record) and the short reason (for the table).
    Unsupported(String, String),
}

/// Offsets of `count` accesses of `size` bytes in a region of `len` bytes: consecutive
/// (wrapping) or random, aligned to the access (64 bytes at least, 8 for 8-byte accesses).
pub fn offsets(count: usize, size: usize, len: usize, random: bool, seed: u64) -> Vec<usize> {
    let align = if size == 8 { 8 } else { size.max(64) };
    let slots = (len / align).max(1);
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|i| {
            let slot = if random {
                rng.below(slots as u64) as usize
            } else {
                i % slots
            };
            slot * align
        })
        .collect()
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &InstArgs) -> Result<()> {
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
    let region_bytes = a.region.0;
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
    let width = match a.width {
        Some(w) => {
            Width::from_bytes(w).ok_or_else(|| usage(format!("--width {w}: use 16, 32 or 64")))?
        }
        None => Width::widest(&ctx.features),
    };
    let cpu = a.cpu.unwrap_or(0);
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
    let features = ctx.features;
    let mut columns: Vec<(String, BTreeMap<Cell, Outcome>)> = Vec::new();
    let progress = Progress::new((specs.len() * cells.len()) as u64, "inst", sink.human());
    let json = !sink.human();
    let mut h = ctx.start(sink, &[cpu], Some(region_bytes), true)?;
    let timer = *h.timer();
    h.per_target(&specs, region_bytes, &opts, None, |run, m| {
        let executor = run.executor();
        let (results, overhead_ns) = run.on_cpu(cpu, m.bytes_mut(), |bytes| {
            let mut region = Region::from_slice(bytes);
            let overhead = executor.run(|| access::timing_overhead(100_001), || 0);
            let mut results = BTreeMap::new();
            let mut ticks = vec![0u64; count];
            for &c in &cells {
                if interrupt::check().is_err() {
                    break; // the cells so far are recorded, then the run stops
                }
                let op = ops[c.op_index];
                let fence = fences[c.fence_index];
                let w = if c.size == 8 { Width::W8 } else { width };
                let outcome = match catalog::of(op, fence).sequence(w, &features) {
                    Err(e) => Outcome::Unsupported(e.to_string(), e.reason.clone()),
                    Ok(seq) => {
                        let ns = executor.run(
                            || {
                                let offs = offsets(
                                    count,
                                    c.size,
                                    region.len(),
                                    c.random,
                                    a.seed ^ c.size as u64,
                                );
                                let flush = !op.writes() && !a.no_flush;
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
                                    .map(|&t| timer.tsc_ticks_to_ns(t.saturating_sub(overhead)))
                                    .collect::<Vec<f64>>()
                            },
                            || Executor::synthetic(count, 50.0 + c.size as f64),
                        );
                        Outcome::Measured(Summary::of(&ns).expect("finite"))
                    }
                };
                results.insert(c, outcome);
                progress.inc();
            }
            (results, timer.tsc_ticks_to_ns(overhead))
        })?;
        for (c, outcome) in &results {
            let mut r: Record = run
                .record("inst")
                .param("op", ops[c.op_index].name())
                .param("fence", fences[c.fence_index].name())
                .param("access_bytes", c.size)
                .param("pattern", Pattern::from_random(c.random).name())
                .param("width_bytes", if c.size == 8 { 8 } else { width.bytes() })
                .param("flushed_before", !ops[c.op_index].writes() && !a.no_flush)
                .param("region_bytes", region_bytes)
                .value("timer_overhead_ns", overhead_ns);
            match outcome {
                Outcome::Measured(s) => {
                    r.metric = Some("latency_ns".into());
                    r.summary = Some(s.clone());
                }
                Outcome::Unsupported(why, _) => {
                    r = r.param("unsupported", why.as_str());
                }
            }
            run.emit(&r)?;
        }
        columns.push((run.target().spec.clone(), results));
        run.check_interrupt()
    })?;
    h.finish()?;
    progress.finish();
    if !json {
        print_table(&columns, &cells, &ops, &fences, width);
    }
    Ok(())
}

fn print_table(
    columns: &[(String, BTreeMap<Cell, Outcome>)],
    cells: &[Cell],
    ops: &[Op],
    fences: &[FenceKind],
    width: Width,
) {
    println!(
        "single-access latency ({}-byte instructions; loads flushed first; timer overhead subtracted)",
        width.bytes()
    );
    println!("{}", render_table(columns, cells, ops, fences));
}

/// The seed 003 Table 5 layout: a row per op x fence x size x pattern, a column pair per
/// target, and the slowdown against the first target.
fn render_table(
    columns: &[(String, BTreeMap<Cell, Outcome>)],
    cells: &[Cell],
    ops: &[Op],
    fences: &[FenceKind],
) -> String {
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
    for c in cells {
        let mut row = vec![
            ops[c.op_index].name().to_string(),
            fences[c.fence_index].name().to_string(),
            c.size.to_string(),
            if c.random { "rand" } else { "seq" }.to_string(),
        ];
        let first = match columns.first().and_then(|(_, r)| r.get(c)) {
            Some(Outcome::Measured(s)) => Some(s.p50),
            _ => None,
        };
        for (i, (_, results)) in columns.iter().enumerate() {
            match results.get(c) {
                Some(Outcome::Measured(s)) => {
                    row.push(format!("{:.1}", s.p50));
                    row.push(format!("{:.1}", s.p99));
                    if i > 0 {
                        row.push(match first {
                            Some(f) if f > 0.0 => format!("{:.2}x", s.p50 / f),
                            _ => "-".into(),
                        });
                    }
                }
                Some(Outcome::Unsupported(_, reason)) => {
                    row.push(format!("n/a: {reason}"));
                    row.push("-".into());
                    if i > 0 {
                        row.push("-".into());
                    }
                }
                None => unreachable!("every cell is measured or unsupported"),
            }
        }
        t.row(row);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_every_cell_for_every_target() {
        let ops = [Op::Load, Op::NtLoad];
        let fences = [FenceKind::None, FenceKind::Mfence];
        let mut cells = Vec::new();
        for op_index in 0..2 {
            for fence_index in 0..2 {
                for size in [8, 64] {
                    for random in [false, true] {
                        cells.push(Cell {
                            op_index,
                            fence_index,
                            size,
                            random,
                        });
                    }
                }
            }
        }
        let column = |scale: f64| -> BTreeMap<Cell, Outcome> {
            cells
                .iter()
                .map(|&c| {
                    let o = if c.op_index == 1 && c.size == 8 {
                        Outcome::Unsupported("full".into(), "movntdqa has no 8-byte form".into())
                    } else {
                        Outcome::Measured(Summary::of(&[100.0 * scale, 200.0 * scale]).unwrap())
                    };
                    (c, o)
                })
                .collect()
        };
        let cols = vec![
            ("dram:4k".to_string(), column(1.0)),
            ("shm:4k".to_string(), column(2.0)),
        ];
        let text = render_table(&cols, &cells, &ops, &fences);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + cells.len(), "a header and a row per cell");
        assert!(
            lines[0].contains("dram:4k p50 ns")
                && lines[0].contains("shm:4k p50 ns")
                && lines[0].contains("slowdown")
        );
        for l in &lines[1..] {
            assert!(
                l.contains("2.00x") || l.contains("n/a: movntdqa has no 8-byte form"),
                "{l}"
            );
            assert_eq!(l.split_whitespace().filter(|w| w.is_empty()).count(), 0);
        }
        assert_eq!(
            text.matches("n/a:").count(),
            2 * 2 * 2,
            "ntload at 8 B, both fences, both patterns, both targets"
        );
    }

    #[test]
    fn offsets_are_aligned_inside_and_sequential_or_random() {
        let s = offsets(10, 256, 4096, false, 1);
        assert_eq!(s, [0, 256, 512, 768, 1024, 1280, 1536, 1792, 2048, 2304]);
        let wrapped = offsets(20, 256, 4096, false, 1);
        assert_eq!(wrapped[16], 0);
        let r = offsets(1000, 64, 1 << 20, true, 7);
        assert!(r.iter().all(|&o| o % 64 == 0 && o + 64 <= 1 << 20));
        assert!(r.windows(2).any(|w| w[1] != w[0] + 64));
        let w = offsets(4, 8, 4096, false, 1);
        assert_eq!(w, [0, 8, 16, 24]);
    }
}
