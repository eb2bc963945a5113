//! Running measurements: the calibrated cycle [`timer`], [`pin`]ned worker threads released
//! together, the environment [`sanity`] checks every experiment records with its results,
//! and the [`harness`] — the per-target pipeline (map, verify, pin, record) every measuring
//! command shares — with its real or null [`executor`], and the adaptive [`repeat`]ition of
//! each point with its contention watch; and the programs pmscope starts: a
//! program under a target ([`launch`], the preload library of `pmscope run` and `pmscope
//! app`) and the other [`child`] processes it supervises. This crate knows threads, time,
//! targets, processes and records, not kernels: it runs whatever per-thread work it is
//! handed. It contains no `unsafe`; the TSC, affinity and process syscalls are
//! `pmscope-sys`'s.
#![deny(missing_docs)]

pub mod child;
pub mod executor;
pub mod harness;
pub mod interrupt;
pub mod launch;
pub mod pin;
pub mod repeat;
pub mod sanity;
pub mod timer;
