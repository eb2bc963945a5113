//! Judging a recorded run: its log is replayed through the crash model, and at every
//! store, write-back and fence each image a power failure could leave is reopened the way
//! `pmscope kmer` reopens a pool and checked, then resumed to the end; at every point where
//! the production code *returned* (a pool created or opened, a group persisted, a genome
//! completed), what it stored before must already be durable.

use super::run::{
    COMPLETED, CREATED, Drive, NAMED, OPENED, PERSISTED, PlainTable, insert_rest, open_plain,
};
use crate::kmer::build::Driver;
use crate::kmer::encode::{Kmer, for_each_kmer};
use crate::kmer::read::Genome;
use crate::kmer::table::static_pm::{
    HEADER_WORDS, META, SLOT_WORDS, StaticPm, TAG_MASK, TAG_SHIFT, VALID,
};
use crate::kmer::table::{GenomeId, KmerTable};
use pmscope_persist::Persister;
use pmscope_persist::shadow::{CrashModel, Op, ThreadNo};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// Images visited at one crash point at most (past it, a deterministic sample).
const IMAGES_PER_POINT: u64 = 512;

/// What is being checked against: the genomes and how the job runs on them.
pub struct Job<const W: usize> {
    pub genomes: Vec<Genome>,
    pub k: usize,
    pub inputs: u64,
    pub persister: Persister,
    /// The counts of an uninterrupted run after genomes 1..=g, at index g.
    upto: Vec<HashMap<Kmer<W>, u32>>,
    /// Resumes run with one worker: their result is compared, not their interleaving.
    resume: Driver<W>,
    /// Recovered pools already resumed to the end (recovery is deterministic, and many crash
    /// images recover to the same pool).
    resumed: RefCell<HashSet<u64>>,
}

impl<const W: usize> Job<W> {
    pub fn new(genomes: Vec<Genome>, k: usize, persister: Persister) -> Job<W> {
        let mut upto = vec![HashMap::new()];
        for g in &genomes {
            let mut set = HashSet::new();
            for c in &g.contigs {
                for_each_kmer::<W>(g.contig_seq(c), k, |_, x, _| {
                    set.insert(*x);
                });
            }
            let mut next = upto.last().cloned().unwrap_or_default();
            for x in set {
                *next.entry(x).or_insert(0) += 1;
            }
            upto.push(next);
        }
        Job {
            inputs: crate::kmer::job::fingerprint(&genomes),
            genomes,
            k,
            persister,
            upto,
            resume: Drive {
                workers: 1,
                group: crate::kmer::table::Unpersisted::BATCH,
                buckets: false,
            }
            .driver(),
            resumed: RefCell::new(HashSet::new()),
        }
    }

    /// The counts of an uninterrupted run.
    pub fn truth(&self) -> &HashMap<Kmer<W>, u32> {
        self.upto.last().expect("genome 0")
    }
}

/// The inserts acknowledged so far, from the log.
#[derive(Debug, Clone, Default)]
pub struct Acks<const W: usize> {
    /// Per thread, its publishes and counts since its last acknowledged persist.
    pending: HashMap<ThreadNo, Vec<(Kmer<W>, GenomeId)>>,
    /// Per k-mer, the genomes whose count of it was acknowledged.
    acked: HashMap<Kmer<W>, HashSet<GenomeId>>,
    /// The last genome whose completion returned.
    done: GenomeId,
}

impl<const W: usize> Acks<W> {
    /// What a run resumed from a crash image inherits: the acknowledged inserts and genomes.
    /// Inserts pending then were lost or not (the image says which), and no thread of the
    /// new run can acknowledge them.
    pub fn inherited(&self) -> Acks<W> {
        Acks {
            pending: HashMap::new(),
            acked: self.acked.clone(),
            done: self.done,
        }
    }
}

/// Where the replayed run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Formatting a new pool, not yet named: an image may hold no pool yet, never a
    /// damaged one.
    Creating,
    /// Opening (recovering) a crashed pool, or inserting: every image must open.
    Working,
}

/// Totals of a check.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    pub crash_points: u64,
    pub images: u64,
    pub resumed: u64,
    /// Crash points during pool creation.
    pub creating: u64,
    /// Images whose recovery cleared a cut-short insert, closed a hole, dropped a copy.
    pub cleared: u64,
    pub moved: u64,
    pub duplicates: u64,
    /// Recorded runs from a crash image (crash during recovery and the resumed run).
    pub second_runs: u64,
    /// Crash points passed over by a sampled replay ([`Replay::sample`]).
    pub skipped: u64,
    /// The most write-backs one thread issued between two of its fences: the largest group.
    pub largest_group: u64,
}

impl std::ops::AddAssign for Checked {
    fn add_assign(&mut self, o: Checked) {
        self.crash_points += o.crash_points;
        self.images += o.images;
        self.resumed += o.resumed;
        self.creating += o.creating;
        self.cleared += o.cleared;
        self.moved += o.moved;
        self.duplicates += o.duplicates;
        self.second_runs += o.second_runs;
        self.skipped += o.skipped;
        self.largest_group = self.largest_group.max(o.largest_group);
    }
}

/// A crash image worth a second recorded run: recovery has work to do on it.
#[derive(Clone)]
pub struct Restart<const W: usize> {
    pub image: Vec<u64>,
    pub acks: Acks<W>,
    /// Whether its recovery moves an entry into a hole.
    moving: bool,
}

/// The replay of one recorded run.
pub struct Replay<'j, const W: usize> {
    job: &'j Job<W>,
    model: CrashModel,
    /// Every store applied: the memory as the running code saw it.
    current: Vec<u64>,
    phase: Phase,
    acks: Acks<W>,
    pub checked: Checked,
    /// The k-mers (and counts) published in the crashed image a second run started from:
    /// recovery may move them, never lose them.
    kept: HashMap<Kmer<W>, u32>,
    /// Up to `restarts_wanted` images whose recovery had work, kept for second runs.
    pub restarts: Vec<Restart<W>>,
    restarts_wanted: usize,
    /// One crash point in `every` is judged (1: all of them), at most `images` images each.
    every: u64,
    images: u64,
    /// Per thread, its write-backs since its last fence.
    unfenced: HashMap<ThreadNo, u64>,
}

/// A recovered pool's contents, hashed.
fn recovered_hash<const W: usize>(t: &PlainTable<W>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.memory().backing().snapshot().hash(&mut h);
    h.finish()
}

fn slot_of(word: usize) -> Option<usize> {
    let rel = word.checked_sub(HEADER_WORDS)?;
    (rel % SLOT_WORDS == META).then_some(rel / SLOT_WORDS)
}

impl<'j, const W: usize> Replay<'j, W> {
    pub fn new(job: &'j Job<W>, image: Vec<u64>, phase: Phase, acks: Acks<W>) -> Self {
        let kept = if phase == Phase::Working {
            published::<W>(&image)
        } else {
            HashMap::new()
        };
        Replay {
            job,
            kept,
            model: CrashModel::new(image.clone()),
            current: image,
            phase,
            acks,
            checked: Checked::default(),
            restarts: Vec::new(),
            restarts_wanted: 0,
            every: 1,
            images: IMAGES_PER_POINT,
            unfenced: HashMap::new(),
        }
    }

    /// Judges one crash point in `every` after the pool's creation (a fixed stride, prime so that it does not follow
    /// the period of the inserts' stores, write-backs and fences) and at most `images`
    /// images at each: for runs whose every point would take longer than the CI budget.
    /// The acknowledgement checks (what a returned call promised is durable) still run at
    /// every return.
    pub fn sample(mut self, every: u64, images: u64) -> Self {
        self.every = every.max(1);
        self.images = images.max(1);
        self
    }

    /// Keeps up to `n` images whose recovery has work, for second runs.
    pub fn keep_restarts(mut self, n: usize) -> Self {
        self.restarts_wanted = n;
        self
    }

    /// Replays `log`; `Err`: the first failure, with the operation it followed.
    pub fn replay(&mut self, log: &[Op]) -> Result<(), String> {
        for (n, &op) in log.iter().enumerate() {
            self.step(op)
                .map_err(|e| format!("after operation {n} ({op:?}): {e}"))?;
        }
        match self.model.undurable_store() {
            Some(w) => Err(format!(
                "the job returned with word {w} not durable (a store never written back and fenced)"
            )),
            None => Ok(()),
        }
    }

    fn step(&mut self, op: Op) -> Result<(), String> {
        self.model.apply(op);
        match op {
            Op::Store {
                word,
                value,
                thread,
            } => {
                self.current[word] = value;
                if let Some(slot) = slot_of(word)
                    && value & VALID != 0
                {
                    let base = HEADER_WORDS + slot * SLOT_WORDS;
                    let mut key = Kmer::<W>::ZERO;
                    key.0.copy_from_slice(&self.current[base..base + W]);
                    let genome = ((value >> TAG_SHIFT) & TAG_MASK) as GenomeId;
                    self.acks
                        .pending
                        .entry(thread)
                        .or_default()
                        .push((key, genome));
                }
            }
            Op::Mark { value, thread } => return self.returned(value, thread),
            Op::Flush { thread, .. } => *self.unfenced.entry(thread).or_default() += 1,
            Op::Fence { thread } => {
                let n = self.unfenced.remove(&thread).unwrap_or(0);
                self.checked.largest_group = self.checked.largest_group.max(n);
            }
            Op::Sync => {}
        }
        self.crash_here()
    }

    /// A call of the production code returned: what it promised must be durable.
    fn returned(&mut self, value: u64, thread: ThreadNo) -> Result<(), String> {
        let undurable = match value {
            CREATED | OPENED | NAMED => {
                self.phase = Phase::Working;
                self.model.undurable_store()
            }
            PERSISTED => {
                let mine = self.acks.pending.remove(&thread).unwrap_or_default();
                for (x, g) in mine {
                    self.acks.acked.entry(x).or_default().insert(g);
                }
                self.model.undurable_store_of(thread)
            }
            v if v > COMPLETED => {
                self.acks.done = (v - COMPLETED) as GenomeId;
                self.model.undurable_store()
            }
            _ => None,
        };
        match undurable {
            Some(w) => Err(format!(
                "a call returned ({}) while word {w} it depends on is not durable",
                match value {
                    CREATED => "the pool's format".to_string(),
                    NAMED => "the new pool's naming".to_string(),
                    OPENED => "the pool's open and recovery".to_string(),
                    PERSISTED => format!("thread {thread}'s persist_deferred"),
                    v => format!("completed({})", v - COMPLETED),
                }
            )),
            None => Ok(()),
        }
    }

    fn crash_here(&mut self) -> Result<(), String> {
        let point = self.checked.crash_points + self.checked.skipped;
        // Creation is a few dozen points, each of which can name a damaged pool: all judged.
        if self.phase != Phase::Creating && point % self.every != self.every / 2 {
            self.checked.skipped += 1;
            return Ok(());
        }
        self.checked.crash_points += 1;
        if self.phase == Phase::Creating {
            self.checked.creating += 1;
        }
        let model = std::mem::replace(&mut self.model, CrashModel::new(Vec::new()));
        let r = model.images(self.images, |image| self.judge(image));
        self.model = model;
        self.checked.images += r?;
        Ok(())
    }

    /// Checks one crash image (see the module comment of `crash_check`).
    fn judge(&mut self, image: &[u64]) -> Result<(), String> {
        let fail = |why: String| Err(format!("{why}; the crash image:{}", show::<W>(image)));
        let job = self.job;
        let mut t = match open_plain::<W>(image, job.persister, job.k, job.inputs) {
            Ok(t) => t,
            Err(e) if self.phase == Phase::Creating && e.contains("not a pmscope k-mer pool") => {
                // No header yet: the file holds no pool (and `Pool::publish` never names it).
                return Ok(());
            }
            Err(e) if self.phase == Phase::Creating => {
                return fail(format!(
                    "a crash while the pool is created leaves a damaged pool, not none: {e}"
                ));
            }
            Err(e) => return fail(format!("the crashed pool does not open: {e}")),
        };
        let r = t.recovery();
        self.checked.cleared += u64::from(r.cleared > 0);
        self.checked.moved += u64::from(r.moved > 0);
        self.checked.duplicates += u64::from(r.duplicates > 0);
        if let Err(why) = self.holds(&t) {
            return fail(why);
        }
        // Half of the second runs start where recovery closes a hole (a crash during the
        // move), the others where it clears a claim.
        let wanted = |moving: bool| {
            let n = self.restarts.iter().filter(|r| r.moving == moving).count();
            n < self.restarts_wanted.div_ceil(2)
        };
        if (r.moved > 0 && wanted(true)) || (r.cleared + r.duplicates > 0 && wanted(false)) {
            self.restarts.push(Restart {
                image: image.to_vec(),
                acks: self.acks.inherited(),
                moving: r.moved > 0,
            });
        }
        if !job.resumed.borrow_mut().insert(recovered_hash(&t)) {
            return Ok(());
        }
        self.checked.resumed += 1;
        let done = t.header().done;
        insert_rest(&mut t, &job.resume, &job.genomes, job.k)?;
        if let Err(why) = exact(&t, job.truth()) {
            return fail(format!("resumed after genome {done} and finished: {why}"));
        }
        Ok(())
    }

    /// What an opened crash image must hold.
    fn holds(&self, t: &PlainTable<W>) -> Result<(), String> {
        let job = self.job;
        let held = unique(t)?;
        for (x, &c) in &held {
            let most = job.truth().get(x).copied().unwrap_or(0);
            if c > most {
                return Err(format!(
                    "k-mer {:?} has count {c}, but only {most} genomes hold it",
                    x.0
                ));
            }
            if t.get(x, x.hash()).map(|e| e.genomes) != Some(c) {
                return Err(format!(
                    "k-mer {:?} is in a slot but a lookup does not find it (a hole before it)",
                    x.0
                ));
            }
        }
        for (x, &c) in &self.kept {
            let got = t.get(x, x.hash()).map_or(0, |e| e.genomes);
            if got < c {
                return Err(format!(
                    "recovery lost k-mer {:?}: the crashed pool held it with count {c}, now {got}",
                    x.0
                ));
            }
        }
        for (x, gs) in &self.acks.acked {
            let c = t.get(x, x.hash()).map_or(0, |e| e.genomes);
            if (c as usize) < gs.len() {
                return Err(format!(
                    "k-mer {:?} was acknowledged for {} genomes but the image counts {c}",
                    x.0,
                    gs.len()
                ));
            }
        }
        let done = t.header().done;
        if done < self.acks.done {
            return Err(format!(
                "genome {} was completed, but the pool says {done}",
                self.acks.done
            ));
        }
        // A resumed run skips the completed genomes: they must be whole.
        for (x, &c) in &job.upto[done as usize] {
            let got = t.get(x, x.hash()).map_or(0, |e| e.genomes);
            if got < c {
                return Err(format!(
                    "{done} genomes are complete, but k-mer {:?} counts {got} of their {c}",
                    x.0
                ));
            }
        }
        Ok(())
    }
}

/// The k-mers published in a raw image (before any recovery) and their counts.
fn published<const W: usize>(image: &[u64]) -> HashMap<Kmer<W>, u32> {
    let mut held = HashMap::new();
    for words in image[HEADER_WORDS..].chunks(SLOT_WORDS) {
        if words[META] & VALID != 0 {
            let mut key = Kmer::<W>::ZERO;
            key.0.copy_from_slice(&words[..W]);
            let c = words[META] as u32;
            let e = held.entry(key).or_insert(c);
            *e = (*e).max(c);
        }
    }
    held
}

/// The published k-mers and counts; `Err` if one is published in two slots or a claim
/// survived recovery.
fn unique<const W: usize, M: pmscope_persist::PersistentWords>(
    t: &StaticPm<W, M>,
) -> Result<HashMap<Kmer<W>, u32>, String> {
    let mut held = HashMap::new();
    for (x, c) in t.contents() {
        if held.insert(x, c).is_some() {
            return Err(format!("k-mer {:?} is published in two slots", x.0));
        }
    }
    for slot in 0..t.header().capacity {
        let m = t.memory().load(HEADER_WORDS + slot * SLOT_WORDS + META);
        if m != 0 && m & VALID == 0 {
            return Err(format!("slot {slot} is still claimed after recovery"));
        }
    }
    Ok(held)
}

/// Whether a finished table holds exactly `truth`.
pub fn exact<const W: usize, M: pmscope_persist::PersistentWords>(
    t: &StaticPm<W, M>,
    truth: &HashMap<Kmer<W>, u32>,
) -> Result<(), String> {
    let end = unique(t)?;
    if &end == truth {
        return Ok(());
    }
    let wrong = truth
        .iter()
        .find(|(x, c)| end.get(x) != Some(c))
        .map(|(x, c)| format!("{:?}: {:?} instead of {c}", x.0, end.get(x)))
        .unwrap_or_else(|| "a k-mer that was never inserted".into());
    Err(format!(
        "the counts differ from an uninterrupted run's ({wrong})"
    ))
}

/// The header words and every non-empty slot of an image.
fn show<const W: usize>(image: &[u64]) -> String {
    let mut s = format!("\n  header: {:x?}, done {}", &image[..7], image[8]);
    for (slot, words) in image[HEADER_WORDS..].chunks(SLOT_WORDS).enumerate() {
        if words.iter().any(|&w| w != 0) {
            s += &format!("\n  slot {slot}: {words:x?}");
        }
    }
    s
}
