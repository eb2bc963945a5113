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
//!
//! As seed 004 section 4.3 ran them: server and client on disjoint CPUs (each started on
//! its own, the kernel's answer recorded), the client's threads and connections, a
//! store-size sweep (`--store-sizes`, a fresh server per size, which may pass the
//! machine's memory: the records say what the server then did) and repeated client runs
//! (`--reps`) whose spread the records carry.

mod records;
mod render;

use crate::error::usage;
use crate::output::Output;
use crate::params::{Count, Cpus, Seconds, Size, TargetArgs};
use crate::{Env, Experiment, Placement};
use anyhow::{Context, Result};
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use pmscope_core::cpulist::format_list;
use pmscope_core::range::{AxisKind, parse_axis};
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::p;
use pmscope_core::warning::Warning;
use pmscope_mapping::{MapOptions, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::Harness;
use pmscope_runner::interrupt;
use pmscope_runner::launch::{self, Launch, Launched, Supervision};
use pmscope_sys::mountinfo::MountInfo;
use pmscope_workload::kvstore::{self, AofDir, Client, Server, Workload};
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
    /// Concurrent client connections [default: 12 per client thread].
    #[arg(long)]
    pub clients: Option<Count>,
    /// Threads of the load generator (memaslap -T, redis-benchmark --threads) [default: 1].
    #[arg(long, value_name = "N")]
    pub client_threads: Option<Count>,
    /// Store sizes (sweep axis, e.g. 64MiB,1GiB): a fresh server per size, its memory limit
    /// that size and the client's key space sized to fill it. A size may exceed the target's
    /// or the machine's memory: a warning says so and the records say what happened
    /// (evictions, swap). Replaces --memory.
    #[arg(long, value_name = "AXIS")]
    pub store_sizes: Option<String>,
    /// Client runs of each workload and value size; the records hold their median
    /// throughput and its 95 % interval [default: 1].
    #[arg(long)]
    pub reps: Option<Count>,
    /// CPUs of the server [default: the first CPU this process may run on].
    #[arg(long, value_name = "CPUS")]
    pub server_cpus: Option<Cpus>,
    /// CPUs of the client [default: the others; with one CPU, the server's, with a
    /// warning].
    #[arg(long, value_name = "CPUS")]
    pub client_cpus: Option<Cpus>,
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
    /// One server per entry: its store size, or `None` for `--memory` alone.
    store_sizes: Vec<Option<u64>>,
    reps: usize,
    server_cpus: Vec<usize>,
    aof_dir: Option<PathBuf>,
    /// The file system `aof_dir` is on.
    aof_mount: Option<MountInfo>,
    port: Option<u16>,
    threshold: u64,
    /// The CPUs the environment is judged on: all this process may run on.
    cpus: Vec<usize>,
    /// Findings of the plan (CPUs shared, a store larger than memory), in every record.
    notes: Vec<Warning>,
}

/// `pmscope app`.
pub struct App;

impl Experiment for App {
    const NAME: &'static str = "app";
    const IN_BLOCKS: bool = false;
    type Params = Params;
    type Plan = Plan;

    fn plan(env: &mut Env, params: &Params) -> Result<Plan> {
        plan(env, params)
    }

    fn measure(env: &mut Env, out: &mut dyn Output, plan: &Plan) -> Result<()> {
        let mut h = env.start(out, &plan.cpus, None, false)?;
        for w in &plan.notes {
            h.note(w.clone());
        }
        for spec in &plan.specs {
            for &store in &plan.store_sizes {
                let records = measure_target(&h, plan, spec, store)?;
                for r in &records {
                    h.emit(r)?;
                }
                // The placement record's target: what the heap got, for the comparison
                // record (once per target).
                if store == plan.store_sizes[0]
                    && let Some(t) = records.first().and_then(|r| r.target.as_ref())
                {
                    h.note_target(t);
                }
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
    let threads = a.client_threads.map_or(1, |t| t.0 as u64);
    let clients = a.clients.map_or(12 * threads, |c| c.0 as u64);
    if clients < threads {
        return Err(usage(format!(
            "--clients {clients} with --client-threads {threads}: each client thread needs a connection; give --clients {threads} or more (default: 12 per thread)"
        )));
    }
    let store_sizes = store_sizes(a)?;
    let allowed = pmscope_sys::affinity::allowed_cpus()?;
    let (server_cpus, client_cpus, shared) =
        split_cpus(&allowed, a.server_cpus.as_ref(), a.client_cpus.as_ref())?;
    let mut notes = Vec::new();
    if let Some(w) = shared {
        notes.push(w);
    }
    for spec in &specs {
        for store in store_sizes.iter().flatten() {
            notes.extend(store_too_large(env, spec, &opts, *store));
        }
    }
    let server_bin = server.program().find()?;
    let client = Client {
        server,
        bin: server.client().find()?,
        clients,
        threads,
        store_bytes: None,
        cpus: client_cpus,
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
        store_sizes,
        reps: a.reps.map_or(1, |r| r.0),
        server_cpus,
        aof_dir,
        aof_mount,
        port,
        threshold: a.threshold.0,
        cpus: allowed,
        notes,
    })
}

/// The smallest store: memcached's memory limit is whole MiB and its slabs take some.
const MIN_STORE: u64 = 64 << 20;

/// `--store-sizes`: one server per size; without it, one server of `--memory`.
fn store_sizes(a: &Params) -> Result<Vec<Option<u64>>> {
    let Some(axis) = &a.store_sizes else {
        return Ok(vec![None]);
    };
    if a.memory.is_some() {
        return Err(usage(
            "--store-sizes sets each server's memory limit: drop --memory (or --store-sizes)",
        ));
    }
    let sizes =
        parse_axis(axis, AxisKind::Size).map_err(|e| usage(format!("--store-sizes: {e}")))?;
    if let Some(s) = sizes.iter().find(|&&s| s < MIN_STORE) {
        return Err(usage(format!(
            "--store-sizes: {} is below the smallest store, 64MiB (memcached's memory limit is whole MiB, and its slabs take some)",
            Bytes(*s)
        )));
    }
    Ok(sizes.into_iter().map(Some).collect())
}

/// The server's and the client's CPUs: disjoint, from the CPUs this process may run on
/// (`allowed`). Either list may be given; by default the server gets the first CPU and the
/// client the rest (seed 004 binds both to dedicated cores). Lists that overlap, or name a
/// CPU not allowed, are refused; with a single CPU both share it and the warning says so.
fn split_cpus(
    allowed: &[usize],
    server: Option<&Cpus>,
    client: Option<&Cpus>,
) -> Result<(Vec<usize>, Vec<usize>, Option<Warning>)> {
    for (flag, list) in [("--server-cpus", server), ("--client-cpus", client)] {
        if let Some(c) = list.and_then(|l| l.0.iter().find(|c| !allowed.contains(c))) {
            return Err(usage(format!(
                "{flag}: CPU {c} is not one this process may run on ({}); pick from those",
                format_list(allowed)
            )));
        }
    }
    let others = |of: &[usize]| -> Vec<usize> {
        allowed
            .iter()
            .copied()
            .filter(|c| !of.contains(c))
            .collect()
    };
    let (server, client) = match (server, client) {
        (Some(s), Some(c)) => {
            if let Some(x) = s.0.iter().find(|x| c.0.contains(x)) {
                return Err(usage(format!(
                    "--server-cpus {} and --client-cpus {} share CPU {x}: give them disjoint lists, so the client's load does not take the server's CPU",
                    format_list(&s.0),
                    format_list(&c.0)
                )));
            }
            (s.0.clone(), c.0.clone())
        }
        (Some(s), None) => (s.0.clone(), others(&s.0)),
        (None, Some(c)) => (others(&c.0).into_iter().take(1).collect(), c.0.clone()),
        (None, None) => (allowed[..1].to_vec(), others(&allowed[..1])),
    };
    if !server.is_empty() && !client.is_empty() {
        return Ok((server, client, None));
    }
    // No CPU left for one side: both run on the same CPUs.
    let both = if server.is_empty() { client } else { server };
    let warning = Warning::new(
        "app-cpus-shared",
        format!(
            "the server and its client share CPU {} (no other CPU is allowed): the client's load competes with the server for it",
            format_list(&both)
        ),
        "run on a machine (or cpuset) with two CPUs or more, or give --server-cpus and --client-cpus disjoint lists",
    );
    Ok((both.clone(), both, Some(warning)))
}

/// A warning when a store of `store` bytes cannot fit in the target's own capacity (huge
/// pages, a file system, a device) or in the machine's memory: the server will evict, swap
/// or be killed, and the records then say which.
fn store_too_large(env: &Env, spec: &TargetSpec, opts: &MapOptions, store: u64) -> Option<Warning> {
    let room = spec.room(opts);
    let available = pmscope_sys::memory::meminfo_bytes(&env.root, "MemAvailable");
    let total = pmscope_sys::memory::meminfo_bytes(&env.root, "MemTotal");
    let beyond = if let Some(own) = room.own.as_ref().filter(|o| store > o.bytes) {
        format!("{} ({})", own.what, Bytes(own.bytes))
    } else if let (true, Some(total)) = (room.ram, total.filter(|&t| store > t)) {
        format!("the machine's memory ({} MemTotal)", Bytes(total))
    } else if let (true, Some(avail)) = (room.ram, available.filter(|&a| store > a)) {
        format!(
            "the machine's available memory ({} MemAvailable)",
            Bytes(avail)
        )
    } else {
        return None;
    };
    Some(Warning::new(
        "app-store-exceeds-memory",
        format!(
            "a {} store on {spec} exceeds {beyond}: the server will evict, swap or be killed; each point's record says what happened (evictions, server_swap_bytes, stored_bytes)",
            Bytes(store)
        ),
        "nothing to do if that is the point (seed 004 Figures 21-22 pass DRAM); else give smaller --store-sizes",
    ))
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
fn measure_target(
    h: &Harness<'_>,
    plan: &Plan,
    spec: &TargetSpec,
    store: Option<u64>,
) -> Result<Vec<Record>> {
    let memory_mib = store.map_or(plan.memory_mib, |s| s.div_ceil(1 << 20));
    let client = Client {
        store_bytes: store,
        ..plan.client.clone()
    };
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
                memory_mib,
                plan.server_cpus.len() as u64,
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
    let (server, _) = pmscope_sys::affinity::run_on(&plan.server_cpus, || {
        launch::spawn(&launch, Supervision::Background)
    })
    .with_context(|| {
        format!(
            "cannot start {} on CPU {}",
            plan.server,
            format_list(&plan.server_cpus)
        )
    })?;
    let mut server = server?;
    server.wait_until_listening(port, START_TIMEOUT)?;
    let setup = records::Setup {
        store,
        memory_bytes: memory_mib << 20,
        // What the kernel holds the server to, and what a client started on its CPUs
        // inherits.
        server_cpus: pmscope_sys::process::status_field(server.pid(), "Cpus_allowed_list")
            .and_then(|l| pmscope_core::cpulist::parse_list(&l).ok())
            .unwrap_or_default(),
        client_cpus: pmscope_sys::affinity::run_on(&client.cpus, || ())
            .with_context(|| format!("cannot run on CPU {}", format_list(&client.cpus)))?
            .1,
    };
    let (points, failure) = load(plan, &client, port, &mut server);
    let outcome = server.stop(STOP_TIMEOUT);
    if let Some(e) = failure {
        return Err(e);
    }
    let outcome = outcome?;
    let mut placement = records::placement(h, plan, spec, &command, &outcome);
    if let Some(s) = store {
        placement = placement.param(p::STORE_BYTES, s);
    }
    // What the kernel made of the append-only file, read before its directory goes.
    let aof_inode_dax = aof
        .as_ref()
        .and_then(|d| d.append_only_file())
        .and_then(|f| pmscope_sys::dax::fs_facts(&f).ok())
        .and_then(|f| f.statx_dax);
    let mut out = vec![placement];
    for point in &points {
        let mut r = records::kv(h, plan, &client, spec, &setup, point);
        r.target = out[0].target.clone();
        if let (Some(d), Some(parent)) = (&aof, &plan.aof_dir) {
            r = records::with_aof(r, plan, parent, d.path(), aof_inode_dax);
        }
        out.push(r);
    }
    Ok(out)
}

/// Every workload × value size against the server on `port`, `plan.reps` client runs
/// each, with what the server held after them, until the first failure (Ctrl-C included),
/// which is returned beside the points so far.
/// The server is watched throughout: one that exits is reported at once (and reaped),
/// never waited on by its client.
fn load<'p>(
    plan: &'p Plan,
    client: &Client,
    port: u16,
    server: &mut Launched,
) -> (Vec<records::Point<'p>>, Option<anyhow::Error>) {
    let mut points = Vec::new();
    let name = plan.server.client().name;
    let pid = server.pid();
    let mut alive = || server.still_running(&format!("while {name} ran"));
    for w in &plan.workloads {
        for &size in &plan.value_sizes {
            let before = kvstore::server_stats(plan.server, port).ok();
            let mut runs = Vec::new();
            for _ in 0..plan.reps {
                if let Err(e) = interrupt::check() {
                    return (points, Some(e.into()));
                }
                match client.run(w, size, port, &mut alive) {
                    Ok(res) => runs.push(res),
                    Err(e) => return (points, Some(e)),
                }
            }
            let after = kvstore::server_stats(plan.server, port).ok();
            points.push(records::Point {
                workload: w,
                value_bytes: size,
                runs,
                stats: after,
                evicted: match (before, after) {
                    (Some(b), Some(a)) => Some(a.evictions.saturating_sub(b.evictions)),
                    _ => None,
                },
                rss: pmscope_sys::process::status_bytes(pid, "VmRSS"),
                swap: pmscope_sys::process::status_bytes(pid, "VmSwap"),
            });
        }
    }
    (points, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(v: &[usize]) -> Cpus {
        Cpus(v.to_vec())
    }

    #[test]
    fn server_and_client_get_disjoint_cpus_or_a_warning() {
        let (s, c, w) = split_cpus(&[0, 1], None, None).unwrap();
        assert_eq!((s, c, w), (vec![0], vec![1], None));
        let (s, c, w) = split_cpus(&[0, 1, 2, 3], Some(&cpus(&[2, 3])), None).unwrap();
        assert_eq!((s, c, w), (vec![2, 3], vec![0, 1], None));
        let (s, c, _) = split_cpus(&[0, 1, 2], None, Some(&cpus(&[0]))).unwrap();
        assert_eq!((s, c), (vec![1], vec![0]));
        // One CPU: both share it, and the warning says so.
        let (s, c, w) = split_cpus(&[3], None, None).unwrap();
        assert_eq!((s, c), (vec![3], vec![3]));
        assert_eq!(w.unwrap().code, "app-cpus-shared");
        let (_, _, w) = split_cpus(&[0, 1], Some(&cpus(&[0, 1])), None).unwrap();
        assert!(w.is_some());
        // Lists given that overlap, or name a CPU not allowed, are refused.
        let e = split_cpus(&[0, 1], Some(&cpus(&[0, 1])), Some(&cpus(&[1])));
        assert!(e.unwrap_err().to_string().contains("share CPU 1"));
        let e = split_cpus(&[0, 1], None, Some(&cpus(&[7])));
        assert!(e.unwrap_err().to_string().contains("CPU 7 is not one"));
    }
}
