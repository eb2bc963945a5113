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
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// `PERF_ATTR_SIZE_VER0`: the kernel accepts this original layout forever.
const ATTR_SIZE: usize = 64;

/// Tries `perf_event_open(PERF_TYPE_HARDWARE, CPU_CYCLES)` on the calling thread, user space
/// only, disabled; closes it at once.
pub fn probe() -> PerfAvailability {
    // perf_event_attr, version 0: type u32, size u32, config u64, then sample fields; the
    // flag bits start at byte 40 (bit 0 disabled, bit 5 exclude_kernel, bit 6 exclude_hv).
    let mut attr = [0u8; ATTR_SIZE];
    attr[0..4].copy_from_slice(&PERF_TYPE_HARDWARE.to_ne_bytes());
    attr[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&PERF_COUNT_HW_CPU_CYCLES.to_ne_bytes());
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
        // SAFETY: fd was just returned by the kernel and is closed once.
        unsafe { libc::close(fd as libc::c_int) };
        PerfAvailability {
            available: true,
            reason: None,
        }
    } else {
        let e = std::io::Error::last_os_error();
        let why = match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
                "no hardware cycle event (typical inside a VM without a virtual PMU)"
            }
            Some(libc::EACCES) | Some(libc::EPERM) => {
                "not permitted (see /proc/sys/kernel/perf_event_paranoid)"
            }
            Some(libc::ENOSYS) => "perf_event_open is not available in this kernel",
            _ => "perf_event_open failed",
        };
        PerfAvailability {
            available: false,
            reason: Some(format!("{why}: {e}")),
        }
    }
}
