//! The access patterns of the on-DIMM buffer probes (seed 001, Xiang et al.): memory seen
//! as 256-byte XPLines (Optane's media access unit, also the granule of its prefetcher and
//! of many CXL devices' buffers), visited whole or in part, in order or at random, with
//! loads flushed so the CPU caches never answer, and two kernels the access sequences of
//! [`crate::access`] cannot express: an XPLine read line by line with an optional software
//! prefetch of the next XPLine, and a walk that reads one line of each XPLine and writes
//! another line of the same XPLine (the seed's read/write latency breakdown).
#![allow(unsafe_code)]

use crate::Region;
use crate::Unavailable;
use crate::rng::SplitMix64;
use pmscope_core::vocab::Pattern;
use pmscope_persist::insn::{
    Clflush, Clflushopt, Clwb, Fence, Flush, FlushKind, Mfence, NtStore, Sfence,
};
use pmscope_sys::cpu::CpuFeatures;

/// Bytes of an XPLine.
pub const XPLINE: usize = 256;
/// Cache lines of an XPLine.
pub const LINES: usize = XPLINE / 64;

/// The offsets of every XPLine of the first `ws` bytes, each exactly once, in address order
/// (`Seq`) or a random permutation (`Rand`).
pub fn xplines(ws: usize, pattern: Pattern, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..ws / XPLINE).map(|i| i * XPLINE).collect();
    if pattern != Pattern::Seq {
        SplitMix64::new(seed).shuffle(&mut v);
    }
    v
}

/// `n` visits cycling over `order` (whole passes, then a partial one).
pub fn cycle(order: &[usize], n: usize) -> Vec<usize> {
    order.iter().copied().cycle().take(n).collect()
}

/// Two disjoint halves of the XPLines of `ws` bytes, interleaved: the reads' offsets in the
/// first half and the writes' in the second, one of each per visit.
pub fn split_read_write(ws: usize, pattern: Pattern, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let half = (ws / 2) / XPLINE * XPLINE;
    let reads = xplines(half, pattern, seed);
    let writes = xplines(half, pattern, seed ^ 1)
        .into_iter()
        .map(|o| o + half)
        .collect();
    (reads, writes)
}

/// The write a visit of [`time_walk`] makes to another line of the XPLine it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VisitWrite {
    /// An 8-byte store, `clwb` of its line, `sfence` (the seed's write).
    StoreClwb,
    /// An 8-byte store, `clflushopt` of its line, `sfence`.
    StoreClflushopt,
    /// An 8-byte store, `clflush` of its line, `sfence`.
    StoreClflush,
    /// An 8-byte non-temporal store (`movnti`), `sfence`.
    NtStore,
}

/// Every write, in the order `--write` lists them.
pub const VISIT_WRITES: [VisitWrite; 4] = [
    VisitWrite::StoreClwb,
    VisitWrite::StoreClflushopt,
    VisitWrite::StoreClflush,
    VisitWrite::NtStore,
];

impl VisitWrite {
    /// The name in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            VisitWrite::StoreClwb => "store+clwb",
            VisitWrite::StoreClflushopt => "store+clflushopt",
            VisitWrite::StoreClflush => "store+clflush",
            VisitWrite::NtStore => "ntstore",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<VisitWrite> {
        VISIT_WRITES.into_iter().find(|w| w.name() == s)
    }

    /// The write where none is named: a store and the best write-back this CPU has, in
    /// the persist default's order (`store+clwb`, else `store+clflushopt`, else
    /// `store+clflush`, which every x86-64 CPU has).
    pub fn default_for(f: &CpuFeatures) -> VisitWrite {
        match pmscope_persist::PersistStrategy::default_for(f)
            .recipe()
            .flush
        {
            FlushKind::Clwb => VisitWrite::StoreClwb,
            FlushKind::Clflushopt => VisitWrite::StoreClflushopt,
            _ => VisitWrite::StoreClflush,
        }
    }

    fn flush(self) -> FlushKind {
        match self {
            VisitWrite::StoreClwb => FlushKind::Clwb,
            VisitWrite::StoreClflushopt => FlushKind::Clflushopt,
            VisitWrite::StoreClflush => FlushKind::Clflush,
            VisitWrite::NtStore => FlushKind::None,
        }
    }

    /// Checks the CPU has the write's instructions (and `rdtscp` for the timing).
    pub fn check(self, f: &CpuFeatures) -> Result<(), Unavailable> {
        if !f.rdtscp {
            return Err(Unavailable::machine(
                "timing single accesses",
                "this CPU lacks rdtscp",
            ));
        }
        if let Some(missing) = self.flush().feature().filter(|&x| !f.has(x)) {
            return Err(Unavailable::asked(
                self.name(),
                format!("this CPU lacks {missing}"),
            ));
        }
        Ok(())
    }
}

fn check_offsets(region: &Region<'_>, offsets: &[usize]) {
    for &o in offsets {
        assert!(
            o.is_multiple_of(XPLINE) && o + XPLINE <= region.len(),
            "XPLine offset {o} outside or misaligned"
        );
    }
}

/// Times reading each XPLine of `order` line by line (one 8-byte load per line, all four
/// lines), with a software prefetch (`prefetcht0`) of the next XPLine's first line issued
/// first when `prefetch_next` is set; each XPLine is flushed after its visit, outside the
/// timed interval, so a later visit misses the CPU caches. Raw TSC ticks into `out`.
pub fn time_xpline_reads(
    region: &mut Region<'_>,
    order: &[usize],
    prefetch_next: bool,
    out: &mut [u64],
) {
    assert_eq!(order.len(), out.len());
    check_offsets(region, order);
    let base = region.as_ptr();
    let mut sink = 0u64;
    for (i, (&o, t)) in order.iter().zip(out.iter_mut()).enumerate() {
        let next = order.get(i + 1).copied().unwrap_or(order[0]);
        let t0 = pmscope_sys::tsc::start();
        if prefetch_next {
            // SAFETY: `next` is an XPLine inside the region (checked); a prefetch only hints
            // and never faults, but the address is valid anyway.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    base.add(next) as *const i8,
                )
            };
        }
        for l in 0..LINES {
            // SAFETY: o + l*64 + 8 <= o + 256 <= len (checked), 8-byte aligned; the region
            // is borrowed exclusively. Volatile so every line is really loaded.
            sink =
                sink.wrapping_add(unsafe { (base.add(o + l * 64) as *const u64).read_volatile() });
        }
        *t = pmscope_sys::tsc::stop().wrapping_sub(t0);
        for l in 0..LINES {
            // SAFETY: the line is inside the region; clflush is baseline x86-64.
            unsafe { Clflush::line(base.add(o + l * 64)) };
        }
        Mfence::fence();
    }
    std::hint::black_box(sink);
}

/// Times `out.len()` visits of a walk around the XPLines of `order`: each visit loads the first 8 bytes of the
/// XPLine (a dependent load: the next offset is read from memory, so the walk is a pointer
/// chase) and writes 8 bytes to its second line with `write`. With `decoupled`, the next
/// offset comes from `order` itself (a DRAM array) and the load of the XPLine is its only
/// read, so read and write latency separate (the seed's breakdown). The XPLine is flushed
/// after each visit, outside the timed interval. Raw TSC ticks into `out`; the region's
/// first words of the visited XPLines are overwritten with the chain.
pub fn time_walk(
    region: &mut Region<'_>,
    order: &[usize],
    write: VisitWrite,
    decoupled: bool,
    out: &mut [u64],
) {
    assert!(!order.is_empty());
    check_offsets(region, order);
    let base = region.as_ptr();
    // The chain: each visited XPLine's first word holds the offset of the next one.
    for (i, &o) in order.iter().enumerate() {
        let next = order[(i + 1) % order.len()] as u64;
        // SAFETY: o + 8 <= len, aligned (checked); exclusive borrow.
        unsafe { (base.add(o) as *mut u64).write_volatile(next) };
        // SAFETY: as above; flushed so the walk starts from memory.
        unsafe { Clflush::line(base.add(o)) };
    }
    Mfence::fence();
    let mut at = order[0];
    for (i, t) in out.iter_mut().enumerate() {
        let t0 = pmscope_sys::tsc::start();
        // SAFETY: `at` is always one of the checked offsets (from `order`, or read back from
        // a chain word this function wrote with an offset from `order`).
        let next = unsafe { (base.add(at) as *const u64).read_volatile() } as usize;
        // SAFETY: the second line of the same XPLine is inside the region; the CPU has the
        // write's instructions (the caller checked `VisitWrite::check`).
        unsafe {
            let p = base.add(at + 64);
            match write {
                VisitWrite::StoreClwb => {
                    (p as *mut u64).write_volatile(i as u64 | 1);
                    Clwb::line(p);
                }
                VisitWrite::StoreClflushopt => {
                    (p as *mut u64).write_volatile(i as u64 | 1);
                    Clflushopt::line(p);
                }
                VisitWrite::StoreClflush => {
                    (p as *mut u64).write_volatile(i as u64 | 1);
                    Clflush::line(p);
                }
                VisitWrite::NtStore => NtStore::store8(p, i as u64 | 1),
            }
        }
        Sfence::fence();
        *t = pmscope_sys::tsc::stop().wrapping_sub(t0);
        for l in 0..2 {
            // SAFETY: inside the region; clflush is baseline.
            unsafe { Clflush::line(base.add(at + l * 64)) };
        }
        Mfence::fence();
        at = if decoupled {
            order[(i + 1) % order.len()]
        } else {
            next
        };
        debug_assert!(at.is_multiple_of(XPLINE) && at + XPLINE <= region.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// chase-write's default write follows the persist default's fallback order.
    #[test]
    fn the_default_write_falls_back_to_a_flush_this_cpu_has() {
        let old = CpuFeatures {
            rdtscp: true,
            ..CpuFeatures::baseline()
        };
        let opt = CpuFeatures {
            clflushopt: true,
            ..old
        };
        let wb = CpuFeatures { clwb: true, ..opt };
        assert_eq!(VisitWrite::default_for(&wb), VisitWrite::StoreClwb);
        assert_eq!(VisitWrite::default_for(&opt), VisitWrite::StoreClflushopt);
        assert_eq!(VisitWrite::default_for(&old), VisitWrite::StoreClflush);
        for f in [old, opt, wb] {
            assert!(VisitWrite::default_for(&f).check(&f).is_ok());
        }
        let e = VisitWrite::StoreClwb.check(&old).unwrap_err();
        assert_eq!(e.to_string(), "store+clwb: this CPU lacks clwb");
        assert!(e.is_usage());
        for w in VISIT_WRITES {
            assert_eq!(VisitWrite::parse(w.name()), Some(w));
        }
    }

    #[repr(align(256))]
    struct Buf([u8; 64 << 10]);

    #[test]
    fn xplines_cover_the_working_set_exactly_once() {
        for p in [Pattern::Seq, Pattern::Rand] {
            let mut v = xplines(16 << 10, p, 7);
            assert_eq!(v.len(), 64);
            if p == Pattern::Seq {
                assert!(v.windows(2).all(|w| w[1] == w[0] + XPLINE));
            }
            v.sort_unstable();
            assert_eq!(v, (0..64).map(|i| i * XPLINE).collect::<Vec<_>>());
        }
        let (r, w) = split_read_write(16 << 10, Pattern::Rand, 3);
        assert!(r.iter().all(|&o| o < 8 << 10) && w.iter().all(|&o| o >= 8 << 10));
        assert_eq!((r.len(), w.len()), (32, 32));
        assert_eq!(cycle(&[0, 256], 5), [0, 256, 0, 256, 0]);
    }

    /// The read kernel changes nothing; the walk writes exactly its chain words and one
    /// word of the second line of each XPLine it visits, and visits them in `order`.
    #[test]
    fn kernels_touch_exactly_the_lines_they_claim() {
        let f = CpuFeatures::detect();
        let mut b = Box::new(Buf([0xAB; 64 << 10]));
        let order = xplines(32 << 10, Pattern::Rand, 1);
        let mut r = Region::from_slice(&mut b.0);
        let mut t = vec![0u64; order.len()];
        time_xpline_reads(&mut r, &order, true, &mut t);
        assert!(b.0.iter().all(|&x| x == 0xAB));
        for write in VISIT_WRITES {
            if write.check(&f).is_err() {
                continue;
            }
            for decoupled in [false, true] {
                let mut b = Box::new(Buf([0xAB; 64 << 10]));
                let mut r = Region::from_slice(&mut b.0);
                time_walk(&mut r, &order, write, decoupled, &mut t);
                for (i, &o) in order.iter().enumerate() {
                    // (as many visits as XPLines: each visited once)
                    let next = order[(i + 1) % order.len()] as u64;
                    let word = |at: usize| u64::from_ne_bytes(b.0[at..at + 8].try_into().unwrap());
                    assert_eq!(word(o), next, "chain word of XPLine {o}");
                    // Visit i wrote i|1 to the second line: the walk followed `order`.
                    assert_eq!(word(o + 64), i as u64 | 1, "{write:?} {decoupled}");
                    assert!(b.0[o + 8..o + 64].iter().all(|&x| x == 0xAB));
                    assert!(b.0[o + 72..o + XPLINE].iter().all(|&x| x == 0xAB));
                }
                // XPLines outside the working set are untouched.
                assert!(b.0[32 << 10..].iter().all(|&x| x == 0xAB));
            }
        }
    }
}
