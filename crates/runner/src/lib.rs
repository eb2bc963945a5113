//! Running measurements: the calibrated cycle [`timer`], [`pin`]ned worker threads released
//! together, the environment [`sanity`] checks every experiment records with its results,
//! and the [`harness`] — the per-target pipeline (map, verify, pin, record) every measuring
//! command shares — with its real or null [`executor`]. This crate knows threads, time,
//! targets and records, not kernels: it runs whatever per-thread work it is handed. It
//! contains no `unsafe`; the TSC and affinity syscalls are `pmscope-sys`'s.
#![deny(missing_docs)]

pub mod executor;
pub mod harness;
pub mod interrupt;
pub mod launch;
pub mod pin;
pub mod sanity;
pub mod timer;
