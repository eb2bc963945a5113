//! Running measurements: the calibrated cycle [`timer`], [`pin`]ned worker threads released
//! together, and the environment [`sanity`] checks every experiment records with its
//! results. This crate knows threads, time and statistics, not kernels: it runs whatever
//! per-thread work it is handed. It contains no `unsafe`; the TSC and affinity syscalls are
//! `pmscope-sys`'s.
#![deny(missing_docs)]

pub mod pin;
pub mod sanity;
pub mod timer;
