//! Loaded latency (`loaded`): probe latency vs the bandwidth the traffic achieved.

use super::{Ctx, Figure, Panel, group, page_size_flag};
use crate::data;
use crate::plot::{self, Axis, LineChart, Series};
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};

/// The loaded-latency curves: (target, traffic mix) → (traffic GB/s, probe ns), by bandwidth.
/// One curve per (target, traffic R:W mix).
pub(crate) type Curves = Vec<((String, String), Vec<(f64, f64)>)>;

pub(crate) fn curves(records: &[Record]) -> Curves {
    let recs: Vec<&Record> = data::of(records, "loaded").collect();
    // The idle point (no traffic threads) belongs to every mix of its target.
    let mixes: Vec<String> = {
        let mut m: Vec<String> = Vec::new();
        for r in &recs {
            if r.count(p::TRAFFIC_THREADS).unwrap_or(0) > 0 {
                let rw = r.text(p::TRAFFIC_RW).unwrap_or("?").to_string();
                if !m.contains(&rw) {
                    m.push(rw);
                }
            }
        }
        m
    };
    group(recs.iter().flat_map(|r| {
        let t = data::target(r).to_string();
        let bw = r.val(v::TRAFFIC_GB_S).unwrap_or(0.0);
        let ns = data::median(r);
        let idle = r.count(p::TRAFFIC_THREADS).unwrap_or(0) == 0;
        let keys: Vec<String> = if idle {
            mixes.clone()
        } else {
            vec![r.text(p::TRAFFIC_RW).unwrap_or("?").to_string()]
        };
        keys.into_iter()
            .filter_map(move |k| Some(((t.clone(), k), if idle { 0.0 } else { bw }, ns?)))
            .collect::<Vec<_>>()
    }))
}

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
        let curves = curves(records);
        if curves.is_empty() {
            return None;
        }
        let recs: Vec<&Record> = data::of(records, "loaded").collect();
        let series = curves
            .into_iter()
            .map(|((t, mix), points)| Series {
                name: format!("{t} traffic R:W {mix}"),
                colour: ctx.colour(&t),
                points,
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
