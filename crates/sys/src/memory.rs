//! Memory facts of the whole system and of this thread: available memory (for the
//! `--max-mem` guard) and minor-fault counts (the page-size evidence that works for every
//! target kind, including fsdax files that smaps cannot see).
#![allow(unsafe_code)]

use crate::sysroot::SysRoot;

/// A field of `/proc/meminfo` in bytes (`MemAvailable`, `MemTotal`, ...).
pub fn meminfo_bytes(root: &SysRoot, field: &str) -> Option<u64> {
    parse_meminfo(&root.read("proc/meminfo")?, field)
}

fn parse_meminfo(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != field {
            return None;
        }
        let mut it = v.split_whitespace();
        let n: u64 = it.next()?.parse().ok()?;
        Some(match it.next() {
            Some("kB") => n * 1024,
            _ => n,
        })
    })
}

/// Minor page faults of the calling thread so far (`getrusage(RUSAGE_THREAD)`).
pub fn thread_minor_faults() -> u64 {
    const RUSAGE_THREAD: libc::c_int = 1;
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the valid local.
    let rc = unsafe { libc::getrusage(RUSAGE_THREAD, &mut ru) };
    if rc == 0 { ru.ru_minflt as u64 } else { 0 }
}

/// The kernel's base page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let s = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if s > 0 { s as usize } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_meminfo_fields() {
        let t = "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\nHugePages_Free:  4\n";
        assert_eq!(parse_meminfo(t, "MemAvailable"), Some(1000 * 1024));
        assert_eq!(parse_meminfo(t, "HugePages_Free"), Some(4));
        assert_eq!(parse_meminfo(t, "Nope"), None);
        assert!(meminfo_bytes(&SysRoot::at("/"), "MemTotal").unwrap() > 0);
    }

    #[test]
    fn faults_count_touched_pages() {
        let before = thread_minor_faults();
        let mut v = std::hint::black_box(Vec::<u8>::with_capacity(64 << 20));
        v.resize(64 << 20, 1);
        let v = std::hint::black_box(v);
        assert!(v[12345] == 1);
        // A fresh 64 MiB allocation faults in at least some pages on this thread.
        assert!(thread_minor_faults() > before);
    }
}
