//! Making stores durable: the cache-line write-back, fence and non-temporal store
//! instructions ([`insn`], one zero-sized type each, the only place pmscope writes them as
//! single instructions), and the named persist strategies built from them.
//!
//! A [`PersistStrategy`] is a value at the edge (the CLI's `--persist clwb`, a workload's
//! choice) and is checked against CPUID once, when a [`Persister`] is made: asking for an
//! instruction the CPU lacks is an error, never SIGILL. Where no strategy is named
//! ([`PersistChoice::Default`]), the default is the best write-back the CPU has: `clwb`,
//! else `clflushopt`, else `clflush` ([`DEFAULT_ORDER`]; every x86-64 CPU has `clflush`),
//! and the persister says when it fell back ([`Persister::fallback_note`]) and which
//! instructions it executes ([`Persister::instructions`]), for the record. That check is the gate, and it is
//! a convention enforced by `unsafe`, not by the compiler's target features: `clflushopt`
//! and `clwb` are plain `asm!` in `unsafe fn`s (only the vector non-temporal stores are
//! `#[target_feature]` functions), so the only safe way to execute a flush is a
//! `Persister`, and the only other callers are the `unsafe` loops of `pmscope-loops`, which
//! check the same CPUID bits first. A `Persister` dispatches once per call to a monomorphic
//! loop over the strategy's flush and fence types, with no branch per line. Every strategy
//! is a *flush* (per cache line) plus a *drain* (once per persisted range), spelled out by
//! [`PersistStrategy::recipe`]:
//!
//! | strategy     | flush per 64 B line          | drain                   |
//! |--------------|------------------------------|-------------------------|
//! | `clflush`    | `clflush` (ordered, evicts)  | none needed             |
//! | `clflushopt` | `clflushopt` (weakly ordered)| `sfence`                |
//! | `clwb`       | `clwb` (may keep the line)   | `sfence`                |
//! | `ntstore`    | data written with `movntdq` (16 B, SSE2) / `vmovntdq` (32 B AVX, 64 B AVX-512F); partial lines flushed with the default's write-back | `sfence` |
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

mod domain;
#[cfg(target_arch = "x86_64")]
pub mod insn;
pub mod record;
pub mod shadow;
mod strategy;
#[cfg(target_arch = "x86_64")]
pub mod trace;
pub mod words;

pub use domain::domain_warning;
pub use strategy::{
    DEFAULT_ORDER, Drain, PersistChoice, PersistStrategy, Persister, Recipe, STRATEGIES,
    StrategyError,
};
pub use words::{PersistCounts, PersistentWords, WordMemory};

/// The cache-line size every flush steps by.
pub const LINE: usize = 64;
