//! Resource use of the whole process (`getrusage(RUSAGE_SELF)`): the peak resident set,
//! which the k-mer workload reports beside its times as its peers' benchmarks do.
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

#[cfg(test)]
mod tests {
    #[test]
    fn peak_rss_grows_with_touched_memory() {
        let before = super::peak_rss_bytes().unwrap();
        let v = vec![1u8; 64 << 20];
        let after = super::peak_rss_bytes().unwrap();
        assert!(v.iter().map(|&b| b as u64).sum::<u64>() == 64 << 20);
        assert!(after >= before && after >= 64 << 20, "{before} {after}");
    }
}
