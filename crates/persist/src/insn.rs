//! The cache-line write-back, fence and non-temporal store instructions, one zero-sized type
//! each: the only place in pmscope these instructions are written as single instructions.
//! `Persister` and the timed loops of `pmscope-loops` are generic over these types, so every
//! combination compiles to its own monomorphic loop with no indirect call or branch per line.
//! (The likwid-style unrolled bandwidth loops in `pmscope-loops`' `arch/x86_64/stream.rs`
//! keep `clwb` and `vmovntdq` inside their multi-instruction `asm!` blocks, where a call per
//! instruction would change the loop.)
//!
//! Which of them may run is decided by CPUID: a flush or a non-temporal store is an `unsafe`
//! method whose contract is "the CPU has the instruction", and only a checked
//! [`Persister`](crate::Persister) (or a checked access sequence of `pmscope-loops`) calls
//! one. The fences are safe: `sfence` and `mfence` exist on every x86-64 CPU.
//!
//! Instruction emission: the flushes are plain `asm!` (the assembler accepts
//! `clflushopt`/`clwb` without a target feature), so nothing but the caller's CPUID check
//! stands between them and SIGILL; the 16/32/64-byte non-temporal stores are
//! `#[target_feature]` functions, because their vector operands need the feature enabled.
//! No `asm!` here carries `nomem`: a flush or store is a memory operation the compiler must
//! not move across the stores it persists.
//!
//! References: Intel SDM Vol. 2 — CLFLUSH, CLFLUSHOPT, CLWB, SFENCE, MFENCE, MOVNTI, MOVNTDQ,
//! VMOVNTDQ.
#![allow(unsafe_code)]

use core::arch::asm;
use core::arch::x86_64::{__m128i, __m256i, __m512i};
use pmscope_sys::cpu::Feature;
use serde::{Deserialize, Serialize};

/// A per-line cache write-back (or none), as a type.
pub trait Flush {
    /// The value naming this flush.
    const KIND: FlushKind;
    /// Flushes the cache line holding `p`.
    ///
    /// # Safety
    /// `p` must point into mapped memory, and the CPU must have the instruction
    /// ([`FlushKind::feature`]).
    unsafe fn line(p: *const u8);
}

/// No flush.
pub struct NoFlush;
/// `clflush m8`: writes back and invalidates the line; ordered with other stores.
pub struct Clflush;
/// `clflushopt m8`: as `clflush` but weakly ordered, so it needs a fence to drain.
pub struct Clflushopt;
/// `clwb m8`: writes the line back, possibly keeping it cached; weakly ordered.
pub struct Clwb;

impl Flush for NoFlush {
    const KIND: FlushKind = FlushKind::None;
    #[inline(always)]
    unsafe fn line(_p: *const u8) {}
}

impl Flush for Clflush {
    const KIND: FlushKind = FlushKind::Clflush;
    #[inline(always)]
    unsafe fn line(p: *const u8) {
        // SAFETY: the trait's contract: `p` is mapped and the CPU has clflush.
        unsafe { asm!("clflush byte ptr [{p}]", p = in(reg) p, options(nostack, preserves_flags)) }
    }
}

impl Flush for Clflushopt {
    const KIND: FlushKind = FlushKind::Clflushopt;
    #[inline(always)]
    unsafe fn line(p: *const u8) {
        // SAFETY: the trait's contract: `p` is mapped and the CPU has clflushopt.
        unsafe {
            asm!("clflushopt byte ptr [{p}]", p = in(reg) p, options(nostack, preserves_flags))
        }
    }
}

impl Flush for Clwb {
    const KIND: FlushKind = FlushKind::Clwb;
    #[inline(always)]
    unsafe fn line(p: *const u8) {
        // SAFETY: the trait's contract: `p` is mapped and the CPU has clwb.
        unsafe { asm!("clwb byte ptr [{p}]", p = in(reg) p, options(nostack, preserves_flags)) }
    }
}

/// A fence (or none), as a type.
pub trait Fence {
    /// The value naming this fence.
    const KIND: FenceKind;
    /// Issues the fence.
    fn fence();
}

/// No fence.
pub struct NoFence;
/// `sfence`: earlier stores, flushes and non-temporal stores complete before later stores.
pub struct Sfence;
/// `mfence`: all earlier loads and stores complete before any later one.
pub struct Mfence;

impl Fence for NoFence {
    const KIND: FenceKind = FenceKind::None;
    #[inline(always)]
    fn fence() {}
}

impl Fence for Sfence {
    const KIND: FenceKind = FenceKind::Sfence;
    #[inline(always)]
    fn fence() {
        // SAFETY: sfence exists on every x86-64 CPU and has no operands.
        unsafe { asm!("sfence", options(nostack, preserves_flags)) }
    }
}

impl Fence for Mfence {
    const KIND: FenceKind = FenceKind::Mfence;
    #[inline(always)]
    fn fence() {
        // SAFETY: mfence exists on every x86-64 CPU and has no operands.
        unsafe { asm!("mfence", options(nostack, preserves_flags)) }
    }
}

/// The non-temporal (streaming) store at its four widths: `movnti` (8 bytes, SSE2),
/// `movntdq` (16, SSE2), `vmovntdq` (32, AVX; 64, AVX-512F). Weakly ordered: an `sfence`
/// drains them.
pub struct NtStore;

impl NtStore {
    /// `movnti m64, r64`.
    ///
    /// # Safety
    /// `p` is valid for 8 bytes of writes and 8-byte aligned.
    #[inline(always)]
    pub unsafe fn store8(p: *mut u8, v: u64) {
        // SAFETY: the caller's contract; movnti is SSE2, baseline on x86-64.
        unsafe {
            asm!("movnti qword ptr [{p}], {v}", p = in(reg) p, v = in(reg) v, options(nostack, preserves_flags))
        }
    }

    /// `movntdq m128, xmm`.
    ///
    /// # Safety
    /// `p` is valid for 16 bytes of writes and 16-byte aligned.
    #[target_feature(enable = "sse2")]
    #[inline]
    pub unsafe fn store16(p: *mut u8, v: __m128i) {
        // SAFETY: the caller's contract; SSE2 is enabled for this function.
        unsafe {
            asm!("movntdq xmmword ptr [{p}], {v}", p = in(reg) p, v = in(xmm_reg) v, options(nostack, preserves_flags))
        }
    }

    /// `vmovntdq m256, ymm`.
    ///
    /// # Safety
    /// `p` is valid for 32 bytes of writes and 32-byte aligned; the CPU has AVX.
    #[target_feature(enable = "avx")]
    #[inline]
    pub unsafe fn store32(p: *mut u8, v: __m256i) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("vmovntdq ymmword ptr [{p}], {v}", p = in(reg) p, v = in(ymm_reg) v, options(nostack, preserves_flags))
        }
    }

    /// `vmovntdq m512, zmm`.
    ///
    /// # Safety
    /// `p` is valid for 64 bytes of writes and 64-byte aligned; the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub unsafe fn store64(p: *mut u8, v: __m512i) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("vmovntdq zmmword ptr [{p}], {v}", p = in(reg) p, v = in(zmm_reg) v, options(nostack, preserves_flags))
        }
    }
}

/// A flush as a value: what strategies, catalogs and records name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FlushKind {
    /// No flush.
    None,
    /// `clflush`.
    Clflush,
    /// `clflushopt`.
    Clflushopt,
    /// `clwb`.
    Clwb,
}

impl FlushKind {
    /// The instruction's name (`none` for no flush).
    pub fn name(self) -> &'static str {
        match self {
            FlushKind::None => "none",
            FlushKind::Clflush => "clflush",
            FlushKind::Clflushopt => "clflushopt",
            FlushKind::Clwb => "clwb",
        }
    }

    /// The CPUID feature the instruction needs.
    pub fn feature(self) -> Option<Feature> {
        match self {
            FlushKind::None => None,
            FlushKind::Clflush => Some(Feature::Clflush),
            FlushKind::Clflushopt => Some(Feature::Clflushopt),
            FlushKind::Clwb => Some(Feature::Clwb),
        }
    }
}

/// A fence as a value: the fence after an access (`inst`), after each 64-byte block
/// (`sync`), or the drain of a persist strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FenceKind {
    /// No fence.
    None,
    /// `sfence`.
    Sfence,
    /// `mfence`.
    Mfence,
}

/// Every fence, in table order.
pub const FENCES: [FenceKind; 3] = [FenceKind::None, FenceKind::Sfence, FenceKind::Mfence];

impl FenceKind {
    /// The name the CLI accepts.
    pub fn name(self) -> &'static str {
        match self {
            FenceKind::None => "none",
            FenceKind::Sfence => "sfence",
            FenceKind::Mfence => "mfence",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<FenceKind> {
        FENCES.into_iter().find(|f| f.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(align(64))]
    struct Line([u8; 64]);

    #[test]
    fn kinds_name_their_types() {
        assert_eq!(<Clwb as Flush>::KIND.name(), "clwb");
        assert_eq!(
            <Clflushopt as Flush>::KIND.feature(),
            Some(Feature::Clflushopt)
        );
        assert_eq!(<NoFlush as Flush>::KIND.feature(), None);
        assert_eq!(<Mfence as Fence>::KIND, FenceKind::Mfence);
        for f in FENCES {
            assert_eq!(FenceKind::parse(f.name()), Some(f));
        }
    }

    #[test]
    fn non_temporal_stores_write_exactly_their_bytes() {
        let f = pmscope_sys::cpu::CpuFeatures::detect();
        let mut l = Line([0xEE; 64]);
        let p = l.0.as_mut_ptr();
        // SAFETY: p is 64-byte aligned and valid for 64 bytes; movnti/movntdq are baseline.
        unsafe {
            NtStore::store8(p.add(8), 0x0102_0304_0506_0708);
            NtStore::store16(p.add(16), core::arch::x86_64::_mm_set1_epi8(0x11));
        }
        Sfence::fence();
        assert_eq!(&l.0[8..16], &0x0102_0304_0506_0708u64.to_ne_bytes());
        assert!(l.0[16..32].iter().all(|&b| b == 0x11));
        assert!(l.0[..8].iter().chain(&l.0[32..]).all(|&b| b == 0xEE));
        if f.avx {
            // SAFETY: as above; the CPU has AVX.
            unsafe { NtStore::store32(p.add(32), core::arch::x86_64::_mm256_set1_epi8(0x22)) };
            Sfence::fence();
            assert!(l.0[32..].iter().all(|&b| b == 0x22));
        }
        if f.avx512f {
            // SAFETY: as above; the CPU has AVX-512F.
            unsafe { NtStore::store64(p, core::arch::x86_64::_mm512_set1_epi8(0x33)) };
            Mfence::fence();
            assert!(l.0.iter().all(|&b| b == 0x33));
        }
    }
}
