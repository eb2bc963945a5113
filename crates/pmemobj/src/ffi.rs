//! Hand-written declarations of the few libpmemobj functions pmscope uses, checked against
//! PMDK 1.12's headers (`/usr/include/libpmemobj/{base,pool_base,tx_base}.h`).
//!
//! The `TX_BEGIN` family of C macros wraps `setjmp`/`longjmp`, which Rust cannot use, so
//! transactions go through the function API: `pmemobj_tx_begin(pop, NULL, TX_PARAM_NONE)`
//! (a NULL `jmp_buf` means an abort never jumps), every call that may fail made with its
//! `NO_ABORT` flag so it returns an error instead of aborting behind our back, and
//! `pmemobj_tx_end` after every begin, whatever happened.
#![allow(unsafe_code)]
#![allow(missing_docs)]

use libc::{c_char, c_int, c_void, mode_t, size_t};

/// `PMEMobjpool`: opaque.
#[repr(C)]
pub struct PmemObjPool {
    _private: [u8; 0],
}

/// `PMEMoid`: a persistent pointer (pool id, offset from the pool's start).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PmemOid {
    pub pool_uuid_lo: u64,
    pub off: u64,
}

/// `enum pobj_tx_param`: the terminator of `pmemobj_tx_begin`'s parameter list.
pub const TX_PARAM_NONE: c_int = 0;
/// `enum pobj_tx_stage`.
pub const TX_STAGE_NONE: c_int = 0;
pub const TX_STAGE_WORK: c_int = 1;
/// `POBJ_FLAG_ZERO` (`POBJ_XALLOC_ZERO`).
pub const POBJ_FLAG_ZERO: u64 = 1;
/// `POBJ_FLAG_TX_NO_ABORT` (`POBJ_XADD_NO_ABORT`, `POBJ_XALLOC_NO_ABORT`, ...).
pub const POBJ_FLAG_TX_NO_ABORT: u64 = 1 << 4;
/// `PMEMOBJ_MIN_POOL`: the smallest pool libpmemobj creates (8 MiB).
pub const PMEMOBJ_MIN_POOL: u64 = 8 << 20;
/// `PMEMOBJ_MAX_LAYOUT`: layout names are shorter than this (with the NUL).
pub const PMEMOBJ_MAX_LAYOUT: usize = 1024;

// The library is linked by build.rs.
unsafe extern "C" {
    pub fn pmemobj_create(
        path: *const c_char,
        layout: *const c_char,
        poolsize: size_t,
        mode: mode_t,
    ) -> *mut PmemObjPool;
    pub fn pmemobj_open(path: *const c_char, layout: *const c_char) -> *mut PmemObjPool;
    pub fn pmemobj_close(pop: *mut PmemObjPool);
    pub fn pmemobj_check(path: *const c_char, layout: *const c_char) -> c_int;
    pub fn pmemobj_root(pop: *mut PmemObjPool, size: size_t) -> PmemOid;
    pub fn pmemobj_root_size(pop: *mut PmemObjPool) -> size_t;
    pub fn pmemobj_errormsg() -> *const c_char;

    pub fn pmemobj_tx_begin(pop: *mut PmemObjPool, env: *mut c_void, ...) -> c_int;
    pub fn pmemobj_tx_stage() -> c_int;
    pub fn pmemobj_tx_commit();
    pub fn pmemobj_tx_abort(errnum: c_int);
    pub fn pmemobj_tx_end() -> c_int;
    pub fn pmemobj_tx_xadd_range_direct(ptr: *const c_void, size: size_t, flags: u64) -> c_int;
    pub fn pmemobj_tx_xalloc(size: size_t, type_num: u64, flags: u64) -> PmemOid;
    pub fn pmemobj_tx_xfree(oid: PmemOid, flags: u64) -> c_int;
}
