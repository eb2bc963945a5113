//! The only crate of pmscope that talks to the kernel: syscalls, CPUID, the TSC, and every
//! read of `/sys` and `/proc`.
//!
//! File readers take a [`sysroot::SysRoot`] instead of hard-coding `/`, so every detection
//! path is tested against fake trees in `tests/fixtures/sysroot/` (pmdk's habit). Syscall
//! wrappers are thin and safe where the kernel cannot hurt us (`move_pages` with
//! `nodes = NULL` only reads), `unsafe fn` where the caller must promise something about
//! an address range (`mbind`, `munmap`).
//!
//! Modules that need `unsafe` open with `#![allow(unsafe_code)]`; the crate denies it
//! elsewhere.
#![deny(missing_docs)]

pub mod affinity;
pub mod coreclock;
pub mod cpu;
pub mod cxl;
pub mod dax;
pub mod environment;
pub mod hugepages;
pub mod hw_prefetchers;
pub mod memory;
pub mod mman;
pub mod mountinfo;
pub mod numa;
pub mod pagemap;
pub mod path;
pub mod perf;
pub mod pmem;
pub mod prefetch;
pub mod process;
pub mod rusage;
pub mod scratch;
pub mod signal;
pub mod smaps;
pub mod sysroot;
pub mod thp;
pub mod tsc;
