//! `pmscope fio`: the real fio (seed 004 Figure 24) in each `file:DIR` target — 4 KiB
//! `sync`-engine reads and writes, sequential and random, fsync after every write, over a
//! sweep of job counts, each job on its own file — with `--output-format=json` parsed into
//! records. fio runs in a work directory pmscope creates and removes (`filedir`); a Ctrl-C
//! stops fio before the directory goes. The null executor parses fio output checked in under
//! `tests/fixtures/fio/` instead of running fio.

use crate::args::FioArgs;
use crate::error::usage;
use crate::filedir::{self, DirTarget, PROBE_BYTES, WorkDir};
use crate::output::Sink;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;

use anyhow::{Context as _, Result};
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_experiment::progress::Progress;
use pmscope_experiment::render::table::Table;
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bytes per read or write call (seed 004: 4 KB).
const IO_BYTES: u64 = 4096;

/// The fio workloads pmscope runs.
const WORKLOADS: [&str; 4] = ["read", "randread", "write", "randwrite"];

/// What fio's JSON says about one run's reads or writes, all jobs together
/// (`--group_reporting`).
#[derive(Debug, Clone, PartialEq)]
pub struct FioResult {
    /// `fio-3.33`.
    pub version: String,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// Operations per second.
    pub iops: f64,
    /// Bytes moved.
    pub io_bytes: u64,
    /// Completion latency: mean, p50, p99, p99.9 in ns.
    pub clat_mean_ns: f64,
    /// Median completion latency.
    pub clat_p50_ns: f64,
    /// 99th percentile.
    pub clat_p99_ns: f64,
    /// 99.9th percentile.
    pub clat_p999_ns: f64,
}

/// Parses fio's `--output-format=json` for the `read` or `write` side (`direction`). Text
/// before the JSON (fio's own warnings) is skipped.
pub fn parse_fio_json(text: &str, direction: &str) -> Result<FioResult, String> {
    let start = text
        .find("\n{")
        .map(|i| i + 1)
        .or_else(|| text.starts_with('{').then_some(0))
        .ok_or("fio printed no JSON")?;
    let v: serde_json::Value = serde_json::from_str(&text[start..])
        .map_err(|e| format!("fio's JSON does not parse: {e}"))?;
    let version = v["fio version"].as_str().unwrap_or("fio").to_string();
    let jobs = v["jobs"].as_array().ok_or("fio's JSON has no jobs")?;
    if jobs.len() != 1 {
        return Err(format!(
            "fio reported {} job groups where one was asked for (--group_reporting)",
            jobs.len()
        ));
    }
    let job = &jobs[0];
    if let Some(e) = job["error"].as_i64().filter(|&e| e != 0) {
        return Err(format!("fio's job ended with error {e}"));
    }
    let d = &job[direction];
    let num = |v: &serde_json::Value, what: &str| {
        v.as_f64()
            .ok_or_else(|| format!("fio's JSON has no {direction}.{what}"))
    };
    let io_bytes = num(&d["io_bytes"], "io_bytes")? as u64;
    if io_bytes == 0 {
        return Err(format!("fio's job moved no {direction} bytes"));
    }
    let pct = &d["clat_ns"]["percentile"];
    Ok(FioResult {
        version,
        bw_bytes: num(&d["bw_bytes"], "bw_bytes")?,
        iops: num(&d["iops"], "iops")?,
        io_bytes,
        clat_mean_ns: num(&d["clat_ns"]["mean"], "clat_ns.mean")?,
        clat_p50_ns: num(&pct["50.000000"], "clat_ns percentile 50")?,
        clat_p99_ns: num(&pct["99.000000"], "clat_ns percentile 99")?,
        clat_p999_ns: num(&pct["99.900000"], "clat_ns percentile 99.9")?,
    })
}

/// fio output made by fio 3.33 on this project's machine: what the null executor parses.
const FIXTURE_READ: &str = include_str!("../../tests/fixtures/fio/randread-1job.json");
const FIXTURE_WRITE: &str = include_str!("../../tests/fixtures/fio/randwrite-fsync-2jobs.json");

fn is_write(rw: &str) -> bool {
    rw.contains("write")
}

/// One fio run's arguments.
fn fio_args(dir: &Path, rw: &str, jobs: u64, p: &Plan) -> Vec<String> {
    let mut a = vec![
        "--output-format=json".to_string(),
        "--name=pmscope".into(),
        format!("--directory={}", dir.display()),
        "--ioengine=sync".into(),
        format!("--rw={rw}"),
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
    if is_write(rw) {
        a.push("--fsync=1".into());
    }
    a
}

/// Runs fio to completion, stopping it on Ctrl-C; returns its standard output.
fn run_fio(fio: &str, args: &[String]) -> Result<String> {
    let mut cmd = Command::new(fio);
    // A SIGKILLed pmscope takes fio with it (Ctrl-C and SIGTERM are handled below).
    pmscope_sys::process::dies_with_parent(&mut cmd, pmscope_sys::process::SIGKILL);
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {fio}"))?;
    // Read the pipes on threads, so a chatty fio never blocks on a full pipe.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).map(|_| s)
    });
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if let Err(i) = interrupt::check() {
            // fio also got a terminal's SIGINT; a SIGTERM was ours alone. Either way it
            // is stopped and reaped before the work directory is removed.
            let _ = child.kill();
            let _ = child.wait();
            return Err(i.into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out.join().expect("reader").unwrap_or_default();
    let err = err.join().expect("reader").unwrap_or_default();
    if !status.success() {
        let why = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(anyhow::anyhow!("fio failed ({status}): {why}"));
    }
    Ok(out)
}

struct Plan {
    targets: Vec<DirTarget>,
    opts: pmscope_mapping::MapOptions,
    jobs: Vec<u64>,
    workloads: Vec<String>,
    runtime_s: f64,
    file_bytes: u64,
    fio: Option<String>,
}

fn plan(ctx: &Context, a: &FioArgs) -> Result<Plan> {
    let jobs = parse_axis(&a.jobs, AxisKind::Count)
        .map_err(|e| usage(format!("--jobs {}: {e}", a.jobs)))?;
    if jobs.iter().any(|&j| j == 0 || j > 1024) {
        return Err(usage(format!(
            "--jobs {}: job counts run from 1 to 1024",
            a.jobs
        )));
    }
    let mut workloads = Vec::new();
    for w in a.rw.split(',').map(str::trim) {
        if !WORKLOADS.contains(&w) {
            return Err(usage(format!(
                "--rw {}: use read, randread, write or randwrite",
                a.rw
            )));
        }
        if !workloads.iter().any(|x| x == w) {
            workloads.push(w.to_string());
        }
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
        workloads,
        runtime_s: a.runtime.0,
        file_bytes: a.size.0,
        fio,
    })
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &FioArgs) -> Result<()> {
    let p = plan(ctx, a)?;
    let progress = Progress::new(
        (p.targets.len() * p.workloads.len() * p.jobs.len()) as u64,
        "fio",
        sink.human(),
    );
    let specs: Vec<_> = p.targets.iter().map(|t| t.spec.clone()).collect();
    let mut h = ctx.start(sink, &[0], None, false)?;
    let mut next = p.targets.iter();
    h.per_target(&specs, PROBE_BYTES, &p.opts, None, |run, _probe| {
        let t = next.next().expect("one DirTarget per spec");
        let executor = run.executor();
        for rw in &p.workloads {
            for &jobs in &p.jobs {
                run.check_interrupt()?;
                let direction = if is_write(rw) { "write" } else { "read" };
                // A fresh directory per run: every run lays out its own files.
                let work = WorkDir::create(&t.dir, "fio")?;
                let args = fio_args(work.path(), rw, jobs, &p);
                let text = executor.run(
                    || run_fio(p.fio.as_deref().expect("checked in plan"), &args),
                    || {
                        Ok(if is_write(rw) {
                            FIXTURE_WRITE
                        } else {
                            FIXTURE_READ
                        }
                        .to_string())
                    },
                )?;
                drop(work);
                let res = parse_fio_json(&text, direction).map_err(|e| {
                    anyhow::anyhow!("fio --rw={rw} --numjobs={jobs} in {}: {e}", t.dir.display())
                })?;
                let mut r = t
                    .describe(run.record("fio"))
                    .param(p::RW, rw.as_str())
                    .param(
                        p::PATTERN,
                        Pattern::from_random(rw.starts_with("rand")).name(),
                    )
                    .param(p::IO_BYTES, IO_BYTES)
                    .param(p::JOBS, jobs)
                    .param(p::FSYNC, is_write(rw))
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
    if sink.human() {
        render(sink.records());
    }
    Ok(())
}

/// Per target and workload: bandwidth, IOPS and latency by job count; with several
/// targets, their bandwidth side by side.
fn render(records: &[Record]) {
    let runs: Vec<&Record> = records.iter().filter(|r| r.experiment == "fio").collect();
    let mut specs: Vec<&str> = Vec::new();
    for r in &runs {
        if !specs.contains(&r.spec().unwrap_or_default()) {
            specs.push(r.spec().unwrap_or_default());
        }
    }
    for &spec in &specs {
        let of: Vec<&&Record> = runs
            .iter()
            .filter(|r| r.spec().unwrap_or_default() == spec)
            .collect();
        let first = of[0];
        println!(
            "{spec}: {} on {} ({}); {}, 4 KiB {} calls, fsync after every write, {} s per run",
            first.text(p::FS_TYPE).unwrap_or_default(),
            first.text(p::DEVICE).unwrap_or_default(),
            first.text(p::MOUNT_OPTIONS).unwrap_or_default(),
            first.text(p::FIO_VERSION).unwrap_or_default(),
            first.text(p::IOENGINE).unwrap_or_default(),
            first.number(p::DURATION_S).unwrap_or_default(),
        );
        let mut t = Table::new(&[
            "workload", "jobs", "MB/s", "IOPS", "mean us", "p50 us", "p99 us", "p99.9 us",
        ]);
        for r in of {
            t.row(vec![
                r.text(p::RW).unwrap_or_default().into(),
                r.count(p::JOBS).unwrap_or_default().to_string(),
                r.summary
                    .as_ref()
                    .map_or("-".into(), |s| format!("{:.1}", s.p50)),
                format!("{:.0}", r.val(v::IOPS).unwrap_or_default()),
                format!("{:.2}", r.val(v::LAT_MEAN_NS).unwrap_or_default() / 1e3),
                format!("{:.2}", r.val(v::LAT_P50_NS).unwrap_or_default() / 1e3),
                format!("{:.2}", r.val(v::LAT_P99_NS).unwrap_or_default() / 1e3),
                format!("{:.2}", r.val(v::LAT_P999_NS).unwrap_or_default() / 1e3),
            ]);
        }
        println!("{}\n", t.render());
    }
    if specs.len() > 1 {
        println!("{}", side_by_side(&runs, &specs));
    }
}

/// MB/s of each workload and job count on every target, and against the first target.
fn side_by_side(runs: &[&Record], specs: &[&str]) -> String {
    let mut header = vec!["MB/s (× the first)", "jobs"];
    header.extend(specs);
    let mut t = Table::new(&header);
    let mut points: Vec<(&str, u64)> = Vec::new();
    for r in runs {
        if !points.contains(&(
            r.text(p::RW).unwrap_or_default(),
            r.count(p::JOBS).unwrap_or_default(),
        )) {
            points.push((
                r.text(p::RW).unwrap_or_default(),
                r.count(p::JOBS).unwrap_or_default(),
            ));
        }
    }
    for (rw, jobs) in points {
        let mb_s = |spec: &str| {
            runs.iter()
                .find(|r| {
                    r.spec().unwrap_or_default() == spec
                        && r.text(p::RW).unwrap_or_default() == rw
                        && r.count(p::JOBS).unwrap_or_default() == jobs
                })
                .and_then(|r| r.summary.as_ref())
                .map(|s| s.p50)
        };
        let first = mb_s(specs[0]);
        let mut row = vec![rw.to_string(), jobs.to_string()];
        for (i, spec) in specs.iter().enumerate() {
            row.push(match (mb_s(spec), first) {
                (Some(v), Some(f)) if i > 0 && f > 0.0 => format!("{v:.1} ×{:.2}", v / f),
                (Some(v), _) => format!("{v:.1}"),
                (None, _) => "-".into(),
            });
        }
        t.row(row);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_json_made_by_fio_parses() {
        let r = parse_fio_json(FIXTURE_READ, "read").unwrap();
        assert_eq!(r.version, "fio-3.33");
        assert_eq!(r.io_bytes, 55_799_808);
        assert_eq!(r.bw_bytes, 55_744_063.0);
        assert!((r.iops - 13609.390609).abs() < 1e-6);
        assert!(r.clat_p50_ns <= r.clat_p99_ns && r.clat_p99_ns <= r.clat_p999_ns);
        // bandwidth = IOPS x 4 KiB, as fio computed both from the same run.
        assert!((r.bw_bytes / r.iops / 4096.0 - 1.0).abs() < 0.01);
        let w = parse_fio_json(FIXTURE_WRITE, "write").unwrap();
        assert_eq!(w.bw_bytes, 16_791_562.0);
        assert_eq!(w.clat_p50_ns, 9664.0);
        // The read side of a write run moved nothing: an error, not a zero.
        assert_eq!(
            parse_fio_json(FIXTURE_WRITE, "read").unwrap_err(),
            "fio's job moved no read bytes"
        );
    }

    #[test]
    fn fio_warnings_before_the_json_are_skipped_and_garbage_refused() {
        let text = format!("fio: some warning\n{FIXTURE_READ}");
        assert_eq!(
            parse_fio_json(&text, "read").unwrap(),
            parse_fio_json(FIXTURE_READ, "read").unwrap()
        );
        assert_eq!(
            parse_fio_json("fio: file:x:1: bad", "read").unwrap_err(),
            "fio printed no JSON"
        );
        assert!(
            parse_fio_json("{\"jobs\": []}", "read")
                .unwrap_err()
                .contains("0 job groups")
        );
    }
}
