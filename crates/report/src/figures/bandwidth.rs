//! Bandwidth (`bandwidth`): vs threads per op, vs access size, the best thread count per
//! access size, mixed reads and writes.

use super::{Ctx, Figure, Panel, page_size_flag, series};
use crate::data;
use crate::noise::{Estimate, estimate};
use crate::plot::{self, Axis, Bar, BarChart, LineChart};
use crate::select::{bandwidth_ops, bandwidth_plain, group, index_of, largest};
use pmscope_core::best;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};

/// The thread count whose records cover the most access sizes (the most threads among
/// equals): a suite's size sweep runs one thread beside a thread sweep at one size.
fn most_sizes(recs: &[&Record]) -> Option<u64> {
    let mut sizes: std::collections::BTreeMap<u64, std::collections::BTreeSet<u64>> =
        Default::default();
    for r in recs {
        if let (Some(t), Some(a)) = (r.count(p::THREADS), r.count(p::ACCESS_BYTES)) {
            sizes.entry(t).or_default().insert(a);
        }
    }
    sizes
        .into_iter()
        .max_by_key(|(t, s)| (s.len(), *t))
        .map(|(t, _)| t)
}

fn reference_marks(ctx: &Ctx, op: &str) -> Vec<(f64, String, plotters::style::RGBColor)> {
    let qs: &[&str] = match op {
        "read" => &["read_bw_per_dimm_gb_s", "read_bw_6dimm_gb_s"],
        "write" | "ntstore" | "store+clwb" => &["write_bw_per_dimm_gb_s", "write_bw_6dimm_gb_s"],
        _ => &[],
    };
    qs.iter()
        .filter_map(|q| ctx.reference(q))
        .map(|(v, l)| (v, l, plot::REFERENCE))
        .collect()
}

/// Bandwidth vs threads, one chart per op (sequential, largest access size).
pub struct BandwidthVsThreads;

impl Figure for BandwidthVsThreads {
    fn id(&self) -> &'static str {
        "bandwidth-threads"
    }
    fn title(&self) -> &'static str {
        "Bandwidth vs threads, per op"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["bandwidth", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs = bandwidth_plain(records);
        let mut svgs = Vec::new();
        for op in bandwidth_ops(&recs) {
            let of_op: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.text(p::OP) == Some(op.as_str()))
                .collect();
            let pattern = if of_op.iter().any(|r| r.text(p::PATTERN) == Some("seq")) {
                "seq"
            } else {
                "rand"
            };
            let of_op: Vec<&Record> = of_op
                .into_iter()
                .filter(|r| r.text(p::PATTERN) == Some(pattern))
                .collect();
            let Some(access) = largest(&of_op, p::ACCESS_BYTES) else {
                continue;
            };
            let curves = group(
                of_op
                    .iter()
                    .filter(|r| r.count(p::ACCESS_BYTES) == Some(access))
                    .filter_map(|r| {
                        Some((
                            data::target(r).to_string(),
                            r.count(p::THREADS)? as f64,
                            estimate(r)?,
                        ))
                    }),
            );
            if curves.is_empty() {
                continue;
            }
            svgs.push(plot::line_chart(&LineChart {
                x_label: format!(
                    "threads ({op}, {pattern}, {} accesses)",
                    data::bytes(access as f64)
                ),
                y_label: "GB/s".into(),
                x: Axis::Count,
                y: Axis::Linear,
                series: curves
                    .into_iter()
                    .map(|(t, points)| series(format!("{t} {op}"), ctx.colour(&t), &points))
                    .collect(),
                vmarks: vec![],
                hmarks: reference_marks(ctx, &op),
                points: vec![],
                flag: page_size_flag(recs.iter().copied()),
            }));
        }
        (!svgs.is_empty()).then(|| Panel {
            svgs,
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}

/// Bandwidth vs access size (log x) with the 256 B mark, one chart per op (at the thread
/// count with the most access sizes).
pub struct BandwidthVsAccessSize;

impl Figure for BandwidthVsAccessSize {
    fn id(&self) -> &'static str {
        "bandwidth-access-size"
    }
    fn title(&self) -> &'static str {
        "Bandwidth vs access size"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["bandwidth", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs = bandwidth_plain(records);
        let mut svgs = Vec::new();
        for op in bandwidth_ops(&recs) {
            let of_op: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.text(p::OP) == Some(op.as_str()))
                .collect();
            let Some(threads) = most_sizes(&of_op) else {
                continue;
            };
            let curves = group(
                of_op
                    .iter()
                    .filter(|r| r.count(p::THREADS) == Some(threads))
                    .filter_map(|r| {
                        let key = (data::target(r).to_string(), r.text(p::PATTERN)?.to_string());
                        Some((key, r.count(p::ACCESS_BYTES)? as f64, estimate(r)?))
                    }),
            );
            if curves.iter().all(|c| c.1.len() < 2) {
                continue;
            }
            let mark = ctx
                .reference("access_granularity_bytes")
                .unwrap_or((256.0, "256 B".into()));
            svgs.push(plot::line_chart(&LineChart {
                x_label: format!("access size ({op}, {threads} threads)"),
                y_label: "GB/s".into(),
                x: Axis::Bytes,
                y: Axis::Linear,
                series: curves
                    .into_iter()
                    .map(|((t, p), points)| {
                        let c = ctx.colour(&t);
                        let colour = if p == "seq" { plot::light(c) } else { c };
                        series(format!("{t} {p}"), colour, &points)
                    })
                    .collect(),
                vmarks: vec![mark],
                hmarks: reference_marks(ctx, &op),
                points: vec![],
                flag: page_size_flag(recs.iter().copied()),
            }));
        }
        (!svgs.is_empty()).then(|| Panel {
            svgs,
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}

/// The best thread count per access size (seed 004 Figure 11, whose curves each use the
/// best-performing thread count): per op, the highest median over the thread counts
/// measured at each access size, labelled with that count (`a~b`: a's interval overlaps
/// the runner-up b's, so either could be best). Drawn when some access size was measured
/// at several thread counts.
pub struct BestThreadsVsAccessSize;

/// Per (target, pattern) of one op's records: (access size, best, its estimate) ascending.
type BestCurves = Vec<((String, String), Vec<(f64, (best::Best, Estimate))>)>;

/// One target, pattern and access size.
type Cell = (String, String, u64);

fn best_curves(of_op: &[&Record]) -> BestCurves {
    let mut cells: Vec<(Cell, Vec<(best::Point, Estimate)>)> = Vec::new();
    for r in of_op {
        let (Some(pattern), Some(access), Some(threads), Some(e)) = (
            r.text(p::PATTERN),
            r.count(p::ACCESS_BYTES),
            r.count(p::THREADS),
            estimate(r),
        ) else {
            continue;
        };
        let key = (data::target(r).to_string(), pattern.to_string(), access);
        let point = best::Point {
            setting: threads,
            median: e.value,
            low: e.low,
            high: e.high,
        };
        match cells.iter_mut().find(|c| c.0 == key) {
            Some(c) => c.1.push((point, e)),
            None => cells.push((key, vec![(point, e)])),
        }
    }
    group(
        cells
            .into_iter()
            .filter(|c| c.1.len() > 1)
            .filter_map(|((t, pat, a), pts)| {
                let points: Vec<best::Point> = pts.iter().map(|x| x.0).collect();
                let b = best::best(&points)?;
                let e = pts.iter().find(|x| x.0.setting == b.best.setting)?.1;
                Some(((t, pat), a as f64, (b, e)))
            }),
    )
}

impl Figure for BestThreadsVsAccessSize {
    fn id(&self) -> &'static str {
        "bandwidth-best-threads"
    }
    fn title(&self) -> &'static str {
        "Best thread count per access size"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["bandwidth", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs = bandwidth_plain(records);
        let mut svgs = Vec::new();
        for op in bandwidth_ops(&recs) {
            let of_op: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.text(p::OP) == Some(op.as_str()))
                .collect();
            let curves = best_curves(&of_op);
            if curves.iter().all(|c| c.1.len() < 2) {
                continue;
            }
            let mut points = Vec::new();
            let series = curves
                .into_iter()
                .map(|((t, pat), pts)| {
                    let c = ctx.colour(&t);
                    let colour = if pat == "seq" { plot::light(c) } else { c };
                    for (x, (b, e)) in &pts {
                        let label = match b.runner_up {
                            Some(u) if !b.clear() => format!("{}~{}", b.best.setting, u.setting),
                            _ => b.best.setting.to_string(),
                        };
                        points.push((*x, e.value, label, colour));
                    }
                    let estimates: Vec<(f64, Estimate)> =
                        pts.iter().map(|(x, (_, e))| (*x, *e)).collect();
                    series(format!("{t} {pat}"), colour, &estimates)
                })
                .collect();
            svgs.push(plot::line_chart(&LineChart {
                x_label: format!(
                    "access size ({op}, best of the thread counts; label: the best count, a~b within noise)"
                ),
                y_label: "GB/s".into(),
                x: Axis::Bytes,
                y: Axis::Linear,
                series,
                vmarks: vec![],
                hmarks: reference_marks(ctx, &op),
                points,
                flag: page_size_flag(recs.iter().copied()),
            }));
        }
        (!svgs.is_empty()).then(|| Panel {
            svgs,
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}

/// Mixed reads and writes (`bandwidth` with `mix`): read and write GB/s per mix.
pub struct MixedReadWrite;

impl Figure for MixedReadWrite {
    fn id(&self) -> &'static str {
        "bandwidth-mixed"
    }
    fn title(&self) -> &'static str {
        "Mixed reads and writes"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["bandwidth", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "bandwidth")
            .filter(|r| !r.text(p::MIX).unwrap_or("").is_empty())
            .collect();
        if recs.is_empty() {
            return None;
        }
        let pattern = if recs.iter().any(|r| r.text(p::PATTERN) == Some("seq")) {
            "seq"
        } else {
            "rand"
        };
        let recs: Vec<&Record> = recs
            .into_iter()
            .filter(|r| r.text(p::PATTERN) == Some(pattern))
            .collect();
        let access = largest(&recs, p::ACCESS_BYTES)?;
        let recs: Vec<&Record> = recs
            .into_iter()
            .filter(|r| r.count(p::ACCESS_BYTES) == Some(access))
            .collect();
        let targets = data::targets(recs.iter().copied());
        let mut categories = Vec::new();
        let mut groups = Vec::new();
        let mut bars = Vec::new();
        for t in &targets {
            for (side, key) in [("read", v::READ_GB_S), ("write", v::WRITE_GB_S)] {
                let c = ctx.colour(t);
                groups.push((
                    format!("{t} {side}"),
                    if side == "write" { plot::light(c) } else { c },
                ));
                let g = groups.len() - 1;
                for r in recs.iter().filter(|r| data::target(r) == t) {
                    let (Some(mix), Some(v)) = (r.text(p::MIX), r.val(key)) else {
                        continue;
                    };
                    bars.push(Bar {
                        category: index_of(&mut categories, mix),
                        group: g,
                        value: v,
                        interval: None,
                    });
                }
            }
        }
        if bars.is_empty() {
            return None;
        }
        let svg = plot::bar_chart(&BarChart {
            y_label: format!("GB/s ({pattern}, {} accesses)", data::bytes(access as f64)),
            categories,
            groups,
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
