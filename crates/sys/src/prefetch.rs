//! Software prefetch: ask the CPU to start loading a cache line that a later instruction
//! will need, so that several independent random accesses overlap instead of waiting one
//! after another (the k-mer table issues a batch of these before it probes; issue 6).
//!
//! `prefetcht0` never faults and has no architectural effect besides the cache, so the
//! wrapper is safe for any reference; on other architectures it does nothing.
#![allow(unsafe_code)]

/// Hints that the cache line holding `*r` will be read or written soon (into all cache
/// levels: `prefetcht0`, Intel SDM vol. 2B "PREFETCHh").
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `r` is a valid reference; prefetcht0 only hints the cache, never faults, and
    // does not read or write the value as far as the program can observe. SSE is part of
    // the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (r as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

#[cfg(test)]
mod tests {
    #[test]
    fn prefetch_leaves_the_value_alone() {
        let v = [7u64; 16];
        for x in &v {
            super::prefetch(x);
        }
        assert!(v.iter().all(|&x| x == 7));
    }
}
