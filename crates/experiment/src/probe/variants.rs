//! The curves each probe draws: one [`Variant`] per setting of the probe (lines per
//! XPLine, pattern, mode, prefetch, write), each timing the visits of one working set.

use super::ProbeKind;
use pmscope_core::vocab::{ParamKey, Pattern, p};
use pmscope_loops::Region;
use pmscope_loops::access::Sequence;
use pmscope_loops::probe::{self, LINES, VisitWrite, XPLINE};
use pmscope_runner::harness::BlockIndex;
use serde_json::{Value, json};

/// Times the visits of one point: raw ticks for a working set of the given bytes, the
/// block's share of the visits in the block's own random order.
pub type Measure = Box<dyn Fn(&mut Region<'_>, usize, BlockIndex) -> Vec<u64> + Sync>;

/// One curve of a probe: its variant's parameters and a point per working set.
pub struct Variant {
    /// The parameters that tell this curve from the probe's others.
    pub params: Vec<(ParamKey, Value)>,
    /// How one point is measured.
    pub measure: Measure,
}

/// What the variants time with.
#[derive(Clone, Copy)]
pub struct Tools {
    /// A load of each visited line.
    pub load: Sequence,
    /// A non-temporal store of each visited line, then sfence.
    pub nt: Sequence,
    /// The write of `chase-write`'s visits.
    pub write: VisitWrite,
    /// Visits timed per point.
    pub count: usize,
    /// Seed of the random orders.
    pub seed: u64,
}

/// The patterns of the probes that take both.
const PATTERNS: [Pattern; 2] = [Pattern::Seq, Pattern::Rand];

/// The curves of `kind`.
pub fn of(kind: ProbeKind, t: Tools) -> Vec<Variant> {
    match kind {
        ProbeKind::ReadBuffer => read_buffer(t),
        ProbeKind::WriteBuffer => write_buffer(t),
        ProbeKind::RwBuffer => rw_buffer(t),
        ProbeKind::Prefetch => prefetch(t),
        ProbeKind::ChaseWrite => chase_write(t),
    }
}

/// Flushed reads of k lines of random XPLines, k = 1..4.
fn read_buffer(t: Tools) -> Vec<Variant> {
    let Tools {
        load, count, seed, ..
    } = t;
    (1..=LINES)
        .map(|k| Variant {
            params: vec![
                (p::LINES, json!(k)),
                (p::PATTERN, json!(Pattern::Rand.name())),
            ],
            measure: Box::new(move |r, ws, block| {
                let (count, seed) = (block.share(count), block.seed(seed));
                let offs = probe::cycle(&probe::xplines(ws, Pattern::Rand, seed), count);
                let mut ticks = vec![0; offs.len()];
                load.time_each(r, 64 * k, &offs, true, &mut ticks);
                ticks
            }),
        })
        .collect()
}

/// Non-temporal writes of k lines of XPLines in both orders, k = 1..4.
fn write_buffer(t: Tools) -> Vec<Variant> {
    let Tools {
        nt, count, seed, ..
    } = t;
    let mut variants = Vec::new();
    for pattern in PATTERNS {
        for k in 1..=LINES {
            variants.push(Variant {
                params: vec![(p::LINES, json!(k)), (p::PATTERN, json!(pattern.name()))],
                measure: Box::new(move |r, ws, block| {
                    let (count, seed) = (block.share(count), block.seed(seed));
                    let offs = probe::cycle(&probe::xplines(ws, pattern, seed), count);
                    let mut ticks = vec![0; offs.len()];
                    nt.time_each(r, 64 * k, &offs, false, &mut ticks);
                    ticks
                }),
            });
        }
    }
    variants
}

/// What `rw-buffer` times at each visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A flushed XPLine read.
    ReadOnly,
    /// A non-temporal XPLine write.
    WriteOnly,
    /// A flushed XPLine read, then a non-temporal XPLine write to the other half.
    Interleaved,
}

impl Mode {
    /// The records' `mode`.
    fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::WriteOnly => "write-only",
            Mode::Interleaved => "interleaved",
        }
    }
}

/// Flushed reads interleaved with non-temporal writes on a disjoint half, and each alone.
fn rw_buffer(t: Tools) -> Vec<Variant> {
    let Tools {
        load,
        nt,
        count,
        seed,
        ..
    } = t;
    [Mode::ReadOnly, Mode::WriteOnly, Mode::Interleaved]
        .into_iter()
        .map(|mode| Variant {
            params: vec![
                (p::MODE, json!(mode.name())),
                (p::PATTERN, json!(Pattern::Rand.name())),
            ],
            measure: Box::new(move |r, ws, block| {
                let (count, seed) = (block.share(count), block.seed(seed));
                let (reads, writes) = probe::split_read_write(ws, Pattern::Rand, seed);
                let (reads, writes) = (probe::cycle(&reads, count), probe::cycle(&writes, count));
                let mut ticks = vec![0u64; count];
                match mode {
                    Mode::ReadOnly => load.time_each(r, XPLINE, &reads, true, &mut ticks),
                    Mode::WriteOnly => nt.time_each(r, XPLINE, &writes, false, &mut ticks),
                    Mode::Interleaved => {
                        // A flushed XPLine read, then an XPLine nt write to the other half:
                        // one figure per pair.
                        let mut one = [0u64];
                        for (i, slot) in ticks.iter_mut().enumerate() {
                            load.time_each(r, XPLINE, &reads[i..i + 1], true, &mut one);
                            *slot = one[0];
                            nt.time_each(r, XPLINE, &writes[i..i + 1], false, &mut one);
                            *slot += one[0];
                        }
                    }
                }
                ticks
            }),
        })
        .collect()
}

/// Random XPLines read line by line, without and with a software prefetch of the next.
fn prefetch(t: Tools) -> Vec<Variant> {
    let Tools { count, seed, .. } = t;
    [false, true]
        .into_iter()
        .map(|pf| Variant {
            params: vec![
                (p::SOFTWARE_PREFETCH, json!(pf)),
                (p::PATTERN, json!(Pattern::Rand.name())),
            ],
            measure: Box::new(move |r, ws, block| {
                let (count, seed) = (block.share(count), block.seed(seed));
                let offs = probe::cycle(&probe::xplines(ws, Pattern::Rand, seed), count);
                let mut ticks = vec![0; offs.len()];
                probe::time_xpline_reads(r, &offs, pf, &mut ticks);
                ticks
            }),
        })
        .collect()
}

/// A walk over XPLines writing another line of each, coupled or decoupled, in both orders.
fn chase_write(t: Tools) -> Vec<Variant> {
    let Tools {
        write, count, seed, ..
    } = t;
    let mut variants = Vec::new();
    for pattern in PATTERNS {
        for decoupled in [false, true] {
            variants.push(Variant {
                params: vec![
                    (p::PATTERN, json!(pattern.name())),
                    (p::WRITE, json!(write.name())),
                    (p::DECOUPLED, json!(decoupled)),
                ],
                measure: Box::new(move |r, ws, block| {
                    let (count, seed) = (block.share(count), block.seed(seed));
                    let order = probe::xplines(ws, pattern, seed);
                    let mut ticks = vec![0; count];
                    probe::time_walk(r, &order, write, decoupled, &mut ticks);
                    ticks
                }),
            });
        }
    }
    variants
}
