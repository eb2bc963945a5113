//! The op catalog: every access sequence pmscope times, one row each — an access op (with
//! its per-line flush) and a fence — with the names the seed studies give it. It is the
//! only list: `pmscope inst` and `pmscope sync` take their sequences from it, `loaded
//! --probe` and `--help` resolve names through it, `pmscope list ops` prints it and
//! `docs/kernels.md` is generated from it (a test fails when the doc differs). A row's
//! flush and required CPU features are derived from its op, never typed.
//!
//! Aliases: seed 004's mnemonics (LATTester, Figure 8: L, LN, SF, SN, SO, SW, each with the
//! `mfence` its latency tests put after every access) and pmmeter's option names (seed 002:
//! `+F` is the fence after each block, `mfence` as pmmeter's default).
//!
//! Adding a sequence of existing instructions is one row here; a new op is a variant of
//! [`Op`] (with its loop instance in `access`'s `pick!`) and then rows.

use crate::Unavailable;
use crate::access::{FenceKind, FlushKind, OPS, Op, Sequence, Width};
use crate::stream::StreamOp;
use pmscope_persist::{Drain, PersistStrategy};
use pmscope_sys::cpu::{CpuFeatures, Feature};

/// One access sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSpec {
    /// The canonical name: `<op>` or `<op>+<fence>`.
    pub id: &'static str,
    /// Seed 004's mnemonic, if the paper measured this sequence.
    pub mnemonic: Option<&'static str>,
    /// pmmeter's option name, if pmmeter has this sequence.
    pub pmmeter: Option<&'static str>,
    /// The access op and its per-line flush.
    pub op: Op,
    /// The fence after each access (`inst`) or each 64-byte block (`sync`).
    pub fence: FenceKind,
    /// One line for `--help`, `pmscope list ops` and `docs/kernels.md`.
    pub doc: &'static str,
}

const fn row(
    id: &'static str,
    mnemonic: Option<&'static str>,
    pmmeter: Option<&'static str>,
    op: Op,
    fence: FenceKind,
    doc: &'static str,
) -> OpSpec {
    OpSpec {
        id,
        mnemonic,
        pmmeter,
        op,
        fence,
        doc,
    }
}

use FenceKind::{Mfence, None as NoFence, Sfence};

/// Every sequence. The rows with a pmmeter name come in pmmeter's order (`pmscope sync`
/// runs them in this order).
#[rustfmt::skip]
pub const CATALOG: [OpSpec; 21] = [
    //  id, seed 004 mnemonic, pmmeter name, op (access + flush), fence, doc
    row("load", None, Some("load bare"), Op::Load, NoFence, "ordinary load"),
    row("ntload", None, Some("load nt"), Op::NtLoad, NoFence, "non-temporal load (movntdqa)"),
    row("load+mfence", Some("L"), Some("load bare+F"), Op::Load, Mfence, "load, then mfence"),
    row("ntload+mfence", Some("LN"), Some("load nt+F"), Op::NtLoad, Mfence, "non-temporal load, then mfence"),
    row("load+sfence", None, None, Op::Load, Sfence, "load, then sfence"),
    row("ntload+sfence", None, None, Op::NtLoad, Sfence, "non-temporal load, then sfence"),
    row("store", None, Some("store bare"), Op::Store, NoFence, "ordinary store, left in the cache"),
    row("ntstore", None, Some("store nt"), Op::NtStore, NoFence, "non-temporal store (movnti/movntdq/vmovntdq), undrained"),
    row("store+mfence", None, Some("store bare+F"), Op::Store, Mfence, "store, then mfence"),
    row("ntstore+mfence", Some("SN"), Some("store nt+F"), Op::NtStore, Mfence, "non-temporal store, then mfence"),
    row("store+clflush", None, Some("store clflush"), Op::StoreClflush, NoFence, "store, clflush each line (ordered, no fence needed)"),
    row("store+clflushopt", None, Some("store clflushopt"), Op::StoreClflushopt, NoFence, "store, clflushopt each line, no fence"),
    row("store+clwb", None, Some("store clwb"), Op::StoreClwb, NoFence, "store, clwb each line, no fence"),
    row("store+clflush+mfence", Some("SF"), Some("store clflush+F"), Op::StoreClflush, Mfence, "store, clflush each line, then mfence"),
    row("store+clflushopt+mfence", Some("SO"), Some("store clflushopt+F"), Op::StoreClflushopt, Mfence, "store, clflushopt each line, then mfence"),
    row("store+clwb+mfence", Some("SW"), Some("store clwb+F"), Op::StoreClwb, Mfence, "store, clwb each line, then mfence"),
    row("store+sfence", None, None, Op::Store, Sfence, "store, then sfence"),
    row("ntstore+sfence", None, None, Op::NtStore, Sfence, "non-temporal store, then sfence"),
    row("store+clflush+sfence", None, None, Op::StoreClflush, Sfence, "store, clflush each line, then sfence"),
    row("store+clflushopt+sfence", None, None, Op::StoreClflushopt, Sfence, "store, clflushopt each line, then sfence"),
    row("store+clwb+sfence", None, None, Op::StoreClwb, Sfence, "store, clwb each line, then sfence"),
];

impl OpSpec {
    /// The per-line write-back.
    pub fn flush(&self) -> FlushKind {
        self.op.flush()
    }

    /// Every name the row answers to: its id, then its aliases.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.id)
            .chain(self.mnemonic)
            .chain(self.pmmeter)
    }

    /// The CPU features the row needs at every width (timing single accesses also needs
    /// `rdtscp`; 32- and 64-byte instructions need AVX2 and AVX-512F).
    pub fn features(&self) -> Vec<Feature> {
        self.op.features()
    }

    /// The persist strategy whose store, flush and drain this row performs, if any.
    pub fn strategy(&self) -> Option<PersistStrategy> {
        pmscope_persist::STRATEGIES
            .into_iter()
            .find(|&s| for_strategy(s).is_some_and(|r| r.id == self.id))
    }

    /// The row checked against this CPU at `width`: a runnable sequence, or why not.
    pub fn sequence(&self, width: Width, f: &CpuFeatures) -> Result<Sequence, Unavailable> {
        Sequence::new(self.op, self.fence, width, f)
    }
}

/// The row named `name` (an id or an alias; mnemonics are matched without case).
pub fn find(name: &str) -> Option<&'static OpSpec> {
    CATALOG.iter().find(|r| {
        r.id == name
            || r.pmmeter == Some(name)
            || r.mnemonic.is_some_and(|m| m.eq_ignore_ascii_case(name))
    })
}

/// The row of an (op, fence) pair; the catalog has one for every pair.
pub fn of(op: Op, fence: FenceKind) -> &'static OpSpec {
    CATALOG
        .iter()
        .find(|r| r.op == op && r.fence == fence)
        .expect("the catalog has every op x fence")
}

/// The row that performs a persist strategy's recipe: its store, flush and drain (`None`
/// for `msync`, which is a system call).
pub fn for_strategy(s: PersistStrategy) -> Option<&'static OpSpec> {
    let r = s.recipe();
    let Drain::Fence(fence) = r.drain else {
        return None;
    };
    Some(of(Op::of_recipe(&r)?, fence))
}

/// The stream op of a traffic generator named `name`: a bandwidth op (`read`, `write`,
/// `ntstore`, `store+clwb`, `copy`: `pmscope bandwidth --ops`), or a row of this catalog
/// that streams as one of them — `load`, `store`, `ntstore` and `store+clwb+sfence` (the
/// stream's store+clwb fences after every access) and their aliases. Other rows (a flush
/// without its fence, an mfence per access) have no stream loop.
pub fn stream_op(name: &str) -> Option<StreamOp> {
    StreamOp::parse(name).or_else(|| {
        let r = find(name)?;
        match (r.op, r.fence) {
            (Op::Load, NoFence) => Some(StreamOp::Read),
            (Op::Store, NoFence) => Some(StreamOp::Write),
            (Op::NtStore, NoFence) => Some(StreamOp::NtStore),
            (Op::StoreClwb, Sfence) => Some(StreamOp::StoreClwb),
            _ => None,
        }
    })
}

/// The rows pmmeter names, in pmmeter's order (`pmscope sync`'s options).
pub fn pmmeter_options() -> impl Iterator<Item = &'static OpSpec> {
    CATALOG.iter().filter(|r| r.pmmeter.is_some())
}

/// The names of the ops, for messages: `load, ntload, ...`.
pub fn op_names() -> String {
    OPS.iter().map(|o| o.name()).collect::<Vec<_>>().join(", ")
}

/// The persist strategies that have a row, for messages: `clflush, clflushopt, ...`.
pub fn strategy_names() -> String {
    pmscope_persist::STRATEGIES
        .into_iter()
        .filter(|&s| for_strategy(s).is_some())
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The catalog as Markdown: the body of `docs/kernels.md`.
pub fn markdown() -> String {
    let mut s = String::from(
        "| id | seed 004 | pmmeter | op | flush | fence | needs | persist strategy | what it does |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for r in &CATALOG {
        let features: Vec<&str> = r.features().iter().map(|f| f.name()).collect();
        s += &format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.id,
            r.mnemonic.unwrap_or("-"),
            r.pmmeter.map_or("-".to_string(), |p| format!("`{p}`")),
            r.op.name(),
            r.flush().name(),
            r.fence.name(),
            if features.is_empty() {
                "-".to_string()
            } else {
                features.join(", ")
            },
            r.strategy().map_or("-", |s| s.name()),
            r.doc
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Region;
    use crate::access::{FENCES, store_value};
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_find_their_row() {
        let mut seen = HashSet::new();
        for r in &CATALOG {
            for n in r.names() {
                assert!(seen.insert(n.to_ascii_lowercase()), "{n} names two rows");
                assert_eq!(find(n), Some(r), "{n}");
            }
            let want = if r.fence == FenceKind::None {
                r.op.name().to_string()
            } else {
                format!("{}+{}", r.op.name(), r.fence.name())
            };
            assert_eq!(r.id, want, "ids are op+fence");
        }
        assert_eq!(find("sw").map(|r| r.id), Some("store+clwb+mfence"));
        assert_eq!(find("nonsense"), None);
    }

    #[test]
    fn every_op_and_fence_has_exactly_one_row() {
        for op in OPS {
            for fence in FENCES {
                let n = CATALOG
                    .iter()
                    .filter(|r| r.op == op && r.fence == fence)
                    .count();
                assert_eq!(n, 1, "{op}+{}", fence.name());
            }
        }
        assert_eq!(CATALOG.len(), OPS.len() * FENCES.len());
    }

    #[test]
    fn traffic_ops_resolve_through_the_catalog() {
        for op in crate::stream::STREAM_OPS {
            assert_eq!(stream_op(op.name()), Some(op));
        }
        assert_eq!(stream_op("load"), Some(StreamOp::Read));
        assert_eq!(stream_op("store bare"), Some(StreamOp::Write));
        assert_eq!(stream_op("store nt"), Some(StreamOp::NtStore));
        assert_eq!(stream_op("store+clwb+sfence"), Some(StreamOp::StoreClwb));
        assert_eq!(
            stream_op("SW"),
            None,
            "mfence per access has no stream loop"
        );
        assert_eq!(stream_op("ntload"), None);
        assert_eq!(stream_op("bogus"), None);
    }

    /// Seed 004's latency sequences put an mfence after every access (LATTester).
    #[test]
    fn the_seed_mnemonics_name_what_the_paper_measured() {
        let m = |s: &str| find(s).map(|r| (r.op, r.fence));
        assert_eq!(m("L"), Some((Op::Load, Mfence)));
        assert_eq!(m("LN"), Some((Op::NtLoad, Mfence)));
        assert_eq!(m("SF"), Some((Op::StoreClflush, Mfence)));
        assert_eq!(m("SN"), Some((Op::NtStore, Mfence)));
        assert_eq!(m("SO"), Some((Op::StoreClflushopt, Mfence)));
        assert_eq!(m("SW"), Some((Op::StoreClwb, Mfence)));
    }

    /// `pmscope sync` ran these 14 options, in this order, before the catalog existed.
    #[test]
    fn pmmeter_options_keep_pmmeters_order() {
        let got: Vec<(&str, Op, FenceKind)> = pmmeter_options()
            .map(|r| (r.pmmeter.unwrap(), r.op, r.fence))
            .collect();
        let want = [
            ("load bare", Op::Load, NoFence),
            ("load nt", Op::NtLoad, NoFence),
            ("load bare+F", Op::Load, Mfence),
            ("load nt+F", Op::NtLoad, Mfence),
            ("store bare", Op::Store, NoFence),
            ("store nt", Op::NtStore, NoFence),
            ("store bare+F", Op::Store, Mfence),
            ("store nt+F", Op::NtStore, Mfence),
            ("store clflush", Op::StoreClflush, NoFence),
            ("store clflushopt", Op::StoreClflushopt, NoFence),
            ("store clwb", Op::StoreClwb, NoFence),
            ("store clflush+F", Op::StoreClflush, Mfence),
            ("store clflushopt+F", Op::StoreClflushopt, Mfence),
            ("store clwb+F", Op::StoreClwb, Mfence),
        ];
        assert_eq!(got, want);
    }

    /// A strategy's row is derived from its recipe, so it cannot disagree with what a
    /// `Persister` executes.
    #[test]
    fn strategies_map_to_their_recipes() {
        let id = |s| for_strategy(s).map(|r| r.id);
        assert_eq!(id(PersistStrategy::Clflush), Some("store+clflush"));
        assert_eq!(
            id(PersistStrategy::Clflushopt),
            Some("store+clflushopt+sfence")
        );
        assert_eq!(id(PersistStrategy::Clwb), Some("store+clwb+sfence"));
        assert_eq!(id(PersistStrategy::Ntstore), Some("ntstore+sfence"));
        assert_eq!(id(PersistStrategy::None), Some("store"));
        assert_eq!(id(PersistStrategy::Msync), None);
        for s in pmscope_persist::STRATEGIES {
            if let Some(r) = for_strategy(s) {
                assert_eq!(r.strategy(), Some(s));
                let want: Vec<Feature> = s.feature().into_iter().collect();
                assert_eq!(r.features(), want, "{}", s.name());
            }
        }
    }

    #[repr(align(64))]
    struct Buf([u8; 8192]);

    fn widths(f: &CpuFeatures) -> Vec<Width> {
        [Width::W8, Width::W16, Width::W32, Width::W64]
            .into_iter()
            .filter(|w| match w {
                Width::W32 => f.avx2,
                Width::W64 => f.avx512f,
                _ => true,
            })
            .collect()
    }

    /// The registry self-test: every row, at every width this CPU has, timed one access at
    /// a time and streamed over lines, leaves exactly the bytes it claims — stores their
    /// value over the accessed bytes and nothing else, loads nothing at all. A row this CPU
    /// cannot run must say so through `sequence`, never run.
    #[test]
    fn every_row_leaves_exactly_its_bytes() {
        let f = CpuFeatures::detect();
        let mut ran = 0;
        for r in &CATALOG {
            for w in widths(&f) {
                let seq = match r.sequence(w, &f) {
                    Ok(s) => s,
                    Err(e) => {
                        assert!(r.op.check(w, &f).is_err() || !f.rdtscp, "{}: {e}", r.id);
                        continue;
                    }
                };
                ran += 1;
                // Timed single accesses (inst, loaded --probe).
                for size in [64usize, 256] {
                    let mut b = Box::new(Buf([0xEE; 8192]));
                    let offsets = [128usize, 1024, 4096];
                    let mut out = [0u64; 3];
                    seq.time_each(
                        &mut Region::from_slice(&mut b.0),
                        size,
                        &offsets,
                        !r.op.writes(),
                        &mut out,
                    );
                    let mut want = [0xEEu8; 8192];
                    if r.op.writes() {
                        for (i, &o) in offsets.iter().enumerate() {
                            let v = store_value(i as u64).to_ne_bytes();
                            for k in 0..size {
                                want[o + k] = v[k % 8];
                            }
                        }
                    }
                    assert!(b.0 == want, "{} at {w:?}, {size}-byte accesses", r.id);
                }
                // Streams over lines (sync): sequential, then at indices.
                let mut b = Box::new(Buf([0xEE; 8192]));
                seq.stream_seq(
                    &mut Region::from_slice(&mut b.0),
                    2,
                    3,
                    0x0101_0101_0101_0101,
                );
                seq.stream_idx(
                    &mut Region::from_slice(&mut b.0),
                    &[100, 10],
                    0x0202_0202_0202_0202,
                );
                let mut want = [0xEEu8; 8192];
                if r.op.writes() {
                    want[128..320].fill(1);
                    want[6400..6464].fill(2);
                    want[640..704].fill(2);
                }
                assert!(b.0 == want, "{} at {w:?}, streamed", r.id);
            }
        }
        assert!(ran >= 12, "the baseline rows run on every x86-64 CPU");
    }

    /// `docs/kernels.md` is generated from the catalog: this fails when they differ (run
    /// the test with PMSCOPE_BLESS=1 to rewrite the doc's generated part).
    #[test]
    fn kernels_doc_matches_the_catalog() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kernels.md");
        let doc = std::fs::read_to_string(path).expect("docs/kernels.md");
        let (begin, end) = ("<!-- generated: catalog -->\n", "<!-- end generated -->");
        let start = doc.find(begin).expect("generated-part marker") + begin.len();
        let stop = doc[start..].find(end).expect("end marker") + start;
        let generated = markdown();
        if std::env::var_os("PMSCOPE_BLESS").is_some() {
            let new = format!("{}{}{}", &doc[..start], generated, &doc[stop..]);
            std::fs::write(path, new).unwrap();
            return;
        }
        assert!(
            doc[start..stop] == generated,
            "docs/kernels.md differs from the catalog: run `PMSCOPE_BLESS=1 cargo test -p pmscope-loops kernels_doc` and review the diff"
        );
    }
}
