//! A k-mer job (primers, count, union, intersect, subtract, demo): its plan, checked before
//! any genome is read; its outputs (`--kmers`, and `-o` or the old `--record`), checked
//! against each other before any work; and its measurement: the job runs inside a started
//! measurement, then the harness adopts the table's target and the record is made from it.

use super::params::{Partition, RunArgs};
use super::{durable_by, job_error, record, summary, table_error};
use crate::Env;
use crate::atomic_file::PendingOutput;
use crate::error::usage;
use crate::output::Output;
use crate::params::check_threads;
use anyhow::{Result, anyhow};
use pmscope_mapping::TargetSpec;
use pmscope_persist::PersistChoice;
use pmscope_workload::kmer::encode::MAX_K;
use pmscope_workload::kmer::job::{self, BinStore, BinsAt, Job, JobError, Method, Operation};
use pmscope_workload::kmer::read::Split;
use pmscope_workload::kmer::table::partition::NodePlan;
use pmscope_workload::kmer::table::{Fence, TableKind};
use std::path::{Path, PathBuf};

/// A job, checked.
pub struct Plan {
    job: Job,
    /// Where the workers run: the first `threads` allowed CPUs, or node by node.
    worker_cpus: Vec<usize>,
    /// `--kmers`.
    kmers: Option<PathBuf>,
    /// `--record`, the old name of `-o`.
    record: Option<PathBuf>,
    /// The demo's first line (which genomes are which), and its longer previews.
    intro: Option<String>,
    /// Why the one-table method was chosen when no --method was given.
    method_note: Option<String>,
}

impl Plan {
    fn demo(&self) -> bool {
        self.intro.is_some()
    }
}

/// Where the binned method keeps its bins; `--bins` and `--tmp` refused with the one table.
fn bin_store(r: &RunArgs, method: Method, primers: bool) -> Result<BinStore> {
    use super::params::Bins;
    if method == Method::Table && (r.bins != Bins::Auto || r.tmp.is_some()) {
        return Err(usage(
            "--bins and --tmp say where --method binned keeps its bins, and this job counts in one table; drop them or use --method binned",
        ));
    }
    if primers && (r.bins == Bins::Disk || r.tmp.is_some()) {
        return Err(usage(
            "kmer primers keeps its bins in memory (its out-group step reads the groups whole); drop --bins disk and --tmp",
        ));
    }
    // Only a --tmp given is checked here: the directory of --kmers is checked with it.
    if let Some(d) = &r.tmp
        && !d.is_dir()
    {
        return Err(usage(format!(
            "--tmp {}: not a directory; give the directory the bins' scratch file goes in",
            d.display()
        )));
    }
    let dir = r.tmp.clone().or_else(|| {
        let beside = r
            .kmers
            .as_ref()
            .filter(|p| p.as_os_str() != "-")?
            .parent()?;
        Some(if beside.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            beside.to_path_buf()
        })
    });
    Ok(BinStore {
        at: match r.bins {
            Bins::Auto => BinsAt::Auto,
            Bins::Memory => BinsAt::Memory,
            Bins::Disk => BinsAt::Disk,
        },
        dir,
    })
}

/// Checks the run options against the machine and the target: k, threads, the table and
/// its persistence, the partition.
pub fn plan(
    env: &Env,
    r: &RunArgs,
    operation: Operation,
    method: Option<Method>,
    default_k: usize,
    intro: Option<String>,
) -> Result<Plan> {
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
    let table = r.table;
    let (method, method_note) = choose_method(r, method);
    if method == Method::Binned {
        binned_alone(r)?;
    }
    let persist = r
        .persist
        .map_or(PersistChoice::Default, PersistChoice::Named);
    // A named strategy this CPU lacks is refused before anything is read or mapped.
    if table == TableKind::StaticPm {
        pmscope_persist::Persister::choose(persist, &env.features)?;
    }
    if r.pool.is_some() && table == TableKind::Volatile {
        return Err(usage(
            "--pool holds a persistent table; add --table static-pm or --table tx-pm",
        ));
    }
    if let Some(pool) = &r.pool {
        pool_path(pool)?;
    }
    let fence = match (r.fence, table) {
        (None, _) => Fence::default(),
        (Some(f), TableKind::StaticPm) => f,
        (Some(f), t) => {
            return Err(usage(format!(
                "--fence {f} applies to static-pm, the table pmscope persists itself, not to {t}; drop --fence or add --table static-pm"
            )));
        }
    };
    let (specs, map_options) = env.targets(&r.targets.as_target_args(), &["dram:thp"])?;
    if specs.len() != 1 && r.partition == Partition::None {
        return Err(usage(
            "pmscope kmer places its table on one --target; give it once (or once per node with CPUs with --partition nodes)",
        ));
    }
    let partition = match r.partition {
        Partition::None => None,
        Partition::Nodes => Some(node_plan(env, r, &specs, &allowed, threads)?),
    };
    let worker_cpus = match &partition {
        Some(plan) => plan.workers().0,
        None => allowed[..threads].to_vec(),
    };
    // A table this machine cannot make (tx-pm without libpmemobj) is refused before any
    // output is prepared or the environment judged.
    table.available().map_err(table_error)?;
    let primers = matches!(operation, Operation::Primers { .. });
    let job = Job {
        operation,
        method,
        k,
        threads,
        split: if r.genome_per_record {
            Split::PerRecord
        } else {
            Split::PerFile
        },
        target: specs[0].clone(),
        map_options,
        format: r.format,
        sorted: r.sorted,
        preview: if intro.is_some() { 5 } else { 3 },
        table,
        pool: r.pool.clone(),
        persist,
        fence,
        features: env.features,
        partition,
        bins: bin_store(r, method, primers)?,
    };
    Ok(Plan {
        job,
        worker_cpus,
        kmers: r.kmers.clone(),
        record: r.record.clone(),
        intro,
        method_note,
    })
}

/// The method when none is named: the binned one, the fastest, unless the command names
/// where the one table lives or how (then it is the memory-tier measurement, and the note
/// says so, since the same command without that option counts by the faster method).
fn choose_method(r: &RunArgs, method: Option<Method>) -> (Method, Option<String>) {
    if let Some(m) = method {
        return (m, None);
    }
    let named = if !r.targets.targets.is_empty() {
        Some("-t names a target".to_string())
    } else {
        one_table_option(r).map(|o| format!("{o} shapes the one table"))
    };
    match named {
        Some(why) => (
            Method::Table,
            Some(format!(
                "{why}, so the k-mers are counted in one table there (the memory-tier measurement); --method binned counts faster"
            )),
        ),
        None => (Method::Binned, None),
    }
}

/// The first option given that only the one table has.
fn one_table_option(r: &RunArgs) -> Option<String> {
    if r.table != TableKind::Volatile {
        Some(format!("--table {}", r.table))
    } else if r.pool.is_some() {
        Some("--pool".to_string())
    } else if r.partition == Partition::Nodes {
        Some("--partition nodes".to_string())
    } else if r.fence.is_some() {
        Some("--fence".to_string())
    } else if r.persist.is_some() {
        Some("--persist".to_string())
    } else {
        None
    }
}

/// `--method binned` counts in tables of its own, one per worker: the options that shape
/// the one table are refused with it rather than ignored.
fn binned_alone(r: &RunArgs) -> Result<()> {
    let clash = one_table_option(r);
    match clash {
        Some(option) => Err(usage(format!(
            "{option} shapes the one table of --method table, but --method binned counts in a small volatile table per thread; drop {option} or use --method table"
        ))),
        None => Ok(()),
    }
}

/// `--pool PATH` through the one path resolver: an existing pool (reopened to resume) or a
/// new name in an existing directory (created exclusively); never a directory.
pub fn pool_path(pool: &std::path::Path) -> Result<pmscope_sys::path::Found> {
    use pmscope_sys::path::{Found, look};
    match look(pool).map_err(|e| usage(format!("--pool {e}")))? {
        Found::Directory => Err(usage(format!(
            "--pool {} is a directory; name the pool file (e.g. {})",
            pool.display(),
            pool.join("kmers.pool").display()
        ))),
        found => Ok(found),
    }
}

/// `--partition nodes`: refuses what cannot be placed node by node, spreads the threads
/// over the nodes with CPUs, and gives each node's sub-table its target: one dram or shm
/// target bound to each node in turn, or an explicit list of one target per node (a
/// file's or a device's memory, or a far-memory node, for each).
fn node_plan(
    env: &Env,
    r: &RunArgs,
    specs: &[TargetSpec],
    allowed: &[usize],
    threads: usize,
) -> Result<NodePlan> {
    if r.table == TableKind::TxPm {
        return Err(usage(
            "--partition nodes cannot split tx-pm: its table is one libpmemobj pool file whose pages no node binding places; use --table static-pm or volatile",
        ));
    }
    if r.pool.is_some() {
        return Err(usage(
            "--pool holds one table, but --partition nodes makes one per node; drop --pool (the sub-tables then live on the target) or --partition",
        ));
    }
    let plan =
        NodePlan::new(&pmscope_sys::numa::nodes(&env.root), allowed, threads).map_err(usage)?;
    let nodes: Vec<String> = plan.shares.iter().map(|s| s.node.to_string()).collect();
    let bindable = |spec: &TargetSpec| !matches!(spec.kind_name(), "file" | "devdax");
    if let [spec] = specs
        && spec.node.is_none()
        && bindable(spec)
    {
        // One dram or shm target: each sub-table gets it bound to its own node.
        return Ok(plan);
    }
    if specs.len() != plan.shares.len() {
        let given: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        return Err(usage(format!(
            "-t {}: --partition nodes places one sub-table per node with CPUs ({} of them: node {}), so give one dram or shm target without node= to bind to each, or exactly {} targets, one per node in that order",
            given.join(" -t "),
            plan.shares.len(),
            nodes.join(", "),
            plan.shares.len()
        )));
    }
    // One target per node, in node order; a dram or shm target without node= is bound to
    // its sub-table's node, any other is used as given (its memory is where it is).
    let targets = specs
        .iter()
        .zip(&plan.shares)
        .map(|(spec, share)| {
            let mut spec = spec.clone();
            if spec.node.is_none() && bindable(&spec) {
                spec.node = Some(share.node);
            }
            spec
        })
        .collect();
    plan.with_targets(targets).map_err(usage)
}

/// Checks the two outputs against each other and prepares the k-mers' (the record file is
/// the binary's `-o`, or the old `--record`, which then becomes it): before any work, so
/// a collision or a clobber is refused at once.
fn outputs(out: &mut dyn Output, p: &Plan) -> Result<Option<PendingOutput>> {
    let stdout = Path::new("-");
    let record_file = match (out.file(), &p.record) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "--record is the old name of -o; give the record file once, with -o",
            ));
        }
        (Some(o), None) => Some(o.to_path_buf()),
        (None, Some(o)) => Some(o.clone()),
        (None, None) => None,
    };
    if let Some(k) = &p.kmers {
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
        // Not a human's terminal: stdout carries JSON Lines.
        if !out.human() && k == stdout {
            return Err(usage(
                "--kmers - with --json: under --json stdout carries only JSON Lines; write the k-mers to a file",
            ));
        }
    }
    if let (None, Some(r)) = (out.file(), &p.record) {
        out.set_file(r)?;
    }
    match &p.kmers {
        Some(k) => Ok(Some(out.prepare_output("--kmers", k)?)),
        None => Ok(None),
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

/// Runs the job, writes the k-mers, emits the record from the adopted target, and prints
/// the summary (on stderr when the k-mers own stdout).
pub fn measure(env: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let mut kmers_out = outputs(out, p)?;
    let human = out.human();
    let kmers_to_stdout = p.kmers.as_deref() == Some(Path::new("-"));
    let say = |text: &str| -> Result<()> {
        if kmers_to_stdout {
            eprintln!("{text}");
        } else {
            crate::stdout::line(text)?;
        }
        Ok(())
    };
    if let Some(intro) = &p.intro
        && human
    {
        say(intro)?;
    }
    let features = env.features;
    // The environment is judged as for every measuring command; the findings go into the
    // record (the job's workers run on `worker_cpus`).
    let mut h = env.start_wall_clocked(out, &p.worker_cpus)?;
    let report = job::run(&p.job, kmers_out.as_mut().map(|o| o.writer())).map_err(|e| {
        // A named pool outlives the interrupt, as it outlives a kill: say how to go on.
        if let (JobError::Interrupted(_), Some(pool)) = (&e, &p.job.pool)
            && pool.exists()
        {
            eprintln!(
                "pmscope: the pool {} keeps the genomes it completed: run the same command to resume",
                pool.display()
            );
        }
        job_error(e)
    })?;
    if let Some(o) = kmers_out {
        o.commit()?;
    }
    // Where pmscope persists (static-pm), a default that fell back is noted in the record.
    if let Some(w) = report
        .table
        .persister
        .as_ref()
        .and_then(crate::fallback::persist_note)
    {
        h.note(w);
    }
    let durable = durable_by(p.job.table, &report.table, &features);
    let mut run = h.adopt(
        report.table.target.clone(),
        report.table.warnings.clone(),
        durable,
    );
    let rec = record::job(run.record("kmer"), &report, &p.job);
    run.emit(&rec)?;
    h.finish()?;
    if human {
        if let Some(note) = &p.method_note {
            say(&format!("note: {note}"))?;
        }
        say(&summary::summary(
            &report,
            p.job.partition.as_ref(),
            p.kmers.as_deref(),
            p.demo(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_names_of_one_place_are_the_same_destination() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("x.tsv");
        let b = dir.path().join(".").join("x.tsv");
        assert!(same_destination(&a, &b));
        assert!(!same_destination(&a, &dir.path().join("y.tsv")));
        assert!(same_destination(Path::new("-"), Path::new("-")));
        assert!(!same_destination(Path::new("-"), &a));
    }
}
