//! Dependent-load loops. Each `mov p, [p]` needs the previous load's result, so loads
//! cannot overlap; the loop is unrolled 16 times so loop overhead is negligible next to a
//! cache or memory access.
#![allow(unsafe_code)]

use core::arch::asm;

/// Follows the chain for `loads` loads (rounded up to a multiple of 16); returns where it
/// stopped.
///
/// # Safety
/// `p` must be the start of (or a slot in) a chain whose every pointer leads to another
/// slot of the chain, in memory alive and unmodified for the duration.
#[inline(never)]
pub unsafe fn chase(mut p: *const usize, loads: u64) -> *const usize {
    let mut iters = loads.div_ceil(16).max(1);
    // SAFETY: the caller guarantees every pointer followed is a valid slot.
    unsafe {
        asm!(
            "2:",
            "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]",
            "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]",
            "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]",
            "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]", "mov {p}, [{p}]",
            "dec {n}",
            "jnz 2b",
            p = inout(reg) p,
            n = inout(reg) iters,
            options(nostack, readonly),
        );
    }
    let _ = iters;
    p
}

/// One dependent load between serialising timestamp reads (`lfence; rdtsc; lfence` before,
/// `rdtscp; lfence` after): returns the next pointer and the ticks elapsed, which include
/// the timer's own overhead (subtracted by the caller).
///
/// # Safety
/// As for [`chase`].
#[inline(never)]
pub unsafe fn timed_load(p: *const usize) -> (*const usize, u64) {
    let next: *const usize;
    let (lo0, hi0, lo1, hi1): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees `p` points at a valid slot; rdtsc/rdtscp/lfence exist
    // on every CPU pmscope times single accesses on (checked through CpuFeatures::rdtscp).
    unsafe {
        asm!(
            "lfence",
            "rdtsc",
            "lfence",
            "mov {t0lo:e}, eax",
            "mov {t0hi:e}, edx",
            "mov {next}, [{p}]",
            "rdtscp",
            "lfence",
            p = in(reg) p,
            next = out(reg) next,
            t0lo = out(reg) lo0,
            t0hi = out(reg) hi0,
            out("eax") lo1,
            out("edx") hi1,
            out("ecx") _,
            options(nostack, readonly),
        );
    }
    let t0 = ((hi0 as u64) << 32) | lo0 as u64;
    let t1 = ((hi1 as u64) << 32) | lo1 as u64;
    (next, t1.wrapping_sub(t0))
}

/// An empty timed interval with the same fences as [`timed_load`]: the overhead to
/// subtract.
#[inline(never)]
pub fn timed_nothing() -> u64 {
    let (lo0, hi0, lo1, hi1): (u32, u32, u32, u32);
    // SAFETY: as for timed_load, without any memory access.
    unsafe {
        asm!(
            "lfence",
            "rdtsc",
            "lfence",
            "mov {t0lo:e}, eax",
            "mov {t0hi:e}, edx",
            "rdtscp",
            "lfence",
            t0lo = out(reg) lo0,
            t0hi = out(reg) hi0,
            out("eax") lo1,
            out("edx") hi1,
            out("ecx") _,
            options(nostack, nomem),
        );
    }
    let t0 = ((hi0 as u64) << 32) | lo0 as u64;
    let t1 = ((hi1 as u64) << 32) | lo1 as u64;
    t1.wrapping_sub(t0)
}
