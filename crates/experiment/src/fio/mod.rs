//! `pmscope fio`: the real fio (seed 004 Figure 24) in each `file:DIR` target — 4 KiB
//! `sync`-engine reads and writes, sequential and random, fsync after every write, over a
//! sweep of job counts, each job on its own file — with `--output-format=json` parsed into
//! records ([`parse`]). fio runs in a work directory pmscope creates and removes
//! (`filedir`); a Ctrl-C stops fio before the directory goes. The null executor parses fio
//! output checked in under `tests/fixtures/fio/` instead of running fio.

pub mod parse;
mod render;

use crate::error::usage;
use crate::filedir::{self, DirTarget, PROBE_BYTES, WorkDir};
use crate::output::Output;
use crate::params::{Seconds, Size, TargetArgs};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use parse::{FIXTURE_READ, FIXTURE_WRITE, parse_fio_json};
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{Pattern, p, v};
use pmscope_runner::executor::Executor;
use std::path::Path;
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

/// Bytes per read or write call (seed 004: 4 KB).
const IO_BYTES: u64 = 4096;

/// A fio workload pmscope runs (fio's `rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Random reads.
    Randread,
    /// Sequential writes, fsync after each.
    Write,
    /// Random writes, fsync after each.
    Randwrite,
}

impl Rw {
    /// Every workload, in the order `--rw` defaults to.
    pub const ALL: [Rw; 4] = [Rw::Read, Rw::Randread, Rw::Write, Rw::Randwrite];

    /// fio's name, and the records'.
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Randread => "randread",
            Rw::Write => "write",
            Rw::Randwrite => "randwrite",
        }
    }

    /// Whether it writes (and fsyncs).
    pub fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::Randwrite)
    }

    /// Its address pattern.
    pub fn pattern(self) -> Pattern {
        Pattern::from_random(matches!(self, Rw::Randread | Rw::Randwrite))
    }

    /// The side of fio's JSON that reports it.
    fn direction(self) -> &'static str {
        if self.writes() { "write" } else { "read" }
    }
}

/// `--rw`: workloads by name, in the order given, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workloads(pub Vec<Rw>);

impl FromStr for Workloads {
    type Err = String;
    fn from_str(s: &str) -> Result<Workloads, String> {
        let mut out = Vec::new();
        for w in s.split(',').map(str::trim) {
            let rw = Rw::ALL
                .into_iter()
                .find(|r| r.name() == w)
                .ok_or("use read, randread, write or randwrite")?;
            if !out.contains(&rw) {
                out.push(rw);
            }
        }
        Ok(Workloads(out))
    }
}

/// `pmscope fio`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Directories to run fio in, as file:DIR targets (repeatable).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Job counts (sweep axis, e.g. 1..4 or 1,2,4,8): each job its own file.
    #[arg(long, default_value = "1..2", value_name = "AXIS")]
    pub jobs: String,
    /// Workloads (comma list of fio rw= values): read, randread, write, randwrite.
    #[arg(long, default_value = "read,randread,write,randwrite")]
    pub rw: Workloads,
    /// Seconds each fio run lasts (seed 004: 30).
    #[arg(long, default_value = "2", value_name = "SECONDS")]
    pub runtime: Seconds,
    /// Bytes of each job's file (seed 004: 512MiB).
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub size: Size,
}

/// One fio run's arguments.
fn fio_args(dir: &Path, rw: Rw, jobs: u64, p: &Plan) -> Vec<String> {
    let mut a = vec![
        "--output-format=json".to_string(),
        "--name=pmscope".into(),
        format!("--directory={}", dir.display()),
        "--ioengine=sync".into(),
        format!("--rw={}", rw.name()),
        format!("--bs={IO_BYTES}"),
        format!("--size={}", p.file_bytes),
        format!("--numjobs={jobs}"),
        format!("--runtime={}ms", (p.runtime_s * 1e3).round() as u64),
        "--time_based=1".into(),
        "--group_reporting=1".into(),
        // Jobs as threads of one fio process (the seed's "threads"): killing that process
        // stops every job, and PR_SET_PDEATHSIG covers all of them.
        "--thread=1".into(),
        // fio's default, said out loud: the page cache of each file is dropped first.
        "--invalidate=1".into(),
    ];
    if rw.writes() {
        a.push("--fsync=1".into());
    }
    a
}

/// Runs fio under the child supervisor (`pmscope_runner::child`), as every child pmscope
/// starts: in a process group of its own that dies with pmscope, killed and reaped on
/// Ctrl-C or SIGTERM (before the work directory is removed) and when it overruns `limit`
/// (a hung file system cannot hang the run); returns its standard output.
fn run_fio(fio: &str, args: &[String], limit: Duration) -> Result<String> {
    let mut cmd = Command::new(fio);
    cmd.args(args);
    let f = pmscope_runner::child::run_bounded(&mut cmd, "fio", limit)?;
    if !f.status.success() {
        let why = pmscope_runner::child::last_line(&f.stderr).unwrap_or("no message");
        return Err(anyhow::anyhow!(
            "fio failed ({}): {why}",
            pmscope_runner::child::describe_status(f.status)
        ));
    }
    Ok(f.stdout)
}

/// How long one fio run may take: its runtime ten times over, plus laying out every job's
/// file at 10 MB/s, plus a minute to start and finish.
fn fio_limit(p: &Plan, jobs: u64) -> Duration {
    Duration::from_secs_f64(60.0 + 10.0 * p.runtime_s + (jobs * p.file_bytes) as f64 / 10e6)
}

/// What `fio` runs, validated before anything is created.
pub struct Plan {
    targets: Vec<DirTarget>,
    opts: pmscope_mapping::MapOptions,
    jobs: Vec<u64>,
    workloads: Vec<Rw>,
    runtime_s: f64,
    file_bytes: u64,
    fio: Option<String>,
}

fn plan(ctx: &Env, a: &Params) -> Result<Plan> {
    let jobs = parse_axis(&a.jobs, AxisKind::Count)
        .map_err(|e| usage(format!("--jobs {}: {e}", a.jobs)))?;
    if jobs.iter().any(|&j| j == 0 || j > 1024) {
        return Err(usage(format!(
            "--jobs {}: job counts run from 1 to 1024",
            a.jobs
        )));
    }
    if a.runtime.0 < 0.1 {
        return Err(usage(format!(
            "--runtime {}: fio needs at least 0.1 seconds per run",
            a.runtime.0
        )));
    }
    if a.size.0 < IO_BYTES {
        return Err(usage(format!(
            "--size {}: each job's file must hold at least one 4 KiB block",
            Bytes(a.size.0)
        )));
    }
    let (targets, opts) = filedir::targets(ctx, "fio", &a.targets)?;
    // The null executor runs no fio, so its tests need none.
    let fio = match ctx.executor {
        Executor::Null => None,
        Executor::Real => Some(pmscope_sys::environment::tool_installed("fio").ok_or_else(|| {
            anyhow::anyhow!(
                "fio is not installed: install it with `apt-get install fio` (Debian, Ubuntu) or `dnf install fio` (Fedora)"
            )
        })?),
    };
    Ok(Plan {
        targets,
        opts,
        jobs,
        workloads: a.rw.0.clone(),
        runtime_s: a.runtime.0,
        file_bytes: a.size.0,
        fio,
    })
}

/// `pmscope fio`.
pub struct Fio;

impl Experiment for Fio {
    const NAME: &'static str = "fio";
    const IN_BLOCKS: bool = false;
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        measure(env, out, plan)
    }

    fn render(records: &[Record]) -> String {
        render::render(records)
    }

    /// The suite's targets; fio runs its jobs on the CPUs the kernel picks, so the suite's
    /// CPUs have nothing to pin.
    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
    }
}

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let progress = Progress::new(
        (p.targets.len() * p.workloads.len() * p.jobs.len()) as u64,
        "fio",
        out.human(),
    );
    let specs: Vec<_> = p.targets.iter().map(|t| t.spec.clone()).collect();
    let mut h = ctx.start_once(out, &[0], None)?;
    let mut next = p.targets.iter();
    h.per_target(&specs, PROBE_BYTES, &p.opts, None, |run, _probe| {
        let t = next.next().expect("one DirTarget per spec");
        let executor = run.executor();
        for &rw in &p.workloads {
            for &jobs in &p.jobs {
                run.check_interrupt()?;
                // A fresh directory per run: every run lays out its own files.
                let work = WorkDir::create(&t.dir, "fio")?;
                let args = fio_args(work.path(), rw, jobs, p);
                let text = executor.run(
                    || {
                        run_fio(
                            p.fio.as_deref().expect("checked in plan"),
                            &args,
                            fio_limit(p, jobs),
                        )
                    },
                    || {
                        let fixture = if rw.writes() {
                            FIXTURE_WRITE
                        } else {
                            FIXTURE_READ
                        };
                        Ok(fixture.to_string())
                    },
                )?;
                drop(work);
                let res = parse_fio_json(&text, rw.direction()).map_err(|e| {
                    anyhow::anyhow!(
                        "fio --rw={} --numjobs={jobs} in {}: {e}",
                        rw.name(),
                        t.dir.display()
                    )
                })?;
                let mut r = t
                    .describe(run.record("fio"))
                    .param(p::RW, rw.name())
                    .param(p::PATTERN, rw.pattern().name())
                    .param(p::IO_BYTES, IO_BYTES)
                    .param(p::JOBS, jobs)
                    .param(p::FSYNC, rw.writes())
                    .param(p::FILE_BYTES, p.file_bytes)
                    .param(p::DURATION_S, p.runtime_s)
                    .param(p::IOENGINE, "sync")
                    .param(p::FIO_VERSION, res.version.as_str())
                    .value(v::IOPS, res.iops)
                    .value(v::LAT_MEAN_NS, res.clat_mean_ns)
                    .value(v::LAT_P50_NS, res.clat_p50_ns)
                    .value(v::LAT_P99_NS, res.clat_p99_ns)
                    .value(v::LAT_P999_NS, res.clat_p999_ns);
                r.metric = Some("bandwidth_mb_s".into());
                r.summary = Summary::of(&[res.bw_bytes / 1e6]);
                run.emit(&r)?;
                progress.inc();
            }
        }
        Ok(())
    })?;
    h.finish()?;
    progress.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_by_name_and_refuse_the_rest() {
        assert_eq!(
            "randwrite, read,read".parse::<Workloads>().unwrap().0,
            [Rw::Randwrite, Rw::Read]
        );
        assert_eq!(
            "trim".parse::<Workloads>().unwrap_err(),
            "use read, randread, write or randwrite"
        );
        assert!(Rw::Randwrite.writes() && !Rw::Randread.writes());
        assert_eq!(Rw::Randread.pattern(), Pattern::Rand);
        assert_eq!(Rw::Write.direction(), "write");
    }
}
