//! Driving a [`KmerTable`] with several threads: one genome at a time, its k-mers split
//! into one contiguous part per thread, each thread walking its part with a small ring of
//! prefetched lookups in flight.
//!
//! The seed gives each thread whole genomes (so a k-mer's count rises once per genome);
//! that needs per-thread state in every slot. Splitting each genome across the threads
//! instead keeps one "last genome" tag per slot correct (concurrent inserts are all for the
//! same genome) and keeps the threads equally busy whatever the genome sizes.
//!
//! Why the ring: a table far larger than the caches costs a DRAM miss per k-mer. Hashing
//! k-mer i+16 and prefetching its slot while k-mer i is inserted keeps ~16 misses in
//! flight per thread instead of one (memory-level parallelism).

use super::encode::{Kmer, for_each_kmer};
use super::read::Genome;
use super::table::{Entry, GenomeId, Inserted, KmerTable};
use pmscope_core::record::ThreadPlacement;
use pmscope_runner::pin::{PinError, run_pinned};

/// Lookups kept in flight per thread.
const DEPTH: usize = 16;

/// The CPUs the worker threads are pinned to (worker i on `cpus[i]`).
#[derive(Debug, Clone)]
pub struct Workers {
    cpus: Vec<usize>,
}

impl Workers {
    /// `threads` workers on the CPUs this process may use, round robin.
    pub fn new(threads: usize) -> Result<Workers, PinError> {
        let allowed = pmscope_sys::affinity::allowed_cpus().map_err(|e| PinError(e.to_string()))?;
        if allowed.is_empty() || threads == 0 {
            return Err(PinError("no CPU to run on".into()));
        }
        Ok(Workers {
            cpus: (0..threads).map(|i| allowed[i % allowed.len()]).collect(),
        })
    }

    /// Number of workers.
    pub fn len(&self) -> usize {
        self.cpus.len()
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    /// Runs `work(worker)` on every worker, pinned; results in worker order.
    pub fn run<R: Send>(
        &self,
        work: impl Fn(usize) -> R + Sync,
    ) -> Result<(Vec<R>, Vec<ThreadPlacement>), PinError> {
        let out = run_pinned(&self.cpus, work)?;
        Ok(out.into_iter().unzip())
    }
}

/// A FIFO of lookups whose memory was prefetched.
struct Ring<T: Copy> {
    buf: [T; DEPTH],
    head: usize,
    len: usize,
}

impl<T: Copy> Ring<T> {
    fn new(fill: T) -> Self {
        Ring {
            buf: [fill; DEPTH],
            head: 0,
            len: 0,
        }
    }

    /// Adds `item`; once full, returns the oldest one.
    #[inline(always)]
    fn push(&mut self, item: T) -> Option<T> {
        if self.len < DEPTH {
            self.buf[(self.head + self.len) % DEPTH] = item;
            self.len += 1;
            None
        } else {
            let out = std::mem::replace(&mut self.buf[self.head], item);
            self.head = (self.head + 1) % DEPTH;
            Some(out)
        }
    }

    fn drain(&mut self, mut f: impl FnMut(T)) {
        while self.len > 0 {
            f(self.buf[self.head]);
            self.head = (self.head + 1) % DEPTH;
            self.len -= 1;
        }
    }
}

/// One k-mer on its way through the ring.
#[derive(Clone, Copy)]
struct Pending<const W: usize> {
    kmer: Kmer<W>,
    hash: u64,
    start: usize,
    forward: bool,
}

/// Calls `f(kmer, hash, start, is_forward)` for every k-mer of `seq` in order, `DEPTH`
/// k-mers after prefetching its slot; `start` is counted from `offset`.
#[inline(always)]
pub fn walk_prefetched<const W: usize, T: KmerTable<W>>(
    table: &T,
    seq: &[u8],
    offset: usize,
    k: usize,
    mut f: impl FnMut(&Kmer<W>, u64, usize, bool),
) {
    let mut ring = Ring::new(Pending {
        kmer: Kmer::<W>::ZERO,
        hash: 0,
        start: 0,
        forward: true,
    });
    for_each_kmer::<W>(seq, k, |start, kmer, forward| {
        let hash = kmer.hash();
        table.prefetch(hash);
        let p = Pending {
            kmer: *kmer,
            hash,
            start: offset + start,
            forward,
        };
        if let Some(p) = ring.push(p) {
            f(&p.kmer, p.hash, p.start, p.forward);
        }
    });
    ring.drain(|p| f(&p.kmer, p.hash, p.start, p.forward));
}

/// Splits a genome's k-mer windows into `parts` runs of nearly equal length; each run is
/// a list of byte ranges of `genome.seq` (a window never crosses a record boundary).
pub fn split(genome: &Genome, k: usize, parts: usize) -> Vec<Vec<(usize, usize)>> {
    let windows = |len: usize| (len + 1).saturating_sub(k);
    let total: usize = genome
        .contigs
        .iter()
        .map(|c| windows(c.end - c.start))
        .sum();
    (0..parts)
        .map(|t| {
            let (lo, hi) = (total * t / parts, total * (t + 1) / parts);
            let mut ranges = Vec::new();
            let mut before = 0;
            for c in &genome.contigs {
                let n = windows(c.end - c.start);
                let (a, b) = (lo.max(before), hi.min(before + n));
                if a < b {
                    ranges.push((c.start + a - before, c.start + b - before + k - 1));
                }
                before += n;
            }
            ranges
        })
        .collect()
}

/// Inserts every k-mer of `genome` as genome `id`, split across the workers. Returns the
/// number of k-mers new to the table and where the workers ran.
pub fn insert_genome<const W: usize, T: KmerTable<W>>(
    table: &T,
    genome: &Genome,
    id: GenomeId,
    k: usize,
    workers: &Workers,
) -> Result<(u64, Vec<ThreadPlacement>), PinError> {
    let parts = split(genome, k, workers.len());
    let (news, placements) = workers.run(|w| {
        let mut new = 0u64;
        for &(a, b) in &parts[w] {
            walk_prefetched(table, &genome.seq[a..b], a, k, |kmer, hash, _, _| {
                if table.insert(kmer, hash, id) == Inserted::New {
                    new += 1;
                }
            });
        }
        table.add_distinct(new);
        new
    })?;
    Ok((news.iter().sum(), placements))
}

/// Marks every k-mer of `genome` that the table holds (the subtraction of a set that is
/// never stored). Returns how many lookups found their k-mer.
pub fn mark_genome<const W: usize, T: KmerTable<W>>(
    table: &T,
    genome: &Genome,
    k: usize,
    workers: &Workers,
) -> Result<u64, PinError> {
    let parts = split(genome, k, workers.len());
    let (hits, _) = workers.run(|w| {
        let mut hits = 0u64;
        for &(a, b) in &parts[w] {
            walk_prefetched(table, &genome.seq[a..b], a, k, |kmer, hash, _, _| {
                if table.mark(kmer, hash).is_some() {
                    hits += 1;
                }
            });
        }
        hits
    })?;
    Ok(hits.iter().sum())
}

/// Runs `f` over the table's slots, split in contiguous ranges across the workers, and
/// returns each worker's result in slot order.
pub fn scan_slots<const W: usize, T: KmerTable<W>, R: Send>(
    table: &T,
    workers: &Workers,
    f: impl Fn(&mut dyn Iterator<Item = (Kmer<W>, Entry)>) -> R + Sync,
) -> Result<Vec<R>, PinError> {
    let n = workers.len();
    let slots = table.slots();
    let (out, _) = workers.run(|w| {
        let mut it = (slots * w / n..slots * (w + 1) / n).filter_map(|s| table.entry_at(s));
        f(&mut it)
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_every_window_once() {
        let g = Genome::from_records(
            "g",
            &[("a", b"ACGTACGTAC"), ("b", b"AC"), ("c", b"GGGGTTTT")],
            4,
        );
        for parts in 1..6 {
            let mut starts = Vec::new();
            for run in split(&g, 4, parts) {
                for (a, b) in run {
                    starts.extend(a..b + 1 - 4);
                }
            }
            // a: windows 0..7, b: none (2 bases), c: 12..17.
            let want: Vec<usize> = (0..7).chain(12..17).collect();
            assert_eq!(starts, want, "{parts} parts");
        }
    }
}
