//! `pmscope fs`: file-operation latency on the file system of each `file:DIR` target (seed
//! 004 Figure 23). Each operation opens a file, does its I/O, fsyncs if asked and closes it,
//! and is timed whole on a pinned thread by the runner's timer (overhead subtracted), so
//! every operation kind gets a distribution, not just a mean. The files live in a work
//! directory pmscope creates exclusively in DIR and removes afterwards (`filedir`).

use crate::args::FsArgs;
use crate::error::usage;
use crate::filedir::{self, DirTarget, PROBE_BYTES, WorkDir};
use crate::output::Sink;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;

use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_core::summary::{LogHistogram, Summary};
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::table::Table;
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt::{self, Interrupted};
use pmscope_runner::timer::Timer;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The file operations of seed 004 section 5.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// open(O_CREAT|O_EXCL) a new file and close it, no data.
    Create,
    /// open an existing file, write 4 KiB at its end.
    Append4k,
    /// open an existing file, write 4 KiB in its middle.
    Overwrite4k,
    /// open an existing file, write 512 bytes in its middle.
    Overwrite512,
    /// open an existing file, read 4 KiB from its middle.
    Read4k,
}

impl FileOp {
    /// Every operation, in the seed's order.
    pub const ALL: [FileOp; 5] = [
        FileOp::Create,
        FileOp::Append4k,
        FileOp::Overwrite4k,
        FileOp::Overwrite512,
        FileOp::Read4k,
    ];

    /// The name in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FileOp::Create => "create",
            FileOp::Append4k => "append-4k",
            FileOp::Overwrite4k => "overwrite-4k",
            FileOp::Overwrite512 => "overwrite-512",
            FileOp::Read4k => "read-4k",
        }
    }

    /// Bytes read or written per operation.
    pub fn io_bytes(self) -> usize {
        match self {
            FileOp::Create => 0,
            FileOp::Overwrite512 => 512,
            _ => 4096,
        }
    }

    /// The null executor's figure: a plausible page-cache latency, fsync costing more.
    fn synthetic_ns(self, fsync: bool) -> f64 {
        let base = match self {
            FileOp::Create => 4000.0,
            FileOp::Append4k => 3000.0,
            FileOp::Overwrite4k => 2500.0,
            FileOp::Overwrite512 => 2000.0,
            FileOp::Read4k => 1500.0,
        };
        if fsync { base * 4.0 } else { base }
    }
}

fn parse_ops(s: Option<&str>) -> Result<Vec<FileOp>> {
    let Some(s) = s else {
        return Ok(FileOp::ALL.to_vec());
    };
    let mut out = Vec::new();
    for name in s.split(',') {
        let op = FileOp::ALL
            .into_iter()
            .find(|o| o.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = FileOp::ALL.iter().map(|o| o.name()).collect();
                usage(format!("--ops {s}: use {}", names.join(", ")))
            })?;
        if !out.contains(&op) {
            out.push(op);
        }
    }
    Ok(out)
}

/// Size of the file the overwrites and reads work in; they touch its middle.
const DATA_BYTES: u64 = 1 << 20;
const MIDDLE: u64 = DATA_BYTES / 2;

/// The files one target's operations work on, in the work directory.
struct Files {
    dir: PathBuf,
    append: PathBuf,
    data: PathBuf,
    created: u64,
    buf: Vec<u8>,
}

impl Files {
    /// Makes the file to append to (empty) and the 1 MiB data file (written and fsynced,
    /// so the timed overwrites find allocated blocks, as in the seed).
    fn prepare(dir: &Path) -> std::io::Result<Files> {
        let append = dir.join("append.dat");
        File::create_new(&append)?;
        let data = dir.join("data.dat");
        let mut f = File::create_new(&data)?;
        let chunk: Vec<u8> = (0..64 << 10).map(|i| (i % 251) as u8 + 1).collect();
        for _ in 0..DATA_BYTES / chunk.len() as u64 {
            f.write_all(&chunk)?;
        }
        f.sync_all()?;
        Ok(Files {
            dir: dir.to_path_buf(),
            append,
            data,
            created: 0,
            buf: vec![0x5a; 4096],
        })
    }

    /// One operation: open, I/O, fsync if asked, close (the drop of the file).
    fn once(&mut self, op: FileOp, fsync: bool) -> std::io::Result<()> {
        let f = match op {
            FileOp::Create => {
                self.created += 1;
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(self.dir.join(format!("c{}", self.created)))?
            }
            FileOp::Append4k => {
                let mut f = OpenOptions::new().append(true).open(&self.append)?;
                f.write_all(&self.buf)?;
                f
            }
            FileOp::Overwrite4k | FileOp::Overwrite512 => {
                let f = OpenOptions::new().write(true).open(&self.data)?;
                f.write_all_at(&self.buf[..op.io_bytes()], MIDDLE)?;
                f
            }
            FileOp::Read4k => {
                let f = File::open(&self.data)?;
                f.read_exact_at(&mut self.buf, MIDDLE)?;
                f
            }
        };
        if fsync {
            f.sync_all()?;
        }
        drop(f);
        Ok(())
    }
}

/// `samples` timed operations after a tenth as many (at least 10) untimed ones; the I/O
/// error that stopped them (e.g. hugetlbfs refusing write), or the interrupt.
fn time_op(
    files: &mut Files,
    timer: &Timer,
    op: FileOp,
    fsync: bool,
    samples: usize,
) -> Result<std::io::Result<Vec<f64>>, Interrupted> {
    let mut ns = Vec::with_capacity(samples);
    for i in 0..(samples / 10).max(10) + samples {
        interrupt::check()?;
        let t0 = timer.start();
        let done = files.once(op, fsync);
        let t1 = timer.stop();
        if let Err(e) = done {
            return Ok(Err(e));
        }
        if i >= (samples / 10).max(10) {
            ns.push((timer.ticks_to_ns(t1.wrapping_sub(t0)) - timer.overhead_ns()).max(0.0));
        }
    }
    Ok(Ok(ns))
}

struct Plan {
    targets: Vec<DirTarget>,
    opts: pmscope_mapping::MapOptions,
    ops: Vec<FileOp>,
    fsyncs: Vec<bool>,
    samples: usize,
    cpu: usize,
}

fn plan(ctx: &Context, a: &FsArgs) -> Result<Plan> {
    let (targets, opts) = filedir::targets(ctx, "fs", &a.targets)?;
    let fsyncs = match a.fsync.as_str() {
        "both" => vec![false, true],
        "off" => vec![false],
        "on" => vec![true],
        other => return Err(usage(format!("--fsync {other}: use both, on or off"))),
    };
    Ok(Plan {
        targets,
        opts,
        ops: parse_ops(a.ops.as_deref())?,
        fsyncs,
        samples: a.samples.0,
        cpu: a.cpu.unwrap_or(0),
    })
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &FsArgs) -> Result<()> {
    let p = plan(ctx, a)?;
    let progress = Progress::new(
        (p.targets.len() * p.ops.len() * p.fsyncs.len()) as u64,
        "fs",
        sink.human(),
    );
    let specs: Vec<_> = p.targets.iter().map(|t| t.spec.clone()).collect();
    let mut h = ctx.start(sink, &[p.cpu], None, false)?;
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
        for &op in &p.ops {
            for &fsync in &p.fsyncs {
                run.check_interrupt()?;
                let outcome = run.on_cpu(p.cpu, &mut files, |files| {
                    executor.run(
                        || time_op(files, &timer, op, fsync, p.samples),
                        || Ok(Ok(Executor::synthetic(p.samples, op.synthetic_ns(fsync)))),
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
                    Ok(ns) => {
                        r = r.value(v::TIMER_OVERHEAD_NS, timer.overhead_ns());
                        r.metric = Some("latency_ns".into());
                        r.summary = Summary::of(&ns);
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
    if sink.human() {
        render(sink.records());
    }
    Ok(())
}

/// Per target: its file system, then one row per operation (µs, median and tail), and the
/// targets side by side when there are several.
fn render(records: &[Record]) {
    let ops: Vec<&Record> = records.iter().filter(|r| r.experiment == "fs-op").collect();
    let mut specs: Vec<&str> = Vec::new();
    for r in &ops {
        if !specs.contains(&r.spec().unwrap_or_default()) {
            specs.push(r.spec().unwrap_or_default());
        }
    }
    for spec in &specs {
        let of: Vec<&&Record> = ops
            .iter()
            .filter(|r| r.spec().unwrap_or_default() == *spec)
            .collect();
        let first = of[0];
        let achieved = first
            .target
            .as_ref()
            .map(|t| t.achieved.describe())
            .unwrap_or_default();
        let inode = match first.params.get("inode_dax").and_then(|v| v.as_bool()) {
            Some(true) => "DAX (no page cache)",
            Some(false) => "not DAX (page cache)",
            None => "unknown to statx",
        };
        println!(
            "{spec}: {} on {} at {} ({})\n  the measured files' inodes: {inode}; a file mapped there: {achieved}",
            first.text(p::FS_TYPE).unwrap_or_default(),
            first.text(p::DEVICE).unwrap_or_default(),
            first.text(p::MOUNT_POINT).unwrap_or_default(),
            first.text(p::MOUNT_OPTIONS).unwrap_or_default(),
        );
        let mut t = Table::new(&[
            "operation",
            "fsync",
            "p50 us",
            "p90 us",
            "p99 us",
            "max us",
            "samples",
        ]);
        for r in &of {
            let fsync = if r.flag(p::FSYNC).unwrap_or_default() {
                "yes"
            } else {
                "no"
            };
            match &r.summary {
                Some(s) => t.row(vec![
                    r.text(p::FILE_OP).unwrap_or_default().into(),
                    fsync.into(),
                    format!("{:.2}", s.p50 / 1e3),
                    format!("{:.2}", s.p90 / 1e3),
                    format!("{:.2}", s.p99 / 1e3),
                    format!("{:.1}", s.max / 1e3),
                    s.n.to_string(),
                ]),
                None => t.row(vec![
                    r.text(p::FILE_OP).unwrap_or_default().into(),
                    fsync.into(),
                    format!(
                        "unsupported ({})",
                        r.text(p::UNSUPPORTED).unwrap_or_default()
                    ),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]),
            }
        }
        println!("{}\n", t.render());
    }
    if specs.len() > 1 {
        let mut header = vec!["median us".to_string(), "fsync".to_string()];
        header.extend(specs.iter().map(|s| s.to_string()));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header);
        let mut keys: Vec<(&str, bool)> = Vec::new();
        for r in &ops {
            let k = (
                r.text(p::FILE_OP).unwrap_or_default(),
                r.flag(p::FSYNC).unwrap_or_default(),
            );
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (op, fsync) in keys {
            let mut row = vec![op.to_string(), if fsync { "yes" } else { "no" }.into()];
            for spec in &specs {
                row.push(
                    ops.iter()
                        .find(|r| {
                            r.spec().unwrap_or_default() == *spec
                                && r.text(p::FILE_OP).unwrap_or_default() == op
                                && r.flag(p::FSYNC).unwrap_or_default() == fsync
                        })
                        .and_then(|r| r.summary.as_ref())
                        .map_or("-".into(), |s| format!("{:.2}", s.p50 / 1e3)),
                );
            }
            t.row(row);
        }
        println!("{}", t.render());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_does_its_io_and_closes() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Files::prepare(dir.path()).unwrap();
        for op in FileOp::ALL {
            for fsync in [false, true] {
                f.once(op, fsync).unwrap();
            }
        }
        let len = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert_eq!(len(&f.append), 2 * 4096, "two 4 KiB appends");
        assert_eq!(len(&f.data), DATA_BYTES, "overwrites do not grow the file");
        let data = std::fs::read(&f.data).unwrap();
        assert!(
            data[MIDDLE as usize..MIDDLE as usize + 4096]
                .iter()
                .all(|&b| b == 0x5a)
        );
        assert_ne!(data[MIDDLE as usize + 4096], 0x5a);
        // append, data, and the two created files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }

    #[test]
    fn ops_parse_by_name_and_refuse_the_rest() {
        assert_eq!(
            parse_ops(Some("read-4k,create")).unwrap(),
            [FileOp::Read4k, FileOp::Create]
        );
        assert_eq!(parse_ops(None).unwrap().len(), 5);
        let e = parse_ops(Some("delete")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--ops delete: use create, append-4k, overwrite-4k, overwrite-512, read-4k"
        );
    }
}
