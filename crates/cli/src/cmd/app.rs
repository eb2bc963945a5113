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
use crate::error::usage;
use crate::output::Sink;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::filedir;

use anyhow::{Context as _, Result, anyhow, bail};
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::warning::Warning;
use pmscope_experiment::render::table::Table;
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
    let aof_mount = aof_dir
        .as_deref()
        .and_then(|d| pmscope_sys::mountinfo::of(&ctx.root, d));
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
        aof_mount,
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
        // The placement record's target: what the heap got, for the comparison record.
        if let Some(t) = records.first().and_then(|r| r.target.as_ref()) {
            h.note_target(t);
        }
    }
    // Printed once at the start: the placement lines show only what is the target's own.
    let environment: Vec<String> = h
        .environment_warnings()
        .iter()
        .map(|w| w.code.clone())
        .collect();
    h.finish()?;
    if human {
        print!("{}", render(sink.records(), &environment));
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
    /// The file system `aof_dir` is on.
    aof_mount: Option<pmscope_sys::mountinfo::MountInfo>,
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
    let mut results = Vec::new();
    let mut failure = None;
    'points: for w in &plan.workloads {
        for &size in &plan.value_sizes {
            if let Err(e) = interrupt::check() {
                failure = Some(e.into());
                break 'points;
            }
            match run_client(plan, w, size, port) {
                Ok(res) => results.push((w, size, res)),
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
    let placement = placement_record(h, plan, spec, placement?);
    // What the kernel made of the append-only file, read before its directory goes.
    let aof_inode_dax = aof
        .as_ref()
        .and_then(|d| largest_file(&d.path))
        .and_then(|f| pmscope_sys::dax::fs_facts(&f).ok())
        .and_then(|f| f.statx_dax);
    let mut out = Vec::new();
    for (w, size, res) in &results {
        let mut r = kv_record(h, plan, spec, w, *size, res);
        r.target = placement.target.clone();
        if let (Some(d), Some(parent)) = (&aof, &plan.aof_dir) {
            r = filedir::describe_directory(r, parent, plan.aof_mount.as_ref())
                .param(p::AOF_DIRECTORY, d.path.display().to_string())
                .param(p::INODE_DAX, aof_inode_dax);
        }
        out.push(r);
    }
    out.insert(0, placement);
    Ok(out)
}

/// The largest regular file under `dir` (redis 7 keeps its append-only file in
/// `appendonlydir/` there), or `None`.
fn largest_file(dir: &Path) -> Option<PathBuf> {
    let mut best: Option<(u64, PathBuf)> = None;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                dirs.push(e.path());
            } else if m.is_file() && best.as_ref().is_none_or(|b| m.len() > b.0) {
                best = Some((m.len(), e.path()));
            }
        }
    }
    best.map(|b| b.1)
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
) -> Record {
    let mut r = h
        .record("app-kv")
        .param(p::SERVER, plan.server.name())
        .param(p::TARGET, spec.to_string())
        .param(p::WORKLOAD, w.name)
        .param(p::VALUE_BYTES, value_bytes)
        .param(p::CLIENTS, plan.clients)
        .param(p::PERCENTILES_BUCKETED, res.percentiles_bucketed)
        .value(v::MEAN_US, res.mean_us)
        .value(v::P50_US, res.p50_us)
        .value(v::P99_US, res.p99_us)
        .value(v::MAX_US, res.max_us);
    if plan.server == Server::Memcached {
        r = r
            .param(p::KEY_BYTES, MEMCACHED_KEY_BYTES)
            .param(p::SET_FRACTION, w.set_fraction)
            .param(p::DURATION_S, plan.duration);
    } else {
        r = r.param(p::REQUESTS, plan.requests);
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
        .param(p::SERVER, plan.server.name())
        .param(p::TARGET, spec.to_string())
        .param(
            p::PLACEMENT,
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

/// Throughput and latency per target and workload; with several targets, each one's
/// throughput beside the first's (the ratio); then where each server's heap was and, with
/// `--aof-on`, the file system of the append-only file. Warnings whose code is in
/// `environment` (the run's, printed before the tables) are not repeated per target.
fn render(records: &[Record], environment: &[String]) -> String {
    use std::fmt::Write;
    let kv: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "app-kv")
        .collect();
    let kops = |r: &Record| r.summary.as_ref().map_or(f64::NAN, |x| x.p50) / 1e3;
    let value = |r: &Record| Bytes(r.count(p::VALUE_BYTES).unwrap_or_default()).to_string();
    let mut out = String::new();
    let mut t = Table::new(&[
        "target", "workload", "value", "kops/s", "mean µs", "p50 µs", "p99 µs",
    ]);
    for r in &kv {
        let le = if r.flag(p::PERCENTILES_BUCKETED).unwrap_or_default() {
            "≤"
        } else {
            ""
        };
        t.row(vec![
            r.text(p::TARGET).unwrap_or_default().into(),
            r.text(p::WORKLOAD).unwrap_or_default().into(),
            value(r),
            format!("{:.1}", kops(r)),
            format!("{:.0}", r.val(v::MEAN_US).unwrap_or_default()),
            format!("{le}{:.0}", r.val(v::P50_US).unwrap_or_default()),
            format!("{le}{:.0}", r.val(v::P99_US).unwrap_or_default()),
        ]);
    }
    let _ = writeln!(out, "{}", t.render());
    if kv
        .iter()
        .any(|r| r.flag(p::PERCENTILES_BUCKETED).unwrap_or_default())
    {
        let _ = writeln!(
            out,
            "(≤: memaslap reports latencies in power-of-two buckets; the bucket's upper bound)"
        );
    }
    let mut targets: Vec<&str> = Vec::new();
    let mut points: Vec<(&str, u64)> = Vec::new();
    for r in &kv {
        if !targets.contains(&r.text(p::TARGET).unwrap_or_default()) {
            targets.push(r.text(p::TARGET).unwrap_or_default());
        }
        let p = (
            r.text(p::WORKLOAD).unwrap_or_default(),
            r.count(p::VALUE_BYTES).unwrap_or_default(),
        );
        if !points.contains(&p) {
            points.push(p);
        }
    }
    if targets.len() > 1 {
        let _ = writeln!(
            out,
            "\nside by side: kops/s, and ×: against the first target ({})",
            targets[0]
        );
        let mut header = vec!["workload", "value"];
        header.extend(&targets);
        let mut t = Table::new(&header);
        for (workload, bytes) in points {
            let of = |target: &str| {
                kv.iter().find(|r| {
                    r.text(p::TARGET).unwrap_or_default() == target
                        && r.text(p::WORKLOAD).unwrap_or_default() == workload
                        && r.count(p::VALUE_BYTES).unwrap_or_default() == bytes
                })
            };
            let first = of(targets[0]).map(|r| kops(r));
            let mut row = vec![workload.to_string(), Bytes(bytes).to_string()];
            for (i, target) in targets.iter().enumerate() {
                row.push(match (of(target).map(|r| kops(r)), first) {
                    (Some(k), _) if i == 0 => format!("{k:.1}"),
                    (Some(k), Some(f)) if f > 0.0 => format!("{k:.1} ×{:.2}", k / f),
                    (Some(k), _) => format!("{k:.1}"),
                    (None, _) => "-".into(),
                });
            }
            t.row(row);
        }
        let _ = writeln!(out, "{}", t.render());
    }
    let _ = writeln!(out, "\nheap placement (pmscope run):");
    for r in records.iter().filter(|r| r.experiment == "app-placement") {
        let achieved = r
            .target
            .as_ref()
            .map(|t| t.achieved.describe())
            .unwrap_or_else(|| "no verified placement".into());
        let _ = writeln!(
            out,
            "  {}: {achieved}",
            r.text(p::TARGET).unwrap_or_default()
        );
        for w in r.warnings.iter().filter(|w| !environment.contains(&w.code)) {
            let _ = writeln!(out, "    warning: {}", w.message);
        }
    }
    if let Some(r) = kv.iter().find(|r| r.params.contains_key("aof_directory")) {
        let inode = match r.params.get("inode_dax").and_then(|v| v.as_bool()) {
            Some(true) => "DAX (no page cache)",
            Some(false) => "not DAX (page cache)",
            None => "unknown to statx",
        };
        let _ = writeln!(
            out,
            "\nappend-only file (fsync always) in {}: {} on {} ({}); its inode: {inode}",
            r.text(p::DIRECTORY).unwrap_or_default(),
            r.text(p::FS_TYPE).unwrap_or_default(),
            r.text(p::DEVICE).unwrap_or_default(),
            r.text(p::MOUNT_OPTIONS).unwrap_or_default(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::record::SystemSummary;

    fn kv(target: &str, workload: &str, kops: f64) -> Record {
        let mut r = Record::new("app-kv", Vec::new(), SystemSummary::default())
            .param(p::SERVER, "memcached")
            .param(p::TARGET, target)
            .param(p::WORKLOAD, workload)
            .param(p::VALUE_BYTES, 1024)
            .param(p::PERCENTILES_BUCKETED, false)
            .value(v::MEAN_US, 100.0)
            .value(v::P50_US, 90.0)
            .value(v::P99_US, 300.0);
        r.summary = Summary::of(&[kops * 1e3]);
        r
    }

    #[test]
    fn several_targets_are_set_side_by_side_against_the_first() {
        let recs = vec![
            kv("dram:4k", "get-heavy", 40.0),
            kv("dram:4k", "set-heavy", 20.0),
            kv("dram:thp", "get-heavy", 50.0),
            kv("shm", "get-heavy", 30.0),
        ];
        let out = render(&recs, &[]);
        let side = out
            .split("side by side")
            .nth(1)
            .expect("a side-by-side table");
        assert!(side.starts_with(": kops/s, and ×: against the first target (dram:4k)"));
        let header = side.lines().nth(1).unwrap();
        assert!(
            header.contains("dram:4k  dram:thp") && header.ends_with("shm"),
            "{header}"
        );
        let row = side.lines().find(|l| l.starts_with("get-heavy")).unwrap();
        assert!(
            row.contains(" 40.0 ") && row.contains("50.0 ×1.25") && row.ends_with("30.0 ×0.75"),
            "{row}"
        );
        // A point the other targets lack is shown as missing, not as a ratio.
        let row = side.lines().find(|l| l.starts_with("set-heavy")).unwrap();
        assert!(row.contains("20.0") && row.ends_with('-'), "{row}");
        // One target: nothing to compare.
        assert!(!render(&recs[..2], &[]).contains("side by side"));
    }

    #[test]
    fn placement_lines_leave_out_the_environment_warnings_printed_before() {
        let warning = |code: &str, message: &str| Warning {
            code: code.into(),
            message: message.into(),
            remedy: String::new(),
        };
        let placement = |target: &str| {
            let mut r = Record::new("app-placement", Vec::new(), SystemSummary::default())
                .param(p::TARGET, target);
            r.warnings = vec![
                warning("numa-balancing", "automatic NUMA balancing is on"),
                warning("app-heap-not-placed", "its heap stayed in ordinary memory"),
            ];
            r
        };
        let recs = vec![placement("dram:4k"), placement("shm:4k")];
        let out = render(&recs, &["numa-balancing".to_string()]);
        assert_eq!(out.matches("NUMA balancing").count(), 0, "{out}");
        assert_eq!(
            out.matches("heap stayed in ordinary memory").count(),
            2,
            "{out}"
        );
        // Without an environment list (a caller that printed none), every warning shows.
        let out = render(&recs, &[]);
        assert_eq!(out.matches("NUMA balancing").count(), 2, "{out}");
    }

    #[test]
    fn the_append_only_files_file_system_is_shown() {
        let r = kv("dram:4k", "mset", 5.0)
            .param(p::AOF_DIRECTORY, "/mnt/pmem/pmscope-app-1-0")
            .param(p::DIRECTORY, "/mnt/pmem")
            .param(p::FS_TYPE, "ext4")
            .param(p::DEVICE, "/dev/pmem0 (259:0)")
            .param(p::MOUNT_OPTIONS, "rw,relatime,dax=always")
            .param(p::INODE_DAX, true);
        let out = render(&[r], &[]);
        assert!(
            out.contains(
                "append-only file (fsync always) in /mnt/pmem: ext4 on /dev/pmem0 (259:0) (rw,relatime,dax=always); its inode: DAX (no page cache)"
            ),
            "{out}"
        );
    }

    #[test]
    fn the_largest_file_is_found_below_the_directory() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(largest_file(d.path()), None);
        std::fs::write(d.path().join("small"), b"x").unwrap();
        std::fs::create_dir(d.path().join("appendonlydir")).unwrap();
        let aof = d.path().join("appendonlydir/appendonly.aof.1.incr.aof");
        std::fs::write(&aof, b"*3\r\n$3\r\nSET\r\n").unwrap();
        assert_eq!(largest_file(d.path()), Some(aof));
    }
}
