//! The crash-image checker of the static-pm table: power failure under the line-prefix
//! model, on the code production runs.
//!
//! What runs ([`run`]): the table's own `format` (pool creation), the job's insert loop
//! (`job::insert_genomes`) and the drivers (`build::Driver`, direct or through the region
//! buckets) with two pinned workers, the table, its `PoolWords` and the user's
//! `Persister` — whose write-back loop and drain report each instruction they execute
//! (`pmscope_persist::trace`) to the [`RecordedWords`] the table stores into. The workers
//! take turns by a [`Schedule`]: at each switch point (a worker's persisted group, or in
//! the finer schedules each published or counted k-mer) the schedule's next choice says
//! which worker continues, so every run replays exactly; the choices are enumerated.
//!
//! What is checked ([`judge`]), replaying the recorded stream through
//! `pmscope_persist::shadow::CrashModel`:
//!
//! * at every store, write-back and fence, every image a power failure could leave (each
//!   dirty line keeps any prefix of its stores; a fence completes only its own thread's
//!   write-backs; at most 512 images per point, then a fixed sample) is reopened as
//!   `pmscope kmer` reopens a pool: during creation it holds no pool (no magic) or an empty
//!   one, never a damaged one; afterwards it opens, recovery leaves no claim, no k-mer in
//!   two slots and no slot a lookup misses, every count is at most the truth, every
//!   acknowledged insert and every completed genome is there; resumed to the end through
//!   the same loop, it ends with exactly the counts of an uninterrupted run;
//! * whenever the production code returns — a pool formatted or opened, a worker's group
//!   persisted, a genome completed — what it stored before is durable;
//! * crash after crash: images whose recovery had work (a claim cleared, a hole closed, a
//!   copy dropped) are reopened on a recording memory, and the recovery and the resumed
//!   run are recorded and checked the same way.
//!
//! Bounds (deterministic): 3 genomes of about 100 k-mers each, a 512-slot table, groups of
//! 2-3 written lines (and of one, `--fence per-slot`); k = 11 (one key word) and k = 40 (two); `clwb`, `clflushopt`,
//! `clflush` and `msync`; 8 schedules of group turns for one key word, 4 for two, 4 of
//! insert turns, one through the buckets; up to 4 second runs per scenario. About 30 s on
//! 2 cores in release mode.

mod judge;
mod run;

use super::static_pm::{HEADER_WORDS, META, PoolWords, SLOT_WORDS, StaticPm, VALID};
use crate::kmer::read::Genome;
use crate::kmer::synth::random_bases;
use judge::{Acks, Checked, Job, Phase, Replay, Restart, exact};
use pmscope_persist::record::{RecordedWords, Schedule};
use pmscope_persist::shadow::Op;
use pmscope_persist::{PersistStrategy, Persister};
use run::{CREATED, Drive, OPENED, Observed, PERSISTED, insert_rest};

/// One checked configuration.
#[derive(Clone)]
struct Scenario {
    k: usize,
    seed: u64,
    strategy: PersistStrategy,
    drive: Drive,
    choices: Vec<usize>,
    switch_after: fn(&Op) -> bool,
    /// Second runs from crash images whose recovery had work.
    restarts: usize,
}

const CAPACITY: usize = 512;

/// A worker may be switched once its group's persist returned.
fn at_groups(op: &Op) -> bool {
    matches!(
        op,
        Op::Mark {
            value: PERSISTED,
            ..
        }
    )
}

/// ... or once it published or counted a k-mer (never between a claim and its publish).
fn at_inserts(op: &Op) -> bool {
    at_groups(op)
        || matches!(*op, Op::Store { word, value, .. }
            if word >= HEADER_WORDS
                && (word - HEADER_WORDS) % SLOT_WORDS == META
                && value & VALID != 0)
}

/// Three genomes from one random reference: overlapping windows (k-mers shared by two or
/// three genomes), a point mutation, a repeat inside a genome, two records in one.
fn genomes(seed: u64, k: usize) -> Vec<Genome> {
    let r = random_bases(400, seed);
    let mut second = r[40..150].to_vec();
    second[55] = if second[55] == b'A' { b'C' } else { b'A' };
    let mut third = r[0..50].to_vec();
    third.extend_from_slice(&r[10..40]);
    let g = |name: &str, recs: &[(&str, &[u8])]| Genome::from_records(name, recs, k);
    vec![
        g("g1", &[("a", &r[0..110])]),
        g("g2", &[("a", &second)]),
        g("g3", &[("a", &third), ("b", &r[120..190])]),
    ]
}

fn persister(strategy: PersistStrategy) -> Persister {
    Persister::new(strategy, &pmscope_sys::cpu::CpuFeatures::detect())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A recording memory of the scenario's size, its workers taking turns by its schedule.
fn recording(s: &Scenario, image: Vec<u64>) -> RecordedWords {
    let mem = RecordedWords::new(image);
    mem.schedule(Schedule {
        workers: s.drive.workers,
        choices: s.choices.clone(),
        switch_after: s.switch_after,
    });
    mem
}

/// Records the scenario's run from a zeroed pool and checks it (see the module comment).
fn check<const W: usize>(s: &Scenario) -> Result<Checked, String> {
    let job = Job::<W>::new(genomes(s.seed, s.k), s.k, persister(s.strategy));
    let words = HEADER_WORDS + CAPACITY * SLOT_WORDS;
    let mut t = StaticPm::<W, _>::format(
        PoolWords::over(recording(s, vec![0; words]), job.persister),
        s.k,
        CAPACITY,
        s.strategy,
        job.inputs,
    );
    t.memory().backing().mark(CREATED);
    insert_rest(&mut Observed(&mut t), &s.drive.driver(), &job.genomes, s.k)?;
    exact(&t, job.truth()).map_err(|e| format!("the uninterrupted run: {e}"))?;
    let log = t.memory().backing().take_log();
    let mut replay = Replay::new(&job, vec![0; words], Phase::Creating, Acks::default())
        .keep_restarts(s.restarts);
    replay.replay(&log)?;
    let mut checked = replay.checked;
    for r in replay.restarts {
        checked += again(&job, s, r)?;
    }
    Ok(checked)
}

/// A crash after a crash: `r`'s image reopened (recovery recorded) and the job finished on
/// a recording memory, then every crash point of that run checked.
fn again<const W: usize>(job: &Job<W>, s: &Scenario, r: Restart<W>) -> Result<Checked, String> {
    let in_second = |e: String| format!("in the run resumed from a crash image: {e}");
    let mut t = StaticPm::<W, _>::open(
        PoolWords::over(recording(s, r.image.clone()), job.persister),
        "the crash image",
        Some(s.k),
        Some(job.inputs),
    )
    .map_err(in_second)?;
    t.memory().backing().mark(OPENED);
    insert_rest(&mut Observed(&mut t), &s.drive.driver(), &job.genomes, s.k).map_err(in_second)?;
    exact(&t, job.truth()).map_err(in_second)?;
    let log = t.memory().backing().take_log();
    let mut replay = Replay::new(job, r.image, Phase::Working, r.acks);
    replay.replay(&log).map_err(in_second)?;
    Ok(Checked {
        second_runs: 1,
        ..replay.checked
    })
}

fn scenario(k: usize, seed: u64) -> Scenario {
    Scenario {
        k,
        seed,
        strategy: PersistStrategy::Clwb,
        drive: Drive {
            workers: 2,
            group: 2,
            buckets: false,
        },
        choices: Vec::new(),
        switch_after: at_groups,
        restarts: 4,
    }
}

/// The schedules whose first `bits` choices are each bit pattern (then round robin).
fn schedules(base: &Scenario, bits: u32) -> Vec<Scenario> {
    (0..1usize << bits)
        .map(|pattern| Scenario {
            choices: (0..bits).map(|b| (pattern >> b) & 1).collect(),
            seed: base.seed + pattern as u64,
            ..base.clone()
        })
        .collect()
}

fn run_all<const W: usize>(what: &str, scenarios: &[Scenario]) -> Checked {
    let mut total = Checked::default();
    for s in scenarios {
        match check::<W>(s) {
            Ok(c) => total += c,
            Err(e) => panic!(
                "{what}: k = {}, seed {}, {}, schedule {:?}: {e}",
                s.k, s.seed, s.strategy, s.choices
            ),
        }
    }
    eprintln!("static-pm crash check, {what}: {total:?}");
    assert!(
        total.crash_points > 1000 && total.images >= total.crash_points,
        "{total:?}"
    );
    assert!(
        total.creating > 0,
        "no crash point during pool creation: {total:?}"
    );
    total
}

/// One-word keys (k ≤ 32): 8 schedules of group turns with clwb, one run with each other
/// strategy that makes stores durable, and one through the region buckets.
#[test]
fn every_crash_image_of_the_production_path_recovers_one_word_keys() {
    let base = scenario(11, 0x11);
    let mut all = schedules(&base, 3);
    for (i, strategy) in [
        PersistStrategy::Clflushopt,
        PersistStrategy::Clflush,
        PersistStrategy::Msync,
    ]
    .into_iter()
    .enumerate()
    {
        if strategy
            .missing_feature(&pmscope_sys::cpu::CpuFeatures::detect())
            .is_none()
        {
            all.push(Scenario {
                strategy,
                seed: 0x40 + i as u64,
                choices: vec![1, 0, 0, 1],
                ..base.clone()
            });
        }
    }
    all.push(Scenario {
        drive: Drive {
            buckets: true,
            group: 3,
            ..base.drive
        },
        seed: 0x50,
        ..base.clone()
    });
    let total = run_all::<1>("one-word keys", &all);
    assert!(total.second_runs > 0 && total.cleared > 0, "{total:?}");
}

/// Two-word keys (k > 32): a publish must follow every key word.
#[test]
fn every_crash_image_of_the_production_path_recovers_two_word_keys() {
    let total = run_all::<2>("two-word keys", &schedules(&scenario(40, 0x20), 2));
    assert!(total.second_runs > 0, "{total:?}");
}

/// Turns after every published or counted k-mer: a worker probes past a slot the other
/// has published but not yet persisted, and persists first — the crash that loses the
/// earlier slot leaves a hole, which recovery must close.
#[test]
fn interleaved_inserts_of_two_workers_recover() {
    let base = Scenario {
        switch_after: at_inserts,
        ..scenario(11, 0x30)
    };
    let total = run_all::<1>("insert turns", &schedules(&base, 2));
    assert!(
        total.moved > 0,
        "no crash image had a hole to close: {total:?}"
    );
}

/// `--fence per-slot` (the seed's Static-HT): every written slot is its own group, so a
/// worker may be switched after each of them; every crash image recovers as with groups.
#[test]
fn per_slot_fences_recover() {
    let base = scenario(11, 0x38);
    let per_slot = Scenario {
        drive: Drive {
            group: crate::kmer::table::Fence::PerSlot.lines(),
            ..base.drive
        },
        ..base
    };
    let total = run_all::<1>("per-slot fences", &schedules(&per_slot, 2));
    assert!(total.second_runs > 0, "{total:?}");
}

/// `--persist none` issues no write-back and no fence: the checker must see that nothing
/// the job acknowledged is durable (the production instructions are what it consumes).
#[test]
fn a_persister_that_issues_nothing_is_caught() {
    let s = Scenario {
        strategy: PersistStrategy::None,
        restarts: 0,
        ..scenario(11, 0x60)
    };
    let e = check::<1>(&s).expect_err("--persist none must fail the check");
    assert!(e.contains("is not durable"), "{e}");
}

/// The same schedule records the same log, operation for operation.
#[test]
fn a_schedule_records_the_same_run_every_time() {
    let s = Scenario {
        choices: vec![1, 1, 0],
        switch_after: at_inserts,
        ..scenario(11, 0x70)
    };
    let record = || {
        let job = Job::<1>::new(genomes(s.seed, s.k), s.k, persister(s.strategy));
        let mut t = StaticPm::<1, _>::format(
            PoolWords::over(
                recording(&s, vec![0; HEADER_WORDS + CAPACITY * SLOT_WORDS]),
                job.persister,
            ),
            s.k,
            CAPACITY,
            s.strategy,
            job.inputs,
        );
        insert_rest(&mut Observed(&mut t), &s.drive.driver(), &job.genomes, s.k).unwrap();
        t.memory().backing().take_log()
    };
    let first = record();
    assert!(first.len() > 500);
    for _ in 0..3 {
        assert!(record() == first, "two recordings of one schedule differ");
    }
}
