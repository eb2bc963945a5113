//! Repetitions of a point until its median is known well enough, as hyperfine and criterion
//! repeat a benchmark: the first repetition warms caches, TLBs, pages and the clock and is
//! dropped; then at least `min` are kept, and more while the 95 % interval of their median
//! is wider than the target (`--precision`) and the time budget lasts.
//!
//! A repetition the machine disturbed — the process got less CPU than its busy threads
//! needed, the hypervisor stole time from the workers' CPUs, or other work ran on the
//! machine's other CPUs (sharing its caches and memory) — tells about the other work, not
//! the memory: it is measured again rather than averaged in. A [`Watch`] judges
//! each repetition; [`SystemWatch`] reads the process CPU clock and `/proc/stat`, tests
//! hand the driver a scripted one.

use crate::interrupt::{self, Interrupted};
use anyhow::Result;
use pmscope_core::precision::Precision;
use pmscope_core::record::Record;
use pmscope_core::vocab::v;
use pmscope_sys::sysroot::SysRoot;
use std::time::{Duration, Instant};

/// How often a point is repeated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatPolicy {
    /// Repetitions kept at least (the experiment's `--reps`), after the dropped warm-up.
    pub min: usize,
    /// Relative half-width of the 95 % interval of the median to reach (0.03 for ±3 %);
    /// `None`: exactly `min` repetitions, none measured again.
    pub target: Option<f64>,
    /// After the first `min` repetitions, continue for at most this many times the time
    /// they took.
    pub budget_factor: f64,
    /// Repetitions measured at most (kept and disturbed together), whatever the budget.
    pub max: usize,
    /// Whether a disturbed repetition is measured again (within the budget) rather than
    /// kept and counted.
    pub remeasure: bool,
}

impl RepeatPolicy {
    /// The precision asked for when `--precision` is not given: ±3 %.
    pub const DEFAULT_TARGET: f64 = 0.03;

    /// At least `min` repetitions (one if 0), more until `target` is met or 4x the time of
    /// the first `min` is spent, at most max(10 x min, 50).
    pub fn new(min: usize, target: Option<f64>) -> RepeatPolicy {
        let min = min.max(1);
        RepeatPolicy {
            min,
            target,
            budget_factor: 4.0,
            max: (10 * min).max(50),
            remeasure: target.is_some(),
        }
    }

    /// One block's share of a point measured in blocks: exactly `min` repetitions kept (the
    /// point's precision is judged over its blocks, not here), a disturbed one measured
    /// again within the same budget.
    pub fn block(min: usize) -> RepeatPolicy {
        RepeatPolicy {
            remeasure: true,
            ..RepeatPolicy::new(min, None)
        }
    }

    /// The same target, but exactly `min` repetitions (synthetic values of the null
    /// executor gain nothing from more).
    pub fn without_adapting(self) -> RepeatPolicy {
        RepeatPolicy {
            max: self.min,
            remeasure: false,
            ..self
        }
    }

    /// Whether a disturbed repetition is measured again (with a target), or kept and
    /// counted (a fixed number of repetitions).
    fn remeasures(&self) -> bool {
        self.remeasure
    }
}

/// What a [`Watch`] saw of one repetition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Its wall time.
    pub wall: Duration,
    /// Whether other work or the hypervisor took the CPUs it needed.
    pub disturbed: bool,
}

/// The state of the machine while a point was measured, as its record carries it
/// (`steal_pct`, `cpu_share`, `load_avg`); each `None` where it could not be measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Conditions {
    /// Stolen time on the workers' CPUs, % of the wall time from the first repetition's
    /// start to the last one's end (`None` under 200 ms: ticks are 10 ms).
    pub steal_pct: Option<f64>,
    /// Process CPU time / (wall time x busy threads) over the repetitions.
    pub cpu_share: Option<f64>,
    /// The 1-minute load average at the end of the point.
    pub load_avg: Option<f64>,
    /// CPU time other processes ran anywhere on the machine, % of the wall time from the
    /// first repetition's start to the last one's end (100: one CPU's worth of other work
    /// throughout; `None` under 200 ms).
    pub other_cpu_pct: Option<f64>,
}

impl Conditions {
    /// `r` with these figures as values.
    pub fn annotate(&self, mut r: Record) -> Record {
        for (key, x) in [
            (v::STEAL_PCT, self.steal_pct),
            (v::CPU_SHARE, self.cpu_share),
            (v::LOAD_AVG, self.load_avg),
            (v::OTHER_CPU_PCT, self.other_cpu_pct),
        ] {
            if let Some(x) = x.filter(|x| x.is_finite()) {
                r = r.value(key, x);
            }
        }
        r
    }
}

/// Judges repetitions: called around each one the driver keeps or re-measures (not the
/// warm-up).
pub trait Watch {
    /// A repetition starts.
    fn begin(&mut self);
    /// The repetition begun last has ended: how long it took, and whether it was disturbed.
    fn end(&mut self) -> Observation;
    /// The machine's state over every repetition watched so far.
    fn conditions(&self) -> Conditions;
    /// `Err` once the run is to stop (Ctrl-C, SIGTERM).
    fn interrupted(&self) -> Result<(), Interrupted> {
        interrupt::check()
    }
}

/// The kept repetitions of a point and how precisely they give its median.
#[derive(Debug, Clone, PartialEq)]
pub struct Repeated<T> {
    /// The repetitions kept, in the order measured.
    pub kept: Vec<T>,
    /// The 95 % interval of the median of their values, the repetitions measured again,
    /// and whether the target was met; `None` without any repetition.
    pub precision: Option<Precision>,
    /// The machine's state while they ran.
    pub conditions: Conditions,
}

impl<T> Repeated<T> {
    /// The same repetitions, each turned into `f` of it (the figure a record summarises).
    pub fn map<U>(&self, f: impl Fn(&T) -> U) -> Repeated<U> {
        Repeated {
            kept: self.kept.iter().map(f).collect(),
            precision: self.precision.clone(),
            conditions: self.conditions,
        }
    }

    /// `r` with the precision and the machine's state of this point.
    pub fn annotate(&self, mut r: Record) -> Record {
        r.precision = self.precision.clone();
        self.conditions.annotate(r)
    }
}

impl Repeated<f64> {
    /// Values that were not measured by repeating (the null executor's synthetic ones):
    /// their interval against `target`, nothing disturbed, no machine state.
    pub fn fixed(values: Vec<f64>, target: Option<f64>) -> Repeated<f64> {
        Repeated {
            precision: Precision::of(&values, target),
            kept: values,
            conditions: Conditions::default(),
        }
    }
}

/// Runs `rep(i)` as `policy` says: `rep(0)` warms up and is dropped; each later repetition
/// is judged by `watch` and, if disturbed, measured again (with a target) or kept and
/// counted (without). With a target, repetitions continue after `min` kept ones until the
/// 95 % interval of the median of their `value`s is within it, `budget_factor` times the
/// time of the first `min` is spent, or `max` are measured. If disturbance lasts until the
/// budget ends, the undisturbed repetitions are kept if there are `min` of them, else all
/// (then the target counts as missed, however narrow their interval).
/// Stops between repetitions when `watch` reports an interrupt.
pub fn repeat<T, W: Watch + ?Sized>(
    policy: &RepeatPolicy,
    watch: &mut W,
    value: impl Fn(&T) -> f64,
    mut rep: impl FnMut(usize) -> Result<T>,
) -> Result<Repeated<T>> {
    watch.interrupted()?;
    rep(0)?;
    let (mut kept, mut set_aside) = (Vec::new(), Vec::new());
    let (mut measured, mut disturbed) = (0usize, 0usize);
    let (mut spent, mut base) = (Duration::ZERO, None::<Duration>);
    let met = |kept: &[T]| {
        let values: Vec<f64> = kept.iter().map(&value).collect();
        Precision::of(&values, policy.target).is_some_and(|p| p.met)
    };
    loop {
        if kept.len() >= policy.min && (policy.target.is_none() || met(&kept)) {
            break;
        }
        let over_budget = base.is_some_and(|b| spent >= b.mul_f64(1.0 + policy.budget_factor));
        if measured >= policy.max || over_budget {
            break;
        }
        watch.interrupted()?;
        watch.begin();
        let r = rep(measured + 1)?;
        let seen = watch.end();
        measured += 1;
        spent += seen.wall;
        if measured == policy.min {
            base = Some(spent);
        }
        if seen.disturbed {
            disturbed += 1;
            if policy.remeasures() {
                set_aside.push(r);
                continue;
            }
        }
        kept.push(r);
    }
    // Too few undisturbed repetitions to give an interval of their own (the other work
    // lasted the budget): all of them are the point, and its spread shows the disturbance.
    let mostly_disturbed = kept.len() < policy.min && !set_aside.is_empty();
    if mostly_disturbed {
        kept.append(&mut set_aside);
    }
    let mut precision = precision_of(&kept, &set_aside, &value, policy.target, disturbed);
    if mostly_disturbed && let Some(p) = &mut precision {
        // However narrow, an interval of disturbed repetitions measures the other work.
        p.met = false;
    }
    Ok(Repeated {
        kept,
        precision,
        conditions: watch.conditions(),
    })
}

/// The interval of the kept values' median with the disturbed count; a single kept value
/// has no interval, so it is given the range of everything measured (the disturbed values
/// set aside included) and the target is not met.
fn precision_of<T>(
    kept: &[T],
    set_aside: &[T],
    value: &impl Fn(&T) -> f64,
    target: Option<f64>,
    disturbed: usize,
) -> Option<Precision> {
    let values: Vec<f64> = kept.iter().map(value).collect();
    let mut p = match Precision::of(&values, target) {
        Some(p) => p,
        None => {
            let all: Vec<f64> = values
                .iter()
                .copied()
                .chain(set_aside.iter().map(value))
                .filter(|x| !x.is_nan())
                .collect();
            let (low, high) = all
                .iter()
                .fold(None, |acc: Option<(f64, f64)>, &x| match acc {
                    None => Some((x, x)),
                    Some((l, h)) => Some((l.min(x), h.max(x))),
                })?;
            Precision {
                low,
                high,
                n: values.len(),
                disturbed: 0,
                target,
                met: false,
                step: None,
            }
        }
    };
    p.disturbed = disturbed;
    Some(p)
}

/// The interval of a point that is the median of individually timed samples (not of
/// repetitions): `step` is the timer's step in the metric's unit, so that an interval no
/// wider than what the timer resolves counts as met.
pub fn sample_precision(samples: &[f64], target: Option<f64>, step: f64) -> Option<Precision> {
    let mut p = Precision::of(samples, target)?;
    if step.is_finite() && step > 0.0 {
        p.step = Some(step);
        let mut sorted = samples.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        p.met = p.within(
            pmscope_core::summary::percentile_sorted(&sorted, 50.0),
            target,
        );
    }
    Some(p)
}

/// What the workers of a repetition do, for the CPU-share test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// This many threads compute or wait on memory for the whole repetition: together
    /// they should get this many CPUs' worth of time.
    Busy(usize),
    /// The threads block by design (file I/O, a child process, a server's clients): only
    /// stolen time is judged.
    Waiting,
}

/// A repetition is disturbed when the process got less than this share of the CPU time
/// its busy threads needed.
pub const CPU_SHARE_FLOOR: f64 = 0.9;
/// ... or when more than this share of the workers' CPU time was stolen.
pub const STEAL_CEILING: f64 = 0.02;
/// Repetitions shorter than this skip the CPU-share test: starting and joining the
/// workers is a visible part of them.
pub const SHARE_TEST_FLOOR: Duration = Duration::from_millis(2);
/// ... or when other processes ran for more than this share of one CPU on the machine:
/// on a small machine the other CPUs share the last-level cache and the memory
/// controllers with the workers (a memory-bound job on the second vCPU of a 2-vCPU guest
/// took 30 % off single-thread bandwidth here), while a few percent of daemons do not.
pub const OTHER_WORK_CEILING: f64 = 0.3;
/// Other work is judged over at least this much wall time: `/proc/stat` counts in ticks
/// of 10 ms per CPU, so a shorter window cannot tell a daemon's tick from a busy CPU. A
/// shorter repetition is judged over the window ending with it.
pub const OTHER_WORK_WINDOW: Duration = Duration::from_millis(200);

/// Other processes' CPU time over a window of wall time (see [`OTHER_WORK_WINDOW`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OtherWork {
    /// CPU time of everything that ran on the machine in the window, minus this process's.
    pub cpu: Duration,
    /// The window's wall time.
    pub over: Duration,
}

impl OtherWork {
    /// Whether this much other work disturbs a measurement.
    fn disturbs(&self) -> bool {
        self.over >= OTHER_WORK_WINDOW
            && self.cpu.as_secs_f64() > OTHER_WORK_CEILING * self.over.as_secs_f64()
    }
}

/// Whether a repetition of `wall` was disturbed, from the process CPU time it got, the
/// time stolen from the workers' `cpus` CPUs and the other work on the machine around it
/// (each `None` when unreadable, then not judged). Other work is judged only for busy
/// workers: waiting workers are a child process or a server whose CPU time is not this
/// process's.
pub fn disturbed(
    wall: Duration,
    cpu: Option<Duration>,
    stolen: Option<Duration>,
    other: Option<OtherWork>,
    workers: Workers,
    cpus: usize,
) -> bool {
    let wall_s = wall.as_secs_f64();
    let starved = match (workers, cpu) {
        (Workers::Busy(n), Some(cpu)) if wall >= SHARE_TEST_FLOOR && n > 0 => {
            cpu.as_secs_f64() < CPU_SHARE_FLOOR * wall_s * n as f64
        }
        _ => false,
    };
    let robbed =
        stolen.is_some_and(|s| s.as_secs_f64() > STEAL_CEILING * wall_s * cpus.max(1) as f64);
    let crowded = matches!(workers, Workers::Busy(_)) && other.is_some_and(|o| o.disturbs());
    starved || robbed || crowded
}

/// One reading of the clocks a [`SystemWatch`] compares.
#[derive(Debug, Clone, Copy)]
struct Reading {
    at: Instant,
    cpu_ns: Option<u64>,
    steal_ticks: Option<u64>,
    busy_ticks: Option<u64>,
}

impl Reading {
    /// Other processes' CPU time from `self` to `later`: the machine's busy ticks minus
    /// this process's CPU time (never below zero: the ticks are coarser than the clock).
    fn other_work_until(&self, later: &Reading, ticks_per_s: Option<u64>) -> Option<OtherWork> {
        let busy = later.busy_ticks?.checked_sub(self.busy_ticks?)?;
        let own = later.cpu_ns?.checked_sub(self.cpu_ns?)?;
        let busy_s = busy as f64 / ticks_per_s? as f64;
        let other_s = (busy_s - own as f64 / 1e9).max(0.0);
        Some(OtherWork {
            cpu: Duration::from_secs_f64(other_s),
            over: later.at - self.at,
        })
    }
}

/// The [`Watch`] of real measurements: the process CPU clock against wall time, the steal
/// ticks of the workers' CPUs and the busy ticks of the whole machine in `/proc/stat`
/// (through a [`SysRoot`]). Inert under the null executor: nothing disturbed, no machine
/// state recorded.
#[derive(Debug, Clone)]
pub struct SystemWatch {
    root: SysRoot,
    cpus: Vec<usize>,
    workers: Workers,
    live: bool,
    ticks_per_s: Option<u64>,
    start: Option<Reading>,
    /// Where recent repetitions began, newest last: the window other work is judged over
    /// begins at one of them when a repetition is shorter than the window.
    recent: Vec<Reading>,
    /// The first repetition's start and the last one's end: steal and other work are
    /// recorded over this span, as one difference of tick counts (summed per repetition,
    /// the 10 ms ticks of many short repetitions would add up to nonsense).
    span: Option<(Reading, Reading)>,
    wall: Duration,
    cpu: Option<Duration>,
}

impl SystemWatch {
    /// Watches repetitions whose `workers` run on `cpus`.
    pub fn new(root: SysRoot, cpus: &[usize], workers: Workers) -> SystemWatch {
        SystemWatch {
            root,
            cpus: cpus.to_vec(),
            workers,
            live: true,
            ticks_per_s: pmscope_sys::rusage::clock_ticks_per_second(),
            start: None,
            recent: Vec::new(),
            span: None,
            wall: Duration::ZERO,
            cpu: Some(Duration::ZERO),
        }
    }

    /// A watch that judges nothing and records nothing (synthetic measurements).
    pub fn inert() -> SystemWatch {
        SystemWatch {
            live: false,
            ..SystemWatch::new(SysRoot::at("/nonexistent"), &[], Workers::Waiting)
        }
    }

    fn read(&self) -> Reading {
        Reading {
            at: Instant::now(),
            cpu_ns: pmscope_sys::rusage::process_cpu_ns(),
            steal_ticks: pmscope_sys::environment::steal_ticks(&self.root, &self.cpus),
            busy_ticks: pmscope_sys::environment::busy_ticks(&self.root),
        }
    }

    /// The other work of the window of at least [`OTHER_WORK_WINDOW`] that ends `now`: from
    /// the latest recent start that far back (`None` while no start is).
    fn other_work_window(&mut self, now: &Reading) -> Option<OtherWork> {
        let first = self
            .recent
            .iter()
            .rposition(|r| now.at - r.at >= OTHER_WORK_WINDOW)?;
        self.recent.drain(..first);
        self.recent[0].other_work_until(now, self.ticks_per_s)
    }
}

impl Watch for SystemWatch {
    fn begin(&mut self) {
        self.start = Some(if self.live {
            self.read()
        } else {
            Reading {
                at: Instant::now(),
                cpu_ns: None,
                steal_ticks: None,
                busy_ticks: None,
            }
        });
        if let Some(start) = self.start {
            self.recent.push(start);
        }
    }

    fn end(&mut self) -> Observation {
        let Some(start) = self.start.take() else {
            return Observation {
                wall: Duration::ZERO,
                disturbed: false,
            };
        };
        if !self.live {
            return Observation {
                wall: start.at.elapsed(),
                disturbed: false,
            };
        }
        let now = self.read();
        let wall = now.at - start.at;
        let cpu = match (start.cpu_ns, now.cpu_ns) {
            (Some(a), Some(b)) => Some(Duration::from_nanos(b.saturating_sub(a))),
            _ => None,
        };
        let stolen = match (start.steal_ticks, now.steal_ticks, self.ticks_per_s) {
            (Some(a), Some(b), Some(hz)) => Some(Duration::from_secs_f64(
                b.saturating_sub(a) as f64 / hz as f64,
            )),
            _ => None,
        };
        self.span = Some((self.span.map_or(start, |(first, _)| first), now));
        self.wall += wall;
        self.cpu = self.cpu.zip(cpu).map(|(t, c)| t + c);
        let window = self.other_work_window(&now);
        Observation {
            wall,
            disturbed: disturbed(wall, cpu, stolen, window, self.workers, self.cpus.len()),
        }
    }

    fn conditions(&self) -> Conditions {
        if !self.live || self.wall.is_zero() {
            return Conditions::default();
        }
        let wall = self.wall.as_secs_f64();
        // Tick counts say something only over a span of several ticks.
        let span = self
            .span
            .filter(|(first, last)| last.at - first.at >= OTHER_WORK_WINDOW);
        let steal_pct = span.and_then(|(first, last)| {
            let ticks = last.steal_ticks?.checked_sub(first.steal_ticks?)?;
            let over = (last.at - first.at).as_secs_f64() * self.cpus.len().max(1) as f64;
            Some(100.0 * ticks as f64 / self.ticks_per_s? as f64 / over)
        });
        let other_cpu_pct = span.and_then(|(first, last)| {
            let o = first.other_work_until(&last, self.ticks_per_s)?;
            Some(100.0 * o.cpu.as_secs_f64() / o.over.as_secs_f64())
        });
        Conditions {
            steal_pct,
            cpu_share: match self.workers {
                Workers::Busy(n) if n > 0 => self.cpu.map(|c| c.as_secs_f64() / (wall * n as f64)),
                _ => None,
            },
            load_avg: pmscope_sys::environment::load_average(&self.root),
            other_cpu_pct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted watch: each repetition takes `wall`, those whose number is in
    /// `disturbed` were disturbed, and an interrupt arrives after `interrupt_after`.
    struct Script {
        wall: Duration,
        disturbed: Vec<usize>,
        interrupt_after: Option<usize>,
        seen: usize,
    }

    impl Script {
        fn calm() -> Script {
            Script {
                wall: Duration::from_millis(10),
                disturbed: Vec::new(),
                interrupt_after: None,
                seen: 0,
            }
        }
    }

    impl Watch for Script {
        fn begin(&mut self) {}
        fn end(&mut self) -> Observation {
            self.seen += 1;
            Observation {
                wall: self.wall,
                disturbed: self.disturbed.contains(&self.seen),
            }
        }
        fn conditions(&self) -> Conditions {
            Conditions {
                steal_pct: Some(0.0),
                cpu_share: Some(1.0),
                load_avg: None,
                other_cpu_pct: Some(0.0),
            }
        }
        fn interrupted(&self) -> Result<(), Interrupted> {
            match self.interrupt_after {
                Some(n) if self.seen >= n => Err(Interrupted { signal: 2 }),
                _ => Ok(()),
            }
        }
    }

    /// Repetition i's value: `values[0]` for the warm-up, then the others in a cycle.
    fn from(values: &[f64]) -> impl FnMut(usize) -> Result<f64> + '_ {
        move |i| {
            Ok(if i == 0 {
                values[0]
            } else {
                values[1 + (i - 1) % (values.len() - 1)]
            })
        }
    }

    #[test]
    fn precise_values_stop_at_the_minimum() {
        let policy = RepeatPolicy::new(5, Some(0.03));
        let r = repeat(
            &policy,
            &mut Script::calm(),
            |x| *x,
            from(&[999.0, 100.0, 100.5, 99.5]),
        )
        .unwrap();
        assert_eq!(r.kept.len(), 5);
        assert!(!r.kept.contains(&999.0), "the warm-up is dropped");
        let p = r.precision.unwrap();
        assert!(
            p.met && p.n == 5 && p.disturbed == 0 && p.target == Some(0.03),
            "{p:?}"
        );
        assert_eq!(
            r.conditions.cpu_share,
            Some(1.0),
            "the watch's account is kept"
        );
    }

    /// Values spread ±20 % give a wide interval at 5 repetitions: more are measured until
    /// the median's interval is within ±3 %, and that is said.
    #[test]
    fn noisy_values_continue_until_the_target_is_met() {
        let values: Vec<f64> = (0..200)
            .map(|i| 100.0 + ((i * 37) % 41) as f64 - 20.0)
            .collect();
        let policy = RepeatPolicy {
            max: 500,
            budget_factor: 1000.0,
            ..RepeatPolicy::new(5, Some(0.03))
        };
        let r = repeat(&policy, &mut Script::calm(), |x| *x, from(&values)).unwrap();
        let p = r.precision.unwrap();
        assert!(r.kept.len() > 5, "kept {}", r.kept.len());
        assert!(p.met && p.n == r.kept.len(), "{p:?}");
        // It stopped as soon as the target was met: one fewer was not enough.
        let fewer: Vec<f64> = r.kept[..r.kept.len() - 1].to_vec();
        assert!(!Precision::of(&fewer, Some(0.03)).unwrap().met);
    }

    /// The budget: after the first 5 repetitions (10 ms each), at most 4x their time more,
    /// so 5 + 20 repetitions, and the target is reported missed.
    #[test]
    fn the_time_budget_ends_a_point_that_stays_noisy() {
        let values = [100.0, 50.0, 150.0, 60.0, 140.0];
        let policy = RepeatPolicy::new(5, Some(0.001));
        let r = repeat(&policy, &mut Script::calm(), |x| *x, from(&values)).unwrap();
        assert_eq!(r.kept.len(), 25);
        let p = r.precision.unwrap();
        assert!(!p.met && p.n == 25 && p.target == Some(0.001), "{p:?}");
        // The hard cap holds whatever the budget.
        let capped = RepeatPolicy {
            budget_factor: 1e9,
            ..policy
        };
        let r = repeat(&capped, &mut Script::calm(), |x| *x, from(&values)).unwrap();
        assert_eq!(r.kept.len(), capped.max);
    }

    /// Disturbed repetitions are measured again and not kept: their (outlying) values are
    /// nowhere in the point, and their number is recorded.
    #[test]
    fn disturbed_repetitions_are_measured_again_not_kept() {
        let mut watch = Script {
            disturbed: vec![2, 4],
            ..Script::calm()
        };
        // Repetition i returns i: the disturbed ones are 2 and 4.
        let policy = RepeatPolicy::new(5, Some(1.0));
        let r = repeat(&policy, &mut watch, |x| *x as f64, Ok).unwrap();
        assert_eq!(r.kept, [1, 3, 5, 6, 7]);
        assert_eq!(r.precision.unwrap().disturbed, 2);
    }

    /// Disturbance that never ends: the budget still ends the point, and with nothing
    /// undisturbed the disturbed repetitions are what it has (counted, target missed).
    #[test]
    fn when_disturbance_lasts_the_budget_the_disturbed_ones_are_kept() {
        let mut watch = Script {
            disturbed: (1..1000).collect(),
            ..Script::calm()
        };
        let policy = RepeatPolicy::new(3, Some(0.03));
        let r = repeat(&policy, &mut watch, |x| *x, from(&[100.0, 101.0, 99.0])).unwrap();
        // 3 for the base, then 4x their time: 15 measured, all disturbed.
        assert_eq!(r.kept.len(), 15);
        let p = r.precision.unwrap();
        assert_eq!(p.disturbed, 15);
        assert!(!p.met, "narrow, but of disturbed repetitions: {p:?}");
        // Fewer undisturbed ones than --reps: all are kept, and the interval is theirs.
        let mut watch = Script {
            disturbed: (1..1000).filter(|i| *i != 2).collect(),
            ..Script::calm()
        };
        let r = repeat(&policy, &mut watch, |x| *x as f64, Ok).unwrap();
        assert_eq!(r.kept.len(), 15, "{:?}", r.kept);
        let p = r.precision.unwrap();
        assert!(!p.met && p.n == 15 && p.disturbed == 14, "{p:?}");
        // As many undisturbed ones as --reps: only they are kept.
        let mut watch = Script {
            disturbed: (1..1000).filter(|i| ![2, 5, 9].contains(i)).collect(),
            ..Script::calm()
        };
        let r = repeat(&policy, &mut watch, |x| *x as f64, Ok).unwrap();
        assert_eq!(r.kept, [2, 5, 9]);
        let p = r.precision.unwrap();
        assert!(!p.met && p.n == 3 && p.disturbed == 12, "{p:?}");
    }

    /// `--precision 0`: exactly `min` repetitions after the warm-up, whatever their spread
    /// or disturbance; the disturbed ones are counted, and the target is null.
    #[test]
    fn a_fixed_count_gives_exactly_min_repetitions() {
        let mut watch = Script {
            disturbed: vec![2],
            ..Script::calm()
        };
        let mut calls = 0;
        let r = repeat(
            &RepeatPolicy::new(4, None),
            &mut watch,
            |x| *x,
            |i| {
                calls += 1;
                Ok([100.0, 10.0, 200.0][i % 3])
            },
        )
        .unwrap();
        assert_eq!((r.kept.len(), calls), (4, 5));
        let p = r.precision.unwrap();
        assert!(p.target.is_none() && p.disturbed == 1 && p.n == 4, "{p:?}");
        // The null executor's policy: the target recorded, nothing added.
        let policy = RepeatPolicy::new(3, Some(0.0001)).without_adapting();
        let r = repeat(&policy, &mut Script::calm(), |x| *x, from(&[1.0, 2.0, 3.0])).unwrap();
        assert_eq!(r.kept.len(), 3);
        assert_eq!(r.precision.unwrap().target, Some(0.0001));
    }

    /// A block's share: exactly `min` kept, whatever their spread, but a disturbed one is
    /// measured again, not kept.
    #[test]
    fn a_block_keeps_its_share_and_measures_disturbed_ones_again() {
        let mut watch = Script {
            disturbed: vec![1],
            ..Script::calm()
        };
        let r = repeat(&RepeatPolicy::block(1), &mut watch, |x| *x as f64, Ok).unwrap();
        assert_eq!(r.kept, [2], "repetition 1 was disturbed and measured again");
        assert_eq!(r.precision.unwrap().disturbed, 1);
        let r = repeat(
            &RepeatPolicy::block(3),
            &mut Script::calm(),
            |x| *x,
            from(&[1.0, 10.0, 200.0, 3000.0]),
        )
        .unwrap();
        assert_eq!(r.kept.len(), 3, "no more for a wide spread");
    }

    #[test]
    fn an_interrupt_stops_between_repetitions() {
        let mut watch = Script {
            interrupt_after: Some(2),
            ..Script::calm()
        };
        let mut calls = 0;
        let e = repeat(
            &RepeatPolicy::new(5, Some(0.03)),
            &mut watch,
            |x| *x,
            |_| {
                calls += 1;
                Ok(1.0)
            },
        )
        .unwrap_err();
        assert_eq!(
            e.downcast_ref::<Interrupted>(),
            Some(&Interrupted { signal: 2 })
        );
        assert_eq!(calls, 3, "warm-up and two repetitions, then no more");
    }

    #[test]
    fn disturbance_is_too_little_cpu_or_stolen_time() {
        let ms = Duration::from_millis;
        // Two busy threads for 100 ms need 200 ms of CPU time.
        assert!(!disturbed(
            ms(100),
            Some(ms(195)),
            Some(ms(0)),
            None,
            Workers::Busy(2),
            2
        ));
        assert!(disturbed(
            ms(100),
            Some(ms(120)),
            Some(ms(0)),
            None,
            Workers::Busy(2),
            2
        ));
        // Waiting workers are judged by steal only.
        assert!(!disturbed(
            ms(100),
            Some(ms(1)),
            Some(ms(0)),
            None,
            Workers::Waiting,
            2
        ));
        // Steal above 2 % of the CPUs' time: 5 ms of 2 x 100 ms.
        assert!(disturbed(
            ms(100),
            Some(ms(200)),
            Some(ms(5)),
            None,
            Workers::Busy(2),
            2
        ));
        assert!(!disturbed(
            ms(100),
            Some(ms(200)),
            Some(ms(3)),
            None,
            Workers::Busy(2),
            2
        ));
        // Too short to judge the CPU share; unreadable clocks judge nothing.
        assert!(!disturbed(
            ms(1),
            Some(Duration::ZERO),
            None,
            None,
            Workers::Busy(1),
            1
        ));
        assert!(!disturbed(ms(100), None, None, None, Workers::Busy(1), 1));
    }

    /// Other work is the machine's busy ticks minus this process's CPU time, never below
    /// zero; a reading without ticks or clock gives none.
    #[test]
    fn other_work_is_the_machines_busy_time_minus_our_own() {
        let t0 = Instant::now();
        let at = |ms: u64, cpu_ms: u64, busy: u64| Reading {
            at: t0 + Duration::from_millis(ms),
            cpu_ns: Some(cpu_ms * 1_000_000),
            steal_ticks: Some(0),
            busy_ticks: Some(busy),
        };
        // 300 ms: 50 ticks of 10 ms busy on the machine, 240 ms of them this process's.
        let o = at(0, 0, 1000)
            .other_work_until(&at(300, 240, 1050), Some(100))
            .unwrap();
        assert_eq!(o.over, Duration::from_millis(300));
        assert!((o.cpu.as_secs_f64() - 0.26).abs() < 1e-9, "{o:?}");
        // Ticks coarser than the clock: more own time than busy ticks is no other work.
        let o = at(0, 0, 1000)
            .other_work_until(&at(300, 300, 1029), Some(100))
            .unwrap();
        assert_eq!(o.cpu, Duration::ZERO);
        let blind = Reading {
            busy_ticks: None,
            ..at(300, 300, 0)
        };
        assert_eq!(at(0, 0, 0).other_work_until(&blind, Some(100)), None);
        assert_eq!(at(0, 0, 0).other_work_until(&at(300, 0, 9), None), None);
    }

    /// Other work disturbs busy workers when it took more than 30 % of a CPU over a window
    /// of at least 200 ms; a daemon's few ticks, a window too short to count ticks in, and
    /// waiting workers (whose child's CPU time is not this process's) are not judged so.
    #[test]
    fn other_work_on_the_machine_disturbs_busy_workers() {
        let ms = Duration::from_millis;
        let other = |cpu, over| {
            Some(OtherWork {
                cpu: ms(cpu),
                over: ms(over),
            })
        };
        let busy = |o| disturbed(ms(150), Some(ms(150)), Some(ms(0)), o, Workers::Busy(1), 1);
        assert!(busy(other(190, 200)), "a memory-bound job on the other CPU");
        assert!(busy(other(70, 200)));
        assert!(
            !busy(other(50, 200)),
            "a quarter of a CPU is under the ceiling"
        );
        assert!(!busy(other(20, 300)), "a daemon's ticks");
        assert!(
            !busy(other(150, 150)),
            "a window shorter than 200 ms is not judged"
        );
        assert!(!busy(None));
        assert!(!disturbed(
            ms(300),
            Some(ms(1)),
            Some(ms(0)),
            other(290, 300),
            Workers::Waiting,
            1
        ));
    }

    /// The watch reads other work from `/proc/stat`: a second of other processes' ticks
    /// during a 210 ms repetition (a fake stat, rewritten while it runs) disturbs it and is
    /// recorded; the same repetition with no ticks added is not disturbed.
    #[test]
    fn the_system_watch_sees_other_work_in_proc_stat() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let stat = |busy: u64| {
            std::fs::write(
                dir.path().join("proc/stat"),
                format!("cpu  {busy} 0 0 1000 0 0 0 0 0 0\ncpu0 0 0 0 1000 0 0 0 0 0 0\n"),
            )
            .unwrap()
        };
        let hz = pmscope_sys::rusage::clock_ticks_per_second().expect("USER_HZ");
        for (added, crowded) in [(hz, true), (0, false)] {
            stat(5000);
            // Busy(0): judged for other work, but with no CPU share to get, so that how
            // loaded the machine running this test is cannot decide it.
            let mut w = SystemWatch::new(SysRoot::at(dir.path()), &[0], Workers::Busy(0));
            w.begin();
            stat(5000 + added);
            std::thread::sleep(Duration::from_millis(210));
            let seen = w.end();
            assert_eq!(seen.disturbed, crowded, "{added} ticks: {seen:?}");
            let other = w.conditions().other_cpu_pct.unwrap();
            if crowded {
                assert!((300.0..=500.0).contains(&other), "{other}");
            } else {
                assert_eq!(other, 0.0);
            }
        }
    }

    /// The real watch on this process: a busy loop on one thread is not disturbed by the
    /// CPU-share test unless the machine really took the CPU; what it records is within
    /// what it could be.
    #[test]
    fn the_system_watch_measures_this_process() {
        let mut w = SystemWatch::new(SysRoot::host(), &[0], Workers::Busy(1));
        w.begin();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let seen = w.end();
        assert!(seen.wall >= Duration::from_millis(20));
        let c = w.conditions();
        let share = c.cpu_share.expect("the process clock is readable");
        assert!(share > 0.0 && share < 1.5, "{share}");
        assert!(
            c.steal_pct.is_none_or(|s| (0.0..=100.0 * 1.5).contains(&s)),
            "{c:?}"
        );
        let machine = 100.0 * std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(
            c.other_cpu_pct
                .is_none_or(|o| (0.0..=machine * 1.5).contains(&o)),
            "{c:?}"
        );
        // Inert: nothing judged, nothing recorded.
        let mut w = SystemWatch::inert();
        w.begin();
        assert!(!w.end().disturbed);
        assert_eq!(w.conditions(), Conditions::default());
    }

    #[test]
    fn samples_in_timer_steps_meet_the_target_within_a_step() {
        let v: Vec<f64> = (0..60)
            .map(|i| if i % 2 == 0 { 10.0 } else { 20.0 })
            .collect();
        assert!(!sample_precision(&v, Some(0.03), 0.0).unwrap().met);
        let p = sample_precision(&v, Some(0.03), 10.0).unwrap();
        assert!(p.met && p.step == Some(10.0), "{p:?}");
    }

    #[test]
    fn conditions_become_values() {
        let c = Conditions {
            steal_pct: Some(1.5),
            cpu_share: None,
            load_avg: Some(2.0),
            other_cpu_pct: Some(97.0),
        };
        let r = c.annotate(Record::new("latency", vec![], Default::default()));
        assert_eq!(r.values.get("steal_pct"), Some(&1.5));
        assert_eq!(r.values.get("other_cpu_pct"), Some(&97.0));
        assert_eq!(r.values.get("load_avg"), Some(&2.0));
        assert!(!r.values.contains_key("cpu_share"), "not measured: absent");
    }
}
