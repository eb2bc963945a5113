//! The instruction-level kernels pmscope times: dependent-load chains ([`chain`],
//! [`chase`]), single timed accesses and throughput streams made of load/store/flush/fence
//! sequences ([`access`], named by the op [`catalog`]), and pmmeter's synchronisation loops.
//!
//! Kernels operate on raw memory that a `pmscope_mapping::Mapping` owns; every entry point
//! takes a [`Region`], checked once (bounds, alignment) before the loop, and the loops
//! themselves are inline assembly so the compiler can neither remove nor merge a timed
//! access. Instructions a CPU lacks are refused through [`Unsupported`] before any loop
//! runs, never by SIGILL.
#![deny(missing_docs)]

pub mod access;
mod arch;
pub mod catalog;
pub mod chain;
pub mod chase;
mod region;
pub mod rng;
pub mod stream;

pub use region::Region;

/// An operation this CPU cannot execute (or that has no such form).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct Unsupported {
    /// The operation.
    pub what: String,
    /// Why, in a few words (`this CPU lacks clwb`).
    pub reason: String,
}
