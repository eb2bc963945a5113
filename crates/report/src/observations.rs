//! Observations: findings computed from a run's records, each sentence carrying its numbers
//! and absent when the data do not support it. Used by the report and by `pmscope compare`.

use crate::Run;
pub use crate::analysis::{doubling_bandwidth, knee, plateau_ends};
use crate::{data, select};
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

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

/// A rule: the observations of one kind a run's records support (their `run` is left
/// empty; [`of_run`] names it).
type Rule = fn(&[Record]) -> Vec<Observation>;

/// Every rule, in the order their observations are listed.
const RULES: &[Rule] = &[
    rand_vs_seq_latency,
    tlb_effect,
    bandwidth,
    persist_cost,
    loaded_latency_doubles,
];

/// A bandwidth rule: the observations one target's plain bandwidth records support.
type BandwidthRule = fn(&str, &[&Record]) -> Vec<Observation>;

/// The bandwidth rules, in this order for each target in turn.
const BANDWIDTH_RULES: &[BandwidthRule] =
    &[read_write_asymmetry, write_peak_threads, access_size_knee];

fn of_run(run: &str, records: &[Record]) -> Vec<Observation> {
    RULES
        .iter()
        .flat_map(|rule| rule(records))
        .map(|o| Observation {
            run: run.to_string(),
            ..o
        })
        .collect()
}

/// An observation, its run not named yet.
fn finding(kind: &'static str, figure: &'static str, text: String) -> Observation {
    Observation {
        run: String::new(),
        kind,
        figure,
        text,
    }
}

/// The idle-latency records with a median.
fn latency_records(records: &[Record]) -> Vec<&Record> {
    data::of(records, "latency")
        .filter(|r| data::median(r).is_some())
        .collect()
}

fn ws_of(r: &Record) -> Option<u64> {
    r.count(p::WORKING_SET_BYTES)
}

/// Random vs sequential idle latency at the largest working set measured both ways.
fn rand_vs_seq_latency(records: &[Record]) -> Vec<Observation> {
    let latency = latency_records(records);
    let mut out = Vec::new();
    for t in data::targets(latency.iter().copied()) {
        let at = |pattern: &str| -> Vec<(u64, f64)> {
            latency
                .iter()
                .filter(|r| data::target(r) == t && r.text(p::PATTERN) == Some(pattern))
                .filter_map(|r| Some((ws_of(r)?, data::median(r)?)))
                .collect()
        };
        let (rand, seq) = (at("rand"), at("seq"));
        let common = rand
            .iter()
            .filter(|p| seq.iter().any(|q| q.0 == p.0))
            .map(|p| p.0)
            .max();
        let Some(ws) = common else { continue };
        let r = rand.iter().find(|p| p.0 == ws).expect("common").1;
        let s = seq.iter().find(|p| p.0 == ws).expect("common").1;
        if s > 0.0 {
            out.push(finding(
                "rand-seq-latency",
                "latency-working-set",
                format!(
                    "{t}: random loads take {:.2}× as long as sequential ones at a {} working set ({r:.1} ns vs {s:.1} ns).",
                    r / s,
                    data::bytes(ws as f64)
                ),
            ));
        }
    }
    out
}

/// The TLB effect: the same chain over targets whose verified page sizes differ.
fn tlb_effect(records: &[Record]) -> Vec<Observation> {
    let latency = latency_records(records);
    let mut out = Vec::new();
    let targets = data::targets(latency.iter().copied());
    for (i, a) in targets.iter().enumerate() {
        for b in &targets[i + 1..] {
            let pick = |t: &str| -> Vec<(u64, f64, Option<u64>)> {
                latency
                    .iter()
                    .filter(|r| data::target(r) == t && r.text(p::PATTERN) == Some("rand"))
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
                out.push(finding(
                    "tlb-effect",
                    "latency-working-set",
                    format!(
                        "Random loads over {}: {a} ({} pages) takes {ratio:.2}× the time of {b} ({} pages), {na:.1} ns vs {nb:.1} ns: the TLB effect between page sizes.",
                        data::bytes(ws as f64),
                        data::page_name(sa),
                        data::page_name(sb)
                    ),
                ));
            }
        }
    }
    out
}

/// The bandwidth rules, target by target, over the plain bandwidth records.
fn bandwidth(records: &[Record]) -> Vec<Observation> {
    let bw = select::bandwidth_plain(records);
    let mut out = Vec::new();
    for t in data::targets(bw.iter().copied()) {
        let mine: Vec<&Record> = bw
            .iter()
            .copied()
            .filter(|r| data::target(r) == t)
            .collect();
        for rule in BANDWIDTH_RULES {
            out.extend(rule(&t, &mine));
        }
    }
    out
}

/// Read/write asymmetry of the peaks.
fn read_write_asymmetry(t: &str, mine: &[&Record]) -> Vec<Observation> {
    let peak = |ops: &[&str]| {
        mine.iter()
            .filter(|r| r.text(p::OP).is_some_and(|o| ops.contains(&o)))
            .filter_map(|r| Some((data::median(r)?, r.text(p::OP)?)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    match (peak(&["read"]), peak(&["write", "ntstore", "store+clwb"])) {
        (Some((r, _)), Some((w, wop))) if w > 0.0 => vec![finding(
            "read-write-asymmetry",
            "bandwidth-threads",
            format!(
                "{t}: peak read bandwidth {r:.2} GB/s is {:.2}× the peak write bandwidth {w:.2} GB/s ({wop}).",
                r / w
            ),
        )],
        _ => Vec::new(),
    }
}

/// The thread count where write bandwidth peaks (only a peak the curve falls from).
fn write_peak_threads(t: &str, mine: &[&Record]) -> Vec<Observation> {
    let mut out = Vec::new();
    for op in ["write", "ntstore", "store+clwb"] {
        let of_op: Vec<&Record> = mine
            .iter()
            .copied()
            .filter(|r| r.text(p::OP) == Some(op))
            .collect();
        let Some(access) = select::largest(&of_op, p::ACCESS_BYTES) else {
            continue;
        };
        let pattern = if of_op.iter().any(|r| r.text(p::PATTERN) == Some("seq")) {
            "seq"
        } else {
            "rand"
        };
        let curve = select::group(
            of_op
                .iter()
                .filter(|r| {
                    r.text(p::PATTERN) == Some(pattern) && r.count(p::ACCESS_BYTES) == Some(access)
                })
                .filter_map(|r| Some(((), r.count(p::THREADS)? as f64, data::median(r)?))),
        );
        let Some((_, c)) = curve.first() else {
            continue;
        };
        let Some((i, &(n, top))) = c.iter().enumerate().max_by(|a, b| a.1.1.total_cmp(&b.1.1))
        else {
            continue;
        };
        let &(last_n, last) = c.last().expect("non-empty");
        if i + 1 < c.len() && last < 0.95 * top {
            out.push(finding(
                "write-peak-threads",
                "bandwidth-threads",
                format!(
                    "{t}: {op} bandwidth ({pattern}, {}) peaks at {n:.0} threads with {top:.2} GB/s and falls to {last:.2} GB/s at {last_n:.0} threads.",
                    data::bytes(access as f64)
                ),
            ));
        }
    }
    out
}

/// The access-size knee, at the most threads measured: random accesses of growing size,
/// as seed 004 Figure 11 (the 256 B knee).
fn access_size_knee(t: &str, mine: &[&Record]) -> Vec<Observation> {
    let mut out = Vec::new();
    for op in select::bandwidth_ops(mine) {
        let of_op: Vec<&Record> = mine
            .iter()
            .copied()
            .filter(|r| r.text(p::OP) == Some(op.as_str()))
            .collect();
        let pattern = if of_op.iter().any(|r| r.text(p::PATTERN) == Some("rand")) {
            "rand"
        } else {
            "seq"
        };
        let sel: Vec<&Record> = of_op
            .iter()
            .copied()
            .filter(|r| r.text(p::PATTERN) == Some(pattern))
            .collect();
        let Some(threads) = select::largest(&sel, p::THREADS) else {
            continue;
        };
        let curve = select::group(
            sel.iter()
                .filter(|r| r.count(p::THREADS) == Some(threads))
                .filter_map(|r| Some(((), r.count(p::ACCESS_BYTES)? as f64, data::median(r)?))),
        );
        let Some((_, c)) = curve.first() else {
            continue;
        };
        let Some(k) = knee(c) else { continue };
        let peak = c.iter().map(|p| p.1).fold(0.0, f64::max);
        let after = c[k + 1..].iter().map(|p| p.1).fold(0.0, f64::max);
        out.push(finding(
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
        ));
    }
    out
}

/// Each persist strategy's cost against a plain store (inst).
fn persist_cost(records: &[Record]) -> Vec<Observation> {
    let inst = select::inst_records(records);
    let mut out = Vec::new();
    for t in data::targets(inst.iter().copied()) {
        let pattern = if inst.iter().any(|r| r.text(p::PATTERN) == Some("rand")) {
            "rand"
        } else {
            "seq"
        };
        let access = inst
            .iter()
            .filter_map(|r| r.count(p::ACCESS_BYTES))
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
            let fenced = ["sfence", "mfence"]
                .into_iter()
                .find_map(|fence| Some((fence, pick(op, &[fence])?)));
            if let Some((fence, ns)) = fenced {
                out.push(finding(
                    "persist-cost",
                    "instruction-latency",
                    format!(
                        "{t} ({pattern}, {access} B): {op}+{fence} takes {ns:.1} ns, {:.2}× a plain store ({plain:.1} ns).",
                        ns / plain
                    ),
                ));
            }
        }
    }
    out
}

/// The bandwidth at which loaded latency doubles.
fn loaded_latency_doubles(records: &[Record]) -> Vec<Observation> {
    select::loaded_curves(records)
        .into_iter()
        .filter_map(|((t, mix), curve)| {
            let (gb, base) = doubling_bandwidth(&curve)?;
            Some(finding(
                "loaded-latency-doubles",
                "loaded-latency",
                format!(
                    "{t}, traffic R:W {mix}: probe latency doubles from {base:.1} ns to {:.1} ns at about {gb:.2} GB/s of traffic.",
                    2.0 * base
                ),
            ))
        })
        .collect()
}
