//! `pmscope app memcached|redis`: a real key-value server with its heap on each target,
//! loaded by its own benchmark client (seed 004 Figures 20, 22 and 27).
//!
//! The server runs under `pmscope run -t SPEC` (the placement library puts its large
//! allocations on the target and reports where they landed, at which verified page size),
//! in a process group of its own that the kernel signals if pmscope dies. It listens on
//! 127.0.0.1 only, on a port pmscope picked free. Every client run is bounded (memaslap by
//! `--duration`, redis-benchmark by `--requests`, both by a timeout), and the server is
//! stopped after its target's workloads — also on Ctrl-C and on any failure, by the guard's
//! `Drop`: no server is left listening.

use crate::args::{AppArgs, AppServer};
use crate::context::Context;
use crate::error::usage;
use crate::output::Sink;
use crate::output::table::Table;
use anyhow::{Context as _, Result, anyhow, bail};
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::warning::Warning;
use pmscope_mapping::TargetSpec;
use pmscope_runner::executor::Executor;
use pmscope_runner::interrupt;
use pmscope_sys::process::{SIGKILL, SIGTERM, group_alive, signal_group, spawn_group};
use pmscope_workload::kvstore::{self, ClientResult, Program, Server, Workload};
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Key size of memcached's workloads (seed 004 section 4.3: 128-byte keys).
const MEMCACHED_KEY_BYTES: u64 = 128;
/// How long a server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopped server may take to exit before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &AppArgs) -> Result<()> {
    if ctx.executor == Executor::Null {
        return Err(usage(
            "pmscope app drives real servers and has no synthetic mode: run it without --null-executor",
        ));
    }
    let server = match a.server {
        AppServer::Memcached => Server::Memcached,
        AppServer::Redis => Server::Redis,
    };
    if a.targets.require_dax || a.targets.max_mem.is_some() {
        return Err(usage(
            "pmscope app places the heap through pmscope run, which takes neither --require-dax nor --max-mem: drop them (the placement report says whether the target was DAX)",
        ));
    }
    let (specs, _opts) = ctx.targets(&a.targets, &["dram:4k"])?;
    let aof_dir = aof_directory(server, a.aof_on.as_deref())?;
    let value_sizes: Vec<u64> = match &a.value_sizes {
        Some(v) => {
            parse_axis(v, AxisKind::Size).map_err(|e| usage(format!("--value-sizes: {e}")))?
        }
        None if aof_dir.is_some() => vec![4],
        None => match server {
            Server::Memcached => vec![1024],
            Server::Redis => vec![512],
        },
    };
    if value_sizes.iter().any(|&v| v == 0 || v > 1 << 20) {
        return Err(usage("--value-sizes: each value size must be 1 B to 1 MiB"));
    }
    let server_bin = find_program(server.program())?;
    let client_bin = find_program(server.client())?;
    let workloads = kvstore::workloads(server, aof_dir.is_some());
    let duration = a.duration.map_or(5.0, |d| d.0);
    let plan = Plan {
        server,
        server_bin,
        client_bin,
        workloads,
        value_sizes,
        clients: a.clients.map_or(12, |c| c.0 as u64),
        duration,
        requests: a.requests.map_or(50_000, |r| r.0 as u64),
        memory_mib: a.memory.map_or(1024, |m| m.0 >> 20).max(64),
        aof_dir,
        port: a.port,
        pass_through: pass_through_flags(a),
    };
    let cpus = pmscope_sys::affinity::allowed_cpus()?;
    let human = sink.human();
    let mut h = ctx.start(sink, &cpus, None, false)?;
    for spec in &specs {
        let records = measure_target(&h, &plan, spec)?;
        for r in &records {
            h.emit(r)?;
        }
    }
    h.finish()?;
    if human {
        render(sink.records());
    }
    Ok(())
}

struct Plan {
    server: Server,
    server_bin: PathBuf,
    client_bin: PathBuf,
    workloads: Vec<Workload>,
    value_sizes: Vec<u64>,
    clients: u64,
    duration: f64,
    requests: u64,
    memory_mib: u64,
    aof_dir: Option<PathBuf>,
    port: Option<u16>,
    pass_through: Vec<String>,
}

/// `--aof-on file:DIR`: redis only, a directory target.
fn aof_directory(server: Server, aof_on: Option<&str>) -> Result<Option<PathBuf>> {
    let Some(s) = aof_on else { return Ok(None) };
    if server != Server::Redis {
        return Err(usage(format!(
            "--aof-on {s}: only redis keeps an append-only file; drop --aof-on for {server}"
        )));
    }
    let dir = Path::new(s.strip_prefix("file:").unwrap_or(s));
    if !dir.is_dir() {
        return Err(usage(format!(
            "--aof-on {s}: {} is not a directory; create it or pick a mounted file system",
            dir.display()
        )));
    }
    Ok(Some(dir.to_path_buf()))
}

/// The target options `pmscope run` needs again.
fn pass_through_flags(a: &AppArgs) -> Vec<String> {
    let mut f = vec!["--threshold".to_string(), a.threshold.0.to_string()];
    if a.targets.keep {
        f.push("--keep".into());
    }
    if a.targets.destroy_data {
        f.push("--destroy-data".into());
    }
    f
}

/// The program's path, or one sentence saying how to install it.
fn find_program(p: Program) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(p.name))
        .find(|c| is_executable(c))
        .ok_or_else(|| {
            anyhow!(
                "{} is not installed: install Debian's {} (apt-get install {}, or ./dev setup)",
                p.name,
                p.package,
                p.package
            )
        })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One server on one target: start it, run every workload × value size, stop it, and
/// return the records (the placement report first).
fn measure_target(
    h: &pmscope_runner::harness::Harness<'_>,
    plan: &Plan,
    spec: &TargetSpec,
) -> Result<Vec<Record>> {
    let port = match plan.port {
        Some(p) => p,
        None => free_port()?,
    };
    let aof = match &plan.aof_dir {
        Some(dir) => Some(AofDir::create(
            dir,
            !plan.pass_through.contains(&"--keep".to_string()),
        )?),
        None => None,
    };
    let args = plan.server.args(
        port,
        plan.memory_mib,
        pmscope_sys::process::effective_uid() == 0,
        aof.as_ref().map(|d| d.path.as_path()),
    );
    let mut server = RunningServer::start(plan, spec, &args, port)?;
    let mut records = Vec::new();
    let mut failure = None;
    'points: for w in &plan.workloads {
        for &size in &plan.value_sizes {
            if let Err(e) = interrupt::check() {
                failure = Some(e.into());
                break 'points;
            }
            match run_client(plan, w, size, port) {
                Ok(res) => records.push(kv_record(h, plan, spec, w, size, &res, aof.as_ref())),
                Err(e) => {
                    failure = Some(e);
                    break 'points;
                }
            }
        }
    }
    let placement = server.stop();
    if let Some(e) = failure {
        return Err(e);
    }
    let placement = placement?;
    let mut out = vec![placement_record(h, plan, spec, placement)];
    out.extend(records);
    Ok(out)
}

/// A port on 127.0.0.1 nobody listens on now (the server binds it a moment later).
fn free_port() -> Result<u16> {
    let l =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// The directory redis keeps its append-only file in: created exclusively inside the
/// `--aof-on` directory, removed afterwards unless --keep.
struct AofDir {
    path: PathBuf,
    remove: bool,
}

impl AofDir {
    fn create(parent: &Path, remove: bool) -> Result<AofDir> {
        for n in 0..1000 {
            let path = parent.join(format!("pmscope-app-{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(AofDir { path, remove }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("creating {}", path.display()));
                }
            }
        }
        bail!(
            "no free directory name pmscope-app-{}-N in {}",
            std::process::id(),
            parent.display()
        )
    }
}

impl Drop for AofDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `pmscope run -t SPEC -- server ...`, a process group of its own; stopped by `stop` or,
/// on any early return, killed by `Drop`.
struct RunningServer {
    child: Option<Child>,
    name: &'static str,
    stdout: Option<std::thread::JoinHandle<String>>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

fn collect(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

impl RunningServer {
    fn start(plan: &Plan, spec: &TargetSpec, args: &[String], port: u16) -> Result<RunningServer> {
        let me = std::env::current_exe().context("finding the pmscope executable")?;
        let mut cmd = Command::new(me);
        cmd.args(["--no-store", "--json", "run", "-t", &spec.to_string()])
            .args(&plan.pass_through)
            .arg("--")
            .arg(&plan.server_bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let name = plan.server.program().name;
        let mut child = spawn_group(&mut cmd).with_context(|| format!("starting {name}"))?;
        let stdout = child.stdout.take().map(collect);
        let stderr = child.stderr.take().map(collect);
        let mut s = RunningServer {
            child: Some(child),
            name,
            stdout,
            stderr,
        };
        let t0 = Instant::now();
        loop {
            interrupt::check()?;
            if TcpStream::connect_timeout(
                &(Ipv4Addr::LOCALHOST, port).into(),
                Duration::from_millis(200),
            )
            .is_ok()
            {
                return Ok(s);
            }
            let child = s.child.as_mut().expect("running");
            if let Some(status) = child.try_wait()? {
                s.child = None;
                let (out, err) = s.output();
                bail!(
                    "{name} on {spec} exited ({}) before it listened on 127.0.0.1:{port}: {}",
                    describe_status(status),
                    last_line(&err)
                        .or_else(|| last_line(&out))
                        .unwrap_or("it printed nothing")
                );
            }
            if t0.elapsed() > START_TIMEOUT {
                bail!(
                    "{name} on {spec} did not listen on 127.0.0.1:{port} within {} s",
                    START_TIMEOUT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Asks the server to exit (SIGTERM to the server alone, so `pmscope run` sees it end
    /// and writes its placement report), waits, and returns that report.
    fn stop(&mut self) -> Result<Record> {
        let mut child = self.child.take().expect("stop is called once");
        let pgid = child.id();
        for pid in pmscope_sys::process::children(pgid) {
            let _ = pmscope_sys::process::send_signal(pid, SIGTERM);
        }
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if t0.elapsed() > STOP_TIMEOUT {
                let _ = signal_group(pgid, SIGKILL);
                let _ = child.wait();
                bail!(
                    "{} did not exit within {} s of SIGTERM; killed",
                    self.name,
                    STOP_TIMEOUT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Anything the server left in its group goes too.
        if group_alive(pgid) {
            let _ = signal_group(pgid, SIGKILL);
        }
        let (out, err) = self.output();
        placement_from_run(&out).ok_or_else(|| {
            anyhow!(
                "{} on its target ended ({}) without pmscope run's placement report: {}",
                self.name,
                describe_status(status),
                last_line(&err).unwrap_or("nothing on stderr")
            )
        })
    }

    fn output(&mut self) -> (String, String) {
        let out = self
            .stdout
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        let err = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        (out, err)
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = signal_group(child.id(), SIGKILL);
            let _ = child.wait();
        }
    }
}

fn describe_status(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}

fn last_line(s: &str) -> Option<&str> {
    s.lines().map(str::trim).rfind(|l| !l.is_empty())
}

/// The record `pmscope run --json` printed about the placement (the last JSON line of
/// experiment `run`), among the server's own output.
fn placement_from_run(stdout: &str) -> Option<Record> {
    stdout
        .lines()
        .rev()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .find(|r| r.experiment == "run")
}

/// memaslap's configuration, in a file created exclusively in the temporary directory and
/// removed when dropped.
struct ConfigFile(PathBuf);

impl ConfigFile {
    fn create(text: &str) -> Result<ConfigFile> {
        use std::io::Write;
        let dir = std::env::temp_dir();
        for n in 0..1000 {
            let path = dir.join(format!("pmscope-memaslap-{}-{n}.cfg", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    let file = ConfigFile(path);
                    f.write_all(text.as_bytes())
                        .with_context(|| format!("writing {}", file.0.display()))?;
                    return Ok(file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
        bail!(
            "no free file name for memaslap's configuration in {}",
            dir.display()
        )
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One bounded client run against 127.0.0.1:`port`.
fn run_client(plan: &Plan, w: &Workload, value_bytes: u64, port: u16) -> Result<ClientResult> {
    let client = plan.server.client().name;
    let mut cmd = Command::new(&plan.client_bin);
    let _config; // memaslap's configuration file lives until the client is done
    let timeout;
    match plan.server {
        Server::Memcached => {
            let f = ConfigFile::create(&kvstore::memaslap_config(
                MEMCACHED_KEY_BYTES,
                value_bytes,
                w.set_fraction,
            ))?;
            let secs = plan.duration.ceil().max(1.0) as u64;
            cmd.args(["-s", &format!("127.0.0.1:{port}"), "-T", "1"])
                .args(["-c", &plan.clients.to_string()])
                .args(["-t", &format!("{secs}s"), "-S", &format!("{secs}s")])
                .arg("-F")
                .arg(f.path());
            _config = Some(f);
            timeout = Duration::from_secs(secs * 3 + 30);
        }
        Server::Redis => {
            cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()])
                .args(["-t", w.redis_test, "-n", &plan.requests.to_string()])
                .args([
                    "-d",
                    &value_bytes.to_string(),
                    "-c",
                    &plan.clients.to_string(),
                ])
                .args(["-r", "1000000", "--csv"]);
            _config = None;
            timeout = Duration::from_secs(600);
        }
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_group(&mut cmd).with_context(|| format!("starting {client}"))?;
    let pgid = child.id();
    let out = child.stdout.take().map(collect);
    let err = child.stderr.take().map(collect);
    let t0 = Instant::now();
    let kill = |child: &mut Child| {
        let _ = signal_group(pgid, SIGKILL);
        let _ = child.wait();
    };
    let status = loop {
        if let Err(e) = interrupt::check() {
            kill(&mut child);
            return Err(e.into());
        }
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if t0.elapsed() > timeout {
            kill(&mut child);
            bail!(
                "{client} did not finish within {} s; stopped",
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    let err = err
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    if !status.success() {
        bail!(
            "{client} ({} {} B) ended with {}: {}",
            w.name,
            value_bytes,
            describe_status(status),
            last_line(&err)
                .or_else(|| last_line(&out))
                .unwrap_or("it printed nothing")
        );
    }
    let parsed = match plan.server {
        Server::Memcached => kvstore::parse_memaslap(&out),
        Server::Redis => kvstore::parse_redis_csv(&out, w.redis_test),
    };
    Ok(parsed?)
}

fn kv_record(
    h: &pmscope_runner::harness::Harness<'_>,
    plan: &Plan,
    spec: &TargetSpec,
    w: &Workload,
    value_bytes: u64,
    res: &ClientResult,
    aof: Option<&AofDir>,
) -> Record {
    let mut r = h
        .record("app-kv")
        .param("server", plan.server.name())
        .param("target", spec.to_string())
        .param("workload", w.name)
        .param("value_bytes", value_bytes)
        .param("clients", plan.clients)
        .param("percentiles_bucketed", res.percentiles_bucketed)
        .value("mean_us", res.mean_us)
        .value("p50_us", res.p50_us)
        .value("p99_us", res.p99_us)
        .value("max_us", res.max_us);
    if plan.server == Server::Memcached {
        r = r
            .param("key_bytes", MEMCACHED_KEY_BYTES)
            .param("set_fraction", w.set_fraction)
            .param("duration_s", plan.duration);
    } else {
        r = r.param("requests", plan.requests);
    }
    if let Some(d) = aof {
        r = r.param("aof_directory", d.path.display().to_string());
    }
    r.metric = Some("throughput_ops_s".into());
    r.summary = Some(Summary::of(&[res.ops_per_s]).expect("finite"));
    r
}

fn placement_record(
    h: &pmscope_runner::harness::Harness<'_>,
    plan: &Plan,
    spec: &TargetSpec,
    run: Record,
) -> Record {
    let mut r = h
        .record("app-placement")
        .param("server", plan.server.name())
        .param("target", spec.to_string())
        .param(
            "placement",
            serde_json::json!({ "params": run.params, "values": run.values }),
        );
    for w in run.warnings {
        if !r.warnings.iter().any(|x| x.code == w.code) {
            r.warnings.push(w);
        }
    }
    r.target = run.target;
    if run.values.get("served_allocations").copied().unwrap_or(0.0) == 0.0 {
        r.warnings.push(Warning {
            code: "app-heap-not-placed".into(),
            message: format!(
                "no allocation of {} reached the threshold: its heap stayed in ordinary memory, not on {spec}",
                plan.server.program().name
            ),
            remedy: "lower --threshold (memcached's slab pages are 1 MiB)".into(),
        });
    }
    r
}

/// Throughput and latency per target and workload, then where each server's heap was.
fn render(records: &[Record]) {
    let s = |r: &Record, k: &str| {
        r.params
            .get(k)
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .unwrap_or_else(|| v.to_string())
            })
            .unwrap_or_default()
    };
    let v = |r: &Record, k: &str| r.values.get(k).copied().unwrap_or(f64::NAN);
    let mut t = Table::new(&[
        "target", "workload", "value", "kops/s", "mean µs", "p50 µs", "p99 µs",
    ]);
    for r in records.iter().filter(|r| r.experiment == "app-kv") {
        let bucketed = r
            .params
            .get("percentiles_bucketed")
            .and_then(|b| b.as_bool())
            == Some(true);
        let le = if bucketed { "≤" } else { "" };
        t.row(vec![
            s(r, "target"),
            s(r, "workload"),
            Bytes(
                r.params
                    .get("value_bytes")
                    .and_then(|x| x.as_u64())
                    .unwrap_or(0),
            )
            .to_string(),
            format!(
                "{:.1}",
                r.summary.as_ref().map_or(f64::NAN, |x| x.p50) / 1e3
            ),
            format!("{:.0}", v(r, "mean_us")),
            format!("{le}{:.0}", v(r, "p50_us")),
            format!("{le}{:.0}", v(r, "p99_us")),
        ]);
    }
    println!("{}", t.render());
    if records.iter().any(|r| {
        r.params
            .get("percentiles_bucketed")
            .and_then(|b| b.as_bool())
            == Some(true)
    }) {
        println!(
            "(≤: memaslap reports latencies in power-of-two buckets; the bucket's upper bound)"
        );
    }
    println!("\nheap placement (pmscope run):");
    for r in records.iter().filter(|r| r.experiment == "app-placement") {
        let achieved = r
            .target
            .as_ref()
            .map(|t| t.achieved.describe())
            .unwrap_or_else(|| "no verified placement".into());
        println!("  {}: {achieved}", s(r, "target"));
        for w in &r.warnings {
            println!("    warning: {}", w.message);
        }
    }
}
