//! `pmscope numa`: idle latency and read bandwidth from every CPU node to every memory node,
//! memory-only (CXL, kmem) nodes included — Intel MLC's matrix (seed 003 Table 4), with the
//! verified placement of every cell: each memory node's target is mapped with `node=N` and
//! `move_pages` says where its pages really are, in the records and under the table.

use crate::args::NumaArgs;
use crate::error::usage;
use crate::output::Sink;
use anyhow::{Context as _, Result};
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_core::vocab::{p, v};
use pmscope_experiment::Env as Context;
use pmscope_experiment::measure::{LatencyPlan, chase_latency, read_bandwidth};
use pmscope_experiment::render::table::Table;
use pmscope_loops::Region;
use pmscope_loops::chain::ChainSpec;
use pmscope_loops::chase::Chaser;
use pmscope_loops::stream::{StreamOp, Streamer};
use pmscope_mapping::TargetSpec;
use pmscope_mapping::sizing::Want;
use pmscope_runner::executor::Executor;
use std::time::Duration;

/// Bytes per bandwidth access (a multiple of every vector width).
const ACCESS: usize = 64 << 10;

/// The least `--size auto` gives (the old fixed default).
pub const SIZE_FLOOR: u64 = 256 << 20;

/// A CPU node and the CPUs of it pmscope may use.
struct CpuNode {
    id: u32,
    cpus: Vec<usize>,
}

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &NumaArgs) -> Result<()> {
    let nodes = pmscope_sys::numa::nodes(&ctx.root);
    let allowed = pmscope_sys::affinity::allowed_cpus()?;
    let cpu_nodes: Vec<CpuNode> = nodes
        .iter()
        .map(|n| CpuNode {
            id: n.id,
            cpus: n
                .cpus
                .iter()
                .copied()
                .filter(|c| allowed.contains(c))
                .collect(),
        })
        .filter(|n| !n.cpus.is_empty())
        .collect();
    let memory_nodes: Vec<u32> = nodes
        .iter()
        .filter(|n| n.mem_total_bytes > 0)
        .map(|n| n.id)
        .collect();
    if cpu_nodes.is_empty() || memory_nodes.is_empty() {
        return Err(anyhow::anyhow!(
            "no NUMA node with usable CPUs or memory is listed in /sys/devices/system/node"
        ));
    }
    let base: TargetSpec = a
        .memory
        .parse()
        .map_err(|e| usage(format!("--memory {}: {e}", a.memory)))?;
    if base.node.is_some() {
        return Err(usage(format!(
            "--memory {}: give the kind without node=, every memory node is measured",
            a.memory
        )));
    }
    let specs: Vec<TargetSpec> = memory_nodes
        .iter()
        .map(|m| format!("{},node={m}", a.memory).parse())
        .collect::<Result<_, _>>()
        .map_err(|e| usage(format!("--memory {}: {e}", a.memory)))?;
    if let Some(t) = a.targets.targets.first() {
        return Err(usage(format!(
            "-t {t}: numa maps --memory on every node itself; give the kind with --memory"
        )));
    }
    let (_, opts) = ctx.targets(&a.targets, &[])?;
    let chosen = ctx.size(a.size, Want::one("--size", SIZE_FLOOR), &specs, &opts);
    let (size, source) = (chosen.bytes, chosen.source.name());
    let width = Streamer::widest(&ctx.features);
    let read = Streamer::new(StreamOp::Read, width, ACCESS, &ctx.features)?;
    let reps = a.reps.map_or(3, |r| r.0);
    let duration = Duration::from_secs_f64(a.duration.map_or(0.15, |d| d.0));
    let all_cpus: Vec<usize> = cpu_nodes.iter().flat_map(|n| n.cpus.clone()).collect();
    // What the firmware declares for each memory node (ACPI HMAT, from its nearest
    // initiators), beside what was measured: under a hypervisor or an emulator every node
    // may be the same host memory, and only the declared figures show the tiers.
    let declared = |node: u32| nodes.iter().find(|n| n.id == node).and_then(|n| n.hmat);
    let human = sink.human();
    let mut h = ctx.start(sink, &all_cpus, Some(size), false)?;
    let timer = *h.timer();
    h.per_target(&specs, size, &opts, None, |run, m| {
        let executor = run.executor();
        let memory_node = memory_nodes[specs
            .iter()
            .position(|s| s.to_string() == run.target().spec)
            .expect("a target of ours")];
        let mut region = Region::from_slice(m.bytes_mut());
        for c in &cpu_nodes {
            run.check_interrupt()?;
            let ns = run.on_cpu(c.cpus[0], &mut region, |r| -> Result<Vec<f64>> {
                executor.run(
                    || {
                        let len = r.len();
                        let mut chaser = Chaser::build(r, len, &ChainSpec::default())
                            .with_context(|| {
                                format!("building a chain over {}", Bytes(len as u64))
                            })?;
                        let plan = LatencyPlan { reps, rep_ns: 40e6 };
                        Ok(chase_latency(&mut chaser, &timer, plan))
                    },
                    || Ok(Executor::synthetic(reps, 100.0 + 50.0 * memory_node as f64)),
                )
            })??;
            let mut r = run
                .record("numa-latency")
                .param(p::CPU_NODE, c.id)
                .param(p::MEMORY_NODE, memory_node)
                .param(p::PATTERN, Pattern::Rand.name())
                .param(p::WORKING_SET_BYTES, size)
                .param(p::SIZE_SOURCE, source);
            if let Some(ns) = declared(memory_node).and_then(|h| h.read_latency_ns) {
                r = r.value(v::HMAT_READ_LATENCY_NS, ns as f64);
            }
            r.metric = Some("latency_ns".into());
            r.summary = Some(Summary::of(&ns).expect("finite"));
            run.emit(&r)?;
            let gbs = read_bandwidth(run, &c.cpus, &mut region, read, duration, reps)?;
            let mut r = run
                .record("numa-bandwidth")
                .param(p::CPU_NODE, c.id)
                .param(p::MEMORY_NODE, memory_node)
                .param(p::OP, "read")
                .param(p::THREADS, c.cpus.len())
                .param(p::ACCESS_BYTES, ACCESS)
                .param(p::WORKING_SET_BYTES, size)
                .param(p::SIZE_SOURCE, source);
            if let Some(mb) = declared(memory_node).and_then(|h| h.read_bandwidth_mb_s) {
                r = r.value(v::HMAT_READ_BANDWIDTH_MB_S, mb as f64);
            }
            r.metric = Some("bandwidth_gb_s".into());
            r.summary = Some(Summary::of(&gbs).expect("finite"));
            run.emit(&r)?;
        }
        Ok(())
    })?;
    h.finish()?;
    if human {
        render(sink.records());
    }
    Ok(())
}

/// MLC's two matrices (rows: CPU nodes, columns: memory nodes), then where each memory
/// node's pages really were.
fn render(records: &[Record]) {
    let cell = |r: &Record, k: &str| r.params.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let mut cpu_nodes: Vec<u64> = records.iter().map(|r| cell(r, "cpu_node")).collect();
    let mut mem_nodes: Vec<u64> = records
        .iter()
        .filter(|r| r.experiment.starts_with("numa-"))
        .map(|r| cell(r, "memory_node"))
        .collect();
    cpu_nodes.sort_unstable();
    cpu_nodes.dedup();
    mem_nodes.sort_unstable();
    mem_nodes.dedup();
    for (experiment, title, fmt) in [
        (
            "numa-latency",
            "idle latency, ns per load (random chain)",
            1usize,
        ),
        (
            "numa-bandwidth",
            "read bandwidth, GB/s (all CPUs of the node)",
            2,
        ),
    ] {
        let mut header = vec!["CPU node \\ memory node".to_string()];
        header.extend(mem_nodes.iter().map(|m| m.to_string()));
        let header: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
        let mut t = Table::new(&header);
        for &c in &cpu_nodes {
            let mut row = vec![c.to_string()];
            for &m in &mem_nodes {
                let v = records
                    .iter()
                    .find(|r| {
                        r.experiment == experiment
                            && cell(r, "cpu_node") == c
                            && cell(r, "memory_node") == m
                    })
                    .and_then(|r| r.summary.as_ref())
                    .map(|s| format!("{:.*}", fmt, s.p50))
                    .unwrap_or_else(|| "-".into());
                row.push(v);
            }
            t.row(row);
        }
        println!("{title}\n{}\n", t.render());
    }
    println!("declared by the firmware (ACPI HMAT, read from each memory node's nearest CPUs):");
    for m in &mem_nodes {
        let declared = |experiment: &str, key: &str| {
            records
                .iter()
                .find(|r| r.experiment == experiment && cell(r, "memory_node") == *m)
                .and_then(|r| r.values.get(key).copied())
        };
        match (
            declared("numa-latency", "hmat_read_latency_ns"),
            declared("numa-bandwidth", "hmat_read_bandwidth_mb_s"),
        ) {
            (None, None) => println!("  memory node {m}: nothing declared"),
            (ns, mb) => println!(
                "  memory node {m}: {} read latency, {} read bandwidth",
                ns.map_or("no".into(), |v| format!("{v:.0} ns")),
                mb.map_or("no".into(), |v| format!("{:.1} GB/s", v / 1000.0)),
            ),
        }
    }
    println!("placement verified (move_pages):");
    for m in &mem_nodes {
        if let Some(t) = records
            .iter()
            .find(|r| r.experiment == "numa-latency" && cell(r, "memory_node") == *m)
            .and_then(|r| r.target.as_ref())
        {
            println!("  memory node {m}: {} -> {}", t.spec, t.achieved.describe());
        }
    }
}
