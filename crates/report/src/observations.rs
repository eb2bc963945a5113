//! Observations: findings computed from a run's records, each sentence carrying its figures
//! with their 95 % intervals, and stated only when the data support them. A relation
//! between two figures is a finding only when their intervals separate (more than a timer
//! step apart, see `noise`); figures within the noise are called indistinguishable, or
//! nothing is said; and a relation the hardware cannot produce ([`IMPLAUSIBLE`]) is
//! reported as *suspect: measurement disturbed*, with the contention its points saw, never
//! as a finding. Used by the report and printed by `pmscope report`.

use crate::Run;
pub use crate::analysis::{doubling_bandwidth, knee, plateau_ends};
use crate::noise::{self, Estimate, estimate};
use crate::{data, select};
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};

/// How far the data support an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The relation holds beyond the noise: a property of the memory.
    Finding,
    /// The figures cannot be told apart within the noise.
    Indistinguishable,
    /// The figures show a relation the hardware cannot produce: the measurement was
    /// disturbed (the text gives the evidence).
    Suspect,
}

/// One observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The run it was derived from.
    pub run: String,
    /// What kind of observation it is (stable, e.g. `access-size-knee`).
    pub kind: &'static str,
    /// The figure it belongs beside (a `Figure::id`).
    pub figure: &'static str,
    /// Whether it is a finding, a tie within the noise or a suspect measurement.
    pub verdict: Verdict,
    /// The sentence, with its figures and their intervals.
    pub text: String,
}

/// A relation between measured figures that the hardware cannot produce: when the figures
/// show it, the report says *suspect: measurement disturbed* instead of stating it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Implausible {
    /// A stable name.
    pub name: &'static str,
    /// The observation kind whose figures it is checked on.
    pub kind: &'static str,
    /// Why the hardware cannot produce it (the clause after "but").
    pub why: &'static str,
}

/// A store followed by a flush and a fence, cheaper than the plain store.
pub const FLUSH_UNDER_STORE: Implausible = Implausible {
    name: "flush-cheaper-than-store",
    kind: "persist-cost",
    why: "a store followed by a cache-line flush (clflush, clflushopt, clwb) and a fence cannot take less time than the store alone",
};

/// On local DRAM, peak read bandwidth under half the peak write bandwidth.
pub const READ_UNDER_HALF_WRITE: Implausible = Implausible {
    name: "dram-read-under-half-write",
    kind: "read-write-asymmetry",
    why: "DRAM cannot read at under half the rate it writes: writes move the same lines over the same channels, and cached writes read each line first",
};

/// Loaded latency doubling at traffic the memory does not notice.
pub const DOUBLING_AT_NEGLIGIBLE_TRAFFIC: Implausible = Implausible {
    name: "latency-doubles-at-negligible-traffic",
    kind: "loaded-latency-doubles",
    why: "traffic under 5 % of the target's peak bandwidth (or under 1 GB/s on DRAM) cannot queue the memory enough to double its latency",
};

/// Random loads faster than sequential ones over the same working set.
pub const RANDOM_UNDER_SEQUENTIAL: Implausible = Implausible {
    name: "random-faster-than-sequential",
    kind: "rand-seq-latency",
    why: "random loads over the same memory cannot be faster than sequential ones, which the prefetchers and open DRAM rows serve early",
};

/// An idle load from local DRAM taking over a microsecond.
pub const DRAM_LOAD_OVER_A_MICROSECOND: Implausible = Implausible {
    name: "dram-load-over-a-microsecond",
    kind: "rand-seq-latency",
    why: "an idle load from local DRAM takes at most a few hundred ns, even with a TLB miss through nested page tables: beyond 1 µs the time is the machine's (preemption, the host's paging), not the memory's",
};

/// The idle load latency above which no local DRAM answers, in ns.
const DRAM_LOAD_MAX_NS: f64 = 1000.0;

/// Every implausible relation the observations are checked against.
pub const IMPLAUSIBLE: &[Implausible] = &[
    FLUSH_UNDER_STORE,
    READ_UNDER_HALF_WRITE,
    DOUBLING_AT_NEGLIGIBLE_TRAFFIC,
    RANDOM_UNDER_SEQUENTIAL,
    DRAM_LOAD_OVER_A_MICROSECOND,
];

/// The implausible relation an idle-latency figure shows on its own, if any.
fn implausible_load(r: &Record, e: &Estimate) -> Option<&'static Implausible> {
    (data::is_local_dram(r) && e.value > DRAM_LOAD_MAX_NS).then_some(&DRAM_LOAD_OVER_A_MICROSECOND)
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

/// What a rule would say, before it is held against the noise.
struct Claim<'a> {
    kind: &'static str,
    figure: &'static str,
    /// The relation as a finding states it (without the final stop).
    relation: String,
    /// What to say when the figures are within the noise (`None`: nothing).
    otherwise: Option<String>,
    /// Whether the relation holds beyond the noise (`None`: a figure has no interval).
    resolved: Option<bool>,
    /// The implausible relation the figures show, if they show one.
    implausible: Option<&'static Implausible>,
    /// The records behind the figures: the contention they saw is the evidence.
    records: Vec<&'a Record>,
}

/// The observation a claim supports: a suspect when its figures show an implausible
/// relation (unless they are within the noise), a finding when the relation holds beyond
/// the noise, the tie when it does not; nothing for figures without intervals.
fn judge(c: Claim) -> Option<Observation> {
    let (verdict, text) = match (c.implausible, c.resolved) {
        (Some(i), Some(true) | None) => (
            Verdict::Suspect,
            format!(
                "suspect: measurement disturbed — {}, but {}. Evidence: {}.",
                c.relation,
                i.why,
                evidence(&c.records)
            ),
        ),
        (_, Some(true)) => (Verdict::Finding, format!("{}.", c.relation)),
        (_, Some(false)) => (Verdict::Indistinguishable, c.otherwise?),
        (None, None) => return None,
    };
    Some(Observation {
        run: String::new(),
        kind: c.kind,
        figure: c.figure,
        verdict,
        text,
    })
}

/// The contention the points of a suspect relation saw, or that the records hold none.
fn evidence(records: &[&Record]) -> String {
    match noise::contention_evidence(records) {
        e if e.is_empty() => {
            "the records hold no load, steal or CPU-share figures for these points".into()
        }
        e => e,
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

/// "112.0 ns [109.2–114.8] vs 37.3 ns [36.4–38.2]".
fn versus(a: &Estimate, b: &Estimate, digits: usize, unit: &str) -> String {
    format!("{} vs {}", a.show(digits, unit), b.show(digits, unit))
}

/// Random vs sequential idle latency at the largest working set measured both ways.
fn rand_vs_seq_latency(records: &[Record]) -> Vec<Observation> {
    let latency = latency_records(records);
    let mut out = Vec::new();
    for t in data::targets(latency.iter().copied()) {
        let at = |pattern: &str| -> Vec<(u64, &Record)> {
            latency
                .iter()
                .filter(|r| data::target(r) == t && r.text(p::PATTERN) == Some(pattern))
                .filter_map(|r| Some((ws_of(r)?, *r)))
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
        let (Some(er), Some(es)) = (estimate(r), estimate(s)) else {
            continue;
        };
        if es.value <= 0.0 {
            continue;
        }
        let ws = data::bytes(ws as f64);
        let figures = versus(&er, &es, 1, "ns");
        out.extend(judge(Claim {
            kind: "rand-seq-latency",
            figure: "latency-working-set",
            relation: format!(
                "{t}: random loads take {:.2}× as long as sequential ones at a {ws} working set ({figures})",
                er.value / es.value
            ),
            otherwise: Some(format!(
                "{t}: random and sequential loads are indistinguishable within the noise at a {ws} working set ({figures})."
            )),
            resolved: er.differs(&es),
            implausible: (er.value < es.value)
                .then_some(&RANDOM_UNDER_SEQUENTIAL)
                .or_else(|| implausible_load(r, &er))
                .or_else(|| implausible_load(s, &es)),
            records: vec![r, s],
        }));
    }
    out
}

/// The TLB effect: the same chain over targets whose verified page sizes differ, stated
/// when the two differ by 5 % or more and beyond the noise.
fn tlb_effect(records: &[Record]) -> Vec<Observation> {
    let latency = latency_records(records);
    let mut out = Vec::new();
    let targets = data::targets(latency.iter().copied());
    for (i, a) in targets.iter().enumerate() {
        for b in &targets[i + 1..] {
            let pick = |t: &str| -> Vec<(u64, &Record)> {
                latency
                    .iter()
                    .filter(|r| data::target(r) == t && r.text(p::PATTERN) == Some("rand"))
                    .filter_map(|r| Some((ws_of(r)?, *r)))
                    .collect()
            };
            let (pa, pb) = (pick(a), pick(b));
            let Some(&(ws, ra)) = pa
                .iter()
                .filter(|p| pb.iter().any(|q| q.0 == p.0))
                .max_by_key(|p| p.0)
            else {
                continue;
            };
            let &(_, rb) = pb.iter().find(|q| q.0 == ws).expect("common");
            let (sa, sb) = (data::page_size(ra), data::page_size(rb));
            let (Some(na), Some(nb)) = (estimate(ra), estimate(rb)) else {
                continue;
            };
            if sa == sb || sa.is_none() || sb.is_none() || nb.value <= 0.0 {
                continue;
            }
            let ratio = na.value / nb.value;
            if (ratio - 1.0).abs() < 0.05 {
                continue;
            }
            out.extend(judge(Claim {
                kind: "tlb-effect",
                figure: "latency-working-set",
                relation: format!(
                    "Random loads over {}: {a} ({} pages) takes {ratio:.2}× the time of {b} ({} pages), {}: the TLB effect between page sizes",
                    data::bytes(ws as f64),
                    data::page_name(sa),
                    data::page_name(sb),
                    versus(&na, &nb, 1, "ns"),
                ),
                otherwise: None,
                resolved: na.differs(&nb),
                implausible: implausible_load(ra, &na).or_else(|| implausible_load(rb, &nb)),
                records: vec![ra, rb],
            }));
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

/// The ops a write bandwidth is measured with.
const WRITE_OPS: [&str; 3] = ["write", "ntstore", "store+clwb"];

/// Read/write asymmetry of the peaks.
fn read_write_asymmetry(t: &str, mine: &[&Record]) -> Vec<Observation> {
    let peak = |ops: &[&str]| {
        mine.iter()
            .filter(|r| r.text(p::OP).is_some_and(|o| ops.contains(&o)))
            .filter_map(|r| Some((estimate(r)?, r.text(p::OP)?, *r)))
            .max_by(|a, b| a.0.value.total_cmp(&b.0.value))
    };
    let (Some((r, _, rr)), Some((w, wop, wr))) = (peak(&["read"]), peak(&WRITE_OPS)) else {
        return Vec::new();
    };
    if w.value <= 0.0 {
        return Vec::new();
    }
    let claim = Claim {
        kind: "read-write-asymmetry",
        figure: "bandwidth-threads",
        relation: format!(
            "{t}: peak read bandwidth {} is {:.2}× the peak write bandwidth {} ({wop})",
            r.show(2, "GB/s"),
            r.value / w.value,
            w.show(2, "GB/s")
        ),
        otherwise: Some(format!(
            "{t}: peak read and write bandwidth are indistinguishable within the noise ({}, {wop}).",
            versus(&r, &w, 2, "GB/s")
        )),
        resolved: r.differs(&w),
        implausible: (data::is_local_dram(rr) && r.value < 0.5 * w.value)
            .then_some(&READ_UNDER_HALF_WRITE),
        records: vec![rr, wr],
    };
    judge(claim).into_iter().collect()
}

/// The thread count where write bandwidth peaks (only a peak the curve falls from by 5 %
/// or more, beyond the noise).
fn write_peak_threads(t: &str, mine: &[&Record]) -> Vec<Observation> {
    let mut out = Vec::new();
    for op in WRITE_OPS {
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
                .filter_map(|r| Some(((), r.count(p::THREADS)? as f64, (estimate(r)?, *r)))),
        );
        let Some((_, c)) = curve.first() else {
            continue;
        };
        let Some((i, (n, (top, top_r)))) = c
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.1.0.value.total_cmp(&b.1.1.0.value))
        else {
            continue;
        };
        let (last_n, (last, last_r)) = c.last().expect("non-empty");
        if i + 1 < c.len() && last.value < 0.95 * top.value {
            out.extend(judge(Claim {
                kind: "write-peak-threads",
                figure: "bandwidth-threads",
                relation: format!(
                    "{t}: {op} bandwidth ({pattern}, {}) peaks at {n:.0} threads with {} and falls to {} at {last_n:.0} threads",
                    data::bytes(access as f64),
                    top.show(2, "GB/s"),
                    last.show(2, "GB/s"),
                ),
                otherwise: None,
                resolved: top.above(last),
                implausible: None,
                records: vec![top_r, last_r],
            }));
        }
    }
    out
}

/// The access-size knee, at the most threads measured: random accesses of growing size,
/// as seed 004 Figure 11 (the 256 B knee); stated when the rise to the knee is beyond the
/// noise.
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
                .filter_map(|r| Some(((), r.count(p::ACCESS_BYTES)? as f64, (estimate(r)?, *r)))),
        );
        let Some((_, c)) = curve.first() else {
            continue;
        };
        let values: Vec<(f64, f64)> = c.iter().map(|(x, (e, _))| (*x, e.value)).collect();
        let Some(k) = knee(&values) else { continue };
        let peak = values.iter().map(|p| p.1).fold(0.0, f64::max);
        let after = values[k + 1..].iter().map(|p| p.1).fold(0.0, f64::max);
        let (first, at) = (&c[0].1, &c[k].1);
        out.extend(judge(Claim {
            kind: "access-size-knee",
            figure: "bandwidth-access-size",
            relation: format!(
                "{t}: {op} bandwidth ({pattern}, {threads} threads) rises from {} at {} to {} at {} ({:.0}% of its {peak:.2} GB/s peak) and gains at most {:.0}% beyond: the access-size knee is {}",
                first.0.show(2, "GB/s"),
                data::bytes(c[0].0),
                at.0.show(2, "GB/s"),
                data::bytes(c[k].0),
                100.0 * at.0.value / peak,
                (100.0 * (after / at.0.value - 1.0)).max(0.0),
                data::bytes(c[k].0)
            ),
            otherwise: None,
            resolved: at.0.above(&first.0),
            implausible: None,
            records: vec![first.1, at.1],
        }));
    }
    out
}

/// The sequences of a store, a cache-line flush and (with the fence) a drain.
const FLUSHES: [&str; 3] = ["store+clflush", "store+clflushopt", "store+clwb"];

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
            let r = select::inst_pick(&inst, &t, op, pattern, access, fences)?;
            Some((estimate(r)?, r))
        };
        let Some((plain, plain_r)) = pick("store", &["none"]) else {
            continue;
        };
        if plain.value <= 0.0 {
            continue;
        }
        for op in FLUSHES.into_iter().chain(["ntstore"]) {
            let fenced = ["sfence", "mfence"]
                .into_iter()
                .find_map(|fence| Some((fence, pick(op, &[fence])?)));
            let Some((fence, (ns, r))) = fenced else {
                continue;
            };
            let cell = format!("{t} ({pattern}, {access} B)");
            out.extend(judge(Claim {
                kind: "persist-cost",
                figure: "instruction-latency",
                relation: format!(
                    "{cell}: {op}+{fence} takes {}, {:.2}× a plain store ({})",
                    ns.show(1, "ns"),
                    ns.value / plain.value,
                    plain.show(1, "ns")
                ),
                otherwise: Some(format!(
                    "{cell}: {op}+{fence} and a plain store are indistinguishable within the noise ({}).",
                    versus(&ns, &plain, 1, "ns")
                )),
                resolved: ns.differs(&plain),
                implausible: (FLUSHES.contains(&op) && ns.value < plain.value)
                    .then_some(&FLUSH_UNDER_STORE),
                records: vec![r, plain_r],
            }));
        }
    }
    out
}

/// The traffic below which no memory's latency can double: 5 % of the target's peak
/// bandwidth in the run (its bandwidth records and loaded traffic), and 1 GB/s on DRAM.
fn negligible_traffic(records: &[Record], target: &str, dram: bool) -> f64 {
    let of_target = |r: &&Record| data::target(r) == target;
    let plain = select::bandwidth_plain(records)
        .into_iter()
        .filter(of_target)
        .filter_map(data::median);
    let traffic = data::of(records, "loaded")
        .filter(of_target)
        .filter_map(|r| r.val(v::TRAFFIC_GB_S));
    let mixed = data::of(records, "bandwidth")
        .filter(of_target)
        .filter_map(|r| Some(r.val(v::READ_GB_S)? + r.val(v::WRITE_GB_S)?));
    let peak = plain.chain(traffic).chain(mixed).fold(0.0, f64::max);
    (0.05 * peak).max(if dram { 1.0 } else { 0.0 })
}

/// The bandwidth at which loaded latency doubles: stated when some point at or after the
/// crossing is twice the idle latency beyond the noise.
fn loaded_latency_doubles(records: &[Record]) -> Vec<Observation> {
    let mut out = Vec::new();
    for ((t, mix), curve) in select::loaded_curves(records) {
        let values: Vec<(f64, f64)> = curve
            .iter()
            .filter_map(|(x, r)| Some((*x, data::median(r)?)))
            .collect();
        let Some((gb, base)) = doubling_bandwidth(&values) else {
            continue;
        };
        let Some(i) = values.iter().position(|p| p.1 >= 2.0 * base) else {
            continue;
        };
        let (Some(idle), Some(crossed)) = (estimate(curve[0].1), estimate(curve[i].1)) else {
            continue;
        };
        let twice = idle.times(2.0);
        let resolved = idle.known.then(|| {
            curve[i..]
                .iter()
                .filter_map(|(_, r)| estimate(r)?.above(&twice))
                .any(|above| above)
        });
        let negligible = negligible_traffic(records, &t, data::is_local_dram(curve[0].1));
        out.extend(judge(Claim {
            kind: "loaded-latency-doubles",
            figure: "loaded-latency",
            relation: format!(
                "{t}, traffic R:W {mix}: probe latency doubles from {base:.1} ns to {:.1} ns at about {gb:.2} GB/s of traffic (idle {}, {} at {:.2} GB/s)",
                2.0 * base,
                idle.show(1, "ns"),
                crossed.show(1, "ns"),
                curve[i].0
            ),
            otherwise: None,
            resolved,
            implausible: (gb < negligible).then_some(&DOUBLING_AT_NEGLIGIBLE_TRAFFIC),
            records: vec![curve[0].1, curve[i].1],
        }));
    }
    out
}
