//! `pmscope kmer bench`: seed 003's Table 9 on this machine — the volatile table, the
//! log-free static-pm table and the PMDK transactional tx-pm table counting the same
//! genomes on the same target, side by side: million inserts per second, the ratio to the
//! volatile table, and flushes and fences per insert.
//!
//! Flushes and fences are counted where pmscope issues them (static-pm's `Persister`).
//! tx-pm's happen inside libpmemobj, which does not count them: the table says "not
//! counted (inside libpmemobj)" and the record leaves the values out, never a guess.

use super::{demo_genomes, job_error, job_error_table, thousands};
use crate::args::{KmerBenchArgs, OutputArgs};
use crate::error::usage;
use crate::output::Sink;
use anyhow::{Result, anyhow};
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::params::check_threads;
use pmscope_experiment::render::table::Table;
use pmscope_workload::kmer::encode::MAX_K;
use pmscope_workload::kmer::job::{self, Job, Operation, Report};
use pmscope_workload::kmer::output::Format;
use pmscope_workload::kmer::read::Split;
use pmscope_workload::kmer::table::TableKind;
use std::path::Path;

/// What tx-pm's flush and fence columns say.
const NOT_COUNTED: &str = "not counted (inside libpmemobj)";

/// Runs the bench and prints the table; one `kmer-bench` record per table.
pub fn run(ctx: &mut Context, out: &OutputArgs, a: &KmerBenchArgs) -> Result<()> {
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
    let choice = pmscope_persist::PersistChoice::parse(a.persist.as_deref())
        .map_err(|e| usage(format!("--persist: {e}")))?;
    let persister = pmscope_persist::Persister::choose(choice, &ctx.features)?;
    let persist = persister.strategy();
    let (specs, map_options) = ctx.targets(&a.targets.as_target_args(), &["shm:4k"])?;
    if specs.len() != 1 {
        return Err(usage(
            "pmscope kmer bench places every table on one --target; give it once",
        ));
    }
    // Every table must be possible here before any is measured: without libpmemobj the
    // bench stops now, not after counting with two tables.
    for table in TableKind::ALL {
        table.available().map_err(job_error_table)?;
    }
    let genomes = if a.genomes.is_empty() {
        demo_genomes(
            Path::new("/usr/share/doc/ragout/examples"),
            Path::new("/usr/share/doc/kaptive/examples"),
        )?
        .0
    } else {
        a.genomes.clone()
    };
    let mut sink = Sink::open(out)?;
    let environment = {
        let h = ctx.start(&mut sink, &allowed[..threads], None, false)?;
        h.environment_warnings().to_vec()
    };
    let mut rows: Vec<(TableKind, Report)> = Vec::new();
    for table in TableKind::ALL {
        if sink.human() {
            eprintln!("pmscope kmer bench: counting with the {table} table ...");
        }
        let job = Job {
            operation: Operation::Count {
                genomes: genomes.clone(),
            },
            k: a.k,
            threads,
            split: Split::PerFile,
            target: specs[0].clone(),
            map_options: map_options.clone(),
            format: Format::Tsv,
            sorted: false,
            preview: 0,
            table,
            pool: None,
            persist: choice,
            features: ctx.features,
            partition: None,
        };
        let report = job::run(&job, None).map_err(job_error)?;
        rows.push((table, report));
    }
    // Every table counted the same k-mers: anything else is a bug worth stopping for.
    let distinct: Vec<Option<u64>> = rows.iter().map(|(_, r)| r.set("union")).collect();
    if distinct.iter().any(|d| *d != distinct[0]) {
        return Err(anyhow!(
            "the tables disagree on the distinct k-mers ({distinct:?}): a table is wrong"
        ));
    }
    let volatile_mips = rows[0].1.mips_excluding_growth();
    for (table, r) in &rows {
        let mut rec = ctx
            .record("kmer-bench")
            .param(p::K, r.k)
            .param(p::THREADS, r.threads)
            .param(p::TABLE, table.name())
            .param(p::PERSIST, persist.to_string())
            .param(p::PERSIST_DEFAULT, persister.defaulted())
            .param(p::PERSIST_INSTRUCTIONS, persister.instructions())
            .param(p::FLUSH_COUNT, flush_count(*table, r))
            .param(p::PERSIST_MEANS, persist_means(*table, r, persist))
            .param(
                p::GENOME_FILES,
                r.genomes
                    .iter()
                    .map(|g| g.path.display().to_string())
                    .collect::<Vec<_>>(),
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
        if let Some((flushes, fences)) = per_insert(*table, r) {
            rec = rec
                .value(v::FLUSHES_PER_INSERT, flushes)
                .value(v::FENCES_PER_INSERT, fences);
        }
        rec.metric = Some("insert_mips".into());
        rec.target = Some(r.table.target.clone());
        rec.threads = r.placements.clone();
        rec.warnings.extend(r.table.warnings.iter().cloned());
        rec.warnings
            .extend(pmscope_experiment::fallback::persist_note(&persister));
        for w in &environment {
            if !rec.warnings.contains(w) {
                rec.warnings.push(w.clone());
            }
        }
        sink.emit(&rec)?;
    }
    sink.commit()?;
    if sink.human() {
        println!("{}", render(&rows, &specs[0].to_string(), persist));
    }
    Ok(())
}

/// (flushes, fences) per insert, where they were counted.
fn per_insert(table: TableKind, r: &Report) -> Option<(f64, f64)> {
    match (table, r.table.persist) {
        (TableKind::Volatile, _) => Some((0.0, 0.0)),
        (_, Some((flushes, fences))) => {
            let n = r.inserts.max(1) as f64;
            Some((flushes as f64 / n, fences as f64 / n))
        }
        (_, None) => None,
    }
}

/// How the table's stores reach persistence. libpmem flushes with CPU instructions only
/// where it believes the pool is pmem (a DAX mapping, or `PMEM_IS_PMEM_FORCE=1`), and with
/// `msync` elsewhere; static-pm uses the `--persist` strategy everywhere. On tmpfs the two
/// then pay very different costs, which the table must say.
fn persist_means(
    table: TableKind,
    r: &Report,
    persist: pmscope_persist::PersistStrategy,
) -> String {
    match table {
        TableKind::Volatile => "none".into(),
        TableKind::StaticPm => persist.to_string(),
        TableKind::TxPm => {
            let forced = std::env::var("PMEM_IS_PMEM_FORCE").is_ok_and(|v| v.trim() == "1");
            match (forced, r.table.target.achieved.map_sync) {
                (true, _) => "libpmem: CPU flushes (PMEM_IS_PMEM_FORCE=1)".into(),
                (false, Some(true)) => "libpmem: CPU flushes (DAX)".into(),
                (false, Some(false)) => "libpmem: msync (not DAX)".into(),
                (false, None) => "libpmem: its own choice (DAX unknown)".into(),
            }
        }
    }
}

fn flush_count(table: TableKind, r: &Report) -> &'static str {
    match (table, r.table.persist) {
        (TableKind::Volatile, _) => "none issued",
        (_, Some(_)) => "persister",
        (_, None) => NOT_COUNTED,
    }
}

/// Table 9's layout: configuration, mode, data structure, MIPS; then the ratio and the
/// persistence cost per insert.
fn render(
    rows: &[(TableKind, Report)],
    target: &str,
    persist: pmscope_persist::PersistStrategy,
) -> String {
    let r0 = &rows[0].1;
    let bases: u64 = r0.genomes.iter().map(|g| g.bases).sum();
    let mut s = format!(
        "pmscope kmer bench: {} genomes, {:.1} Mbp, {} k-mers inserted, {} distinct, k = {}, {} threads, on {target}\n\n",
        r0.genomes.len(),
        bases as f64 / 1e6,
        thousands(r0.inserts),
        thousands(r0.set("union").unwrap_or(0)),
        r0.k,
        r0.threads
    );
    let mut t = Table::new(&[
        "target (persistence)",
        "mode",
        "data structure",
        "MIPS",
        "vs volatile",
        "flushes/insert",
        "fences/insert",
        "load",
        "growth (not in MIPS)",
    ]);
    let volatile = r0.mips_excluding_growth();
    for (table, r) in rows {
        let a = &r.table.target.achieved;
        let (mode, structure) = match table {
            TableKind::Volatile => ("volatile", "volatile (open addressing)".to_string()),
            TableKind::StaticPm => ("AD", format!("static-pm (Static-HT, {persist})")),
            TableKind::TxPm => (
                "AD",
                format!("tx-pm (PMDK-HT, {})", persist_means(*table, r, persist)),
            ),
        };
        let (flushes, fences) = match per_insert(*table, r) {
            Some((f, n)) => (format!("{f:.3}"), format!("{n:.3}")),
            None => (NOT_COUNTED.to_string(), NOT_COUNTED.to_string()),
        };
        t.row(vec![
            format!("{} ({})", r.table.target.spec, a.persistence.describe()),
            mode.into(),
            structure,
            format!("{:.2}", r.mips_excluding_growth()),
            format!("{:.2}", r.mips_excluding_growth() / volatile),
            flushes,
            fences,
            format!("{:.2}", r.table.load_factor),
            growth(r),
        ]);
    }
    s += &t.render();
    if rows.iter().any(|(table, r)| {
        *table == TableKind::TxPm && persist_means(*table, r, persist).contains("msync")
    }) {
        s += "\n\nnote: tx-pm's pool is not on DAX, so libpmem makes it durable with msync while static-pm uses CPU flushes: set PMEM_IS_PMEM_FORCE=1 to have libpmem flush with CPU instructions as the seed did on emulated pmem, and compare like with like.";
    }
    s += "\n\nMIPS: million inserts per second in the insert phase (every k-mer of every genome, repeats included), without the time a table spent growing between genomes (the volatile table grows when the next genome could overfill it; static-pm's pool is sized for the whole job up front): that rehash is not an insert cost of the seed's presized tables, and the growth column gives it; one run per table.";
    s
}

/// How often the table grew during the insert phase, and the time that took.
fn growth(r: &Report) -> String {
    match r.table.grown {
        0 => "none".into(),
        n => format!(
            "{n}x, {:.2} s ({:.2} MIPS with it)",
            r.phases.grow.as_secs_f64(),
            r.mips()
        ),
    }
}
