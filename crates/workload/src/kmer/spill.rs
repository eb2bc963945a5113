//! The binned method out of core: when the genomes' text and their super-k-mers do not fit
//! the memory budget, the bins go to a scratch file, as KMC's bins go to disk.
//!
//! ```text
//!  genomes, one at a time per worker (a file streamed, or a generated genome)
//!     ──split: super-k-mers by minimizer bin, each written *with its bases* (2 bits a
//!       base) into its partition's buffer; a full buffer is appended to the scratch file
//!       ──▶ scratch file: chunks, each of one partition; an index of them in memory
//!  partitions, largest first, one per worker at a time
//!     ──read its chunks; group its super-k-mers by sub-bin and genome; count each sub-bin
//!       in an L2-sized table, as the in-memory method counts a bin──▶ histogram, k-mers
//! ```
//!
//! A partition is a range of bins: bin b of `partitions × sub_bins` fine bins is sub-bin
//! `b % sub_bins` of partition `b / sub_bins`, so a partition's k-mers are counted
//! without the others', and each sub-bin's table stays the size the in-memory method's
//! bins are. What a worker holds is one genome's 2-bit text and one buffer per partition
//! while splitting, one partition (its bytes and their text) while counting: both are
//! sized from the budget ([`plan`]).
//!
//! The scratch file has no name ([`Scratch`]): it is gone when the process ends, however
//! it ends (SIGKILL included), and nothing is left to clean up.

use super::binned::{self, Bins, Counted, Keep, MINIMIZER_BASES, SuperKmer, Worker};
use super::read::{GenomeStats, ReadError};
use super::source::GenomeInput;
use pmscope_core::record::ThreadPlacement;
use pmscope_runner::pin::PinError;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

fn human(bytes: u64) -> String {
    pmscope_core::units::Bytes(bytes).human()
}
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Bytes of a super-k-mer's header in the scratch file: genome (32 bits), sub-bin (16),
/// k-mers in the run (8), unused (8); its bases follow, 4 a byte.
const HEADER: usize = 8;
/// What the process needs besides the bins: code, the reader's buffers, the summaries.
pub const RESERVED: u64 = 64 << 20;
/// The smallest buffer a partition gets per worker while splitting.
const MIN_BUFFER: u64 = 4 << 10;
/// The most k-mer starts of a piece of the split (a few milliseconds of work).
const SPLIT_PIECE: usize = 1 << 20;
/// The most partitions (each has a buffer per worker while splitting).
const MAX_PARTITIONS: usize = 4096;

/// Why the out-of-core count failed.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// A genome could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The workers could not be pinned.
    #[error(transparent)]
    Pin(#[from] PinError),
    /// The scratch file could not be made, written or read; or the budget or the disk is
    /// too small: one sentence.
    #[error("{0}")]
    Scratch(String),
}

/// The scratch file: no name from the start (`O_TMPFILE`) where the file system allows,
/// else a name removed right after it is made, so no exit leaves it behind.
pub struct Scratch {
    file: File,
    dir: PathBuf,
    end: AtomicU64,
}

impl Scratch {
    /// A new, empty scratch file in `dir`.
    pub fn create(dir: &Path) -> Result<Scratch, SpillError> {
        let fail = |e: std::io::Error| {
            SpillError::Scratch(format!(
                "cannot make the scratch file for the bins in {} ({e}); give --tmp DIR on a writable disk",
                dir.display()
            ))
        };
        let file = match pmscope_sys::scratch::create_unnamed(dir) {
            Ok(f) => f,
            Err(e) if pmscope_sys::scratch::unnamed_unsupported(&e) => {
                let path = dir.join(format!(".pmscope-bins-{}", std::process::id()));
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(fail)?;
                std::fs::remove_file(&path).map_err(fail)?;
                f
            }
            Err(e) => return Err(fail(e)),
        };
        Ok(Scratch {
            file,
            dir: dir.to_path_buf(),
            end: AtomicU64::new(0),
        })
    }

    /// Appends `bytes`; returns where they start.
    fn append(&self, bytes: &[u8]) -> Result<u64, SpillError> {
        let at = self.end.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.file.write_all_at(bytes, at).map_err(|e| {
            SpillError::Scratch(format!(
                "writing the bins' scratch file in {} failed after {} ({e}); give --tmp DIR on a disk with more room, or raise --max-mem",
                self.dir.display(),
                human(at),
            ))
        })?;
        Ok(at)
    }

    /// Reads `buf.len()` bytes at `at`.
    fn read(&self, at: u64, buf: &mut [u8]) -> Result<(), SpillError> {
        self.file.read_exact_at(buf, at).map_err(|e| {
            SpillError::Scratch(format!(
                "reading the bins' scratch file in {} failed ({e})",
                self.dir.display()
            ))
        })
    }

    /// Bytes written.
    pub fn bytes(&self) -> u64 {
        self.end.load(Ordering::Relaxed)
    }
}

/// How an out-of-core count is laid out for its budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Partitions (ranges of bins), each counted alone.
    pub partitions: usize,
    /// Bins per partition.
    pub sub_bins: usize,
    /// Bytes of a partition's buffer, per worker, while splitting.
    pub buffer: usize,
    /// Bytes the scratch file is expected to take.
    pub scratch_bytes: u64,
    /// Bytes the workers are expected to hold at most (buffers, or partitions and tables).
    pub memory_bytes: u64,
}

/// Bytes the scratch file takes per k-mer: a run of about (k − m + 2) / 2 k-mers (a new
/// minimizer that often) is a header and its bases, 4 a byte.
pub fn scratch_bytes_per_kmer(k: usize) -> f64 {
    let m = MINIMIZER_BASES.min(k);
    let run = ((k - m + 2) as f64 / 2.0).max(1.0);
    (HEADER as f64 + ((run + k as f64 - 1.0) / 4.0).ceil()) / run
}

/// Lays out an out-of-core count of about `kmers` k-mers (`inserted` of them counted) for
/// `workers` workers within `budget` bytes; refuses, in one sentence, a budget too small.
pub fn plan(
    kmers: u64,
    inserted: u64,
    k: usize,
    slot_bytes: usize,
    cache_bytes: u64,
    workers: usize,
    budget: u64,
) -> Result<Plan, SpillError> {
    let workers = workers.max(1) as u64;
    let scratch = (kmers as f64 * scratch_bytes_per_kmer(k)) as u64;
    let room = budget.saturating_sub(RESERVED);
    // While counting, a worker holds its partition's bytes and their text (about as many)
    // and a table: a partition is a sixth of a worker's share.
    let target = (room / (6 * workers)).clamp(256 << 10, 256 << 20);
    let partitions =
        (scratch.div_ceil(target) as usize).clamp(4 * workers as usize, MAX_PARTITIONS);
    let part = scratch.div_ceil(partitions as u64);
    // While splitting, a worker holds one buffer per partition: a third of its share.
    let buffer = (room / (3 * workers * partitions as u64)).clamp(MIN_BUFFER, 1 << 20);
    let fine = binned::bins_for(inserted.max(1), slot_bytes, cache_bytes, workers as usize)
        .max(partitions);
    let sub_bins = fine.div_ceil(partitions).clamp(1, u16::MAX as usize);
    let table = (binned::slots_for(part / 2) * slot_bytes) as u64 / sub_bins as u64;
    let memory = workers * (partitions as u64 * buffer).max(3 * part + table);
    if memory + RESERVED > budget {
        return Err(SpillError::Scratch(format!(
            "--max-mem {} is too small to count these genomes even out of core: about {} of bins need at least {} ({} workers, {partitions} partitions); raise --max-mem or use fewer --threads",
            human(budget),
            human(scratch),
            human(memory + RESERVED),
            workers,
        )));
    }
    Ok(Plan {
        partitions,
        sub_bins,
        buffer: buffer as usize,
        scratch_bytes: scratch,
        memory_bytes: memory,
    })
}

/// Refuses, in one sentence, a scratch directory without room for the bins (a tenth more
/// than the plan expects).
pub fn check_room(dir: &Path, plan: &Plan) -> Result<(), SpillError> {
    let free = pmscope_sys::dax::fs_facts(dir)
        .map(|f| f.available_bytes)
        .map_err(|e| {
            SpillError::Scratch(format!(
                "cannot read the free space of {} ({e}); give --tmp DIR on a writable disk",
                dir.display()
            ))
        })?;
    let need = plan.scratch_bytes + plan.scratch_bytes / 10;
    if free < need {
        return Err(SpillError::Scratch(format!(
            "the bins need about {} of scratch space out of core, and {} has {} free; give --tmp DIR on a larger disk, or raise --max-mem",
            human(need),
            dir.display(),
            human(free),
        )));
    }
    Ok(())
}

/// A genome as the split saw it.
#[derive(Debug, Clone)]
pub struct SeenGenome {
    /// Its name.
    pub name: String,
    /// Its file (or generated input).
    pub path: PathBuf,
    /// Its counts.
    pub stats: GenomeStats,
}

/// The bins in the scratch file.
pub struct Spilled {
    /// Minimizer length.
    pub m: usize,
    /// Bins per partition.
    pub sub_bins: usize,
    /// Genomes whose k-mers are counted (the first ones); the others' are looked up.
    pub inserted: usize,
    /// Genomes in all.
    pub genomes: Vec<SeenGenome>,
    /// `chunks[p]`: where partition p's chunks are in the scratch file, and their bytes.
    chunks: Vec<Vec<(u64, u32)>>,
    /// k-mers (with repeats) of the inserted genomes in each fine bin.
    pub kmers: Vec<u64>,
    /// Super-k-mers written.
    pub super_kmers: u64,
}

impl Spilled {
    /// Inserted k-mers (with repeats) of the largest bin.
    pub fn largest(&self) -> u64 {
        self.kmers.iter().copied().max().unwrap_or(0)
    }

    fn partition_bytes(&self, p: usize) -> u64 {
        self.chunks[p].iter().map(|c| c.1 as u64).sum()
    }
}

/// Appends the 2-bit codes of bases `from..from + len` of a packed text, 4 a byte, base i
/// in bits 2(i mod 4): the text's own layout from base `from` on, so the count reads a
/// run back as words. The last byte may carry bases beyond the run.
fn append_bases(words: &[u64], from: usize, len: usize, out: &mut Vec<u8>) {
    let mut i = 0;
    while i < len {
        let at = from + i;
        let (w, shift) = (at >> 5, (at & 31) * 2);
        let mut v = words[w] >> shift;
        if shift != 0 {
            v |= words.get(w + 1).copied().unwrap_or(0) << (64 - shift);
        }
        let bases = (len - i).min(32);
        out.extend_from_slice(&v.to_le_bytes()[..bases.div_ceil(4)]);
        i += 32;
    }
}

/// One worker's side of the split.
struct SplitWorker<'a> {
    scratch: &'a Scratch,
    plan: Plan,
    buffers: Vec<Vec<u8>>,
    chunks: Vec<Vec<(u64, u32)>>,
    kmers: Vec<u64>,
    super_kmers: u64,
}

impl SplitWorker<'_> {
    fn flush(&mut self, p: usize) -> Result<(), SpillError> {
        let buf = &mut self.buffers[p];
        if !buf.is_empty() {
            let at = self.scratch.append(buf)?;
            self.chunks[p].push((at, buf.len() as u32));
            buf.clear();
        }
        Ok(())
    }

    /// Writes genome `gi`'s super-k-mers into the partitions' buffers.
    fn genome(
        &mut self,
        g: &super::packed::PackedGenome,
        gi: usize,
        counted: bool,
        k: usize,
        m: usize,
        seq: &mut Vec<u8>,
    ) -> Result<(), SpillError> {
        let (sub, fine) = (
            self.plan.sub_bins,
            self.plan.partitions * self.plan.sub_bins,
        );
        let mut failed = None;
        // A segment (a chromosome, in a large genome) is split a piece at a time, each a
        // few milliseconds, so a signal stops the split within one; the job's check after
        // the split turns the stop into its error.
        let pieces = g.segments.iter().flat_map(|&(a, b)| {
            (a..=b - k)
                .step_by(SPLIT_PIECE)
                .map(move |from| (from, (from + SPLIT_PIECE + k - 1).min(b)))
        });
        for (a, b) in pieces {
            if pmscope_sys::signal::received().is_some() {
                break;
            }
            seq.clear();
            seq.extend((a..b).map(|i| b"ACGT"[g.code(i) as usize]));
            super::binned::super_kmers(seq, k, m, fine, |start, run, bin| {
                let p = bin / sub;
                let header = gi as u64 | ((bin % sub) as u64) << 32 | (run as u64) << 48;
                let buf = &mut self.buffers[p];
                buf.extend_from_slice(&header.to_le_bytes());
                append_bases(&g.words, a + start, run + k - 1, buf);
                self.kmers[bin] += counted as u64 * run as u64;
                self.super_kmers += 1;
                if buf.len() >= self.plan.buffer && failed.is_none() {
                    failed = self.flush(p).err();
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Splits `inputs` (the first `inserted` counted, the others looked up) into the
/// partitions of `plan`, in `scratch`.
pub fn split(
    workers: &super::build::Workers,
    inputs: &[GenomeInput],
    inserted: usize,
    k: usize,
    plan: Plan,
    scratch: &Scratch,
) -> Result<(Spilled, Vec<ThreadPlacement>), SpillError> {
    if inputs.len() > binned::MAX_GENOMES {
        return Err(SpillError::Scratch(format!(
            "{} genomes are more than --method binned counts ({}); split the job",
            inputs.len(),
            binned::MAX_GENOMES
        )));
    }
    let m = MINIMIZER_BASES.min(k);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let seen: Mutex<Vec<Option<SeenGenome>>> = Mutex::new(vec![None; inputs.len()]);
    let (parts, placements) = workers.run(|_| {
        let mut w = SplitWorker {
            scratch,
            plan,
            buffers: (0..plan.partitions)
                .map(|_| Vec::with_capacity(plan.buffer + 1024))
                .collect(),
            chunks: vec![Vec::new(); plan.partitions],
            kmers: vec![0u64; plan.partitions * plan.sub_bins],
            super_kmers: 0,
        };
        let mut seq = Vec::new();
        let mut result = Ok(());
        while result.is_ok() {
            // A genome is at most a few hundred milliseconds of work: a signal stops the
            // split within one, and the job's check after it turns it into the error.
            if stop.load(Ordering::Relaxed) || pmscope_sys::signal::received().is_some() {
                break;
            }
            let gi = next.fetch_add(1, Ordering::Relaxed);
            let Some(input) = inputs.get(gi) else { break };
            result = input.packed(k).map_err(SpillError::from).and_then(|g| {
                w.genome(&g, gi, gi < inserted, k, m, &mut seq)?;
                seen.lock().expect("no worker panics")[gi] = Some(SeenGenome {
                    name: g.name.clone(),
                    path: g.path.clone(),
                    stats: g.stats,
                });
                Ok(())
            });
        }
        for p in 0..plan.partitions {
            if result.is_ok() {
                result = w.flush(p);
            }
        }
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        (result, w.chunks, w.kmers, w.super_kmers)
    })?;
    let mut spilled = Spilled {
        m,
        sub_bins: plan.sub_bins,
        inserted,
        genomes: Vec::new(),
        chunks: vec![Vec::new(); plan.partitions],
        kmers: vec![0u64; plan.partitions * plan.sub_bins],
        super_kmers: 0,
    };
    for (result, chunks, kmers, super_kmers) in parts {
        result?;
        for (all, mine) in spilled.chunks.iter_mut().zip(chunks) {
            all.extend(mine);
        }
        for (a, b) in spilled.kmers.iter_mut().zip(kmers) {
            *a += b;
        }
        spilled.super_kmers += super_kmers;
    }
    // A stop before every genome was split leaves holes: the job's check reports it.
    spilled.genomes = seen
        .into_inner()
        .expect("no worker panics")
        .into_iter()
        .flatten()
        .collect();
    Ok((spilled, placements))
}

/// Partition `p`'s bins, read back: its super-k-mers grouped by bin and, within a bin, by
/// genome (the order the bin table counts genomes in), each run's bases copied to a word
/// boundary of `text`.
fn load(
    spilled: &Spilled,
    scratch: &Scratch,
    p: usize,
    k: usize,
    raw: &mut Vec<u8>,
    text: &mut Vec<u64>,
) -> Result<Bins, SpillError> {
    raw.clear();
    for &(at, len) in &spilled.chunks[p] {
        let from = raw.len();
        raw.resize(from + len as usize, 0);
        scratch.read(at, &mut raw[from..])?;
    }
    let sub = spilled.sub_bins;
    let mut runs: Vec<Vec<(u32, usize)>> = vec![Vec::new(); sub];
    let mut pos = 0;
    while pos < raw.len() {
        let h = u64::from_le_bytes(raw[pos..pos + HEADER].try_into().expect("8 bytes"));
        let run = (h >> 48) as u8 as usize;
        runs[(h >> 32) as u16 as usize].push((h as u32, pos));
        pos += HEADER + (run + k - 1).div_ceil(4);
    }
    text.clear();
    let mut lists = Vec::with_capacity(sub);
    for mut bin in runs {
        bin.sort_unstable_by_key(|r| r.0);
        let mut list = Vec::with_capacity(bin.len());
        for (genome, pos) in bin {
            let run = raw[pos + 6] as usize;
            let bytes = &raw[pos + HEADER..pos + HEADER + (run + k - 1).div_ceil(4)];
            list.push(SuperKmer::new(genome as usize, text.len() * 32, run));
            for word in bytes.chunks(8) {
                let mut b = [0u8; 8];
                b[..word.len()].copy_from_slice(word);
                text.push(u64::from_le_bytes(b));
            }
        }
        lists.push(list);
    }
    let kmers = spilled.kmers[p * sub..(p + 1) * sub].to_vec();
    Ok(Bins::of_lists(spilled.m, spilled.inserted, lists, kmers))
}

/// Counts every partition, the largest first, each worker in its own table (`tables[w]`).
pub fn count<const W: usize>(
    workers: &super::build::Workers,
    spilled: &Spilled,
    scratch: &Scratch,
    k: usize,
    tables: &mut [&mut [u64]],
    keep: Keep,
) -> Result<Counted<W>, SpillError> {
    let mut order: Vec<usize> = (0..spilled.chunks.len()).collect();
    order.sort_unstable_by_key(|&p| std::cmp::Reverse(spilled.partition_bytes(p)));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let genomes = spilled.genomes.len();
    let out = pmscope_runner::pin::run_pinned_each(workers.cpus(), tables, |_, words| {
        let mut w = Worker::<W>::new(words, k, spilled.inserted);
        let (mut raw, mut text) = (Vec::new(), Vec::new());
        let mut result = Ok(());
        while let Some(&p) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            if stop.load(Ordering::Relaxed) || pmscope_sys::signal::received().is_some() {
                break;
            }
            let bins = match load(spilled, scratch, p, k, &mut raw, &mut text) {
                Ok(b) => b,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    result = Err(e);
                    break;
                }
            };
            // Every run's text is in the partition's one text, whatever its genome.
            let texts = vec![&text[..]; genomes.max(1)];
            for b in 0..bins.count {
                if bins.kmers[b] > 0 {
                    w.bin(&bins, b, &texts, k, keep);
                }
            }
        }
        (result, w.finish())
    })?;
    let mut counts = Vec::with_capacity(out.len());
    for ((result, c), placement) in out {
        result?;
        counts.push((c, placement));
    }
    Ok(binned::merge(spilled.inserted, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_copied_from_any_base_as_the_text_lays_it_out() {
        let seq = crate::kmer::synth::random_bases(300, 4);
        let mut p = crate::kmer::packed::Packer::new(5, "g", Path::new("g"));
        p.record("g");
        p.bases(&seq);
        let g = p.finish();
        for from in [0, 1, 31, 32, 33, 63, 100] {
            for len in [1, 4, 5, 31, 32, 33, 140] {
                let mut out = Vec::new();
                append_bases(&g.words, from, len, &mut out);
                assert_eq!(out.len(), len.div_ceil(4));
                let back: Vec<u8> = (0..len)
                    .map(|i| b"ACGT"[((out[i / 4] >> (2 * (i % 4))) & 3) as usize])
                    .collect();
                assert_eq!(back, &seq[from..from + len], "from {from}, {len} bases");
            }
        }
    }

    #[test]
    fn the_plan_fits_its_budget_or_says_why_not() {
        let gib = 1u64 << 30;
        // 10 Gbp at k = 100 in 2 GiB: bins on disk, the workers' share within the budget.
        let p = plan(10_000_000_000, 10_000_000_000, 100, 40, 1 << 20, 2, 2 * gib).unwrap();
        assert!(p.memory_bytes + RESERVED <= 2 * gib, "{p:?}");
        assert!(
            p.scratch_bytes > 9 * gib && p.scratch_bytes < 13 * gib,
            "{p:?}"
        );
        assert!(p.partitions * p.sub_bins >= 1 << 16);
        // 232 Gbp in 100 MiB: one sentence, naming the budget.
        let e = plan(232_000_000_000, 1, 100, 40, 1 << 20, 2, 100 << 20).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("--max-mem 100.0 MiB is too small"), "{s}");
        assert!(!s.contains('\n'));
    }

    #[test]
    fn the_scratch_file_has_no_name_in_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let s = Scratch::create(dir.path()).unwrap();
        let at = s.append(b"hello").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut back = [0u8; 5];
        s.read(at, &mut back).unwrap();
        assert_eq!(&back, b"hello");
        assert_eq!(s.bytes(), 5);
    }
}
