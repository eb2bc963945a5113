//! `pmscope info`: the machine as pmscope sees it. With `--json`, one object holding every
//! field; the human form prints the same facts in sections.

use crate::output::Sink;
use anyhow::Result;
use pmscope_core::cpulist::format_list;
use pmscope_core::record::TimerInfo;
use pmscope_core::units::Bytes;
use pmscope_core::warning::Warning;
use pmscope_experiment::Env as Context;
use pmscope_runner::sanity;
use pmscope_runner::timer::Timer;
use pmscope_sys::{cpu, dax, environment, hugepages, numa, perf, pmem, thp};
use serde::Serialize;
use std::time::Duration;

#[derive(Serialize)]
struct Info {
    schema_version: u32,
    kernel: String,
    hostname: String,
    cpu: CpuInfo,
    tsc: TscInfo,
    numa_nodes: Vec<NodeInfo>,
    hugepages: Vec<hugepages::Pool>,
    thp: thp::ThpSettings,
    dax_devices: Vec<dax::DaxDevice>,
    dax_mounts: Vec<dax::Mount>,
    pmem_block_devices: Vec<dax::PmemBlock>,
    pmem_regions: Vec<pmem::Region>,
    platform: Platform,
    tools: Tools,
    perf_counters: perf::PerfAvailability,
    prefetchers: environment::Prefetchers,
    warnings: Vec<Warning>,
}

#[derive(Serialize)]
struct CpuInfo {
    model: String,
    vendor: String,
    cpus_online: Vec<usize>,
    features: cpu::CpuFeatures,
    feature_names: Vec<&'static str>,
    /// The instructions pmscope may use that this CPU lacks (CPUID), which commands refuse
    /// or replace with the documented fallbacks.
    absent_features: Vec<&'static str>,
    caches: Vec<cpu::Cache>,
    last_level_cache_bytes: Option<u64>,
}

#[derive(Serialize)]
struct TscInfo {
    invariant: bool,
    declared_hz: Option<f64>,
    declared_source: Option<&'static str>,
    timer: TimerInfo,
}

#[derive(Serialize)]
struct NodeInfo {
    #[serde(flatten)]
    node: numa::Node,
    memory_only: bool,
    hugepages: Vec<hugepages::Pool>,
}

/// What changes every figure without being memory: SMT, mitigations, the kernel command
/// line, and the clock the cores actually ran at.
#[derive(Serialize)]
struct Platform {
    smt_active: Option<bool>,
    kernel_cmdline: String,
    mitigations: std::collections::BTreeMap<String, String>,
    observed_core_ghz: Option<f64>,
    /// Why `observed_core_ghz` is null although the clock was measured.
    core_clock_unmeasurable: Option<String>,
}

#[derive(Serialize)]
struct Tools {
    ndctl: Option<String>,
    daxctl: Option<String>,
}

pub fn run(ctx: &mut Context, sink: &mut Sink) -> Result<()> {
    let root = &ctx.root;
    let f = ctx.features;
    let timer = Timer::calibrate(&f, Duration::from_millis(100));
    let declared = cpu::declared_tsc_hz();
    let clock = pmscope_sys::coreclock::observe(20_000_000);
    let caches = cpu::caches(root, 0);
    let nodes: Vec<NodeInfo> = numa::nodes(root)
        .into_iter()
        .map(|n| NodeInfo {
            memory_only: n.is_memory_only(),
            hugepages: hugepages::pools(root, Some(n.id)),
            node: n,
        })
        .collect();
    let facts = sanity::EnvFacts::probe(root, &environment::online_cpus(root));
    let warnings = sanity::check(
        &facts,
        &sanity::Context {
            timer: Some(timer.info()),
            memory_working_set: None,
            times_single_accesses: false,
        },
    );
    let info = Info {
        schema_version: pmscope_core::record::SCHEMA_VERSION,
        kernel: environment::kernel_release(root),
        hostname: environment::hostname(root),
        cpu: CpuInfo {
            model: cpu::brand_string(),
            vendor: cpu::vendor(),
            cpus_online: environment::online_cpus(root),
            feature_names: f.names(),
            absent_features: f.absent(),
            features: f,
            last_level_cache_bytes: cpu::last_level_cache_bytes(&caches),
            caches,
        },
        tsc: TscInfo {
            invariant: f.invariant_tsc,
            declared_hz: declared.map(|d| d.0),
            declared_source: declared.map(|d| d.1),
            timer: timer.info(),
        },
        numa_nodes: nodes,
        hugepages: hugepages::pools(root, None),
        thp: thp::settings(root),
        dax_devices: dax::devices(root),
        dax_mounts: dax::mounts(root)
            .into_iter()
            .filter(|m| m.is_dax())
            .collect(),
        pmem_block_devices: dax::pmem_blocks(root),
        pmem_regions: pmem::regions(root, f.hypervisor),
        platform: Platform {
            smt_active: environment::smt_active(root),
            kernel_cmdline: environment::kernel_cmdline(root),
            mitigations: environment::mitigations(root),
            observed_core_ghz: clock.ghz(),
            core_clock_unmeasurable: clock.unmeasurable_reason().map(String::from),
        },
        tools: Tools {
            ndctl: environment::tool_installed("ndctl"),
            daxctl: environment::tool_installed("daxctl"),
        },
        perf_counters: perf::probe(),
        prefetchers: facts.prefetchers.clone(),
        warnings,
    };
    sink.emit_value(&info)?;
    if !sink.json() {
        print_human(&info);
        sink.print_warnings(&info.warnings);
    }
    Ok(())
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "unknown".into())
}

fn print_human(i: &Info) {
    println!("kernel        {} ({})", i.kernel, i.hostname);
    println!(
        "cpu           {} [{}], CPUs {}",
        i.cpu.model,
        i.cpu.vendor,
        format_list(&i.cpu.cpus_online)
    );
    println!("features      {}", i.cpu.feature_names.join(" "));
    // From CPUID, as every check before an instruction runs.
    let missing = &i.cpu.absent_features;
    if !missing.is_empty() {
        println!("absent        {}", missing.join(" "));
    }
    for c in &i.cpu.caches {
        println!(
            "cache         L{} {:<11} {:>9}  shared by CPUs {}",
            c.level,
            c.kind,
            Bytes(c.size_bytes).to_string(),
            c.shared_cpu_list
        );
    }
    println!(
        "tsc           {}invariant, calibrated {:.4} GHz against CLOCK_MONOTONIC_RAW, declared {}, timer {:?} (overhead {:.1} ns, resolution {:.1} ns)",
        if i.tsc.invariant { "" } else { "NOT " },
        i.tsc.timer.hz / 1e9,
        match (i.tsc.declared_hz, i.tsc.declared_source) {
            (Some(hz), Some(src)) => format!("{:.4} GHz ({src})", hz / 1e9),
            _ => "by nothing".into(),
        },
        i.tsc.timer.source,
        i.tsc.timer.overhead_ns,
        i.tsc.timer.resolution_ns
    );
    for n in &i.numa_nodes {
        let kind = if n.memory_only {
            "memory-only"
        } else if n.node.cpus.is_empty() {
            "empty"
        } else {
            "cpus+memory"
        };
        let hmat = n
            .node
            .hmat
            .map(|h| {
                format!(
                    ", HMAT read {} ns / {} MB/s",
                    opt(h.read_latency_ns),
                    opt(h.read_bandwidth_mb_s)
                )
            })
            .unwrap_or_default();
        let tier = n
            .node
            .memory_tier
            .as_deref()
            .map(|t| format!(", {t}"))
            .unwrap_or_default();
        println!(
            "numa node {}   {kind}, CPUs [{}], {} ({} free), distances {:?}{hmat}{tier}",
            n.node.id,
            format_list(&n.node.cpus),
            Bytes(n.node.mem_total_bytes).human(),
            Bytes(n.node.mem_free_bytes).human(),
            n.node.distances
        );
    }
    for p in &i.hugepages {
        println!(
            "hugepages     {:>6}: {} total, {} free, {} reserved",
            Bytes(p.page_bytes).to_string(),
            p.total,
            p.free,
            p.reserved
        );
    }
    println!(
        "thp           enabled={} defrag={} shmem_enabled={}",
        opt(i.thp.enabled.as_ref()),
        opt(i.thp.defrag.as_ref()),
        opt(i.thp.shmem_enabled.as_ref())
    );
    if i.dax_devices.is_empty() {
        println!("dax devices   none");
    }
    for d in &i.dax_devices {
        println!(
            "dax device    {}: {}, align {}, node {}, driver {}",
            d.name,
            d.size_bytes
                .map(|s| Bytes(s).human())
                .unwrap_or_else(|| "size unknown".into()),
            opt(d.align_bytes.map(Bytes)),
            opt(d.target_node),
            opt(d.driver.as_ref())
        );
    }
    if i.dax_mounts.is_empty() {
        println!("dax mounts    none");
    }
    for m in &i.dax_mounts {
        println!(
            "dax mount     {} on {} ({}, {})",
            m.source, m.target, m.fstype, m.options
        );
    }
    if i.pmem_block_devices.is_empty() {
        println!("pmem devices  none");
    }
    for b in &i.pmem_block_devices {
        println!(
            "pmem device   /dev/{}: {}{}",
            b.name,
            Bytes(b.size_bytes).human(),
            if b.dax { ", DAX-capable" } else { "" }
        );
    }
    if i.pmem_regions.is_empty() {
        println!("pmem regions  none");
    }
    for r in &i.pmem_regions {
        println!(
            "pmem region   {} ({}{})",
            r.describe(),
            Bytes(r.size_bytes).human(),
            r.numa_node
                .map(|n| format!(", node {n}"))
                .unwrap_or_default()
        );
    }
    let p = &i.platform;
    println!(
        "smt           {}",
        match p.smt_active {
            Some(true) => "active (sibling threads share each core's caches and ports)",
            Some(false) => "inactive",
            None => "unknown (the kernel does not say)",
        }
    );
    println!(
        "core clock    {}",
        match (p.observed_core_ghz, &p.core_clock_unmeasurable) {
            (Some(g), _) => format!(
                "{g:.2} GHz observed (dependent register multiplies against CLOCK_MONOTONIC_RAW, within 0.2-3x of the TSC)"
            ),
            (None, Some(why)) => format!("unmeasurable: {why}"),
            (None, None) => "not measured".into(),
        }
    );
    println!(
        "mitigations   {}",
        if p.mitigations.is_empty() {
            "none reported".to_string()
        } else {
            p.mitigations
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join("; ")
        }
    );
    println!("cmdline       {}", p.kernel_cmdline);
    println!(
        "tools         ndctl {}, daxctl {}",
        i.tools.ndctl.as_deref().unwrap_or("not installed"),
        i.tools.daxctl.as_deref().unwrap_or("not installed")
    );
    println!(
        "perf counters {}",
        if i.perf_counters.available {
            "available".to_string()
        } else {
            format!(
                "unavailable ({})",
                i.perf_counters.reason.as_deref().unwrap_or("?")
            )
        }
    );
    println!(
        "prefetchers   {} ({})",
        i.prefetchers.state, i.prefetchers.detail
    );
}
