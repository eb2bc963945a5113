//! Synchronisation cost (`sync`, seed 002): throughput per option.

use super::{Ctx, Figure, Panel, bar, page_size_flag};
use crate::data;
use crate::noise::estimate;
use crate::plot::{self, BarChart};
use crate::select::{index_of, largest};
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// Throughput of 64-byte block streams per synchronisation option, one bar per target.
pub struct SyncCost;

impl Figure for SyncCost {
    fn id(&self) -> &'static str {
        "sync"
    }
    fn title(&self) -> &'static str {
        "Synchronisation cost (seed 002)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["sync", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "sync")
            .filter(|r| data::median(r).is_some())
            .collect();
        let targets = data::targets(recs.iter().copied());
        let threads = largest(&recs, p::THREADS);
        let mut categories = Vec::new();
        let mut bars = Vec::new();
        for r in &recs {
            let (Some(opt), Some(v)) = (r.text(p::OPTION), estimate(r)) else {
                continue;
            };
            if r.count(p::THREADS) != threads {
                continue;
            }
            let pattern = r.text(p::PATTERN).unwrap_or("");
            let group = targets.iter().position(|t| t == data::target(r))?;
            bars.push(bar(
                index_of(&mut categories, &format!("{opt} {pattern}")),
                group,
                v,
                1.0,
            ));
        }
        if bars.is_empty() {
            return None;
        }
        let svg = plot::bar_chart(&BarChart {
            y_label: format!("GB/s ({} threads)", threads.unwrap_or(1)),
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
