//! `pmscope fs`: file-operation latency on the file system of each `file:DIR` target (seed
//! 004 Figure 23). Each operation opens a file, does its I/O, fsyncs if asked and closes it,
//! and is timed whole on a pinned thread by the runner's timer (overhead subtracted), so
//! every operation kind gets a distribution, not just a mean. The files live in a work
//! directory pmscope creates exclusively in DIR and removes afterwards (`filedir`).

mod ops;
mod render;

use crate::filedir::{self, DirTarget, PROBE_BYTES, WorkDir};
use crate::measure::Sampler;
use crate::output::Output;
use crate::params::{Count, TargetArgs};
use crate::progress::Progress;
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
pub use ops::FileOp;
use ops::{Files, time_op};
use pmscope_core::record::Record;
use pmscope_core::summary::LogHistogram;
use pmscope_core::vocab::{p, v};
use pmscope_runner::executor::Executor;
use pmscope_runner::repeat::{Watch as _, Workers};
use std::str::FromStr;

/// `--ops`: operations by name, in the order given, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOps(pub Vec<FileOp>);

impl FromStr for FileOps {
    type Err = String;
    fn from_str(s: &str) -> Result<FileOps, String> {
        let mut out = Vec::new();
        for name in s.split(',') {
            let op = FileOp::ALL
                .into_iter()
                .find(|o| o.name() == name.trim())
                .ok_or_else(|| {
                    let names: Vec<&str> = FileOp::ALL.iter().map(|o| o.name()).collect();
                    format!("use {}", names.join(", "))
                })?;
            if !out.contains(&op) {
                out.push(op);
            }
        }
        Ok(FileOps(out))
    }
}

/// `--fsync`: with and without fsync before close, or one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// Both.
    Both,
    /// With fsync.
    On,
    /// Without.
    Off,
}

impl Fsync {
    /// The fsync settings measured, in order.
    fn settings(self) -> Vec<bool> {
        match self {
            Fsync::Both => vec![false, true],
            Fsync::On => vec![true],
            Fsync::Off => vec![false],
        }
    }
}

impl FromStr for Fsync {
    type Err = String;
    fn from_str(s: &str) -> Result<Fsync, String> {
        match s {
            "both" => Ok(Fsync::Both),
            "on" => Ok(Fsync::On),
            "off" => Ok(Fsync::Off),
            _ => Err("use both, on or off".into()),
        }
    }
}

/// `pmscope fs`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// Directories to measure in, as file:DIR targets (repeatable).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Timed operations per operation kind (a tenth more are run first, untimed).
    #[arg(long, default_value = "1000")]
    pub samples: Count,
    /// Operations (comma list): create, append-4k, overwrite-4k, overwrite-512, read-4k.
    /// Default: all.
    #[arg(long)]
    pub ops: Option<FileOps>,
    /// With and without fsync before close: both, on or off.
    #[arg(long, default_value = "both")]
    pub fsync: Fsync,
    /// CPU to pin the measuring thread to.
    #[arg(long, value_name = "CPU", value_parser = pmscope_core::whole::parse::<usize>)]
    pub cpu: Option<usize>,
}

/// What `fs` measures, validated before anything is created.
pub struct Plan {
    targets: Vec<DirTarget>,
    opts: pmscope_mapping::MapOptions,
    ops: Vec<FileOp>,
    fsyncs: Vec<bool>,
    samples: usize,
    cpu: usize,
}

fn plan(ctx: &Env, a: &Params) -> Result<Plan> {
    let (targets, opts) = filedir::targets(ctx, "fs", &a.targets)?;
    Ok(Plan {
        targets,
        opts,
        ops: a.ops.clone().map_or(FileOp::ALL.to_vec(), |o| o.0),
        fsyncs: a.fsync.settings(),
        samples: a.samples.0,
        cpu: a.cpu.unwrap_or(0),
    })
}

/// `pmscope fs`.
pub struct Fs;

impl Experiment for Fs {
    const NAME: &'static str = "fs";
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

    fn place(params: &mut Params, on: &Placement) {
        params.targets = on.targets.clone();
        if let Some(c) = &on.cpus {
            params.cpu = c.0.first().copied();
        }
    }
}

fn measure(ctx: &mut Env, out: &mut dyn Output, p: &Plan) -> Result<()> {
    let progress = Progress::new(
        (p.targets.len() * p.ops.len() * p.fsyncs.len()) as u64,
        "fs",
        out.human(),
    );
    let specs: Vec<_> = p.targets.iter().map(|t| t.spec.clone()).collect();
    let mut h = ctx.start_once(out, &[p.cpu], None)?;
    let timer = *h.timer();
    let mut next = p.targets.iter();
    h.per_target(&specs, PROBE_BYTES, &p.opts, None, |run, _probe| {
        let t = next.next().expect("one DirTarget per spec");
        let executor = run.executor();
        let work = WorkDir::create(&t.dir, "fs")?;
        let mut files = Files::prepare(work.path())
            .map_err(|e| anyhow::anyhow!("cannot write files in {}: {e}", work.path().display()))?;
        // What the kernel did with the file's inode: DAX (no page cache) or not.
        let inode_dax = pmscope_sys::dax::fs_facts(&files.data)
            .ok()
            .and_then(|f| f.statx_dax);
        // I/O waits by design: only stolen time judges a point.
        let sampler = Sampler::new(run, &[p.cpu], Workers::Waiting, &timer);
        for &op in &p.ops {
            for &fsync in &p.fsyncs {
                run.check_interrupt()?;
                let outcome = run.on_cpu(p.cpu, &mut files, |files| {
                    executor.run(
                        || {
                            let mut watch = sampler.watch();
                            watch.begin();
                            let timed = time_op(files, &timer, op, fsync, p.samples);
                            let seen = watch.end();
                            timed.map(|io| io.map(|ns| (sampler.point(&ns, seen, &watch), ns)))
                        },
                        || {
                            let ns = Executor::synthetic(p.samples, op.synthetic_ns(fsync));
                            Ok(Ok((sampler.synthetic(&ns), ns)))
                        },
                    )
                })??;
                let mut r = t.describe(
                    run.record("fs-op")
                        .param(p::FILE_OP, op.name())
                        .param(p::FSYNC, fsync)
                        .param(p::IO_BYTES, op.io_bytes())
                        .param(p::SAMPLES, p.samples)
                        .param(p::INODE_DAX, inode_dax),
                );
                match outcome {
                    Ok((point, ns)) => {
                        r = point.annotate(r.value(v::TIMER_OVERHEAD_NS, timer.overhead_ns()));
                        r.metric = Some("latency_ns".into());
                        r.histogram = Some(LogHistogram::of(&ns, 4));
                    }
                    Err(e) => r = r.param(p::UNSUPPORTED, format!("{}: {e}", op.name())),
                }
                run.emit(&r)?;
                progress.inc();
            }
        }
        drop(work);
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
    fn ops_parse_by_name_and_refuse_the_rest() {
        assert_eq!(
            "read-4k,create".parse::<FileOps>().unwrap().0,
            [FileOp::Read4k, FileOp::Create]
        );
        assert_eq!(
            "delete".parse::<FileOps>().unwrap_err(),
            "use create, append-4k, overwrite-4k, overwrite-512, read-4k"
        );
        assert_eq!("on".parse::<Fsync>().unwrap().settings(), [true]);
        assert!("maybe".parse::<Fsync>().is_err());
    }
}
