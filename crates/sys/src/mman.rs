//! Memory-mapping syscalls with the flags pmscope needs and the standard library lacks:
//! hugetlb page-size flags, `MAP_SHARED_VALIDATE | MAP_SYNC`, THP advice, aligned placement.
//!
//! Creating a mapping is safe (it never touches memory we already use: the aligned variant
//! places its `MAP_FIXED` mapping only inside a reservation it made itself); removing or
//! changing one is `unsafe`, because the caller must promise nothing still refers to it.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `MAP_SHARED_VALIDATE` (Linux 4.15): like MAP_SHARED, but unknown flags are an error
/// instead of being ignored — which is what makes MAP_SYNC's refusal observable.
pub const MAP_SHARED_VALIDATE: libc::c_int = 0x03;
/// `MAP_SYNC` (Linux 4.15): page faults make the file's metadata durable, so a DAX
/// mapping's stores need only cache flushes, never msync. EOPNOTSUPP off DAX.
pub const MAP_SYNC: libc::c_int = 0x80000;
const MAP_HUGE_SHIFT: libc::c_int = 26;

/// How an anonymous mapping is backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnonPages {
    /// Base pages; THP explicitly refused with `MADV_NOHUGEPAGE`.
    Base,
    /// Transparent huge pages requested with `MADV_HUGEPAGE`.
    Transparent,
    /// hugetlb pages of the given size in bytes (`MAP_HUGETLB | log2(size) << MAP_HUGE_SHIFT`).
    Hugetlb(u64),
}

/// A mapping created here: start address and length. Dropping it does not unmap; the
/// owner (pmscope-mapping's `Mapping`) calls [`munmap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawMap {
    /// First byte.
    pub ptr: *mut u8,
    /// Length in bytes.
    pub len: usize,
}

// SAFETY: a RawMap is an address and a length; who may touch the memory is decided by its
// owner, which is Send/Sync on its own terms.
unsafe impl Send for RawMap {}
// SAFETY: as above.
unsafe impl Sync for RawMap {}

fn check(ptr: *mut libc::c_void) -> io::Result<*mut u8> {
    if ptr == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(ptr.cast())
    }
}

/// Reserves `len` bytes of address space aligned to `align` (PROT_NONE, no memory), so a
/// later `MAP_FIXED` mapping inside it can be PMD- or PUD-mapped.
///
/// One PROT_NONE guard page stays on each side: the kernel merges adjacent anonymous
/// mappings with equal flags into one VMA, and a neighbour merged into ours would make its
/// smaps entry describe memory that is not ours. [`munmap`] removes the guards too.
fn reserve_aligned(len: usize, align: usize) -> io::Result<*mut u8> {
    let total = len + align + 2 * GUARD;
    // SAFETY: a fresh anonymous PROT_NONE mapping at a kernel-chosen address touches
    // nothing that exists.
    let base = check(unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    })?;
    let start = (base as usize + GUARD).next_multiple_of(align);
    let head = start - GUARD - base as usize;
    let tail = total - head - len - 2 * GUARD;
    // SAFETY: head and tail are the unused ends of the reservation just made above, outside
    // the guard pages and the range returned.
    unsafe {
        if head > 0 {
            libc::munmap(base.cast(), head);
        }
        if tail > 0 {
            libc::munmap((start + len + GUARD) as *mut libc::c_void, tail);
        }
    }
    Ok(start as *mut u8)
}

/// The PROT_NONE page kept on each side of every mapping made here.
const GUARD: usize = 4096;

/// Maps `len` bytes of private anonymous memory, aligned to `align` (a power of two of at
/// least 4 KiB), with the page policy `pages`. Nothing is touched: the caller binds it to a
/// node first (mbind before first touch) and then pre-faults it.
pub fn map_anonymous(len: usize, align: usize, pages: AnonPages) -> io::Result<RawMap> {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    if let AnonPages::Hugetlb(size) = pages {
        flags |= libc::MAP_HUGETLB | ((size.trailing_zeros() as libc::c_int) << MAP_HUGE_SHIFT);
    }
    let at = reserve_aligned(len, align)?;
    // SAFETY: MAP_FIXED replaces only our own PROT_NONE reservation of exactly this range.
    let ptr = check(unsafe {
        libc::mmap(
            at.cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags | libc::MAP_FIXED,
            -1,
            0,
        )
    });
    let ptr = match ptr {
        Ok(p) => p,
        Err(e) => {
            // SAFETY: the reservation is ours and nothing refers to it.
            unsafe { libc::munmap((at as usize - GUARD) as *mut libc::c_void, len + 2 * GUARD) };
            return Err(e);
        }
    };
    let advice = match pages {
        AnonPages::Base => Some(libc::MADV_NOHUGEPAGE),
        AnonPages::Transparent => Some(libc::MADV_HUGEPAGE),
        AnonPages::Hugetlb(_) => None,
    };
    if let Some(advice) = advice {
        // SAFETY: the range is the mapping just created; THP advice does not change contents.
        if unsafe { libc::madvise(ptr.cast(), len, advice) } != 0 {
            let e = io::Error::last_os_error();
            // SAFETY: the mapping is ours and nothing refers to it yet.
            unsafe { libc::munmap((ptr as usize - GUARD) as *mut libc::c_void, len + 2 * GUARD) };
            return Err(e);
        }
    }
    Ok(RawMap { ptr, len })
}

/// How a file is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMapMode {
    /// `MAP_SHARED_VALIDATE | MAP_SYNC`: fails with EOPNOTSUPP unless the file is on DAX.
    Sync,
    /// Plain `MAP_SHARED`.
    Shared,
}

/// Maps `len` bytes of an open file (or device) from offset 0, shared, aligned to `align`.
pub fn map_file(
    fd: BorrowedFd<'_>,
    len: usize,
    align: usize,
    mode: FileMapMode,
) -> io::Result<RawMap> {
    let flags = match mode {
        FileMapMode::Sync => MAP_SHARED_VALIDATE | MAP_SYNC,
        FileMapMode::Shared => libc::MAP_SHARED,
    };
    let at = reserve_aligned(len, align)?;
    // SAFETY: MAP_FIXED replaces only our own PROT_NONE reservation of exactly this range.
    let ptr = check(unsafe {
        libc::mmap(
            at.cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags | libc::MAP_FIXED,
            fd.as_raw_fd(),
            0,
        )
    });
    match ptr {
        Ok(ptr) => Ok(RawMap { ptr, len }),
        Err(e) => {
            // SAFETY: the reservation is ours; a failed MAP_FIXED leaves it (or nothing) there.
            unsafe { libc::munmap((at as usize - GUARD) as *mut libc::c_void, len + 2 * GUARD) };
            Err(e)
        }
    }
}

/// Asks for transparent huge pages on a mapping (`MADV_HUGEPAGE`) or refuses them
/// (`MADV_NOHUGEPAGE`). Safe: THP advice never changes the contents of the range, and `map`
/// is a live mapping of this module (its owner keeps it alive while it holds the value).
pub fn advise_huge_pages(map: RawMap, huge: bool) -> io::Result<()> {
    let advice = if huge {
        libc::MADV_HUGEPAGE
    } else {
        libc::MADV_NOHUGEPAGE
    };
    // SAFETY: the range is a mapping made by this module; THP advice only changes how the
    // kernel backs it, never what it holds, so no reference into it is invalidated.
    if unsafe { libc::madvise(map.ptr.cast(), map.len, advice) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Unmaps a mapping.
///
/// # Safety
/// `map` must come from this module and nothing may refer to its memory any more.
pub unsafe fn munmap(map: RawMap) -> io::Result<()> {
    let with_guards = (map.ptr as usize - GUARD) as *mut libc::c_void;
    // SAFETY: forwarded to the caller's promise; the guard pages around the range were
    // reserved with it by this module and belong to nobody else.
    if unsafe { libc::munmap(with_guards, map.len + 2 * GUARD) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `msync(MS_SYNC)` over `[ptr, ptr + len)`, rounded out to whole pages.
///
/// # Safety
/// The range must lie inside one live mapping.
pub unsafe fn msync(ptr: *const u8, len: usize) -> io::Result<()> {
    let page = crate::memory::page_size();
    let start = (ptr as usize) & !(page - 1);
    let end = (ptr as usize + len).next_multiple_of(page);
    // SAFETY: forwarded to the caller's promise; rounding stays within the mapping's pages.
    if unsafe { libc::msync(start as *mut libc::c_void, end - start, libc::MS_SYNC) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Allocates `len` bytes of `file` with `fallocate` (so a DAX file system lays out its
/// extents now, aligned where it can), falling back to `ftruncate` where the file system
/// cannot (EOPNOTSUPP).
pub fn allocate_file(file: &std::fs::File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: fallocate on an open descriptor only changes that file's allocation.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as libc::off_t) };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        file.set_len(len)
    } else {
        Err(e)
    }
}

/// A zeroed buffer of `u64` words on transparent huge pages where the kernel gives them:
/// private anonymous memory, 2 MiB aligned, `MADV_HUGEPAGE`, whole 2 MiB pages when it is
/// at least 1 MiB. For a structure probed at random that outgrows the L2 (a Bloom filter
/// of millions of k-mers): on 4 KiB pages almost every probe also misses the TLB, which in
/// a guest is a two-dimensional page walk. Small buffers take base pages.
#[derive(Debug)]
pub struct HugeWords {
    raw: RawMap,
    words: usize,
}

impl HugeWords {
    const HUGE: usize = 2 << 20;

    /// `words` zeroed words (at least one page is mapped, even for none).
    pub fn zeroed(words: usize) -> io::Result<HugeWords> {
        let bytes = (words * 8).max(1);
        let (len, align, pages) = if bytes >= Self::HUGE / 2 {
            let len = bytes.next_multiple_of(Self::HUGE);
            (len, Self::HUGE, AnonPages::Transparent)
        } else {
            (bytes.next_multiple_of(4096), 4096, AnonPages::Base)
        };
        let raw = map_anonymous(len, align, pages)?;
        Ok(HugeWords { raw, words })
    }
}

impl std::ops::Deref for HugeWords {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        // SAFETY: the mapping is ours, live while self is, 8-byte aligned (page aligned),
        // zero-filled by the kernel and at least `words * 8` bytes long.
        unsafe { std::slice::from_raw_parts(self.raw.ptr.cast::<u64>(), self.words) }
    }
}

impl std::ops::DerefMut for HugeWords {
    fn deref_mut(&mut self) -> &mut [u64] {
        // SAFETY: as for Deref; `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr.cast::<u64>(), self.words) }
    }
}

impl Clone for HugeWords {
    fn clone(&self) -> HugeWords {
        let mut copy = HugeWords::zeroed(self.words).expect("memory for a copy of a buffer");
        copy.copy_from_slice(self);
        copy
    }
}

impl Drop for HugeWords {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and no reference into it outlives self.
        let _ = unsafe { munmap(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_mapping_is_aligned_and_usable() {
        let m = map_anonymous(4 << 20, 2 << 20, AnonPages::Base).unwrap();
        assert_eq!(m.ptr as usize % (2 << 20), 0);
        // SAFETY: the mapping is 4 MiB, readable and writable, and ours alone.
        unsafe {
            m.ptr.write_volatile(7);
            m.ptr.add(m.len - 1).write_volatile(9);
            assert_eq!(m.ptr.read_volatile(), 7);
            munmap(m).unwrap();
        }
    }

    /// A buffer of 3 MiB is two whole 2 MiB pages, aligned, zeroed, writable, advised for
    /// THP (smaps shows `hg`); a small one takes base pages; a copy holds the same words.
    #[test]
    fn huge_words_are_zeroed_aligned_and_advised_for_huge_pages() {
        let words = 3 << 17; // 3 MiB
        let mut w = HugeWords::zeroed(words).unwrap();
        assert_eq!(w.len(), words);
        assert_eq!(w.as_ptr() as usize % (2 << 20), 0);
        assert!(w.iter().all(|&x| x == 0));
        w[0] = 7;
        w[words - 1] = 9;
        let smaps = crate::smaps::probe_range(
            &crate::sysroot::SysRoot::host(),
            w.as_ptr() as usize,
            words * 8,
        )
        .unwrap();
        assert!(smaps.vm_flags.iter().any(|f| f == "hg"), "{smaps:?}");
        let copy = w.clone();
        assert_eq!((copy[0], copy[words - 1], copy.len()), (7, 9, words));
        let small = HugeWords::zeroed(10).unwrap();
        let smaps = crate::smaps::probe_range(
            &crate::sysroot::SysRoot::host(),
            small.as_ptr() as usize,
            80,
        )
        .unwrap();
        assert!(!smaps.vm_flags.iter().any(|f| f == "hg"), "{smaps:?}");
    }

    #[test]
    fn map_sync_is_refused_off_dax() {
        // /dev/shm is tmpfs, never DAX: MAP_SYNC must fail with EOPNOTSUPP (labvm README).
        let f = tempfile::tempfile_in("/dev/shm").unwrap();
        f.set_len(1 << 20).unwrap();
        use std::os::fd::AsFd;
        let e = map_file(f.as_fd(), 1 << 20, 4096, FileMapMode::Sync).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
        let m = map_file(f.as_fd(), 1 << 20, 4096, FileMapMode::Shared).unwrap();
        // SAFETY: the mapping is ours and nothing refers to it.
        unsafe { munmap(m).unwrap() };
    }
}
