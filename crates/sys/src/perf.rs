//! Whether hardware performance counters work here. pmscope never fakes a counter: where
//! `perf_event_open` refuses a hardware event, the answer is "unavailable" with the errno.
#![allow(unsafe_code)]

use serde::{Deserialize, Serialize};

/// The outcome of trying to open a hardware cycle counter for this thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerfAvailability {
    /// Whether the counter opened.
    pub available: bool,
    /// Why not, if it did not (`ENOENT: no such hardware event`, ...).
    pub reason: Option<String>,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_HW_CACHE: u32 = 3;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// `PERF_COUNT_HW_CACHE_LL`, `_DTLB`; `_OP_READ` = 0, `_RESULT_MISS` = 1.
const CACHE_LL: u64 = 2;
const CACHE_DTLB: u64 = 3;
const CACHE_READ_MISS: u64 = 1 << 16;
/// `PERF_ATTR_SIZE_VER0`: the kernel accepts this original layout forever.
const ATTR_SIZE: usize = 64;
/// `_IO('$', 0)`, `_IO('$', 1)`, `_IO('$', 3)`.
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;

/// Opens one user-space counting event on the calling thread, disabled.
fn open(kind: u32, config: u64) -> Result<libc::c_int, std::io::Error> {
    // perf_event_attr, version 0: type u32, size u32, config u64, then sample fields; the
    // flag bits start at byte 40 (bit 0 disabled, bit 5 exclude_kernel, bit 6 exclude_hv).
    let mut attr = [0u8; ATTR_SIZE];
    attr[0..4].copy_from_slice(&kind.to_ne_bytes());
    attr[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&config.to_ne_bytes());
    let flags: u64 = 1 | (1 << 5) | (1 << 6);
    attr[40..48].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: the attr buffer is a live local of the size it declares; pid 0 / cpu -1 is the
    // calling thread on any CPU; no group fd, no flags.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd >= 0 {
        Ok(fd as libc::c_int)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Why an event did not open, as one phrase with the errno.
fn refusal(event: &str, e: &std::io::Error) -> String {
    let why = match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
            "no such hardware event (typical inside a VM without a virtual PMU)"
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "not permitted (see /proc/sys/kernel/perf_event_paranoid)"
        }
        Some(libc::ENOSYS) => "perf_event_open is not available in this kernel",
        _ => "perf_event_open failed",
    };
    format!("{event}: {why}: {e}")
}

/// Tries `perf_event_open(PERF_TYPE_HARDWARE, CPU_CYCLES)` on the calling thread, user space
/// only, disabled; closes it at once.
pub fn probe() -> PerfAvailability {
    match open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES) {
        Ok(fd) => {
            // SAFETY: fd was just returned by the kernel and is closed once.
            unsafe { libc::close(fd) };
            PerfAvailability {
                available: true,
                reason: None,
            }
        }
        Err(e) => PerfAvailability {
            available: false,
            reason: Some(refusal("cycles", &e)),
        },
    }
}

/// Data-TLB and last-level-cache read misses of the calling thread, user space only (the
/// seed 000 authors' `perf` counts). Opened on the thread that runs the measured code: the
/// events count that thread wherever it runs.
#[derive(Debug)]
pub struct CacheMisses {
    dtlb: libc::c_int,
    llc: libc::c_int,
}

/// The counts of one measured stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissCounts {
    /// dTLB read (load) misses.
    pub dtlb_load_misses: u64,
    /// Last-level cache read misses.
    pub llc_load_misses: u64,
}

impl CacheMisses {
    /// Opens both events, or says why not (which event, why, the errno): the caller reports
    /// the counts as unavailable with that reason, never a number.
    pub fn open() -> Result<CacheMisses, String> {
        let dtlb = open(PERF_TYPE_HW_CACHE, CACHE_DTLB | CACHE_READ_MISS)
            .map_err(|e| refusal("dTLB-load-misses", &e))?;
        match open(PERF_TYPE_HW_CACHE, CACHE_LL | CACHE_READ_MISS) {
            Ok(llc) => Ok(CacheMisses { dtlb, llc }),
            Err(e) => {
                // SAFETY: dtlb was just returned by the kernel and is closed once.
                unsafe { libc::close(dtlb) };
                Err(refusal("LLC-load-misses", &e))
            }
        }
    }

    /// Zeroes and starts both counters.
    pub fn start(&self) {
        for fd in [self.dtlb, self.llc] {
            // SAFETY: fd is an open perf event this value owns; these ioctls take no argument.
            unsafe {
                libc::ioctl(fd, IOC_RESET as _, 0);
                libc::ioctl(fd, IOC_ENABLE as _, 0);
            }
        }
    }

    /// Stops both counters and reads them.
    pub fn stop(&self) -> Result<MissCounts, String> {
        let mut out = [0u64; 2];
        for (fd, slot) in [self.dtlb, self.llc].into_iter().zip(out.iter_mut()) {
            let mut v = 0u64;
            // SAFETY: fd is an open perf event this value owns; without a read_format the
            // kernel writes exactly one u64 into the 8-byte local.
            let n = unsafe {
                libc::ioctl(fd, IOC_DISABLE as _, 0);
                libc::read(fd, (&mut v as *mut u64).cast(), 8)
            };
            if n != 8 {
                return Err(format!(
                    "reading a perf counter: {}",
                    std::io::Error::last_os_error()
                ));
            }
            *slot = v;
        }
        Ok(MissCounts {
            dtlb_load_misses: out[0],
            llc_load_misses: out[1],
        })
    }
}

impl Drop for CacheMisses {
    fn drop(&mut self) {
        for fd in [self.dtlb, self.llc] {
            // SAFETY: fd is an open perf event this value owns, closed once here.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Either both counters open and count a pass over 64 MiB, or the refusal names the
    /// event and the reason: never a number without a counter behind it.
    #[test]
    fn cache_misses_count_or_say_why_not() {
        match CacheMisses::open() {
            Ok(c) => {
                let v = vec![1u8; 64 << 20];
                c.start();
                let mut sum = 0u64;
                for i in (0..v.len()).step_by(4096) {
                    sum += u64::from(std::hint::black_box(v[i]));
                }
                let n = c.stop().unwrap();
                assert_eq!(sum, (v.len() / 4096) as u64);
                assert!(n.dtlb_load_misses > 0 || n.llc_load_misses > 0, "{n:?}");
            }
            Err(why) => {
                assert!(
                    why.starts_with("dTLB-load-misses: ") || why.starts_with("LLC-load-misses: "),
                    "{why}"
                );
            }
        }
    }
}
