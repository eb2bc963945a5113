//! The access instructions as zero-sized types, one `asm!` instruction per method, and the
//! loops built from them, generic over an access, a flush and a fence, so the loops in
//! `access` are monomorphic (no indirect call per access) and the compiler can neither drop
//! nor merge an access (`asm!` without `pure`/`nomem`). The flushes, fences and the
//! non-temporal store are `pmscope_persist::insn`'s types, the timestamps
//! `pmscope_sys::tsc`'s: this file writes only the loads and ordinary stores.
//! References: Intel SDM Vol. 2 — MOV, MOVDQA, VMOVDQA64, MOVNTDQA, VMOVNTDQA.
#![allow(unsafe_code)]

use core::arch::asm;
use core::arch::x86_64::{__m128i, __m256i, __m512i};
use pmscope_persist::insn::{self, Fence, Flush};
use pmscope_sys::tsc;

/// A memory access instruction family at four widths. Every method requires `p` to be
/// valid for the access and aligned to its width, and the CPU to have the width's feature
/// (16: SSE2, baseline on x86-64, or SSE4.1 for movntdqa; 32: AVX2; 64: AVX-512F). The
/// 16-byte methods and loops enable nothing beyond SSE2, so the compiler cannot put a newer
/// instruction into them: `movntdqa` is written as `asm!` (the assembler needs no feature)
/// and reached only after `Op::check` saw SSE4.1.
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
    #[inline(always)]
    unsafe fn a16(p: *mut u8, _v: __m128i) {
        // SAFETY: the trait's contract (SSE2).
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
    #[inline(always)]
    unsafe fn a16(p: *mut u8, _v: __m128i) {
        // SAFETY: the trait's contract (SSE4.1, checked by `Op::check`).
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
    #[inline(always)]
    unsafe fn a16(p: *mut u8, v: __m128i) {
        // SAFETY: the trait's contract (SSE2).
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
        unsafe { insn::NtStore::store8(p, v) }
    }
    #[inline(always)]
    unsafe fn a16(p: *mut u8, v: __m128i) {
        // SAFETY: the trait's contract (SSE2).
        unsafe { insn::NtStore::store16(p, v) }
    }
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn a32(p: *mut u8, v: __m256i) {
        // SAFETY: the trait's contract (AVX2 implies AVX).
        unsafe { insn::NtStore::store32(p, v) }
    }
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn a64(p: *mut u8, v: __m512i) {
        // SAFETY: the trait's contract.
        unsafe { insn::NtStore::store64(p, v) }
    }
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
            let t0 = tsc::start();
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
            tsc::stop().wrapping_sub(t0)
        }
    };
}

width!(seq64, idx64, timed64, "avx512f", 64, a64, |v: u64| {
    core::arch::x86_64::_mm512_set1_epi64(v as i64)
});
width!(seq32, idx32, timed32, "avx2", 32, a32, |v: u64| {
    core::arch::x86_64::_mm256_set1_epi64x(v as i64)
});
width!(seq16, idx16, timed16, "sse2", 16, a16, |v: u64| {
    core::arch::x86_64::_mm_set1_epi64x(v as i64)
});
width!(seq8, idx8, timed8, "sse2", 8, a8, |v: u64| v);

/// One timed 8-byte access at `p` (an 8-byte-aligned address), flush of its line, fence.
///
/// # Safety
/// `p` is valid for 8 bytes; the CPU has the instructions of `A` and `F`.
#[inline(never)]
pub unsafe fn timed_word<A: Access, F: Flush, N: Fence>(p: *mut u8, v: u64) -> u64 {
    let t0 = tsc::start();
    // SAFETY: the caller's contract.
    unsafe {
        A::a8(p, v);
        F::line(p);
    }
    N::fence();
    tsc::stop().wrapping_sub(t0)
}

/// An empty timed access: the overhead every timed access includes.
#[inline(never)]
pub fn timed_nothing() -> u64 {
    let t0 = tsc::start();
    tsc::stop().wrapping_sub(t0)
}
