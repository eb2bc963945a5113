//! Named persist strategies and the checked [`Persister`] that executes one.
#![allow(unsafe_code)]

use crate::LINE;
use crate::insn::{
    Clflush, Clflushopt, Clwb, Fence, FenceKind, Flush, FlushKind, NoFence, NtStore, Sfence,
};
use crate::trace::{self, Drained};
use pmscope_sys::cpu::{CpuFeatures, Feature};
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

    /// The instructions that make a line durable under this strategy: the one definition
    /// the [`Persister`] executes and the op catalog of `pmscope-loops` maps to its rows.
    pub fn recipe(self) -> Recipe {
        let (nontemporal, flush, drain) = match self {
            PersistStrategy::Clflush => (false, FlushKind::Clflush, Drain::Fence(FenceKind::None)),
            PersistStrategy::Clflushopt => (
                false,
                FlushKind::Clflushopt,
                Drain::Fence(FenceKind::Sfence),
            ),
            PersistStrategy::Clwb => (false, FlushKind::Clwb, Drain::Fence(FenceKind::Sfence)),
            PersistStrategy::Ntstore => (true, FlushKind::None, Drain::Fence(FenceKind::Sfence)),
            PersistStrategy::None => (false, FlushKind::None, Drain::Fence(FenceKind::None)),
            PersistStrategy::Msync => (false, FlushKind::None, Drain::Msync),
        };
        Recipe {
            nontemporal,
            flush,
            drain,
        }
    }

    /// The CPU feature this strategy needs.
    pub fn feature(self) -> Option<Feature> {
        let r = self.recipe();
        if r.nontemporal {
            Some(Feature::Movnti)
        } else {
            r.flush.feature()
        }
    }

    /// The CPU feature this strategy needs, if the CPU lacks it.
    pub fn missing_feature(self, f: &CpuFeatures) -> Option<Feature> {
        self.feature().filter(|&feature| !f.has(feature))
    }

    /// The strategy used where none is named ([`PersistChoice::Default`]): the first of
    /// [`DEFAULT_ORDER`] this CPU has — `clwb`, else `clflushopt`, else `clflush`, which
    /// every x86-64 CPU has. A pure function of the features, so the order is tested on
    /// any machine.
    pub fn default_for(f: &CpuFeatures) -> PersistStrategy {
        DEFAULT_ORDER
            .into_iter()
            .find(|s| s.missing_feature(f).is_none())
            .unwrap_or(PersistStrategy::Clflush)
    }
}

/// The default strategy's fallback order: the cheapest write-back first. `clflush` is last
/// and always there (CPUID.01H:EDX[19] is set on every x86-64 CPU).
pub const DEFAULT_ORDER: [PersistStrategy; 3] = [
    PersistStrategy::Clwb,
    PersistStrategy::Clflushopt,
    PersistStrategy::Clflush,
];

/// A strategy as the user chose it: named (`--persist clwb`), or left to the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PersistChoice {
    /// No `--persist`: [`PersistStrategy::default_for`] this CPU, which falls back from
    /// `clwb` to `clflushopt` to `clflush` and says so ([`Persister::fallback_note`]).
    Default,
    /// A named strategy: refused when the CPU lacks its instruction, never replaced.
    Named(PersistStrategy),
}

impl PersistChoice {
    /// `None` (the option not given) is the default; a name is parsed.
    pub fn parse(name: Option<&str>) -> Result<PersistChoice, StrategyError> {
        match name {
            None => Ok(PersistChoice::Default),
            Some(n) => n.parse().map(PersistChoice::Named),
        }
    }

    /// The strategy this choice means on a CPU with features `f` (a named one whether or
    /// not the CPU has it: [`Persister::choose`] refuses it then).
    pub fn strategy(self, f: &CpuFeatures) -> PersistStrategy {
        match self {
            PersistChoice::Default => PersistStrategy::default_for(f),
            PersistChoice::Named(s) => s,
        }
    }
}

/// A strategy as instructions: how the data is stored, flushed per line and drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipe {
    /// Whether the data is written with non-temporal stores (around the cache).
    pub nontemporal: bool,
    /// The write-back per 64-byte line.
    pub flush: FlushKind,
    /// What waits for the flushed lines once per range.
    pub drain: Drain,
}

/// How a persisted range is drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// A fence (or none).
    Fence(FenceKind),
    /// `msync(MS_SYNC)` of the range's pages: a system call, not an instruction.
    Msync,
}

impl fmt::Display for PersistStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a strategy name or choice was refused. Both are usage errors (exit 2): the remedy
/// is another `--persist` (see [`is_usage`](Self::is_usage)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategyError {
    /// Not one of the names.
    #[error("'{0}' is not a persist strategy: use one of {names}", names = strategy_names())]
    Unknown(String),
    /// The CPU lacks the instruction.
    #[error(
        "persist strategy '{strategy}' needs {feature}, which this CPU does not have (see `pmscope info`)"
    )]
    MissingFeature {
        /// The strategy asked for.
        strategy: PersistStrategy,
        /// The missing CPUID feature.
        feature: Feature,
    },
}

impl StrategyError {
    /// Whether this is a usage error (exit 2) rather than a runtime failure: always, since
    /// asking for another strategy is the remedy for both kinds.
    pub fn is_usage(&self) -> bool {
        match self {
            StrategyError::Unknown(_) | StrategyError::MissingFeature { .. } => true,
        }
    }
}

fn strategy_names() -> String {
    STRATEGIES.map(|s| s.name()).join(", ")
}

impl FromStr for PersistStrategy {
    type Err = StrategyError;
    fn from_str(s: &str) -> Result<Self, StrategyError> {
        STRATEGIES
            .into_iter()
            .find(|st| st.name() == s)
            .ok_or_else(|| StrategyError::Unknown(s.to_string()))
    }
}

/// A strategy checked against the CPU: the only safe way to reach the flush instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Persister {
    strategy: PersistStrategy,
    /// Widest non-temporal store (16, 32 or 64 bytes).
    nt_width: usize,
    /// The flush per line: the strategy's own, or for `ntstore` (whose data written by
    /// ordinary stores is in the cache) the best write-back the CPU has.
    flush: FlushKind,
    /// Whether the strategy was the default's choice rather than named.
    defaulted: bool,
}

impl Persister {
    /// Checks `strategy` against the CPU's features.
    pub fn new(strategy: PersistStrategy, f: &CpuFeatures) -> Result<Persister, StrategyError> {
        if let Some(feature) = strategy.missing_feature(f) {
            return Err(StrategyError::MissingFeature { strategy, feature });
        }
        let flush = if strategy.recipe().nontemporal {
            // The default's order, as instructions: clwb, clflushopt, clflush.
            PersistStrategy::default_for(f).recipe().flush
        } else {
            strategy.recipe().flush
        };
        Ok(Persister {
            strategy,
            nt_width: f.widest_ntstore(),
            flush,
            defaulted: false,
        })
    }

    /// The persister of a choice: a named strategy checked as by [`new`](Self::new), or the
    /// default's fallback ([`PersistStrategy::default_for`]), which never fails.
    pub fn choose(choice: PersistChoice, f: &CpuFeatures) -> Result<Persister, StrategyError> {
        let mut p = Persister::new(choice.strategy(f), f)?;
        p.defaulted = choice == PersistChoice::Default;
        Ok(p)
    }

    /// Whether the strategy was chosen by default rather than named.
    pub fn defaulted(&self) -> bool {
        self.defaulted
    }

    /// When the default fell back from `clwb`: one sentence saying to what and why (the
    /// missing CPUID features), for the record and the terminal. `None` otherwise.
    pub fn fallback_note(&self) -> Option<String> {
        let first = DEFAULT_ORDER[0];
        if !self.defaulted || self.strategy == first {
            return None;
        }
        let skipped: Vec<&str> = DEFAULT_ORDER
            .iter()
            .take_while(|&&s| s != self.strategy)
            .filter_map(|s| s.feature().map(|f| f.name()))
            .collect();
        Some(format!(
            "the default persist strategy is {first}, but this CPU lacks {}, so {} is used",
            skipped.join(" and "),
            self.strategy
        ))
    }

    /// The instructions this persister executes, for records: `clflush`,
    /// `clflushopt+sfence`, `clwb+sfence`, `movntdq (16-byte)+sfence, clflush for partial
    /// lines`, `none` or `msync`.
    pub fn instructions(&self) -> String {
        let r = self.strategy.recipe();
        let drain = match r.drain {
            Drain::Fence(FenceKind::None) => String::new(),
            Drain::Fence(fence) => format!("+{}", fence.name()),
            Drain::Msync => return "msync".into(),
        };
        if r.nontemporal {
            let store = match self.nt_width {
                64 | 32 => "vmovntdq",
                _ => "movntdq",
            };
            return format!(
                "{store} ({}-byte){drain}, {} for partial lines",
                self.nt_width,
                self.flush.name()
            );
        }
        match self.flush {
            FlushKind::None => "none".into(),
            flush => format!("{}{drain}", flush.name()),
        }
    }

    /// The per-line write-back this persister executes (for `ntstore`, the one used for
    /// lines written by ordinary stores).
    pub fn flush_kind(&self) -> FlushKind {
        self.flush
    }

    /// The strategy.
    pub fn strategy(&self) -> PersistStrategy {
        self.strategy
    }

    /// The width in bytes of the non-temporal stores `ntstore` uses, chosen from CPUID:
    /// 64 (AVX-512F `vmovntdq zmm`), 32 (AVX `vmovntdq ymm`) or 16 (SSE2 `movntdq xmm`,
    /// which every x86-64 CPU has).
    pub fn nt_width(&self) -> usize {
        self.nt_width
    }

    /// Flushes every cache line overlapping `range` (no drain). For `ntstore`, whose data
    /// is written around the cache by [`copy_persist`](Self::copy_persist), data written
    /// by ordinary stores is flushed with the best available write-back, as PMDK does.
    #[inline]
    pub fn flush(&self, range: &[u8]) {
        // `new` checked CPUID for the strategy's flush, or chose the ntstore fallback only
        // among the flushes the CPU has: that is the SAFETY of each arm.
        match self.flush {
            FlushKind::None => {}
            // SAFETY: see above.
            FlushKind::Clflush => unsafe { persist_range::<Clflush, NoFence>(range) },
            // SAFETY: see above.
            FlushKind::Clflushopt => unsafe { persist_range::<Clflushopt, NoFence>(range) },
            // SAFETY: see above.
            FlushKind::Clwb => unsafe { persist_range::<Clwb, NoFence>(range) },
        }
    }

    /// Waits until the flushed lines are durable: `sfence` for the weakly ordered ones,
    /// `msync` of the pages for `msync`, nothing for `clflush` and `none`.
    #[inline]
    pub fn drain(&self, range: &[u8]) -> std::io::Result<()> {
        let drained = match self.strategy.recipe().drain {
            Drain::Fence(FenceKind::None) => None,
            Drain::Fence(FenceKind::Sfence) => {
                Sfence::fence();
                Some(Drained::Fence)
            }
            Drain::Fence(FenceKind::Mfence) => {
                crate::insn::Mfence::fence();
                Some(Drained::Fence)
            }
            Drain::Msync => {
                // SAFETY: `range` is a live slice, so it lies inside one mapping.
                unsafe { pmscope_sys::mman::msync(range.as_ptr(), range.len())? };
                Some(Drained::Msync)
            }
        };
        if let Some(how) = drained
            && trace::watching()
        {
            trace::drained(range, how);
        }
        Ok(())
    }

    /// Flush then drain: one dispatch to the monomorphic loop of the strategy's flush and
    /// fence, so there is no branch per line.
    #[inline]
    pub fn persist(&self, range: &[u8]) -> std::io::Result<()> {
        match (self.flush, self.strategy.recipe().drain) {
            // SAFETY: `new` checked CPUID for the flush (as in `flush`).
            (FlushKind::Clflush, Drain::Fence(FenceKind::None)) => unsafe {
                persist_range::<Clflush, NoFence>(range)
            },
            // SAFETY: as above.
            (FlushKind::Clflushopt, Drain::Fence(FenceKind::Sfence)) => unsafe {
                persist_range::<Clflushopt, Sfence>(range)
            },
            // SAFETY: as above.
            (FlushKind::Clwb, Drain::Fence(FenceKind::Sfence)) => unsafe {
                persist_range::<Clwb, Sfence>(range)
            },
            // The rest (ntstore's fallback, none, msync) flush and drain separately.
            _ => {
                self.flush(range);
                return self.drain(range);
            }
        }
        Ok(())
    }

    /// Copies `src` into `dst` and makes it durable: non-temporal stores for `ntstore`
    /// (whole aligned lines; any unaligned head or tail is stored normally and flushed),
    /// ordinary stores plus flush for the others; then the drain.
    pub fn copy_persist(&self, dst: &mut [u8], src: &[u8]) -> std::io::Result<()> {
        assert_eq!(dst.len(), src.len(), "copy_persist: lengths differ");
        if !self.strategy.recipe().nontemporal {
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
            unsafe { ntstore_line(d, s, self.nt_width) };
        }
        self.flush(d_head);
        self.flush(d_tail);
        self.drain(dst)
    }
}

/// Flushes every cache line overlapping `range` with `F`, then fences with `D`.
///
/// # Safety
/// The CPU has `F`'s instruction.
#[inline]
unsafe fn persist_range<F: Flush, D: Fence>(range: &[u8]) {
    let base = range.as_ptr() as usize;
    let end = base + range.len();
    let mut line = base & !(LINE - 1);
    // Read once per call: the loop stays free of it when nothing is watched.
    let watched = trace::watching();
    while line < end {
        // A byte of `range` inside this line (the line's first byte may precede the range).
        let byte = &range[line.max(base) - base];
        if watched && F::KIND != FlushKind::None {
            trace::flushed(byte as *const u8 as usize, F::KIND);
        }
        // SAFETY: `byte` is a live reference, so mapped; the caller vouches for the CPU.
        unsafe { F::line(byte) };
        line += LINE;
    }
    D::fence();
    if watched && D::KIND != FenceKind::None {
        trace::drained(range, Drained::Fence);
    }
}

/// Copies one 64-byte line with non-temporal stores of `wide` bytes (64, 32 or 16; 8
/// stores with `movnti`, for tests of the narrowest form).
///
/// # Safety
/// `wide` must be 64 only if the CPU has AVX-512F, 32 only if it has AVX.
#[inline(always)]
unsafe fn ntstore_line(dst: &mut [u8; 64], src: &[u8; 64], wide: usize) {
    let d = dst.as_mut_ptr();
    let s = src.as_ptr();
    match wide {
        // SAFETY: the caller guarantees AVX-512F; d is 64-byte aligned (an array the
        // caller aligned), s readable for 64 bytes.
        64 => unsafe { nt_line64(d, s) },
        // SAFETY: the caller guarantees AVX; d is 64- hence 32-byte aligned.
        32 => unsafe { nt_line32(d, s) },
        // SAFETY: SSE2 is baseline on x86-64; d is 64- hence 16-byte aligned.
        16 => unsafe { nt_line16(d, s) },
        _ => {
            for i in 0..8 {
                let v = u64::from_ne_bytes(src[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
                // SAFETY: in-bounds, 8-byte aligned (d is 64-byte aligned) element i.
                unsafe { NtStore::store8(d.add(i * 8), v) };
            }
        }
    }
}

/// # Safety
/// `s` is readable for 64 bytes, `d` writable and 16-byte aligned (SSE2 is baseline).
#[inline(always)]
unsafe fn nt_line16(d: *mut u8, s: *const u8) {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128};
    for i in 0..4 {
        // SAFETY: the caller's contract; each 16-byte quarter is inside the 64 bytes.
        unsafe {
            NtStore::store16(
                d.add(i * 16),
                _mm_loadu_si128(s.add(i * 16).cast::<__m128i>()),
            )
        };
    }
}

/// # Safety
/// The CPU has AVX-512F; `s` is readable for 64 bytes, `d` writable and 64-byte aligned.
#[target_feature(enable = "avx512f")]
unsafe fn nt_line64(d: *mut u8, s: *const u8) {
    use core::arch::x86_64::_mm512_loadu_si512;
    // SAFETY: the caller's contract.
    unsafe { NtStore::store64(d, _mm512_loadu_si512(s.cast())) };
}

/// # Safety
/// The CPU has AVX; `s` is readable for 64 bytes, `d` writable and 32-byte aligned.
#[target_feature(enable = "avx")]
unsafe fn nt_line32(d: *mut u8, s: *const u8) {
    use core::arch::x86_64::{__m256i, _mm256_loadu_si256};
    // SAFETY: the caller's contract; both halves are inside the 64 bytes.
    unsafe {
        NtStore::store32(d, _mm256_loadu_si256(s.cast::<__m256i>()));
        NtStore::store32(d.add(32), _mm256_loadu_si256(s.add(32).cast::<__m256i>()));
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
                Err(StrategyError::MissingFeature { .. }) => {
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

    /// The default's fallback order as a function of the features: this must fail when
    /// the order changes or a missing instruction is chosen (SIGILL on such a CPU).
    #[test]
    fn the_default_falls_back_from_clwb_to_clflushopt_to_clflush() {
        let old = CpuFeatures::baseline(); // the x86-64 baseline: clflush, no clflushopt/clwb
        let skylake_client = CpuFeatures {
            clflushopt: true,
            ..old
        };
        let modern = CpuFeatures {
            clwb: true,
            ..skylake_client
        };
        assert_eq!(PersistStrategy::default_for(&modern), PersistStrategy::Clwb);
        assert_eq!(
            PersistStrategy::default_for(&skylake_client),
            PersistStrategy::Clflushopt
        );
        assert_eq!(PersistStrategy::default_for(&old), PersistStrategy::Clflush);
        for (f, want_note) in [
            (modern, None),
            (
                skylake_client,
                Some(
                    "the default persist strategy is clwb, but this CPU lacks clwb, so clflushopt is used",
                ),
            ),
            (
                old,
                Some(
                    "the default persist strategy is clwb, but this CPU lacks clwb and clflushopt, so clflush is used",
                ),
            ),
        ] {
            let p = Persister::choose(PersistChoice::Default, &f).unwrap();
            assert!(p.defaulted());
            assert_eq!(p.fallback_note().as_deref(), want_note);
            assert_eq!(
                p.flush_kind().feature().map(|x| f.has(x)),
                Some(true),
                "the chosen flush exists on this CPU"
            );
        }
        let p = Persister::choose(PersistChoice::Default, &old).unwrap();
        assert_eq!(
            (p.strategy(), p.instructions().as_str()),
            (PersistStrategy::Clflush, "clflush")
        );
        // A named strategy is never replaced: the CPU lacking it is a usage error.
        let e = Persister::choose(PersistChoice::Named(PersistStrategy::Clwb), &old).unwrap_err();
        assert!(e.is_usage());
        let named = Persister::choose(PersistChoice::Named(PersistStrategy::Clflush), &modern);
        assert_eq!(named.unwrap().fallback_note(), None);
        // ntstore flushes its partial lines with the same order, at the SSE2 width.
        let nt = Persister::new(PersistStrategy::Ntstore, &old).unwrap();
        assert_eq!((nt.nt_width(), nt.flush_kind()), (16, FlushKind::Clflush));
        assert_eq!(
            nt.instructions(),
            "movntdq (16-byte)+sfence, clflush for partial lines"
        );
        let nt = Persister::new(PersistStrategy::Ntstore, &skylake_client).unwrap();
        assert_eq!(nt.flush_kind(), FlushKind::Clflushopt);
        assert_eq!(
            PersistChoice::parse(None).unwrap().strategy(&old),
            PersistStrategy::Clflush
        );
        assert_eq!(
            PersistChoice::parse(Some("clwb")).unwrap(),
            PersistChoice::Named(PersistStrategy::Clwb)
        );
    }

    #[test]
    fn names_round_trip() {
        for s in STRATEGIES {
            assert_eq!(s.name().parse::<PersistStrategy>().unwrap(), s);
        }
        assert!(matches!(
            "clwbx".parse::<PersistStrategy>(),
            Err(StrategyError::Unknown(_))
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
        #[ignore = "needs a CPU with AVX2 and without AVX-512 (the TCG lab guest): runs in the lab guest via lab/stage.sh"]
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
        for (width, ok) in [(8, true), (16, true), (32, f.avx), (64, f.avx512f)] {
            if !ok {
                continue;
            }
            let p = Persister {
                strategy: PersistStrategy::Ntstore,
                nt_width: width,
                flush: FlushKind::Clflush,
                defaulted: false,
            };
            let mut buf = vec![0u8; 1024];
            let src = pattern(1000, width as u8);
            p.copy_persist(&mut buf[5..1005], &src).unwrap();
            assert_eq!(&buf[5..1005], &src[..], "width {width}");
        }
    }
}
