//! "How far to trust this run": the box at the top of the report, one per run. What the
//! machine was doing while the run measured (load, steal, the CPU share its threads got),
//! how many points missed their precision target and in which experiments, how many
//! repetitions were disturbed and measured again, how many observations are suspect, and
//! each confounder of the environment once.

use crate::markup::esc;
use crate::noise::{self, BUSY_MACHINE, CPU_SHARE, OTHER_CPU_PCT, STEAL_PCT};
use crate::warnings;
use pmscope_core::record::Record;
use std::fmt::Write as _;

/// Timer steps above this (ns) quantise single timings enough to name.
const COARSE_TIMER_NS: f64 = 2.0;

/// What a run's records say about how far its figures can be trusted.
#[derive(Debug, Clone, PartialEq)]
pub struct Trust {
    /// The range of the load average over the points that recorded it (as a value, or in
    /// a `busy-machine` warning), and how many did.
    pub load: Option<((f64, f64), usize)>,
    /// The most steal any point saw, in %.
    pub steal_pct: Option<f64>,
    /// The least CPU share any point's threads got.
    pub cpu_share: Option<f64>,
    /// The most other work any point was measured beside, % of a CPU.
    pub other_cpu_pct: Option<f64>,
    /// Points that carry a precision.
    pub with_precision: usize,
    /// Points that missed their precision target, by experiment (first-seen order).
    pub missed: Vec<(String, usize)>,
    /// The precision targets asked for (relative half-widths), each once.
    pub targets: Vec<f64>,
    /// Repetitions measured again because the machine disturbed them.
    pub disturbed: usize,
    /// The environment's confounders, each once, as sentences.
    pub confounders: Vec<String>,
}

/// The trust summary of a run's records.
pub fn of(records: &[Record]) -> Trust {
    let load_points: Vec<f64> = records.iter().filter_map(noise::load).collect();
    let mut missed: Vec<(String, usize)> = Vec::new();
    let mut targets: Vec<f64> = Vec::new();
    for p in records.iter().filter_map(|r| r.precision.as_ref()) {
        if let Some(t) = p.target
            && !targets.iter().any(|x| (x - t).abs() < 1e-12)
        {
            targets.push(t);
        }
    }
    for r in records {
        if r.precision.as_ref().is_some_and(|p| !p.met) {
            match missed.iter_mut().find(|m| m.0 == r.experiment) {
                Some(m) => m.1 += 1,
                None => missed.push((r.experiment.clone(), 1)),
            }
        }
    }
    Trust {
        load: noise::range(load_points.iter().copied()).map(|l| (l, load_points.len())),
        steal_pct: noise::range(
            records
                .iter()
                .filter_map(|r| noise::contention(r, STEAL_PCT)),
        )
        .map(|r| r.1),
        cpu_share: noise::range(
            records
                .iter()
                .filter_map(|r| noise::contention(r, CPU_SHARE)),
        )
        .map(|r| r.0),
        other_cpu_pct: noise::range(
            records
                .iter()
                .filter_map(|r| noise::contention(r, OTHER_CPU_PCT)),
        )
        .map(|r| r.1),
        with_precision: records.iter().filter(|r| r.precision.is_some()).count(),
        missed,
        targets,
        disturbed: records
            .iter()
            .filter_map(|r| r.precision.as_ref())
            .map(|p| p.disturbed)
            .sum(),
        confounders: confounders(records),
    }
}

/// Each confounder of the environment once: the run-wide warnings, a virtual machine, a
/// coarse timer, the CPU's mitigations.
fn confounders(records: &[Record]) -> Vec<String> {
    let mut out = Vec::new();
    let wide = warnings::run_wide(records);
    let refs: Vec<&Record> = records.iter().collect();
    let skip: Vec<&str> = refs
        .iter()
        .flat_map(|r| r.warnings.iter())
        .map(|w| w.code.as_str())
        .filter(|c| !wide.iter().any(|w| w == c) && *c != BUSY_MACHINE)
        .collect();
    for g in warnings::grouped(&refs, &skip) {
        out.push(format!("{} — {}", g.summary(), g.first.remedy));
    }
    let Some(sys) = records
        .iter()
        .map(|r| &r.system)
        .find(|s| s.cpus_online > 0)
    else {
        return out;
    };
    if sys.hypervisor {
        out.push(
            "virtual machine: the hypervisor may run other guests on these CPUs (steal) and \
             share the memory bandwidth"
                .into(),
        );
    }
    if let Some(t) = sys.timer.filter(|t| t.resolution_ns > COARSE_TIMER_NS) {
        out.push(format!(
            "the timer advances in steps of {:.1} ns: single timings are multiples of it, and \
             figures closer than a step are the same figure",
            t.resolution_ns
        ));
    }
    if !sys.mitigations.is_empty() {
        let names: Vec<&str> = sys.mitigations.keys().map(String::as_str).collect();
        out.push(format!(
            "CPU vulnerability mitigations in force: {} (they cost time on kernel entries and \
             context switches)",
            names.join(", ")
        ));
    }
    out
}

/// The box of one run.
pub fn html(h: &mut String, label: &str, records: &[Record], suspects: usize) {
    let t = of(records);
    let _ = write!(
        h,
        "<div class=\"trust\"><h3>How far to trust this run: {}</h3><ul>",
        esc(label)
    );
    let cpus = records
        .iter()
        .map(|r| r.system.cpus_online)
        .find(|c| *c > 0);
    let on = cpus.map(|c| format!(" on {c} CPUs")).unwrap_or_default();
    let _ = write!(
        h,
        "<li><b>Load</b>: {}</li>",
        match t.load {
            Some((l, n)) => format!(
                "1-minute load average {}{on}, over the {n} points that recorded it",
                noise::show_range(l, 2)
            ),
            None =>
                "not recorded (no load figure and no busy-machine warning in the records)".into(),
        }
    );
    let _ = write!(
        h,
        "<li><b>Steal</b>: {}; <b>CPU share</b> of the measuring threads: {}; \
         <b>other processes</b> on the machine: {}</li>",
        t.steal_pct
            .map_or("not recorded".into(), |s| format!("up to {s:.1} %")),
        t.cpu_share
            .map_or("not recorded".into(), |c| format!("down to {c:.2}")),
        t.other_cpu_pct.map_or("not recorded".into(), |o| format!(
            "up to {o:.0} % of a CPU"
        ))
    );
    let measured = records.iter().filter(|r| r.summary.is_some()).count();
    precision_items(h, &t, measured);
    if suspects > 0 {
        let _ = write!(
            h,
            "<li class=\"suspect\"><b>Suspect observations</b>: {suspects} relation(s) the \
             hardware cannot produce, listed under Observations: measurement disturbed</li>"
        );
    }
    if t.confounders.is_empty() {
        h.push_str("<li><b>Confounders</b>: none recorded</li>");
    } else {
        h.push_str("<li><b>Confounders</b>, each once:<ul>");
        for c in &t.confounders {
            let _ = write!(h, "<li>{}</li>", esc(c));
        }
        h.push_str("</ul></li>");
    }
    h.push_str("</ul></div>");
}

/// The precision lines: points that missed their target and where, disturbed repetitions.
fn precision_items(h: &mut String, t: &Trust, measured: usize) {
    if t.with_precision == 0 {
        let _ = write!(
            h,
            "<li><b>Precision</b>: none of the {measured} points carries its interval \
             (written before pmscope measured one): error bars and observations use each \
             summary's spread, 1.96·1.2533·stddev/√n</li>"
        );
        return;
    }
    let target = if t.targets.is_empty() {
        "a fixed number of repetitions".to_string()
    } else {
        let shown: Vec<String> = t
            .targets
            .iter()
            .map(|x| format!("±{}", trim_pct(x * 100.0)))
            .collect();
        format!("target {}", shown.join(", "))
    };
    let missed: usize = t.missed.iter().map(|m| m.1).sum();
    if missed == 0 {
        let _ = write!(
            h,
            "<li><b>Precision</b>: all {} points with an interval met it ({target})</li>",
            t.with_precision
        );
    } else {
        let by: Vec<String> = t.missed.iter().map(|(e, n)| format!("{e} {n}")).collect();
        let _ = write!(
            h,
            "<li class=\"missed\"><b>Precision</b>: {missed} of {} points missed it ({target}): \
             {} — their differences may not be resolvable</li>",
            t.with_precision,
            esc(&by.join(", "))
        );
    }
    let _ = write!(
        h,
        "<li><b>Disturbed repetitions</b> (another process on the CPU or busy elsewhere on the \
         machine, stolen time), measured again and left out unless the disturbance lasted a \
         point's whole budget (that point then missed its target): {}</li>",
        t.disturbed
    );
}

/// `3 %`, `2.5 %`.
fn trim_pct(v: f64) -> String {
    let s = format!("{v:.1}");
    format!("{} %", s.trim_end_matches(".0"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::precision::Precision;
    use pmscope_core::record::SystemSummary;
    use pmscope_core::summary::Summary;
    use pmscope_core::warning::Warning;

    fn point(experiment: &str, met: bool, disturbed: usize) -> Record {
        let mut r = Record::new(experiment, vec![], SystemSummary::default());
        r.system.cpus_online = 2;
        r.system.hypervisor = true;
        r.summary = Summary::of(&[1.0, 2.0]);
        r.precision = Some(Precision {
            low: 1.0,
            high: 2.0,
            n: 6,
            disturbed,
            target: Some(0.03),
            met,
            step: None,
        });
        r.warnings.push(Warning::new(
            "governor-unknown",
            "the CPU frequency governor is unknown",
            "in a VM the host decides",
        ));
        r
    }

    #[test]
    fn the_trust_box_counts_missed_targets_disturbances_and_contention() {
        let mut recs = vec![
            point("inst", false, 2),
            point("inst", false, 0),
            point("latency", true, 1),
            point("latency", false, 0),
        ];
        recs[0].values.insert(noise::LOAD_AVG.name().into(), 3.5);
        recs[1].values.insert(noise::LOAD_AVG.name().into(), 5.2);
        recs[1].values.insert(STEAL_PCT.name().into(), 12.0);
        recs[2].values.insert(CPU_SHARE.name().into(), 0.61);
        recs[3].values.insert(CPU_SHARE.name().into(), 0.9);
        recs[2].values.insert(OTHER_CPU_PCT.name().into(), 97.0);
        recs[3].values.insert(OTHER_CPU_PCT.name().into(), 3.0);
        let t = of(&recs);
        assert_eq!(t.other_cpu_pct, Some(97.0));
        assert_eq!(t.load, Some(((3.5, 5.2), 2)));
        assert_eq!(t.steal_pct, Some(12.0));
        assert_eq!(t.cpu_share, Some(0.61));
        assert_eq!(
            t.missed,
            [("inst".to_string(), 2), ("latency".to_string(), 1)]
        );
        assert_eq!(t.disturbed, 3);
        assert_eq!(t.targets, [0.03]);
        // The governor warning every record carries is one confounder, beside the VM.
        assert_eq!(t.confounders.len(), 2, "{:?}", t.confounders);
        let mut h = String::new();
        html(&mut h, "run", &recs, 1);
        assert!(
            h.contains("3 of 4 points missed it (target ±3 %): inst 2, latency 1"),
            "{h}"
        );
        assert!(
            h.contains("1-minute load average 3.50–5.20 on 2 CPUs"),
            "{h}"
        );
        assert!(h.contains("Suspect observations</b>: 1"), "{h}");
        assert_eq!(h.matches("governor-unknown").count(), 1, "{h}");
    }
}
