//! `pmscope app memcached|redis`: a real key-value server with its heap on each target,
//! loaded by its own benchmark client (seed 004 Figures 20, 22 and 27).
//!
//! The server is started in-process by `pmscope_runner::launch` (the placement library puts
//! its large allocations on the target and reports where they landed, at which verified
//! page size), in a process group of its own that the kernel signals if pmscope dies. It
//! listens on 127.0.0.1 only, on a port pmscope picked free. Every client run
//! (`pmscope_workload::kvstore::Client`) is bounded (memaslap by `--duration`,
//! redis-benchmark by `--requests`, both by a timeout), and the server is stopped after its
//! target's workloads — also on Ctrl-C and on any failure, by the launch's `Drop`: no
//! server is left listening.

mod records;
mod render;

use crate::error::usage;
use crate::output::Output;
use crate::params::{Count, Seconds, Size, TargetArgs};
use crate::{Env, Experiment, Placement};
use anyhow::Result;
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::Harness;
use pmscope_runner::interrupt;
use pmscope_runner::launch::{self, Launch, Launched, Supervision};
use pmscope_sys::mountinfo::MountInfo;
use pmscope_workload::kvstore::{self, AofDir, Client, ClientResult, Server, Workload};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopped server may take to exit before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// The servers as the command line names them, each with what loads it (the help).
fn server_parser() -> impl TypedValueParser<Value = Server> {
    PossibleValuesParser::new(Server::ALL.map(|s| {
        PossibleValue::new(s.name()).help(match s {
            Server::Memcached => {
                "memcached, loaded by memaslap (GET-heavy 10 % SET, SET-heavy 50 % SET; 128 B keys)"
            }
            Server::Redis => {
                "redis-server, loaded by redis-benchmark (SET then GET; MSET with --aof-on)"
            }
        })
    }))
    .map(|s| s.parse::<Server>().expect("a listed server parses"))
}

/// `pmscope app`: its parameters and command line.
#[derive(Debug, Clone, Args)]
pub struct Params {
    /// The server.
    #[arg(value_parser = server_parser())]
    pub server: Server,
    /// Targets for the server's heap, and mapping options (default: dram:4k).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Value sizes (memcached default 1KiB, redis 512, with --aof-on 4).
    #[arg(long, value_name = "AXIS")]
    pub value_sizes: Option<String>,
    /// Concurrent client connections [default: 12].
    #[arg(long)]
    pub clients: Option<Count>,
    /// memcached: seconds per workload and value size [default: 5].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<Seconds>,
    /// redis: requests per workload and value size [default: 50000].
    #[arg(long)]
    pub requests: Option<Count>,
    /// The server's memory limit (memcached -m, redis maxmemory) [default: 1GiB].
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<Size>,
    /// redis: keep an append-only file, fsynced after every write, in a new directory
    /// inside DIR (file:DIR; removed afterwards unless --keep): seed 004 Figure 27's MSET.
    #[arg(long, value_name = "file:DIR")]
    pub aof_on: Option<String>,
    /// Port on 127.0.0.1 [default: a free one].
    #[arg(long)]
    pub port: Option<u16>,
    /// Allocations of at least SIZE go to the target (pmscope run --threshold; memcached's
    /// slab pages are 1 MiB).
    #[arg(long, default_value = "1MiB", value_name = "SIZE")]
    pub threshold: Size,
}

/// What `app` runs, checked before any server starts.
pub struct Plan {
    server: Server,
    specs: Vec<TargetSpec>,
    /// The launch's options: `keep` (also keeps the append-only directory), `destroy_data`.
    opts: MapOptions,
    server_bin: PathBuf,
    client: Client,
    workloads: Vec<Workload>,
    value_sizes: Vec<u64>,
    memory_mib: u64,
    aof_dir: Option<PathBuf>,
    /// The file system `aof_dir` is on.
    aof_mount: Option<MountInfo>,
    port: Option<u16>,
    threshold: u64,
    /// The CPUs the environment is judged on: all this process may run on.
    cpus: Vec<usize>,
}

/// `pmscope app`.
pub struct App;

impl Experiment for App {
    const NAME: &'static str = "app";
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        let mut h = env.start(out, &plan.cpus, None, false)?;
        for spec in &plan.specs {
            let records = measure_target(&h, plan, spec)?;
            for r in &records {
                h.emit(r)?;
            }
            // The placement record's target: what the heap got, for the comparison record.
            if let Some(t) = records.first().and_then(|r| r.target.as_ref()) {
                h.note_target(t);
            }
        }
        h.finish()?;
        Ok(())
    }

    fn render(records: &[Record]) -> String {
        render::render(records)
    }

    fn place(params: &mut Params, on: &Placement) {
        // The server's heap goes on the suite's targets; its CPUs are all the process's.
        params.targets = on.targets.clone();
    }
}

fn plan(env: &mut Env, a: &Params) -> Result<Plan> {
    if env.executor == Executor::Null {
        return Err(usage(
            "pmscope app drives real servers and has no synthetic mode: run it without --null-executor",
        ));
    }
    let server = a.server;
    if a.targets.require_dax || a.targets.max_mem.is_some() {
        return Err(usage(
            "pmscope app places the heap as pmscope run does, which takes neither --require-dax nor --max-mem: drop them (the placement report says whether the target was DAX)",
        ));
    }
    let (specs, opts) = env.targets(&a.targets, &["dram:4k"])?;
    let aof_dir = aof_directory(server, a.aof_on.as_deref())?;
    let port = a.port.map(port_free).transpose()?;
    let aof_mount = aof_dir
        .as_deref()
        .and_then(|d| pmscope_sys::mountinfo::of(&env.root, d));
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
    let server_bin = server.program().find()?;
    let client = Client {
        server,
        bin: server.client().find()?,
        clients: a.clients.map_or(12, |c| c.0 as u64),
        duration_s: a.duration.map_or(5.0, |d| d.0),
        requests: a.requests.map_or(50_000, |r| r.0 as u64),
    };
    Ok(Plan {
        server,
        specs,
        opts,
        server_bin,
        client,
        workloads: kvstore::workloads(server, aof_dir.is_some()),
        value_sizes,
        memory_mib: a.memory.map_or(1024, |m| m.0 >> 20).max(64),
        aof_dir,
        aof_mount,
        port,
        threshold: a.threshold.0,
        cpus: pmscope_sys::affinity::allowed_cpus()?,
    })
}

/// `--port N`: a port nobody listens on now (else the server could not bind it and its
/// client would load whatever does).
fn port_free(port: u16) -> Result<u16> {
    if port == 0 {
        return Err(usage(
            "--port 0: give a port from 1 to 65535, or leave --port out (pmscope picks a free one)",
        ));
    }
    match std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)) {
        Ok(_) => Ok(port),
        Err(e) => Err(usage(format!(
            "--port {port}: 127.0.0.1:{port} cannot be bound ({e}); pick another port or leave --port out (pmscope picks a free one)"
        ))),
    }
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
    let dir = pmscope_sys::path::existing_directory("--aof-on", dir).map_err(|e| usage(e.0))?;
    Ok(Some(dir))
}

/// One server on one target: start it, run every workload × value size, stop it, and
/// return the records (the placement report first).
fn measure_target(h: &Harness<'_>, plan: &Plan, spec: &TargetSpec) -> Result<Vec<Record>> {
    let port = match plan.port {
        Some(p) => p,
        None => pmscope_runner::child::free_port()?,
    };
    let aof = match &plan.aof_dir {
        Some(dir) => Some(AofDir::create(dir, !plan.opts.keep)?),
        None => None,
    };
    let mut command: Vec<OsString> = vec![plan.server_bin.clone().into()];
    command.extend(
        plan.server
            .args(
                port,
                plan.memory_mib,
                pmscope_sys::process::effective_uid() == 0,
                aof.as_ref().map(|d| d.path()),
            )
            .into_iter()
            .map(OsString::from),
    );
    let launch = Launch {
        target: spec,
        opts: &plan.opts,
        threshold: plan.threshold,
        command: &command,
    };
    let mut server = launch::spawn(&launch, Supervision::Background)?;
    server.wait_until_listening(port, START_TIMEOUT)?;
    let (results, failure) = load(plan, port, &mut server);
    let outcome = server.stop(STOP_TIMEOUT);
    if let Some(e) = failure {
        return Err(e);
    }
    let outcome = outcome?;
    let placement = records::placement(h, plan, spec, &command, &outcome);
    // What the kernel made of the append-only file, read before its directory goes.
    let aof_inode_dax = aof
        .as_ref()
        .and_then(|d| d.append_only_file())
        .and_then(|f| pmscope_sys::dax::fs_facts(&f).ok())
        .and_then(|f| f.statx_dax);
    let mut out = vec![placement];
    for (w, size, res) in &results {
        let mut r = records::kv(h, plan, spec, w, *size, res);
        r.target = out[0].target.clone();
        if let (Some(d), Some(parent)) = (&aof, &plan.aof_dir) {
            r = records::with_aof(r, plan, parent, d.path(), aof_inode_dax);
        }
        out.push(r);
    }
    Ok(out)
}

/// Every workload × value size against the server on `port`, until the first failure
/// (Ctrl-C included), which is returned beside the results so far.
/// The server is watched throughout: one that exits is reported at once (and reaped),
/// never waited on by its client.
fn load<'p>(
    plan: &'p Plan,
    port: u16,
    server: &mut Launched,
) -> (
    Vec<(&'p Workload, u64, ClientResult)>,
    Option<anyhow::Error>,
) {
    let mut results = Vec::new();
    let client = plan.server.client().name;
    let mut alive = || server.still_running(&format!("while {client} ran"));
    for w in &plan.workloads {
        for &size in &plan.value_sizes {
            if let Err(e) = interrupt::check() {
                return (results, Some(e.into()));
            }
            match plan.client.run(w, size, port, &mut alive) {
                Ok(res) => results.push((w, size, res)),
                Err(e) => return (results, Some(e)),
            }
        }
    }
    (results, None)
}
