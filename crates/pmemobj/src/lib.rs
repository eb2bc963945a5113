//! A small safe wrapper over PMDK's `libpmemobj`, for seed 003's PMDK-HT (the `tx-pm`
//! k-mer table): create or open a pool with PMDK's layout check, its root object, and
//! undo-log transactions (snapshot, allocate, free) through the function API.
//!
//! Why a crate of its own: it is the only code that links a C library, and the FFI is
//! `unsafe` by nature; fencing it here keeps `pmscope-persist` (pure Rust, used by the
//! crash-image checker) free of the link dependency, and every other crate safe. The
//! unsafe code is in two modules, each opening with `#![allow(unsafe_code)]`: [`ffi`]
//! (declarations) and `pool` (the calls, each with its `SAFETY` argument).
//!
//! Memory model: the pool's mapping is offered as `&[AtomicU64]` ([`ObjPool::words`]);
//! objects are addressed by their byte offset from the pool's start (a `PMEMoid`'s `off`),
//! which stays valid across reopenings. Modifying persistent data inside a transaction
//! follows PMDK's rule: [`Tx::snapshot`] the range first, then store; memory from
//! [`Tx::alloc`] needs no snapshot. Transactions are per thread and give no isolation:
//! callers lock what two threads could modify at once (see the `tx-pm` table).
#![deny(missing_docs)]

pub mod ffi;
mod pool;

pub use pool::{ObjPool, PmemError, Tx};
