//! Driving a [`KmerTable`] with several threads: one genome at a time, its k-mers split
//! into one contiguous part per thread, each thread walking its part with a small ring of
//! prefetched lookups in flight.
//!
//! The seed gives each thread whole genomes (so a k-mer's count rises once per genome);
//! that needs per-thread state in every slot. Splitting each genome across the threads
//! instead keeps one "last genome" tag per slot correct (concurrent inserts are all for the
//! same genome) and keeps the threads equally busy whatever the genome sizes.
//!
//! A partitioned table (`--partition nodes`, [`super::table::partition`]) is driven through
//! an exchange instead: each worker reads its share of the genome and hands every k-mer to
//! a worker of the node whose sub-table owns it, which inserts (or marks) it locally.
//!
//! Why the ring: a table far larger than the caches costs a DRAM miss per k-mer. Hashing
//! k-mer i+16 and prefetching its slot while k-mer i is inserted keeps ~16 misses in
//! flight per thread instead of one (memory-level parallelism).

use super::encode::BASE_CODE;
use super::encode::{Kmer, for_each_kmer};
use super::filter::StrandFilter;
use super::read::{
    CHUNK_BASES, Genome, GenomeStats, Piece, ReadError, Split, genome_name_of, no_kmer,
    stream_fasta,
};
use super::rendezvous::Rendezvous;
use super::source::GenomeInput;
use super::table::partition::part_of;
use super::table::{Entry, GenomeId, Inserted, KmerTable, Unpersisted};
use pmscope_core::record::ThreadPlacement;
use pmscope_runner::pin::{PinError, run_pinned};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Lookups kept in flight per thread.
const DEPTH: usize = 16;

/// A worker's watch for Ctrl-C and SIGTERM, asked once per k-mer and polling the signal
/// flag every [`StopPoll::EVERY`] k-mers. One genome can take minutes (hours for tx-pm,
/// whose every insert is a transaction that msyncs on a plain file), so workers cannot
/// wait for its end: one that sees a signal skips the rest of its part, and the job stops
/// before it marks the genome complete, so a pool resumes that genome as after a kill.
struct StopPoll {
    left: u32,
    stopped: bool,
}

impl StopPoll {
    /// Polls per this many k-mers: a call is cheap against an insert, and 64 inserts of
    /// tx-pm on ext4 (about 0.6 ms each, each msyncs) are well under a tenth of a second.
    const EVERY: u32 = 64;

    fn new() -> StopPoll {
        StopPoll {
            left: Self::EVERY,
            stopped: pmscope_sys::signal::received().is_some(),
        }
    }

    /// Whether a signal has arrived (as of the last poll).
    #[inline(always)]
    fn stopped(&mut self) -> bool {
        if !self.stopped {
            self.left -= 1;
            if self.left == 0 {
                self.left = Self::EVERY;
                self.stopped = pmscope_sys::signal::received().is_some();
            }
        }
        self.stopped
    }
}

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

    /// One worker on each of `cpus` (a partitioned job's node by node).
    pub fn on(cpus: Vec<usize>) -> Result<Workers, PinError> {
        if cpus.is_empty() {
            return Err(PinError("no CPU to run on".into()));
        }
        Ok(Workers { cpus })
    }

    /// The CPUs, worker by worker.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
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

/// Runs per worker a genome is cut into when workers claim their work ([`Driver::claiming`]).
const PIECES: usize = 16;

/// A genome's windows as the workers take them: run w for worker w, or claimed run by
/// run from a shared counter.
struct Shares {
    runs: Vec<Vec<(usize, usize)>>,
    next: Option<AtomicUsize>,
}

impl Shares {
    /// Calls `f(a, b)` for every byte range of the genome worker `w` takes.
    #[inline(always)]
    fn for_each(&self, w: usize, mut f: impl FnMut(usize, usize)) {
        match &self.next {
            None => {
                for &(a, b) in &self.runs[w] {
                    f(a, b);
                }
            }
            Some(next) => {
                while let Some(run) = self.runs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    for &(a, b) in run {
                        f(a, b);
                    }
                }
            }
        }
    }
}

/// k-mers a worker gathers before it inserts them region by region.
const BLOCK: usize = 1 << 20;
/// Bytes of table per region: what the TLB (and a slice of the last-level cache) covers.
const REGION_BYTES: u64 = 2 << 20;
/// Tables up to this size are probed directly, without buckets: they stay in the caches
/// and the TLB anyway.
const DIRECT_BYTES: u64 = 64 << 20;

/// What a worker does with each k-mer of its part.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Insert(GenomeId),
    Mark,
}

/// Gathers k-mers into buckets by the high bits of their hash, which select the region of
/// the table they land in, then applies them bucket by bucket. A table larger than the
/// TLB's reach costs a page walk per random probe (several memory accesses under a
/// hypervisor's nested paging); applied in region order, consecutive probes share a few
/// pages and the walks are amortised over a whole bucket.
struct Buckets<const W: usize> {
    shift: u32,
    buckets: Vec<Vec<(Kmer<W>, u64)>>,
    held: usize,
}

impl<const W: usize> Buckets<W> {
    fn new() -> Buckets<W> {
        Buckets {
            shift: 64,
            buckets: Vec::new(),
            held: 0,
        }
    }

    /// One bucket per region of `table`; the buffers are kept from genome to genome (fresh
    /// ones would cost page faults and zeroing every time).
    fn fit<T: KmerTable<W>>(&mut self, table: &T) {
        let regions = (table.footprint_bytes() / REGION_BYTES).max(1);
        let bits = (64 - regions.leading_zeros()).min(12);
        let n = 1usize << bits;
        if self.buckets.len() != n {
            self.shift = 64 - bits;
            self.buckets = (0..n)
                .map(|_| Vec::with_capacity(BLOCK / n + BLOCK / (4 * n) + 16))
                .collect();
        }
    }

    #[inline(always)]
    fn push(&mut self, kmer: &Kmer<W>, hash: u64) -> bool {
        // shift = 64 selects bucket 0 (a table of one region).
        let b = hash.checked_shr(self.shift).unwrap_or(0) as usize;
        self.buckets[b].push((*kmer, hash));
        self.held += 1;
        self.held >= BLOCK
    }

    /// Applies every held k-mer, bucket by bucket, with prefetches in flight, until `poll`
    /// sees a signal (a block is a million k-mers: minutes of tx-pm); returns how many
    /// were new (insert) or found (mark).
    fn flush<T: KmerTable<W>>(
        &mut self,
        table: &T,
        action: Action,
        batch: usize,
        poll: &mut StopPoll,
    ) -> u64 {
        let mut count = 0u64;
        let mut unpersisted = Unpersisted::with_batch(batch);
        let mut apply = |kmer: &Kmer<W>, hash: u64| {
            if poll.stopped() {
                return;
            }
            match action {
                Action::Insert(id) => {
                    count += u64::from(insert_grouped(table, kmer, hash, id, &mut unpersisted))
                }
                Action::Mark => count += u64::from(table.mark(kmer, hash).is_some()),
            }
        };
        let mut ring = Ring::new((Kmer::<W>::ZERO, 0u64));
        for bucket in &mut self.buckets {
            for &(kmer, hash) in bucket.iter() {
                table.prefetch(hash);
                if let Some((k, h)) = ring.push((kmer, hash)) {
                    apply(&k, h);
                }
            }
            bucket.clear();
        }
        ring.drain(|(k, h)| apply(&k, h));
        table.persist_deferred(&mut unpersisted);
        self.held = 0;
        count
    }
}

/// k-mers a worker reads before the exchange hands them over (a round): the buffers of a
/// round stay a few tens of MB per worker whatever the genome.
const EXCHANGE_BLOCK: usize = 1 << 20;

/// The workers with their bucket buffers, kept across genomes.
pub struct Driver<const W: usize> {
    workers: Workers,
    buckets: Vec<Mutex<Buckets<W>>>,
    /// The part (sub-table) each worker is local to: all 0 unless partitioned.
    homes: Vec<usize>,
    exchange_block: usize,
    /// Bases a streamed input is scanned in ([`CHUNK_BASES`]; tests make it small).
    stream_chunk: usize,
    /// Written lines per persisted group ([`Unpersisted::BATCH`]).
    batch: usize,
    /// Tables up to this size are probed directly ([`DIRECT_BYTES`]).
    direct_bytes: u64,
    /// Whether workers claim runs of a genome instead of taking one fixed part each.
    claiming: bool,
}

impl<const W: usize> Driver<W> {
    /// A driver for `workers`.
    pub fn new(workers: Workers) -> Driver<W> {
        let homes = vec![0; workers.len()];
        Self::partitioned(workers, homes)
    }

    /// A driver for `workers` of a partitioned table, worker i local to part `homes[i]`.
    pub fn partitioned(workers: Workers, homes: Vec<usize>) -> Driver<W> {
        assert_eq!(homes.len(), workers.len());
        let buckets = (0..workers.len())
            .map(|_| Mutex::new(Buckets::new()))
            .collect();
        Driver {
            workers,
            buckets,
            homes,
            exchange_block: EXCHANGE_BLOCK,
            stream_chunk: CHUNK_BASES,
            batch: Unpersisted::BATCH,
            direct_bytes: DIRECT_BYTES,
            claiming: false,
        }
    }

    /// This driver, its workers claiming runs of each genome ([`PIECES`] per worker) from a
    /// shared counter instead of taking one fixed part each, so that a worker whose CPU is
    /// shared with other work (2 vCPUs and a compiler, say) takes fewer runs and the other
    /// does not wait for it at the end of every genome. Which worker inserts a k-mer then
    /// depends on timing: for tables that make nothing durable (the crash checker replays
    /// the persistent tables' workers by their fixed parts).
    pub fn claiming(mut self, on: bool) -> Driver<W> {
        self.claiming = on;
        self
    }

    /// How `genome`'s windows are handed to the workers.
    fn shares(&self, genome: &Genome, k: usize) -> Shares {
        let n = self.workers.len();
        if self.claiming && n > 1 {
            Shares {
                runs: split(genome, k, n * PIECES),
                next: Some(AtomicUsize::new(0)),
            }
        } else {
            Shares {
                runs: split(genome, k, n),
                next: None,
            }
        }
    }

    /// This driver, gathering k-mers into region buckets for every table larger than
    /// `bytes` instead of [`DIRECT_BYTES`] (so that a test's small table takes that path).
    pub fn direct_up_to(mut self, bytes: u64) -> Driver<W> {
        self.direct_bytes = bytes;
        self
    }

    /// This driver, persisting in groups of `lines` written lines instead of
    /// [`Unpersisted::BATCH`] (the crash-image checker crosses many group boundaries so).
    pub fn grouping(mut self, lines: usize) -> Driver<W> {
        self.batch = lines.max(1);
        self
    }

    /// Hands every k-mer `produce(worker, round, emit)` emits to a worker local to the
    /// part that owns it, which applies `action` to it in its own part: `rounds` rounds of
    /// read, barrier, apply, barrier. Returns the new (insert) or found (mark) k-mers and
    /// where the workers ran.
    fn exchange<T: KmerTable<W>>(
        &self,
        table: &T,
        rounds: usize,
        produce: impl Fn(usize, usize, &mut dyn FnMut(&Kmer<W>, u64)) + Sync,
        action: Action,
    ) -> Result<(u64, Vec<ThreadPlacement>), PinError> {
        let n = self.workers.len();
        let parts = table.parts();
        let members: Vec<Vec<usize>> = (0..parts)
            .map(|p| (0..n).filter(|&w| self.homes[w] == p).collect())
            .collect();
        if let Some(p) = members.iter().position(|m| m.is_empty()) {
            return Err(PinError(format!(
                "no worker runs on the node of sub-table {p}"
            )));
        }
        // boxes[producer * n + consumer]: a producer fills its row, then (after the
        // barrier) each consumer empties its column.
        let boxes: Vec<Mutex<Vec<(Kmer<W>, u64)>>> =
            (0..n * n).map(|_| Mutex::new(Vec::new())).collect();
        // Breakable: a worker that fails mid-exchange ends the run instead of hanging it.
        let barrier = Rendezvous::new(n);
        let lock = |i: usize| boxes[i].lock().unwrap_or_else(|p| p.into_inner());
        let (counts, placements) = self.workers.run(|w| {
            let _release = barrier.break_on_panic();
            let (mut count, mut applied) = (0u64, 0u64);
            let mut unpersisted = Unpersisted::with_batch(self.batch);
            let mut poll = StopPoll::new();
            for round in 0..rounds {
                {
                    let mut row: Vec<_> = (0..n).map(|c| lock(w * n + c)).collect();
                    // A stopped producer emits nothing more but keeps to the rounds: the
                    // others wait for it at every barrier.
                    produce(w, round, &mut |kmer: &Kmer<W>, hash: u64| {
                        if poll.stopped() {
                            return;
                        }
                        let m = &members[part_of(hash, parts)];
                        // Bits 32..48 pick the consumer: independent of the part's bits.
                        let c = m[(((hash >> 32) & 0xffff) as usize * m.len()) >> 16];
                        row[c].push((*kmer, hash));
                    });
                }
                barrier.wait();
                let mut apply = |kmer: &Kmer<W>, hash: u64| {
                    applied += 1;
                    count += match action {
                        Action::Insert(id) => {
                            u64::from(insert_grouped(table, kmer, hash, id, &mut unpersisted))
                        }
                        Action::Mark => u64::from(table.mark(kmer, hash).is_some()),
                    };
                };
                let mut ring = Ring::new((Kmer::<W>::ZERO, 0u64));
                for p in 0..n {
                    let mut inbox = lock(p * n + w);
                    for &(kmer, hash) in inbox.iter() {
                        table.prefetch(hash);
                        if let Some((x, h)) = ring.push((kmer, hash)) {
                            apply(&x, h);
                        }
                    }
                    inbox.clear();
                }
                ring.drain(|(x, h)| apply(&x, h));
                // The boxes are refilled only when every consumer has emptied its column.
                barrier.wait();
            }
            table.persist_deferred(&mut unpersisted);
            if let Action::Insert(_) = action {
                table.add_part_counts(self.homes[w], applied, count);
            }
            count
        })?;
        Ok((counts.iter().sum(), placements))
    }

    /// `apply` for a partitioned table: the genome's windows in `rounds × workers` runs,
    /// worker w reading run `round × workers + w`.
    fn apply_exchanged<T: KmerTable<W>>(
        &self,
        table: &T,
        genome: &Genome,
        k: usize,
        action: Action,
    ) -> Result<(u64, Vec<ThreadPlacement>), PinError> {
        let n = self.workers.len();
        let windows = genome.stats.kmers as usize + genome.stats.skipped_kmers as usize;
        let rounds = windows.div_ceil(n * self.exchange_block).max(1);
        let runs = split(genome, k, n * rounds);
        self.exchange(
            table,
            rounds,
            |w: usize, round: usize, emit: &mut dyn FnMut(&Kmer<W>, u64)| {
                for &(a, b) in &runs[round * n + w] {
                    for_each_kmer::<W>(&genome.seq[a..b], k, |_, kmer, _| emit(kmer, kmer.hash()));
                }
            },
            action,
        )
    }

    /// The workers.
    pub fn workers(&self) -> &Workers {
        &self.workers
    }

    /// Applies `action` to every k-mer of `genome`, split across the workers.
    fn apply<T: KmerTable<W>>(
        &self,
        table: &T,
        genome: &Genome,
        k: usize,
        action: Action,
    ) -> Result<(u64, Vec<ThreadPlacement>), PinError> {
        if table.parts() > 1 {
            return self.apply_exchanged(table, genome, k, action);
        }
        let parts = self.shares(genome, k);
        if table.footprint_bytes() <= self.direct_bytes {
            return self.apply_direct(table, genome, &parts, k, action);
        }
        let (counts, placements) = self.workers.run(|w| {
            let mut buckets = self.buckets[w].lock().unwrap_or_else(|p| p.into_inner());
            buckets.fit(table);
            let (mut count, mut applied) = (0u64, 0u64);
            let mut poll = StopPoll::new();
            parts.for_each(w, |a, b| {
                for_each_kmer::<W>(&genome.seq[a..b], k, |_, kmer, _| {
                    if poll.stopped() {
                        return;
                    }
                    applied += 1;
                    if buckets.push(kmer, kmer.hash()) {
                        count += buckets.flush(table, action, self.batch, &mut poll);
                    }
                });
            });
            count += buckets.flush(table, action, self.batch, &mut poll);
            if let Action::Insert(_) = action {
                // (a partitioned table of one part comes here, its one part is 0)
                table.add_part_counts(self.homes[w], applied, count);
            }
            count
        })?;
        Ok((counts.iter().sum(), placements))
    }

    /// `apply` for a table that mostly fits in the caches: no buckets, only the ring.
    fn apply_direct<T: KmerTable<W>>(
        &self,
        table: &T,
        genome: &Genome,
        parts: &Shares,
        k: usize,
        action: Action,
    ) -> Result<(u64, Vec<ThreadPlacement>), PinError> {
        let (counts, placements) = self.workers.run(|w| {
            let (mut count, mut applied) = (0u64, 0u64);
            let mut unpersisted = Unpersisted::with_batch(self.batch);
            let mut poll = StopPoll::new();
            parts.for_each(w, |a, b| {
                walk_prefetched(table, &genome.seq[a..b], a, k, |kmer, hash, _, _| {
                    if poll.stopped() {
                        return;
                    }
                    applied += 1;
                    count += match action {
                        Action::Insert(id) => {
                            u64::from(insert_grouped(table, kmer, hash, id, &mut unpersisted))
                        }
                        Action::Mark => u64::from(table.mark(kmer, hash).is_some()),
                    };
                });
            });
            table.persist_deferred(&mut unpersisted);
            if let Action::Insert(_) = action {
                table.add_part_counts(self.homes[w], applied, count);
            }
            count
        })?;
        Ok((counts.iter().sum(), placements))
    }

    /// Inserts every k-mer of `genome` as genome `id`. Returns the number of k-mers new to
    /// the table and where the workers ran.
    pub fn insert_genome<T: KmerTable<W>>(
        &self,
        table: &T,
        genome: &Genome,
        id: GenomeId,
        k: usize,
    ) -> Result<(u64, Vec<ThreadPlacement>), PinError> {
        self.apply(table, genome, k, Action::Insert(id))
    }

    /// Marks every k-mer of `genome` that the table holds, asking `filter` (which holds
    /// every k-mer in the table) first, so that most absent k-mers are never packed,
    /// hashed or looked up. Returns how many lookups found their k-mer.
    pub fn mark_genome_filtered<T: KmerTable<W>>(
        &self,
        table: &T,
        filter: &StrandFilter,
        genome: &Genome,
        k: usize,
    ) -> Result<u64, PinError> {
        let parts = self.shares(genome, k);
        let (hits, _) = self.workers.run(|w| {
            let mut marker = self.marker(table, filter, k);
            parts.for_each(w, |a, b| {
                marker.scan(&genome.seq[a..b]);
            });
            marker.finish()
        })?;
        Ok(hits.iter().sum())
    }

    /// A worker's [`Marker`] of `table` behind `filter`.
    fn marker<'a, T: KmerTable<W>>(
        &self,
        table: &'a T,
        filter: &'a StrandFilter,
        k: usize,
    ) -> Marker<'a, W, T> {
        Marker {
            table,
            filter,
            k,
            chunk: self.stream_chunk,
            ring: Ring::new((Kmer::<W>::ZERO, 0u64)),
            poll: StopPoll::new(),
            hits: 0,
        }
    }

    /// Marks every k-mer of the `inputs` that the table holds, asking `filter` first (as
    /// [`Self::mark_genome_filtered`]), each input streamed by one worker: a file is
    /// decompressed, validated and scanned a chunk of [`CHUNK_BASES`] at a time and never
    /// held whole, so an out-group of any size costs a chunk per worker. The workers take
    /// the inputs largest first. Returns how many lookups found their k-mer, and each
    /// input's genomes (split as `split` says) with their counts, or the input's error.
    pub fn mark_inputs_filtered<T: KmerTable<W>>(
        &self,
        table: &T,
        filter: &StrandFilter,
        inputs: &[GenomeInput],
        split: Split,
        k: usize,
    ) -> Result<(u64, Vec<InputRead>), PinError> {
        let mut order: Vec<usize> = (0..inputs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(inputs[i].expected_bases()));
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<InputRead>>> =
            inputs.iter().map(|_| Mutex::new(None)).collect();
        let (hits, _) = self.workers.run(|_| {
            let mut marker = self.marker(table, filter, k);
            while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                if marker.poll.stopped {
                    break; // the job ends at the next phase boundary
                }
                let r = marker.input(&inputs[i], split);
                *results[i].lock().expect("no worker panics holding it") = Some(r);
            }
            marker.finish()
        })?;
        let results = results
            .into_iter()
            .map(|r| {
                r.into_inner()
                    .expect("no worker panics holding it")
                    .unwrap_or_else(|| Ok(Vec::new())) // skipped after a signal
            })
            .collect();
        Ok((hits.iter().sum(), results))
    }

    /// Marks every k-mer of `genome` that the table holds (the subtraction of a set that
    /// is never stored). Returns how many lookups found their k-mer.
    pub fn mark_genome<T: KmerTable<W>>(
        &self,
        table: &T,
        genome: &Genome,
        k: usize,
    ) -> Result<u64, PinError> {
        self.apply(table, genome, k, Action::Mark).map(|(n, _)| n)
    }
}

/// What streaming one input gave: its genomes, or its error.
pub type InputRead = Result<Vec<StreamedGenome>, ReadError>;

/// A genome of a streamed input, as a report lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedGenome {
    /// The file name without its extensions, or the record name with `PerRecord`.
    pub name: String,
    /// Its counts.
    pub stats: GenomeStats,
}

/// One worker's state while it marks the k-mers of a genome or a streamed input behind the
/// filter: the lookups in flight, the signal watch and the lookups that found their k-mer.
struct Marker<'a, const W: usize, T> {
    table: &'a T,
    filter: &'a StrandFilter,
    k: usize,
    chunk: usize,
    ring: Ring<(Kmer<W>, u64)>,
    poll: StopPoll,
    hits: u64,
}

impl<const W: usize, T: KmerTable<W>> Marker<'_, W, T> {
    /// Marks the k-mers of `seq` (one record, or a piece of one whose earlier windows were
    /// scanned already); returns its windows made of A, C, G, T only.
    fn scan(&mut self, seq: &[u8]) -> u64 {
        let Marker {
            table,
            filter,
            k,
            ring,
            poll,
            hits,
            ..
        } = self;
        let (table, k) = (*table, *k);
        filter.for_each_candidate(seq, |start| {
            if poll.stopped() {
                return;
            }
            let Some(read) = Kmer::<W>::from_bases(&seq[start..start + k]) else {
                return;
            };
            let kmer = read.canonical(k);
            let hash = kmer.hash();
            table.prefetch(hash);
            if let Some((x, h)) = ring.push((kmer, hash)) {
                *hits += u64::from(table.mark(&x, h).is_some());
            }
        })
    }

    /// Marks what is still in flight; returns the lookups that found their k-mer.
    fn finish(self) -> u64 {
        let Marker {
            table,
            mut ring,
            mut hits,
            ..
        } = self;
        ring.drain(|(x, h)| hits += u64::from(table.mark(&x, h).is_some()));
        hits
    }

    /// Streams one input: its genomes' counts, or its error (a malformed file, a genome
    /// without a k-mer).
    fn input(
        &mut self,
        input: &GenomeInput,
        split: Split,
    ) -> Result<Vec<StreamedGenome>, ReadError> {
        let k = self.k;
        let path = match input {
            GenomeInput::Generated(p, i) => {
                let g = p.whole(*i, k);
                for c in &g.contigs {
                    self.scan(g.contig_seq(c));
                }
                return Ok(vec![StreamedGenome {
                    name: g.name,
                    stats: g.stats,
                }]);
            }
            GenomeInput::File(path) => path,
        };
        let file_name = genome_name_of(path);
        let mut genomes: Vec<StreamedGenome> = Vec::new();
        // The last k - 1 bases of the record so far: the windows that span two pieces.
        let (mut carry, mut window) = (Vec::<u8>::new(), Vec::<u8>::new());
        let mut record = (0u64, 0u64); // the record's bases and k-mers so far
        stream_fasta(path, self.chunk, |piece| match piece {
            Piece::Record(name) => {
                if let Some(g) = genomes.last_mut() {
                    close_record(&mut g.stats, record, k);
                }
                if split == Split::PerRecord || genomes.is_empty() {
                    let name = if split == Split::PerRecord {
                        name
                    } else {
                        &file_name
                    };
                    genomes.push(StreamedGenome {
                        name: name.to_string(),
                        stats: GenomeStats::default(),
                    });
                }
                record = (0, 0);
                carry.clear();
            }
            Piece::Bases(bases) => {
                window.clear();
                window.extend_from_slice(&carry);
                window.extend_from_slice(bases);
                let valid = self.scan(&window);
                let g = genomes.last_mut().expect("bases follow a header");
                g.stats.kmers += valid;
                g.stats.bases += bases.len() as u64;
                g.stats.ambiguous_bases +=
                    bases.iter().filter(|&&b| BASE_CODE[b as usize] > 3).count() as u64;
                record.0 += bases.len() as u64;
                record.1 += valid;
                carry.clear();
                carry.extend_from_slice(&window[window.len().saturating_sub(k - 1)..]);
            }
        })?;
        if let Some(g) = genomes.last_mut() {
            close_record(&mut g.stats, record, k);
        }
        for g in &genomes {
            if g.stats.kmers == 0 {
                return Err(no_kmer(path, &g.name, &g.stats, k));
            }
        }
        Ok(genomes)
    }
}

/// Adds a finished record, of `bases` bases and `valid` k-mers (already counted as it was
/// scanned), to its genome's counts: the longest record and the windows that were not
/// k-mers.
fn close_record(stats: &mut GenomeStats, (bases, valid): (u64, u64), k: usize) {
    stats.longest_record = stats.longest_record.max(bases);
    stats.skipped_kmers += (bases + 1).saturating_sub(k as u64) - valid;
}

/// Inserts `kmer` with group persistence: every [`Unpersisted::BATCH`] written lines, the
/// thread's group is made durable with one fence. Whether the k-mer was new.
#[inline(always)]
fn insert_grouped<const W: usize, T: KmerTable<W>>(
    table: &T,
    kmer: &Kmer<W>,
    hash: u64,
    genome: GenomeId,
    unpersisted: &mut Unpersisted,
) -> bool {
    let new = table.insert_deferred(kmer, hash, genome, unpersisted) == Inserted::New;
    if unpersisted.full() {
        table.persist_deferred(unpersisted);
    }
    new
}

impl<const W: usize> Driver<W> {
    /// Inserts lists of k-mers as genome 1 ([`insert_kmers`]); a partitioned table gets
    /// them through the exchange, each into its node's part.
    pub fn insert_lists<T: KmerTable<W>>(
        &self,
        table: &T,
        lists: &[Vec<Kmer<W>>],
    ) -> Result<u64, PinError> {
        if table.parts() == 1 {
            return insert_kmers(table, lists, &self.workers, self.batch);
        }
        let n = self.workers.len();
        let (new, _) = self.exchange(
            table,
            1,
            |w: usize, _: usize, emit: &mut dyn FnMut(&Kmer<W>, u64)| {
                for x in lists.iter().skip(w).step_by(n).flatten() {
                    emit(x, x.hash());
                }
            },
            Action::Insert(1),
        )?;
        Ok(new)
    }
}

/// Inserts lists of k-mers (one list per worker) as genome 1, with prefetches in flight,
/// persisting in groups of `batch` written lines.
pub fn insert_kmers<const W: usize, T: KmerTable<W>>(
    table: &T,
    parts: &[Vec<Kmer<W>>],
    workers: &Workers,
    batch: usize,
) -> Result<u64, PinError> {
    let (news, _) = workers.run(|w| {
        let mut new = 0u64;
        let mut unpersisted = Unpersisted::with_batch(batch);
        let mut ring = Ring::new((Kmer::<W>::ZERO, 0u64));
        let mut apply = |x: &Kmer<W>, h: u64| {
            new += u64::from(insert_grouped(table, x, h, 1, &mut unpersisted));
        };
        let mut poll = StopPoll::new();
        for list in parts.iter().skip(w).step_by(workers.len()) {
            for x in list {
                if poll.stopped() {
                    break;
                }
                let h = x.hash();
                table.prefetch(h);
                if let Some((y, hy)) = ring.push((*x, h)) {
                    apply(&y, hy);
                }
            }
        }
        ring.drain(|(y, hy)| apply(&y, hy));
        table.persist_deferred(&mut unpersisted);
        table.add_distinct(new);
        new
    })?;
    Ok(news.iter().sum())
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
    // Chunks of slots, collected one at a time: a chained table has no per-slot iterator.
    const CHUNK: usize = 4096;
    let (out, _) = workers.run(|w| {
        let (lo, hi) = (slots * w / n, slots * (w + 1) / n);
        let mut it = (lo..hi).step_by(CHUNK).flat_map(|s| {
            let mut chunk = Vec::new();
            table.for_each_in(s..(s + CHUNK).min(hi), &mut |x, e| chunk.push((x, e)));
            chunk
        });
        f(&mut it)
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmer::table::volatile::VolatileTable;

    #[test]
    fn concurrent_workers_count_each_genome_once() {
        // Repeats everywhere: every worker meets the same k-mers at the same time.
        let mut seq = b"ACGTTGCA".repeat(4000);
        seq.extend(
            (0..20_000u64)
                .map(|i| b"ACGT"[((i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 62) as usize]),
        );
        seq.extend(b"GGCCATTA".repeat(4000));
        let g = Genome::from_records("g", &[("a", &seq), ("b", &seq[..5000])], 11);
        // A small table is probed directly, a large one (> DIRECT_BYTES) through the
        // region buckets: both paths.
        // Workers with fixed parts and workers claiming runs: the same counts.
        for expected in [40_000, 5_000_000] {
            for claiming in [false, true] {
                check_concurrent_counts(&g, expected, claiming);
            }
        }
    }

    fn check_concurrent_counts(g: &Genome, expected: u64, claiming: bool) {
        let table = VolatileTable::<1>::new(
            11,
            &"dram:4k".parse().unwrap(),
            &pmscope_mapping::MapOptions::host(),
            expected,
            4,
        )
        .unwrap();
        assert_eq!(table.footprint_bytes() > DIRECT_BYTES, expected > 1_000_000);
        let driver = Driver::<1>::new(Workers::new(4).unwrap()).claiming(claiming);
        let (new1, _) = driver.insert_genome(&table, g, 1, 11).unwrap();
        let (new2, _) = driver.insert_genome(&table, g, 2, 11).unwrap();
        assert_eq!(new2, 0);
        assert_eq!(table.distinct(), new1);
        let mut want = std::collections::HashSet::new();
        for c in &g.contigs {
            for_each_kmer::<1>(g.contig_seq(c), 11, |_, x, _| {
                want.insert(*x);
            });
        }
        assert_eq!(new1, want.len() as u64);
        for x in &want {
            assert_eq!(table.get(x, x.hash()).map(|e| e.genomes), Some(2));
        }
        // Marking finds every k-mer of the genome once more.
        assert_eq!(driver.mark_genome(&table, g, 11).unwrap(), g.stats.kmers);
    }

    /// A streamed out-group marks what the same genomes read whole mark, and counts what
    /// reading counts, at every chunk size around k (the windows across a chunk's edge),
    /// per file and per record, plain and gzipped, with Ns and lower case.
    #[test]
    fn streamed_inputs_mark_and_count_as_genomes_read_whole() {
        use crate::kmer::read::read_genomes;
        use std::io::Write as _;
        let k = 13;
        let dir = tempfile::tempdir().unwrap();
        let mut seq = crate::kmer::synth::random_bases(6_000, 0x1234_5678_9ABC_DEF1);
        for i in (500..6_000).step_by(977) {
            seq[i] = b'N';
        }
        seq[2_000..2_100].make_ascii_lowercase();
        let mut text = Vec::new();
        for (i, r) in [&seq[..3_000], &seq[3_000..3_020], &seq[2_500..]]
            .iter()
            .enumerate()
        {
            text.extend_from_slice(format!(">r{i} x\n").as_bytes());
            for line in r.chunks(61) {
                text.extend_from_slice(line);
                text.push(b'\n');
            }
        }
        let plain = dir.path().join("g.fa");
        std::fs::write(&plain, &text).unwrap();
        let gz = dir.path().join("h.fa.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&text).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        // The table holds every other k-mer of the sequence, so about half the lookups hit.
        let mut held = Vec::new();
        let mut n = 0;
        for_each_kmer::<1>(&seq, k, |_, x, _| {
            n += 1;
            if n % 2 == 0 {
                held.push(*x);
            }
        });
        let inputs = [
            GenomeInput::File(plain.clone()),
            GenomeInput::File(gz.clone()),
        ];
        for split in [Split::PerFile, Split::PerRecord] {
            let whole: Vec<Genome> = [&plain, &gz]
                .iter()
                .flat_map(|p| read_genomes(p, split, k).unwrap())
                .collect();
            let (want_hits, want_marks) = marks(&held, k, |driver, table, filter| {
                whole
                    .iter()
                    .map(|g| driver.mark_genome_filtered(table, filter, g, k).unwrap())
                    .sum()
            });
            assert!(want_hits > 0);
            for chunk in [1, k - 1, k, k + 1, 2 * k + 1, 100, CHUNK_BASES] {
                let mut read = Vec::new();
                let (hits, got_marks) = marks(&held, k, |driver, table, filter| {
                    let mut driver = Driver::<1>::new(driver.workers.clone());
                    driver.stream_chunk = chunk;
                    let (hits, r) = driver
                        .mark_inputs_filtered(table, filter, &inputs, split, k)
                        .unwrap();
                    read = r.into_iter().flat_map(|r| r.unwrap()).collect();
                    hits
                });
                assert_eq!(
                    (hits, &got_marks),
                    (want_hits, &want_marks),
                    "chunk {chunk}"
                );
                let want: Vec<StreamedGenome> = whole
                    .iter()
                    .map(|g| StreamedGenome {
                        name: g.name.clone(),
                        stats: g.stats,
                    })
                    .collect();
                assert_eq!(read, want, "chunk {chunk} {split:?}");
            }
        }
    }

    /// Marks `held`'s table by `mark`: the lookups that hit, and the held k-mers marked.
    fn marks(
        held: &[Kmer<1>],
        k: usize,
        mark: impl FnOnce(&Driver<1>, &VolatileTable<1>, &StrandFilter) -> u64,
    ) -> (u64, Vec<bool>) {
        let table = VolatileTable::<1>::new(
            k,
            &"dram:4k".parse().unwrap(),
            &pmscope_mapping::MapOptions::host(),
            held.len() as u64,
            2,
        )
        .unwrap();
        let driver = Driver::<1>::new(Workers::new(2).unwrap());
        insert_kmers(&table, &[held.to_vec()], &driver.workers, 64).unwrap();
        let mut filter = StrandFilter::with_capacity(k, held.len() as u64).unwrap();
        filter.insert_all(held);
        let hits = mark(&driver, &table, &filter);
        let marked = held
            .iter()
            .map(|x| table.get(x, x.hash()).unwrap().marked)
            .collect();
        (hits, marked)
    }

    /// Every k-mer of the input ends up in exactly one sub-table, the one `part_of` names,
    /// with its full count; the parts' inserts and distinct k-mers add up; for each table
    /// kind, over several exchange rounds.
    #[test]
    fn a_partitioned_table_holds_every_kmer_in_exactly_its_own_part() {
        use crate::kmer::table::partition::{PartitionedTable, part_of};
        use crate::kmer::table::{Create, TableKind, TableRequest, WithTable};
        let seq = crate::kmer::synth::random_bases(40_000, 0x2545_F491_4F6C_DD1D);
        let g = Genome::from_records("g", &[("a", &seq), ("b", &seq[7_000..19_000])], 21);
        let h = Genome::from_records("h", &[("a", &seq[10_000..30_000])], 21);

        struct Check<'a>(&'a Genome, &'a Genome);
        impl WithTable<1> for Check<'_> {
            type Output = ();
            fn run<T: Create<1>>(self) {
                let (g, h) = (self.0, self.1);
                let target: pmscope_mapping::TargetSpec = "dram:4k".parse().unwrap();
                let opts = pmscope_mapping::MapOptions::host();
                let parts = 3;
                let tables = (0..parts)
                    .map(|_| {
                        let r = TableRequest {
                            k: 21,
                            target: &target,
                            map_options: &opts,
                            expected_distinct: 40_000,
                            parallel: 1,
                            pool: None,
                            persist: pmscope_persist::PersistChoice::Named(
                                pmscope_persist::PersistStrategy::Clflush,
                            ),
                            features: pmscope_sys::cpu::CpuFeatures::detect(),
                            inputs: 1,
                            partition: None,
                        };
                        (0, vec![], T::create(&r).unwrap())
                    })
                    .collect();
                let table = PartitionedTable::<1, T>::of_tables(tables);
                let cpu = pmscope_sys::affinity::allowed_cpus().unwrap()[0];
                let mut driver =
                    Driver::<1>::partitioned(Workers::on(vec![cpu; 4]).unwrap(), vec![0, 1, 2, 0]);
                // Rounds of 5 000 k-mers per worker: the genome takes several.
                driver.exchange_block = 5_000;
                let (new_g, _) = driver.insert_genome(&table, g, 1, 21).unwrap();
                let (new_h, _) = driver.insert_genome(&table, h, 2, 21).unwrap();
                let mut want = std::collections::HashMap::new();
                for genome in [g, h] {
                    let mut seen = std::collections::HashSet::new();
                    for c in &genome.contigs {
                        for_each_kmer::<1>(genome.contig_seq(c), 21, |_, x, _| {
                            if seen.insert(*x) {
                                *want.entry(*x).or_insert(0u32) += 1;
                            }
                        });
                    }
                }
                assert_eq!(new_g + new_h, want.len() as u64, "{}", T::KIND);
                assert_eq!(table.distinct(), want.len() as u64);
                let subs: Vec<&T> = table.sub_tables().collect();
                for (x, n) in &want {
                    let owner = part_of(x.hash(), parts);
                    for (p, sub) in subs.iter().enumerate() {
                        let got = sub.get(x, x.hash()).map(|e| e.genomes);
                        assert_eq!(got, (p == owner).then_some(*n), "{} part {p}", T::KIND);
                    }
                }
                let facts = table.facts();
                assert_eq!(facts.parts.len(), parts);
                assert_eq!(
                    facts.parts.iter().map(|p| p.inserts).sum::<u64>(),
                    g.stats.kmers + h.stats.kmers
                );
                assert_eq!(
                    facts.parts.iter().map(|p| p.distinct).sum::<u64>(),
                    want.len() as u64
                );
                // Marking (subtract) goes through the exchange too and finds every k-mer.
                assert_eq!(driver.mark_genome(&table, h, 21).unwrap(), h.stats.kmers);
                let mut scanned = 0;
                table.for_each_in(0..table.slots(), &mut |_, _| scanned += 1);
                assert_eq!(scanned, want.len());
            }
        }
        for kind in [TableKind::Volatile, TableKind::StaticPm] {
            kind.with::<1, _>(Check(&g, &h));
        }
    }

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
