//! Synchronisation cost (`sync`, seed 002): throughput per option.

use super::{Ctx, Figure, Panel, bar, page_size_flag};
use crate::data;
use crate::markup::esc;
use crate::noise::estimate;
use crate::plot::{self, BarChart};
use crate::select::{index_of, largest};
use pmscope_core::fence::fence_cost;
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
        let table = fence_costs(&recs, &targets, threads);
        Some(Panel {
            svgs: vec![svg],
            table,
            targets,
        })
    }
}

/// Seed 002's headline as a table: for each `+F` option and pattern, what the fence costs
/// on each target (throughput against the option without it, time added per block).
fn fence_costs(recs: &[&Record], targets: &[String], threads: Option<u64>) -> Option<String> {
    let mut html = String::from("<table class=\"t5\"><thead><tr><th>x → x+F</th><th>pattern</th>");
    for t in targets {
        html.push_str(&format!("<th>{}</th>", esc(t)));
    }
    html.push_str("</tr></thead><tbody>");
    let mut rows = 0;
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for r in recs.iter().filter(|r| r.count(p::THREADS) == threads) {
        let (Some(opt), pattern) = (r.text(p::OPTION), r.text(p::PATTERN).unwrap_or("")) else {
            continue;
        };
        if !opt.ends_with("+F") || seen.contains(&(opt, pattern)) {
            continue;
        }
        seen.push((opt, pattern));
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td>",
            esc(opt),
            esc(pattern)
        ));
        for t in targets {
            let own: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|o| data::target(o) == t && o.count(p::THREADS) == threads)
                .collect();
            let cost = own
                .iter()
                .find(|o| o.text(p::OPTION) == Some(opt) && o.text(p::PATTERN) == Some(pattern))
                .and_then(|o| fence_cost(&own, o));
            html.push_str(&match cost {
                Some(c) => format!("<td>{}</td>", esc(&c.to_string())),
                None => "<td>-</td>".into(),
            });
        }
        html.push_str("</tr>");
        rows += 1;
    }
    html.push_str("</tbody></table>");
    (rows > 0).then_some(html)
}
