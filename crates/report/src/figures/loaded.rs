//! Loaded latency (`loaded`): probe latency vs the bandwidth the traffic achieved.

use super::{Ctx, Figure, Panel, page_size_flag, series};
use crate::data;
use crate::noise::estimate;
use crate::plot::{self, Axis, LineChart};
use crate::select::loaded_curves;
use pmscope_core::record::Record;

/// Loaded latency vs achieved bandwidth, one curve per target and traffic mix.
pub struct LoadedLatency;

impl Figure for LoadedLatency {
    fn id(&self) -> &'static str {
        "loaded-latency"
    }
    fn title(&self) -> &'static str {
        "Loaded latency vs achieved bandwidth"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["loaded", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let curves = loaded_curves(records);
        if curves.is_empty() {
            return None;
        }
        let recs: Vec<&Record> = data::of(records, "loaded").collect();
        let series = curves
            .into_iter()
            .map(|((t, mix), points)| {
                let points: Vec<_> = points
                    .into_iter()
                    .filter_map(|(x, r)| Some((x, estimate(r)?)))
                    .collect();
                series(format!("{t} traffic R:W {mix}"), ctx.colour(&t), &points)
            })
            .collect();
        let svg = plot::line_chart(&LineChart {
            x_label: "traffic bandwidth achieved (GB/s)".into(),
            y_label: "probe ns per load (median)".into(),
            x: Axis::Linear,
            y: Axis::Linear,
            series,
            vmarks: vec![],
            hmarks: ctx
                .reference("idle_read_latency_rand_ns")
                .map(|(v, l)| vec![(v, l, plot::REFERENCE)])
                .unwrap_or_default(),
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
