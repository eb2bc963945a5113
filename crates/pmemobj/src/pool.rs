//! The pool handle and transactions: every libpmemobj call pmscope makes, through the
//! function table [`ffi::lib`] loads.
#![allow(unsafe_code)]

use crate::ffi::{self, Lib, Unavailable};
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// A libpmemobj failure: PMDK's own message, and the errno it set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PmemError {
    /// `pmemobj_errormsg()` (or a description of the call that failed).
    pub message: String,
    /// The errno of the failure (0 when unknown).
    pub errno: i32,
}

impl PmemError {
    /// The last libpmemobj error of this thread.
    fn last(lib: &Lib, what: &str) -> PmemError {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        // SAFETY: pmemobj_errormsg returns a pointer to a thread-local NUL-terminated
        // buffer (never NULL in PMDK 1.12), valid until the next libpmemobj call on this
        // thread; it is copied at once.
        let msg = unsafe {
            let p = (lib.pmemobj_errormsg)();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let message = if msg.is_empty() {
            format!("{what}: {}", std::io::Error::from_raw_os_error(errno))
        } else {
            format!("{what}: {msg}")
        };
        PmemError { message, errno }
    }

    fn usage(message: String) -> PmemError {
        PmemError {
            message,
            errno: libc::EINVAL,
        }
    }
}

/// Why a pool could not be created, opened or checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// libpmemobj is not there to do it (nothing was touched).
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// libpmemobj refused.
    #[error(transparent)]
    Pmem(#[from] PmemError),
}

fn c_string(what: &str, s: &[u8]) -> Result<CString, PmemError> {
    CString::new(s).map_err(|_| PmemError::usage(format!("{what} contains a NUL byte")))
}

/// An open libpmemobj pool. Closed on drop.
pub struct ObjPool {
    lib: &'static Lib,
    pop: NonNull<ffi::PmemObjPool>,
    len: usize,
    // The pool id every oid carries: known from the first root() on.
    uuid_lo: AtomicU64,
    path: PathBuf,
}

// SAFETY: a PMEMobjpool handle may be used from any thread (libpmemobj is thread-safe;
// transactions belong to the thread that began them, which `Tx` enforces by being neither
// Send nor Sync). The memory view is `&[AtomicU64]`, shared without data races.
unsafe impl Send for ObjPool {}
// SAFETY: as above.
unsafe impl Sync for ObjPool {}

impl ObjPool {
    /// Creates the pool file `path` (it must not exist: libpmemobj creates it exclusively)
    /// of `bytes` bytes with the layout name `layout`.
    pub fn create(path: &Path, layout: &str, bytes: u64) -> Result<ObjPool, PoolError> {
        let lib = ffi::lib()?;
        let cpath = c_string("the pool path", path.as_os_str().as_bytes())?;
        let clayout = c_string("the layout name", layout.as_bytes())?;
        let bytes = bytes.max(ffi::PMEMOBJ_MIN_POOL);
        // SAFETY: both strings are NUL-terminated and outlive the call.
        let pop = unsafe {
            (lib.pmemobj_create)(cpath.as_ptr(), clayout.as_ptr(), bytes as usize, 0o644)
        };
        let pop = NonNull::new(pop).ok_or_else(|| PmemError::last(lib, "pmemobj_create"))?;
        Ok(Self::with(lib, pop, path, bytes as usize)?)
    }

    /// Opens the existing pool `path`; libpmemobj refuses it unless its layout name is
    /// `layout` (and rolls back any transaction a crash cut short).
    pub fn open(path: &Path, layout: &str) -> Result<ObjPool, PoolError> {
        let lib = ffi::lib()?;
        let cpath = c_string("the pool path", path.as_os_str().as_bytes())?;
        let clayout = c_string("the layout name", layout.as_bytes())?;
        let len = std::fs::metadata(path)
            .map_err(|e| PmemError {
                message: format!("{}: {e}", path.display()),
                errno: e.raw_os_error().unwrap_or(0),
            })?
            .len() as usize;
        // SAFETY: both strings are NUL-terminated and outlive the call.
        let pop = unsafe { (lib.pmemobj_open)(cpath.as_ptr(), clayout.as_ptr()) };
        let pop = NonNull::new(pop).ok_or_else(|| PmemError::last(lib, "pmemobj_open"))?;
        Ok(Self::with(lib, pop, path, len)?)
    }

    fn with(
        lib: &'static Lib,
        pop: NonNull<ffi::PmemObjPool>,
        path: &Path,
        len: usize,
    ) -> Result<ObjPool, PmemError> {
        let pool = ObjPool {
            lib,
            pop,
            len,
            uuid_lo: AtomicU64::new(0),
            path: path.to_path_buf(),
        };
        // An existing root gives the pool id without changing anything (a pool without
        // one gets it from the first root() call).
        let size = pool.root_size();
        if size > 0 {
            pool.root(size)?;
        }
        Ok(pool)
    }

    /// Checks the consistency of the closed pool `path` without changing it
    /// (`pmemobj_check`): `Ok(true)` consistent, `Ok(false)` not.
    pub fn check(path: &Path, layout: &str) -> Result<bool, PoolError> {
        let lib = ffi::lib()?;
        let cpath = c_string("the pool path", path.as_os_str().as_bytes())?;
        let clayout = c_string("the layout name", layout.as_bytes())?;
        // SAFETY: both strings are NUL-terminated and outlive the call.
        match unsafe { (lib.pmemobj_check)(cpath.as_ptr(), clayout.as_ptr()) } {
            1 => Ok(true),
            0 => Ok(false),
            _ => Err(PmemError::last(lib, "pmemobj_check").into()),
        }
    }

    /// The pool file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pool file is now known as `path` (it was linked there after creation).
    pub fn set_path(&mut self, path: &Path) {
        self.path = path.to_path_buf();
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (pools are at least 8 MiB).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size of the root object (0 before it is first made).
    pub fn root_size(&self) -> usize {
        // SAFETY: the pool is open.
        unsafe { (self.lib.pmemobj_root_size)(self.pop.as_ptr()) }
    }

    /// The offset of the root object, made (zeroed) or grown to at least `bytes` bytes.
    pub fn root(&self, bytes: usize) -> Result<u64, PmemError> {
        // SAFETY: the pool is open; pmemobj_root is thread-safe.
        let oid = unsafe { (self.lib.pmemobj_root)(self.pop.as_ptr(), bytes.max(8)) };
        if oid.off == 0 {
            return Err(PmemError::last(self.lib, "pmemobj_root"));
        }
        self.uuid_lo.store(oid.pool_uuid_lo, Ordering::Relaxed);
        Ok(oid.off)
    }

    /// The whole pool as 64-bit words (word `i` is at byte offset `8 * i`).
    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: a non-replicated pool is one mapping starting at the PMEMobjpool header
        // (the pool's offset 0 is `pop`), page-aligned and `len` bytes long (the file's
        // size), live until pmemobj_close in Drop; AtomicU64 has the layout of u64 and any
        // bit pattern is valid. libpmemobj's own (non-atomic) accesses touch its metadata
        // and, inside our transactions, the ranges we snapshot, which callers lock.
        unsafe { std::slice::from_raw_parts(self.pop.as_ptr().cast::<AtomicU64>(), self.len / 8) }
    }

    /// Runs `f` in a transaction: committed if it returns `Ok`, aborted (every change
    /// rolled back) if it returns `Err`, fails or panics. A crash at any point leaves the
    /// pool as before the transaction or as after it, once reopened.
    pub fn transaction<R, E: From<PmemError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let lib = self.lib;
        // SAFETY: the pool is open; a NULL jmp_buf means aborts return instead of jumping;
        // the parameter list is terminated by TX_PARAM_NONE.
        let rc = unsafe {
            (lib.pmemobj_tx_begin)(self.pop.as_ptr(), std::ptr::null_mut(), ffi::TX_PARAM_NONE)
        };
        // From here on the thread has a transaction (stage WORK, or ONABORT if begin
        // failed) that pmemobj_tx_end must close: the guard does it on every path.
        let guard = TxGuard(lib);
        if rc != 0 {
            let e = PmemError::last(lib, "pmemobj_tx_begin");
            drop(guard);
            return Err(e.into());
        }
        let tx = Tx {
            pool: self,
            _one_thread: PhantomData,
        };
        let out = f(&tx)?; // on Err the guard aborts and ends
        std::mem::forget(guard);
        // SAFETY: in a transaction of this thread; commit requires stage WORK, which holds
        // because every call in `f` used NO_ABORT and reported failures as Err.
        let rc = unsafe {
            if (lib.pmemobj_tx_stage)() == ffi::TX_STAGE_WORK {
                (lib.pmemobj_tx_commit)();
            }
            (lib.pmemobj_tx_end)()
        };
        if rc != 0 {
            return Err(PmemError {
                message: format!(
                    "the transaction failed: {}",
                    std::io::Error::from_raw_os_error(rc)
                ),
                errno: rc,
            }
            .into());
        }
        Ok(out)
    }
}

impl Drop for ObjPool {
    fn drop(&mut self) {
        // SAFETY: the pool is open and no transaction refers to it (a Tx borrows the pool).
        unsafe { (self.lib.pmemobj_close)(self.pop.as_ptr()) }
    }
}

/// Aborts and ends this thread's transaction unless it was committed.
struct TxGuard(&'static Lib);

impl Drop for TxGuard {
    fn drop(&mut self) {
        let lib = self.0;
        // SAFETY: created right after pmemobj_tx_begin on this thread; abort is only
        // called in stage WORK, and end closes any stage but NONE.
        unsafe {
            if (lib.pmemobj_tx_stage)() == ffi::TX_STAGE_WORK {
                (lib.pmemobj_tx_abort)(libc::ECANCELED);
            }
            if (lib.pmemobj_tx_stage)() != ffi::TX_STAGE_NONE {
                (lib.pmemobj_tx_end)();
            }
        }
    }
}

/// The transaction in progress on this thread (neither `Send` nor `Sync`).
pub struct Tx<'p> {
    pool: &'p ObjPool,
    _one_thread: PhantomData<*const ()>,
}

impl Tx<'_> {
    fn range(&self, off: u64, bytes: usize) -> Result<*const libc::c_void, PmemError> {
        let end = off.checked_add(bytes as u64);
        if off == 0 || end.is_none_or(|e| e > self.pool.len as u64) {
            return Err(PmemError::usage(format!(
                "the range {off}+{bytes} is outside the pool"
            )));
        }
        Ok(self
            .pool
            .words()
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(off as usize)
            .cast())
    }

    /// Saves `bytes` bytes at offset `off` in the undo log, so the transaction may modify
    /// them (an abort or a crash restores them).
    pub fn snapshot(&self, off: u64, bytes: usize) -> Result<(), PmemError> {
        let p = self.range(off, bytes)?;
        // SAFETY: in a transaction of this thread (Tx exists only inside one); [p, p+bytes)
        // lies inside the pool; NO_ABORT makes a failure return instead of aborting.
        let rc = unsafe {
            (self.pool.lib.pmemobj_tx_xadd_range_direct)(p, bytes, ffi::POBJ_FLAG_TX_NO_ABORT)
        };
        if rc != 0 {
            return Err(PmemError::last(
                self.pool.lib,
                "pmemobj_tx_add_range_direct",
            ));
        }
        Ok(())
    }

    /// Allocates `bytes` bytes (zeroed if `zero`) of type number `type_num`; returns the
    /// object's offset. Freed again if the transaction aborts.
    pub fn alloc(&self, bytes: usize, type_num: u64, zero: bool) -> Result<u64, PmemError> {
        let flags = ffi::POBJ_FLAG_TX_NO_ABORT | if zero { ffi::POBJ_FLAG_ZERO } else { 0 };
        // SAFETY: in a transaction of this thread; NO_ABORT makes a failure return
        // OID_NULL instead of aborting.
        let oid = unsafe { (self.pool.lib.pmemobj_tx_xalloc)(bytes, type_num, flags) };
        if oid.off == 0 {
            return Err(PmemError::last(self.pool.lib, "pmemobj_tx_alloc"));
        }
        Ok(oid.off)
    }

    /// Frees the object at offset `off` when the transaction commits.
    pub fn free(&self, off: u64) -> Result<(), PmemError> {
        self.range(off, 1)?;
        let oid = ffi::PmemOid {
            pool_uuid_lo: self.pool.uuid_lo.load(Ordering::Relaxed),
            off,
        };
        // SAFETY: in a transaction of this thread; NO_ABORT makes a failure return.
        let rc = unsafe { (self.pool.lib.pmemobj_tx_xfree)(oid, ffi::POBJ_FLAG_TX_NO_ABORT) };
        if rc != 0 {
            return Err(PmemError::last(self.pool.lib, "pmemobj_tx_free"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: &str = "pmscope-test";

    #[test]
    fn committed_changes_stay_aborted_ones_roll_back() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let path = dir.path().join("pool");
        let pool = ObjPool::create(&path, LAYOUT, 16 << 20).unwrap();
        let root = pool.root(64).unwrap();
        let w = |off: u64| &pool.words()[off as usize / 8];
        pool.transaction::<_, PmemError>(|tx| {
            tx.snapshot(root, 8)?;
            w(root).store(7, Ordering::Relaxed);
            let obj = tx.alloc(32, 1, true)?;
            assert_eq!(w(obj).load(Ordering::Relaxed), 0);
            tx.snapshot(root + 8, 8)?;
            w(root + 8).store(obj, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        assert_eq!(w(root).load(Ordering::Relaxed), 7);
        let r: Result<(), PmemError> = pool.transaction(|tx| {
            tx.snapshot(root, 8)?;
            w(root).store(99, Ordering::Relaxed);
            Err(PmemError::usage("changed my mind".into()))
        });
        assert_eq!(r.unwrap_err().message, "changed my mind");
        assert_eq!(w(root).load(Ordering::Relaxed), 7, "the abort rolled back");
        // A range outside the pool is an error, not a write.
        let r: Result<(), PmemError> = pool.transaction(|tx| tx.snapshot(pool.len() as u64, 8));
        assert!(r.is_err());
        // A panic inside aborts too, and the thread can begin again.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _: Result<(), PmemError> = pool.transaction(|tx| {
                tx.snapshot(root, 8)?;
                w(root).store(5, Ordering::Relaxed);
                panic!("boom");
            });
        }));
        assert!(caught.is_err());
        assert_eq!(w(root).load(Ordering::Relaxed), 7);
        drop(pool);
        assert!(ObjPool::check(&path, LAYOUT).unwrap());
        let pool = ObjPool::open(&path, LAYOUT).unwrap();
        let root = pool.root(64).unwrap();
        assert_eq!(pool.words()[root as usize / 8].load(Ordering::Relaxed), 7);
    }

    #[test]
    fn creation_is_exclusive_and_the_layout_is_checked() {
        let dir = tempfile::tempdir_in("/dev/shm").unwrap();
        let path = dir.path().join("pool");
        drop(ObjPool::create(&path, LAYOUT, 8 << 20).unwrap());
        assert!(ObjPool::create(&path, LAYOUT, 8 << 20).is_err());
        let e = ObjPool::open(&path, "another-layout").err().unwrap();
        assert!(
            matches!(&e, PoolError::Pmem(p) if p.message.starts_with("pmemobj_open")),
            "{e}"
        );
        std::fs::write(dir.path().join("text"), vec![7u8; 1 << 20]).unwrap();
        assert!(ObjPool::open(&dir.path().join("text"), LAYOUT).is_err());
    }
}
