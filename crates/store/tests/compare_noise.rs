//! The statistics of `compare` on simulated runs: A/A pairs must stay quiet, real
//! differences must be found, and a point the data cannot judge must say so. Every run is
//! drawn from a seeded xorshift generator, so each test sees the same numbers every time;
//! nothing is timed.
//!
//! The simulated machine is the one `bench/aa-compare.sh` measured (an Intel Xeon KVM
//! guest): 84 points in three groups of 28 (latencies, bandwidths, instruction timings),
//! each measured in blocks. A block's median moves from the point's true value by the
//! host's state in that round (shared by every point of the round, 2 %) and by the point's
//! own spread between blocks: 3 % for most points, 8 % for some, 40 % for a few (the
//! stores whose write-back the host sometimes makes wait). Inside a block the repetitions
//! agree to ±1 %: an interval from repetitions would be far too narrow for a comparison
//! between runs, which is why the blocks are what is compared.

use pmscope_core::blocks::{Block, merge};
use pmscope_core::precision::Precision;
use pmscope_core::record::{Record, SystemSummary};
use pmscope_core::summary::Summary;
use pmscope_store::{Comparison, Settings, Verdict, compare_records};

struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

const POINTS_PER_GROUP: usize = 28;
const BLOCKS: usize = 5;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Latency,
    Bandwidth,
    Timing,
}

/// A point of the simulated machine: its true median and the standard deviation of ln of
/// a block's median around it.
#[derive(Clone, Copy)]
struct Point {
    kind: Kind,
    index: usize,
    median: f64,
    spread: f64,
}

fn machine() -> Vec<Point> {
    let mut points = Vec::new();
    for index in 0..POINTS_PER_GROUP {
        let spread = match index % 9 {
            4 => 0.08,
            7 if index > 20 => 0.4,
            _ => 0.03,
        };
        for (kind, median) in [
            (Kind::Latency, 50.0 + 10.0 * index as f64),
            (Kind::Bandwidth, 2.0 + 0.5 * index as f64),
            (Kind::Timing, 30.0 + 25.0 * index as f64),
        ] {
            points.push(Point {
                kind,
                index,
                median,
                spread,
            });
        }
    }
    points
}

/// The record of one block of `point` whose median came out at `median`: ten repetitions
/// agreeing to ±1 %, with their interval.
fn block_record(point: &Point, median: f64) -> Record {
    let (experiment, metric) = match point.kind {
        Kind::Latency => ("latency", "latency_ns"),
        Kind::Bandwidth => ("bandwidth", "bandwidth_gb_s"),
        Kind::Timing => ("inst", "latency_ns"),
    };
    let mut r = Record::new(experiment, vec![], SystemSummary::default());
    r.params.insert("point".into(), point.index.into());
    r.metric = Some(metric.into());
    let reps: Vec<f64> = (0..10)
        .map(|i| median * (1.0 + (i as f64 - 4.5) * 0.002))
        .collect();
    r.summary = Summary::of(&reps);
    r.precision = Precision::of(&reps, Some(0.03));
    r
}

/// One run of the simulated machine in `blocks` blocks, its points merged over them as the
/// harness merges them; `change` scales a point's true median (1: as is).
fn run(
    rng: &mut Rng,
    points: &[Point],
    blocks: usize,
    change: impl Fn(&Point) -> f64,
) -> Vec<Record> {
    let rounds: Vec<f64> = (0..blocks).map(|_| 0.02 * rng.normal()).collect();
    points
        .iter()
        .map(|p| {
            let parts = rounds
                .iter()
                .map(|round| {
                    let m = p.median * change(p) * (round + p.spread * rng.normal()).exp();
                    (block_record(p, m), None)
                })
                .collect();
            merge(parts, Some(0.03))
        })
        .collect()
}

fn called(c: &Comparison) -> usize {
    c.count(Verdict::Better) + c.count(Verdict::Worse) + c.count(Verdict::Changed)
}

/// Over `pairs` simulated A/A pairs of `runs` runs a side: (share of points called, share
/// of pairs whose gate at 10 % passed, share of points that resolve 10 %).
fn aa_rates(pairs: usize, runs: usize) -> (f64, f64, f64) {
    let points = machine();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut calls, mut compared, mut passed, mut resolved) = (0, 0, 0, 0);
    for _ in 0..pairs {
        let side = |rng: &mut Rng| -> Vec<Record> {
            (0..runs)
                .flat_map(|_| run(rng, &points, BLOCKS, |_| 1.0))
                .collect()
        };
        let (a, b) = (side(&mut rng), side(&mut rng));
        let c = compare_records(&a, &b, true, &Settings::default());
        assert_eq!(c.points.len(), points.len());
        calls += called(&c);
        compared += c.points.len();
        passed += usize::from(c.worse_than(10.0).count() == 0);
        resolved += c.points.iter().filter(|p| p.detectable_pct <= 10.0).count();
    }
    let n = compared as f64;
    (
        calls as f64 / n,
        passed as f64 / pairs as f64,
        resolved as f64 / n,
    )
}

/// A/A: at most 5 % of the points called and the gate passes in at least 90 % of pairs,
/// although inside each block the repetitions agree to ±1 % (a comparison of intervals
/// from repetitions, or of block medians pooled into one sample, calls dozens of points a
/// pair). With one run a side of 5 blocks, a point spreading 3.6 % between blocks (its 3 %
/// and the rounds' 2 %) has a standard error of 2.3 % and resolves about 11 % at Holm's
/// level over 84 points: a minority of points resolve 10 %.
#[test]
fn an_aa_comparison_calls_almost_nothing() {
    let (call_rate, pass_rate, resolved) = aa_rates(200, 1);
    assert!(
        call_rate <= 0.01,
        "{:.2} % of points called",
        call_rate * 100.0
    );
    assert!(
        pass_rate >= 0.9,
        "gate passed in {:.0} %",
        pass_rate * 100.0
    );
    assert!(
        (0.1..0.6).contains(&resolved),
        "{:.0} % resolve 10 %",
        resolved * 100.0
    );
}

/// Several runs a side pool their blocks: three runs each resolve a 10 % change at every
/// point but the wild ones, and stay as quiet.
#[test]
fn pooling_runs_resolves_more() {
    let (call_rate, pass_rate, resolved) = aa_rates(40, 3);
    let (_, _, resolved_one) = aa_rates(40, 1);
    assert!(
        call_rate <= 0.01 && pass_rate >= 0.9,
        "{call_rate} {pass_rate}"
    );
    assert!(
        resolved > resolved_one + 0.1,
        "{resolved} vs {resolved_one} with one run"
    );
    assert!(resolved >= 0.85, "{resolved}");
}

/// Power: six latencies 40 % slower (none of the wild ones) are each called worse in
/// nearly every simulated pair; hardly anything else is.
#[test]
fn a_few_points_forty_percent_slower_are_called_worse() {
    let points = machine();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let slower = |p: &Point| p.kind == Kind::Latency && p.index % 4 == 3 && p.index < 24;
    let (mut found, mut wrong) = (0, 0);
    let pairs = 50;
    for _ in 0..pairs {
        let a = run(&mut rng, &points, BLOCKS, |_| 1.0);
        let b = run(
            &mut rng,
            &points,
            BLOCKS,
            |p| if slower(p) { 1.4 } else { 1.0 },
        );
        let c = compare_records(&a, &b, true, &Settings::default());
        for p in &c.points {
            let i = p.params["point"].as_u64().unwrap() as usize;
            let is_slower = p.experiment == "latency" && slower(&points[3 * i]);
            match (is_slower, p.verdict) {
                (true, Verdict::Worse) => found += 1,
                (false, Verdict::Worse | Verdict::Better) => wrong += 1,
                _ => {}
            }
        }
    }
    assert!(
        found as f64 >= 0.9 * (6 * pairs) as f64,
        "{found} of {}",
        6 * pairs
    );
    assert!(wrong <= pairs / 5, "{wrong} unchanged points called");
}

/// Power: every bandwidth 20 % lower (a competing memory-bound load) is called worse at
/// the quiet points and fails the gate; none is called better.
#[test]
fn a_uniform_bandwidth_loss_is_called_worse() {
    let points = machine();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let (mut quiet, mut found) = (0, 0);
    for _ in 0..20 {
        let a = run(&mut rng, &points, BLOCKS, |_| 1.0);
        let b = run(&mut rng, &points, BLOCKS, |p| {
            if p.kind == Kind::Bandwidth { 0.8 } else { 1.0 }
        });
        let c = compare_records(&a, &b, true, &Settings::default());
        for p in c.points.iter().filter(|p| p.experiment == "bandwidth") {
            let point = &points[3 * p.params["point"].as_u64().unwrap() as usize + 1];
            assert_ne!(p.verdict, Verdict::Better, "{p:?}");
            if point.spread <= 0.03 {
                quiet += 1;
                found += usize::from(p.verdict == Verdict::Worse);
            }
        }
        assert!(c.worse_than(10.0).count() > 0);
        let group = c
            .groups
            .iter()
            .find(|g| g.experiment == "bandwidth")
            .unwrap();
        assert!((group.median_change_pct + 20.0).abs() < 3.0, "{group:?}");
    }
    assert!(found as f64 >= 0.97 * quiet as f64, "{found} of {quiet}");
}

/// Each group states its resolution: the change a typical point would have been called at,
/// from the spread of its blocks, and how many of its points resolve the wanted change.
#[test]
fn each_group_states_its_resolution() {
    let points = machine();
    let mut rng = Rng(5);
    let a = run(&mut rng, &points, BLOCKS, |_| 1.0);
    let b = run(&mut rng, &points, BLOCKS, |_| 1.0);
    let c = compare_records(&a, &b, true, &Settings::default());
    for g in &c.groups {
        assert_eq!(g.blocks, [BLOCKS, BLOCKS]);
        assert_eq!(g.points, POINTS_PER_GROUP);
        // Most points spread 3.6 %: a standard error of about 2.3 % (√(2/5) of the spread),
        // resolved at 8-15 % with Holm's level over 84 points.
        assert!((8.0..15.0).contains(&g.typical_detectable_pct), "{g:?}");
        assert!((3.0..4.5).contains(&g.block_spread_pct), "{g:?}");
        assert!(
            g.resolved_share < 1.0,
            "the wild points never resolve: {g:?}"
        );
    }
    let text = pmscope_store::compare::table(&c, true, false);
    assert!(
        text.contains("resolution latency latency_ns: resolves"),
        "{text}"
    );
}

/// A record of one block (written before blocks, or `--blocks 1`) alone on each side has
/// no spread: untestable unless its group lends it one; several runs a side give it one.
#[test]
fn one_block_a_side_needs_its_group_or_more_runs() {
    let p = Point {
        kind: Kind::Latency,
        index: 0,
        median: 100.0,
        spread: 0.03,
    };
    let one = |m: f64| vec![block_record(&p, m)];
    let c = compare_records(&one(100.0), &one(101.0), true, &Settings::default());
    let v = &c.points[0];
    assert_eq!(v.verdict, Verdict::NotResolvable, "{v:?}");
    assert!(
        v.unresolved_because
            .as_deref()
            .unwrap()
            .contains("one block a side"),
        "{v:?}"
    );
    // Four runs a side of one block each: their spread judges them.
    let runs = |ms: &[f64]| -> Vec<Record> { ms.iter().map(|&m| block_record(&p, m)).collect() };
    let c = compare_records(
        &runs(&[100.0, 103.0, 98.0, 101.0]),
        &runs(&[150.0, 155.0, 147.0, 152.0]),
        true,
        &Settings::default(),
    );
    assert_eq!(c.points[0].verdict, Verdict::Worse, "{:?}", c.points[0]);
    assert_eq!(c.points[0].noise.runs, [4, 4]);
    // One block a side among points of its group measured in five: the group's spread
    // judges it, and 40 % slower is called.
    let mut rng = Rng(7);
    let group: Vec<Point> = (1..30)
        .map(|index| Point {
            index,
            median: 100.0 + index as f64,
            ..p
        })
        .collect();
    let (mut a, mut b) = (
        run(&mut rng, &group, 5, |_| 1.0),
        run(&mut rng, &group, 5, |_| 1.0),
    );
    a.push(block_record(&p, 100.0));
    b.push(block_record(&p, 140.0));
    let c = compare_records(&a, &b, true, &Settings::default());
    let lone = c.points.iter().find(|v| v.params["point"] == 0).unwrap();
    assert_eq!(lone.verdict, Verdict::Worse, "{lone:?}");
}

/// Two targets of one run are paired block by block: a change the host made to both in
/// each round cancels, so a 12 % difference is found that unpaired blocks would lose.
#[test]
fn two_targets_of_one_run_are_paired_by_block() {
    let mut rng = Rng(77);
    let (mut paired_found, mut unpaired_found) = (0, 0);
    for _ in 0..20 {
        let rounds: Vec<f64> = (0..BLOCKS).map(|_| 0.08 * rng.normal()).collect();
        let target = |factor: f64, rng: &mut Rng| -> Vec<Record> {
            (0..POINTS_PER_GROUP)
                .map(|i| {
                    let p = Point {
                        kind: Kind::Latency,
                        index: i,
                        median: 100.0 * factor,
                        spread: 0.01,
                    };
                    let parts = rounds
                        .iter()
                        .map(|round| {
                            let m = p.median * (round + 0.01 * rng.normal()).exp();
                            (block_record(&p, m), None)
                        })
                        .collect();
                    merge(parts, Some(0.03))
                })
                .collect()
        };
        let a = target(1.0, &mut rng);
        let b = target(1.12, &mut rng);
        // Two targets of one run (`--targets`: points matched without their target).
        let paired = compare_records(&a, &b, false, &Settings::default());
        assert!(paired.points.iter().all(|p| p.noise.paired));
        paired_found += paired.count(Verdict::Worse);
        // The same blocks as two runs (nothing pairs them): the rounds' 8 % is spread.
        let unpaired = compare_records(&a, &b, true, &Settings::default());
        unpaired_found += unpaired.count(Verdict::Worse);
    }
    assert!(paired_found >= 19 * POINTS_PER_GROUP, "{paired_found}");
    assert!(unpaired_found < paired_found / 4, "{unpaired_found}");
}

/// The wanted resolution decides between `within noise` and `not resolvable`, never
/// whether a point is called.
#[test]
fn the_wanted_resolution_only_labels_what_was_not_found() {
    let points = machine();
    let mut rng = Rng(99);
    let a = run(&mut rng, &points, BLOCKS, |_| 1.0);
    let b = run(&mut rng, &points, BLOCKS, |_| 1.0);
    let strict = Settings {
        wanted_pct: 1.0,
        ..Settings::default()
    };
    let lax = Settings {
        wanted_pct: 1000.0,
        ..Settings::default()
    };
    let (s, l) = (
        compare_records(&a, &b, true, &strict),
        compare_records(&a, &b, true, &lax),
    );
    assert_eq!(called(&s), called(&l));
    assert_eq!(s.count(Verdict::WithinNoise), 0);
    assert_eq!(l.count(Verdict::NotResolvable), 0);
}

/// The figures compared are each side's geometric mean of block medians, and the blocks
/// are what the record carries.
#[test]
fn a_side_is_the_geometric_mean_of_its_blocks() {
    let p = Point {
        kind: Kind::Latency,
        index: 0,
        median: 100.0,
        spread: 0.0,
    };
    let merged = |ms: &[f64]| {
        merge(
            ms.iter().map(|&m| (block_record(&p, m), None)).collect(),
            Some(0.03),
        )
    };
    let a = merged(&[50.0, 200.0, 100.0]);
    let b = merged(&[100.0, 100.0, 100.0]);
    assert_eq!(
        a.blocks
            .iter()
            .map(|b: &Block| b.median)
            .collect::<Vec<_>>(),
        [50.0, 200.0, 100.0]
    );
    let c = compare_records(&[a], &[b], true, &Settings::default());
    assert!((c.points[0].median_a - 100.0).abs() < 1e-9);
    assert!((c.points[0].ratio - 1.0).abs() < 1e-9);
}

/// A run measured beside other work is worse for a reason that is the machine's: the
/// comparison still calls its points (they were measured so), and says which side ran
/// crowded, on how many points, and how crowded, in the data and in the table.
#[test]
fn other_work_beside_one_side_is_named() {
    let points = machine();
    let mut rng = Rng(0x0bad_cafe_f00d_0001);
    let crowded = |mut r: Record, pct: f64| {
        r.values.insert("other_cpu_pct".into(), pct);
        r
    };
    let a: Vec<Record> = run(&mut rng, &points, BLOCKS, |_| 1.0)
        .into_iter()
        .map(|r| crowded(r, 2.0))
        .collect();
    let b: Vec<Record> = run(&mut rng, &points, BLOCKS, |p| {
        if p.kind == Kind::Bandwidth { 0.7 } else { 1.0 }
    })
    .into_iter()
    .enumerate()
    .map(|(i, r)| {
        crowded(
            r,
            if i % 3 == 1 {
                98.0 + i as f64 / 10.0
            } else {
                5.0
            },
        )
    })
    .collect();
    let c = compare_records(&a, &b, true, &Settings::default());
    assert!(
        c.count(Verdict::Worse) > 15,
        "still called worse: {}",
        c.count(Verdict::Worse)
    );
    assert_eq!(c.other_work[0].crowded, 0);
    assert_eq!(c.other_work[0].known, points.len());
    assert_eq!(c.other_work[1].crowded, POINTS_PER_GROUP);
    assert!((c.other_work[1].max_pct - 106.2).abs() < 1e-9);
    let text = pmscope_store::compare::table(&c, true, false);
    assert!(
        text.contains("other work: 28 of 84 compared point(s) of B were measured while other processes used more than 30% of a CPU (up to 106%)"),
        "{text}"
    );
    assert!(!text.contains("of A were measured"), "{text}");
}
