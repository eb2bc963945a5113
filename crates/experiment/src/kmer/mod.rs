//! `pmscope kmer`: the k-mer set workload of seed 003 as a tool (primers, count, union,
//! intersect, subtract), its end-to-end demo on Debian's example genomes, seed 003's Table 9
//! and Fig. 18 (`bench`, on one target or several side by side), the synthetic genome
//! generator and the pool checker.
//!
//! A k-mer table maps its own memory (it is sized from the genomes, and grows), so a job
//! runs inside a started measurement and the harness then adopts the table's target
//! ([`Harness::adopt`](pmscope_runner::harness::Harness::adopt)): its records carry the
//! target as achieved and every warning a target of `per_target` carries — the persistence
//! domain's among them, for a persistent table on a mapping that does not make it durable.
//!
//! Output contract: `--kmers FILE` receives the k-mers (TSV or FASTA; `--kmers -` is
//! stdout) and `-o FILE` the record, as in every command (`--record` is its deprecated old
//! name). Both are written beside their names and put in place only when the job has
//! succeeded, so a malformed input writes nothing and nothing is overwritten without
//! `--force`; two outputs naming one place, or k-mers on stdout under `--json`, are usage
//! errors before any work.

mod bench;
pub(crate) mod demo;
mod fence;
mod job;
pub mod params;
mod record;
mod recover;
mod summary;
mod synth;
mod target;

use crate::output::Output;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use pmscope_core::achieved::Achieved;
use pmscope_core::record::Record;
use pmscope_persist::PersistStrategy;
use pmscope_sys::cpu::CpuFeatures;
use pmscope_workload::kmer::job::{JobError, Method, Operation, TableFacts};
use pmscope_workload::kmer::table::{Durability, TableError, TableKind};

pub use params::Command;

/// `pmscope kmer`: its parameters and command line (a subcommand per job).
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// The k-mer command.
    #[command(subcommand)]
    pub command: Command,
}

/// What a `pmscope kmer` command will do, checked before anything is read or mapped.
pub enum Plan {
    /// A table job (primers, count, union, intersect, subtract, demo).
    Job(Box<job::Plan>),
    /// Table 9.
    Bench(Box<bench::Plan>),
    /// A synthetic data set.
    Synth(synth::Plan),
    /// A pool to check.
    Recover(std::path::PathBuf),
}

fn plan(env: &mut Env, a: &Params) -> Result<Plan> {
    let job = |run, op, method, k, intro| -> Result<Plan> {
        Ok(Plan::Job(Box::new(job::plan(
            env, run, op, method, k, intro,
        )?)))
    };
    let table_job = |run, op, k, intro| job(run, op, Some(Method::Table), k, intro);
    match &a.command {
        Command::Primers(p) => {
            let op = Operation::Primers {
                in_group: p.in_group.clone(),
                out_group: p.out_group.clone(),
            };
            job(&p.run, op, p.method, 100, None)
        }
        Command::Count(s) => {
            let op = Operation::Count {
                genomes: s.genomes.clone(),
            };
            job(&s.run, op, s.method, 31, None)
        }
        Command::Union(s) => {
            let op = Operation::Union {
                genomes: s.genomes.clone(),
            };
            job(&s.run, op, s.method, 31, None)
        }
        Command::Intersect(s) => {
            let op = Operation::Intersect {
                genomes: s.genomes.clone(),
            };
            job(&s.run, op, s.method, 31, None)
        }
        Command::Subtract(s) => {
            let op = Operation::Subtract {
                genomes: s.genomes.clone(),
                minus: s.minus.clone(),
            };
            job(&s.run, op, s.method, 31, None)
        }
        Command::Demo(d) => {
            let (op, intro) = demo::operation(&d.ragout, &d.kaptive)?;
            table_job(&d.run, op, 100, Some(intro))
        }
        Command::Synth(s) => Ok(Plan::Synth(synth::plan(s)?)),
        Command::Recover(r) => {
            if job::pool_path(&r.pool)? == pmscope_sys::path::Found::New {
                return Err(crate::error::usage(format!(
                    "--pool {}: no such pool file; name one a kmer run with --pool wrote",
                    r.pool.display()
                )));
            }
            Ok(Plan::Recover(r.pool.clone()))
        }
        Command::Bench(b) => Ok(Plan::Bench(Box::new(bench::plan(env, b)?))),
    }
}

/// `pmscope kmer`.
pub struct Kmer;

impl Experiment for Kmer {
    const NAME: &'static str = "kmer";
    const IN_BLOCKS: bool = false;
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        match plan {
            Plan::Job(p) => job::measure(env, out, p),
            Plan::Bench(p) => bench::measure(env, out, p),
            Plan::Synth(p) => synth::measure(env, out, p),
            Plan::Recover(pool) => recover::measure(env, out, pool),
        }
    }

    /// The tables of `kmer-bench`, `kmer-synth` and `kmer-recover` records. A job's summary
    /// (`kmer` records) is printed by the job itself: it shows the workload's output beside
    /// its figures — the first k-mers, the candidate regions, where the k-mers went — which
    /// the record does not hold, and goes to stderr when the k-mers own stdout.
    fn render(records: &[Record]) -> String {
        let mut s = bench::render::render(records);
        s += &synth::render(records);
        s += &recover::render(records);
        s
    }

    /// A job reads genomes and places one table on one target of its own, so a suite has
    /// nothing to put it on; `kmer bench` runs every table on each target, so a suite step
    /// of it takes the suite's targets (its genomes are the step's own; a table a target
    /// cannot hold is left out there with a warning, as the bench itself does).
    fn place(params: &mut Params, on: &Placement) {
        if let Command::Bench(b) = &mut params.command {
            b.targets = on.targets.clone();
        }
    }
}

/// A job's error as the error itself: its type says whether the request is at fault
/// (`JobError::is_usage`, exit 2). An interrupt is passed on as itself (exit 130/143),
/// and a mapping the system refused is said to be the table's.
fn job_error(e: JobError) -> anyhow::Error {
    match e {
        JobError::Interrupted(i) => anyhow::Error::new(i),
        JobError::Table(TableError::Target(t)) if !t.is_usage() => {
            anyhow::Error::new(JobError::Table(TableError::Target(t)))
                .context("mapping the k-mer table")
        }
        e => anyhow::Error::new(e),
    }
}

fn table_error(e: TableError) -> anyhow::Error {
    job_error(JobError::Table(e))
}

/// How libpmem, inside libpmemobj, makes a tx-pm pool's stores durable: with CPU flushes
/// where it believes the pool is pmem (a DAX mapping, or `PMEM_IS_PMEM_FORCE=1`), with
/// `msync` elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Libpmem {
    /// `PMEM_IS_PMEM_FORCE=1`: CPU flushes wherever the pool is.
    Forced,
    /// A DAX mapping: CPU flushes.
    Dax,
    /// Not DAX: msync.
    Msync,
    /// DAX unknown: libpmem's own choice.
    Unknown,
}

impl Libpmem {
    fn of(achieved: &Achieved) -> Libpmem {
        let forced = std::env::var("PMEM_IS_PMEM_FORCE").is_ok_and(|v| v.trim() == "1");
        match (forced, achieved.map_sync) {
            (true, _) => Libpmem::Forced,
            (false, Some(true)) => Libpmem::Dax,
            (false, Some(false)) => Libpmem::Msync,
            (false, None) => Libpmem::Unknown,
        }
    }

    /// What the records and Table 9 say.
    fn describe(self) -> &'static str {
        match self {
            Libpmem::Forced => "libpmem: CPU flushes (PMEM_IS_PMEM_FORCE=1)",
            Libpmem::Dax => "libpmem: CPU flushes (DAX)",
            Libpmem::Msync => "libpmem: msync (not DAX)",
            Libpmem::Unknown => "libpmem: its own choice (DAX unknown)",
        }
    }

    /// The strategy it amounts to (its CPU flush is the best this CPU has, as libpmem
    /// picks it), `None` when unknown.
    fn strategy(self, f: &CpuFeatures) -> Option<PersistStrategy> {
        match self {
            Libpmem::Forced | Libpmem::Dax => Some(PersistStrategy::default_for(f)),
            Libpmem::Msync => Some(PersistStrategy::Msync),
            Libpmem::Unknown => None,
        }
    }
}

/// The strategy a table's target is judged against (`None`: nothing is made durable, or
/// how is unknown): the persister's for a table pmscope persists, libpmem's for tx-pm.
fn durable_by(kind: TableKind, table: &TableFacts, f: &CpuFeatures) -> Option<PersistStrategy> {
    match kind.durability() {
        Durability::None => None,
        Durability::Persister => table.persister.as_ref().map(|p| p.strategy()),
        Durability::Libpmemobj => Libpmem::of(&table.target.achieved).strategy(f),
    }
}
