//! Hand-written declarations of the few libpmemobj functions pmscope uses, checked against
//! PMDK 1.12's headers (`/usr/include/libpmemobj/{base,pool_base,tx_base}.h`).
//!
//! The `TX_BEGIN` family of C macros wraps `setjmp`/`longjmp`, which Rust cannot use, so
//! transactions go through the function API: `pmemobj_tx_begin(pop, NULL, TX_PARAM_NONE)`
//! (a NULL `jmp_buf` means an abort never jumps), every call that may fail made with its
//! `NO_ABORT` flag so it returns an error instead of aborting behind our back, and
//! `pmemobj_tx_end` after every begin, whatever happened.
//!
//! The library is not linked: [`lib`] loads it with `dlopen` on first use (the runtime
//! soname `libpmemobj.so.1`, then `libpmemobj.so`, or the file [`ENV_VAR`] names) and
//! resolves every function into [`Lib`], once per process. So pmscope starts and runs
//! everything but the tx-pm table where PMDK is not installed, and says what to install
//! when the table is asked for ([`Unavailable`]).
#![allow(unsafe_code)]
#![allow(missing_docs)]

use libc::{c_char, c_int, c_void, mode_t, size_t};
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
use std::ffi::CStr;
use std::sync::OnceLock;

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

/// The environment variable naming the library file to load instead of searching for it
/// (PMDK built into /opt, say): `PMSCOPE_LIBPMEMOBJ=/opt/pmdk/lib/libpmemobj.so.1`.
pub const ENV_VAR: &str = "PMSCOPE_LIBPMEMOBJ";

/// The names searched, in order, when [`ENV_VAR`] is not set: the runtime soname (Debian's
/// `libpmemobj1`), then the development link (`libpmemobj-dev`, or a PMDK built by hand).
pub const SONAMES: [&str; 2] = ["libpmemobj.so.1", "libpmemobj.so"];

/// Every libpmemobj function pmscope calls, resolved once from the loaded library. The
/// types are the C prototypes of PMDK 1.12's headers.
pub struct Lib {
    pub pmemobj_create: unsafe extern "C" fn(
        path: *const c_char,
        layout: *const c_char,
        poolsize: size_t,
        mode: mode_t,
    ) -> *mut PmemObjPool,
    pub pmemobj_open:
        unsafe extern "C" fn(path: *const c_char, layout: *const c_char) -> *mut PmemObjPool,
    pub pmemobj_close: unsafe extern "C" fn(pop: *mut PmemObjPool),
    pub pmemobj_check: unsafe extern "C" fn(path: *const c_char, layout: *const c_char) -> c_int,
    pub pmemobj_root: unsafe extern "C" fn(pop: *mut PmemObjPool, size: size_t) -> PmemOid,
    pub pmemobj_root_size: unsafe extern "C" fn(pop: *mut PmemObjPool) -> size_t,
    pub pmemobj_errormsg: unsafe extern "C" fn() -> *const c_char,

    pub pmemobj_tx_begin:
        unsafe extern "C" fn(pop: *mut PmemObjPool, env: *mut c_void, ...) -> c_int,
    pub pmemobj_tx_stage: unsafe extern "C" fn() -> c_int,
    pub pmemobj_tx_commit: unsafe extern "C" fn(),
    pub pmemobj_tx_abort: unsafe extern "C" fn(errnum: c_int),
    pub pmemobj_tx_end: unsafe extern "C" fn() -> c_int,
    pub pmemobj_tx_xadd_range_direct:
        unsafe extern "C" fn(ptr: *const c_void, size: size_t, flags: u64) -> c_int,
    pub pmemobj_tx_xalloc: unsafe extern "C" fn(size: size_t, type_num: u64, flags: u64) -> PmemOid,
    pub pmemobj_tx_xfree: unsafe extern "C" fn(oid: PmemOid, flags: u64) -> c_int,

    /// The library the functions live in: open for the life of the process (the table is
    /// in a static, never dropped, so it is never unloaded).
    _library: Library,
}

/// libpmemobj, loaded and resolved on the first call; a failure is remembered, and every
/// call reports it the same way.
pub fn lib() -> Result<&'static Lib, Unavailable> {
    static LIB: OnceLock<Result<Lib, Unavailable>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Lib, Unavailable> {
    let (library, name) = match std::env::var_os(ENV_VAR).filter(|v| !v.is_empty()) {
        Some(v) => {
            let named = format!("{ENV_VAR}={}", v.to_string_lossy());
            let Some(path) = v.to_str() else {
                return Err(Unavailable::from(Why::NotFound(named)));
            };
            (open(path).map_err(|e| e.named(named.clone()))?, named)
        }
        None => {
            let mut why = Why::NotFound(SONAMES[0].to_string());
            let mut found = None;
            for name in SONAMES {
                match open(name) {
                    Ok(l) => {
                        found = Some((l, name.to_string()));
                        break;
                    }
                    // A library that is there but cannot be loaded says more than a name
                    // that is not.
                    Err(e) if why.is_not_found() && !e.is_not_found() => why = e,
                    Err(_) => {}
                }
            }
            found.ok_or(why)?
        }
    };
    resolve(library, &name)
}

/// `dlopen(name, RTLD_NOW | RTLD_LOCAL)`: every symbol of the library and of the libraries
/// it needs (libpmem, libndctl) bound at once, so a missing one fails here, not mid-call.
fn open(name: &str) -> Result<Library, Why> {
    // SAFETY: loading runs libpmemobj's initialisers (and libpmem's): PMDK's own, which
    // read its environment variables and set up its locks; they require nothing of the
    // caller. The library is never unloaded (see `Lib::_library`), so its termination
    // routines run only at process exit, as for a linked library.
    unsafe { Library::open(Some(name), RTLD_NOW | RTLD_LOCAL) }.map_err(|e| {
        let text = dl_text(&e);
        if text.starts_with(&format!(
            "{name}: cannot open shared object file: No such file"
        )) {
            Why::NotFound(name.to_string())
        } else {
            Why::Unloadable(text)
        }
    })
}

/// dlerror's text (libloading's own Display says only "dlopen failed").
fn dl_text(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(s) => s.to_string(),
        None => e.to_string(),
    }
}

/// The function `name` of `library` (loaded from `file`), as the function pointer `T`.
///
/// # Safety
///
/// `T` must be the function-pointer type of the C prototype of `name`.
unsafe fn symbol<T: Copy>(library: &Library, file: &str, name: &CStr) -> Result<T, Why> {
    // SAFETY: the caller promises T is the symbol's type; the pointer is copied out of the
    // Symbol, and the library outlives it (it is stored beside it in `Lib`, never dropped).
    match unsafe { library.get::<T>(name) } {
        Ok(s) => Ok(*s),
        Err(_) => Err(Why::Lacks {
            file: file.to_string(),
            function: name.to_string_lossy().into_owned(),
        }),
    }
}

fn resolve(library: Library, file: &str) -> Result<Lib, Unavailable> {
    // SAFETY: every field's type is the function-pointer type of the C prototype of the
    // function of the same name, as PMDK 1.12's headers declare it (base.h, pool_base.h,
    // tx_base.h); `pmemobj_tx_begin` is variadic in C and in its type here.
    let lib = unsafe {
        Lib {
            pmemobj_create: symbol(&library, file, c"pmemobj_create")?,
            pmemobj_open: symbol(&library, file, c"pmemobj_open")?,
            pmemobj_close: symbol(&library, file, c"pmemobj_close")?,
            pmemobj_check: symbol(&library, file, c"pmemobj_check")?,
            pmemobj_root: symbol(&library, file, c"pmemobj_root")?,
            pmemobj_root_size: symbol(&library, file, c"pmemobj_root_size")?,
            pmemobj_errormsg: symbol(&library, file, c"pmemobj_errormsg")?,
            pmemobj_tx_begin: symbol(&library, file, c"pmemobj_tx_begin")?,
            pmemobj_tx_stage: symbol(&library, file, c"pmemobj_tx_stage")?,
            pmemobj_tx_commit: symbol(&library, file, c"pmemobj_tx_commit")?,
            pmemobj_tx_abort: symbol(&library, file, c"pmemobj_tx_abort")?,
            pmemobj_tx_end: symbol(&library, file, c"pmemobj_tx_end")?,
            pmemobj_tx_xadd_range_direct: symbol(&library, file, c"pmemobj_tx_xadd_range_direct")?,
            pmemobj_tx_xalloc: symbol(&library, file, c"pmemobj_tx_xalloc")?,
            pmemobj_tx_xfree: symbol(&library, file, c"pmemobj_tx_xfree")?,
            _library: library,
        }
    };
    Ok(lib)
}

/// libpmemobj cannot be used here: not installed, not loadable, or lacking a function.
/// Its message is one sentence that says what to install ([`Unavailable::needed_by`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    why: Why,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Why {
    /// Nothing by that name: a soname the loader did not find, or [`ENV_VAR`]'s file.
    NotFound(String),
    /// There, but `dlopen` refused it (or a library it needs): dlerror's text.
    Unloadable(String),
    /// Loaded from `file`, which has no `function` (a PMDK older than pmscope needs).
    Lacks { file: String, function: String },
}

impl Why {
    fn is_not_found(&self) -> bool {
        matches!(self, Why::NotFound(_))
    }

    /// Names a file not found as `name` says (the environment variable's setting).
    fn named(self, name: String) -> Why {
        match self {
            Why::NotFound(_) => Why::NotFound(name),
            other => other,
        }
    }
}

impl From<Why> for Unavailable {
    fn from(why: Why) -> Unavailable {
        Unavailable { why }
    }
}

impl Unavailable {
    /// The sentence for a user of `who` ("the tx-pm table"): what is missing, why, and
    /// what to install, e.g. "the tx-pm table needs PMDK's libpmemobj, which is not
    /// installed (libpmemobj.so.1 not found): install it with `apt-get install libpmemobj1`
    /// (Debian/Ubuntu), or set PMSCOPE_LIBPMEMOBJ to its path".
    pub fn needed_by(&self, who: &str) -> String {
        let why = match &self.why {
            Why::NotFound(name) => format!("which is not installed ({name} not found)"),
            Why::Unloadable(text) => format!("which could not be loaded ({text})"),
            Why::Lacks { file, function } => {
                format!(
                    "but {file} lacks its function {function} (an older PMDK, or another library)"
                )
            }
        };
        format!(
            "{who} needs PMDK's libpmemobj, {why}: install it with `apt-get install libpmemobj1` (Debian/Ubuntu), or set {ENV_VAR} to its path"
        )
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.needed_by("pmscope"))
    }
}

impl std::error::Error for Unavailable {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The process's own table is global, so these load by hand what `lib` would.
    #[test]
    fn a_missing_file_is_not_installed_and_the_sentence_says_what_to_install() {
        let why = open("/nonexistent/libpmemobj.so.1").err().unwrap();
        assert_eq!(why, Why::NotFound("/nonexistent/libpmemobj.so.1".into()));
        let named = why.named(format!("{ENV_VAR}=/nonexistent/libpmemobj.so.1"));
        assert_eq!(
            Unavailable::from(named).needed_by("the tx-pm table"),
            "the tx-pm table needs PMDK's libpmemobj, which is not installed \
             (PMSCOPE_LIBPMEMOBJ=/nonexistent/libpmemobj.so.1 not found): install it with \
             `apt-get install libpmemobj1` (Debian/Ubuntu), or set PMSCOPE_LIBPMEMOBJ to its path"
        );
        assert_eq!(
            open("libpmemobj-none.so.9").err().unwrap(),
            Why::NotFound("libpmemobj-none.so.9".into())
        );
    }

    #[test]
    fn a_file_that_is_no_library_or_lacks_a_function_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("libpmemobj.so.1");
        std::fs::write(&text, "not a library\n").unwrap();
        let Why::Unloadable(msg) = open(text.to_str().unwrap()).err().unwrap() else {
            panic!("a text file is unloadable, not missing");
        };
        assert!(msg.contains(text.to_str().unwrap()), "{msg}");
        // libc is a library, but not libpmemobj.
        let libc = open("libc.so.6").unwrap();
        let e = resolve(libc, "libc.so.6").err().unwrap();
        assert_eq!(
            e.why,
            Why::Lacks {
                file: "libc.so.6".into(),
                function: "pmemobj_create".into()
            }
        );
        assert!(
            e.needed_by("x").starts_with(
                "x needs PMDK's libpmemobj, but libc.so.6 lacks its function pmemobj_create"
            ),
            "{e}"
        );
    }
}
