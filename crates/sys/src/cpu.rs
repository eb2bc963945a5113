//! What the CPU can do: CPUID feature bits for the persistence instructions, the brand
//! string, the TSC's properties, and the cache hierarchy (from sysfs).
#![allow(unsafe_code)]

use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};

/// The instruction-set facts pmscope's kernels and persist strategies depend on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuFeatures {
    /// `clflush` (CPUID.01H:EDX[19]).
    pub clflush: bool,
    /// `clflushopt` (CPUID.(EAX=07H,ECX=0):EBX[23]).
    pub clflushopt: bool,
    /// `clwb` (CPUID.(EAX=07H,ECX=0):EBX[24]).
    pub clwb: bool,
    /// `movnti`, the SSE2 non-temporal 8-byte store (CPUID.01H:EDX[26]).
    pub movnti: bool,
    /// `movntdqa`, the SSE4.1 non-temporal load (CPUID.01H:ECX[19]).
    pub movntdqa: bool,
    /// AVX (and OS support for its state): 32-byte `vmovntdq`.
    pub avx: bool,
    /// AVX2: 32-byte `vmovntdqa`.
    pub avx2: bool,
    /// AVX-512F (and OS support for its state): 64-byte `vmovntdq`.
    pub avx512f: bool,
    /// `movdir64b` (CPUID.(EAX=07H,ECX=0):ECX[28]).
    pub movdir64b: bool,
    /// `sfence` / `mfence` (SSE / SSE2; always present on x86-64).
    pub fences: bool,
    /// `rdtscp` (CPUID.80000001H:EDX[27]).
    pub rdtscp: bool,
    /// Invariant TSC (CPUID.80000007H:EDX[8]): constant rate across P-, C- and T-states.
    pub invariant_tsc: bool,
    /// Running under a hypervisor (CPUID.01H:ECX[31]).
    pub hypervisor: bool,
    /// Enhanced `rep movsb` / `rep stosb` (ERMS, CPUID.(EAX=07H,ECX=0):EBX[9]): the string
    /// instructions move whole lines, what glibc's memcpy and memset use at large sizes.
    /// Absent in records made before it was detected.
    #[serde(default)]
    pub erms: bool,
    /// Fast short `rep movsb` (FSRM, CPUID.(EAX=07H,ECX=0):EDX[4]).
    #[serde(default)]
    pub fsrm: bool,
}

/// One CPUID feature an instruction needs, as kernels, persist strategies and the op
/// catalog name it; [`CpuFeatures::has`] answers whether this CPU has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// `clflush`.
    Clflush,
    /// `clflushopt`.
    Clflushopt,
    /// `clwb`.
    Clwb,
    /// `movnti` (SSE2).
    Movnti,
    /// `movntdqa` (SSE4.1).
    Movntdqa,
    /// AVX.
    Avx,
    /// AVX2.
    Avx2,
    /// AVX-512F.
    Avx512f,
    /// `rdtscp`.
    Rdtscp,
    /// Enhanced `rep movsb` / `rep stosb`.
    Erms,
}

impl Feature {
    /// Every feature, in `pmscope info`'s order.
    pub const ALL: [Feature; 10] = [
        Feature::Clflush,
        Feature::Clflushopt,
        Feature::Clwb,
        Feature::Movnti,
        Feature::Movntdqa,
        Feature::Avx,
        Feature::Avx2,
        Feature::Avx512f,
        Feature::Rdtscp,
        Feature::Erms,
    ];

    /// The CPUID bit that reports it (AVX and AVX-512F also need the OS to save their
    /// registers, XCR0), for messages that say why an instruction is unavailable.
    pub fn cpuid(self) -> &'static str {
        match self {
            Feature::Clflush => "CPUID.01H:EDX[19]",
            Feature::Clflushopt => "CPUID.(EAX=07H,ECX=0):EBX[23]",
            Feature::Clwb => "CPUID.(EAX=07H,ECX=0):EBX[24]",
            Feature::Movnti => "CPUID.01H:EDX[26]",
            Feature::Movntdqa => "CPUID.01H:ECX[19]",
            Feature::Avx => "CPUID.01H:ECX[28]",
            Feature::Avx2 => "CPUID.(EAX=07H,ECX=0):EBX[5]",
            Feature::Avx512f => "CPUID.(EAX=07H,ECX=0):EBX[16]",
            Feature::Rdtscp => "CPUID.80000001H:EDX[27]",
            Feature::Erms => "CPUID.(EAX=07H,ECX=0):EBX[9]",
        }
    }

    /// The name `pmscope info` lists it by.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Clflush => "clflush",
            Feature::Clflushopt => "clflushopt",
            Feature::Clwb => "clwb",
            Feature::Movnti => "movnti",
            Feature::Movntdqa => "movntdqa",
            Feature::Avx => "avx",
            Feature::Avx2 => "avx2",
            Feature::Avx512f => "avx512f",
            Feature::Rdtscp => "rdtscp",
            Feature::Erms => "erms",
        }
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(target_arch = "x86_64")]
fn cpuid(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    // SAFETY: CPUID is available on every x86-64 CPU and only reads processor state.
    #[allow(unused_unsafe)]
    let r = unsafe { core::arch::x86_64::__cpuid_count(leaf, sub) };
    (r.eax, r.ebx, r.ecx, r.edx)
}

#[cfg(target_arch = "x86_64")]
fn max_leaf(base: u32) -> u32 {
    cpuid(base, 0).0
}

impl CpuFeatures {
    /// Reads the running CPU's features.
    #[cfg(target_arch = "x86_64")]
    pub fn detect() -> CpuFeatures {
        let bit = |v: u32, b: u32| v & (1 << b) != 0;
        let (_, _, ecx1, edx1) = cpuid(1, 0);
        let (_, ebx7, ecx7, edx7) = if max_leaf(0) >= 7 {
            cpuid(7, 0)
        } else {
            (0, 0, 0, 0)
        };
        let ext = max_leaf(0x8000_0000);
        let edx81 = if ext >= 0x8000_0001 {
            cpuid(0x8000_0001, 0).3
        } else {
            0
        };
        let edx87 = if ext >= 0x8000_0007 {
            cpuid(0x8000_0007, 0).3
        } else {
            0
        };
        CpuFeatures {
            clflush: bit(edx1, 19),
            clflushopt: bit(ebx7, 23),
            clwb: bit(ebx7, 24),
            movnti: bit(edx1, 26),
            movntdqa: bit(ecx1, 19),
            // The std macros also check XCR0, i.e. that the OS saves the wide registers.
            avx: std::arch::is_x86_feature_detected!("avx"),
            avx2: std::arch::is_x86_feature_detected!("avx2"),
            avx512f: std::arch::is_x86_feature_detected!("avx512f"),
            movdir64b: bit(ecx7, 28),
            fences: true,
            rdtscp: bit(edx81, 27),
            invariant_tsc: bit(edx87, 8),
            hypervisor: bit(ecx1, 31),
            erms: bit(ebx7, 9),
            fsrm: bit(edx7, 4),
        }
    }

    /// What every x86-64 CPU has (`clflush`, SSE2's `movnti`, the fences) and nothing
    /// more: the oldest CPU pmscope runs on, for tests of fallbacks on any machine.
    pub fn baseline() -> CpuFeatures {
        CpuFeatures {
            clflush: true,
            movnti: true,
            fences: true,
            ..CpuFeatures::default()
        }
    }

    /// No features at all (non-x86 hosts).
    #[cfg(not(target_arch = "x86_64"))]
    pub fn detect() -> CpuFeatures {
        CpuFeatures::default()
    }

    /// The names of the features present, in a fixed order, as `pmscope info` prints them.
    pub fn names(&self) -> Vec<&'static str> {
        let all = [
            (self.clflush, "clflush"),
            (self.clflushopt, "clflushopt"),
            (self.clwb, "clwb"),
            (self.movnti, "movnti"),
            (self.movntdqa, "movntdqa"),
            (self.avx, "avx"),
            (self.avx2, "avx2"),
            (self.avx512f, "avx512f"),
            (self.movdir64b, "movdir64b"),
            (self.fences, "sfence/mfence"),
            (self.rdtscp, "rdtscp"),
            (self.invariant_tsc, "invariant-tsc"),
            (self.hypervisor, "hypervisor"),
            (self.erms, "erms"),
            (self.fsrm, "fsrm"),
        ];
        all.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect()
    }

    /// The features of [`Feature::ALL`] this CPU lacks, plus `movdir64b`: what `pmscope
    /// info` lists as absent.
    pub fn absent(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Feature::ALL
            .into_iter()
            .filter(|&x| !self.has(x))
            .map(Feature::name)
            .collect();
        if !self.movdir64b {
            out.push("movdir64b");
        }
        out
    }

    /// Whether the CPU has `feature`.
    pub fn has(&self, feature: Feature) -> bool {
        match feature {
            Feature::Clflush => self.clflush,
            Feature::Clflushopt => self.clflushopt,
            Feature::Clwb => self.clwb,
            Feature::Movnti => self.movnti,
            Feature::Movntdqa => self.movntdqa,
            Feature::Avx => self.avx,
            Feature::Avx2 => self.avx2,
            Feature::Avx512f => self.avx512f,
            Feature::Rdtscp => self.rdtscp,
            Feature::Erms => self.erms,
        }
    }

    /// The widest streaming (non-temporal) store the CPU offers, in bytes.
    pub fn widest_ntstore(&self) -> usize {
        if self.avx512f {
            64
        } else if self.avx {
            32
        } else {
            16
        }
    }
}

/// The CPU brand string (CPUID 80000002H-80000004H), e.g. `AMD EPYC 9R14`.
#[cfg(target_arch = "x86_64")]
pub fn brand_string() -> String {
    if max_leaf(0x8000_0000) < 0x8000_0004 {
        return vendor();
    }
    let mut bytes = Vec::with_capacity(48);
    for leaf in 0x8000_0002..=0x8000_0004u32 {
        let (a, b, c, d) = cpuid(leaf, 0);
        for r in [a, b, c, d] {
            bytes.extend_from_slice(&r.to_le_bytes());
        }
    }
    String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .to_string()
}

/// The CPU vendor string (`GenuineIntel`, `AuthenticAMD`).
#[cfg(target_arch = "x86_64")]
pub fn vendor() -> String {
    let (_, b, c, d) = cpuid(0, 0);
    let mut bytes = Vec::with_capacity(12);
    for r in [b, d, c] {
        bytes.extend_from_slice(&r.to_le_bytes());
    }
    String::from_utf8_lossy(&bytes).to_string()
}

/// The TSC frequency the CPU or hypervisor declares, in Hz, and where it came from:
/// CPUID 15H (Intel: crystal ratio), or the hypervisor timing leaf 40000010H (KVM, VMware).
/// `None` when neither declares it; pmscope then relies on calibration alone.
#[cfg(target_arch = "x86_64")]
pub fn declared_tsc_hz() -> Option<(f64, &'static str)> {
    if max_leaf(0) >= 0x15 {
        let (den, num, crystal, _) = cpuid(0x15, 0);
        if den != 0 && num != 0 && crystal != 0 {
            return Some((crystal as f64 * num as f64 / den as f64, "cpuid-15h"));
        }
    }
    let (_, _, ecx1, _) = cpuid(1, 0);
    if ecx1 & (1 << 31) != 0 && max_leaf(0x4000_0000) >= 0x4000_0010 {
        let khz = cpuid(0x4000_0010, 0).0;
        if khz != 0 {
            return Some((khz as f64 * 1000.0, "hypervisor-leaf-40000010h"));
        }
    }
    None
}

/// One cache of the hierarchy as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// 1, 2, 3 ...
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size of one instance in bytes.
    pub size_bytes: u64,
    /// CPUs sharing one instance (`0-1`).
    pub shared_cpu_list: String,
    /// Line size in bytes.
    pub line_bytes: u64,
}

/// The caches seen by CPU `cpu` (`/sys/devices/system/cpu/cpuN/cache/index*`), by level.
pub fn caches(root: &SysRoot, cpu: usize) -> Vec<Cache> {
    let base = format!("sys/devices/system/cpu/cpu{cpu}/cache");
    let mut out: Vec<Cache> = root
        .list(&base)
        .into_iter()
        .filter(|d| d.starts_with("index"))
        .filter_map(|d| {
            let dir = format!("{base}/{d}");
            Some(Cache {
                level: root.read_u64(&format!("{dir}/level"))? as u32,
                kind: root.read_trim(&format!("{dir}/type"))?,
                size_bytes: parse_cache_size(&root.read_trim(&format!("{dir}/size"))?)?,
                shared_cpu_list: root
                    .read_trim(&format!("{dir}/shared_cpu_list"))
                    .unwrap_or_default(),
                line_bytes: root
                    .read_u64(&format!("{dir}/coherency_line_size"))
                    .unwrap_or(64),
            })
        })
        .collect();
    out.sort_by_key(|c| (c.level, c.kind.clone()));
    out
}

/// The last-level cache's size, the largest data/unified cache.
pub fn last_level_cache_bytes(caches: &[Cache]) -> Option<u64> {
    caches
        .iter()
        .filter(|c| c.kind != "Instruction")
        .max_by_key(|c| (c.level, c.size_bytes))
        .map(|c| c.size_bytes)
}

/// sysfs writes cache sizes as `32K`, `1024K`, `32768K`.
fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1024),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_this_machines_basics() {
        let f = CpuFeatures::detect();
        // Every x86-64 CPU has these; the rest depends on the machine and is shown by
        // `pmscope info` (the CI machine asserts clwb there).
        assert!(f.clflush && f.movnti && f.fences);
        assert!(!brand_string().is_empty());
        assert!(["GenuineIntel", "AuthenticAMD"].contains(&vendor().as_str()) || f.hypervisor);
    }

    #[test]
    fn features_agree_with_proc_cpuinfo() {
        // Two independent sources: our CPUID decoding and the kernel's flag list.
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        let flags: Vec<&str> = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap()
            .split_whitespace()
            .collect();
        let f = CpuFeatures::detect();
        assert_eq!(f.clwb, flags.contains(&"clwb"));
        assert_eq!(f.clflushopt, flags.contains(&"clflushopt"));
        assert_eq!(f.avx2, flags.contains(&"avx2"));
        assert_eq!(f.avx512f, flags.contains(&"avx512f"));
        assert_eq!(f.rdtscp, flags.contains(&"rdtscp"));
        assert_eq!(f.erms, flags.contains(&"erms"));
        assert_eq!(f.fsrm, flags.contains(&"fsrm"));
        assert_eq!(
            f.invariant_tsc,
            flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
        );
    }

    #[test]
    fn the_baseline_lacks_every_newer_instruction() {
        let absent = CpuFeatures::baseline().absent();
        for name in [
            "clflushopt",
            "clwb",
            "avx",
            "avx2",
            "avx512f",
            "rdtscp",
            "erms",
            "movdir64b",
        ] {
            assert!(absent.contains(&name), "{name} in {absent:?}");
        }
        assert!(!absent.contains(&"clflush") && !absent.contains(&"movnti"));
        assert_eq!(Feature::Clwb.cpuid(), "CPUID.(EAX=07H,ECX=0):EBX[24]");
    }

    #[test]
    fn parses_cache_sizes() {
        assert_eq!(parse_cache_size("32K"), Some(32 << 10));
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("x"), None);
    }
}
