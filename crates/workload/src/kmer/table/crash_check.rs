//! The crash-image checker of the static-pm table: every store, flush and fence of long
//! insert streams (the table's real code, through the `PersistentWords` seam, with group
//! persistence as the job drives it: inserts in groups, one `persist_group` per group) is
//! replayed through `pmscope_persist::shadow::CrashModel`; at every operation boundary
//! (every store, flush and fence) every crash image is enumerated, recovered and checked:
//!
//! * the pool opens: every slot is empty or a complete, valid entry (recovery clears
//!   inserts cut short and refuses broken invariants);
//! * every published key is one that was inserted, with a count no higher than the number
//!   of genomes that had started inserting it;
//! * no acknowledged insert is lost (count at least the acknowledged genomes): an insert
//!   is acknowledged when the `persist_group` of its group has returned;
//! * resuming after the last completed genome, as `pmscope kmer` does, ends with exactly
//!   the counts of an uninterrupted run.

use super::Unpersisted;
use super::static_pm::{Bug, HEADER_WORDS, SLOT_WORDS, StaticPm};
use crate::kmer::encode::Kmer;
use pmscope_persist::PersistStrategy;
use pmscope_persist::shadow::{CrashModel, Op, ShadowWords};
use std::collections::{HashMap, HashSet};

const K: usize = 5;
const CAPACITY: usize = 256;

/// A deterministic stream: `genomes` genomes of `per_genome` k-mers from a small pool of
/// values, so repeats within a genome, shared k-mers and probe collisions all occur.
fn stream(seed: u64, genomes: usize, per_genome: usize, distinct: u64) -> Vec<Vec<Kmer<1>>> {
    let mut x = seed;
    (0..genomes)
        .map(|_| {
            (0..per_genome)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    Kmer([(x >> 33) % distinct])
                })
                .collect()
        })
        .collect()
}

/// Words of the model memory: the pool, plus a line for the misaligned slots of
/// [`Bug::CommitOnOtherLine`].
const WORDS: usize = HEADER_WORDS + CAPACITY * SLOT_WORDS + SLOT_WORDS;

fn table(mem: ShadowWords, bug: Option<Bug>) -> StaticPm<1, ShadowWords> {
    let t = StaticPm::format(mem, K, CAPACITY, PersistStrategy::Clwb, 0);
    match bug {
        Some(b) => t.with_bug(b),
        None => t,
    }
}

/// Final counts of an uninterrupted run.
fn truth(genomes: &[Vec<Kmer<1>>]) -> HashMap<Kmer<1>, u32> {
    let mut out = HashMap::new();
    for g in genomes {
        let set: HashSet<_> = g.iter().collect();
        for x in set {
            *out.entry(*x).or_insert(0) += 1;
        }
    }
    out
}

fn run_all(t: &StaticPm<1, ShadowWords>, genomes: &[Vec<Kmer<1>>], from: usize) {
    for (g, kmers) in genomes.iter().enumerate().skip(from) {
        for x in kmers {
            t.insert_kmer(x, x.hash(), (g + 1) as u32);
        }
        t.complete((g + 1) as u32);
    }
}

/// What the checker saw.
#[derive(Debug, Default)]
struct Checked {
    crash_points: u64,
    images: u64,
}

fn show(image: &[u64], bug: Option<Bug>) -> String {
    let offset = if bug == Some(Bug::CommitOnOtherLine) {
        SLOT_WORDS / 2
    } else {
        0
    };
    let mut s = String::new();
    for slot in 0..CAPACITY {
        let b = HEADER_WORDS + offset + slot * SLOT_WORDS;
        if image[b..b + SLOT_WORDS].iter().any(|&w| w != 0) {
            s += &format!("\n  slot {slot}: {:x?}", &image[b..b + SLOT_WORDS]);
        }
    }
    s += &format!("\n  genomes completed: {}", image[8]);
    s
}

/// Runs `genomes` through a table with `bug`, persisting in groups of `group` inserts
/// (and at the end of each genome, as the job's workers do), then checks every crash image
/// at every operation boundary. Err: the first failing crash image, shown.
fn check(genomes: &[Vec<Kmer<1>>], bug: Option<Bug>, group: usize) -> Result<Checked, String> {
    let t = table(ShadowWords::zeroed(WORDS), bug);
    let formatted = t.memory().snapshot();
    t.memory().take_log();
    // Mark(2i): insert i starts; Mark(2i + 1): its group was persisted (acknowledged).
    let mut inserts = Vec::new();
    for (g, kmers) in genomes.iter().enumerate() {
        for chunk in kmers.chunks(group) {
            let mut unpersisted = Unpersisted::default();
            let first = inserts.len();
            for x in chunk {
                t.memory().mark(2 * inserts.len() as u64);
                t.insert_later(x, x.hash(), (g + 1) as u32, &mut unpersisted);
                inserts.push((*x, (g + 1) as u32));
            }
            t.persist_group(&mut unpersisted);
            for i in first..inserts.len() {
                t.memory().mark(2 * i as u64 + 1);
            }
        }
        t.complete((g + 1) as u32);
    }
    let log = t.memory().take_log();
    let want = truth(genomes);

    let mut model = CrashModel::new(formatted);
    let mut started: HashMap<Kmer<1>, HashSet<u32>> = HashMap::new();
    let mut acked: HashMap<Kmer<1>, HashSet<u32>> = HashMap::new();
    let mut checked = Checked::default();
    for (n, op) in log.iter().enumerate() {
        if let Op::Mark(m) = *op {
            let (x, g) = inserts[(m / 2) as usize];
            let into = if m % 2 == 0 { &mut started } else { &mut acked };
            into.entry(x).or_default().insert(g);
            continue;
        }
        model.apply(*op);
        checked.crash_points += 1;
        checked.images += model.images(|image| {
            let fail = |why: String| {
                format!(
                    "crash after operation {n} ({op:?}): {why}; the crash image:{}",
                    show(image, bug)
                )
            };
            let t = StaticPm::<1, _>::open_with(
                ShadowWords::from_image(image.to_vec()),
                "the crash image",
                Some(K),
                None,
                bug,
            )
            .map_err(fail)?;
            let held: HashMap<Kmer<1>, u32> = t.contents().into_iter().collect();
            for (x, c) in &held {
                let issued = started.get(x).map_or(0, |s| s.len()) as u32;
                if *c > issued {
                    return Err(fail(format!(
                        "k-mer {:?} has count {c} but only {issued} genomes inserted it",
                        x.0
                    )));
                }
            }
            for (x, gs) in &acked {
                let c = held.get(x).copied().unwrap_or(0);
                if (c as usize) < gs.len() {
                    return Err(fail(format!(
                        "k-mer {:?} was acknowledged for {} genomes but the image counts {c}",
                        x.0,
                        gs.len()
                    )));
                }
            }
            // Resume as the job does and finish: the counts must be exact.
            let done = t.header().done as usize;
            run_all(&t, genomes, done);
            let end: HashMap<Kmer<1>, u32> = t.contents().into_iter().collect();
            if end != want {
                let wrong = want
                    .iter()
                    .find(|(x, c)| end.get(x) != Some(c))
                    .map(|(x, c)| format!("{:?}: {:?} instead of {c}", x.0, end.get(x)))
                    .unwrap_or_else(|| "a k-mer that was never inserted".into());
                return Err(fail(format!(
                    "resumed after genome {done} and finished, the counts differ ({wrong})"
                )));
            }
            Ok(())
        })?;
    }
    Ok(checked)
}

#[test]
fn every_crash_image_of_long_insert_streams_recovers() {
    let mut total = Checked::default();
    for seed in 1..=6 {
        // Groups of 1 (every insert persisted alone), 2 and 3 inserts.
        let group = 1 + seed as usize % 3;
        let genomes = stream(seed, 4, 150, 180);
        let c = check(&genomes, None, group).unwrap_or_else(|e| panic!("{e}"));
        total.crash_points += c.crash_points;
        total.images += c.images;
    }
    eprintln!(
        "static-pm crash check: {} crash points, {} crash images recovered, checked and resumed",
        total.crash_points, total.images
    );
    assert!(total.crash_points >= 2000, "{total:?}");
    assert!(total.images >= total.crash_points);
}

/// The bug is caught both when every insert is persisted alone and in groups of 3.
fn caught(bug: Bug) -> String {
    let genomes = stream(7, 3, 60, 80);
    let mut first = None;
    for group in [1, 3] {
        match check(&genomes, Some(bug), group) {
            Ok(c) => panic!("{bug:?} was not caught with groups of {group} ({c:?})"),
            Err(e) => {
                eprintln!("{bug:?} caught (groups of {group}): {e}");
                first.get_or_insert(e);
            }
        }
    }
    first.expect("checked")
}

#[test]
fn publishing_before_the_key_is_caught() {
    let e = caught(Bug::PublishBeforeKey);
    assert!(e.contains("the crash image:\n  slot"), "{e}");
}

#[test]
fn a_missing_fence_is_caught() {
    let e = caught(Bug::MissingFence);
    assert!(e.contains("acknowledged"), "{e}");
}

#[test]
fn a_torn_count_is_caught() {
    let e = caught(Bug::TornCount);
    assert!(e.contains("the crash image:"), "{e}");
}

#[test]
fn a_commit_word_on_another_line_than_its_key_is_caught() {
    let e = caught(Bug::CommitOnOtherLine);
    // The image that shows it: a published slot whose key line never persisted.
    assert!(e.contains("the crash image:\n  slot"), "{e}");
}
