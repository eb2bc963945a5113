//! Making stores durable: the cache-line write-back and fence instructions, and the named
//! persist strategies built from them.
//!
//! A [`PersistStrategy`] is a value at the edge (the CLI's `--persist clwb`, a workload's
//! choice) and is checked against CPUID once, when a [`Persister`] is made: asking for an
//! instruction the CPU lacks is an error, never SIGILL. Every strategy is a *flush* (per
//! cache line) plus a *drain* (once per persisted range):
//!
//! | strategy     | flush per 64 B line          | drain                   |
//! |--------------|------------------------------|-------------------------|
//! | `clflush`    | `clflush` (ordered, evicts)  | none needed             |
//! | `clflushopt` | `clflushopt` (weakly ordered)| `sfence`                |
//! | `clwb`       | `clwb` (may keep the line)   | `sfence`                |
//! | `ntstore`    | data written with `movnt*`   | `sfence`                |
//! | `none`       | nothing (eADR or volatile)   | nothing                 |
//! | `msync`      | nothing                      | `msync(MS_SYNC)` of the pages |
//!
//! ```
//! use pmscope_persist::{PersistStrategy, Persister};
//! use pmscope_sys::cpu::CpuFeatures;
//! let p = Persister::new(PersistStrategy::Clflush, &CpuFeatures::detect()).unwrap();
//! let mut data = vec![0u8; 256];
//! p.copy_persist(&mut data, &[7u8; 256]).unwrap();
//! assert!(data.iter().all(|&b| b == 7));
//! ```
#![deny(missing_docs)]

pub mod arch;
pub mod shadow;
mod strategy;
pub mod words;

pub use strategy::{PersistStrategy, Persister, STRATEGIES, Unsupported};
pub use words::{PersistCounts, PersistentWords};

/// The cache-line size every flush steps by.
pub const LINE: usize = 64;
