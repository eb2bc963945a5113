//! Where single timed accesses go: the offsets [`Sequence::time_each`] takes, aligned by
//! its rule (8 bytes for 8-byte accesses, else the access and at least a line), in order or
//! in a random order that visits every slot once per pass ([`BlockOrder`]). `pmscope inst`
//! times its cells at these offsets, and `pmscope loaded` its persist probe.
//!
//! [`Sequence::time_each`]: crate::access::Sequence::time_each

use crate::stream::BlockOrder;

/// Offsets of `count` accesses of `size` bytes in a region of `len` bytes: consecutive
/// (wrapping) or random, aligned to the access (64 bytes at least, 8 for 8-byte accesses).
pub fn access_offsets(
    count: usize,
    size: usize,
    len: usize,
    random: bool,
    seed: u64,
) -> Vec<usize> {
    let align = if size == 8 { 8 } else { size.max(64) };
    let slots = (len / align).max(1);
    let mut order = BlockOrder::new(slots as u64, seed);
    (0..count)
        .map(|i| {
            let slot = if random {
                order.next_block() as usize
            } else {
                i % slots
            };
            slot * align
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::access_offsets as offsets;

    #[test]
    fn offsets_are_aligned_inside_and_sequential_or_random() {
        let s = offsets(10, 256, 4096, false, 1);
        assert_eq!(s, [0, 256, 512, 768, 1024, 1280, 1536, 1792, 2048, 2304]);
        let wrapped = offsets(20, 256, 4096, false, 1);
        assert_eq!(wrapped[16], 0);
        let r = offsets(1000, 64, 1 << 20, true, 7);
        assert!(r.iter().all(|&o| o % 64 == 0 && o + 64 <= 1 << 20));
        assert!(r.windows(2).any(|w| w[1] != w[0] + 64));
        // Without replacement (seed 003 section 4.2.1): a full pass visits every slot once,
        // and the next pass every slot once again.
        let mut p = offsets(2 * 4096, 256, 1 << 20, true, 9);
        let mut second = p.split_off(4096);
        p.sort_unstable();
        second.sort_unstable();
        let every: Vec<usize> = (0..4096).map(|i| i * 256).collect();
        assert_eq!(p, every);
        assert_eq!(second, every);
        let w = offsets(4, 8, 4096, false, 1);
        assert_eq!(w, [0, 8, 16, 24]);
    }
}
