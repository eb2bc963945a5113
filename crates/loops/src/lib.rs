//! The instruction-level kernels pmscope times: dependent-load chains ([`chain`],
//! [`chase`]), single timed accesses and throughput streams made of load/store/flush/fence
//! sequences ([`access`], named by the op [`catalog`]), and pmmeter's synchronisation loops.
//!
//! Kernels operate on raw memory that a `pmscope_mapping::Mapping` owns; every entry point
//! takes a [`Region`], checked once (bounds, alignment) before the loop, and the loops
//! themselves are inline assembly so the compiler can neither remove nor merge a timed
//! access. Instructions a CPU lacks are refused through [`Unavailable`] before any loop
//! runs, never by SIGILL.
#![deny(missing_docs)]

pub mod access;
mod arch;
pub mod catalog;
pub mod chain;
pub mod chase;
pub mod offsets;
pub mod probe;
mod region;
pub mod rng;
pub mod stream;

pub use region::Region;

/// An access sequence or stream this CPU cannot run, or that has no such form. Its class
/// is part of it: [`is_usage`](Self::is_usage) says whether the remedy is a different
/// command line (exit 2) or the machine (exit 1), so callers never decide it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct Unavailable {
    /// The operation.
    pub what: String,
    /// Why, in a few words (`this CPU lacks clwb`).
    pub reason: String,
    /// Whether asking for something else is the remedy.
    usage: bool,
}

impl Unavailable {
    /// What was asked has no such form, or needs an instruction this CPU lacks: another
    /// op, width or size is the remedy (a usage error).
    pub(crate) fn asked(what: impl Into<String>, reason: impl Into<String>) -> Unavailable {
        Unavailable {
            what: what.into(),
            reason: reason.into(),
            usage: true,
        }
    }

    /// The machine cannot do it whatever is asked (no timer for single accesses): a
    /// runtime failure.
    pub(crate) fn machine(what: impl Into<String>, reason: impl Into<String>) -> Unavailable {
        Unavailable {
            what: what.into(),
            reason: reason.into(),
            usage: false,
        }
    }

    /// Whether this is a usage error (exit 2) rather than the machine's limit (exit 1).
    pub fn is_usage(&self) -> bool {
        self.usage
    }
}
