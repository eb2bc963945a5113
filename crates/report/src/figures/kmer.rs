//! K-mer throughput (`kmer`, seed 003) per table kind.

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
