//! A checked view of raw memory for kernels.
#![allow(unsafe_code)]

/// A writable memory range a kernel may use exclusively for the duration of a call.
///
/// Invariants: `ptr` is non-null, 64-byte aligned, and valid for reads and writes of `len`
/// bytes for the lifetime `'a`; nothing else accesses the range meanwhile except through
/// this region.
#[derive(Debug)]
pub struct Region<'a> {
    ptr: *mut u8,
    len: usize,
    _life: std::marker::PhantomData<&'a mut [u8]>,
}

// SAFETY: a Region is an exclusive borrow of plain memory, like `&mut [u8]`.
unsafe impl Send for Region<'_> {}

impl<'a> Region<'a> {
    /// A region over a mutable slice (tests, small buffers). Panics unless 64-byte aligned.
    pub fn from_slice(s: &'a mut [u8]) -> Region<'a> {
        assert_eq!(
            s.as_ptr() as usize % 64,
            0,
            "kernel regions must be 64-byte aligned"
        );
        Region {
            ptr: s.as_mut_ptr(),
            len: s.len(),
            _life: std::marker::PhantomData,
        }
    }

    /// A region over raw memory.
    ///
    /// # Safety
    /// `ptr` must be 64-byte aligned and valid for reads and writes of `len` bytes for `'a`,
    /// and nothing else may access that memory while the region is in use (a mapping
    /// owned by the caller, partitioned between workers so their regions do not overlap).
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Region<'a> {
        debug_assert!(!ptr.is_null() && (ptr as usize).is_multiple_of(64));
        Region {
            ptr,
            len,
            _life: std::marker::PhantomData,
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The region as bytes.
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the invariants above: valid, exclusive, `len` bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The region as machine words (pointers of a chain live here).
    pub fn words(&mut self) -> &mut [usize] {
        // SAFETY: 64-byte alignment implies usize alignment; valid and exclusive; len/8 words.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut usize, self.len / 8) }
    }

    /// The region as words that several threads may store to at once (each its own words:
    /// relaxed atomic stores compile to plain stores on x86-64).
    pub fn atomic_words(&mut self) -> &[std::sync::atomic::AtomicUsize] {
        // SAFETY: AtomicUsize has the size and alignment of usize; 64-byte alignment implies
        // it; the region is valid and exclusive for the borrow, and every access during it
        // goes through the atomics.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr as *const std::sync::atomic::AtomicUsize,
                self.len / 8,
            )
        }
    }

    /// Splits at byte `at` (rounded down to 64) into two regions.
    pub fn split_at(self, at: usize) -> (Region<'a>, Region<'a>) {
        let at = at.min(self.len) / 64 * 64;
        (
            Region {
                ptr: self.ptr,
                len: at,
                _life: std::marker::PhantomData,
            },
            Region {
                // SAFETY: at <= len, inside the region; the two parts do not overlap.
                ptr: unsafe { self.ptr.add(at) },
                len: self.len - at,
                _life: std::marker::PhantomData,
            },
        )
    }

    /// Splits into `n` regions of equal length (multiples of `align` bytes), one per worker.
    pub fn split(self, n: usize, align: usize) -> Vec<Region<'a>> {
        let each = (self.len / n.max(1)) / align * align;
        (0..n)
            .map(|i| Region {
                // SAFETY: i * each + each <= len, inside the region; the pieces do not overlap.
                ptr: unsafe { self.ptr.add(i * each) },
                len: each,
                _life: std::marker::PhantomData,
            })
            .collect()
    }
}
