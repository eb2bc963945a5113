//! K-mer throughput (`kmer`, seed 003) per table kind, and the tables of `kmer bench` side
//! by side on each target (seed 003 Table 9, Fig. 18).

use super::{Ctx, Figure, Panel, bar, page_size_flag};
use crate::data;
use crate::noise::{Estimate, estimate};
use crate::plot::BarChart;
use crate::select::index_of;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};

/// Million inserts per second per table kind and operation, one bar per target.
pub struct KmerThroughput;

impl Figure for KmerThroughput {
    fn id(&self) -> &'static str {
        "kmer"
    }
    fn title(&self) -> &'static str {
        "K-mer throughput per table (seed 003)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["kmer"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "kmer").collect();
        let targets = data::targets(recs.iter().copied());
        let mut categories = Vec::new();
        let mut bars = Vec::new();
        for r in &recs {
            let v = estimate(r).or_else(|| {
                r.val(v::INSERT_MIPS).map(|m| Estimate {
                    value: m,
                    low: m,
                    high: m,
                    step: 0.0,
                    known: false,
                })
            });
            let (Some(table), Some(v)) = (r.text(p::TABLE), v) else {
                continue;
            };
            let op = r.text(p::OPERATION).unwrap_or("");
            let Some(group) = targets.iter().position(|t| t == data::target(r)) else {
                continue;
            };
            bars.push(bar(
                index_of(&mut categories, &format!("{table} {op}")),
                group,
                v,
                1.0,
            ));
        }
        if bars.is_empty() {
            return None;
        }
        let svg = crate::plot::bar_chart(&BarChart {
            y_label: "million inserts/s".into(),
            categories,
            groups: targets.iter().map(|t| (t.clone(), ctx.colour(t))).collect(),
            bars,
            hmarks: vec![],
            flag: page_size_flag(recs.iter().copied()),
        });
        Some(Panel {
            svgs: vec![svg],
            table: None,
            targets,
        })
    }
}

/// `kmer bench`: each table's insert time on each target, grouped by table (seed 003 Fig.
/// 18: the persistent tables on emulated and on real pmem). One run per table and target,
/// so no interval is drawn.
pub struct KmerBench;

impl Figure for KmerBench {
    fn id(&self) -> &'static str {
        "kmer-bench"
    }
    fn title(&self) -> &'static str {
        "K-mer tables side by side per target: insert time (seed 003 Table 9, Fig. 18)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["kmer-bench"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "kmer-bench").collect();
        let targets = data::targets(recs.iter().copied());
        let mut categories = Vec::new();
        let mut bars = Vec::new();
        for r in &recs {
            // The insert phase without growth: the time MIPS is the rate of.
            let (Some(table), Some(ms)) = (r.text(p::TABLE), r.val(v::INSERT_MS)) else {
                continue;
            };
            let seconds = (ms - r.val(v::GROW_MS).unwrap_or_default()) / 1e3;
            let Some(group) = targets.iter().position(|t| t == data::target(r)) else {
                continue;
            };
            let category = match r.text(p::TABLE_FENCE) {
                Some(f) => format!("{table} ({f} fence)"),
                None => table.to_string(),
            };
            let once = Estimate {
                value: seconds,
                low: seconds,
                high: seconds,
                step: 0.0,
                known: false,
            };
            bars.push(bar(index_of(&mut categories, &category), group, once, 1.0));
        }
        if bars.is_empty() {
            return None;
        }
        let svg = crate::plot::bar_chart(&BarChart {
            y_label: "insert time, s (lower is better)".into(),
            categories,
            groups: targets.iter().map(|t| (t.clone(), ctx.colour(t))).collect(),
            bars,
            hmarks: vec![],
            flag: page_size_flag(recs.iter().copied()),
        });
        Some(Panel {
            svgs: vec![svg],
            table: None,
            targets,
        })
    }
}
