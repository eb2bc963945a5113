//! `pmscope info`: the machine as pmscope sees it. With `--json`, one object holding every
//! field; the human form prints the same facts in sections.

// The sections are rendered into a String, written to stdout in one piece by its one writer.
// `say!(o; ...)`: the `;` keeps rustfmt from giving `o` a line of its own.
macro_rules! say {
    ($o:expr; $($arg:tt)*) => {{
        use std::fmt::Write as _;
        // Writing into a String cannot fail.
        let _ = writeln!($o, $($arg)*);
    }};
}

mod cxl_section;
mod human;

use crate::output::Sink;
use anyhow::Result;
use pmscope_core::record::TimerInfo;
use pmscope_core::warning::Warning;
use pmscope_experiment::Env as Context;
use pmscope_runner::sanity;
use pmscope_runner::timer::Timer;
use pmscope_sys::{cpu, cxl, dax, environment, hugepages, numa, perf, pmem, thp};
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
    /// `/sys/bus/cxl`: memory devices, decoders, regions (all empty without CXL).
    cxl: cxl::Inventory,
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
        cxl: cxl::Inventory::read(root),
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
        pmscope_experiment::stdout::print(&human::render(&info))?;
        sink.print_warnings(&info.warnings);
    }
    Ok(())
}

/// A value, or "unknown", for the human sections.
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "unknown".into())
}
