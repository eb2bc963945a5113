//! Instruction latency (`inst`): seed 004 Figure 8's bars and seed 003 Table 5.

use super::{Ctx, Figure, Panel, bar, histogram_chart, histogram_points, page_size_flag};
use crate::data;
use crate::markup::esc;
use crate::noise::estimate;
use crate::plot::{self, BarChart, Series};
use crate::select::{index_of, inst_pick, inst_records};
use pmscope_core::record::Record;
use pmscope_core::vocab::{Pattern, p};

/// The patterns as records spell them.
const SEQ: &str = Pattern::Seq.name();
const RAND: &str = Pattern::Rand.name();

/// Seed 004 Figure 8's names of the instruction sequences.
const SEQUENCES: &[(&str, &str)] = &[
    ("load", "L"),
    ("ntload", "LN"),
    ("store+clflush", "SF"),
    ("ntstore", "SN"),
    ("store+clflushopt", "SO"),
    ("store+clwb", "SW"),
    ("store", "S"),
];

fn sizes(recs: &[&Record]) -> Vec<u64> {
    let mut s: Vec<u64> = recs
        .iter()
        .filter_map(|r| r.count(p::ACCESS_BYTES))
        .collect();
    s.sort();
    s.dedup();
    s
}

/// Median latency per instruction sequence and access size (seed 004 Figure 8's layout:
/// `Size_Type` along x, one bar per target and pattern, an `mfence` after each access).
pub struct InstructionLatency;

impl Figure for InstructionLatency {
    fn id(&self) -> &'static str {
        "instruction-latency"
    }
    fn title(&self) -> &'static str {
        "Memory instruction latency (seed 004 Figure 8 layout)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["inst", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs = inst_records(records);
        if recs.is_empty() {
            return None;
        }
        let targets = data::targets(recs.iter().copied());
        let shown: Vec<u64> = sizes(&recs)
            .into_iter()
            .filter(|s| (64..=256).contains(s))
            .collect();
        let mut categories = Vec::new();
        let mut groups = Vec::new();
        let mut bars = Vec::new();
        let fences = ["mfence", "sfence", "none"];
        for size in &shown {
            for (op, code) in SEQUENCES {
                for t in &targets {
                    for pattern in [SEQ, RAND] {
                        let Some(r) = inst_pick(&recs, t, op, pattern, *size, &fences) else {
                            continue;
                        };
                        let colour = ctx.colour(t);
                        let name = format!("{t} {pattern}");
                        if !groups.iter().any(|g: &(String, _)| g.0 == name) {
                            let c = if pattern == SEQ {
                                plot::light(colour)
                            } else {
                                colour
                            };
                            groups.push((name.clone(), c));
                        }
                        bars.push(bar(
                            index_of(&mut categories, &format!("{size}_{code}")),
                            groups.iter().position(|g| g.0 == name).expect("pushed"),
                            estimate(r)?,
                            1.0,
                        ));
                    }
                }
            }
        }
        if bars.is_empty() {
            return None;
        }
        let hmarks = ctx
            .reference("store_flush_latency_ns")
            .map(|(v, l)| vec![(v, l, plot::REFERENCE)])
            .unwrap_or_default();
        let svg = plot::bar_chart(&BarChart {
            y_label: "median ns".into(),
            categories,
            groups,
            bars,
            hmarks,
            flag: page_size_flag(recs.iter().copied()),
        });
        Some(Panel {
            svgs: vec![svg],
            table: None,
            targets,
        })
    }
}

/// The rows of seed 003 Table 5: (label, pattern, op, preferred fences).
const TABLE5_ROWS: &[(&str, &str, &[&str], &[&str])] = &[
    ("rand read", RAND, &["load"], &["none", "mfence", "sfence"]),
    (
        "rand write",
        RAND,
        &["store"],
        &["none", "sfence", "mfence"],
    ),
    (
        "rand write+flush",
        RAND,
        &["store+clwb", "store+clflushopt", "store+clflush"],
        &["sfence", "mfence", "none"],
    ),
    ("seq read", SEQ, &["load"], &["none", "mfence", "sfence"]),
    ("seq write", SEQ, &["store"], &["none", "sfence", "mfence"]),
    (
        "seq write+flush",
        SEQ,
        &["store+clwb", "store+clflushopt", "store+clflush"],
        &["sfence", "mfence", "none"],
    ),
];

/// Seed 003 Table 5: single-thread access latency by size, rand/seq × read/write/
/// write+flush, the mean of every target and its slowdown against the first.
pub struct Table5;

impl Figure for Table5 {
    fn id(&self) -> &'static str {
        "table5"
    }
    fn title(&self) -> &'static str {
        "Single-thread access latency by size (seed 003 Table 5 layout)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["inst", "comparison"]
    }
    fn render(&self, records: &[Record], _ctx: &Ctx) -> Option<Panel> {
        let recs = inst_records(records);
        let targets = data::targets(recs.iter().copied());
        if recs.is_empty() || targets.is_empty() {
            return None;
        }
        let sizes = sizes(&recs);
        let mut html = String::from(
            "<table class=\"t5\"><thead><tr><th>Operation</th><th>IO size (bytes)</th>",
        );
        for (i, t) in targets.iter().enumerate() {
            html.push_str(&format!("<th>{} mean (ns)</th>", esc(t)));
            if i > 0 {
                html.push_str(&format!("<th>slowdown vs {}</th>", esc(&targets[0])));
            }
        }
        html.push_str("</tr></thead><tbody>");
        let (mut rows, mut missed) = (0, false);
        for (label, pattern, ops, fences) in TABLE5_ROWS {
            for size in &sizes {
                let picked: Vec<Option<&Record>> = targets
                    .iter()
                    .map(|t| {
                        ops.iter()
                            .find_map(|op| inst_pick(&recs, t, op, pattern, *size, fences))
                    })
                    .collect();
                let means: Vec<Option<f64>> = picked
                    .iter()
                    .map(|r| r.and_then(|r| r.summary.as_ref().map(|s| s.mean)))
                    .collect();
                if means.iter().all(Option::is_none) {
                    continue;
                }
                rows += 1;
                html.push_str(&format!("<tr><td>{label}</td><td>{size}</td>"));
                for (i, m) in means.iter().enumerate() {
                    // A point that missed its precision target is marked, not hidden.
                    let short = picked[i]
                        .and_then(|r| r.precision.as_ref())
                        .is_some_and(|p| !p.met);
                    missed |= short;
                    html.push_str(&match m {
                        Some(v) if short => {
                            format!("<td title=\"missed its precision target\">{v:.2}†</td>")
                        }
                        Some(v) => format!("<td>{v:.2}</td>"),
                        None => "<td>-</td>".into(),
                    });
                    if i > 0 {
                        html.push_str(&match (means[0], m) {
                            (Some(base), Some(v)) if base > 0.0 => {
                                format!("<td>{:.2}</td>", v / base)
                            }
                            _ => "<td>-</td>".into(),
                        });
                    }
                }
                html.push_str("</tr>");
            }
        }
        html.push_str("</tbody></table>");
        if rows == 0 {
            return None;
        }
        if missed {
            html.push_str(
                "<p class=\"meta\">† the point missed its precision target: its figure is \
                 less certain than asked (the run's trust box counts them).</p>",
            );
        }
        if let Some(flag) = page_size_flag(recs.iter().copied()) {
            html = format!("<p class=\"flag\">{}</p>{html}", esc(&flag));
        }
        Some(Panel {
            svgs: vec![],
            table: Some(html),
            targets,
        })
    }
}

/// Per-access latency histograms of `inst` cells (seed 003 Figures 6-7): small multiples,
/// one chart per instruction sequence, one curve per target and pattern in it, at the
/// smallest access size, fence-free where measured. (All on one axis, two targets drew 12
/// curves in two shades of each colour: unreadable.)
pub struct InstHistogram;

impl Figure for InstHistogram {
    fn id(&self) -> &'static str {
        "inst-histogram"
    }
    fn title(&self) -> &'static str {
        "Per-access latency distribution of memory instructions (seed 003 Figures 6-7)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["inst"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = inst_records(records)
            .into_iter()
            .filter(|r| r.histogram.as_ref().is_some_and(|h| !h.count.is_empty()))
            .collect();
        let size = *sizes(&recs).first()?;
        let targets = data::targets(recs.iter().copied());
        let fences = ["none", "sfence", "mfence"];
        let mut svgs = Vec::new();
        let mut shown = Vec::new();
        for (op, _) in SEQUENCES {
            let mut series = Vec::new();
            let mut drawn = Vec::new();
            for t in &targets {
                for pattern in [SEQ, RAND] {
                    let Some(r) = inst_pick(&recs, t, op, pattern, size, &fences) else {
                        continue;
                    };
                    let h = r.histogram.as_ref().expect("filtered");
                    let colour = ctx.colour(t);
                    series.push(Series {
                        name: format!("{op} {size} B: {t} {pattern}"),
                        colour: if pattern == SEQ {
                            plot::light(colour)
                        } else {
                            colour
                        },
                        points: histogram_points(h),
                        intervals: vec![],
                    });
                    drawn.push(r);
                }
            }
            if series.is_empty() {
                continue;
            }
            svgs.push(histogram_chart(series, "access", drawn.iter().copied()));
            shown.extend(drawn);
        }
        if svgs.is_empty() {
            return None;
        }
        Some(Panel {
            svgs,
            table: None,
            targets: data::targets(shown.iter().copied()),
        })
    }
}
