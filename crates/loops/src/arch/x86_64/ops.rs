//! The memory instructions as zero-sized types, one `asm!` instruction per method, so the
//! loops in `access` and `sync` are monomorphic (no indirect call per access) and the
//! compiler can neither drop nor merge an access (`asm!` without `pure`/`nomem`).
//! References: Intel SDM Vol. 2 — MOV, MOVDQA, VMOVDQA64, MOVNTDQA, VMOVNTDQA, MOVNTI,
//! MOVNTDQ, VMOVNTDQ, CLFLUSH, CLFLUSHOPT, CLWB, SFENCE, MFENCE.
#![allow(unsafe_code)]

use core::arch::asm;
use core::arch::x86_64::{__m128i, __m256i, __m512i};

/// A memory access instruction family at four widths. Every method requires `p` to be
/// valid for the access and aligned to its width, and the CPU to have the width's feature
/// (16: SSE2, or SSE4.1 for movntdqa; 32: AVX, or AVX2 for vmovntdqa; 64: AVX-512F).
pub trait Access {
    /// # Safety
    /// See the trait docs.
    unsafe fn a8(p: *mut u8, v: u64);
    /// # Safety
    /// See the trait docs.
    unsafe fn a16(p: *mut u8, v: __m128i);
    /// # Safety
    /// See the trait docs.
    unsafe fn a32(p: *mut u8, v: __m256i);
    /// # Safety
    /// See the trait docs.
    unsafe fn a64(p: *mut u8, v: __m512i);
}

/// Ordinary loads.
pub struct Load;
/// Non-temporal loads (`movntdqa`): a streaming hint on WB memory.
pub struct NtLoad;
/// Ordinary stores.
pub struct Store;
/// Non-temporal stores (`movnti`, `movntdq`, `vmovntdq`).
pub struct NtStore;

impl Access for Load {
    #[inline(always)]
    unsafe fn a8(p: *mut u8, _v: u64) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("mov {x}, qword ptr [{p}]", p = in(reg) p, x = out(reg) _, options(nostack, readonly, preserves_flags))
        }
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    unsafe fn a16(p: *mut u8, _v: __m128i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("movdqa {x}, xmmword ptr [{p}]", p = in(reg) p, x = out(xmm_reg) _, options(nostack, readonly, preserves_flags))
        }
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn a32(p: *mut u8, _v: __m256i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("vmovdqa {x}, ymmword ptr [{p}]", p = in(reg) p, x = out(ymm_reg) _, options(nostack, readonly, preserves_flags))
        }
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn a64(p: *mut u8, _v: __m512i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("vmovdqa64 {x}, zmmword ptr [{p}]", p = in(reg) p, x = out(zmm_reg) _, options(nostack, readonly, preserves_flags))
        }
    }
}

impl Access for NtLoad {
    #[inline(always)]
    unsafe fn a8(_p: *mut u8, _v: u64) {
        unreachable!("movntdqa has no 8-byte form")
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    unsafe fn a16(p: *mut u8, _v: __m128i) {
        // SAFETY: the trait's contract (SSE4.1).
        unsafe {
            asm!("movntdqa {x}, xmmword ptr [{p}]", p = in(reg) p, x = out(xmm_reg) _, options(nostack, readonly, preserves_flags))
        }
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn a32(p: *mut u8, _v: __m256i) {
        // SAFETY: the trait's contract (AVX2).
        unsafe {
            asm!("vmovntdqa {x}, ymmword ptr [{p}]", p = in(reg) p, x = out(ymm_reg) _, options(nostack, readonly, preserves_flags))
        }
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn a64(p: *mut u8, _v: __m512i) {
        // SAFETY: the trait's contract (AVX-512F).
        unsafe {
            asm!("vmovntdqa {x}, zmmword ptr [{p}]", p = in(reg) p, x = out(zmm_reg) _, options(nostack, readonly, preserves_flags))
        }
    }
}

impl Access for Store {
    #[inline(always)]
    unsafe fn a8(p: *mut u8, v: u64) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("mov qword ptr [{p}], {v}", p = in(reg) p, v = in(reg) v, options(nostack, preserves_flags))
        }
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    unsafe fn a16(p: *mut u8, v: __m128i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("movdqa xmmword ptr [{p}], {v}", p = in(reg) p, v = in(xmm_reg) v, options(nostack, preserves_flags))
        }
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn a32(p: *mut u8, v: __m256i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("vmovdqa ymmword ptr [{p}], {v}", p = in(reg) p, v = in(ymm_reg) v, options(nostack, preserves_flags))
        }
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn a64(p: *mut u8, v: __m512i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("vmovdqa64 zmmword ptr [{p}], {v}", p = in(reg) p, v = in(zmm_reg) v, options(nostack, preserves_flags))
        }
    }
}

impl Access for NtStore {
    #[inline(always)]
    unsafe fn a8(p: *mut u8, v: u64) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("movnti qword ptr [{p}], {v}", p = in(reg) p, v = in(reg) v, options(nostack, preserves_flags))
        }
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    unsafe fn a16(p: *mut u8, v: __m128i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("movntdq xmmword ptr [{p}], {v}", p = in(reg) p, v = in(xmm_reg) v, options(nostack, preserves_flags))
        }
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn a32(p: *mut u8, v: __m256i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("vmovntdq ymmword ptr [{p}], {v}", p = in(reg) p, v = in(ymm_reg) v, options(nostack, preserves_flags))
        }
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn a64(p: *mut u8, v: __m512i) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("vmovntdq zmmword ptr [{p}], {v}", p = in(reg) p, v = in(zmm_reg) v, options(nostack, preserves_flags))
        }
    }
}

/// A per-line cache write-back (or none).
pub trait Flush {
    /// # Safety
    /// `p` must be mapped; the CPU must have the instruction.
    unsafe fn line(p: *mut u8);
}

/// No flush.
pub struct NoFlush;
/// `clflush`.
pub struct Clflush;
/// `clflushopt`.
pub struct Clflushopt;
/// `clwb`.
pub struct Clwb;

impl Flush for NoFlush {
    #[inline(always)]
    unsafe fn line(_p: *mut u8) {}
}
impl Flush for Clflush {
    #[inline(always)]
    unsafe fn line(p: *mut u8) {
        // SAFETY: the trait's contract.
        unsafe { asm!("clflush byte ptr [{p}]", p = in(reg) p, options(nostack, preserves_flags)) }
    }
}
impl Flush for Clflushopt {
    #[inline(always)]
    unsafe fn line(p: *mut u8) {
        // SAFETY: the trait's contract.
        unsafe {
            asm!("clflushopt byte ptr [{p}]", p = in(reg) p, options(nostack, preserves_flags))
        }
    }
}
impl Flush for Clwb {
    #[inline(always)]
    unsafe fn line(p: *mut u8) {
        // SAFETY: the trait's contract.
        unsafe { asm!("clwb byte ptr [{p}]", p = in(reg) p, options(nostack, preserves_flags)) }
    }
}

/// A fence (or none).
pub trait Fence {
    /// Issues the fence.
    fn fence();
}

/// No fence.
pub struct NoFence;
/// `sfence`.
pub struct Sfence;
/// `mfence`.
pub struct Mfence;

impl Fence for NoFence {
    #[inline(always)]
    fn fence() {}
}
impl Fence for Sfence {
    #[inline(always)]
    fn fence() {
        // SAFETY: sfence exists on every x86-64 CPU.
        unsafe { asm!("sfence", options(nostack, preserves_flags)) }
    }
}
impl Fence for Mfence {
    #[inline(always)]
    fn fence() {
        // SAFETY: mfence exists on every x86-64 CPU.
        unsafe { asm!("mfence", options(nostack, preserves_flags)) }
    }
}

/// Reads the TSC at the start of a timed access (`lfence; rdtsc; lfence`).
#[inline(always)]
pub fn tsc_start() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: lfence/rdtsc exist on every x86-64 CPU and only read the counter.
    unsafe {
        asm!("lfence", "rdtsc", "lfence", out("eax") lo, out("edx") hi, options(nostack, nomem, preserves_flags))
    };
    ((hi as u64) << 32) | lo as u64
}

/// Reads the TSC at the end of a timed access (`rdtscp; lfence`): waits for the timed
/// instructions to complete, and keeps later ones from starting early.
#[inline(always)]
pub fn tsc_stop() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdtscp exists on the CPUs pmscope times single accesses on (checked through
    // CpuFeatures::rdtscp before any timed kernel runs); it only reads the counter.
    unsafe {
        asm!("rdtscp", "lfence", out("eax") lo, out("edx") hi, out("ecx") _, options(nostack, nomem, preserves_flags))
    };
    ((hi as u64) << 32) | lo as u64
}

/// Generates, for one vector width, the three loops every experiment uses:
/// `seq_*` (consecutive lines), `idx_*` (lines at precomputed indices) and `timed_*` (one
/// access of several lines between serialising timestamp reads, the fence after the
/// access). Each line is `64 / unit` accesses of the family `A`, then the flush `F`; the
/// throughput loops put the fence `N` after every line, as pmmeter does.
macro_rules! width {
    ($seq:ident, $idx:ident, $timed:ident, $feat:literal, $unit:literal, $method:ident, $splat:expr) => {
        /// Throughput loop over `lines` consecutive 64-byte lines from `base`.
        ///
        /// # Safety
        /// `base` is 64-byte aligned and valid for `lines * 64` bytes; the CPU has the
        /// features of this width and of `A` and `F`.
        #[target_feature(enable = $feat)]
        pub unsafe fn $seq<A: Access, F: Flush, N: Fence>(base: *mut u8, lines: usize, v: u64) {
            let vv = $splat(v);
            for l in 0..lines {
                // SAFETY: l < lines keeps the line inside the range the caller vouched for.
                let p = unsafe { base.add(l * 64) };
                let mut off = 0;
                while off < 64 {
                    // SAFETY: off < 64 stays inside the line; alignment holds for the unit.
                    unsafe { A::$method(p.add(off), vv) };
                    off += $unit;
                }
                // SAFETY: as above.
                unsafe { F::line(p) };
                N::fence();
            }
        }

        /// Throughput loop over the lines `idx` names (line numbers from `base`).
        ///
        /// # Safety
        /// Every index is a line inside the range the caller owns; otherwise as above.
        #[target_feature(enable = $feat)]
        pub unsafe fn $idx<A: Access, F: Flush, N: Fence>(base: *mut u8, idx: &[u32], v: u64) {
            let vv = $splat(v);
            for &i in idx {
                // SAFETY: the caller guarantees i is a line of its range.
                let p = unsafe { base.add(i as usize * 64) };
                let mut off = 0;
                while off < 64 {
                    // SAFETY: off < 64 stays inside the line.
                    unsafe { A::$method(p.add(off), vv) };
                    off += $unit;
                }
                // SAFETY: as above.
                unsafe { F::line(p) };
                N::fence();
            }
        }

        /// One timed access of `lines` lines from `p` (per-line flush, one fence after the
        /// access); returns the TSC ticks, timer overhead included.
        ///
        /// # Safety
        /// As for the sequential loop.
        #[target_feature(enable = $feat)]
        pub unsafe fn $timed<A: Access, F: Flush, N: Fence>(
            p: *mut u8,
            lines: usize,
            v: u64,
        ) -> u64 {
            let vv = $splat(v);
            let t0 = tsc_start();
            for l in 0..lines {
                // SAFETY: inside the caller's range.
                let q = unsafe { p.add(l * 64) };
                let mut off = 0;
                while off < 64 {
                    // SAFETY: off < 64 stays inside the line.
                    unsafe { A::$method(q.add(off), vv) };
                    off += $unit;
                }
                // SAFETY: as above.
                unsafe { F::line(q) };
            }
            N::fence();
            tsc_stop().wrapping_sub(t0)
        }
    };
}

width!(seq64, idx64, timed64, "avx512f", 64, a64, |v: u64| {
    core::arch::x86_64::_mm512_set1_epi64(v as i64)
});
width!(seq32, idx32, timed32, "avx2", 32, a32, |v: u64| {
    core::arch::x86_64::_mm256_set1_epi64x(v as i64)
});
width!(seq16, idx16, timed16, "sse4.1", 16, a16, |v: u64| {
    core::arch::x86_64::_mm_set1_epi64x(v as i64)
});
width!(seq8, idx8, timed8, "sse2", 8, a8, |v: u64| v);

/// One timed 8-byte access at `p` (an 8-byte-aligned address), flush of its line, fence.
///
/// # Safety
/// `p` is valid for 8 bytes; the CPU has the instructions of `A` and `F`.
#[inline(never)]
pub unsafe fn timed_word<A: Access, F: Flush, N: Fence>(p: *mut u8, v: u64) -> u64 {
    let t0 = tsc_start();
    // SAFETY: the caller's contract.
    unsafe {
        A::a8(p, v);
        F::line(p);
    }
    N::fence();
    tsc_stop().wrapping_sub(t0)
}

/// An empty timed access: the overhead every timed access includes.
#[inline(never)]
pub fn timed_nothing() -> u64 {
    let t0 = tsc_start();
    tsc_stop().wrapping_sub(t0)
}
