//! Physical frame numbers of this process's pages, from `/proc/self/pagemap`: what the
//! placement check of a block (`pmscope_core::blocks::Placement`) compares between two
//! mappings. Since Linux 4.2 the frame numbers read as 0 without `CAP_SYS_ADMIN`; then
//! there is nothing to compare and the readers say so with `None`.

use std::os::unix::fs::FileExt;

/// Bits 0-54 of a pagemap entry: the frame number, when the page is present.
const PFN_MASK: u64 = (1 << 55) - 1;
/// Bit 63: the page is present in RAM.
const PRESENT: u64 = 1 << 63;

/// The frame number behind every `stride` bytes of the `len` bytes at virtual address
/// `addr` (one per sampled page, in address order; 0 for a page not present). `None` when
/// pagemap cannot be read or hides the frame numbers (every present page reads 0: not
/// root).
pub fn frames(addr: usize, len: usize, stride: usize) -> Option<Vec<u64>> {
    let file = std::fs::File::open("/proc/self/pagemap").ok()?;
    let stride = stride.max(4096) / 4096 * 4096;
    let first = addr / 4096;
    let count = len.div_ceil(stride);
    let mut out = Vec::with_capacity(count);
    if stride == 4096 {
        // Contiguous entries: read them in chunks of 64 Ki entries (512 KiB).
        let mut buf = vec![0u8; 8 << 16];
        let mut done = 0usize;
        while done < count {
            let n = (count - done).min(1 << 16);
            let bytes = &mut buf[..8 * n];
            file.read_exact_at(bytes, ((first + done) * 8) as u64)
                .ok()?;
            out.extend(bytes.chunks_exact(8).map(entry_frame));
            done += n;
        }
    } else {
        let mut e = [0u8; 8];
        for i in 0..count {
            let page = first + i * stride / 4096;
            file.read_exact_at(&mut e, (page * 8) as u64).ok()?;
            out.push(entry_frame(&e));
        }
    }
    if out.iter().all(|&f| f == 0) {
        return None;
    }
    Some(out)
}

fn entry_frame(bytes: &[u8]) -> u64 {
    let e = u64::from_ne_bytes(bytes.try_into().expect("8 bytes"));
    if e & PRESENT != 0 { e & PFN_MASK } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Touched pages are present; as root their frames are distinct and non-zero, and
    /// without the capability the reader says it cannot tell.
    #[test]
    fn touched_pages_have_distinct_frames_as_root() {
        let mut v = vec![0u8; 64 << 12];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        let addr = v.as_ptr() as usize;
        let start = addr.next_multiple_of(4096);
        let len = 32 << 12;
        let root = crate::process::effective_uid() == 0;
        match frames(start, len, 4096) {
            Some(f) => {
                assert!(root, "frames shown to a non-root process");
                assert_eq!(f.len(), 32);
                let mut d = f.clone();
                d.sort_unstable();
                d.dedup();
                assert_eq!(d.len(), 32, "{f:?}");
                assert!(f.iter().all(|&x| x != 0));
                // A stride samples every fourth page: the same frames.
                let s = frames(start, len, 4 * 4096).unwrap();
                assert_eq!(s, f.iter().step_by(4).copied().collect::<Vec<_>>());
            }
            None => assert!(!root, "root reads frame numbers"),
        }
        std::hint::black_box(&v);
    }
}
