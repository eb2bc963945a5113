//! Named persist strategies and the checked [`Persister`] that executes one.
#![allow(unsafe_code)]

use crate::LINE;
use crate::arch;
use pmscope_sys::cpu::CpuFeatures;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How a range of stores is made durable (see the crate docs for the instruction table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PersistStrategy {
    /// `clflush` each line.
    Clflush,
    /// `clflushopt` each line, then `sfence`.
    Clflushopt,
    /// `clwb` each line, then `sfence`.
    Clwb,
    /// Write with non-temporal stores, then `sfence`.
    Ntstore,
    /// Nothing: for eADR platforms, or to measure the unflushed baseline.
    None,
    /// `msync(MS_SYNC)`: the only way for a page-cache (non-DAX) file mapping.
    Msync,
}

/// Every strategy, in the order `--help` and the tests list them.
pub const STRATEGIES: [PersistStrategy; 6] = [
    PersistStrategy::Clflush,
    PersistStrategy::Clflushopt,
    PersistStrategy::Clwb,
    PersistStrategy::Ntstore,
    PersistStrategy::None,
    PersistStrategy::Msync,
];

impl PersistStrategy {
    /// The name the CLI accepts.
    pub fn name(self) -> &'static str {
        match self {
            PersistStrategy::Clflush => "clflush",
            PersistStrategy::Clflushopt => "clflushopt",
            PersistStrategy::Clwb => "clwb",
            PersistStrategy::Ntstore => "ntstore",
            PersistStrategy::None => "none",
            PersistStrategy::Msync => "msync",
        }
    }

    /// The CPU feature this strategy needs, if the CPU lacks it.
    pub fn missing_feature(self, f: &CpuFeatures) -> Option<&'static str> {
        match self {
            PersistStrategy::Clflush if !f.clflush => Some("clflush"),
            PersistStrategy::Clflushopt if !f.clflushopt => Some("clflushopt"),
            PersistStrategy::Clwb if !f.clwb => Some("clwb"),
            PersistStrategy::Ntstore if !f.movnti => Some("movnti (SSE2)"),
            _ => None,
        }
    }
}

impl fmt::Display for PersistStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a strategy name or choice was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    /// Not one of the names.
    #[error(
        "'{0}' is not a persist strategy: use one of clflush, clflushopt, clwb, ntstore, none, msync"
    )]
    Unknown(String),
    /// The CPU lacks the instruction.
    #[error(
        "persist strategy '{strategy}' needs {feature}, which this CPU does not have (see `pmscope info`)"
    )]
    MissingFeature {
        /// The strategy asked for.
        strategy: PersistStrategy,
        /// The missing CPUID feature.
        feature: &'static str,
    },
}

impl FromStr for PersistStrategy {
    type Err = Unsupported;
    fn from_str(s: &str) -> Result<Self, Unsupported> {
        STRATEGIES
            .into_iter()
            .find(|st| st.name() == s)
            .ok_or_else(|| Unsupported::Unknown(s.to_string()))
    }
}

/// A strategy checked against the CPU: the only way to reach the instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Persister {
    strategy: PersistStrategy,
    /// Widest non-temporal store (16, 32 or 64 bytes).
    nt_width: usize,
    /// The flush in-place persistence falls back to for `ntstore` (data already in cache).
    fallback: PersistStrategy,
}

impl Persister {
    /// Checks `strategy` against the CPU's features.
    pub fn new(strategy: PersistStrategy, f: &CpuFeatures) -> Result<Persister, Unsupported> {
        if let Some(feature) = strategy.missing_feature(f) {
            return Err(Unsupported::MissingFeature { strategy, feature });
        }
        let fallback = if f.clwb {
            PersistStrategy::Clwb
        } else if f.clflushopt {
            PersistStrategy::Clflushopt
        } else {
            PersistStrategy::Clflush
        };
        Ok(Persister {
            strategy,
            nt_width: f.widest_ntstore(),
            fallback,
        })
    }

    /// The strategy.
    pub fn strategy(&self) -> PersistStrategy {
        self.strategy
    }

    /// The write-back used for data written by ordinary stores under `ntstore`.
    pub fn fallback(&self) -> PersistStrategy {
        self.fallback
    }

    /// The width in bytes of the non-temporal stores `ntstore` uses, chosen from CPUID:
    /// 64 (AVX-512F), 32 (AVX) or 16 (SSE2 `movnti` pairs).
    pub fn nt_width(&self) -> usize {
        self.nt_width
    }

    /// Flushes every cache line overlapping `range` (no drain). For `ntstore`, whose data
    /// is written around the cache by [`copy_persist`](Self::copy_persist), data written
    /// by ordinary stores is flushed with the best available write-back, as PMDK does.
    #[inline]
    pub fn flush(&self, range: &[u8]) {
        let how = match self.strategy {
            PersistStrategy::Ntstore => self.fallback,
            s => s,
        };
        let start = range.as_ptr() as usize & !(LINE - 1);
        let end = range.as_ptr() as usize + range.len();
        let base = range.as_ptr() as usize;
        let mut line = start;
        while line < end {
            // A reference to a byte of `range` inside this line (the line's first byte may
            // precede the range).
            let byte = &range[line.max(base) - base];
            match how {
                PersistStrategy::Clflush => arch::clflush(byte),
                // SAFETY: `new` checked CPUID for clflushopt before allowing this strategy
                // (or chose it as the fallback only when present).
                PersistStrategy::Clflushopt => unsafe { arch::clflushopt(byte) },
                // SAFETY: as above, for clwb.
                PersistStrategy::Clwb => unsafe { arch::clwb(byte) },
                PersistStrategy::Ntstore | PersistStrategy::None | PersistStrategy::Msync => {}
            }
            line += LINE;
        }
    }

    /// Waits until the flushed lines are durable: `sfence` for the weakly ordered ones,
    /// `msync` of the pages for `msync`, nothing for `clflush` and `none`.
    #[inline]
    pub fn drain(&self, range: &[u8]) -> std::io::Result<()> {
        match self.strategy {
            PersistStrategy::Clflushopt | PersistStrategy::Clwb | PersistStrategy::Ntstore => {
                arch::sfence();
                Ok(())
            }
            // SAFETY: `range` is a live slice, so it lies inside one mapping.
            PersistStrategy::Msync => unsafe {
                pmscope_sys::mman::msync(range.as_ptr(), range.len())
            },
            PersistStrategy::Clflush | PersistStrategy::None => Ok(()),
        }
    }

    /// Flush then drain.
    #[inline]
    pub fn persist(&self, range: &[u8]) -> std::io::Result<()> {
        self.flush(range);
        self.drain(range)
    }

    /// Copies `src` into `dst` and makes it durable: non-temporal stores for `ntstore`
    /// (whole aligned lines; any unaligned head or tail is stored normally and flushed),
    /// ordinary stores plus flush for the others; then the drain.
    pub fn copy_persist(&self, dst: &mut [u8], src: &[u8]) -> std::io::Result<()> {
        assert_eq!(dst.len(), src.len(), "copy_persist: lengths differ");
        if self.strategy != PersistStrategy::Ntstore {
            dst.copy_from_slice(src);
            return self.persist(dst);
        }
        let base = dst.as_ptr() as usize;
        let head = (base.next_multiple_of(LINE) - base).min(dst.len());
        let body = (dst.len() - head) / LINE * LINE;
        let (d_head, rest) = dst.split_at_mut(head);
        let (d_body, d_tail) = rest.split_at_mut(body);
        let (s_head, rest) = src.split_at(head);
        let (s_body, s_tail) = rest.split_at(body);
        d_head.copy_from_slice(s_head);
        d_tail.copy_from_slice(s_tail);
        for (d, s) in d_body.chunks_exact_mut(LINE).zip(s_body.chunks_exact(LINE)) {
            let d: &mut [u8; 64] = d.try_into().expect("chunk of 64");
            let s: &[u8; 64] = s.try_into().expect("chunk of 64");
            // SAFETY: d is 64-byte aligned (after the head); nt_width was derived from
            // CPUID in `new`.
            unsafe { arch::ntstore_line(d, s, self.nt_width) };
        }
        self.flush(d_head);
        self.flush(d_tail);
        self.drain(dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
            .collect()
    }

    #[test]
    fn every_supported_strategy_keeps_data_intact() {
        let f = CpuFeatures::detect();
        for s in STRATEGIES {
            let p = match Persister::new(s, &f) {
                Ok(p) => p,
                Err(Unsupported::MissingFeature { .. }) => {
                    // Checked in `unsupported_is_an_error`; this machine lacks it.
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            // Unaligned start and odd length exercise head, body and tail.
            let mut buf = vec![0u8; 4096 + 128];
            let src = pattern(4000, s as u8);
            p.copy_persist(&mut buf[13..4013], &src).unwrap();
            assert_eq!(&buf[13..4013], &src[..], "{s}");
            assert!(buf[..13].iter().all(|&b| b == 0) && buf[4013..].iter().all(|&b| b == 0));
            buf[100] = 0xAB;
            p.persist(&buf[90..200]).unwrap();
            assert_eq!(buf[100], 0xAB, "{s}");
        }
    }

    #[test]
    fn unsupported_is_an_error() {
        let none = CpuFeatures::default();
        let e = Persister::new(PersistStrategy::Clwb, &none).unwrap_err();
        assert_eq!(
            e.to_string(),
            "persist strategy 'clwb' needs clwb, which this CPU does not have (see `pmscope info`)"
        );
        assert!(Persister::new(PersistStrategy::None, &none).is_ok());
        assert!(Persister::new(PersistStrategy::Msync, &none).is_ok());
    }

    #[test]
    fn names_round_trip() {
        for s in STRATEGIES {
            assert_eq!(s.name().parse::<PersistStrategy>().unwrap(), s);
        }
        assert!(matches!(
            "clwbx".parse::<PersistStrategy>(),
            Err(Unsupported::Unknown(_))
        ));
    }

    /// The CPUID dispatch on a CPU with AVX2 but no AVX-512, which is what the TCG lab
    /// guest offers (labvm README: clwb and clflushopt present, avx512* absent): ntstore must
    /// pick 32-byte streaming stores, and every flush instruction must really execute.
    mod needs_avx2_without_avx512 {
        use super::*;

        fn cpuinfo_flags() -> Vec<String> {
            let text = std::fs::read_to_string("/proc/cpuinfo").unwrap();
            let line = text.lines().find(|l| l.starts_with("flags")).unwrap();
            line.split_whitespace().map(str::to_string).collect()
        }

        #[test]
        #[ignore = "needs a CPU with AVX2 and without AVX-512 (the TCG lab guest): runs in the lab guest via .ci/labvm-stage"]
        fn ntstore_picks_32_byte_stores_and_every_strategy_executes() {
            let flags = cpuinfo_flags();
            let has = |f: &str| flags.iter().any(|x| x == f);
            assert!(
                has("avx2") && !has("avx512f"),
                "this test needs a CPU with AVX2 and without AVX-512F; /proc/cpuinfo says avx2={} avx512f={}",
                has("avx2"),
                has("avx512f")
            );
            // pmscope's CPUID decoding agrees with the kernel's flag list.
            let f = CpuFeatures::detect();
            for (name, ours) in [
                ("avx", f.avx),
                ("avx2", f.avx2),
                ("avx512f", f.avx512f),
                ("clwb", f.clwb),
                ("clflushopt", f.clflushopt),
                ("clflush", f.clflush),
            ] {
                assert_eq!(
                    ours,
                    has(name),
                    "CPUID and /proc/cpuinfo disagree on {name}"
                );
            }
            assert_eq!(f.widest_ntstore(), 32);
            let nt = Persister::new(PersistStrategy::Ntstore, &f).unwrap();
            assert_eq!(nt.nt_width(), 32, "AVX2 without AVX-512: 32-byte vmovntdq");
            // clwb and clflushopt exist here, so every strategy is accepted and executes
            // (an unsupported instruction would be SIGILL, not a failed assertion).
            for s in STRATEGIES {
                let p = Persister::new(s, &f).unwrap_or_else(|e| panic!("{s}: {e}"));
                let mut buf = vec![0u8; 8192 + 64];
                let src = pattern(8000, s as u8);
                p.copy_persist(&mut buf[7..8007], &src).unwrap();
                assert_eq!(&buf[7..8007], &src[..], "{s}");
                buf[4000] ^= 0xFF;
                p.persist(&buf[3000..5000]).unwrap();
            }
        }
    }

    #[test]
    fn narrow_ntstore_paths() {
        // Force each non-temporal width this CPU supports, not only the widest.
        let f = CpuFeatures::detect();
        for (width, ok) in [(16, true), (32, f.avx), (64, f.avx512f)] {
            if !ok {
                continue;
            }
            let p = Persister {
                strategy: PersistStrategy::Ntstore,
                nt_width: width,
                fallback: PersistStrategy::Clflush,
            };
            let mut buf = vec![0u8; 1024];
            let src = pattern(1000, width as u8);
            p.copy_persist(&mut buf[5..1005], &src).unwrap();
            assert_eq!(&buf[5..1005], &src[..], "width {width}");
        }
    }
}
