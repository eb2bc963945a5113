//! `pmscope probe KIND -t SPEC...`: the on-DIMM buffer and prefetch probes of seed 001
//! (Xiang et al.). Each is a working-set sweep over 256-byte XPLines with a figure per
//! point, and the knee of each curve (`core::knee`): the size of the buffer the accesses
//! stopped fitting in. Loads are flushed before they are timed so the CPU caches never
//! answer; writes are non-temporal or flushed. Optane shows a 16 KB read buffer and
//! 256 B granularity here; DRAM has no XPLine, but the CPU's own buffers and prefetchers
//! may show — the records say what was measured, not what was expected.

use crate::args::{ProbeArgs, ProbeKind};
use crate::output::Sink;
use anyhow::Result;
use pmscope_core::knee;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::access::{FenceKind, Op, Sequence, Width, timing_overhead};
use pmscope_loops::probe::{self, LINES, VisitWrite, XPLINE};
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt;
use pmscope_runner::timer::Timer;
use serde_json::{Value, json};

/// A knee is a rise of more than this fraction between neighbouring working sets.
const KNEE_RISE: f64 = 0.25;

/// Times the visits of one point: raw ticks for a working set of the given bytes.
type Measure = Box<dyn Fn(&mut Region<'_>, usize) -> Vec<u64> + Sync>;

/// One curve of a probe: its variant's parameters and a point per working set.
struct Variant {
    params: Vec<(pmscope_core::vocab::ParamKey, Value)>,
    measure: Measure,
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &ProbeArgs) -> Result<()> {
    let (specs, opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let sizes: Vec<u64> = parse_axis(a.sizes.as_deref().unwrap_or("1KiB..64MiB"), AxisKind::Size)
        .map_err(|e| crate::error::usage(e.to_string()))?;
    if let Some(bad) = sizes.iter().find(|&&s| (s as usize) < 2 * XPLINE) {
        return Err(crate::error::usage(format!(
            "working set {} holds fewer than two 256-byte XPLines",
            Bytes(*bad)
        )));
    }
    let max_ws = *sizes.iter().max().expect("non-empty axis");
    let count = a.count.map_or(10_000, |c| c.0);
    let cpu = a.cpu.unwrap_or(0);
    let features = ctx.features;
    let width = Width::widest(&features);
    let load = Sequence::new(Op::Load, FenceKind::None, width, &features)?;
    let nt = Sequence::new(Op::NtStore, FenceKind::Sfence, width, &features)?;
    let write = match a.write.as_deref() {
        None => VisitWrite::default_for(&features),
        Some(name) => VisitWrite::parse(name).ok_or_else(|| {
            let names: Vec<&str> = probe::VISIT_WRITES.iter().map(|w| w.name()).collect();
            crate::error::usage(format!("--write {name}: use {}", names.join(", ")))
        })?,
    };
    // The default write falls back as the persist default does, and the records say so.
    let write_note =
        (a.kind == ProbeKind::ChaseWrite && a.write.is_none() && write != VisitWrite::StoreClwb)
            .then(|| {
                pmscope_experiment::fallback::note(format!(
                    "the default write is store+clwb, but this CPU lacks {}, so {} is used",
                    if write == VisitWrite::StoreClflush {
                        "clwb and clflushopt"
                    } else {
                        "clwb"
                    },
                    write.name()
                ))
            });
    if a.kind == ProbeKind::ChaseWrite {
        write.check(&features)?;
    }
    let seed = a.seed;
    let mut variants: Vec<Variant> = Vec::new();
    let patterns = [Pattern::Seq, Pattern::Rand];
    match a.kind {
        ProbeKind::ReadBuffer => {
            for k in 1..=LINES {
                variants.push(Variant {
                    params: vec![(p::LINES, json!(k)), (p::PATTERN, json!("rand"))],
                    measure: Box::new(move |r, ws| {
                        let offs = probe::cycle(&probe::xplines(ws, Pattern::Rand, seed), count);
                        let mut t = vec![0; offs.len()];
                        load.time_each(r, 64 * k, &offs, true, &mut t);
                        t
                    }),
                });
            }
        }
        ProbeKind::WriteBuffer => {
            for p in patterns {
                for k in 1..=LINES {
                    variants.push(Variant {
                        params: vec![(p::LINES, json!(k)), (p::PATTERN, json!(p.name()))],
                        measure: Box::new(move |r, ws| {
                            let offs = probe::cycle(&probe::xplines(ws, p, seed), count);
                            let mut t = vec![0; offs.len()];
                            nt.time_each(r, 64 * k, &offs, false, &mut t);
                            t
                        }),
                    });
                }
            }
        }
        ProbeKind::RwBuffer => {
            for mode in ["read-only", "write-only", "interleaved"] {
                variants.push(Variant {
                    params: vec![(p::MODE, json!(mode)), (p::PATTERN, json!("rand"))],
                    measure: Box::new(move |r, ws| {
                        let (reads, writes) = probe::split_read_write(ws, Pattern::Rand, seed);
                        let (reads, writes) =
                            (probe::cycle(&reads, count), probe::cycle(&writes, count));
                        let mut t = vec![0u64; count];
                        match mode {
                            "read-only" => load.time_each(r, XPLINE, &reads, true, &mut t),
                            "write-only" => nt.time_each(r, XPLINE, &writes, false, &mut t),
                            _ => {
                                // A flushed XPLine read, then an XPLine nt write to the other
                                // half: one figure per pair.
                                let mut one = [0u64];
                                for (i, slot) in t.iter_mut().enumerate() {
                                    load.time_each(r, XPLINE, &reads[i..i + 1], true, &mut one);
                                    *slot = one[0];
                                    nt.time_each(r, XPLINE, &writes[i..i + 1], false, &mut one);
                                    *slot += one[0];
                                }
                            }
                        }
                        t
                    }),
                });
            }
        }
        ProbeKind::Prefetch => {
            for pf in [false, true] {
                variants.push(Variant {
                    params: vec![
                        (p::SOFTWARE_PREFETCH, json!(pf)),
                        (p::PATTERN, json!("rand")),
                    ],
                    measure: Box::new(move |r, ws| {
                        let offs = probe::cycle(&probe::xplines(ws, Pattern::Rand, seed), count);
                        let mut t = vec![0; offs.len()];
                        probe::time_xpline_reads(r, &offs, pf, &mut t);
                        t
                    }),
                });
            }
        }
        ProbeKind::ChaseWrite => {
            for p in patterns {
                for decoupled in [false, true] {
                    variants.push(Variant {
                        params: vec![
                            (p::PATTERN, json!(p.name())),
                            (p::WRITE, json!(write.name())),
                            (p::DECOUPLED, json!(decoupled)),
                        ],
                        measure: Box::new(move |r, ws| {
                            let order = probe::xplines(ws, p, seed);
                            let mut t = vec![0; count];
                            probe::time_walk(r, &order, write, decoupled, &mut t);
                            t
                        }),
                    });
                }
            }
        }
    }
    let kind = a.kind.name();
    let human = sink.human();
    let mut h = ctx.start(sink, &[cpu], Some(max_ws), true)?;
    if let Some(w) = write_note {
        h.note(w);
    }
    let timer: Timer = *h.timer();
    h.per_target(&specs, max_ws, &opts, None, |run, m| {
        let executor = run.executor();
        let variants = &variants;
        let curves = run.on_cpu(cpu, m.bytes_mut(), |bytes| {
            let mut region = Region::from_slice(bytes);
            let overhead = executor.run(|| timing_overhead(10_001), || 0);
            let mut curves: Vec<Vec<(u64, Summary)>> = Vec::new();
            'all: for v in variants {
                let mut curve = Vec::new();
                for &ws in &sizes {
                    if interrupt::check().is_err() {
                        curves.push(curve);
                        break 'all;
                    }
                    let ns = executor.run(
                        || {
                            (v.measure)(&mut region, ws as usize)
                                .iter()
                                .map(|&t| timer.net_ns(t, overhead))
                                .collect::<Vec<f64>>()
                        },
                        || {
                            let step = if ws > 16 << 10 { 300.0 } else { 100.0 };
                            Executor::synthetic(count, step)
                        },
                    );
                    curve.push((ws, Summary::of(&ns).expect("finite")));
                }
                curves.push(curve);
            }
            curves
        })?;
        for (v, curve) in variants.iter().zip(&curves) {
            for (ws, s) in curve {
                let mut r = run
                    .record("probe")
                    .param(p::PROBE, kind)
                    .param(p::WORKING_SET_BYTES, *ws)
                    .param(p::SAMPLES, count);
                for (k, val) in &v.params {
                    r = r.param(*k, val.clone());
                }
                r.metric = Some("latency_ns".into());
                r.summary = Some(s.clone());
                run.emit(&r)?;
            }
            let points: Vec<(u64, f64)> = curve.iter().map(|(ws, s)| (*ws, s.p50)).collect();
            let mut r = run.record("probe-knee").param(p::PROBE, kind);
            for (k, val) in &v.params {
                r = r.param(*k, val.clone());
            }
            match knee::knee(&points, KNEE_RISE) {
                Some(k) => {
                    r = r
                        .param(p::KNEE_FOUND, true)
                        .value(v::KNEE_BYTES, k.size as f64)
                        .value(v::BEFORE_NS, k.before)
                        .value(v::AFTER_NS, k.after);
                }
                None => r = r.param(p::KNEE_FOUND, false),
            }
            run.emit(&r)?;
        }
        run.check_interrupt()
    })?;
    h.finish()?;
    if human {
        render(sink.records());
    }
    Ok(())
}

/// Per target: a row per working set and a column per variant (median ns per visit), then
/// the knee of each curve.
fn render(records: &[Record]) {
    let variant = |r: &Record| -> String {
        r.params
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "probe" | "working_set_bytes" | "samples" | "knee_found" | "executor"
                )
            })
            .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut targets: Vec<&str> = records
        .iter()
        .filter_map(|r| r.target.as_ref().map(|t| t.spec.as_str()))
        .collect();
    targets.dedup();
    for t in targets {
        let of = |e: &str| -> Vec<&Record> {
            records
                .iter()
                .filter(|r| r.experiment == e && r.target.as_ref().is_some_and(|x| x.spec == t))
                .collect()
        };
        let points = of("probe");
        let Some(first) = points.first() else {
            continue;
        };
        let mut variants: Vec<String> = points.iter().map(|r| variant(r)).collect();
        variants.dedup();
        let mut sizes: Vec<u64> = points
            .iter()
            .filter_map(|r| r.params["working_set_bytes"].as_u64())
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        println!(
            "{t}: probe {}, median ns per visit (loads flushed first)",
            first.params["probe"].as_str().unwrap_or("?")
        );
        let mut header = vec!["working set".to_string()];
        header.extend(variants.iter().cloned());
        let header: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
        let mut table = Table::new(&header);
        for ws in sizes {
            let mut row = vec![Bytes(ws).to_string()];
            for v in &variants {
                row.push(
                    points
                        .iter()
                        .find(|r| {
                            variant(r) == *v && r.params["working_set_bytes"].as_u64() == Some(ws)
                        })
                        .and_then(|r| r.summary.as_ref())
                        .map(|s| format!("{:.1}", s.p50))
                        .unwrap_or_else(|| "-".into()),
                );
            }
            table.row(row);
        }
        println!("{}", table.render());
        for k in of("probe-knee") {
            match (
                k.values.get("knee_bytes"),
                k.values.get("before_ns"),
                k.values.get("after_ns"),
            ) {
                (Some(b), Some(x), Some(y)) => println!(
                    "  {}: knee at {} ({x:.1} -> {y:.1} ns)",
                    variant(k),
                    Bytes(*b as u64)
                ),
                _ => println!(
                    "  {}: no knee (no rise above {:.0}% between neighbouring working sets)",
                    variant(k),
                    100.0 * KNEE_RISE
                ),
            }
        }
        println!();
    }
}
