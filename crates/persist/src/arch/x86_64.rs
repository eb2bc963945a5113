//! x86-64 flush, fence and non-temporal store instructions (Intel SDM Vol. 2: CLFLUSH,
//! CLFLUSHOPT, CLWB, SFENCE, MFENCE, MOVNTI, MOVNTDQ/VMOVNTDQ).
//!
//! Each function takes a reference, so the address is always mapped; `clflushopt`, `clwb`
//! and the wide stores are `#[target_feature]` functions, reachable only through
//! [`crate::Persister`], which checks CPUID first. `asm!` carries no `nomem`: a flush is a
//! memory operation the compiler must not move across the stores it persists.
#![allow(unsafe_code)]

use core::arch::asm;

/// `clflush m8` — writes back and invalidates the line holding `*p`. Baseline x86-64.
#[inline(always)]
pub fn clflush(p: &u8) {
    // SAFETY: `p` is a valid reference; clflush exists on every x86-64 CPU.
    unsafe { asm!("clflush [{0}]", in(reg) p as *const u8, options(nostack, preserves_flags)) };
}

/// `clflushopt m8` — like clflush but weakly ordered; needs a fence to drain.
///
/// # Safety
/// The CPU must support CLFLUSHOPT (CPUID.(EAX=07H,ECX=0):EBX[23]).
#[inline(always)]
pub unsafe fn clflushopt(p: &u8) {
    // SAFETY: the caller guarantees the instruction exists; `p` is a valid reference.
    unsafe { asm!("clflushopt [{0}]", in(reg) p as *const u8, options(nostack, preserves_flags)) };
}

/// `clwb m8` — writes the line back without (necessarily) invalidating it.
///
/// # Safety
/// The CPU must support CLWB (CPUID.(EAX=07H,ECX=0):EBX[24]).
#[inline(always)]
pub unsafe fn clwb(p: &u8) {
    // SAFETY: the caller guarantees the instruction exists; `p` is a valid reference.
    unsafe { asm!("clwb [{0}]", in(reg) p as *const u8, options(nostack, preserves_flags)) };
}

/// `sfence` — orders earlier stores, flushes and non-temporal stores before later stores.
#[inline(always)]
pub fn sfence() {
    // SAFETY: sfence exists on every x86-64 CPU and has no operands.
    unsafe { asm!("sfence", options(nostack, preserves_flags)) };
}

/// `mfence` — orders all earlier loads and stores before all later ones.
#[inline(always)]
pub fn mfence() {
    // SAFETY: mfence exists on every x86-64 CPU and has no operands.
    unsafe { asm!("mfence", options(nostack, preserves_flags)) };
}

/// `movnti m64, r64` — an 8-byte non-temporal store. Baseline x86-64 (SSE2).
#[inline(always)]
pub fn movnti(dst: &mut u64, v: u64) {
    // SAFETY: `dst` is a valid, aligned, exclusive reference; movnti is SSE2 (baseline).
    unsafe {
        asm!("movnti [{0}], {1}", in(reg) dst as *mut u64, in(reg) v, options(nostack, preserves_flags))
    };
}

/// Copies one 64-byte line with non-temporal stores, the widest the CPU allows.
///
/// # Safety
/// `dst` must be 64-byte aligned; `wide` must be 64 only if the CPU has AVX-512F, 32 only if
/// it has AVX.
#[inline(always)]
pub unsafe fn ntstore_line(dst: &mut [u8; 64], src: &[u8; 64], wide: usize) {
    let d = dst.as_mut_ptr();
    let s = src.as_ptr();
    match wide {
        // SAFETY: caller guarantees AVX-512F and 64-byte alignment of dst.
        64 => unsafe { nt64(d, s) },
        // SAFETY: caller guarantees AVX and 64-byte (hence 32-byte) alignment of dst.
        32 => unsafe { nt32(d, s) },
        _ => {
            for i in 0..8 {
                let v = u64::from_ne_bytes(src[i * 8..i * 8 + 8].try_into().unwrap());
                // SAFETY: in-bounds, 8-byte aligned (dst is 64-byte aligned) element i.
                let slot = unsafe { &mut *(d.add(i * 8) as *mut u64) };
                movnti(slot, v);
            }
        }
    }
}

#[target_feature(enable = "avx512f")]
unsafe fn nt64(d: *mut u8, s: *const u8) {
    // SAFETY: caller guarantees AVX-512F, 64 readable bytes at s, 64 aligned writable at d.
    unsafe {
        asm!(
            "vmovdqu64 zmm0, [{s}]",
            "vmovntdq [{d}], zmm0",
            s = in(reg) s, d = in(reg) d, out("zmm0") _,
            options(nostack, preserves_flags)
        )
    };
}

#[target_feature(enable = "avx")]
unsafe fn nt32(d: *mut u8, s: *const u8) {
    // SAFETY: caller guarantees AVX, 64 readable bytes at s, 32-aligned writable at d.
    unsafe {
        asm!(
            "vmovdqu ymm0, [{s}]",
            "vmovdqu ymm1, [{s} + 32]",
            "vmovntdq [{d}], ymm0",
            "vmovntdq [{d} + 32], ymm1",
            s = in(reg) s, d = in(reg) d, out("ymm0") _, out("ymm1") _,
            options(nostack, preserves_flags)
        )
    };
}
