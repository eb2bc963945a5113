//! `pmscope info` for a person: the same facts as the JSON object, in sections.

use super::{Info, opt};
use pmscope_core::cpulist::format_list;
use pmscope_core::units::Bytes;

/// Renders every section.
pub fn render(i: &Info) -> String {
    let mut o = String::new();
    for section in [
        cpu,
        caches_and_tsc,
        numa,
        pages,
        dax,
        super::cxl_section::print,
        platform,
    ] {
        section(&mut o, i);
    }
    o
}

/// The CPU: model, vendor, CPUs, the features CPUID reports.
fn cpu(o: &mut String, i: &Info) {
    say!(o; "kernel        {} ({})", i.kernel, i.hostname);
    say!(o; "cpu           {} [{}], CPUs {}",
        i.cpu.model,
        i.cpu.vendor,
        format_list(&i.cpu.cpus_online)
    );
    say!(o; "features      {}", i.cpu.feature_names.join(" "));
    // From CPUID, as every check before an instruction runs.
    let missing = &i.cpu.absent_features;
    if !missing.is_empty() {
        say!(o; "absent        {}", missing.join(" "));
    }
}

/// Caches and the time-stamp counter.
fn caches_and_tsc(o: &mut String, i: &Info) {
    for c in &i.cpu.caches {
        say!(o; "cache         L{} {:<11} {:>9}  shared by CPUs {}",
            c.level,
            c.kind,
            Bytes(c.size_bytes).to_string(),
            c.shared_cpu_list
        );
    }
    say!(o; "tsc           {}invariant, calibrated {:.4} GHz against CLOCK_MONOTONIC_RAW, declared {}, timer {:?} (overhead {:.1} ns, resolution {:.1} ns)",
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
}

/// NUMA nodes, with HMAT figures and memory tiers where the firmware gives them.
fn numa(o: &mut String, i: &Info) {
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
        say!(o; "numa node {}   {kind}, CPUs [{}], {} ({} free), distances {:?}{hmat}{tier}",
            n.node.id,
            format_list(&n.node.cpus),
            Bytes(n.node.mem_total_bytes).human(),
            Bytes(n.node.mem_free_bytes).human(),
            n.node.distances
        );
        for c in &n.node.memory_side_caches {
            say!(o; "              {} in front of node {}: a working set within it measures the cache",
                c.describe(|b| Bytes(b).to_string()),
                n.node.id
            );
        }
    }
}

/// Huge-page pools and transparent huge pages.
fn pages(o: &mut String, i: &Info) {
    for p in &i.hugepages {
        say!(o; "hugepages     {:>6}: {} total, {} free, {} reserved",
            Bytes(p.page_bytes).to_string(),
            p.total,
            p.free,
            p.reserved
        );
    }
    say!(o; "thp           enabled={} defrag={} shmem_enabled={}",
        opt(i.thp.enabled.as_ref()),
        opt(i.thp.defrag.as_ref()),
        opt(i.thp.shmem_enabled.as_ref())
    );
}

/// DAX devices and mounts, pmem block devices and regions.
fn dax(o: &mut String, i: &Info) {
    if i.dax_devices.is_empty() {
        say!(o; "dax devices   none");
    }
    for d in &i.dax_devices {
        say!(o; "dax device    {}: {}, align {}, node {}, driver {}",
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
        say!(o; "dax mounts    none");
    }
    for m in &i.dax_mounts {
        say!(o; "dax mount     {} on {} ({}, {})",
            m.source,
            m.target,
            m.fstype,
            m.options
        );
    }
    if i.pmem_block_devices.is_empty() {
        say!(o; "pmem devices  none");
    }
    for b in &i.pmem_block_devices {
        say!(o; "pmem device   /dev/{}: {}{}",
            b.name,
            Bytes(b.size_bytes).human(),
            if b.dax { ", DAX-capable" } else { "" }
        );
    }
    if i.pmem_regions.is_empty() {
        say!(o; "pmem regions  none");
    }
    for r in &i.pmem_regions {
        say!(o; "pmem region   {} ({}{})",
            r.describe(),
            Bytes(r.size_bytes).human(),
            r.numa_node
                .map(|n| format!(", node {n}"))
                .unwrap_or_default()
        );
    }
}

/// What changes every figure without being memory: SMT, the core clock, mitigations, the command line, tools, perf counters, prefetchers.
fn platform(o: &mut String, i: &Info) {
    let p = &i.platform;
    say!(o; "smt           {}",
        match p.smt_active {
            Some(true) => "active (sibling threads share each core's caches and ports)",
            Some(false) => "inactive",
            None => "unknown (the kernel does not say)",
        }
    );
    say!(o; "core clock    {}",
        match (p.observed_core_ghz, &p.core_clock_unmeasurable) {
            (Some(g), _) => format!(
                "{g:.2} GHz observed (dependent register multiplies against CLOCK_MONOTONIC_RAW, within 0.2-3x of the TSC)"
            ),
            (None, Some(why)) => format!("unmeasurable: {why}"),
            (None, None) => "not measured".into(),
        }
    );
    say!(o; "mitigations   {}",
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
    say!(o; "cmdline       {}", p.kernel_cmdline);
    say!(o; "tools         ndctl {}, daxctl {}",
        i.tools.ndctl.as_deref().unwrap_or("not installed"),
        i.tools.daxctl.as_deref().unwrap_or("not installed")
    );
    say!(o; "perf counters {}",
        if i.perf_counters.available {
            "available".to_string()
        } else {
            format!(
                "unavailable ({})",
                i.perf_counters.reason.as_deref().unwrap_or("?")
            )
        }
    );
    say!(o; "prefetchers   {} ({})",
        i.prefetchers.state,
        i.prefetchers.detail
    );
}
