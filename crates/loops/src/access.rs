//! Memory-access sequences — an access op, a per-line flush, a fence — run either one
//! access at a time between serialising timestamps (`pmscope inst`, LATTester's method) or
//! as a stream of 64-byte blocks for throughput (`pmscope sync`, pmmeter's method).
//!
//! Every combination is a monomorphic loop chosen once per call (see `arch::ops`): no
//! indirect call or branch per access. Stores write the value [`store_value`] of the access
//! — non-zero and different every time, since some CPUs elide stores of zeros over zeros.
#![allow(unsafe_code)]

use crate::arch::ops::{self, Load, NtLoad, NtStore, Store};
use crate::{Region, Unavailable};
use pmscope_persist::Recipe;
use pmscope_persist::insn::{
    Clflush, Clflushopt, Clwb, Fence, Flush, Mfence, NoFence, NoFlush, Sfence,
};
pub use pmscope_persist::insn::{FENCES, FenceKind, FlushKind};
use pmscope_sys::cpu::{CpuFeatures, Feature};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The access op (with its flush, for stores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// Ordinary load.
    Load,
    /// Non-temporal load (`movntdqa`).
    NtLoad,
    /// Ordinary store, no flush.
    Store,
    /// Store, then `clflush` each line.
    StoreClflush,
    /// Store, then `clflushopt` each line.
    StoreClflushopt,
    /// Store, then `clwb` each line.
    StoreClwb,
    /// Non-temporal store.
    NtStore,
}

/// Every op, in table order.
pub const OPS: [Op; 7] = [
    Op::Load,
    Op::NtLoad,
    Op::Store,
    Op::StoreClflush,
    Op::StoreClflushopt,
    Op::StoreClwb,
    Op::NtStore,
];

impl Op {
    /// The name the CLI accepts.
    pub fn name(self) -> &'static str {
        match self {
            Op::Load => "load",
            Op::NtLoad => "ntload",
            Op::Store => "store",
            Op::StoreClflush => "store+clflush",
            Op::StoreClflushopt => "store+clflushopt",
            Op::StoreClwb => "store+clwb",
            Op::NtStore => "ntstore",
        }
    }

    /// Whether the op writes memory.
    pub fn writes(self) -> bool {
        !matches!(self, Op::Load | Op::NtLoad)
    }

    /// The write-back after each line.
    pub fn flush(self) -> FlushKind {
        match self {
            Op::StoreClflush => FlushKind::Clflush,
            Op::StoreClflushopt => FlushKind::Clflushopt,
            Op::StoreClwb => FlushKind::Clwb,
            Op::Load | Op::NtLoad | Op::Store | Op::NtStore => FlushKind::None,
        }
    }

    /// Whether the accesses are non-temporal (`movntdqa` loads, `movnt*` stores).
    pub fn nontemporal(self) -> bool {
        matches!(self, Op::NtLoad | Op::NtStore)
    }

    /// The CPU features the op needs at every width (the width's vector extension comes on
    /// top: AVX2 for 32-byte, AVX-512F for 64-byte instructions; 8- and 16-byte ones are
    /// SSE2, on every x86-64 CPU).
    pub fn features(self) -> Vec<Feature> {
        let access = match self {
            Op::NtLoad => Some(Feature::Movntdqa),
            Op::NtStore => Some(Feature::Movnti),
            _ => None,
        };
        access.into_iter().chain(self.flush().feature()).collect()
    }

    /// The op of a persist strategy's recipe: how it stores and flushes a line (`None` for
    /// a recipe no op performs, such as msync's system call or a non-temporal store plus a
    /// flush).
    pub fn of_recipe(r: &Recipe) -> Option<Op> {
        OPS.into_iter()
            .find(|o| o.writes() && o.nontemporal() == r.nontemporal && o.flush() == r.flush)
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Op> {
        OPS.into_iter().find(|o| o.name() == s)
    }

    /// Refuses what this CPU cannot run at this unit width.
    pub fn check(self, width: Width, f: &CpuFeatures) -> Result<(), Unavailable> {
        let what = format!("{} with {}-byte instructions", self.name(), width.bytes());
        let flush_missing = self.flush().feature().filter(|&x| !f.has(x));
        let reason = match (self, width) {
            (Op::NtLoad, Width::W8) => Some("movntdqa has no 8-byte form".to_string()),
            (Op::NtLoad, Width::W16) if !f.movntdqa => {
                Some("this CPU lacks SSE4.1 (movntdqa)".into())
            }
            (_, Width::W32) if !f.avx2 => Some("this CPU lacks AVX2".into()),
            (_, Width::W64) if !f.avx512f => Some("this CPU lacks AVX-512F".into()),
            _ => flush_missing.map(|x| format!("this CPU lacks {x}")),
        };
        match reason {
            Some(reason) => Err(Unavailable::asked(what, reason)),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The size of each access instruction (pmmeter's "instruction unit").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Width {
    /// 8 bytes: `mov`, `movnti`.
    W8,
    /// 16 bytes: SSE.
    W16,
    /// 32 bytes: AVX2.
    W32,
    /// 64 bytes: AVX-512.
    W64,
}

impl Width {
    /// Bytes per instruction.
    pub fn bytes(self) -> usize {
        match self {
            Width::W8 => 8,
            Width::W16 => 16,
            Width::W32 => 32,
            Width::W64 => 64,
        }
    }

    /// From a byte count.
    pub fn from_bytes(b: usize) -> Option<Width> {
        [Width::W8, Width::W16, Width::W32, Width::W64]
            .into_iter()
            .find(|w| w.bytes() == b)
    }

    /// The widest vector this CPU has (AVX-512 where present, AVX2 otherwise, else SSE).
    pub fn widest(f: &CpuFeatures) -> Width {
        if f.avx512f {
            Width::W64
        } else if f.avx2 {
            Width::W32
        } else {
            Width::W16
        }
    }
}

/// The value stored by access number `i`: non-zero, different for every access.
pub fn store_value(i: u64) -> u64 {
    (i.wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

type TimedFn = unsafe fn(*mut u8, usize, u64) -> u64;
type SeqFn = unsafe fn(*mut u8, usize, u64);
type IdxFn = unsafe fn(*mut u8, &[u32], u64);
type WordFn = unsafe fn(*mut u8, u64) -> u64;

/// Picks the monomorphic instance of `$f` for an (op, fence) pair.
macro_rules! pick {
    ($f:ident, $op:expr, $fence:expr) => {{
        macro_rules! by_fence {
            ($a:ty, $fl:ty) => {
                match $fence {
                    FenceKind::None => ops::$f::<$a, $fl, NoFence> as _,
                    FenceKind::Sfence => ops::$f::<$a, $fl, Sfence> as _,
                    FenceKind::Mfence => ops::$f::<$a, $fl, Mfence> as _,
                }
            };
        }
        match $op {
            Op::Load => by_fence!(Load, NoFlush),
            Op::NtLoad => by_fence!(NtLoad, NoFlush),
            Op::Store => by_fence!(Store, NoFlush),
            Op::StoreClflush => by_fence!(Store, Clflush),
            Op::StoreClflushopt => by_fence!(Store, Clflushopt),
            Op::StoreClwb => by_fence!(Store, Clwb),
            Op::NtStore => by_fence!(NtStore, NoFlush),
        }
    }};
}

fn timed_fn(op: Op, fence: FenceKind, w: Width) -> TimedFn {
    match w {
        Width::W64 => pick!(timed64, op, fence),
        Width::W32 => pick!(timed32, op, fence),
        Width::W16 => pick!(timed16, op, fence),
        Width::W8 => pick!(timed8, op, fence),
    }
}

fn seq_fn(op: Op, fence: FenceKind, w: Width) -> SeqFn {
    match w {
        Width::W64 => pick!(seq64, op, fence),
        Width::W32 => pick!(seq32, op, fence),
        Width::W16 => pick!(seq16, op, fence),
        Width::W8 => pick!(seq8, op, fence),
    }
}

fn idx_fn(op: Op, fence: FenceKind, w: Width) -> IdxFn {
    match w {
        Width::W64 => pick!(idx64, op, fence),
        Width::W32 => pick!(idx32, op, fence),
        Width::W16 => pick!(idx16, op, fence),
        Width::W8 => pick!(idx8, op, fence),
    }
}

fn word_fn(op: Op, fence: FenceKind) -> WordFn {
    pick!(timed_word, op, fence)
}

/// Refuses timing single accesses on a CPU without `rdtscp`, which closes every such
/// interval (`pmscope_sys::tsc::stop`): the machine's limit, not the command line's. Every
/// caller of a single-access timer (`Sequence::time_each`, `timing_overhead`,
/// `Chaser::time_each`, the probe kernels) is behind this check.
pub fn check_timing(f: &CpuFeatures) -> Result<(), Unavailable> {
    if f.rdtscp {
        Ok(())
    } else {
        Err(Unavailable::machine(
            "timing single accesses",
            "this CPU lacks rdtscp",
        ))
    }
}

/// A checked access sequence: op, fence and unit width, validated against the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sequence {
    op: Op,
    fence: FenceKind,
    width: Width,
    /// Whether the CPU can time single accesses (`rdtscp`): [`Sequence::new`]'s sequences
    /// can, [`Sequence::stream`]'s only stream.
    timed: bool,
}

impl Sequence {
    /// Checks the sequence against the CPU for timing single accesses (and streaming); an
    /// unsupported one is an error, not SIGILL.
    pub fn new(
        op: Op,
        fence: FenceKind,
        width: Width,
        f: &CpuFeatures,
    ) -> Result<Sequence, Unavailable> {
        let streamed = Self::stream(op, fence, width, f)?;
        check_timing(f)?;
        Ok(Sequence {
            timed: true,
            ..streamed
        })
    }

    /// Checks the sequence for streaming only ([`stream_seq`](Self::stream_seq),
    /// [`stream_idx`](Self::stream_idx)), which needs no `rdtscp`.
    pub fn stream(
        op: Op,
        fence: FenceKind,
        width: Width,
        f: &CpuFeatures,
    ) -> Result<Sequence, Unavailable> {
        op.check(width, f)?;
        Ok(Sequence {
            op,
            fence,
            width,
            timed: false,
        })
    }

    /// The op.
    pub fn op(&self) -> Op {
        self.op
    }

    /// Times one access of `size` bytes at each offset of `offsets` (each aligned to 64,
    /// or to 8 when `size` is 8), writing raw TSC ticks (overhead included) into `out`.
    /// With `flush_before`, the lines of each access are flushed (clflush + mfence) first,
    /// outside the timed interval, so loads reach memory.
    pub fn time_each(
        &self,
        region: &mut Region<'_>,
        size: usize,
        offsets: &[usize],
        flush_before: bool,
        out: &mut [u64],
    ) {
        assert!(
            size == 8 || (size.is_multiple_of(64) && size > 0),
            "access sizes are 8 or multiples of 64"
        );
        assert_eq!(offsets.len(), out.len());
        assert!(
            self.timed,
            "a streaming-only sequence cannot time single accesses"
        );
        let len = region.len();
        let base = region.as_ptr();
        for &o in offsets {
            assert!(
                o + size <= len && o % if size == 8 { 8 } else { 64 } == 0,
                "offset {o} outside or misaligned"
            );
        }
        let lines = size.div_ceil(64);
        let (timed, word) = (
            timed_fn(self.op, self.fence, self.width),
            word_fn(self.op, self.fence),
        );
        for (i, (&o, t)) in offsets.iter().zip(out.iter_mut()).enumerate() {
            // SAFETY: o + size <= len (checked above): the access stays in the region.
            let p = unsafe { base.add(o) };
            if flush_before {
                let line = (p as usize & !63) as *const u8;
                for l in 0..lines {
                    // SAFETY: the line of p and the following ones are inside the region;
                    // clflush is baseline x86-64 (CPUID.01H:EDX[19]).
                    unsafe { Clflush::line(line.add(l * 64)) };
                }
                Mfence::fence();
            }
            let v = store_value(i as u64);
            // SAFETY: the CPU supports the sequence (checked in `new`); p is aligned and the
            // access stays inside the region, which this call borrows exclusively.
            *t = unsafe {
                if size == 8 {
                    word(p, v)
                } else {
                    timed(p, lines, v)
                }
            };
        }
    }

    /// Streams over `lines` consecutive 64-byte lines of the region, fence after each line.
    pub fn stream_seq(&self, region: &mut Region<'_>, first_line: usize, lines: usize, v: u64) {
        assert!(
            (first_line + lines) * 64 <= region.len(),
            "lines outside the region"
        );
        let f = seq_fn(self.op, self.fence, self.width);
        // SAFETY: the range is inside the exclusively borrowed region; the CPU supports the
        // sequence.
        unsafe { f(region.as_ptr().add(first_line * 64), lines, v) };
    }

    /// Streams over the lines `idx` names (line numbers in the region).
    pub fn stream_idx(&self, region: &mut Region<'_>, idx: &[u32], v: u64) {
        let lines = region.len() / 64;
        assert!(
            idx.iter().all(|&i| (i as usize) < lines),
            "line index outside the region"
        );
        let f = idx_fn(self.op, self.fence, self.width);
        // SAFETY: every index is a line of the exclusively borrowed region (checked); the
        // CPU supports the sequence.
        unsafe { f(region.as_ptr(), idx, v) };
    }
}

/// Median ticks of an empty timed interval with the same timestamp discipline: the
/// overhead to subtract from [`Sequence::time_each`]. Call it only after
/// [`check_timing`] (or a [`Sequence::new`]) succeeded: it executes `rdtscp`.
pub fn timing_overhead(n: usize) -> u64 {
    let mut v: Vec<u64> = (0..n.max(1)).map(|_| ops::timed_nothing()).collect();
    v.sort_unstable();
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(align(64))]
    struct Buf([u8; 8192]);

    // Every op x fence at every width leaving exactly its bytes: `catalog`'s registry test.

    #[test]
    fn eight_byte_accesses() {
        let f = CpuFeatures::detect();
        let seq = Sequence::new(Op::NtStore, FenceKind::Sfence, Width::W8, &f).unwrap();
        let mut b = Box::new(Buf([0; 8192]));
        let mut r = Region::from_slice(&mut b.0);
        let mut out = [0u64; 2];
        seq.time_each(&mut r, 8, &[8, 64], false, &mut out);
        assert_eq!(
            u64::from_ne_bytes(b.0[8..16].try_into().unwrap()),
            store_value(0)
        );
        assert_eq!(
            u64::from_ne_bytes(b.0[64..72].try_into().unwrap()),
            store_value(1)
        );
        assert_eq!(b.0[16..64].iter().filter(|&&x| x != 0).count(), 0);
        assert!(Op::NtLoad.check(Width::W8, &f).is_err());
    }

    #[test]
    fn streams_write_every_line_once() {
        let f = CpuFeatures::detect();
        let w = Width::widest(&f);
        let seq = Sequence::new(Op::StoreClwb, FenceKind::Sfence, w, &f).unwrap();
        let mut b = Box::new(Buf([0; 8192]));
        let mut r = Region::from_slice(&mut b.0);
        seq.stream_seq(&mut r, 2, 4, 7);
        assert!(b.0[..128].iter().all(|&x| x == 0));
        assert!(
            b.0[128..384]
                .chunks(8)
                .all(|c| u64::from_ne_bytes(c.try_into().unwrap()) == 7)
        );
        assert!(b.0[384..].iter().all(|&x| x == 0));
        let mut r = Region::from_slice(&mut b.0);
        seq.stream_idx(&mut r, &[100, 10], 9);
        assert!(
            b.0[6400..6464]
                .chunks(8)
                .all(|c| u64::from_ne_bytes(c.try_into().unwrap()) == 9)
        );
        assert!(
            b.0[640..704]
                .chunks(8)
                .all(|c| u64::from_ne_bytes(c.try_into().unwrap()) == 9)
        );
    }

    #[test]
    fn unsupported_is_reported() {
        let none = CpuFeatures {
            rdtscp: true,
            ..CpuFeatures::default()
        };
        let e = Sequence::new(Op::StoreClwb, FenceKind::None, Width::W8, &none).unwrap_err();
        assert_eq!(
            e.to_string(),
            "store+clwb with 8-byte instructions: this CPU lacks clwb"
        );
        assert!(e.is_usage(), "another op is the remedy");
        let e = Sequence::new(
            Op::Load,
            FenceKind::None,
            Width::W8,
            &CpuFeatures::default(),
        )
        .unwrap_err();
        assert!(!e.is_usage(), "no rdtscp: no command line helps");
        assert!(Sequence::new(Op::Load, FenceKind::None, Width::W64, &none).is_err());
        assert!(timing_overhead(11) > 0);
    }

    /// The x86-64 baseline (SSE2, clflush, no rdtscp): every op but the newer flushes and
    /// movntdqa streams at 16 bytes; timing single accesses is the machine's refusal.
    #[test]
    fn the_x86_64_baseline_streams_at_16_bytes_and_refuses_timing() {
        let old = CpuFeatures::baseline();
        assert_eq!(Width::widest(&old), Width::W16);
        for op in OPS {
            let ok = Sequence::stream(op, FenceKind::Sfence, Width::W16, &old).is_ok();
            let want = !matches!(op, Op::NtLoad | Op::StoreClflushopt | Op::StoreClwb);
            assert_eq!(ok, want, "{op}");
        }
        let e = Sequence::new(Op::Load, FenceKind::None, Width::W16, &old).unwrap_err();
        assert_eq!(
            e.to_string(),
            "timing single accesses: this CPU lacks rdtscp"
        );
        assert!(!e.is_usage());
        let westmere = CpuFeatures {
            movntdqa: true,
            rdtscp: true,
            ..old
        };
        assert!(Sequence::new(Op::NtLoad, FenceKind::None, Width::W16, &westmere).is_ok());
        let e = Op::Store.check(Width::W32, &westmere).unwrap_err();
        assert_eq!(
            e.to_string(),
            "store with 32-byte instructions: this CPU lacks AVX2"
        );
        // The 16-byte loops run here whatever this CPU has beyond SSE2.
        let mut b = Box::new(Buf([0; 8192]));
        let seq = Sequence::stream(Op::Store, FenceKind::None, Width::W16, &old).unwrap();
        seq.stream_seq(&mut Region::from_slice(&mut b.0), 1, 2, 5);
        assert!(
            b.0[64..192]
                .chunks(8)
                .all(|c| u64::from_ne_bytes(c.try_into().unwrap()) == 5)
        );
        assert!(b.0[..64].iter().chain(&b.0[192..]).all(|&x| x == 0));
    }
}
