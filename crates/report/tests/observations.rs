//! Observations held against the noise, on synthetic records whose intervals are set by
//! hand: a relation is stated only when the intervals separate, figures within the noise
//! are called indistinguishable, and every relation of the `IMPLAUSIBLE` table is reported
//! as *suspect: measurement disturbed* with its evidence, never as a finding.

use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::precision::Precision;
use pmscope_core::record::{Record, SystemSummary, TargetRecord};
use pmscope_core::summary::Summary;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_report::observations::{IMPLAUSIBLE, Observation, Verdict};
use pmscope_report::{Options, Run, html, observations};

/// A point of `experiment` on `target` whose median is `median` with the 95 % interval
/// `median ± half` over ten repetitions (precision as the runner records it).
fn point(experiment: &str, target: &str, median: f64, half: f64) -> Record {
    let mut r = Record::new(
        experiment,
        vec!["pmscope".into()],
        SystemSummary {
            hostname: "box".into(),
            cpus_online: 2,
            ..Default::default()
        },
    );
    let persistence = if target.starts_with("devdax") {
        Persistence::Dax
    } else {
        Persistence::Volatile
    };
    r.target = Some(TargetRecord {
        spec: target.into(),
        achieved: Achieved::unverified(1 << 30, persistence),
    });
    r.summary = Summary::of(&[median]);
    r.precision = Some(Precision {
        low: median - half,
        high: median + half,
        n: 10,
        disturbed: 0,
        target: Some(0.03),
        met: half / median <= 0.03,
        step: None,
    });
    r
}

/// The machine was busy while the point was measured: the load the runner recorded and
/// the environment check's warning.
fn busy(r: Record, load: f64) -> Record {
    let mut r = r;
    r.values.insert("load_avg".into(), load);
    r.warnings.push(Warning::new(
        "busy-machine",
        format!("the 1-minute load average is {load:.2} on 2 CPUs: other work competes for cores and memory bandwidth"),
        "stop other jobs",
    ));
    r
}

fn inst(target: &str, op: &str, fence: &str, ns: f64, half: f64) -> Record {
    point("inst", target, ns, half)
        .param(p::OP, op)
        .param(p::FENCE, fence)
        .param(p::ACCESS_BYTES, 64)
        .param(p::PATTERN, "rand")
}

fn bandwidth(target: &str, op: &str, threads: u64, gb: f64, half: f64) -> Record {
    point("bandwidth", target, gb, half)
        .param(p::OP, op)
        .param(p::PATTERN, "seq")
        .param(p::ACCESS_BYTES, 4096)
        .param(p::THREADS, threads)
        .param(p::MIX, "")
}

fn latency(target: &str, pattern: &str, ns: f64, half: f64) -> Record {
    point("latency", target, ns, half)
        .param(p::PATTERN, pattern)
        .param(p::WORKING_SET_BYTES, 1u64 << 26)
}

/// A loaded-latency curve: the idle probe, then (traffic GB/s, probe ns) points.
fn loaded(target: &str, idle: f64, points: &[(f64, f64)]) -> Vec<Record> {
    let probe = |ns: f64, threads: u64, gb: f64| {
        point("loaded", target, ns, ns * 0.02)
            .param(p::TRAFFIC_THREADS, threads)
            .param(p::TRAFFIC_RW, "1:0")
            .value(v::TRAFFIC_GB_S, gb)
    };
    std::iter::once(probe(idle, 0, 0.0))
        .chain(points.iter().map(|&(gb, ns)| probe(ns, 1, gb)))
        .collect()
}

fn observe(records: Vec<Record>) -> Vec<Observation> {
    observations(&[Run {
        label: "run".into(),
        records,
    }])
}

fn of_kind<'a>(obs: &'a [Observation], kind: &str) -> Vec<&'a Observation> {
    obs.iter().filter(|o| o.kind == kind).collect()
}

/// One scenario per implausible relation: the records that show it on a busy machine.
fn scenarios() -> Vec<(&'static str, Vec<Record>)> {
    vec![
        (
            "flush-cheaper-than-store",
            vec![
                busy(inst("dram:4k", "store", "none", 96.2, 3.0), 3.2),
                busy(
                    inst("dram:4k", "store+clflushopt", "sfence", 29.2, 1.0),
                    5.1,
                ),
            ],
        ),
        (
            "dram-read-under-half-write",
            vec![
                busy(bandwidth("dram:4k", "read", 1, 9.15, 0.2), 4.0),
                busy(bandwidth("dram:4k", "ntstore", 1, 29.99, 0.5), 4.4),
            ],
        ),
        (
            "latency-doubles-at-negligible-traffic",
            loaded(
                "dram:4k",
                90.0,
                &[(0.03, 95.0), (0.07, 200.0), (18.0, 210.0)],
            )
            .into_iter()
            .map(|r| busy(r, 3.5))
            .collect(),
        ),
        (
            "random-faster-than-sequential",
            vec![
                busy(latency("dram:4k", "rand", 20.0, 0.5), 3.0),
                busy(latency("dram:4k", "seq", 80.0, 1.0), 3.0),
            ],
        ),
        // Seen on a 2-core VM at load 8: 2.6 µs per random load over 1 GiB.
        (
            "dram-load-over-a-microsecond",
            vec![
                busy(latency("dram:4k", "rand", 2608.5, 800.0), 8.1),
                busy(latency("dram:4k", "seq", 17.8, 1.0), 8.0),
            ],
        ),
    ]
}

/// Every relation of the table has a scenario, and each scenario's relation is reported as
/// suspect with its figures, the reason and the load its points saw — and never as a
/// finding. Adding a rule to the table without a scenario fails here.
#[test]
fn every_implausible_relation_is_suspect_with_its_evidence_never_a_finding() {
    let scenarios = scenarios();
    let names: Vec<&str> = scenarios.iter().map(|s| s.0).collect();
    let table: Vec<&str> = IMPLAUSIBLE.iter().map(|i| i.name).collect();
    assert_eq!(names, table, "one scenario per implausible relation");
    for (rule, (name, records)) in IMPLAUSIBLE.iter().zip(scenarios) {
        let obs = observe(records);
        let mine = of_kind(&obs, rule.kind);
        assert_eq!(mine.len(), 1, "{name}: {obs:#?}");
        let o = mine[0];
        assert_eq!(o.verdict, Verdict::Suspect, "{name}: {o:#?}");
        assert!(
            o.text.starts_with("suspect: measurement disturbed — ")
                && o.text.contains(rule.why)
                && o.text.contains("Evidence: load ")
                && o.text.contains("busy-machine on "),
            "{name}: {}",
            o.text
        );
    }
}

/// The three statements from a `suite basic` run at load 3-5, on synthetic
/// records: the report states none of them as a finding, and shows each as suspect.
#[test]
fn a_busy_suite_basic_run_states_no_implausible_relation_as_a_finding() {
    let records: Vec<Record> = scenarios().into_iter().take(3).flat_map(|s| s.1).collect();
    let obs = observe(records.clone());
    let suspect: Vec<&str> = obs
        .iter()
        .filter(|o| o.verdict == Verdict::Suspect)
        .map(|o| o.kind)
        .collect();
    assert_eq!(
        suspect,
        [
            "read-write-asymmetry",
            "persist-cost",
            "loaded-latency-doubles"
        ],
        "{obs:#?}"
    );
    let persist = of_kind(&obs, "persist-cost")[0];
    assert!(
        persist.text.contains(
            "store+clflushopt+sfence takes 29.2 ns [28.2–30.2], 0.30× a plain store (96.2 ns [93.2–99.2])"
        ) && persist.text.contains("Evidence: load 3.2–5.1, busy-machine on 2 of 2 points"),
        "{}",
        persist.text
    );
    let page = html(
        &[Run {
            label: "busy".into(),
            records,
        }],
        &Options::default(),
    );
    for finding in [
        "0.30× a plain store",
        "0.31× the peak write",
        "at about 0.0",
    ] {
        for (i, _) in page.match_indices(finding) {
            let line_start = page[..i].rfind("<li").max(page[..i].rfind("<p"));
            let line = &page[line_start.unwrap()..i];
            assert!(line.contains("suspect: measurement disturbed"), "{line}");
        }
    }
    assert!(page.contains("Suspect observations</b>: 3"));
}

/// The same relations, physically plausible, are findings; and a relation the intervals
/// cannot resolve is called indistinguishable, not stated (nor suspected).
#[test]
fn plausible_relations_are_findings_and_overlapping_ones_are_ties() {
    let obs = observe(vec![
        inst("dram:4k", "store", "none", 30.0, 1.0),
        inst("dram:4k", "store+clwb", "sfence", 60.0, 1.0),
        inst("dram:4k", "store+clflushopt", "sfence", 29.0, 4.0),
        inst("dram:4k", "ntstore", "sfence", 20.0, 1.0),
    ]);
    let texts: Vec<(&str, Verdict)> = of_kind(&obs, "persist-cost")
        .iter()
        .map(|o| (o.text.as_str(), o.verdict))
        .collect();
    assert_eq!(texts.len(), 3, "{texts:#?}");
    assert!(texts[0].0.contains("store+clflushopt+sfence and a plain store are indistinguishable within the noise (29.0 ns [25.0–33.0] vs 30.0 ns [29.0–31.0])"));
    assert_eq!(texts[0].1, Verdict::Indistinguishable);
    assert!(
        texts[1]
            .0
            .contains("store+clwb+sfence takes 60.0 ns [59.0–61.0], 2.00× a plain store")
    );
    assert_eq!(texts[1].1, Verdict::Finding);
    // A non-temporal store skips the cache: cheaper than a cached store is possible.
    assert_eq!(texts[2].1, Verdict::Finding, "{}", texts[2].0);

    // Read under half of write is possible on pmem (devdax) and on a bound node (far
    // memory may be behind it): findings there.
    for target in ["devdax:/dev/dax0.0", "dram:4k,node=1"] {
        let obs = observe(vec![
            bandwidth(target, "read", 1, 9.15, 0.2),
            bandwidth(target, "ntstore", 1, 29.99, 0.5),
        ]);
        let o = of_kind(&obs, "read-write-asymmetry");
        assert_eq!(o[0].verdict, Verdict::Finding, "{target}: {o:#?}");
    }

    // Latency doubling at 14 GB/s of 20 is what memory does.
    let obs = observe(loaded(
        "dram:4k",
        90.0,
        &[(3.0, 95.0), (14.0, 200.0), (18.0, 300.0)],
    ));
    let o = of_kind(&obs, "loaded-latency-doubles");
    assert_eq!(o[0].verdict, Verdict::Finding, "{o:#?}");
    assert!(o[0].text.contains("at about 11.90"), "{}", o[0].text);

    let obs = observe(vec![
        latency("dram:4k", "rand", 80.0, 1.0),
        latency("dram:4k", "seq", 78.0, 2.0),
    ]);
    let o = of_kind(&obs, "rand-seq-latency");
    assert_eq!(o[0].verdict, Verdict::Indistinguishable, "{o:#?}");
}

/// Points measured once have no interval: nothing is stated about them. Single timings a
/// timer step apart are the same figure.
#[test]
fn no_interval_no_finding_and_one_timer_step_is_no_difference() {
    let once = |mut r: Record| {
        r.precision = None;
        r
    };
    let obs = observe(vec![
        once(latency("dram:4k", "rand", 80.0, 1.0)),
        once(latency("dram:4k", "seq", 20.0, 1.0)),
    ]);
    assert!(obs.is_empty(), "{obs:#?}");

    let stepped = |r: Record| {
        let mut r = r;
        let p = r.precision.as_mut().unwrap();
        p.step = Some(10.0);
        r
    };
    let obs = observe(vec![
        stepped(inst("dram:4k", "store", "none", 30.0, 0.0)),
        stepped(inst("dram:4k", "store+clwb", "sfence", 40.0, 0.0)),
    ]);
    let o = of_kind(&obs, "persist-cost");
    assert_eq!(o[0].verdict, Verdict::Indistinguishable, "{o:#?}");
}
