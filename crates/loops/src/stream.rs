//! Bandwidth streams: read, write (ordinary stores), stosb-write (`rep stosb`), ntstore,
//! read-ahead and ntstore-ahead (read and ntstore with each page's table walk started 4 pages
//! ahead), store+clwb (a `clwb` per line and an `sfence` per access), copy, movsb-copy
//! (`rep movsb`), ntcopy (copy with non-temporal stores) and ntcopy-pages (ntcopy over four
//! pages at a time, glibc memcpy's large-copy loop), sequential over a region or over random
//! aligned blocks of the access size. Each call returns the bytes it read and wrote, counted as
//! likwid-bench counts them (a store counts its bytes once; copy counts its reads and its
//! writes).
#![allow(unsafe_code)]

use crate::arch::stream as k;
use crate::{Region, Unavailable};
use pmscope_persist::insn::{Fence, Sfence};
use pmscope_sys::cpu::{CpuFeatures, Feature};
use serde::{Deserialize, Serialize};

/// A bandwidth operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StreamOp {
    /// Vector loads.
    Read,
    /// As read, with a `prefetcht0` of the page 4 pages ahead before each 4 KiB page (its
    /// table walk done and its first line on the way when the loads arrive).
    ReadAhead,
    /// Ordinary vector stores.
    Write,
    /// One `rep stosb` per access (glibc's memset at large sizes; needs ERMS).
    StosbWrite,
    /// Non-temporal vector stores (`vmovntdq`), `sfence` at the end of each call.
    NtStore,
    /// As ntstore, with a `prefetcht0` of the page 4 pages ahead before each 4 KiB page, so
    /// that its table walk is done when its stores arrive.
    NtStoreAhead,
    /// Ordinary stores, `clwb` per line, `sfence` per access.
    StoreClwb,
    /// Load from the first half of the region, store to the second.
    Copy,
    /// As copy, one `rep movsb` per access (needs ERMS).
    MovsbCopy,
    /// As copy, with non-temporal stores (`vmovntdq`), `sfence` at the end of each call.
    NtCopy,
    /// As ntcopy, over four pages at a time with software prefetch (glibc's memcpy beyond
    /// its non-temporal threshold).
    NtCopyPages,
}

/// Every op, in the order tables list them.
pub const STREAM_OPS: [StreamOp; 11] = [
    StreamOp::Read,
    StreamOp::ReadAhead,
    StreamOp::Write,
    StreamOp::StosbWrite,
    StreamOp::NtStore,
    StreamOp::NtStoreAhead,
    StreamOp::StoreClwb,
    StreamOp::Copy,
    StreamOp::MovsbCopy,
    StreamOp::NtCopy,
    StreamOp::NtCopyPages,
];

impl StreamOp {
    /// The name the CLI accepts.
    pub fn name(self) -> &'static str {
        match self {
            StreamOp::Read => "read",
            StreamOp::ReadAhead => "read-ahead",
            StreamOp::Write => "write",
            StreamOp::StosbWrite => "stosb-write",
            StreamOp::NtStore => "ntstore",
            StreamOp::NtStoreAhead => "ntstore-ahead",
            StreamOp::StoreClwb => "store+clwb",
            StreamOp::Copy => "copy",
            StreamOp::MovsbCopy => "movsb-copy",
            StreamOp::NtCopy => "ntcopy",
            StreamOp::NtCopyPages => "ntcopy-pages",
        }
    }

    /// What it does, for `pmscope list ops`.
    pub fn doc(self) -> &'static str {
        match self {
            StreamOp::Read => "vector loads",
            StreamOp::ReadAhead => {
                "read with a prefetcht0 4 pages ahead once per 4 KiB page (its table walk done early)"
            }
            StreamOp::Write => "ordinary vector stores (each line read for ownership first)",
            StreamOp::StosbWrite => {
                "one rep stosb per access (glibc's memset at large sizes), the low byte of the value, never 0"
            }
            StreamOp::NtStore => "non-temporal vector stores, an sfence per call",
            StreamOp::NtStoreAhead => {
                "ntstore with a prefetcht0 4 pages ahead once per 4 KiB page (its table walk done early)"
            }
            StreamOp::StoreClwb => "vector stores, a clwb per line, an sfence per access",
            StreamOp::Copy => "the region's first half into its second, ordinary stores",
            StreamOp::MovsbCopy => "copy, one rep movsb per access",
            StreamOp::NtCopy => "copy with non-temporal stores, one stream (likwid's copy_mem)",
            StreamOp::NtCopyPages => {
                "ntcopy over 4 pages at a time with prefetcht0 (glibc's large memcpy)"
            }
        }
    }

    /// The CPU feature it needs beyond its vector width: `clwb` for store+clwb, ERMS for
    /// the string instructions (which every CPU runs, but slowly without it, so they are
    /// refused there as a flush the CPU lacks is).
    pub fn feature(self) -> Option<Feature> {
        match self {
            StreamOp::StoreClwb => Some(Feature::Clwb),
            StreamOp::StosbWrite | StreamOp::MovsbCopy => Some(Feature::Erms),
            _ => None,
        }
    }

    /// The vector width a run uses for this op when none is asked for: the widest the CPU
    /// has, except `ntcopy-pages`, which copies as glibc's large `memcpy` does, and glibc
    /// takes 32-byte vectors for it wherever AVX2 is (its `evex` and `avx` variants: on
    /// Intel CPUs with AVX-512 too, where it prefers not to use 512-bit registers). On the
    /// Ice Lake guest of issue 45 the 32-byte loop also copied 3-5 % faster on one thread
    /// than the 64-byte one, side by side.
    pub fn default_width(self, f: &CpuFeatures) -> usize {
        match self {
            StreamOp::NtCopyPages if f.avx2 => 32,
            _ => Streamer::widest(f),
        }
    }

    /// Whether one string instruction does each access (the vector width does not apply).
    pub fn string(self) -> bool {
        matches!(self, StreamOp::StosbWrite | StreamOp::MovsbCopy)
    }

    /// Whether the op stores (every op but the reads).
    pub fn writes(self) -> bool {
        !matches!(self, StreamOp::Read | StreamOp::ReadAhead)
    }

    /// Whether the op reads a source (the region's first half) and writes a destination
    /// (its second half).
    pub fn copies(self) -> bool {
        matches!(
            self,
            StreamOp::Copy | StreamOp::MovsbCopy | StreamOp::NtCopy | StreamOp::NtCopyPages
        )
    }

    /// Whether its stores are non-temporal (weakly ordered: drained with an `sfence`).
    pub fn nontemporal(self) -> bool {
        matches!(
            self,
            StreamOp::NtStore | StreamOp::NtStoreAhead | StreamOp::NtCopy | StreamOp::NtCopyPages
        )
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<StreamOp> {
        STREAM_OPS.into_iter().find(|o| o.name() == s)
    }

    /// Every op's name for help and messages, `read, write, ... or ntcopy`: a new op
    /// appears in them by itself.
    pub fn names() -> String {
        let names: Vec<&str> = STREAM_OPS.iter().map(|o| o.name()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }
}

/// Parses an op's name, as the command line gives it (`--ops read,copy`).
impl std::str::FromStr for StreamOp {
    type Err = String;
    fn from_str(s: &str) -> Result<StreamOp, String> {
        StreamOp::parse(s.trim())
            .ok_or_else(|| format!("not a stream op: use {}", StreamOp::names()))
    }
}

/// The byte `rep stosb` stores for the value `v`: its low byte, but never 0. Callers count
/// their values up from 1, so every 256th call's low byte is 0, and an all-zero fill is not
/// the same work: on the Zen 4 guest `memset(p, 0, 1 GiB)` ran 1.8-2.1x faster than with
/// 0x5a, and non-temporal stores of lines whose upper 32 bytes are zero 1.6-1.75x faster than
/// of any other line (the vector ops store `v` in every 8-byte word, never such a line).
pub fn string_byte(v: u64) -> u8 {
    (v as u8).max(1)
}

/// Bytes moved by a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes loaded.
    pub read: u64,
    /// Bytes stored.
    pub written: u64,
}

impl std::ops::AddAssign for Traffic {
    fn add_assign(&mut self, o: Traffic) {
        self.read += o.read;
        self.written += o.written;
    }
}

impl Traffic {
    /// Read plus written.
    pub fn total(&self) -> u64 {
        self.read + self.written
    }
}

/// Memory a stream runs over: a view that the stream kernels touch only through inline
/// assembly, never through Rust references. Several views may alias one range — the
/// `--shared` mode, where all threads stream over one region as MLC and likwid allow —
/// because no Rust reference to the memory exists while they are in use, so there is no
/// aliasing of references; concurrent stores of the same kind race benignly, as on any
/// shared buffer in a bandwidth benchmark.
#[derive(Debug, Clone, Copy)]
pub struct StreamView<'a> {
    ptr: *mut u8,
    len: usize,
    _life: std::marker::PhantomData<&'a mut [u8]>,
}

// SAFETY: a view is an address range only streams touch (see the type's docs).
unsafe impl Send for StreamView<'_> {}
// SAFETY: as above.
unsafe impl Sync for StreamView<'_> {}

impl<'a> StreamView<'a> {
    /// `n` views of a region: disjoint equal parts (multiples of 64 bytes), or with `shared`
    /// the whole region `n` times.
    pub fn of(region: &'a mut Region<'_>, n: usize, shared: bool) -> Vec<StreamView<'a>> {
        let ptr = region.as_ptr();
        let len = region.len();
        let part = if shared {
            len
        } else {
            len / n.max(1) / 64 * 64
        };
        (0..n)
            .map(|i| StreamView {
                // SAFETY: i * part + part <= len, inside the region (or offset 0 when shared).
                ptr: unsafe { ptr.add(if shared { 0 } else { i * part }) },
                len: part,
                _life: std::marker::PhantomData,
            })
            .collect()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The part `[off, off + len)` of the view (clamped to it, multiples of 64 bytes).
    pub fn slice(self, off: usize, len: usize) -> StreamView<'a> {
        let off = off.min(self.len) / 64 * 64;
        let len = len.min(self.len - off) / 64 * 64;
        StreamView {
            // SAFETY: off <= self.len, inside the view.
            ptr: unsafe { self.ptr.add(off) },
            len,
            _life: std::marker::PhantomData,
        }
    }

    /// Splits the view into two halves (a read half and a write half for interleaved
    /// mixes).
    pub fn halves(self) -> (StreamView<'a>, StreamView<'a>) {
        let h = self.len / 2 / 64 * 64;
        (
            StreamView { len: h, ..self },
            StreamView {
                // SAFETY: h <= len / 2, inside the view.
                ptr: unsafe { self.ptr.add(h) },
                len: h,
                _life: std::marker::PhantomData,
            },
        )
    }
}

/// A checked stream: op, vector width (16, 32 or 64 bytes) and access size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamer {
    op: StreamOp,
    width: usize,
    access: usize,
}

impl Streamer {
    /// The widest vector this CPU streams with: 64 (AVX-512F), 32 (AVX2), else 16 (SSE2,
    /// on every x86-64 CPU). The default of every command that streams.
    pub fn widest(f: &CpuFeatures) -> usize {
        crate::access::Width::widest(f).bytes()
    }

    /// Checks the op against the CPU. `width` is 64 (AVX-512F), 32 (AVX2) or 16 (SSE2);
    /// `access` is a multiple of 64 bytes.
    pub fn new(
        op: StreamOp,
        width: usize,
        access: usize,
        f: &CpuFeatures,
    ) -> Result<Streamer, Unavailable> {
        let what = format!("{} with {width}-byte vectors", op.name());
        let fail = |reason: &str| Err(Unavailable::asked(what.clone(), reason));
        match width {
            64 if !f.avx512f => return fail("this CPU lacks AVX-512F"),
            32 if !f.avx2 => return fail("this CPU lacks AVX2"),
            64 | 32 | 16 => {}
            _ => return fail("the vector width must be 16, 32 or 64 bytes"),
        }
        if let Some(x) = op.feature().filter(|&x| !f.has(x)) {
            return fail(&format!("this CPU lacks {x}"));
        }
        if access == 0 || !access.is_multiple_of(64) {
            return fail("the access size must be a positive multiple of 64 bytes");
        }
        Ok(Streamer { op, width, access })
    }

    /// The op.
    pub fn op(&self) -> StreamOp {
        self.op
    }

    /// Bytes per access.
    pub fn access(&self) -> usize {
        self.access
    }

    /// The vector width in bytes.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Bytes of the region an access may start in: the whole region, or its first half
    /// for copy (the second half is the destination).
    pub fn span(&self, region_len: usize) -> usize {
        let usable = if self.op.copies() {
            region_len / 2
        } else {
            region_len
        };
        usable / self.access * self.access
    }

    /// One access of `access` bytes at byte offset `off` (copy: from `off` in the first
    /// half to `off` in the second).
    ///
    /// # Safety
    /// `base` is 64-byte aligned, valid for `half` (copy) or the region, `off + access`
    /// within the span; the CPU passed `new`.
    #[inline(always)]
    unsafe fn one(&self, base: *mut u8, half: usize, off: usize, v: u64) {
        let bytes = self.access;
        // SAFETY: the caller's contract.
        unsafe {
            let p = base.add(off);
            let dst = base.add(half + off);
            match (self.op, self.width) {
                (StreamOp::Read, 64) => k::read64(p, bytes, v),
                (StreamOp::Read, 32) => k::read32(p, bytes, v),
                (StreamOp::Read, _) => k::read16(p, bytes, v),
                (StreamOp::ReadAhead, 64) => k::read64_ahead(p, bytes, v),
                (StreamOp::ReadAhead, 32) => k::read32_ahead(p, bytes, v),
                (StreamOp::ReadAhead, _) => k::read16_ahead(p, bytes, v),
                (StreamOp::Write, 64) => k::write64(p, bytes, v),
                (StreamOp::Write, 32) => k::write32(p, bytes, v),
                (StreamOp::Write, _) => k::write16(p, bytes, v),
                (StreamOp::NtStore, 64) => k::ntstore64(p, bytes, v),
                (StreamOp::NtStore, 32) => k::ntstore32(p, bytes, v),
                (StreamOp::NtStore, _) => k::ntstore16(p, bytes, v),
                (StreamOp::NtStoreAhead, 64) => k::ntstore64_ahead(p, bytes, v),
                (StreamOp::NtStoreAhead, 32) => k::ntstore32_ahead(p, bytes, v),
                (StreamOp::NtStoreAhead, _) => k::ntstore16_ahead(p, bytes, v),
                (StreamOp::StoreClwb, w) => {
                    match w {
                        64 => k::store_clwb64(p, bytes, v),
                        32 => k::store_clwb32(p, bytes, v),
                        _ => k::store_clwb16(p, bytes, v),
                    }
                    Sfence::fence();
                }
                (StreamOp::Copy, 64) => k::copy64(p, dst, bytes),
                (StreamOp::Copy, 32) => k::copy32(p, dst, bytes),
                (StreamOp::Copy, _) => k::copy16(p, dst, bytes),
                (StreamOp::NtCopy, 64) => k::ntcopy64(p, dst, bytes),
                (StreamOp::NtCopy, 32) => k::ntcopy32(p, dst, bytes),
                (StreamOp::NtCopy, _) => k::ntcopy16(p, dst, bytes),
                (StreamOp::NtCopyPages, 64) => k::ntcopy64_pages(p, dst, bytes),
                (StreamOp::NtCopyPages, 32) => k::ntcopy32_pages(p, dst, bytes),
                (StreamOp::NtCopyPages, _) => k::ntcopy16_pages(p, dst, bytes),
                (StreamOp::StosbWrite, _) => k::stosb(p, bytes, string_byte(v)),
                (StreamOp::MovsbCopy, _) => k::movsb(p, dst, bytes),
            }
        }
    }

    fn traffic(&self, accesses: u64) -> Traffic {
        let b = accesses * self.access as u64;
        match self.op {
            op if !op.writes() => Traffic {
                read: b,
                written: 0,
            },
            op if op.copies() => Traffic {
                read: b,
                written: b,
            },
            _ => Traffic {
                read: 0,
                written: b,
            },
        }
    }

    /// One sequential pass over the span of the region. Read, write, ntstore and copy run
    /// as one loop over the span; store+clwb fences after every access; ntstore drains its
    /// write-combining buffers with an `sfence` at the end.
    pub fn pass(&self, view: StreamView<'_>, v: u64) -> Traffic {
        let t = self.pass_undrained(view, v);
        self.drain();
        t
    }

    /// `sfence` for ntstore (whose stores are weakly ordered and buffered); nothing otherwise.
    pub fn drain(&self) {
        if self.op.nontemporal() {
            Sfence::fence();
        }
    }

    /// A pass without the final drain, for back-to-back passes timed together (likwid's
    /// loop drains nothing between iterations); call [`Streamer::drain`] after the last.
    pub fn pass_undrained(&self, view: StreamView<'_>, v: u64) -> Traffic {
        let span = self.span(view.len);
        let half = view.len / 2;
        let base = view.ptr;
        if span == 0 {
            return Traffic::default();
        }
        let whole = Streamer {
            access: span,
            ..*self
        };
        // SAFETY: the view's memory lives for its lifetime and is 64-byte aligned; every
        // access lies in [0, span) (copy: also [half, half + span)); the CPU passed `new`.
        unsafe {
            match self.op {
                StreamOp::StoreClwb => {
                    let mut off = 0;
                    while off < span {
                        self.one(base, half, off, v);
                        off += self.access;
                    }
                }
                _ => whole.one(base, half, 0, v),
            }
        }
        self.traffic((span / self.access) as u64)
    }

    /// Accesses at the given block numbers (block i starts at byte i * access); ntstore
    /// drains at the end of the call.
    pub fn blocks(&self, view: StreamView<'_>, idx: &[u32], v: u64) -> Traffic {
        let t = self.blocks_undrained(view, idx, v);
        self.drain();
        t
    }

    /// [`Streamer::blocks`] without the final drain, for accesses issued one at a time
    /// (loaded-latency traffic drains once per round); call [`Streamer::drain`] after them.
    pub fn blocks_undrained(&self, view: StreamView<'_>, idx: &[u32], v: u64) -> Traffic {
        let span = self.span(view.len);
        let half = view.len / 2;
        let base = view.ptr;
        let nblocks = span / self.access;
        assert!(
            idx.iter().all(|&i| (i as usize) < nblocks),
            "block outside the region"
        );
        // SAFETY: every block is inside the span (checked); as in `pass`.
        unsafe {
            for &i in idx {
                self.one(base, half, i as usize * self.access, v);
            }
        }
        self.traffic(idx.len() as u64)
    }

    /// The bytes one pass over a region of `region_len` bytes moves, counted as
    /// [`Streamer::pass`] counts them, without touching memory: what the null executor
    /// reports a pass of this stream moved.
    pub fn pass_traffic(&self, region_len: usize) -> Traffic {
        self.traffic(self.block_count(region_len) as u64)
    }

    /// Blocks in the span.
    pub fn block_count(&self, region_len: usize) -> usize {
        self.span(region_len) / self.access
    }

    /// `count` accesses at the next blocks of `order` (which must have been made for this
    /// view's [`Streamer::block_count`]). The block numbers are computed in the loop, so
    /// random streams cost no index array (no extra memory traffic) and, pass after pass,
    /// touch every block of the span.
    pub fn random_run(
        &self,
        view: StreamView<'_>,
        order: &mut BlockOrder,
        count: u64,
        v: u64,
    ) -> Traffic {
        let span = self.span(view.len);
        let half = view.len / 2;
        let base = view.ptr;
        assert_eq!(
            order.blocks(),
            (span / self.access) as u64,
            "order made for another view"
        );
        if span == 0 {
            return Traffic::default();
        }
        for _ in 0..count {
            let i = order.next_block() as usize;
            // SAFETY: i < blocks (the order's contract, blocks checked above), so the access
            // lies in the span; as in `pass`.
            unsafe { self.one(base, half, i * self.access, v) };
        }
        self.traffic(count)
    }
}

/// A random order of the blocks `0..n` without repetition, computed on the fly: a counter
/// over `0..2^k` (the smallest power of two >= n) goes through a bijection of `k`-bit
/// numbers (xor, multiplication by odd constants and xor-shifts, each invertible modulo
/// `2^k`), and values `>= n` are skipped (cycle walking, fewer than two steps per block on
/// average; none when `n` is a power of two). One pass of `n` blocks therefore touches every
/// block exactly once, and the next pass repeats the same order: the footprint of a random
/// stream is its whole span, whatever its length. A handful of ALU operations per block,
/// independent of the loads, replace the index array read the old replayed list needed.
#[derive(Debug, Clone)]
pub struct BlockOrder {
    n: u64,
    bits: u32,
    mask: u64,
    counter: u64,
    keys: [u64; 3],
}

impl BlockOrder {
    /// An order of `n` blocks from a seed.
    pub fn new(n: u64, seed: u64) -> BlockOrder {
        let bits = if n <= 1 {
            0
        } else {
            64 - (n - 1).leading_zeros()
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut rng = crate::rng::SplitMix64::new(seed);
        BlockOrder {
            n,
            bits,
            mask,
            counter: 0,
            keys: [rng.next_u64(), rng.next_u64() | 1, rng.next_u64() | 1],
        }
    }

    /// The number of blocks ordered.
    pub fn blocks(&self) -> u64 {
        self.n
    }

    /// The bijection of `bits`-bit numbers.
    #[inline(always)]
    fn permute(&self, i: u64) -> u64 {
        let m = self.mask;
        let s = self.bits / 2 + 1;
        let mut x = (i ^ self.keys[0]) & m;
        x = x.wrapping_mul(self.keys[1]) & m;
        x ^= x >> s;
        x = x.wrapping_mul(self.keys[2]) & m;
        x ^= x >> s;
        x
    }

    /// The next block number, in `0..n` (0 for an empty order).
    #[inline(always)]
    pub fn next_block(&mut self) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        loop {
            let b = self.permute(self.counter);
            self.counter = (self.counter + 1) & self.mask;
            if b < self.n {
                return b;
            }
        }
    }
}

/// The bandwidth ops as the Markdown table of `docs/kernels.md`: name, the feature it needs
/// beyond its vector width, what it does.
pub fn markdown() -> String {
    let mut out = String::from("| bandwidth op | needs | what it does |\n|---|---|---|\n");
    for op in STREAM_OPS {
        out += &format!(
            "| `{}` | {} | {} |\n",
            op.name(),
            op.feature().map(|x| x.name()).unwrap_or("-"),
            op.doc()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/kernels.md` lists the bandwidth ops from [`markdown`]: this fails when they
    /// differ (PMSCOPE_BLESS=1 rewrites the generated part).
    #[test]
    fn kernels_doc_lists_the_bandwidth_ops() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kernels.md");
        let doc = std::fs::read_to_string(path).expect("docs/kernels.md");
        let (begin, end) = (
            "<!-- generated: bandwidth ops -->\n",
            "<!-- end generated -->",
        );
        let start = doc.find(begin).expect("generated-part marker") + begin.len();
        let stop = doc[start..].find(end).expect("end marker") + start;
        if std::env::var_os("PMSCOPE_BLESS").is_some() {
            let new = format!("{}{}{}", &doc[..start], markdown(), &doc[stop..]);
            std::fs::write(path, new).unwrap();
            return;
        }
        assert!(
            doc[start..stop] == markdown(),
            "docs/kernels.md differs from the bandwidth ops: run `PMSCOPE_BLESS=1 cargo test -p pmscope-loops kernels_doc` and review the diff"
        );
    }

    #[test]
    fn op_names_for_messages() {
        assert_eq!(
            StreamOp::names(),
            "read, read-ahead, write, stosb-write, ntstore, ntstore-ahead, store+clwb, copy, \
             movsb-copy, ntcopy or ntcopy-pages"
        );
        for op in STREAM_OPS {
            assert_eq!(op.name().parse::<StreamOp>(), Ok(op));
        }
        assert_eq!(
            "load".parse::<StreamOp>(),
            Err(
                "not a stream op: use read, read-ahead, write, stosb-write, ntstore, ntstore-ahead, \
                 store+clwb, copy, movsb-copy, ntcopy or ntcopy-pages"
                    .into()
            )
        );
    }

    #[repr(align(64))]
    struct Buf([u8; 1 << 16]);

    fn widths(f: &CpuFeatures) -> Vec<usize> {
        [16, 32, 64]
            .into_iter()
            .filter(|&w| w == 16 || (w == 32 && f.avx2) || (w == 64 && f.avx512f))
            .collect()
    }

    fn words(b: &[u8]) -> Vec<u64> {
        b.chunks(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    }

    /// Every op touches exactly the bytes it claims, and claims the bytes it touches.
    #[test]
    fn each_op_touches_and_counts_exactly_its_bytes() {
        let f = CpuFeatures::detect();
        for w in widths(&f) {
            for op in STREAM_OPS {
                if op.feature().is_some_and(|x| !f.has(x)) {
                    continue;
                }
                for access in [64usize, 192, 256, 4096] {
                    let s = Streamer::new(op, w, access, &f).unwrap();
                    let mut b = Box::new(Buf([0; 1 << 16]));
                    for (i, x) in b.0.iter_mut().enumerate() {
                        *x = (i % 251) as u8 | 1;
                    }
                    let before = b.0.to_vec();
                    let t = {
                        let mut r = Region::from_slice(&mut b.0);
                        s.blocks(StreamView::of(&mut r, 1, false)[0], &[3, 1], 0xABCD)
                    };
                    let half = b.0.len() / 2;
                    let touched = |o: usize| {
                        (o >= access && o < 2 * access) || (o >= 3 * access && o < 4 * access)
                    };
                    match op {
                        op if !op.writes() => {
                            assert_eq!(b.0.to_vec(), before, "{} changed memory", op.name());
                            assert_eq!(
                                t,
                                Traffic {
                                    read: 2 * access as u64,
                                    written: 0
                                }
                            );
                        }
                        op if op.copies() => {
                            for o in 0..half {
                                let dst = half + o;
                                if touched(o) {
                                    assert_eq!(b.0[dst], before[o], "copy {w} {access} at {o}");
                                } else {
                                    assert_eq!(b.0[dst], before[dst], "copy wrote outside at {o}");
                                }
                            }
                            assert_eq!(
                                t,
                                Traffic {
                                    read: 2 * access as u64,
                                    written: 2 * access as u64
                                }
                            );
                        }
                        _ => {
                            let ws = words(&b.0);
                            let want = if op.string() {
                                0xCDCD_CDCD_CDCD_CDCD // rep stosb stores the low byte
                            } else {
                                0xABCD
                            };
                            for (i, &x) in ws.iter().enumerate() {
                                if touched(i * 8) {
                                    assert_eq!(x, want, "{} {w} {access} word {i}", op.name());
                                } else {
                                    assert_eq!(
                                        x,
                                        u64::from_ne_bytes(
                                            before[i * 8..i * 8 + 8].try_into().unwrap()
                                        )
                                    );
                                }
                            }
                            assert_eq!(
                                t,
                                Traffic {
                                    read: 0,
                                    written: 2 * access as u64
                                }
                            );
                        }
                    }
                }
            }
        }
    }

    /// Every copy op at every width this CPU has, chosen by `Streamer` as a run chooses it,
    /// leaves the same memory after a pass: the second half of each region a copy of its
    /// first, over a region large enough for ntcopy-pages' four-page chunks and a tail.
    #[test]
    fn the_copy_kernels_agree_through_the_streamer() {
        let f = CpuFeatures::detect();
        let len = 2 * (16384 + 8192 + 192); // a four-page chunk, then pages and lines
        let fill = |b: &mut [u8]| {
            for (i, x) in b.iter_mut().enumerate() {
                *x = ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8;
            }
        };
        let mut results = Vec::new();
        for w in widths(&f) {
            for op in STREAM_OPS.into_iter().filter(|o| o.copies()) {
                if op.feature().is_some_and(|x| !f.has(x)) {
                    continue;
                }
                let s = Streamer::new(op, w, 64, &f).unwrap();
                let mut b = Box::new(Buf([0; 1 << 16]));
                fill(&mut b.0[..len]);
                let t = s.pass(
                    StreamView::of(&mut Region::from_slice(&mut b.0[..len]), 1, false)[0],
                    1,
                );
                assert_eq!(t.read, len as u64 / 2, "{} {w}", op.name());
                let (src, dst) = b.0[..len].split_at(len / 2);
                assert!(
                    src == dst,
                    "{} {w}: the copy differs from its source",
                    op.name()
                );
                results.push(((op, w), b.0.to_vec()));
            }
        }
        assert!(results.len() >= 6);
        for (k, r) in &results[1..] {
            assert!(r == &results[0].1, "{k:?} differs from {:?}", results[0].0);
        }
    }

    /// Every storing op at every width this CPU has fills exactly its span in one pass, over
    /// regions long enough for ntstore-ahead's page loop (pages whose page ahead lies in the
    /// region), its plain last pages and a tail, and nothing beyond them.
    #[test]
    fn the_fill_kernels_store_exactly_the_span_through_the_streamer() {
        let f = CpuFeatures::detect();
        let ahead = k::AHEAD_PAGES;
        let mut ran = 0;
        for w in widths(&f) {
            for op in STREAM_OPS.into_iter().filter(|o| o.writes() && !o.copies()) {
                if op.feature().is_some_and(|x| !f.has(x)) {
                    continue;
                }
                for len in [
                    (ahead + 1) * 4096,
                    (ahead + 3) * 4096 + 192,
                    (ahead + 9) * 4096 + 64,
                ] {
                    let s = Streamer::new(op, w, 64, &f).unwrap();
                    let mut b = Box::new(Buf([0x11; 1 << 16]));
                    let t = s.pass(
                        StreamView::of(&mut Region::from_slice(&mut b.0[..len]), 1, false)[0],
                        0x0102_0304_0506_0708,
                    );
                    assert_eq!(t.written, len as u64, "{} {w} {len}", op.name());
                    let want = if op.string() {
                        0x0808_0808_0808_0808
                    } else {
                        0x0102_0304_0506_0708
                    };
                    let ws = words(&b.0[..len]);
                    if let Some(i) = ws.iter().position(|&x| x != want) {
                        panic!("{} {w} {len}: byte {} not stored", op.name(), i * 8);
                    }
                    assert!(
                        b.0[len..].iter().all(|&x| x == 0x11),
                        "{} {w} {len}: stored past the span",
                        op.name()
                    );
                    ran += 1;
                }
            }
        }
        assert!(ran >= 9, "{ran}");
    }

    /// The reads load every page of their span: a pass over fresh memory (a new anonymous
    /// mapping, no page present) leaves every page present in /proc/self/pagemap, so a page
    /// loop that skips lines and falls behind (and reads then count bytes they never loaded)
    /// shows as pages never loaded.
    #[test]
    fn the_read_kernels_load_every_page_of_the_span() {
        use std::io::{Read, Seek, SeekFrom};
        let f = CpuFeatures::detect();
        let pages = k::AHEAD_PAGES + 40;
        let present = |addr: usize, n: usize| -> Vec<bool> {
            let mut pm = std::fs::File::open("/proc/self/pagemap").unwrap();
            pm.seek(SeekFrom::Start((addr / 4096 * 8) as u64)).unwrap();
            let mut raw = vec![0u8; n * 8];
            pm.read_exact(&mut raw).unwrap();
            raw.chunks(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap()) >> 63 == 1)
                .collect()
        };
        for w in widths(&f) {
            for op in STREAM_OPS.into_iter().filter(|o| !o.writes()) {
                let len = pages * 4096;
                // SAFETY: a fresh private anonymous mapping, checked, unmapped below; the
                // slice made of it is its only reference.
                let (addr, span) = unsafe {
                    let m = libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    assert_ne!(m, libc::MAP_FAILED);
                    (
                        m as usize,
                        std::slice::from_raw_parts_mut(m as *mut u8, len),
                    )
                };
                assert!(
                    present(addr, pages).iter().all(|&x| !x),
                    "the test's memory was touched before the pass"
                );
                let s = Streamer::new(op, w, 64, &f).unwrap();
                let t = s.pass(
                    StreamView::of(&mut Region::from_slice(span), 1, false)[0],
                    1,
                );
                assert_eq!(t.read, (pages * 4096) as u64);
                let loaded = present(addr, pages);
                // SAFETY: the mapping made above; `span` is not used again.
                unsafe { libc::munmap(addr as *mut libc::c_void, len) };
                if let Some(i) = loaded.iter().position(|&x| !x) {
                    panic!("{} {w}: page {i} of {pages} never loaded", op.name());
                }
            }
        }
    }

    /// rep stosb never fills with zeros, which some machines write faster than other data:
    /// the 256th value of a run stores 0x01, not 0x00.
    #[test]
    fn stosb_write_never_stores_a_zero_fill() {
        assert!((0..4096u64).all(|v| string_byte(v) != 0));
        assert_eq!((string_byte(0xABCD), string_byte(256)), (0xCD, 1));
        let f = CpuFeatures::detect();
        if !f.erms {
            eprintln!("stosb-write not run: this CPU lacks erms");
            return;
        }
        let s = Streamer::new(StreamOp::StosbWrite, 16, 64, &f).unwrap();
        let mut b = Box::new(Buf([0x11; 1 << 16]));
        s.pass(
            StreamView::of(&mut Region::from_slice(&mut b.0), 1, false)[0],
            256,
        );
        assert!(b.0.iter().all(|&x| x == 1));
    }

    #[test]
    fn a_pass_covers_the_span() {
        let f = CpuFeatures::detect();
        for w in widths(&f) {
            a_pass_covers_the_span_at(w, &f);
        }
    }

    fn a_pass_covers_the_span_at(w: usize, f: &CpuFeatures) {
        let s = Streamer::new(StreamOp::Write, w, 4096, f).unwrap();
        let mut b = Box::new(Buf([0; 1 << 16]));
        let t = s.pass(
            StreamView::of(&mut Region::from_slice(&mut b.0), 1, false)[0],
            5,
        );
        assert_eq!(t.written, 1 << 16);
        assert!(words(&b.0).iter().all(|&x| x == 5));
        let c = Streamer::new(StreamOp::Copy, w, 4096, f).unwrap();
        assert_eq!(c.span(1 << 16), 1 << 15);
        if !f.clwb {
            return;
        }
        let s = Streamer::new(StreamOp::StoreClwb, w, 192, f).unwrap();
        let mut b = Box::new(Buf([0; 1 << 16]));
        let t = s.pass(
            StreamView::of(&mut Region::from_slice(&mut b.0), 1, false)[0],
            9,
        );
        assert_eq!(t.written as usize, (1 << 16) / 192 * 192);
        assert_eq!(s.pass_traffic(1 << 16), t);
    }

    /// A pass's traffic, told without streaming, is what streaming the pass counts.
    #[test]
    fn pass_traffic_is_what_a_pass_counts() {
        let f = CpuFeatures::detect();
        let w = Streamer::widest(&f);
        for op in STREAM_OPS {
            if op.feature().is_some_and(|x| !f.has(x)) {
                continue;
            }
            for access in [64usize, 192, 4096] {
                let s = Streamer::new(op, w, access, &f).unwrap();
                let mut b = Box::new(Buf([0; 1 << 16]));
                let len = (1 << 16) - 128; // not a multiple of 192; each half 64-byte aligned
                let t = s.pass(
                    StreamView::of(&mut Region::from_slice(&mut b.0[..len]), 1, false)[0],
                    3,
                );
                assert_eq!(s.pass_traffic(len), t, "{} {access}", op.name());
            }
        }
    }

    #[test]
    fn a_block_order_is_a_permutation_pass_after_pass() {
        for n in [1u64, 2, 3, 5, 64, 100, 1000, 4096, 4097, 65_535] {
            let mut o = BlockOrder::new(n, n ^ 0x5eed);
            let first: Vec<u64> = (0..n).map(|_| o.next_block()).collect();
            let mut sorted = first.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n = {n}");
            let second: Vec<u64> = (0..n).map(|_| o.next_block()).collect();
            assert_eq!(first, second, "n = {n}");
            if n >= 64 {
                assert_ne!(first, sorted, "n = {n}: not shuffled");
            }
        }
        let a: Vec<u64> = {
            let mut o = BlockOrder::new(1000, 1);
            (0..1000).map(|_| o.next_block()).collect()
        };
        let mut o = BlockOrder::new(1000, 2);
        assert_ne!(a, (0..1000).map(|_| o.next_block()).collect::<Vec<_>>());
    }

    #[test]
    fn a_random_pass_touches_every_block_of_the_region_once() {
        let f = CpuFeatures::detect();
        for w in widths(&f) {
            for (op, access) in [
                (StreamOp::Write, 64),
                (StreamOp::NtStore, 192),
                (StreamOp::Copy, 128),
            ] {
                let mut b = Box::new(Buf([0; 1 << 16]));
                let s = Streamer::new(op, w, access, &f).unwrap();
                let mut region = Region::from_slice(&mut b.0);
                let view = StreamView::of(&mut region, 1, false)[0];
                let n = s.block_count(view.len()) as u64;
                let mut o = BlockOrder::new(n, 11);
                // Block i gets value i + 1, so a block written twice or skipped shows.
                let mut touched = vec![0u32; n as usize];
                for _ in 0..n {
                    let mut one = o.clone();
                    let i = one.next_block();
                    touched[i as usize] += 1;
                    let t = s.random_run(view, &mut o, 1, 7);
                    assert_eq!(t.total(), if op.copies() { 2 } else { 1 } * access as u64);
                }
                s.drain();
                assert!(touched.iter().all(|&c| c == 1), "{op:?} {w}: {touched:?}");
                if !op.copies() {
                    let span = s.span(b.0.len());
                    assert!(words(&b.0[..span]).iter().all(|&x| x == 7), "{op:?} {w}");
                }
            }
        }
    }

    #[test]
    fn views_partition_or_share() {
        let mut b = Box::new(Buf([0; 1 << 16]));
        let mut r = Region::from_slice(&mut b.0);
        let base = r.as_ptr() as usize;
        let v = StreamView::of(&mut r, 3, false);
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|x| x.len() == (1 << 16) / 3 / 64 * 64));
        assert_eq!(v[1].ptr as usize - base, v[0].len());
        let part = v[2].slice(128, 1000);
        assert_eq!(
            (part.ptr as usize - v[2].ptr as usize, part.len()),
            (128, 960)
        );
        assert_eq!(v[2].slice(1 << 20, 64).len(), 0);
        let (a, c) = v[0].halves();
        assert!(a.len() == c.len() && a.len() + c.len() + 64 >= v[0].len());
        let mut r = Region::from_slice(&mut b.0);
        let s = StreamView::of(&mut r, 2, true);
        assert!(
            s.iter()
                .all(|x| x.ptr as usize == base && x.len() == 1 << 16)
        );
    }

    /// ntcopy-pages defaults to glibc's 32-byte vectors wherever AVX2 is, AVX-512 or not;
    /// every other op to the widest.
    #[test]
    fn ntcopy_pages_defaults_to_glibcs_vector_width() {
        let old = CpuFeatures::baseline();
        let avx2 = CpuFeatures {
            avx: true,
            avx2: true,
            ..old
        };
        let avx512 = CpuFeatures {
            avx512f: true,
            ..avx2
        };
        for (f, pages, others) in [(old, 16, 16), (avx2, 32, 32), (avx512, 32, 64)] {
            for op in STREAM_OPS {
                let want = if op == StreamOp::NtCopyPages {
                    pages
                } else {
                    others
                };
                assert_eq!(op.default_width(&f), want, "{op:?}");
            }
        }
    }

    /// Without AVX2 the default width is SSE2's 16 bytes, which every op but store+clwb
    /// (no clwb) accepts: bandwidth, loaded and numa run on any x86-64 CPU.
    #[test]
    fn the_x86_64_baseline_streams_at_16_bytes() {
        let old = CpuFeatures::baseline();
        assert_eq!(Streamer::widest(&old), 16);
        let sandy_bridge = CpuFeatures { avx: true, ..old };
        assert_eq!(Streamer::widest(&sandy_bridge), 16, "AVX without AVX2");
        assert_eq!(Streamer::widest(&CpuFeatures { avx2: true, ..old }), 32);
        for op in STREAM_OPS {
            let r = Streamer::new(op, 16, 64, &old);
            assert_eq!(r.is_ok(), op.feature().is_none(), "{op:?}");
        }
        assert_eq!(
            Streamer::new(StreamOp::Read, 32, 64, &sandy_bridge)
                .unwrap_err()
                .to_string(),
            "read with 32-byte vectors: this CPU lacks AVX2"
        );
    }

    #[test]
    fn refusals() {
        let f = CpuFeatures::default();
        assert!(Streamer::new(StreamOp::Read, 64, 64, &f).is_err());
        assert!(Streamer::new(StreamOp::Read, 8, 64, &f).is_err());
        let g = CpuFeatures {
            avx2: true,
            ..CpuFeatures::default()
        };
        assert_eq!(
            Streamer::new(StreamOp::StoreClwb, 32, 64, &g)
                .unwrap_err()
                .to_string(),
            "store+clwb with 32-byte vectors: this CPU lacks clwb"
        );
        for op in [StreamOp::StosbWrite, StreamOp::MovsbCopy] {
            assert_eq!(
                Streamer::new(op, 32, 64, &g).unwrap_err().to_string(),
                format!("{} with 32-byte vectors: this CPU lacks erms", op.name())
            );
            let erms = CpuFeatures { erms: true, ..g };
            assert!(Streamer::new(op, 32, 64, &erms).is_ok());
        }
        assert!(Streamer::new(StreamOp::Read, 32, 100, &g).is_err());
    }
}
