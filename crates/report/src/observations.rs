//! Observations: findings computed from a run's records, each sentence carrying its numbers
//! and absent when the data do not support it. Used by the report and by `pmscope compare`.

use crate::Run;
pub use crate::analysis::{doubling_bandwidth, knee, plateau_ends};
use crate::select::group;
use crate::{data, select};
use pmscope_core::record::Record;

/// One finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The run it was derived from.
    pub run: String,
    /// What kind of finding it is (stable, e.g. `access-size-knee`).
    pub kind: &'static str,
    /// The figure it belongs beside (a `Figure::id`).
    pub figure: &'static str,
    /// The sentence, with its numbers.
    pub text: String,
}

/// Every observation of every run.
pub fn observations(runs: &[Run]) -> Vec<Observation> {
    runs.iter()
        .flat_map(|r| of_run(&r.label, &r.records))
        .collect()
}

fn of_run(run: &str, records: &[Record]) -> Vec<Observation> {
    let mut out = Vec::new();
    let mut say = |kind, figure, text: String| {
        out.push(Observation {
            run: run.to_string(),
            kind,
            figure,
            text,
        })
    };
    let latency: Vec<&Record> = data::of(records, "latency")
        .filter(|r| data::median(r).is_some())
        .collect();
    let ws_of = |r: &Record| data::u(r, "working_set_bytes");

    // Random vs sequential idle latency at the largest working set measured both ways.
    for t in data::targets(latency.iter().copied()) {
        let at = |pattern: &str| -> Vec<(u64, f64)> {
            latency
                .iter()
                .filter(|r| data::target(r) == t && data::s(r, "pattern") == Some(pattern))
                .filter_map(|r| Some((ws_of(r)?, data::median(r)?)))
                .collect()
        };
        let (rand, seq) = (at("rand"), at("seq"));
        let common = rand
            .iter()
            .filter(|p| seq.iter().any(|q| q.0 == p.0))
            .map(|p| p.0)
            .max();
        if let Some(ws) = common {
            let r = rand.iter().find(|p| p.0 == ws).expect("common").1;
            let s = seq.iter().find(|p| p.0 == ws).expect("common").1;
            if s > 0.0 {
                say(
                    "rand-seq-latency",
                    "latency-working-set",
                    format!(
                        "{t}: random loads take {:.2}× as long as sequential ones at a {} working set ({r:.1} ns vs {s:.1} ns).",
                        r / s,
                        data::bytes(ws as f64)
                    ),
                );
            }
        }
    }

    // The TLB effect: the same chain over targets whose verified page sizes differ.
    let targets = data::targets(latency.iter().copied());
    for (i, a) in targets.iter().enumerate() {
        for b in &targets[i + 1..] {
            let pick = |t: &str| -> Vec<(u64, f64, Option<u64>)> {
                latency
                    .iter()
                    .filter(|r| data::target(r) == t && data::s(r, "pattern") == Some("rand"))
                    .filter_map(|r| Some((ws_of(r)?, data::median(r)?, data::page_size(r))))
                    .collect()
            };
            let (pa, pb) = (pick(a), pick(b));
            let Some(&(ws, na, sa)) = pa
                .iter()
                .filter(|p| pb.iter().any(|q| q.0 == p.0))
                .max_by_key(|p| p.0)
            else {
                continue;
            };
            let &(_, nb, sb) = pb.iter().find(|q| q.0 == ws).expect("common");
            if sa == sb || sa.is_none() || sb.is_none() || nb <= 0.0 {
                continue;
            }
            let ratio = na / nb;
            if (ratio - 1.0).abs() >= 0.05 {
                say(
                    "tlb-effect",
                    "latency-working-set",
                    format!(
                        "Random loads over {}: {a} ({} pages) takes {ratio:.2}× the time of {b} ({} pages), {na:.1} ns vs {nb:.1} ns: the TLB effect between page sizes.",
                        data::bytes(ws as f64),
                        data::page_name(sa),
                        data::page_name(sb)
                    ),
                );
            }
        }
    }

    let bw = select::bandwidth_plain(records);
    for t in data::targets(bw.iter().copied()) {
        let mine: Vec<&Record> = bw
            .iter()
            .copied()
            .filter(|r| data::target(r) == t)
            .collect();
        let peak = |ops: &[&str]| {
            mine.iter()
                .filter(|r| data::s(r, "op").is_some_and(|o| ops.contains(&o)))
                .filter_map(|r| Some((data::median(r)?, data::s(r, "op")?)))
                .max_by(|a, b| a.0.total_cmp(&b.0))
        };
        // Read/write asymmetry of the peaks.
        if let (Some((r, _)), Some((w, wop))) =
            (peak(&["read"]), peak(&["write", "ntstore", "store+clwb"]))
            && w > 0.0
        {
            {
                say(
                    "read-write-asymmetry",
                    "bandwidth-threads",
                    format!(
                        "{t}: peak read bandwidth {r:.2} GB/s is {:.2}× the peak write bandwidth {w:.2} GB/s ({wop}).",
                        r / w
                    ),
                );
            }
        }
        // The thread count where write bandwidth peaks (only a peak the curve falls from).
        for op in ["write", "ntstore", "store+clwb"] {
            let of_op: Vec<&Record> = mine
                .iter()
                .copied()
                .filter(|r| data::s(r, "op") == Some(op))
                .collect();
            let Some(access) = select::largest(&of_op, "access_bytes") else {
                continue;
            };
            let pattern = if of_op.iter().any(|r| data::s(r, "pattern") == Some("seq")) {
                "seq"
            } else {
                "rand"
            };
            {
                let curve = group(
                    of_op
                        .iter()
                        .filter(|r| {
                            data::s(r, "pattern") == Some(pattern)
                                && data::u(r, "access_bytes") == Some(access)
                        })
                        .filter_map(|r| {
                            Some(((), data::u(r, "threads")? as f64, data::median(r)?))
                        }),
                );
                let Some((_, c)) = curve.first() else {
                    continue;
                };
                let Some((i, &(n, top))) =
                    c.iter().enumerate().max_by(|a, b| a.1.1.total_cmp(&b.1.1))
                else {
                    continue;
                };
                let &(last_n, last) = c.last().expect("non-empty");
                if i + 1 < c.len() && last < 0.95 * top {
                    say(
                        "write-peak-threads",
                        "bandwidth-threads",
                        format!(
                            "{t}: {op} bandwidth ({pattern}, {}) peaks at {n:.0} threads with {top:.2} GB/s and falls to {last:.2} GB/s at {last_n:.0} threads.",
                            data::bytes(access as f64)
                        ),
                    );
                }
            }
        }
        // The access-size knee, at the most threads measured.
        for op in select::bandwidth_ops(&mine) {
            // Random accesses of growing size, as seed 004 Figure 11 (the 256 B knee).
            let of_op: Vec<&Record> = mine
                .iter()
                .copied()
                .filter(|r| data::s(r, "op") == Some(op.as_str()))
                .collect();
            let pattern = if of_op.iter().any(|r| data::s(r, "pattern") == Some("rand")) {
                "rand"
            } else {
                "seq"
            };
            {
                let sel: Vec<&Record> = of_op
                    .iter()
                    .copied()
                    .filter(|r| data::s(r, "pattern") == Some(pattern))
                    .collect();
                let Some(threads) = select::largest(&sel, "threads") else {
                    continue;
                };
                let curve = group(
                    sel.iter()
                        .filter(|r| data::u(r, "threads") == Some(threads))
                        .filter_map(|r| {
                            Some(((), data::u(r, "access_bytes")? as f64, data::median(r)?))
                        }),
                );
                let Some((_, c)) = curve.first() else {
                    continue;
                };
                if let Some(k) = knee(c) {
                    let peak = c.iter().map(|p| p.1).fold(0.0, f64::max);
                    let after = c[k + 1..].iter().map(|p| p.1).fold(0.0, f64::max);
                    say(
                        "access-size-knee",
                        "bandwidth-access-size",
                        format!(
                            "{t}: {op} bandwidth ({pattern}, {threads} threads) rises from {:.2} GB/s at {} to {:.2} GB/s at {} ({:.0}% of its {peak:.2} GB/s peak) and gains at most {:.0}% beyond: the access-size knee is {}.",
                            c[0].1,
                            data::bytes(c[0].0),
                            c[k].1,
                            data::bytes(c[k].0),
                            100.0 * c[k].1 / peak,
                            (100.0 * (after / c[k].1 - 1.0)).max(0.0),
                            data::bytes(c[k].0)
                        ),
                    );
                }
            }
        }
    }

    // Each persist strategy's cost against a plain store (inst).
    let inst: Vec<&Record> = data::of(records, "inst")
        .filter(|r| r.summary.is_some())
        .collect();
    for t in data::targets(inst.iter().copied()) {
        let pattern = if inst.iter().any(|r| data::s(r, "pattern") == Some("rand")) {
            "rand"
        } else {
            "seq"
        };
        let access = inst
            .iter()
            .filter_map(|r| data::u(r, "access_bytes"))
            .filter(|a| *a >= 64)
            .min();
        let Some(access) = access else { continue };
        let pick = |op: &str, fences: &[&str]| {
            select::inst_pick(&inst, &t, op, pattern, access, fences).and_then(data::median)
        };
        let Some(plain) = pick("store", &["none"]) else {
            continue;
        };
        if plain <= 0.0 {
            continue;
        }
        for op in ["store+clflush", "store+clflushopt", "store+clwb", "ntstore"] {
            for fence in ["sfence", "mfence"] {
                if let Some(ns) = pick(op, &[fence]) {
                    say(
                        "persist-cost",
                        "instruction-latency",
                        format!(
                            "{t} ({pattern}, {access} B): {op}+{fence} takes {ns:.1} ns, {:.2}× a plain store ({plain:.1} ns).",
                            ns / plain
                        ),
                    );
                    break;
                }
            }
        }
    }

    // The bandwidth at which loaded latency doubles.
    for ((t, mix), curve) in select::loaded_curves(records) {
        if let Some((gb, base)) = doubling_bandwidth(&curve) {
            say(
                "loaded-latency-doubles",
                "loaded-latency",
                format!(
                    "{t}, traffic R:W {mix}: probe latency doubles from {base:.1} ns to {:.1} ns at about {gb:.2} GB/s of traffic.",
                    2.0 * base
                ),
            );
        }
    }
    out
}
