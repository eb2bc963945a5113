//! Resource use of the whole process (`getrusage(RUSAGE_SELF)`): the peak resident set,
//! which the k-mer workload reports beside its times as its peers' benchmarks do, and the
//! process's CPU time to the nanosecond, which the runner holds against wall time to tell a
//! repetition that had its CPUs from one that shared them.
#![allow(unsafe_code)]

/// The peak resident set size of this process so far, in bytes (`ru_maxrss`, which Linux
/// reports in KiB); `None` if getrusage fails.
pub fn peak_rss_bytes() -> Option<u64> {
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the valid local.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (rc == 0).then(|| ru.ru_maxrss as u64 * 1024)
}

/// CPU time this process has used so far, user plus system, all threads, in seconds.
/// Beside a wall time it shows how much of the machine a phase had (other work on the
/// same cores stretches the wall time, not the CPU time).
pub fn cpu_seconds() -> Option<f64> {
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the valid local.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (rc == 0).then(|| secs(ru.ru_utime) + secs(ru.ru_stime))
}

/// CPU time this process has used so far, all threads, in nanoseconds
/// (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`: the scheduler's own account, not rounded
/// to ticks as getrusage may be); `None` if the clock cannot be read.
pub fn process_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The unit of the tick counts in `/proc/stat` (USER_HZ, `sysconf(_SC_CLK_TCK)`: 100 on
/// every common kernel); `None` if sysconf does not say.
pub fn clock_ticks_per_second() -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as u64)
}

#[cfg(test)]
mod tests {
    /// The process clock advances with work done, by about the work's wall time on one
    /// thread (behaviour, not a timing: only that it moved and not by more than it could).
    #[test]
    fn process_cpu_time_counts_work_done() {
        let before = super::process_cpu_ns().unwrap();
        let wall = std::time::Instant::now();
        let mut x = 0u64;
        while wall.elapsed() < std::time::Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = super::process_cpu_ns().unwrap();
        assert!(after > before, "{before} -> {after}");
        assert!(super::clock_ticks_per_second().unwrap() >= 1);
    }

    #[test]
    fn peak_rss_grows_with_touched_memory() {
        let before = super::peak_rss_bytes().unwrap();
        let v = vec![1u8; 64 << 20];
        let after = super::peak_rss_bytes().unwrap();
        assert!(v.iter().map(|&b| b as u64).sum::<u64>() == 64 << 20);
        assert!(after >= before && after >= 64 << 20, "{before} {after}");
    }
}
