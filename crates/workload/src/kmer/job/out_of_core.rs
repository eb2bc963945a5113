//! A binned job out of core ([`crate::kmer::spill`]): the bins in a scratch file, counted a
//! partition at a time, when the genomes' 2-bit text and their super-k-mers would not fit
//! the memory budget (`--max-mem`, by default 90 % of `MemAvailable`), or when asked
//! (`--bins disk`).

use super::*;
use crate::kmer::binned;
use crate::kmer::source::{self, Generated, GenomeInput};
use crate::kmer::spill;

/// Whether this binned job counts out of core: asked for, or what the in-memory method
/// would hold ([`in_memory_bytes`]) is more than the budget.
pub(super) fn wanted(job: &Job) -> Result<bool, JobError> {
    let out = match job.bins.at {
        BinsAt::Memory => false,
        BinsAt::Disk => true,
        BinsAt::Auto => {
            let (left, right) = job.operation.files();
            let bases: u64 = left.iter().chain(right).map(|f| expected_bases(f)).sum();
            in_memory_bytes(bases, job.k) > job.map_options.guard.limit
        }
    };
    if out && job.split == Split::PerRecord {
        return Err(JobError::Usage(
            "--genome-per-record cannot count out of core, where each worker takes whole files; give one genome per file, --bins memory, or a larger --max-mem".into(),
        ));
    }
    Ok(out)
}

/// Bases an input is expected to hold before it is read (a generated one: all its genomes).
fn expected_bases(input: &Path) -> u64 {
    match Generated::parse(input) {
        Some(Ok(model)) => (model.mean_bases() * model.genomes as f64) as u64,
        // The reader names what is wrong with it.
        Some(Err(_)) => 0,
        None => GenomeInput::File(input.to_path_buf()).expected_bases(),
    }
}

/// What the in-memory binned method holds at its peak for `bases`: their 2-bit text twice
/// (the genomes' copies and the mapping they move into, pre-faulted before the move), the
/// super-k-mer lists (8 bytes for a run of about (k − m + 2) / 2 k-mers, twice that for
/// room and growth), 15 % for what else grows with them, and what the process keeps for
/// itself. At k = 100 that is 1.0 byte a base against the 0.91 to 0.93 measured (peak RSS
/// of seed-2, 1.58 Gbp: 1 373 MiB; of 2.0 Gbp of seed-3: 1 766 MiB).
pub(super) fn in_memory_bytes(bases: u64, k: usize) -> u64 {
    let m = binned::MINIMIZER_BASES.min(k);
    let lists = bases as f64 * 2.0 / (k - m + 2) as f64 * 8.0 * 2.0;
    ((bases as f64 / 2.0 + lists) * 1.15) as u64 + spill::RESERVED
}

/// Counts the job out of core: split every genome into the scratch file's partitions, map
/// each worker's bin table, count the partitions, write the set.
pub(super) fn run<const W: usize>(
    job: &Job,
    out: Option<&mut dyn Write>,
) -> Result<Report, JobError> {
    let k = job.k;
    let workers = &Workers::new(job.threads)?;
    let keep = binned_keep(&job.operation, out.is_some());
    let (left_files, right_files) = job.operation.files();
    let mut inputs = source::genome_inputs(left_files)?;
    let n = inputs.len();
    inputs.extend(source::genome_inputs(right_files)?);
    let bases: Vec<u64> = inputs.iter().map(GenomeInput::expected_bases).collect();
    let slot_bytes = binned::slot_words::<W>() * 8;
    let plan = spill::plan(
        bases.iter().sum(),
        bases[..n].iter().sum(),
        k,
        slot_bytes,
        binned::l2_bytes(),
        job.threads,
        job.map_options.guard.limit,
    )?;
    let dir = job.bins.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    spill::check_room(&dir, &plan)?;
    let scratch = spill::Scratch::create(&dir)?;
    let (mut phases, mut cpu) = (Phases::default(), Phases::default());

    interrupt::check()?;
    // Reading is inside the split: each genome is read, or made, as a worker takes it.
    let t = Stopwatch::start();
    let (spilled, _) = spill::split(workers, &inputs, n, k, plan, &scratch)?;
    t.stop(&mut phases.split, &mut cpu.split);
    interrupt::check()?;
    let summaries: Vec<GenomeSummary> = spilled
        .genomes
        .iter()
        .enumerate()
        .map(|(i, g)| GenomeSummary {
            name: g.name.clone(),
            path: g.path.clone(),
            role: if i < n { "in" } else { "out" },
            bases: g.stats.bases,
            kmers: g.stats.kmers,
            skipped_kmers: g.stats.skipped_kmers,
        })
        .collect();
    let inserts: u64 = summaries[..n].iter().map(|g| g.kmers).sum();
    let lookups: u64 = summaries[n..].iter().map(|g| g.kmers).sum();

    let t = Stopwatch::start();
    let slots = binned::slots_for(spilled.largest());
    let bytes = (slots * slot_bytes) as u64;
    let mut mappings = (0..job.threads)
        .map(|_| pmscope_mapping::map_chosen(&job.target, bytes, &job.map_options))
        .collect::<Result<Vec<_>, _>>()
        .map_err(TableError::from)?;
    t.stop(&mut phases.map, &mut cpu.map);

    interrupt::check()?;
    let t = Stopwatch::start();
    let mut tables = mappings
        .iter_mut()
        .map(|m| m.slice_mut::<u64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(TableError::from)?;
    let mut counted = spill::count::<W>(workers, &spilled, &scratch, k, &mut tables, keep)?;
    drop(tables);
    t.stop(&mut phases.insert, &mut cpu.insert);

    interrupt::check()?;
    let distinct: u64 = counted.histogram.iter().sum();
    let sets = binned_sets(&job.operation, distinct, &counted.histogram, &counted.kept);
    let t = Stopwatch::start();
    if job.sorted {
        counted.kept.sort_unstable_by_key(|a| a.0);
    }
    let result_kmers = match job.operation {
        Operation::Count { .. } | Operation::Union { .. } => distinct,
        _ => counted.kept.len() as u64,
    };
    let written = write_set(job, &counted.kept, out, result_kmers)?;
    t.stop(&mut phases.output, &mut cpu.output);

    let table = bin_table_facts(&mappings, slots, slot_bytes, distinct, &counted);
    Ok(Report {
        operation: job.operation.name(),
        method: Method::Binned,
        bins: Some(BinFacts {
            bins: (plan.partitions * plan.sub_bins) as u64,
            minimizer_bases: spilled.m,
            super_kmers: spilled.super_kmers,
            largest_bin_kmers: spilled.largest(),
            partitions: plan.partitions as u64,
            scratch_bytes: scratch.bytes(),
        }),
        k,
        threads: job.threads,
        genomes: summaries,
        inserts,
        lookups,
        lookup_hits: counted.hits,
        estimated_distinct: 0,
        sets,
        histogram: match job.operation {
            Operation::Count { .. } => counted.histogram,
            _ => Vec::new(),
        },
        result_kmers: written.result_kmers,
        regions: written.regions,
        preview: written.preview,
        phases,
        cpu,
        table,
        placements: counted.placements,
    })
}
