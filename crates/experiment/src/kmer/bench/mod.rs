//! `pmscope kmer bench`: seed 003's Table 9 and Fig. 18 on this machine — every table of
//! the registry (volatile, the log-free static-pm and the PMDK transactional tx-pm)
//! counting the same genomes on each target given, side by side: million inserts per
//! second, the ratio to the volatile table on the same target, flushes and fences per
//! insert, and with several targets each table's insert time on each beside the first's.
//!
//! Flushes and fences are counted where pmscope issues them (static-pm's `Persister`).
//! tx-pm's happen inside libpmemobj, which does not count them: the table says "not
//! counted (inside libpmemobj)" and the record leaves the values out, never a guess. What a
//! table's persistence is comes from the registry ([`TableKind::durability`]), so a new
//! table kind appears here by itself.

pub mod render;

use super::fence::fences;
use super::{Libpmem, demo, durable_by, job_error, record, table_error};
use crate::Env;
use crate::error::usage;
use crate::output::Output;
use crate::params::{Count, TargetArgs, check_threads};
use anyhow::{Result, anyhow};
use clap::Args;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};
use pmscope_core::warning::Warning;
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_persist::{PersistChoice, PersistStrategy, Persister};
use pmscope_workload::kmer::encode::MAX_K;
use pmscope_workload::kmer::job::{self, Job, Operation, Report};
use pmscope_workload::kmer::output::Format;
use pmscope_workload::kmer::read::Split;
use pmscope_workload::kmer::table::{Durability, Fence, TableKind};
use std::path::{Path, PathBuf};

/// What tx-pm's flush and fence columns say.
pub const NOT_COUNTED: &str = "not counted (inside libpmemobj)";

/// Options of `pmscope kmer bench`.
#[derive(Debug, Args, Clone)]
pub struct Params {
    /// FASTA or gzipped FASTA files, one genome each (default: the S. aureus references
    /// of ragout-examples).
    #[arg(value_name = "FILES")]
    pub genomes: Vec<PathBuf>,
    /// K-mer length, 1 to 128.
    #[arg(short = 'k', value_name = "K", default_value_t = 31)]
    pub k: usize,
    /// Worker threads, one pinned per CPU (default: every CPU pmscope may use).
    #[arg(long, value_name = "N")]
    pub threads: Option<Count>,
    /// How static-pm makes stores durable: clflush, clflushopt, clwb, ntstore, none or
    /// msync (tx-pm persists inside libpmemobj). Default: clwb, or where the CPU lacks it
    /// clflushopt, else clflush (the record says which).
    #[arg(long, value_name = "STRATEGY")]
    pub persist: Option<PersistStrategy>,
    /// When static-pm fences the slots it wrote (default: per-group; the record says which).
    #[arg(long, value_name = "POLICY", value_parser = fences())]
    pub fence: Option<Fence>,
    /// The tables to measure, comma-separated (default: every one). At seed 003's scale
    /// tx-pm's transaction per insert takes hours: `--tables volatile,static-pm`.
    #[arg(long, value_name = "TABLES", value_delimiter = ',', value_parser = super::fence::table_kinds())]
    pub tables: Vec<TableKind>,
    /// The memory targets (default shm:4k): every table counts the genomes on each, one
    /// target after the other, and the summary sets the targets side by side.
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// The bench, checked: every table possible here, before any is measured.
pub struct Plan {
    k: usize,
    threads: usize,
    cpus: Vec<usize>,
    choice: PersistChoice,
    persister: Persister,
    fence: Fence,
    specs: Vec<TargetSpec>,
    map_options: MapOptions,
    genomes: Vec<PathBuf>,
    /// The tables measured, in the registry's order.
    tables: Vec<TableKind>,
    /// The tables left out on a target, and why.
    skipped: Vec<(TableKind, TargetSpec, String)>,
}

/// Checks k, the threads, the persister, the targets and every table kind on each.
pub fn plan(env: &Env, a: &Params) -> Result<Plan> {
    if a.k == 0 || a.k > MAX_K {
        return Err(usage(format!(
            "-k {} is out of range: k must be between 1 and {MAX_K}",
            a.k
        )));
    }
    let allowed = pmscope_sys::affinity::allowed_cpus()
        .map_err(|e| anyhow!("reading the CPUs pmscope may use: {e}"))?;
    let threads = a.threads.map(|n| n.0).unwrap_or(allowed.len().max(1));
    check_threads(threads, &allowed).map_err(usage)?;
    // static-pm's persister; a named strategy this CPU lacks is refused here, at once.
    let choice = a
        .persist
        .map_or(PersistChoice::Default, PersistChoice::Named);
    let persister = Persister::choose(choice, &env.features)?;
    let (specs, map_options) = env.targets(&a.targets, &["shm:4k"])?;
    // Every table must be possible here before any is measured: without libpmemobj the
    // bench stops now, not after counting with two tables. A table that cannot live on one
    // target (tx-pm keeps its pool in a file, so not on dram) is left out there with a
    // warning: a DRAM baseline beside a pmem target is the first thing a user asks for.
    let tables: Vec<TableKind> = TableKind::ALL
        .into_iter()
        .filter(|t| a.tables.is_empty() || a.tables.contains(t))
        .collect();
    let mut skipped = Vec::new();
    for &table in &tables {
        table.available().map_err(table_error)?;
        for spec in &specs {
            if let Some(why) = table.refuses(spec) {
                let reason = why.trim_start_matches("--table ");
                let reason = reason.split("; ").next().unwrap_or(reason);
                skipped.push((table, spec.clone(), reason.to_string()));
            }
        }
    }
    let genomes = if a.genomes.is_empty() {
        demo::genomes(Path::new(demo::RAGOUT), Path::new(demo::KAPTIVE))?.0
    } else {
        a.genomes.clone()
    };
    Ok(Plan {
        k: a.k,
        threads,
        cpus: allowed[..threads].to_vec(),
        choice,
        persister,
        fence: a.fence.unwrap_or_default(),
        specs,
        map_options,
        genomes,
        tables,
        skipped,
    })
}

/// Counts the genomes with every table on each target, then emits one `kmer-bench` record
/// per table and target, each from its adopted target; with several targets, a
/// `comparison` record of them follows.
pub fn measure(env: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let human = out.human();
    let features = env.features;
    let mut h = env.start_wall_clocked(out, &p.cpus)?;
    if let Some(w) = crate::fallback::persist_note(&p.persister) {
        h.note(w);
    }
    for (table, spec, reason) in &p.skipped {
        h.note(Warning::new(
            "kmer-table-skipped",
            format!("the {table} table was not measured on {spec}: {reason}"),
            "give shm or file:DIR targets (without node=) to measure every table on them",
        ));
    }
    let mut first: Option<Option<u64>> = None;
    for spec in &p.specs {
        let mut rows: Vec<(TableKind, Report)> = Vec::new();
        for &table in &p.tables {
            if p.skipped.iter().any(|(t, s, _)| *t == table && s == spec) {
                continue;
            }
            if human {
                eprintln!("pmscope kmer bench: counting with the {table} table on {spec} ...");
            }
            let report = job::run(&job(p, spec, table, features), None).map_err(job_error)?;
            rows.push((table, report));
        }
        // Every table on every target counted the same k-mers: anything else is a bug
        // worth stopping for.
        let distinct: Vec<Option<u64>> = rows.iter().map(|(_, r)| r.set("union")).collect();
        let expected = *first.get_or_insert(distinct[0]);
        if distinct.iter().any(|d| *d != expected) {
            return Err(anyhow!(
                "the tables disagree on the distinct k-mers ({expected:?} first, {distinct:?} on {spec}): a table is wrong"
            ));
        }
        let volatile_mips = rows
            .iter()
            .find(|(t, _)| t.durability() == Durability::None)
            .map_or(f64::NAN, |(_, r)| r.mips_excluding_growth());
        for (table, r) in &rows {
            let durable = durable_by(*table, &r.table, &features);
            let mut run = h.adopt(r.table.target.clone(), r.table.warnings.clone(), durable);
            let rec = bench_record(run.record("kmer-bench"), *table, r, p, volatile_mips);
            run.emit(&rec)?;
        }
    }
    h.finish()?;
    Ok(())
}

/// The job of one table on one target: count the genomes, write nothing.
fn job(
    p: &Plan,
    spec: &TargetSpec,
    table: TableKind,
    features: pmscope_sys::cpu::CpuFeatures,
) -> Job {
    Job {
        operation: Operation::Count {
            genomes: p.genomes.clone(),
        },
        method: Default::default(),
        k: p.k,
        threads: p.threads,
        split: Split::PerFile,
        target: spec.clone(),
        map_options: p.map_options.clone(),
        format: Format::Tsv,
        sorted: false,
        preview: 0,
        table,
        pool: None,
        persist: p.choice,
        fence: p.fence,
        features,
        partition: None,
        bins: Default::default(),
    }
}

/// One table's row of Table 9 as a record.
fn bench_record(rec: Record, table: TableKind, r: &Report, p: &Plan, volatile_mips: f64) -> Record {
    let persist = p.persister.strategy();
    let mut rec = rec
        .param(p::K, r.k)
        .param(p::THREADS, r.threads)
        .param(p::TABLE, table.name())
        .param(p::PERSIST, persist.to_string())
        .param(p::PERSIST_DEFAULT, p.persister.defaulted())
        .param(p::PERSIST_INSTRUCTIONS, p.persister.instructions())
        .param(p::FLUSH_COUNT, flush_count(table, r))
        .param(p::PERSIST_MEANS, persist_means(table, r, persist))
        .param(p::GENOME_FILES, record::genome_files(r))
        .value(
            v::BASES,
            r.genomes.iter().map(|g| g.bases).sum::<u64>() as f64,
        )
        .value(v::INSERTS, r.inserts as f64)
        .value(v::INSERT_MS, r.phases.insert.as_secs_f64() * 1e3)
        .value(v::INSERT_MIPS, r.mips_excluding_growth())
        .value(v::INSERT_MIPS_WITH_GROWTH, r.mips())
        .value(v::GROW_MS, r.phases.grow.as_secs_f64() * 1e3)
        .value(v::TABLE_GROWN, r.table.grown as f64)
        .value(v::TABLE_LOAD_FACTOR, r.table.load_factor)
        .value(
            v::MIPS_VS_VOLATILE,
            r.mips_excluding_growth() / volatile_mips,
        )
        .value(v::UNION_KMERS, r.set("union").unwrap_or(0) as f64)
        .value(v::TABLE_BYTES, r.table.footprint_bytes as f64);
    // Only static-pm fences as pmscope says: the others ignore the policy.
    if table.durability() == Durability::Persister {
        rec = rec.param(p::TABLE_FENCE, p.fence.name());
    }
    if let Some((flushes, fences)) = per_insert(table, r) {
        rec = rec
            .value(v::FLUSHES_PER_INSERT, flushes)
            .value(v::FENCES_PER_INSERT, fences);
    }
    rec.metric = Some("insert_mips".into());
    rec.threads = r.placements.clone();
    rec
}

/// (flushes, fences) per insert, where they were counted.
fn per_insert(table: TableKind, r: &Report) -> Option<(f64, f64)> {
    match table.durability() {
        Durability::None => Some((0.0, 0.0)),
        Durability::Persister | Durability::Libpmemobj => r.persist_per_insert(),
    }
}

/// How the table's stores reach persistence. libpmem flushes with CPU instructions only
/// where it believes the pool is pmem (a DAX mapping, or `PMEM_IS_PMEM_FORCE=1`), and with
/// `msync` elsewhere; static-pm uses the `--persist` strategy everywhere. On tmpfs the two
/// then pay very different costs, which the table must say.
fn persist_means(table: TableKind, r: &Report, persist: PersistStrategy) -> String {
    match table.durability() {
        Durability::None => "none".into(),
        Durability::Persister => persist.to_string(),
        Durability::Libpmemobj => Libpmem::of(&r.table.target.achieved).describe().into(),
    }
}

/// Who counted the flushes.
fn flush_count(table: TableKind, r: &Report) -> &'static str {
    match (table.durability(), r.table.persist) {
        (Durability::None, _) => "none issued",
        (_, Some(_)) => "persister",
        (_, None) => NOT_COUNTED,
    }
}
