//! Environment sanity checks, run before every experiment and recorded with its results.
//! Each finding is a [`Warning`] with its remedy: automatic NUMA balancing, THP mode and
//! defrag, the frequency governor, the TSC, the hardware prefetchers, a working set that
//! fits in the last-level cache, and other load on the machine. Reading the facts
//! ([`EnvFacts::probe`]) and judging them ([`check`]) are separate so the judgement is
//! tested on made-up facts.

use pmscope_core::record::{TimerInfo, TimerSource};
use pmscope_core::units::Bytes;
use pmscope_core::warning::Warning;
use pmscope_sys::environment::{self, Prefetchers};
use pmscope_sys::numa::MemorySideCache;
use pmscope_sys::sysroot::SysRoot;

/// The facts the checks judge.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvFacts {
    /// `kernel.numa_balancing`.
    pub numa_balancing: Option<u64>,
    /// THP `enabled` active value.
    pub thp_enabled: Option<String>,
    /// THP `defrag` active value.
    pub thp_defrag: Option<String>,
    /// Governors of the CPUs the experiment uses (empty: no cpufreq).
    pub governors: Vec<(usize, String)>,
    /// Prefetcher state.
    pub prefetchers: Prefetchers,
    /// 1-minute load average.
    pub load_average: Option<f64>,
    /// Online CPUs.
    pub cpus_online: usize,
    /// The TSC frequency CPUID or the hypervisor declares, in Hz.
    pub declared_tsc_hz: Option<f64>,
    /// Last-level cache size.
    pub llc_bytes: Option<u64>,
    /// DAMON workers that are on.
    pub kdamonds: Vec<environment::Kdamond>,
}

impl EnvFacts {
    /// Reads the facts for an experiment running on `cpus`.
    pub fn probe(root: &SysRoot, cpus: &[usize]) -> EnvFacts {
        let thp = pmscope_sys::thp::settings(root);
        let f = pmscope_sys::cpu::CpuFeatures::detect();
        EnvFacts {
            numa_balancing: environment::numa_balancing(root),
            thp_enabled: thp.enabled,
            thp_defrag: thp.defrag,
            governors: environment::governors(root, cpus),
            prefetchers: environment::prefetchers(&pmscope_sys::cpu::vendor(), f.hypervisor),
            load_average: environment::load_average(root),
            cpus_online: environment::online_cpus(root).len(),
            declared_tsc_hz: pmscope_sys::cpu::declared_tsc_hz().map(|(hz, _)| hz),
            llc_bytes: pmscope_sys::cpu::last_level_cache_bytes(&pmscope_sys::cpu::caches(root, 0)),
            kdamonds: environment::running_kdamonds(root),
        }
    }
}

/// What the experiment is about to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Context {
    /// The timer it will use.
    pub timer: Option<TimerInfo>,
    /// Its working set, if it claims to measure memory (not the caches).
    pub memory_working_set: Option<u64>,
    /// Whether it times single accesses (then a coarse timer matters).
    pub times_single_accesses: bool,
}

/// A rule: the warnings one aspect of the facts (and what the experiment does) calls for.
type Rule = fn(&EnvFacts, &Context) -> Vec<Warning>;

/// Every rule, in the order their warnings are listed.
const RULES: &[Rule] = &[
    numa_balancing,
    damon,
    thp_mode,
    thp_defrag,
    governor,
    tsc,
    timer_resolution,
    prefetchers,
    fits_in_llc,
    busy_machine,
];

/// Judges the facts; every warning carries its remedy.
pub fn check(f: &EnvFacts, ctx: &Context) -> Vec<Warning> {
    RULES.iter().flat_map(|rule| rule(f, ctx)).collect()
}

/// Automatic NUMA balancing migrates pages during the run.
fn numa_balancing(f: &EnvFacts, _: &Context) -> Vec<Warning> {
    match f.numa_balancing {
        Some(n) if n != 0 => vec![Warning::new(
            "numa-balancing",
            format!(
                "automatic NUMA balancing is on (kernel.numa_balancing = {n}): the kernel migrates pages during the run"
            ),
            "echo 0 > /proc/sys/kernel/numa_balancing (as root) for the duration of the measurements",
        )],
        _ => Vec::new(),
    }
}

/// Each DAMON worker that is on samples accessed bits, and its schemes may move memory.
fn damon(f: &EnvFacts, _: &Context) -> Vec<Warning> {
    f.kdamonds
        .iter()
        .map(|k| {
            Warning::new(
                "damon",
                format!(
                    "DAMON worker {} is on ({} monitoring{}): it samples and clears accessed bits during the run{}",
                    k.index,
                    if k.operations.is_empty() { "unknown".to_string() } else { k.operations.join(",") },
                    if k.actions.is_empty() { String::new() } else { format!(", schemes: {}", k.actions.join(",")) },
                    if k.actions.iter().any(|a| a == "pageout" || a.contains("hugepage") || a == "migrate_cold" || a == "migrate_hot") {
                        ", and its schemes may reclaim or move the memory being measured"
                    } else {
                        ""
                    }
                ),
                format!("echo off > /sys/kernel/mm/damon/admin/kdamonds/{}/state (as root) for the measurements", k.index),
            )
        })
        .collect()
}

/// The THP mode: `always` backs memory pmscope does not advise, `never` refuses thp.
fn thp_mode(f: &EnvFacts, _: &Context) -> Vec<Warning> {
    match f.thp_enabled.as_deref() {
        Some("always") => vec![Warning::new(
            "thp-always",
            "transparent huge pages are 'always': memory pmscope does not advise may be huge-page backed, and khugepaged may collapse pages mid-run",
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, so only targets asking for thp get huge pages",
        )],
        Some("never") => vec![Warning::new(
            "thp-never",
            "transparent huge pages are 'never': thp targets get 4 KiB pages",
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or use dram:2m (hugetlb)",
        )],
        None => vec![Warning::new(
            "thp-unknown",
            "the THP mode is unknown (no /sys/kernel/mm/transparent_hugepage)",
            "use hugetlb targets (dram:2m) for a known page size",
        )],
        _ => Vec::new(),
    }
}

/// THP defrag that does not compact at fault time leaves thp targets with base pages.
fn thp_defrag(f: &EnvFacts, _: &Context) -> Vec<Warning> {
    match f.thp_defrag.as_deref() {
        Some(d) if matches!(d, "never" | "defer") => vec![Warning::new(
            "thp-defrag",
            format!(
                "THP defrag is '{d}': a thp target gets 4 KiB pages wherever memory is fragmented"
            ),
            "echo madvise > /sys/kernel/mm/transparent_hugepage/defrag, so MADV_HUGEPAGE regions compact memory at fault time",
        )],
        _ => Vec::new(),
    }
}

/// The frequency governor: unknown, or not `performance` on a CPU the experiment uses.
fn governor(f: &EnvFacts, _: &Context) -> Vec<Warning> {
    if f.governors.is_empty() {
        vec![Warning::new(
            "governor-unknown",
            "the CPU frequency governor is unknown (no cpufreq in sysfs, as in most VMs): the clock may change during the run",
            "on bare metal: cpupower frequency-set -g performance; in a VM the host decides",
        )]
    } else if let Some((cpu, g)) = f.governors.iter().find(|(_, g)| g != "performance") {
        vec![Warning::new(
            "governor",
            format!("CPU {cpu} runs the '{g}' frequency governor: the clock ramps during the run"),
            "cpupower frequency-set -g performance (as root)",
        )]
    } else {
        Vec::new()
    }
}

/// The TSC: unusable, or calibrated away from (or without) a declared frequency.
fn tsc(f: &EnvFacts, ctx: &Context) -> Vec<Warning> {
    let Some(t) = ctx.timer else {
        return Vec::new();
    };
    if t.source == TimerSource::ClockGettime {
        return vec![Warning::new(
            "tsc-unusable",
            "the TSC is not invariant (or rdtscp is missing), so times come from clock_gettime, whose resolution and cost are worse",
            "run on a CPU with an invariant TSC (CPUID 80000007H EDX[8]) for single-access timings",
        )];
    }
    let Some(declared) = f.declared_tsc_hz else {
        return vec![Warning::new(
            "tsc-frequency-undeclared",
            format!(
                "neither CPUID nor the hypervisor declares the TSC frequency; it was calibrated at {:.4} GHz against CLOCK_MONOTONIC_RAW",
                t.hz / 1e9
            ),
            "nothing to do unless the calibration differs between runs (the records carry it)",
        )];
    };
    let diff = (t.hz - declared).abs() / declared;
    if diff > 0.01 {
        vec![Warning::new(
            "tsc-frequency",
            format!(
                "the TSC was calibrated at {:.4} GHz but the CPU declares {:.4} GHz ({:.1}% apart)",
                t.hz / 1e9,
                declared / 1e9,
                diff * 100.0
            ),
            "rerun on an idle machine; if it persists, the declared frequency is wrong and the calibrated one is used",
        )]
    } else {
        Vec::new()
    }
}

/// A coarse timer, when the experiment times single accesses.
fn timer_resolution(_: &EnvFacts, ctx: &Context) -> Vec<Warning> {
    match ctx.timer {
        Some(t) if ctx.times_single_accesses && t.resolution_ns > 2.0 => vec![Warning::new(
            "timer-resolution",
            format!(
                "the timer advances in steps of {:.1} ns here (a virtualised TSC), so single-access timings are multiples of that step",
                t.resolution_ns
            ),
            "read medians and percentiles to that resolution; run on bare metal for finer single-access timings",
        )],
        _ => Vec::new(),
    }
}

/// Hardware prefetchers that are not off serve sequential and nearby accesses early.
fn prefetchers(f: &EnvFacts, _: &Context) -> Vec<Warning> {
    if f.prefetchers.state == "off" {
        return Vec::new();
    }
    vec![Warning::new(
        "prefetchers",
        format!(
            "hardware prefetchers are {} ({}): sequential and nearby accesses may be served early",
            f.prefetchers.state, f.prefetchers.detail
        ),
        "on bare metal disable them as MLC does (Intel: wrmsr -a 0x1a4 0xf; AMD: MSR 0xc0000108), or read sequential results as prefetched",
    )]
}

/// A memory working set that fits in the last-level cache measures the cache.
fn fits_in_llc(f: &EnvFacts, ctx: &Context) -> Vec<Warning> {
    match (ctx.memory_working_set, f.llc_bytes) {
        (Some(ws), Some(llc)) if ws <= llc => vec![Warning::new(
            "fits-in-llc",
            format!(
                "the working set ({}) fits in the {} last-level cache: this measures the cache, not memory",
                Bytes(ws).human(),
                Bytes(llc).human()
            ),
            "use a working set of at least 4x the last-level cache",
        )],
        _ => Vec::new(),
    }
}

/// The largest memory-side cache of each node that has one (`pmscope_sys::numa`), for
/// [`within_memory_side_cache`].
pub fn memory_side_caches(root: &pmscope_sys::sysroot::SysRoot) -> Vec<(u32, MemorySideCache)> {
    pmscope_sys::numa::nodes(root)
        .into_iter()
        .filter_map(|n| {
            let largest = n
                .memory_side_caches
                .into_iter()
                .max_by_key(|c| c.size_bytes)?;
            Some((n.id, largest))
        })
        .collect()
}

/// A working set of `ws` bytes on memory whose pages are on `nodes` (page counts by node)
/// measures a memory-side cache when it fits the largest one of a node it uses.
pub fn within_memory_side_cache(
    ws: u64,
    nodes: &std::collections::BTreeMap<u32, u64>,
    caches: &[(u32, MemorySideCache)],
) -> Option<Warning> {
    let (node, cache) = caches
        .iter()
        .filter(|(n, c)| nodes.get(n).is_some_and(|&pages| pages > 0) && ws <= c.size_bytes)
        .max_by_key(|(_, c)| c.size_bytes)?;
    Some(Warning::new(
        "memory-side-cache",
        format!(
            "the working set ({}) fits node {node}'s {}: this measures the cache, not the memory behind it",
            Bytes(ws),
            cache.describe(|b| Bytes(b).to_string())
        ),
        "use a working set of at least 4x the memory-side cache to measure the memory behind it",
    ))
}

/// Other load on the machine competes for cores and memory bandwidth.
fn busy_machine(f: &EnvFacts, _: &Context) -> Vec<Warning> {
    match f.load_average {
        Some(load) if load > 0.5 => vec![Warning::new(
            "busy-machine",
            format!(
                "the 1-minute load average is {load:.2} on {} CPUs: other work competes for cores and memory bandwidth",
                f.cpus_online
            ),
            "stop other jobs, or compare only ratios measured side by side in one run",
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> EnvFacts {
        EnvFacts {
            numa_balancing: Some(0),
            thp_enabled: Some("madvise".into()),
            thp_defrag: Some("madvise".into()),
            governors: vec![(0, "performance".into())],
            prefetchers: Prefetchers {
                state: "off".into(),
                detail: "MSR 0x1a4 = 0xf".into(),
            },
            load_average: Some(0.01),
            cpus_online: 2,
            declared_tsc_hz: Some(2.6e9),
            llc_bytes: Some(32 << 20),
            kdamonds: Vec::new(),
        }
    }

    fn tsc(hz: f64) -> Option<TimerInfo> {
        Some(TimerInfo {
            source: TimerSource::Tsc,
            hz,
            invariant_tsc: true,
            overhead_ns: 10.0,
            resolution_ns: 0.4,
        })
    }

    fn codes(f: &EnvFacts, ctx: &Context) -> Vec<String> {
        check(f, ctx).into_iter().map(|w| w.code).collect()
    }

    #[test]
    fn a_well_tuned_machine_has_no_warnings() {
        let ctx = Context {
            timer: tsc(2.6e9),
            memory_working_set: Some(1 << 30),
            times_single_accesses: true,
        };
        assert!(check(&quiet(), &ctx).is_empty());
    }

    #[test]
    fn each_problem_is_reported_with_a_remedy() {
        let mut f = quiet();
        f.numa_balancing = Some(1);
        f.thp_enabled = Some("always".into());
        f.thp_defrag = Some("never".into());
        f.governors = vec![(1, "powersave".into())];
        f.prefetchers.state = "unknown".into();
        f.load_average = Some(1.7);
        f.kdamonds = vec![environment::Kdamond {
            index: 0,
            operations: vec!["paddr".into()],
            actions: vec!["pageout".into()],
        }];
        let ctx = Context {
            timer: tsc(2.9e9),
            memory_working_set: Some(16 << 20),
            times_single_accesses: false,
        };
        let w = check(&f, &ctx);
        let codes: Vec<&str> = w.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(
            codes,
            [
                "numa-balancing",
                "damon",
                "thp-always",
                "thp-defrag",
                "governor",
                "tsc-frequency",
                "prefetchers",
                "fits-in-llc",
                "busy-machine"
            ]
        );
        assert!(w.iter().all(|w| !w.remedy.is_empty()));
    }

    /// A working set within node 2's 64 MiB memory-side cache warns when the pages are on
    /// node 2, not when they are elsewhere or the working set is larger.
    #[test]
    fn a_working_set_within_a_memory_side_cache_measures_the_cache() {
        let cache = |size: u64| MemorySideCache {
            level: 1,
            size_bytes: size,
            line_bytes: 64,
            indexing: "direct-mapped".into(),
            write_policy: "write-back".into(),
        };
        let caches = [(2, cache(64 << 20)), (0, cache(1 << 20))];
        let on = |node: u32| std::collections::BTreeMap::from([(node, 512u64)]);
        let w = within_memory_side_cache(16 << 20, &on(2), &caches).unwrap();
        assert_eq!(w.code, "memory-side-cache");
        assert_eq!(
            w.message,
            "the working set (16MiB) fits node 2's 64MiB L1 memory-side cache (64B lines, direct-mapped, write-back): this measures the cache, not the memory behind it"
        );
        assert!(within_memory_side_cache(64 << 20, &on(2), &caches).is_some());
        assert!(within_memory_side_cache(256 << 20, &on(2), &caches).is_none());
        assert!(within_memory_side_cache(16 << 20, &on(1), &caches).is_none());
        let none_there = std::collections::BTreeMap::from([(2u32, 0u64)]);
        assert!(within_memory_side_cache(16 << 20, &none_there, &caches).is_none());
    }

    #[test]
    fn the_footprint_decides_whether_it_fits_in_the_llc() {
        // quiet() has a 32 MiB LLC. A random stream touches its whole per-thread region, so
        // the bandwidth command passes that region as the footprint: a small one warns.
        let ctx = |ws: u64| Context {
            timer: None,
            memory_working_set: Some(ws),
            times_single_accesses: false,
        };
        assert_eq!(codes(&quiet(), &ctx(1 << 20)), ["fits-in-llc"]);
        assert_eq!(codes(&quiet(), &ctx(32 << 20)), ["fits-in-llc"]);
        assert!(codes(&quiet(), &ctx(1 << 30)).is_empty());
    }

    #[test]
    fn coarse_timer_matters_only_for_single_accesses() {
        let mut t = tsc(2.6e9).unwrap();
        t.resolution_ns = 10.0;
        let mut ctx = Context {
            timer: Some(t),
            memory_working_set: None,
            times_single_accesses: true,
        };
        assert_eq!(codes(&quiet(), &ctx), ["timer-resolution"]);
        ctx.times_single_accesses = false;
        assert!(codes(&quiet(), &ctx).is_empty());
    }

    #[test]
    fn vm_like_facts() {
        let mut f = quiet();
        f.governors.clear();
        f.declared_tsc_hz = None;
        f.thp_enabled = None;
        let ctx = Context {
            timer: tsc(2.6e9),
            memory_working_set: None,
            times_single_accesses: false,
        };
        assert_eq!(
            codes(&f, &ctx),
            [
                "thp-unknown",
                "governor-unknown",
                "tsc-frequency-undeclared"
            ]
        );
        let ctx = Context {
            timer: Some(TimerInfo {
                source: TimerSource::ClockGettime,
                hz: 1e9,
                invariant_tsc: false,
                overhead_ns: 30.0,
                resolution_ns: 1.0,
            }),
            memory_working_set: None,
            times_single_accesses: false,
        };
        assert!(codes(&quiet(), &ctx).contains(&"tsc-unusable".to_string()));
    }
}
