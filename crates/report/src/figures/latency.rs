//! Idle latency: the working-set sweep and the per-load distribution.

use super::{Ctx, Figure, Panel, histogram_chart, histogram_points, page_size_flag, series};
use crate::analysis::plateau_ends;
use crate::data;
use crate::noise::estimate;
use crate::plot::{self, Axis, LineChart, Series};
use crate::select::group;
use pmscope_core::record::Record;
use pmscope_core::vocab::{Pattern, p};

/// The sequential pattern as records spell it.
const SEQ: &str = Pattern::Seq.name();

/// Latency vs working set (log x), cache sizes and measured plateaus marked.
pub struct LatencyVsWorkingSet;

impl Figure for LatencyVsWorkingSet {
    fn id(&self) -> &'static str {
        "latency-working-set"
    }
    fn title(&self) -> &'static str {
        "Idle load latency vs working set"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["latency", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "latency").collect();
        let curves = group(recs.iter().filter_map(|r| {
            let key = (data::target(r).to_string(), r.text(p::PATTERN)?.to_string());
            Some((key, r.count(p::WORKING_SET_BYTES)? as f64, estimate(r)?))
        }));
        if curves.is_empty() {
            return None;
        }
        let mut points = Vec::new();
        let series = curves
            .iter()
            .map(|((t, p), pts)| {
                let colour = ctx.colour(t);
                let plain: Vec<(u64, f64)> =
                    pts.iter().map(|&(x, e)| (x as u64, e.value)).collect();
                for (ws, ns) in plateau_ends(&plain) {
                    points.push((
                        ws as f64,
                        ns,
                        format!("{} {ns:.0} ns", data::bytes(ws as f64)),
                        colour,
                    ));
                }
                let colour = if p == SEQ {
                    plot::light(colour)
                } else {
                    colour
                };
                series(format!("{t} {p}"), colour, pts)
            })
            .collect();
        let mut hmarks = Vec::new();
        for q in ["idle_read_latency_rand_ns", "idle_read_latency_seq_ns"] {
            if let Some((v, label)) = ctx.reference(q) {
                hmarks.push((v, label, plot::REFERENCE));
            }
        }
        let svg = plot::line_chart(&LineChart {
            x_label: "working set".into(),
            y_label: "ns per load (median)".into(),
            x: Axis::Bytes,
            y: Axis::Linear,
            series,
            vmarks: ctx
                .options
                .caches
                .iter()
                .map(|c| {
                    (
                        c.bytes as f64,
                        format!("{} {}", c.name, data::bytes(c.bytes as f64)),
                    )
                })
                .collect(),
            hmarks,
            points,
            flag: page_size_flag(recs.iter().copied()),
        });
        Some(Panel {
            svgs: vec![svg],
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}

/// Per-load latency histograms (log counts) of `latency-distribution` records.
pub struct LatencyHistogram;

impl Figure for LatencyHistogram {
    fn id(&self) -> &'static str {
        "latency-histogram"
    }
    fn title(&self) -> &'static str {
        "Per-load latency distribution"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["latency-distribution"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "latency-distribution")
            .filter(|r| r.histogram.as_ref().is_some_and(|h| !h.count.is_empty()))
            .collect();
        if recs.is_empty() {
            return None;
        }
        let series = recs
            .iter()
            .map(|r| {
                let h = r.histogram.as_ref().expect("filtered");
                let t = data::target(r);
                Series {
                    name: format!(
                        "{t} {} {}",
                        r.text(p::PATTERN).unwrap_or("?"),
                        data::bytes(r.count(p::WORKING_SET_BYTES).unwrap_or(0) as f64)
                    ),
                    colour: ctx.colour(t),
                    points: histogram_points(h),
                    intervals: vec![],
                }
            })
            .collect();
        let svg = histogram_chart(series, "load", recs.iter().copied());
        Some(Panel {
            svgs: vec![svg],
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}

/// Block-access latency (`latency --mlp`, MEMO's block-access test): ns per load against
/// the chains chased side by side, a curve per target: how far each tier overlaps misses.
pub struct BlockAccessLatency;

impl Figure for BlockAccessLatency {
    fn id(&self) -> &'static str {
        "latency-mlp"
    }
    fn title(&self) -> &'static str {
        "Block-access latency: loads in flight (memory-level parallelism)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["latency-mlp"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "latency-mlp").collect();
        let curves = group(recs.iter().filter_map(|r| {
            let key = (data::target(r).to_string(), r.text(p::PATTERN)?.to_string());
            Some((key, r.count(p::CHAINS)? as f64, estimate(r)?))
        }));
        if curves.is_empty() {
            return None;
        }
        let series = curves
            .iter()
            .map(|((t, p), pts)| series(format!("{t} {p}"), ctx.colour(t), pts))
            .collect();
        let svg = plot::line_chart(&LineChart {
            x_label: "chains chased side by side (loads in flight)".into(),
            y_label: "ns per load (median)".into(),
            x: Axis::Count,
            y: Axis::Linear,
            series,
            vmarks: vec![],
            hmarks: vec![],
            points: vec![],
            flag: page_size_flag(recs.iter().copied()),
        });
        Some(Panel {
            svgs: vec![svg],
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}
