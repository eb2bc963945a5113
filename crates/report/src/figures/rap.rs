//! Read-after-persist (`rap`, `rap-idle`, seed 001): load latency vs distance.

use super::{Ctx, Figure, Panel, page_size_flag, series};
use crate::data;
use crate::noise::estimate;
use crate::plot::{self, Axis, LineChart};
use crate::select::group;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// Latency of loading a line persisted d lines earlier (log x; distance 0 drawn at ½),
/// with each target's idle baseline as a dashed line.
pub struct ReadAfterPersist;

impl Figure for ReadAfterPersist {
    fn id(&self) -> &'static str {
        "read-after-persist"
    }
    fn title(&self) -> &'static str {
        "Read-after-persist latency vs distance (seed 001)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["rap", "rap-idle"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = records
            .iter()
            .filter(|r| r.experiment == "rap" || r.experiment == "rap-idle")
            .collect();
        let curves = group(data::of(records, "rap").filter_map(|r| {
            let key = (data::target(r).to_string(), r.text(p::PERSIST)?.to_string());
            Some((
                key,
                (r.count(p::DISTANCE_LINES)? as f64).max(0.5),
                estimate(r)?,
            ))
        }));
        if curves.is_empty() {
            return None;
        }
        let hmarks = data::of(records, "rap-idle")
            .filter_map(|r| {
                let t = data::target(r);
                Some((
                    data::median(r)?,
                    format!("{t} idle ({})", r.text(p::PERSIST).unwrap_or("?")),
                    ctx.colour(t),
                ))
            })
            .collect();
        let svg = plot::line_chart(&LineChart {
            x_label: "distance (lines; 0 drawn at 0.5)".into(),
            y_label: "ns per load (median)".into(),
            x: Axis::Log10,
            y: Axis::Linear,
            series: curves
                .into_iter()
                .map(|((t, p), points)| series(format!("{t} {p}"), ctx.colour(&t), &points))
                .collect(),
            vmarks: vec![],
            hmarks,
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
