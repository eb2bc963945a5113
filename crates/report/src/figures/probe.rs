//! The buffer probes (`probe`, seed 001): ns per visit against the working set, a chart
//! per probe and pattern, a curve per target and variant (lines per XPLine, mode,
//! prefetch, write), the knee of each curve marked.

use super::{Ctx, Figure, Panel, page_size_flag, series};
use crate::data;
use crate::noise::estimate;
use crate::plot::{self, Axis, LineChart, MAX_CURVES};
use crate::select::group;
use pmscope_core::record::Record;
use pmscope_core::vocab::{ParamKey, p, v};

/// The parameters that tell one probe curve from another beside its target and pattern.
const VARIANT: [ParamKey; 5] = [
    p::LINES,
    p::MODE,
    p::SOFTWARE_PREFETCH,
    p::WRITE,
    p::DECOUPLED,
];

/// A variant's name from its parameters (`lines 2`, `mode interleaved`, ...).
fn variant(r: &Record) -> String {
    VARIANT
        .iter()
        .filter_map(|k| match r.get(*k)? {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(format!("{} {s}", k.name())),
            v => Some(format!("{} {v}", k.name())),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Seed 001's buffer curves: one chart per probe and pattern (more curves than a reader
/// tells apart go on to further charts of the same probe).
pub struct BufferProbes;

impl Figure for BufferProbes {
    fn id(&self) -> &'static str {
        "probe"
    }
    fn title(&self) -> &'static str {
        "Buffer probes: ns per visit vs working set (seed 001)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["probe", "probe-knee"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "probe").collect();
        // One chart per probe and pattern, in first-seen order.
        let mut charts: Vec<((&str, &str), Vec<&Record>)> = Vec::new();
        for r in &recs {
            let Some(probe) = r.text(p::PROBE) else {
                continue;
            };
            let key = (probe, r.text(p::PATTERN).unwrap_or("-"));
            match charts.iter_mut().find(|c| c.0 == key) {
                Some(c) => c.1.push(r),
                None => charts.push((key, vec![r])),
            }
        }
        let mut svgs = Vec::new();
        for ((probe, pattern), members) in &charts {
            let curves = group(members.iter().filter_map(|r| {
                let key = (data::target(r).to_string(), variant(r));
                Some((key, r.count(p::WORKING_SET_BYTES)? as f64, estimate(r)?))
            }));
            let knees: Vec<&Record> = data::of(records, "probe-knee")
                .filter(|k| k.text(p::PROBE) == Some(*probe))
                .collect();
            for part in curves.chunks(MAX_CURVES) {
                let mut points = Vec::new();
                let one_target = part.iter().all(|c| c.0.0 == part[0].0.0);
                let series = part
                    .iter()
                    .enumerate()
                    .map(|(i, ((t, v), pts))| {
                        // One target: a colour per variant. Several: each target's own
                        // colour, its later variants in the lighter shade.
                        let colour = if one_target {
                            plot::colour(i)
                        } else if part[..i].iter().any(|c| c.0.0 == *t) {
                            plot::light(ctx.colour(t))
                        } else {
                            ctx.colour(t)
                        };
                        if let Some(k) = knees.iter().find(|k| {
                            data::target(k) == t
                                && variant(k) == *v
                                && k.text(p::PATTERN).unwrap_or("-") == *pattern
                                && k.flag(p::KNEE_FOUND) == Some(true)
                        }) && let (Some(x), Some(y)) = (k.val(v::KNEE_BYTES), k.val(v::AFTER_NS))
                        {
                            points.push((x, y, format!("knee {}", data::bytes(x)), colour));
                        }
                        series(format!("{t} {v}"), colour, pts)
                    })
                    .collect();
                svgs.push(plot::line_chart(&LineChart {
                    x_label: format!("working set ({probe}, {pattern})"),
                    y_label: "ns per visit (median)".into(),
                    x: Axis::Bytes,
                    y: Axis::Linear,
                    series,
                    vmarks: vec![],
                    hmarks: vec![],
                    points,
                    flag: page_size_flag(recs.iter().copied()),
                }));
            }
        }
        if svgs.is_empty() {
            return None;
        }
        Some(Panel {
            svgs,
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}
