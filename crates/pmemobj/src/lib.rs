//! A small safe wrapper over PMDK's `libpmemobj`, for seed 003's PMDK-HT (the `tx-pm`
//! k-mer table): create or open a pool with PMDK's layout check, its root object, and
//! undo-log transactions (snapshot, allocate, free) through the function API.
//!
//! Why a crate of its own: it is the only code that calls a C library, and the FFI is
//! `unsafe` by nature; fencing it here keeps every other crate safe. The unsafe code is in
//! two modules, each opening with `#![allow(unsafe_code)]`: [`ffi`] (the types, and the
//! loader that resolves the function table) and `pool` (the calls, each with its `SAFETY`
//! argument).
//!
//! The library is loaded at run time, not linked: pmscope starts where PMDK is missing,
//! and [`ObjPool::create`], [`ObjPool::open`] and [`ObjPool::check`] then fail with
//! [`PoolError::Unavailable`], whose message says what to install. `PMSCOPE_LIBPMEMOBJ`
//! names the library file to load instead of searching for it ([`ffi::ENV_VAR`]).
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

pub use ffi::Unavailable;
pub use pool::{ObjPool, PmemError, PoolError, Tx};

/// Loads libpmemobj if it is not yet loaded: `Ok` if pools can be made here, else why not
/// (the same answer for the life of the process). For refusing a request before any work.
pub fn available() -> Result<(), Unavailable> {
    ffi::lib().map(|_| ())
}
