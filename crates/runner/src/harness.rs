//! The per-target pipeline every measuring command shares, written once:
//!
//! ```text
//! Harness::start       CPUs checked, timer calibrated, environment judged
//!   .per_target(...)   for each target: map (first touch by the workers' CPUs), verify,
//!      |run, mapping|  judge it against the targets before it and against the persist
//!                      strategy, hand it to the command's measuring closure, unmap
//!   .finish()          the findings about all targets together, as a `comparison` record
//! ```
//!
//! Inside the closure a command runs pinned workers ([`TargetRun::on_cpu`],
//! [`TargetRun::on_cpus`]) and makes records ([`TargetRun::record`]) that already carry the
//! target as achieved, every warning that applies to it (mapping, environment, cross-target,
//! persistence domain, executor) and where its workers ran. A finding is therefore always
//! inside a record; printing it is the sink's business.

use crate::executor::Executor;
use crate::interrupt;
use crate::pin::{self, PinError};
use crate::repeat::{RepeatPolicy, SystemWatch, Workers};
use crate::sanity;
use crate::timer::Timer;
use anyhow::{Context as _, Result};
use pmscope_core::achieved::Achieved;
use pmscope_core::record::{Record, SystemSummary, TargetRecord, ThreadPlacement};
use pmscope_core::vocab::p;
use pmscope_core::warning::Warning;
use pmscope_mapping::{MapOptions, Mapping, TargetSpec};
use pmscope_persist::PersistStrategy;
use pmscope_sys::cpu::CpuFeatures;
use pmscope_sys::sysroot::SysRoot;
use std::time::Duration;

/// Where a run's records go (the CLI's table/JSON/file/store sink).
pub trait RecordSink {
    /// Takes one finished record.
    fn emit(&mut self, r: &Record) -> Result<()>;
}

/// Progress of a run: advanced from the measuring threads, so it must be `Sync`.
pub trait Progress: Sync {
    /// One step done.
    fn inc(&self);
}

/// A progress sink that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn inc(&self) {}
}

/// What a command run shares: the machine, the command line, the executor.
#[derive(Debug, Clone)]
pub struct Session {
    /// `/sys` and `/proc`.
    pub root: SysRoot,
    /// The command line as given.
    pub command_line: Vec<String>,
    /// CPU features.
    pub features: CpuFeatures,
    /// The machine, as every record repeats it.
    pub system: SystemSummary,
    /// Real or null.
    pub executor: Executor,
    /// `--prefetchers off`: turn the hardware prefetchers off for each measurement.
    pub prefetchers_off: bool,
    /// `--precision`: the relative half-width of the 95 % interval of each point's median
    /// to repeat until (0.03 for ±3 %); `None` for exactly `--reps` repetitions.
    pub precision: Option<f64>,
    /// Findings about the command's plan (a default size capped by memory: `size-capped`),
    /// carried by every record of the next measurement like the environment's; taken by
    /// [`Harness::start`].
    pub notes: Vec<Warning>,
}

impl Session {
    /// An empty record of `experiment`, with the machine, the command line and, under the
    /// null executor, the mark of synthetic figures.
    pub fn record(&self, experiment: &str) -> Record {
        let mut r = Record::new(experiment, self.command_line.clone(), self.system.clone());
        if let Some(w) = self.executor.warning() {
            r = r.param(p::EXECUTOR, "null");
            r.warnings.push(w);
        }
        r
    }
}

/// What the harness needs to know about a measurement before it starts.
#[derive(Debug, Clone, Default)]
pub struct Measurement {
    /// The workers' CPUs (all of them, for the environment checks).
    pub cpus: Vec<usize>,
    /// Bytes the timed accesses cover (for the cache check), if that is meaningful.
    pub working_set: Option<u64>,
    /// Whether single accesses are timed (for the timer-resolution check).
    pub times_single_accesses: bool,
    /// The command times whole phases (seconds) with the monotonic clock, not intervals
    /// with the TSC: the TSC and the core clock are measured briefly, for the record only,
    /// instead of spending a tenth of a second on a precision nothing uses (a K-mer job
    /// that takes one second would spend a tenth of it here).
    pub wall_clocked: bool,
}

/// A started measurement: calibrated timer, environment findings, the sink.
pub struct Harness<'s> {
    session: &'s mut Session,
    timer: Timer,
    env: Vec<Warning>,
    sink: &'s mut dyn RecordSink,
    seen: Vec<(String, Achieved)>,
    /// The working set the measurement declared, for points that do not name their own.
    working_set: Option<u64>,
    /// Each node's largest memory-side cache, for the `memory-side-cache` check.
    side_caches: Vec<(u32, pmscope_sys::numa::MemorySideCache)>,
    /// Held for the whole measurement: dropping it (at the end, on an error or Ctrl-C)
    /// turns the prefetchers back on.
    _prefetchers: Option<pmscope_sys::hw_prefetchers::PrefetchersOff>,
}

impl<'s> Harness<'s> {
    /// Checks the CPUs, calibrates the timer (recorded in every later record) and judges
    /// the environment the measurement will run in.
    pub fn start(
        session: &'s mut Session,
        sink: &'s mut dyn RecordSink,
        m: &Measurement,
    ) -> Result<Harness<'s>, PinError> {
        pin::check_cpus(&m.cpus)?;
        // Before the environment is judged, so the records read the state the run has.
        let mut env_notes = Vec::new();
        let prefetchers = if session.prefetchers_off {
            let cpus = pmscope_sys::environment::online_cpus(&session.root);
            match pmscope_sys::hw_prefetchers::disable(
                &session.root,
                &pmscope_sys::cpu::vendor(),
                session.features.hypervisor,
                &cpus,
            ) {
                Ok(off) => Some(off),
                Err(why) => {
                    env_notes.push(Warning::new(
                        "prefetchers-left-on",
                        format!("--prefetchers off was asked for, but {why}"),
                        "read sequential figures as prefetched; on bare metal run as root with the msr driver loaded",
                    ));
                    None
                }
            }
        } else {
            None
        };
        let (window, clock_budget_ns) = if m.wall_clocked {
            (Duration::from_millis(10), 4_000_000)
        } else {
            (Duration::from_millis(100), 20_000_000)
        };
        let timer = Timer::calibrate(&session.features, window);
        session.system.timer = Some(timer.info());
        let clock = pmscope_sys::coreclock::observe(clock_budget_ns);
        session.system.observed_core_ghz = clock.ghz();
        session.system.core_clock_unmeasurable = clock.unmeasurable_reason().map(String::from);
        let mut env = std::mem::take(&mut session.notes);
        env.extend(env_notes);
        env.extend(sanity::check(
            &sanity::EnvFacts::probe(&session.root, &m.cpus),
            &sanity::Context {
                timer: Some(timer.info()),
                memory_working_set: m.working_set,
                times_single_accesses: m.times_single_accesses,
            },
        ));
        let side_caches = sanity::memory_side_caches(&session.root);
        Ok(Harness {
            session,
            timer,
            env,
            sink,
            _prefetchers: prefetchers,
            seen: Vec::new(),
            working_set: m.working_set,
            side_caches,
        })
    }

    /// The calibrated timer.
    pub fn timer(&self) -> &Timer {
        &self.timer
    }

    /// Real or null.
    pub fn executor(&self) -> Executor {
        self.session.executor
    }

    /// The session (features, root, system).
    pub fn session(&self) -> &Session {
        self.session
    }

    /// The environment findings, which every record carries.
    pub fn environment_warnings(&self) -> &[Warning] {
        &self.env
    }

    /// Adds a finding every later record carries (and the terminal shows once): what the
    /// command chose for this CPU, such as a default that fell back to an older instruction.
    pub fn note(&mut self, w: Warning) {
        if !self.env.contains(&w) {
            self.env.push(w);
        }
    }

    /// A record of `experiment` not tied to one target (it carries the environment
    /// findings).
    pub fn record(&self, experiment: &str) -> Record {
        let mut r = self.session.record(experiment);
        r.warnings.extend(self.env.iter().cloned());
        r
    }

    /// Emits a record built outside a target run.
    pub fn emit(&mut self, r: &Record) -> Result<()> {
        self.sink.emit(r)
    }

    /// Maps each target in turn (`bytes` each, with `opts`) and runs `measure` on it. With
    /// `persists`, a target whose persistence domain the strategy cannot make durable
    /// carries a warning in every record.
    pub fn per_target<F>(
        &mut self,
        targets: &[TargetSpec],
        bytes: u64,
        opts: &MapOptions,
        persists: Option<PersistStrategy>,
        mut measure: F,
    ) -> Result<()>
    where
        F: FnMut(&mut TargetRun<'_, 's>, &mut Mapping) -> Result<()>,
    {
        for spec in targets {
            interrupt::check()?;
            let mut mapping = pmscope_mapping::map(spec, bytes, opts)?;
            let target = mapping.record();
            let warnings = self.judge(&target, mapping.warnings().to_vec(), persists);
            let mut run = TargetRun {
                harness: self,
                target,
                warnings,
                placements: Vec::new(),
            };
            measure(&mut run, &mut mapping)?;
            let TargetRun { target, .. } = run;
            self.seen.push((target.spec, target.achieved));
        }
        Ok(())
    }

    /// Takes over a target the workload mapped and verified itself (a k-mer table sizes and
    /// maps its own memory, after the measurement began): judged as [`Harness::per_target`]
    /// judges the targets it maps — its mapping's `warnings`, the persistence domain against
    /// `persists`, the targets before it, the environment — and counted among the targets
    /// [`Harness::finish`] compares. Its records come from the returned run.
    pub fn adopt(
        &mut self,
        target: TargetRecord,
        warnings: Vec<Warning>,
        persists: Option<PersistStrategy>,
    ) -> TargetRun<'_, 's> {
        let warnings = self.judge(&target, warnings, persists);
        self.seen
            .push((target.spec.clone(), target.achieved.clone()));
        TargetRun {
            harness: self,
            target,
            warnings,
            placements: Vec::new(),
        }
    }

    /// Every warning a target's records carry: its mapping's, the persistence domain's
    /// (with `persists`), against the first target before it, and the environment's.
    fn judge(
        &self,
        target: &TargetRecord,
        mut warnings: Vec<Warning>,
        persists: Option<PersistStrategy>,
    ) -> Vec<Warning> {
        if let Some(s) = persists {
            warnings.extend(pmscope_persist::domain_warning(s, &target.achieved));
        }
        if let Some((first, achieved)) = self.seen.first() {
            // Against the targets before it: the first of them is the reference.
            warnings.extend(pmscope_mapping::verify::compare_targets(&[
                (first.clone(), achieved),
                (target.spec.clone(), &target.achieved),
            ]));
        }
        warnings.extend(self.env.iter().cloned());
        warnings
    }

    /// Counts a target verified outside [`Harness::per_target`] — a program's heap placed
    /// by `pmscope run` — among the targets [`Harness::finish`] compares.
    pub fn note_target(&mut self, target: &TargetRecord) {
        self.seen
            .push((target.spec.clone(), target.achieved.clone()));
    }

    /// Ends the measurement: with two or more targets, one `comparison` record holding the
    /// findings about them taken together (seed 000: mixed page sizes). Returns those
    /// findings.
    pub fn finish(self) -> Result<Vec<Warning>> {
        // A target adopted more than once (every table of `kmer bench` on it) counts once,
        // as first seen.
        let mut pairs: Vec<(String, &Achieved)> = Vec::new();
        for (n, a) in &self.seen {
            if !pairs.iter().any(|(seen, _)| seen == n) {
                pairs.push((n.clone(), a));
            }
        }
        if pairs.len() < 2 {
            return Ok(Vec::new());
        }
        let cross = pmscope_mapping::verify::compare_targets(&pairs);
        let targets: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(n, a)| {
                serde_json::json!({
                    "spec": n,
                    "page_size": a.page_size,
                    "persistence": a.persistence,
                })
            })
            .collect();
        let mut r = self.record("comparison").param(p::TARGETS, targets);
        r.warnings.extend(cross.iter().cloned());
        self.sink.emit(&r)?;
        Ok(cross)
    }
}

/// One target being measured.
pub struct TargetRun<'h, 's> {
    harness: &'h mut Harness<'s>,
    target: TargetRecord,
    warnings: Vec<Warning>,
    placements: Vec<ThreadPlacement>,
}

impl TargetRun<'_, '_> {
    /// The target as asked and achieved.
    pub fn target(&self) -> &TargetRecord {
        &self.target
    }

    /// The calibrated timer.
    pub fn timer(&self) -> Timer {
        self.harness.timer
    }

    /// Real or null.
    pub fn executor(&self) -> Executor {
        self.harness.session.executor
    }

    /// CPU features.
    pub fn features(&self) -> &CpuFeatures {
        &self.harness.session.features
    }

    /// How a point of at least `min` repetitions (the command's `--reps`) is repeated:
    /// until `--precision` is met or its budget is spent; exactly `min` under the null
    /// executor, whose synthetic values gain nothing from more.
    pub fn repeat_policy(&self, min: usize) -> RepeatPolicy {
        let policy = RepeatPolicy::new(min, self.harness.session.precision);
        match self.executor() {
            Executor::Real => policy,
            Executor::Null => policy.without_adapting(),
        }
    }

    /// The watch that judges each repetition of a point whose `workers` run on `cpus`
    /// (inert under the null executor). Make one per point: it accounts for the point.
    pub fn watch(&self, cpus: &[usize], workers: Workers) -> SystemWatch {
        match self.executor() {
            Executor::Real => SystemWatch::new(self.harness.session.root.clone(), cpus, workers),
            Executor::Null => SystemWatch::inert(),
        }
    }

    /// The precision asked for (`--precision`), for points that are the median of their
    /// individually timed samples rather than of repetitions.
    pub fn precision_target(&self) -> Option<f64> {
        self.harness.session.precision
    }

    /// Every warning that applies to this target's records.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Runs `work` on one worker pinned to `cpu`, handing it `region` (typically the
    /// mapping's bytes) for its exclusive use.
    pub fn on_cpu<T: Send, R: Send>(
        &mut self,
        cpu: usize,
        region: T,
        work: impl FnOnce(T) -> R + Send,
    ) -> Result<R> {
        let mut out = pin::run_pinned_once(cpu, region, work)?;
        let (r, p) = out.take().expect("one worker");
        self.placements = vec![p];
        Ok(r)
    }

    /// Runs `work(worker)` on one worker per CPU of `cpus`, released together.
    pub fn on_cpus<R: Send>(
        &mut self,
        cpus: &[usize],
        work: impl Fn(usize) -> R + Sync,
    ) -> Result<Vec<R>> {
        let out = pin::run_pinned(cpus, work)?;
        let (r, p): (Vec<R>, Vec<ThreadPlacement>) = out.into_iter().unzip();
        self.placements = p;
        Ok(r)
    }

    /// Runs `work(worker, &mut parts[worker])` on one worker per CPU of `cpus`, each the only
    /// holder of its part, released together.
    pub fn on_each<T: Send, R: Send>(
        &mut self,
        cpus: &[usize],
        parts: &mut [T],
        work: impl Fn(usize, &mut T) -> R + Sync,
    ) -> Result<Vec<R>> {
        let out = pin::run_pinned_each(cpus, parts, work)?;
        let (r, p): (Vec<R>, Vec<ThreadPlacement>) = out.into_iter().unzip();
        self.placements = p;
        Ok(r)
    }

    /// A record of `experiment` for this target: the target, every warning, and where the
    /// last workers ran.
    pub fn record(&self, experiment: &str) -> Record {
        let mut r = self.harness.session.record(experiment);
        r.target = Some(self.target.clone());
        r.warnings.extend(self.warnings.iter().cloned());
        r.threads = self.placements.clone();
        r
    }

    /// `Err` once Ctrl-C or SIGTERM arrived: call it between points.
    pub fn check_interrupt(&self) -> Result<()> {
        Ok(interrupt::check()?)
    }

    /// Emits a finished record (after checking for an interrupt: a point finished after
    /// the signal is still a finished point, so it is emitted first).
    pub fn emit(&mut self, r: &Record) -> Result<()> {
        let cached = self.within_memory_side_cache(r).map(|w| {
            let mut r = r.clone();
            r.warnings.push(w);
            r
        });
        self.harness
            .sink
            .emit(cached.as_ref().unwrap_or(r))
            .with_context(|| format!("recording a point of {}", self.target.spec))
    }

    /// The `memory-side-cache` finding of a point whose working set (its own
    /// `working_set_bytes`, else the measurement's) fits a memory-side cache of a node the
    /// target's pages are on.
    fn within_memory_side_cache(&self, r: &Record) -> Option<pmscope_core::warning::Warning> {
        if self.harness.side_caches.is_empty() {
            return None;
        }
        let ws = r
            .params
            .get(p::WORKING_SET_BYTES.name())
            .and_then(|v| v.as_u64())
            .or(self.harness.working_set)?;
        sanity::within_memory_side_cache(ws, &self.target.achieved.nodes, &self.harness.side_caches)
    }
}
