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
use pmscope_core::blocks::Placement;
use pmscope_core::record::{Record, SystemSummary, TargetRecord, ThreadPlacement};
use pmscope_core::vocab::p;
use pmscope_core::warning::Warning;
use pmscope_mapping::{FirstTouch, MapOptions, Mapping, TargetSpec};
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
    /// `--blocks`: how many blocks, each on a mapping of its own, a point of a measurement
    /// that takes them is measured in ([`pmscope_core::blocks`]); 1 for one mapping for
    /// the whole measurement.
    pub blocks: usize,
    /// Inside a suite measured in rounds: the block every measurement of this round is
    /// (one pass each, its records holding their one block, merged by the suite after the
    /// last round); `None` outside.
    pub round: Option<BlockIndex>,
    /// The frames of each target's last mapping (by spec), for the placement check of a
    /// round's mapping against the round before.
    pub frames: std::collections::HashMap<String, Vec<u64>>,
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
    /// Blocks each point is measured in: the session's `--blocks` for a measurement whose
    /// points are repeated timings, 1 for one whose figure is not (a verification, file
    /// I/O in a directory).
    pub blocks: usize,
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
    /// Blocks each point is measured in.
    blocks: usize,
    /// The records of the blocks measured so far, each with its mapping's placement, while
    /// [`Harness::per_target`] measures in blocks; `None` emits each record as it comes.
    collected: Option<Vec<(Record, Option<Placement>)>>,
    /// The records [`Harness::per_target`] emitted as they came (in one block).
    emitted: Option<Vec<Record>>,
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
            blocks: m.blocks.max(1),
            collected: None,
            emitted: None,
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
    ///
    /// Measured in blocks (`--blocks` above 1), the whole pass over every target is made
    /// once per block, each time on new mappings: made while the target's previous one
    /// still holds its pages (where memory allows), first touched in address order (as
    /// applications and the peer tools touch theirs), and checked against it ([`Placement`]). `measure` measures its block's share of each
    /// point ([`TargetRun::block`]); the records it emits are held, and after the last
    /// block (or at an interrupt or error, with the blocks measured so far) each point's
    /// blocks are merged into its record ([`pmscope_core::blocks::merge`]), the intervals
    /// of the points of one experiment and metric moderated together
    /// ([`pmscope_core::blocks::moderate`]), and emitted. Returns the records emitted.
    pub fn per_target<F>(
        &mut self,
        targets: &[TargetSpec],
        bytes: u64,
        opts: &MapOptions,
        persists: Option<PersistStrategy>,
        mut measure: F,
    ) -> Result<Vec<Record>>
    where
        F: FnMut(&mut TargetRun<'_, 's>, &mut Mapping) -> Result<()>,
    {
        if let Some(block) = self.session.round.filter(|_| self.blocks > 1) {
            // One block of a suite's round: the targets' frames of the round before are the
            // session's.
            let mut previous: Vec<Previous> = targets
                .iter()
                .map(|t| Previous {
                    mapping: None,
                    frames: self.session.frames.remove(&t.to_string()),
                })
                .collect();
            self.collected = Some(Vec::new());
            let round = (block, &mut previous[..], false);
            let measured = self.pass(targets, bytes, opts, persists, &mut measure, Some(round));
            for (t, p) in targets.iter().zip(previous) {
                if let Some(f) = p.frames {
                    self.session.frames.insert(t.to_string(), f);
                }
            }
            let records = self.emit_collected(self.session.precision);
            measured?;
            return records;
        }
        if self.blocks <= 1 {
            self.emitted = Some(Vec::new());
            let measured = self.pass(targets, bytes, opts, persists, &mut measure, None);
            let records = self.emitted.take().unwrap_or_default();
            measured?;
            return Ok(records);
        }
        let blocks = self.blocks;
        // Each target's previous mapping, held until its next one is made (where all of
        // them and one more fit the memory guard), and the frames it had.
        let hold = (targets.len() as u64 + 1).saturating_mul(bytes) <= opts.guard.limit;
        let mut previous: Vec<Previous> = targets.iter().map(|_| Previous::default()).collect();
        self.collected = Some(Vec::new());
        let mut measured = Ok(());
        for b in 0..blocks {
            let block = BlockIndex {
                index: b,
                of: blocks,
            };
            let blocks = (block, &mut previous[..], hold);
            measured = self.pass(targets, bytes, opts, persists, &mut measure, Some(blocks));
            if measured.is_err() {
                break;
            }
        }
        drop(previous);
        let records = self.emit_collected(self.session.precision);
        measured?;
        records
    }

    /// One pass over every target: map, judge, measure. In blocks, `blocks` is this
    /// block, the targets' previous mappings, and whether to hold them.
    fn pass<F>(
        &mut self,
        targets: &[TargetSpec],
        bytes: u64,
        opts: &MapOptions,
        persists: Option<PersistStrategy>,
        measure: &mut F,
        blocks: Option<(BlockIndex, &mut [Previous], bool)>,
    ) -> Result<()>
    where
        F: FnMut(&mut TargetRun<'_, 's>, &mut Mapping) -> Result<()>,
    {
        let (block, mut previous, hold) = match blocks {
            Some((block, previous, hold)) => (block, Some(previous), hold),
            None => (BlockIndex::ONE, None, false),
        };
        for (t, spec) in targets.iter().enumerate() {
            interrupt::check()?;
            let (mut mapping, placement) = match previous.as_deref_mut() {
                None => (pmscope_mapping::map(spec, bytes, opts)?, None),
                Some(previous) => {
                    let (m, placement) = map_block(spec, bytes, opts, block, &mut previous[t])?;
                    (m, Some(placement))
                }
            };
            let target = mapping.record();
            let warnings = self.judge(&target, mapping.warnings().to_vec(), persists);
            let mut run = TargetRun {
                harness: self,
                target,
                warnings,
                placements: Vec::new(),
                block,
                placement: placement.and_then(|p| p),
            };
            measure(&mut run, &mut mapping)?;
            let TargetRun { target, .. } = run;
            if !self.seen.iter().any(|(spec, _)| *spec == target.spec) {
                self.seen.push((target.spec, target.achieved));
            }
            if let Some(previous) = previous.as_deref_mut() {
                previous[t].frames = frames_of(&mapping);
                previous[t].mapping = hold.then_some(mapping);
            }
        }
        Ok(())
    }

    /// Merges the held records of each point over its blocks, moderates their intervals,
    /// and emits them in the order first measured.
    fn emit_collected(&mut self, target: Option<f64>) -> Result<Vec<Record>> {
        let collected = self.collected.take().unwrap_or_default();
        let records = pmscope_core::blocks::merge_points(collected, target);
        for r in &records {
            self.sink.emit(r)?;
        }
        Ok(records)
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
            block: BlockIndex::ONE,
            placement: None,
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
    block: BlockIndex,
    placement: Option<Placement>,
}

/// Which block of how many a pass measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockIndex {
    /// This block, from 0.
    pub index: usize,
    /// Blocks in all.
    pub of: usize,
}

impl BlockIndex {
    /// A measurement of one block.
    pub const ONE: BlockIndex = BlockIndex { index: 0, of: 1 };

    /// This block's share of `total` repetitions, samples or accesses: the total split
    /// evenly, rounded up, so that the blocks together do at least `total`.
    pub fn share(&self, total: usize) -> usize {
        total.div_ceil(self.of.max(1)).max(1)
    }

    /// The factor on the duration of one repetition of a point of `reps` repetitions, so
    /// that its blocks together time about what the repetitions would in one block: 1
    /// while each block keeps a repetition or more of its own ([`BlockIndex::share`]), and
    /// reps/blocks when there are more blocks than repetitions (each block then times one
    /// shorter repetition).
    pub fn rep_scale(&self, reps: usize) -> f64 {
        if reps >= self.of {
            1.0
        } else {
            reps.max(1) as f64 / self.of as f64
        }
    }

    /// The seed of this block's random orders (chains, addresses) from the point's `seed`:
    /// the seed itself in the first block (so one block is the measurement of `--blocks
    /// 1`), a different one in each later block.
    pub fn seed(&self, seed: u64) -> u64 {
        if self.index == 0 {
            seed
        } else {
            seed ^ (self.index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        }
    }
}

/// A target's mapping of the block before and the frames it had.
#[derive(Default)]
struct Previous {
    mapping: Option<Mapping>,
    frames: Option<Vec<u64>>,
}

/// Maps a target's next block: beside its previous mapping when that is still held (if
/// the two do not fit, after releasing it), its pages first touched in address order; with
/// the placement found against the previous block's frames.
fn map_block(
    spec: &TargetSpec,
    bytes: u64,
    opts: &MapOptions,
    block: BlockIndex,
    previous: &mut Previous,
) -> Result<(Mapping, Option<Placement>)> {
    // Address order, as applications and the peer tools first touch their memory. A
    // shuffled first touch (once used here, to make sure each offset meets other page
    // colours, which the kernel's fresh frames already do: `same_colour` 1.6 %) cost 4 KiB
    // streams on a KVM guest what no user's program pays: on an Intel Xeon guest, one-thread
    // `read` and `ntcopy` 2-18 % in 6 of 6 alternating runs. A bias of the method, not a
    // property of the memory.
    let opts = MapOptions {
        first_touch_order: FirstTouch::Ascending,
        ..opts.clone()
    };
    let held = previous.mapping.is_some();
    let mapping = match pmscope_mapping::map(spec, bytes, &opts) {
        Ok(m) => m,
        Err(_) if held => {
            // Two did not fit (free huge pages, a device's size): release the old one.
            previous.mapping = None;
            pmscope_mapping::map(spec, bytes, &opts)?
        }
        Err(e) => return Err(e.into()),
    };
    let beside = held && previous.mapping.is_some();
    previous.mapping = None;
    let placement = (block.index > 0).then(|| {
        let now = frames_of(&mapping);
        placement(beside, previous.frames.as_deref(), now.as_deref())
    });
    Ok((mapping, placement))
}

/// The frames behind a mapping, one per sampled page (at most
/// [`pmscope_core::blocks::PLACEMENT_SAMPLE`]); `None` where pagemap hides them.
fn frames_of(m: &Mapping) -> Option<Vec<u64>> {
    let sample = pmscope_core::blocks::PLACEMENT_SAMPLE;
    let stride = (m.len() / sample).max(4096).next_multiple_of(4096);
    pmscope_sys::pagemap::frames(m.as_mut_ptr() as usize, m.len(), stride)
}

/// What a block's frames `now` have in common with the block before's.
fn placement(beside: bool, before: Option<&[u64]>, now: Option<&[u64]>) -> Placement {
    let (shared_frames, same_colour) = match (before, now) {
        (Some(before), Some(now)) if !now.is_empty() => {
            let held: std::collections::HashSet<u64> =
                before.iter().copied().filter(|f| *f != 0).collect();
            let n = now.len() as f64;
            let shared = now.iter().filter(|f| held.contains(f)).count() as f64 / n;
            let colours = pmscope_core::blocks::COLOURS;
            let same = before
                .iter()
                .zip(now)
                .filter(|(a, b)| **a % colours == **b % colours)
                .count() as f64
                / n;
            (Some(shared), Some(same))
        }
        _ => (None, None),
    };
    Placement {
        beside_previous: beside,
        shared_frames,
        same_colour,
    }
}

impl TargetRun<'_, '_> {
    /// The target as asked and achieved.
    pub fn target(&self) -> &TargetRecord {
        &self.target
    }

    /// Which block of the measurement this pass is: take [`BlockIndex::share`] of each
    /// point's repetitions or samples, and [`BlockIndex::seed`] for its random orders.
    pub fn block(&self) -> BlockIndex {
        self.block
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
        let policy = if self.block.of > 1 {
            // The point's precision is judged over its blocks; a block repeats its share.
            RepeatPolicy::block(self.block.share(min))
        } else {
            RepeatPolicy::new(min, self.harness.session.precision)
        };
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
        let r = cached.as_ref().unwrap_or(r);
        if let Some(collected) = &mut self.harness.collected {
            collected.push((r.clone(), self.placement));
            return Ok(());
        }
        if let Some(emitted) = &mut self.harness.emitted {
            emitted.push(r.clone());
        }
        self.harness
            .sink
            .emit(r)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The first block is the measurement of `--blocks 1` (its seed unchanged); every later
    /// block draws random orders of its own; the blocks' shares together cover the total.
    #[test]
    fn each_block_draws_its_own_orders_and_its_share() {
        let blocks: Vec<BlockIndex> = (0..5).map(|index| BlockIndex { index, of: 5 }).collect();
        assert_eq!(blocks[0].seed(42), 42);
        let seeds: std::collections::HashSet<u64> = blocks.iter().map(|b| b.seed(42)).collect();
        assert_eq!(seeds.len(), 5, "a seed per block");
        assert_eq!(BlockIndex::ONE.seed(42), 42);
        for total in [1, 4, 5, 1001] {
            let shares: usize = blocks.iter().map(|b| b.share(total)).sum();
            assert!(shares >= total && shares < total + 5, "{total}: {shares}");
        }
        assert_eq!(blocks[0].rep_scale(10), 1.0);
        assert_eq!(
            blocks[0].rep_scale(2),
            0.4,
            "two repetitions' time over five blocks"
        );
    }
}
