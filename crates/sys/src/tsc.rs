//! Raw reads of the time-stamp counter with the serialisation discipline of Intel's
//! "How to Benchmark Code Execution Times" (Paoloni, 2010): `lfence; rdtsc` to open an
//! interval (earlier instructions have completed, later ones have not started), `rdtscp;
//! lfence` to close it (the timed instructions have completed, later ones wait).
//! Calibration to nanoseconds lives in `pmscope-runner`'s timer.
#![allow(unsafe_code)]

/// Reads the TSC at the start of a timed interval: `lfence; rdtsc; lfence` (earlier
/// instructions have completed; the timed ones have not started). Every TSC interval in
/// pmscope opens here: the runner's timer and the loops' single timed accesses and loads.
#[inline(always)]
pub fn start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let (lo, hi): (u32, u32);
        // SAFETY: lfence and rdtsc exist on every x86-64 CPU and only read the counter. No
        // `nomem`: the asm is a compiler barrier too, so no memory access of the timed code
        // is moved out of the interval.
        unsafe {
            core::arch::asm!("lfence", "rdtsc", "lfence", out("eax") lo, out("edx") hi, options(nostack, preserves_flags))
        };
        ((hi as u64) << 32) | lo as u64
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// Reads the TSC at the end of a timed interval: `rdtscp; lfence` (the timed instructions
/// have completed; later ones wait). Requires `rdtscp` (checked by the caller through
/// `CpuFeatures::rdtscp`; every x86-64 CPU since 2008 has it).
#[inline(always)]
pub fn stop() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let (lo, hi): (u32, u32);
        // SAFETY: rdtscp exists on the CPUs pmscope times on (the timer and the loops check
        // CPUID before they choose the TSC); it only reads the counter and TSC_AUX.
        unsafe {
            core::arch::asm!("rdtscp", "lfence", out("eax") lo, out("edx") hi, out("ecx") _, options(nostack, preserves_flags))
        };
        ((hi as u64) << 32) | lo as u64
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// `CLOCK_MONOTONIC_RAW` in nanoseconds: the reference the TSC is calibrated against and
/// the fallback timer (not slewed by NTP, unlike CLOCK_MONOTONIC).
pub fn monotonic_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid local `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid local `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn tsc_advances() {
        let a = super::start();
        let b = super::stop();
        assert!(b > a);
    }
}
