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
//!   `pmscope kmer` reopens a pool: during creation, until the pool is named, it holds no
//!   pool (no magic) or an empty one, never a damaged one; afterwards it opens, recovery
//!   leaves no claim, no k-mer in two slots and no slot a lookup misses, every count is at
//!   most the truth, every acknowledged insert and every completed genome is there;
//!   resumed to the end through the same loop, it ends with exactly the counts of an
//!   uninterrupted run;
//! * whenever the production code returns — a pool formatted or opened, a worker's group
//!   persisted, a genome completed — what it stored before is durable;
//! * crash after crash: images whose recovery had work (a claim cleared, a hole closed, a
//!   copy dropped) are reopened on a recording memory, and the recovery and the resumed
//!   run are recorded and checked the same way.
//!
//! Bounds (deterministic): 3 genomes of about 100 k-mers each, a 512-slot table, groups of
//! 2-3 written lines (and of one, `--fence per-slot`); k = 11, 40, 80 and 100 (keys of one
//! to four words, every width the table has); `clwb`, `clflushopt`, `clflush` and
//! `msync`; 8 schedules of group turns for one key word, 4 for two, 2 for three and four,
//! 4 of insert turns, one through the buckets; up to 4 second runs per scenario, each
//! image of which is also recovered by `kmer recover`. Production-size groups (up to
//! `Unpersisted::BATCH`, 256 lines) run on genomes 8 times larger with a sample of their
//! crash points ([`production_size_groups_recover`]). Creation — formatting, then naming
//! the pool as `kmer count --pool` does — is judged at every point of every run. About
//! 90 s on 2 cores in release mode.

mod judge;
mod run;

use super::Unpersisted;
use super::static_pm::{
    HEADER_WORDS, Header, META, PoolWords, SLOT_WORDS, StaticPm, VALID, create_named, recover,
};
use crate::kmer::read::Genome;
use crate::kmer::synth::random_bases;
use judge::{Acks, Checked, Job, Phase, Replay, Restart, exact};
use pmscope_persist::record::{RecordedWords, Schedule};
use pmscope_persist::shadow::Op;
use pmscope_persist::{PersistStrategy, Persister};
use run::{CREATED, Drive, NAMED, OPENED, Observed, PERSISTED, Plain, insert_rest};

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
    /// Slots of the table.
    capacity: usize,
    /// The genomes' lengths, in multiples of the base case's (see [`genomes`]).
    scale: usize,
    /// Crash points judged: one in `every`, at most `images` images each
    /// ([`Replay::sample`]).
    every: u64,
    images: u64,
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
/// three genomes), a point mutation, a repeat inside a genome, two records in one. The
/// windows are `scale` times the base case's, and longer by k - 40 for k > 40 so that
/// long keys have about as many k-mers as short ones.
fn genomes(seed: u64, k: usize, scale: usize) -> Vec<Genome> {
    let (f, e) = (scale, k.saturating_sub(40));
    let r = random_bases(400 * f + e, seed);
    let mut second = r[40 * f..150 * f + e].to_vec();
    second[55 * f] = if second[55 * f] == b'A' { b'C' } else { b'A' };
    let mut third = r[0..50 * f + e].to_vec();
    third.extend_from_slice(&r[10 * f..40 * f]);
    let g = |name: &str, recs: &[(&str, &[u8])]| Genome::from_records(name, recs, k);
    vec![
        g("g1", &[("a", &r[0..110 * f + e])]),
        g("g2", &[("a", &second)]),
        g("g3", &[("a", &third), ("b", &r[120 * f..190 * f + e])]),
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

/// Records the scenario's run from a zeroed pool and checks it (see the module comment):
/// the pool is created as `kmer count --pool` creates one (formatted, then named), and
/// each image kept for a second run is both recovered by `kmer recover` and resumed.
fn check<const W: usize>(s: &Scenario) -> Result<Checked, String> {
    let job = Job::<W>::new(genomes(s.seed, s.k, s.scale), s.k, persister(s.strategy));
    let words = HEADER_WORDS + s.capacity * SLOT_WORDS;
    let header = Header {
        k: s.k,
        capacity: s.capacity,
        strategy: s.strategy,
        inputs: job.inputs,
        done: 0,
    };
    let mut t = create_named::<W, _, String>(
        PoolWords::over(recording(s, vec![0; words]), job.persister),
        &header,
        |mem| {
            mem.mark(NAMED);
            Ok(())
        },
    )?;
    t.memory().backing().mark(CREATED);
    insert_rest(&mut Observed(&mut t), &s.drive.driver(), &job.genomes, s.k)?;
    exact(&t, job.truth()).map_err(|e| format!("the uninterrupted run: {e}"))?;
    let log = t.memory().backing().take_log();
    let mut replay = Replay::new(&job, vec![0; words], Phase::Creating, Acks::default())
        .keep_restarts(s.restarts)
        .sample(s.every, s.images);
    replay.replay(&log)?;
    let mut checked = replay.checked;
    for r in replay.restarts {
        checked += recovered::<W>(&job, s, r.clone())?;
        checked += again(&job, s, r)?;
    }
    Ok(checked)
}

/// A crash image recovered by `pmscope kmer recover` on a recording memory, every crash
/// point of that recovery checked: what it returns recovered must be durable, and a crash
/// during it must leave a pool that opens and holds what the image held.
fn recovered<const W: usize>(job: &Job<W>, s: &Scenario, r: Restart<W>) -> Result<Checked, String> {
    let in_recover = |e: String| format!("in `kmer recover` of a crash image: {e}");
    let (_, _, mem) =
        recover(RecordedWords::new(r.image.clone()), "the crash image").map_err(in_recover)?;
    mem.mark(OPENED);
    let mut replay = Replay::new(job, r.image, Phase::Working, r.acks).sample(s.every, s.images);
    replay.replay(&mem.take_log()).map_err(in_recover)?;
    Ok(Checked {
        second_runs: 1,
        ..replay.checked
    })
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
    let mut replay = Replay::new(job, r.image, Phase::Working, r.acks).sample(s.every, s.images);
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
        capacity: CAPACITY,
        scale: 1,
        every: 1,
        images: 512,
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
        total.crash_points + total.skipped > 1000 && total.images >= total.crash_points,
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
        let job = Job::<1>::new(genomes(s.seed, s.k, s.scale), s.k, persister(s.strategy));
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

/// Three-word keys (65 ≤ K ≤ 96): the publish follows every key word, not the first two.
#[test]
fn every_crash_image_of_the_production_path_recovers_three_word_keys() {
    let total = run_all::<3>("three-word keys", &schedules(&scenario(80, 0x80), 1));
    assert!(total.second_runs > 0, "{total:?}");
}

/// Four-word keys (97 ≤ K ≤ 128; the seed's K is 100).
#[test]
fn every_crash_image_of_the_production_path_recovers_four_word_keys() {
    let total = run_all::<4>("four-word keys", &schedules(&scenario(100, 0x90), 1));
    assert!(total.second_runs > 0, "{total:?}");
}

/// Groups of production size: up to [`Unpersisted::BATCH`] (256) written lines, as
/// `kmer count` persists them, on genomes 8 times the base case's (about 900 k-mers each,
/// so each worker's share of a genome fills a group and starts another). All of it would
/// be about 20 000 crash points of up to 512 images, each reopened and resumed: one crash
/// point in 127 is judged (a fixed prime stride, so the run replays the same and does not
/// follow the period of an insert's operations), 8 images each, in the first run and in
/// the runs resumed from its crash images; every acknowledgement (a group's persist
/// returned: its up to 256 lines durable) is checked.
#[test]
fn production_size_groups_recover() {
    let base = scenario(11, 0xa0);
    let s = Scenario {
        drive: Drive {
            group: Unpersisted::BATCH,
            ..base.drive
        },
        capacity: 8192,
        scale: 8,
        every: 127,
        images: 8,
        restarts: 2,
        ..base
    };
    let total = run_all::<1>("production-size groups", &[s]);
    assert!(
        total.largest_group >= Unpersisted::BATCH as u64,
        "no group reached production size: {total:?}"
    );
}

/// Every field of the header is held to by its checksum or its own check: a pool with any
/// one of them changed (each to a value that passes every other check) is refused by
/// `kmer recover`, which is told neither K nor the genomes.
#[test]
fn a_header_with_any_field_changed_is_refused() {
    let (k, inputs) = (11, 0x1234_5678);
    let words = HEADER_WORDS + CAPACITY * SLOT_WORDS;
    let t = StaticPm::<1, _>::format(
        PoolWords::over(Plain::of(&vec![0; words]), persister(PersistStrategy::Clwb)),
        k,
        CAPACITY,
        PersistStrategy::Clwb,
        inputs,
    );
    let pool = t.memory().backing().snapshot();
    recover(Plain::of(&pool), "the pool").expect("the pool as written opens");
    let other_strategy = if pool[4] == 1 { 2 } else { 1 };
    // (word, the value it is changed to, what the refusal says)
    let fields: [(&str, usize, u64, &str); 7] = [
        ("magic", 0, pool[0] ^ 1, "not a pmscope k-mer pool"),
        ("layout version", 1, pool[1] + 1, "pool layout version"),
        ("K", 2, pool[2] - 1, "corrupt header"),
        ("capacity", 3, pool[3] / 2, "corrupt header"),
        ("persist strategy", 4, other_strategy, "corrupt header"),
        ("genome fingerprint", 5, pool[5] ^ 1, "corrupt header"),
        ("checksum", 6, pool[6] ^ 1, "corrupt header"),
    ];
    for (name, word, value, says) in fields {
        let mut bad = pool.clone();
        bad[word] = value;
        match recover(Plain::of(&bad), "the pool") {
            Ok((h, _, _)) => panic!("a pool whose {name} was changed opens: {h:?}"),
            Err(e) => assert!(e.contains(says), "{name}: {e}"),
        }
    }
}
