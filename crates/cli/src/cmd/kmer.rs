//! `pmscope kmer`: the k-mer set workload of seed 003 as a tool (primers, count, union,
//! intersect, subtract), its end-to-end demo on Debian's example genomes, and the synthetic
//! genome generator.
//!
//! Output contract: `--kmers FILE` receives the k-mers (TSV or FASTA; `--kmers -` is
//! stdout) and `-o FILE` the record, as in every command (`--record` is its deprecated old
//! name). Both are written beside their names and put in place only when the job has
//! succeeded, so a malformed input writes nothing and nothing is overwritten without
//! `--force`; two outputs naming one place, or k-mers on stdout under `--json`, are usage
//! errors before any work. The record goes to stdout with `--json`, carrying the
//! environment findings every measuring command records and where the workers ran.

use crate::args::{
    KmerArgs, KmerCommand, KmerDemoArgs, KmerFormat, KmerPartition, KmerRecoverArgs, KmerRunArgs,
    KmerSynthArgs, KmerTableKind, OutputArgs,
};
use crate::error::usage;
use crate::output::Sink;
use crate::output::atomic_file::PendingOutput;
use anyhow::{Context as _, Result, anyhow};
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::params::check_threads;
use pmscope_experiment::render::table::Table;
use pmscope_mapping::TargetSpec;
use pmscope_workload::kmer::encode::MAX_K;
use pmscope_workload::kmer::job::{self, Job, JobError, Operation, Report};
use pmscope_workload::kmer::output::Format;
use pmscope_workload::kmer::read::Split;
use pmscope_workload::kmer::synth::{SynthSpec, write_dataset};
use pmscope_workload::kmer::table::TableKind;
use pmscope_workload::kmer::table::partition::NodePlan;
use std::path::{Path, PathBuf};

mod bench;

/// Runs a `pmscope kmer` command.
pub fn run(ctx: &mut Context, out: &OutputArgs, a: &KmerArgs) -> Result<()> {
    match &a.command {
        KmerCommand::Primers(p) => {
            let op = Operation::Primers {
                in_group: p.in_group.clone(),
                out_group: p.out_group.clone(),
            };
            run_job(ctx, out, &p.run, op, 100, false).map(|_| ())
        }
        KmerCommand::Count(s) => {
            let op = Operation::Count {
                genomes: s.genomes.clone(),
            };
            run_job(ctx, out, &s.run, op, 31, false).map(|_| ())
        }
        KmerCommand::Union(s) => {
            let op = Operation::Union {
                genomes: s.genomes.clone(),
            };
            run_job(ctx, out, &s.run, op, 31, false).map(|_| ())
        }
        KmerCommand::Intersect(s) => {
            let op = Operation::Intersect {
                genomes: s.genomes.clone(),
            };
            run_job(ctx, out, &s.run, op, 31, false).map(|_| ())
        }
        KmerCommand::Subtract(s) => {
            let op = Operation::Subtract {
                genomes: s.genomes.clone(),
                minus: s.minus.clone(),
            };
            run_job(ctx, out, &s.run, op, 31, false).map(|_| ())
        }
        KmerCommand::Demo(d) => demo(ctx, out, d),
        KmerCommand::Synth(s) => synth(ctx, out, s),
        KmerCommand::Recover(r) => recover(ctx, out, r),
        KmerCommand::Bench(b) => bench::run(ctx, out, b),
    }
}

/// `pmscope kmer recover`: checks a pool and says what it holds (a `kmer-recover` record
/// under `--json` and in `-o`).
fn recover(ctx: &Context, out: &OutputArgs, r: &KmerRecoverArgs) -> Result<()> {
    let mut sink = Sink::open(&OutputArgs {
        no_store: true,
        ..out.clone()
    })?;
    if pmscope_workload::kmer::table::tx_pm::stored_layout(&r.pool).is_some() {
        return recover_tx(ctx, &mut sink, r);
    }
    let opts = pmscope_mapping::MapOptions::host();
    let (h, rec) = pmscope_workload::kmer::table::static_pm::check_pool(&r.pool, &opts)
        .map_err(job_error_table)?;
    let record = ctx
        .record("kmer-recover")
        .param(p::POOL, r.pool.display().to_string())
        .param(p::TABLE, "static-pm")
        .param(p::K, h.k)
        .param(p::PERSIST, h.strategy.to_string())
        .value(v::TABLE_SLOTS, h.capacity as f64)
        .value(v::GENOMES_COMPLETED, h.done as f64)
        .value(v::VALID_KMERS, rec.valid as f64)
        .value(v::GENOME_COUNTS, rec.counted as f64)
        .value(v::CLEARED_INSERTS, rec.cleared as f64);
    sink.emit(&record)?;
    sink.commit()?;
    if sink.human() {
        println!(
            "{}: static-pm pool, K = {}, {} slots, written with --persist {}\n  \
             {} genomes completed; {} k-mers ({} genome counts); {} cut-short inserts cleared",
            r.pool.display(),
            h.k,
            h.capacity,
            h.strategy,
            h.done,
            rec.valid,
            rec.counted,
            rec.cleared
        );
    }
    Ok(())
}

/// `pmscope kmer recover` of a tx-pm pool: PMDK's check, then the table's own walk (PMDK
/// rolls back a transaction a crash cut short when the pool is opened).
fn recover_tx(ctx: &Context, sink: &mut Sink, r: &KmerRecoverArgs) -> Result<()> {
    let (h, c) =
        pmscope_workload::kmer::table::tx_pm::check_pool(&r.pool).map_err(job_error_table)?;
    let record = ctx
        .record("kmer-recover")
        .param(p::POOL, r.pool.display().to_string())
        .param(p::TABLE, "tx-pm")
        .param(p::K, h.k)
        .value(v::TABLE_BUCKETS, h.buckets as f64)
        .value(v::GENOMES_COMPLETED, h.done as f64)
        .value(v::VALID_KMERS, c.entries as f64)
        .value(v::GENOME_COUNTS, c.counted as f64);
    sink.emit(&record)?;
    sink.commit()?;
    if sink.human() {
        println!(
            "{}: tx-pm pool (libpmemobj, consistent by pmemobj_check), K = {}, {} buckets\n  \
             {} genomes completed; {} k-mers ({} genome counts)",
            r.pool.display(),
            h.k,
            h.buckets,
            h.done,
            c.entries,
            c.counted
        );
    }
    Ok(())
}

fn job_error_table(e: pmscope_workload::kmer::table::TableError) -> anyhow::Error {
    job_error(JobError::Table(e))
}

/// Where a k-mer job writes: the k-mers (`--kmers`) and the records (`-o`, or the
/// deprecated `--record`), checked against each other before any work.
struct Outputs {
    kmers: Option<PathBuf>,
    records: OutputArgs,
}

impl Outputs {
    fn plan(out: &OutputArgs, r: &KmerRunArgs) -> Result<Outputs> {
        let record_file = match (&out.output, &r.record) {
            (Some(_), Some(_)) => {
                return Err(usage(
                    "--record is the old name of -o; give the record file once, with -o",
                ));
            }
            (Some(o), None) | (None, Some(o)) => Some(o.clone()),
            (None, None) => None,
        };
        let stdout = Path::new("-");
        if let Some(k) = &r.kmers {
            if out.json && k == stdout {
                return Err(usage(
                    "--kmers - with --json: under --json stdout carries only JSON Lines; write the k-mers to a file",
                ));
            }
            if let Some(o) = &record_file
                && same_destination(k, o)
            {
                return Err(usage(format!(
                    "--kmers {} and -o {} name the same {}: give each output its own",
                    k.display(),
                    o.display(),
                    if k == stdout { "stdout" } else { "file" }
                )));
            }
        }
        Ok(Outputs {
            kmers: r.kmers.clone(),
            records: OutputArgs {
                output: record_file,
                ..out.clone()
            },
        })
    }

    fn kmers_to_stdout(&self) -> bool {
        self.kmers.as_deref() == Some(Path::new("-"))
    }
}

/// Whether two output names reach the same place (`-` is stdout; `a/../x` is `x`).
fn same_destination(a: &Path, b: &Path) -> bool {
    let stdout = Path::new("-");
    if a == stdout || b == stdout {
        return a == b;
    }
    let full = |p: &Path| {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        // Resolve the parent directory where it exists, so `./x` and `dir/../x` agree.
        match (abs.parent(), abs.file_name()) {
            (Some(d), Some(n)) => d.canonicalize().map(|d| d.join(n)).unwrap_or(abs.clone()),
            _ => abs.clone(),
        }
    };
    full(a) == full(b)
}

/// Validates the run options, runs the job, writes the k-mers and the record, and prints
/// the summary.
fn run_job(
    ctx: &mut Context,
    out: &OutputArgs,
    r: &KmerRunArgs,
    operation: Operation,
    default_k: usize,
    demo: bool,
) -> Result<Report> {
    let outputs = Outputs::plan(out, r)?;
    let k = r.k.unwrap_or(default_k);
    if k == 0 || k > MAX_K {
        return Err(usage(format!(
            "-k {k} is out of range: k must be between 1 and {MAX_K}"
        )));
    }
    let allowed = pmscope_sys::affinity::allowed_cpus()
        .map_err(|e| anyhow!("reading the CPUs pmscope may use: {e}"))?;
    let threads = match r.threads {
        Some(n) => n.0,
        None => allowed.len().max(1),
    };
    // The rule of every command: one pinned thread per CPU.
    check_threads(threads, &allowed).map_err(usage)?;
    let table = match r.table {
        KmerTableKind::Volatile => TableKind::Volatile,
        KmerTableKind::StaticPm => TableKind::StaticPm,
        KmerTableKind::TxPm => TableKind::TxPm,
    };
    let persist = pmscope_persist::PersistChoice::parse(r.persist.as_deref())
        .map_err(|e| usage(format!("--persist: {e}")))?;
    // A named strategy this CPU lacks is refused before anything is read or mapped.
    if table == TableKind::StaticPm {
        pmscope_persist::Persister::choose(persist, &ctx.features)?;
    }
    if r.pool.is_some() && table == TableKind::Volatile {
        return Err(usage(
            "--pool holds a persistent table; add --table static-pm or --table tx-pm",
        ));
    }
    let (specs, map_options) = ctx.targets(&r.targets.as_target_args(), &["dram:thp"])?;
    if specs.len() != 1 {
        return Err(usage(
            "pmscope kmer places its table on one --target; give it once",
        ));
    }
    let partition = match r.partition {
        KmerPartition::None => None,
        KmerPartition::Nodes => Some(node_plan(ctx, r, &specs[0], table, &allowed, threads)?),
    };
    let worker_cpus = match &partition {
        Some(plan) => plan.workers().0,
        None => allowed[..threads].to_vec(),
    };
    // A table this machine cannot make (tx-pm without libpmemobj) is refused before any
    // output is prepared or the environment judged.
    table.available().map_err(job_error_table)?;
    // Both outputs are prepared before any work, so a clobber is refused at once; each is
    // written beside its name and takes it only when the job succeeded, so a malformed
    // input leaves nothing behind.
    let mut sink = Sink::open(&outputs.records)?;
    let mut kmers_out = match &outputs.kmers {
        Some(p) => Some(PendingOutput::prepare_for("--kmers", p, out.force)?),
        None => None,
    };
    // The environment is judged as for every measuring command; the findings go into the
    // record (the job's workers run on the first `threads` allowed CPUs, or node by node).
    let environment = {
        let h = ctx.start(&mut sink, &worker_cpus, None, false)?;
        h.environment_warnings().to_vec()
    };
    let job = Job {
        operation,
        k,
        threads,
        split: if r.genome_per_record {
            Split::PerRecord
        } else {
            Split::PerFile
        },
        target: specs[0].clone(),
        map_options,
        format: match r.format {
            KmerFormat::Tsv => Format::Tsv,
            KmerFormat::Fasta => Format::Fasta,
        },
        sorted: r.sorted,
        preview: if demo { 5 } else { 3 },
        table,
        pool: r.pool.clone(),
        persist,
        features: ctx.features,
        partition: partition.clone(),
    };
    let report = job::run(&job, kmers_out.as_mut().map(|o| o.writer())).map_err(job_error)?;
    if let Some(o) = kmers_out {
        o.commit()?;
    }
    let mut record = to_record(ctx, &report, partition.as_ref());
    for w in environment {
        if !record.warnings.contains(&w) {
            record.warnings.push(w);
        }
    }
    sink.emit(&record)?;
    sink.commit()?;
    if sink.human() {
        let text = summary(&report, partition.as_ref(), outputs.kmers.as_deref(), demo);
        if outputs.kmers_to_stdout() {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
    Ok(report)
}

/// `--partition nodes`: refuses what cannot be placed node by node, then spreads the
/// threads over the nodes with CPUs.
fn node_plan(
    ctx: &Context,
    r: &KmerRunArgs,
    spec: &TargetSpec,
    table: TableKind,
    allowed: &[usize],
    threads: usize,
) -> Result<NodePlan> {
    if table == TableKind::TxPm {
        return Err(usage(
            "--partition nodes cannot split tx-pm: its table is one libpmemobj pool file whose pages no node binding places; use --table static-pm or volatile",
        ));
    }
    if r.pool.is_some() {
        return Err(usage(
            "--pool holds one table, but --partition nodes makes one per node; drop --pool (the sub-tables then live on the target) or --partition",
        ));
    }
    if spec.node.is_some() {
        return Err(usage(format!(
            "-t {spec}: --partition nodes binds each sub-table to its own node; give the target without node="
        )));
    }
    if matches!(spec.kind_name(), "file" | "devdax") {
        return Err(usage(format!(
            "-t {spec}: a file's or a device's memory is where its file system or device puts it, so it cannot be split across nodes; use a dram or shm target with --partition nodes"
        )));
    }
    NodePlan::new(&pmscope_sys::numa::nodes(&ctx.root), allowed, threads).map_err(usage)
}

/// Maps job errors to exit codes: malformed input and impossible requests are usage
/// errors (2); the system failing us is a runtime error (1).
pub(crate) fn job_error(e: JobError) -> anyhow::Error {
    match e {
        JobError::Read(r) if r.is_usage => usage(r.to_string()),
        JobError::Usage(m) => usage(m),
        JobError::Interrupted(i) => anyhow::Error::new(i),
        JobError::Table(pmscope_workload::kmer::table::TableError::Refused(m)) => usage(m),
        JobError::Table(pmscope_workload::kmer::table::TableError::Target(t)) if t.is_usage() => {
            usage(t.to_string())
        }
        JobError::Table(pmscope_workload::kmer::table::TableError::Target(t)) => {
            anyhow::Error::new(t).context("mapping the k-mer table")
        }
        // The machine lacks a library: a runtime error (1), its message the one sentence.
        JobError::Table(e @ pmscope_workload::kmer::table::TableError::Unavailable(_)) => {
            anyhow::Error::new(e)
        }
        other => anyhow!("{other}"),
    }
}

/// The common result record: parameters, set sizes, phase times, MIPS, the table's
/// footprint and verified target, peak memory.
fn to_record(ctx: &Context, r: &Report, partition: Option<&NodePlan>) -> Record {
    let in_genomes = r.genomes.iter().filter(|g| g.role == "in").count();
    let out_genomes = r.genomes.len() - in_genomes;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut rec = ctx
        .record("kmer")
        .param(p::OPERATION, r.operation)
        .param(p::K, r.k)
        .param(p::THREADS, r.threads)
        .param(p::TABLE, r.table.kind)
        .param(p::GENOMES_INSERTED, in_genomes)
        .param(p::GENOMES_SUBTRACTED, out_genomes)
        .param(
            p::GENOME_FILES,
            r.genomes
                .iter()
                .map(|g| g.path.display().to_string())
                .collect::<Vec<_>>(),
        )
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
        .value(v::ESTIMATED_DISTINCT_KMERS, r.estimated_distinct as f64)
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
        .value(v::TABLE_GROWN, r.table.grown as f64);
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
    rec = rec.param(
        p::PARTITION,
        if partition.is_some() { "nodes" } else { "none" },
    );
    // Where pmscope persists (static-pm): the strategy actually used and its instructions,
    // and the note when the default fell back.
    if let Some(p) = &r.table.persister {
        rec = pmscope_experiment::fallback::persist_params(rec, p);
        rec.warnings
            .extend(pmscope_experiment::fallback::persist_note(p));
    }
    if let Some(plan) = partition {
        let subs: Vec<serde_json::Value> = r
            .table
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
                    "pages_by_node": p.target.achieved.nodes,
                    "pages_on_node_fraction": p.on_node(),
                })
            })
            .collect();
        rec = rec
            .param(p::SUB_TABLES, subs)
            .param(p::NODES_WITHOUT_CPUS, plan.without_cpus.clone());
    }
    if let Some(peak) = pmscope_sys::rusage::peak_rss_bytes() {
        rec = rec.value(v::PEAK_RSS_BYTES, peak as f64);
    }
    rec.metric = Some("insert_mips".into());
    rec.target = Some(r.table.target.clone());
    rec.threads = r.placements.clone();
    rec.warnings.extend(r.table.warnings.iter().cloned());
    rec
}

/// `30860126` → `30 860 126` (a space groups digits, as SI does; tables right-align it).
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// The human summary.
fn summary(r: &Report, partition: Option<&NodePlan>, output: Option<&Path>, demo: bool) -> String {
    let bases: u64 = r.genomes.iter().map(|g| g.bases).sum();
    let skipped: u64 = r.genomes.iter().map(|g| g.skipped_kmers).sum();
    let a = &r.table.target.achieved;
    let pages = match a.page_size {
        Some(s) if a.pages.smaps_sees_mapping => format!(
            "{} {:.0}%",
            pmscope_core::units::page_size_name(s),
            100.0 * a.pages.fraction(s, a.bytes)
        ),
        Some(s) => pmscope_core::units::page_size_name(s),
        None => "unclear".into(),
    };
    let mut s = String::new();
    let in_n = r.genomes.iter().filter(|g| g.role == "in").count();
    let group = if r.operation == "primers" {
        format!(
            "{in_n} in-group + {} out-group genomes",
            r.genomes.len() - in_n
        )
    } else if r.operation == "subtract" {
        format!("{in_n} genomes minus {}", r.genomes.len() - in_n)
    } else {
        format!("{in_n} genomes")
    };
    s += &format!(
        "pmscope kmer {}: {group}, {:.1} Mbp, k = {}, {} threads, table {} on {} ({pages})\n\n",
        r.operation,
        bases as f64 / 1e6,
        r.k,
        r.threads,
        r.table.kind,
        r.table.target.spec
    );
    let mut t = Table::new(&["k-mers", "count"]);
    t.row(vec!["inserted".into(), thousands(r.inserts)]);
    if r.lookups > 0 {
        t.row(vec!["looked up (subtracted)".into(), thousands(r.lookups)]);
    }
    t.row(vec!["skipped (N or IUPAC code)".into(), thousands(skipped)]);
    for (name, n) in &r.sets {
        let label = match (r.operation, *name) {
            ("primers", "union") => "distinct in the in-group",
            ("primers", "intersection") => "in every in-group genome",
            ("primers", "candidates") => "primer candidates (also in no out-group genome)",
            ("subtract", "union") => "distinct in the genomes",
            ("subtract", "difference") => "in the genomes, not in --minus",
            (_, "union") => "distinct",
            (_, "intersection") => "in every genome",
            (_, other) => other,
        };
        t.row(vec![label.into(), thousands(*n)]);
    }
    s += &t.render();
    if !r.histogram.is_empty() {
        s += "\n\n";
        let mut h = Table::new(&["in genomes", "k-mers"]);
        for (g, n) in r.histogram.iter().enumerate().skip(1) {
            h.row(vec![g.to_string(), thousands(*n)]);
        }
        s += &h.render();
    }
    if r.operation == "primers" && !r.regions.is_empty() {
        let mut regions = r.regions.clone();
        regions.sort_by_key(|r| std::cmp::Reverse(r.1.end - r.1.start));
        s += &format!(
            "\n\n{} candidate regions in {} (runs of overlapping candidates); the longest:\n",
            regions.len(),
            r.genomes[0].name
        );
        let mut t = Table::new(&["record", "from", "to", "bases", "candidates"]);
        for (name, reg) in regions.iter().take(if demo { 5 } else { 3 }) {
            t.row(vec![
                name.clone(),
                (reg.start + 1).to_string(),
                reg.end.to_string(),
                (reg.end - reg.start).to_string(),
                reg.kmers.to_string(),
            ]);
        }
        s += &t.render();
    }
    if !r.preview.is_empty() {
        let short = |kmer: &str| {
            if kmer.len() > 60 {
                format!("{}…", &kmer[..60])
            } else {
                kmer.to_string()
            }
        };
        if r.operation == "primers" {
            s += "\n\nfirst candidates (record:position strand k-mer):\n";
        } else {
            s += "\n\nfirst k-mers (k-mer genomes):\n";
        }
        for line in &r.preview {
            let f: Vec<&str> = line.split('\t').collect();
            let shown = match f.as_slice() {
                [kmer, _genome, record, position, strand] => {
                    format!("{record}:{position} {strand} {}", short(kmer))
                }
                [kmer, genomes] => format!("{} {genomes}", short(kmer)),
                _ => line.clone(),
            };
            s += &format!("  {shown}\n");
        }
    }
    let p = &r.phases;
    s.truncate(s.trim_end().len());
    s += "\n";
    let c = &r.cpu;
    let cpu_total = c.parse + c.estimate + c.map + c.insert + c.setops + c.output;
    s += "\n";
    let mut t = Table::new(&["phase", "wall", "cpu"]);
    for (name, d, cpu) in [
        ("parse", p.parse, c.parse),
        ("estimate", p.estimate, c.estimate),
        ("map table", p.map, c.map),
        ("insert", p.insert, c.insert),
        ("set operations", p.setops, c.setops),
        ("output", p.output, c.output),
        ("total", r.total(), cpu_total),
    ] {
        t.row(vec![
            name.into(),
            format!("{:.3} s", d.as_secs_f64()),
            format!("{:.3} s", cpu.as_secs_f64()),
        ]);
    }
    s += &t.render();
    s += &format!(
        "\n\n{:.1} million inserts per second; table {} slots × {} B = {} (load {:.2}, {}); peak RSS {}",
        r.mips(),
        thousands(r.table.slots),
        r.table.slot_bytes,
        Bytes(r.table.footprint_bytes).human(),
        r.table.load_factor,
        match r.table.grown {
            0 => "did not grow".to_string(),
            n => format!(
                "grew {n} times in {:.3} s of the insert phase: {:.1} million inserts per second without it",
                p.grow.as_secs_f64(),
                r.mips_excluding_growth()
            ),
        },
        pmscope_sys::rusage::peak_rss_bytes()
            .map(|b| Bytes(b).human())
            .unwrap_or_else(|| "unknown".into())
    );
    if let Some((flushes, fences)) = r.persist_per_insert() {
        s += &format!("\n{flushes:.3} flushes and {fences:.5} fences per insert");
    }
    if let Some(plan) = partition {
        s += &partition_summary(r, plan);
    }
    if let Some(o) = output.filter(|o| *o != Path::new("-")) {
        s += &format!(
            "\n{} k-mers written to {}",
            thousands(r.result_kmers),
            o.display()
        );
    }
    s
}

/// The sub-tables of `--partition nodes`: node, CPUs, inserts, and where move_pages found
/// their pages.
fn partition_summary(r: &Report, plan: &NodePlan) -> String {
    let n = r.table.parts.len();
    let mut s = if n == 1 {
        format!(
            "\n\npartitioned by NUMA node: 1 sub-table, as this machine has one node with CPUs (node {})\n",
            r.table.parts[0].node
        )
    } else {
        format!("\n\npartitioned by NUMA node: {n} sub-tables, k-mers routed by hash\n")
    };
    let mut t = Table::new(&[
        "node",
        "cpus",
        "k-mers inserted",
        "distinct",
        "pages on its node",
    ]);
    for p in &r.table.parts {
        let pages: u64 = p.target.achieved.nodes.values().sum();
        t.row(vec![
            p.node.to_string(),
            pmscope_core::cpulist::format_list(&p.cpus),
            thousands(p.inserts),
            thousands(p.distinct),
            match p.on_node() {
                Some(f) => format!("{:.1}% of {pages} pages (move_pages)", 100.0 * f),
                None => "unverified".into(),
            },
        ]);
    }
    s += &t.render();
    for id in &plan.without_cpus {
        s +=
            &format!("\nnode {id} has memory but no CPUs: no sub-table (no thread is local to it)");
    }
    s
}

/// `pmscope kmer demo`: in-group the S. aureus references, out-group every other genome
/// the Debian example packages ship (including a draft assembly of S. aureus USA300).
fn demo(ctx: &mut Context, out: &OutputArgs, d: &KmerDemoArgs) -> Result<()> {
    let (in_group, out_group) = demo_genomes(&d.ragout, &d.kaptive)?;
    if !out.json && out.output.as_deref() != Some(Path::new("-")) {
        let text = format!(
            "in-group: the {} S. aureus reference genomes; out-group: the other {} genomes of ragout-examples and kaptive-example\n",
            in_group.len(),
            out_group.len()
        );
        // The k-mers may own stdout.
        if d.run.kmers.as_deref() == Some(Path::new("-")) {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
    let op = Operation::Primers {
        in_group,
        out_group,
    };
    run_job(ctx, out, &d.run, op, 100, true).map(|_| ())
}

/// The demo's genome files, sorted; an error naming the packages if they are missing.
pub fn demo_genomes(ragout: &Path, kaptive: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let missing = || {
        anyhow!(
            "the Debian example genomes are not installed ({} or {} is missing); install them with `./dev setup` or `apt-get install ragout-examples kaptive-example`",
            ragout.display(),
            kaptive.display()
        )
    };
    if !ragout.is_dir() || !kaptive.is_dir() {
        return Err(missing());
    }
    let mut all = Vec::new();
    collect_fasta(ragout, &mut all)?;
    collect_fasta(kaptive, &mut all)?;
    all.sort();
    let (in_group, out_group): (Vec<PathBuf>, Vec<PathBuf>) = all.into_iter().partition(|p| {
        p.parent().and_then(|d| d.file_name()) == Some("references".as_ref())
            && p.components().any(|c| c.as_os_str() == "S.Aureus")
    });
    if in_group.is_empty() || out_group.is_empty() {
        return Err(missing());
    }
    Ok((in_group, out_group))
}

fn collect_fasta(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            collect_fasta(&p, out)?;
        } else if p.to_string_lossy().ends_with(".fasta.gz") {
            out.push(p);
        }
    }
    Ok(())
}

/// `pmscope kmer synth` (a `kmer-synth` record under `--json` and in `-o`).
fn synth(ctx: &Context, out: &OutputArgs, a: &KmerSynthArgs) -> Result<()> {
    let length = parse_bases(&a.length)?;
    for (name, rate) in [("--snp-rate", a.snp_rate), ("--indel-rate", a.indel_rate)] {
        if !(0.0..=0.5).contains(&rate) {
            return Err(usage(format!(
                "{name} {rate} is not a rate per base between 0 and 0.5"
            )));
        }
    }
    let mut sink = Sink::open(&OutputArgs {
        no_store: true,
        ..out.clone()
    })?;
    std::fs::create_dir_all(&a.dir)
        .map_err(|e| usage(format!("cannot create {}: {e}", a.dir.display())))?;
    let spec = SynthSpec {
        length,
        strains: a.strains,
        snp_rate: a.snp_rate,
        indel_rate: a.indel_rate,
        seed: a.seed,
    };
    let paths = write_dataset(&a.dir, &spec).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            usage(format!(
                "{} already holds a synthetic data set; choose an empty directory",
                a.dir.display()
            ))
        } else {
            anyhow!("writing into {}: {e}", a.dir.display())
        }
    })?;
    let record = ctx
        .record("kmer-synth")
        .param(p::DIRECTORY, a.dir.display().to_string())
        .param(
            p::GENOME_FILES,
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
        )
        .param(p::STRAINS, a.strains)
        .param(p::SNP_RATE, a.snp_rate)
        .param(p::INDEL_RATE, a.indel_rate)
        .param(p::SEED, a.seed)
        .value(v::BASES, length as f64)
        .value(v::GENOMES_WRITTEN, paths.len() as f64);
    sink.emit(&record)?;
    sink.commit()?;
    sink.text(&format!(
        "wrote {} genomes of about {} bases into {}",
        paths.len(),
        thousands(length as u64),
        a.dir.display()
    ));
    Ok(())
}

/// `5M` = 5,000,000 bases (decimal, as genome sizes are given).
fn parse_bases(s: &str) -> Result<usize> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000.0),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000.0),
        Some((i, 'g' | 'G')) => (&t[..i], 1_000_000_000.0),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| usage(format!("--length '{s}' is not a number of bases (e.g. 5M)")))?;
    let n = (v * mult).round();
    if !(1.0..=1e11).contains(&n) {
        return Err(usage(format!(
            "--length '{s}' must be between 1 and 100G bases"
        )));
    }
    Ok(n as usize)
}
