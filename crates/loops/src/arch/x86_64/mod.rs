//! x86-64 inline-assembly loops.

pub mod chase;
pub mod ops;
pub mod stream;
