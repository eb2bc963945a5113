//! Facts about the machine that silently distort memory measurements: automatic NUMA
//! balancing, the CPU frequency governor, the load average, the hardware prefetchers, plus
//! the identity facts every record repeats (kernel, host name, online CPUs, tools present).
//! Judging these facts (which are warnings, and their remedies) is `pmscope-runner`'s
//! `sanity` module; this one only reads.

use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};

/// `/proc/sys/kernel/numa_balancing` (0 off, 1 on, 2 memory tiering); `None` if absent.
pub fn numa_balancing(root: &SysRoot) -> Option<u64> {
    root.read_u64("proc/sys/kernel/numa_balancing")
}

/// The scaling governor of each CPU that has cpufreq, as (cpu, governor).
pub fn governors(root: &SysRoot, cpus: &[usize]) -> Vec<(usize, String)> {
    cpus.iter()
        .filter_map(|&c| {
            let g = root.read_trim(&format!(
                "sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
            ))?;
            Some((c, g))
        })
        .collect()
}

/// The 1-minute load average.
pub fn load_average(root: &SysRoot) -> Option<f64> {
    root.read("proc/loadavg")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Ticks (USER_HZ, see `rusage::clock_ticks_per_second`) the hypervisor has stolen from
/// `cpus` since boot, summed: the 8th field of their `cpuN` lines in `/proc/stat`. `None`
/// when a CPU has no line or the kernel does not count steal (bare metal counts 0).
pub fn steal_ticks(root: &SysRoot, cpus: &[usize]) -> Option<u64> {
    let stat = root.read("proc/stat")?;
    let mut total = 0;
    for &cpu in cpus {
        let label = format!("cpu{cpu}");
        let line = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(label.as_str()))?;
        total += line.split_whitespace().nth(8)?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Ticks (USER_HZ) every CPU of the machine has spent running something since boot: the
/// user, nice, system, irq and softirq fields of the aggregate `cpu` line of `/proc/stat`
/// (idle, iowait and steal are not running; guest time is already inside user). `None`
/// when the line is missing or short.
pub fn busy_ticks(root: &SysRoot) -> Option<u64> {
    let stat = root.read("proc/stat")?;
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq ...
    let busy = [0, 1, 2, 5, 6].iter().map(|&i| fields.get(i).copied());
    busy.sum()
}

/// Online CPUs (`/sys/devices/system/cpu/online`).
pub fn online_cpus(root: &SysRoot) -> Vec<usize> {
    root.read("sys/devices/system/cpu/online")
        .and_then(|s| pmscope_core::cpulist::parse_list(&s).ok())
        .unwrap_or_default()
}

/// Kernel release, `uname -r`.
pub fn kernel_release(root: &SysRoot) -> String {
    root.read_trim("proc/sys/kernel/osrelease")
        .unwrap_or_default()
}

/// Host name.
pub fn hostname(root: &SysRoot) -> String {
    root.read_trim("proc/sys/kernel/hostname")
        .unwrap_or_default()
}

/// Whether SMT (hyper-threading) is active (`/sys/devices/system/cpu/smt/active`); `None`
/// where the kernel does not say. A sibling thread shares the core's caches and load ports.
pub fn smt_active(root: &SysRoot) -> Option<bool> {
    root.read_trim("sys/devices/system/cpu/smt/active")
        .map(|s| s == "1")
}

/// The kernel command line (`/proc/cmdline`): `mitigations=off`, `memmap=`, hugepage
/// reservations and `isolcpus` all change what is measured.
pub fn kernel_cmdline(root: &SysRoot) -> String {
    root.read_trim("proc/cmdline").unwrap_or_default()
}

/// The CPU vulnerabilities the kernel mitigates, by name
/// (`/sys/devices/system/cpu/vulnerabilities/*`), leaving out those the CPU is not affected
/// by: mitigations (retpolines, IBRS, page-table isolation) slow system calls and faults.
pub fn mitigations(root: &SysRoot) -> std::collections::BTreeMap<String, String> {
    let dir = "sys/devices/system/cpu/vulnerabilities";
    root.list(dir)
        .into_iter()
        .filter_map(|name| {
            let state = root.read_trim(&format!("{dir}/{name}"))?;
            (state != "Not affected").then_some((name, state))
        })
        .collect()
}

/// A running DAMON worker (`/sys/kernel/mm/damon/admin/kdamonds/N`): which address space it
/// monitors (`vaddr`, `paddr`) and the actions of its schemes (`pageout`, `hugepage`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kdamond {
    /// Its index.
    pub index: usize,
    /// Operations set of each context (`paddr` monitors all physical memory).
    pub operations: Vec<String>,
    /// Actions of the schemes it applies.
    pub actions: Vec<String>,
}

/// The DAMON workers that are on. DAMON samples and clears accessed bits while it monitors,
/// and its schemes may page out or (de)promote the memory being measured.
pub fn running_kdamonds(root: &SysRoot) -> Vec<Kdamond> {
    let base = "sys/kernel/mm/damon/admin/kdamonds";
    root.list(base)
        .into_iter()
        .filter_map(|d| d.parse::<usize>().ok())
        .filter(|i| root.read_trim(&format!("{base}/{i}/state")).as_deref() == Some("on"))
        .map(|i| {
            let ctx_base = format!("{base}/{i}/contexts");
            let contexts: Vec<String> = root
                .list(&ctx_base)
                .into_iter()
                .filter(|c| c.parse::<usize>().is_ok())
                .collect();
            let mut operations = Vec::new();
            let mut actions = Vec::new();
            for c in &contexts {
                if let Some(op) = root.read_trim(&format!("{ctx_base}/{c}/operations")) {
                    operations.push(op);
                }
                let sch = format!("{ctx_base}/{c}/schemes");
                for sidx in root
                    .list(&sch)
                    .into_iter()
                    .filter(|x| x.parse::<usize>().is_ok())
                {
                    if let Some(a) = root.read_trim(&format!("{sch}/{sidx}/action")) {
                        actions.push(a);
                    }
                }
            }
            Kdamond {
                index: i,
                operations,
                actions,
            }
        })
        .collect()
}

/// Whether an executable of this name is on `PATH` (or in /sbin, /usr/sbin).
pub fn tool_installed(name: &str) -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// What is known of the hardware prefetchers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefetchers {
    /// `on`, `off`, `partly off` or `unknown`.
    pub state: String,
    /// How it was found, or why it could not be.
    pub detail: String,
}

/// Reads the prefetcher control MSR of CPU 0 through `/dev/cpu/0/msr` where the msr driver
/// is loaded and we may read it: Intel MSR 0x1A4 (MISC_FEATURE_CONTROL, bits 0-3 disable the
/// L2 stream, L2 adjacent-line, L1 streamer and L1 IP prefetchers), AMD MSR 0xC0000108
/// (PrefetchControl, Zen 3 and later). Under a hypervisor the MSRs are the hypervisor's
/// fiction at best, so the answer there is "unknown".
pub fn prefetchers(vendor: &str, hypervisor: bool) -> Prefetchers {
    let unknown = |detail: &str| Prefetchers {
        state: "unknown".into(),
        detail: detail.into(),
    };
    if hypervisor {
        return unknown("running under a hypervisor: its prefetcher MSRs are not the host's");
    }
    let Some((msr, mask)) = crate::hw_prefetchers::control_msr(vendor) else {
        return unknown("unknown CPU vendor");
    };
    let file = match std::fs::File::open("/dev/cpu/0/msr") {
        Ok(f) => f,
        Err(e) => {
            return unknown(&format!(
                "cannot read /dev/cpu/0/msr ({e}); `modprobe msr` as root makes it readable"
            ));
        }
    };
    let mut buf = [0u8; 8];
    use std::os::unix::fs::FileExt;
    match file.read_exact_at(&mut buf, msr) {
        Ok(()) => {
            let v = u64::from_le_bytes(buf) & mask;
            let state = if v == 0 {
                "on"
            } else if v == mask {
                "off"
            } else {
                "partly off"
            };
            Prefetchers {
                state: state.into(),
                detail: format!("MSR {msr:#x} = {v:#x}"),
            }
        }
        Err(e) => unknown(&format!("reading MSR {msr:#x} failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_field_of_each_cpu_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu  9 9 9 9 9 9 9 999 0 0\ncpu0 1 2 3 4 5 6 7 40 0 0\ncpu1 1 2 3 4 5 6 7 2 0 0\ncpu10 0 0 0 0 0 0 0 500 0 0\nintr 1\n",
        )
        .unwrap();
        let root = SysRoot::at(dir.path());
        assert_eq!(steal_ticks(&root, &[0]), Some(40));
        assert_eq!(
            steal_ticks(&root, &[0, 1]),
            Some(42),
            "summed over the CPUs"
        );
        assert_eq!(steal_ticks(&root, &[1]), Some(2), "cpu1 is not cpu10");
        assert_eq!(steal_ticks(&root, &[3]), None, "no line: unknown, not zero");
        assert_eq!(steal_ticks(&SysRoot::at("/nonexistent"), &[0]), None);
    }

    /// Busy is user + nice + system + irq + softirq of the aggregate line; idle, iowait and
    /// steal are not, and a per-CPU line is not the aggregate.
    #[test]
    fn busy_ticks_from_a_fake_stat() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/stat"),
            "cpu0 1 1 1 1 1 1 1 1 0 0\ncpu  100 20 30 4000 500 6 7 800 90 0\nintr 1\n",
        )
        .unwrap();
        let root = SysRoot::at(dir.path());
        assert_eq!(busy_ticks(&root), Some(100 + 20 + 30 + 6 + 7));
        std::fs::write(dir.path().join("proc/stat"), "cpu  100 20 30\n").unwrap();
        assert_eq!(
            busy_ticks(&root),
            None,
            "a short line is unknown, not a count"
        );
        assert_eq!(busy_ticks(&SysRoot::at("/nonexistent")), None);
    }

    #[test]
    fn kdamonds_from_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("sys/kernel/mm/damon/admin/kdamonds");
        std::fs::create_dir_all(k.join("0/contexts/0/schemes/0")).unwrap();
        std::fs::create_dir_all(k.join("1/contexts/0")).unwrap();
        std::fs::write(k.join("nr_kdamonds"), "2\n").unwrap();
        std::fs::write(k.join("0/state"), "on\n").unwrap();
        std::fs::write(k.join("1/state"), "off\n").unwrap();
        std::fs::write(k.join("0/contexts/0/operations"), "paddr\n").unwrap();
        std::fs::write(k.join("0/contexts/0/schemes/0/action"), "pageout\n").unwrap();
        let found = running_kdamonds(&SysRoot::at(dir.path()));
        assert_eq!(
            found,
            vec![Kdamond {
                index: 0,
                operations: vec!["paddr".into()],
                actions: vec!["pageout".into()]
            }]
        );
    }

    #[test]
    fn host_facts() {
        let r = SysRoot::at("/");
        assert!(!kernel_release(&r).is_empty());
        assert!(!online_cpus(&r).is_empty());
        assert!(load_average(&r).is_some());
        assert!(tool_installed("sh").is_some());
        assert!(tool_installed("surely-not-a-tool-xyz").is_none());
        assert_eq!(prefetchers("GenuineIntel", true).state, "unknown");
    }
}

#[cfg(test)]
mod platform_tests {
    use super::*;

    #[test]
    fn smt_cmdline_and_mitigations_from_a_fake_tree() {
        let t = tempfile::tempdir().unwrap();
        let w = |rel: &str, v: &str| {
            let p = t.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        let root = SysRoot::at(t.path());
        assert_eq!(smt_active(&root), None);
        assert_eq!(kernel_cmdline(&root), "");
        assert!(mitigations(&root).is_empty());
        w("sys/devices/system/cpu/smt/active", "0\n");
        w(
            "proc/cmdline",
            "console=ttyS0 memmap=512M!512M mitigations=auto\n",
        );
        let v = "sys/devices/system/cpu/vulnerabilities";
        w(&format!("{v}/meltdown"), "Not affected\n");
        w(
            &format!("{v}/spectre_v2"),
            "Mitigation: Retpolines; IBPB: conditional\n",
        );
        w(
            &format!("{v}/mds"),
            "Vulnerable: Clear CPU buffers attempted, no microcode\n",
        );
        assert_eq!(smt_active(&root), Some(false));
        assert_eq!(
            kernel_cmdline(&root),
            "console=ttyS0 memmap=512M!512M mitigations=auto"
        );
        let m = mitigations(&root);
        assert_eq!(m.keys().collect::<Vec<_>>(), ["mds", "spectre_v2"]);
        assert_eq!(m["spectre_v2"], "Mitigation: Retpolines; IBPB: conditional");
        w("sys/devices/system/cpu/smt/active", "1\n");
        assert_eq!(smt_active(&root), Some(true));
    }
}
