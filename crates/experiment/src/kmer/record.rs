//! The record of a k-mer job: parameters, set sizes, phase times, MIPS, the table's
//! footprint and persistence, its sub-tables, peak memory.

use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};
use pmscope_workload::kmer::job::{Job, Report};
use pmscope_workload::kmer::table::Durability;

/// `rec` (the adopted target's record: target, warnings) with the figures of `job`'s run.
pub fn job(rec: Record, r: &Report, job: &Job) -> Record {
    let partition = job.partition.as_ref();
    let mut rec = figures(rec, r);
    for (name, n) in &r.sets {
        let key = pmscope_core::vocab::value_key(&format!("{name}_kmers"))
            .expect("every k-mer set's size is a declared value");
        rec = rec.value(key, *n as f64);
    }
    if let (Some((flushes, fences)), Some((per_flush, per_fence))) =
        (r.table.persist, r.persist_per_insert())
    {
        rec = rec
            .value(v::PERSIST_FLUSHES, flushes as f64)
            .value(v::PERSIST_FENCES, fences as f64)
            .value(v::FLUSHES_PER_INSERT, per_flush)
            .value(v::FENCES_PER_INSERT, per_fence);
    }
    if !r.histogram.is_empty() {
        rec = rec.param(p::GENOME_COUNT_HISTOGRAM, r.histogram.clone());
    }
    rec = rec.param(p::METHOD, r.method.name());
    if let Some(b) = &r.bins {
        rec = rec
            .param(p::MINIMIZER_BASES, b.minimizer_bases)
            .value(v::BINS, b.bins as f64)
            .value(v::SUPER_KMERS, b.super_kmers as f64)
            .value(v::LARGEST_BIN_KMERS, b.largest_bin_kmers as f64)
            .value(v::BIN_PARTITIONS, b.partitions as f64)
            .value(v::SCRATCH_BYTES, b.scratch_bytes as f64)
            .value(v::SPLIT_MS, r.phases.split.as_secs_f64() * 1e3)
            .value(v::SPLIT_CPU_MS, r.cpu.split.as_secs_f64() * 1e3);
    } else {
        // The one-table method sized its table from the estimate; the binned one has none.
        rec = rec.value(v::ESTIMATED_DISTINCT_KMERS, r.estimated_distinct as f64);
    }
    rec = rec.param(
        p::PARTITION,
        if partition.is_some() { "nodes" } else { "none" },
    );
    // Where pmscope persists (static-pm): the strategy actually used and its instructions
    // (the note of a default that fell back is among the run's warnings).
    if let Some(p) = &r.table.persister {
        rec = crate::fallback::persist_params(rec, p);
    }
    // Only static-pm fences as pmscope says (the plan refuses --fence for the others).
    if job.table.durability() == Durability::Persister {
        rec = rec.param(p::TABLE_FENCE, job.fence.name());
    }
    if let Some(plan) = partition {
        rec = rec
            .param(p::SUB_TABLES, sub_tables(r))
            .param(p::NODES_WITHOUT_CPUS, plan.without_cpus.clone());
    }
    if let Some(peak) = pmscope_sys::rusage::peak_rss_bytes() {
        rec = rec.value(v::PEAK_RSS_BYTES, peak as f64);
    }
    rec.metric = Some("insert_mips".into());
    rec.threads = r.placements.clone();
    rec
}

/// The parameters, counts, phase times and the table's geometry.
fn figures(rec: Record, r: &Report) -> Record {
    let in_genomes = r.genomes.iter().filter(|g| g.role == "in").count();
    let out_genomes = r.genomes.len() - in_genomes;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    rec.param(p::OPERATION, r.operation)
        .param(p::K, r.k)
        .param(p::THREADS, r.threads)
        .param(p::TABLE, r.table.kind)
        .param(p::GENOMES_INSERTED, in_genomes)
        .param(p::GENOMES_SUBTRACTED, out_genomes)
        .param(p::GENOME_FILES, genome_files(r))
        .value(v::INSERTS, r.inserts as f64)
        .value(v::LOOKUPS, r.lookups as f64)
        .value(v::LOOKUP_HITS, r.lookup_hits as f64)
        .value(
            v::BASES,
            r.genomes.iter().map(|g| g.bases).sum::<u64>() as f64,
        )
        .value(
            v::SKIPPED_KMERS,
            r.genomes.iter().map(|g| g.skipped_kmers).sum::<u64>() as f64,
        )
        .value(v::RESULT_KMERS, r.result_kmers as f64)
        .value(v::PARSE_MS, ms(r.phases.parse))
        .value(v::ESTIMATE_MS, ms(r.phases.estimate))
        .value(v::MAP_MS, ms(r.phases.map))
        .value(v::INSERT_MS, ms(r.phases.insert))
        .value(v::GROW_MS, ms(r.phases.grow))
        .value(v::SETOPS_MS, ms(r.phases.setops))
        .value(v::OUTPUT_MS, ms(r.phases.output))
        .value(v::TOTAL_MS, ms(r.total()))
        .value(v::PARSE_CPU_MS, ms(r.cpu.parse))
        .value(v::ESTIMATE_CPU_MS, ms(r.cpu.estimate))
        .value(v::MAP_CPU_MS, ms(r.cpu.map))
        .value(v::INSERT_CPU_MS, ms(r.cpu.insert))
        .value(v::SETOPS_CPU_MS, ms(r.cpu.setops))
        .value(v::OUTPUT_CPU_MS, ms(r.cpu.output))
        .value(v::INSERT_MIPS, r.mips())
        .value(v::TABLE_BYTES, r.table.footprint_bytes as f64)
        .value(v::TABLE_SLOTS, r.table.slots as f64)
        .value(v::SLOT_BYTES, r.table.slot_bytes as f64)
        .value(v::TABLE_LOAD_FACTOR, r.table.load_factor)
        .value(v::TABLE_GROWN, r.table.grown as f64)
}

/// The genome files, in the order given.
pub fn genome_files(r: &Report) -> Vec<String> {
    r.genomes
        .iter()
        .map(|g| g.path.display().to_string())
        .collect()
}

/// The sub-tables of `--partition nodes`, one object each.
fn sub_tables(r: &Report) -> Vec<serde_json::Value> {
    r.table
        .parts
        .iter()
        .map(|p| {
            serde_json::json!({
                "node": p.node,
                "cpus": p.cpus,
                "inserts": p.inserts,
                "distinct_kmers": p.distinct,
                "slots": p.slots,
                "bytes": p.footprint_bytes,
                "target": p.target.spec,
                "memory_node": p.memory_node,
                "pages_by_node": p.target.achieved.nodes,
                "achieved_node": p.achieved_node(),
                "pages_on_node_fraction": p.on_node(),
            })
        })
        .collect()
}
