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

/// Follows `cursors.len()` chains side by side for `rounds` rounds: each round loads the
/// next slot of every chain in turn. A load depends only on the previous load of its own
/// chain, so the core can have one miss in flight per chain (memory-level parallelism,
/// up to its fill buffers); each cursor is kept in `cursors` (an L1 hit and a store
/// forward per load, a few cycles against a miss).
///
/// # Safety
/// Every cursor must be a slot of a chain as for [`chase`].
#[inline(never)]
pub unsafe fn chase_parallel(cursors: &mut [*const usize], rounds: u64) {
    for _ in 0..rounds {
        for c in cursors.iter_mut() {
            // SAFETY: the caller guarantees each cursor points at a valid slot, whose
            // word is the next slot.
            *c = unsafe { core::ptr::read_volatile(*c) } as *const usize;
        }
    }
}

/// One dependent load between serialising timestamp reads (`pmscope_sys::tsc::start` and
/// `stop`, the same discipline as every timed access): returns the next pointer and
/// the ticks elapsed, which include the timer's own overhead (`ops::timed_nothing`).
///
/// # Safety
/// As for [`chase`].
#[inline(never)]
pub unsafe fn timed_load(p: *const usize) -> (*const usize, u64) {
    let next: *const usize;
    let t0 = pmscope_sys::tsc::start();
    // SAFETY: the caller guarantees `p` points at a valid slot of the chain.
    unsafe {
        asm!("mov {next}, [{p}]", p = in(reg) p, next = out(reg) next, options(nostack, readonly, preserves_flags))
    };
    let t1 = pmscope_sys::tsc::stop();
    (next, t1.wrapping_sub(t0))
}
