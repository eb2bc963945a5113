//! File systems (`fs`, `fio`; seed 004 Figures 23 and 24): the latency of each file
//! operation per target, and fio's bandwidth against its job count.

use super::{Ctx, Figure, Panel, bar, page_size_flag, series};
use crate::data;
use crate::noise::estimate;
use crate::plot::{self, Axis, BarChart, LineChart};
use crate::select::{group, index_of};
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// A target's legend entry: its spec and the file system its records name.
fn label(r: &Record) -> String {
    match r.text(p::FS_TYPE) {
        Some(fs) => format!("{} ({fs})", data::target(r)),
        None => data::target(r).to_string(),
    }
}

/// Median latency of each file operation, one bar per target; one chart without fsync and
/// one with it (their scales differ by orders of magnitude on a disk).
pub struct FileOpLatency;

impl Figure for FileOpLatency {
    fn id(&self) -> &'static str {
        "fs-op"
    }
    fn title(&self) -> &'static str {
        "File operation latency per file system (seed 004 Figure 23)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["fs-op", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "fs-op")
            .filter(|r| data::median(r).is_some())
            .collect();
        let targets = data::targets(recs.iter().copied());
        let mut svgs = Vec::new();
        for fsync in [false, true] {
            let mut categories = Vec::new();
            let mut bars = Vec::new();
            for r in recs.iter().filter(|r| r.flag(p::FSYNC) == Some(fsync)) {
                let (Some(op), Some(ns)) = (r.text(p::FILE_OP), estimate(r)) else {
                    continue;
                };
                let group = targets.iter().position(|t| t == data::target(r))?;
                bars.push(bar(index_of(&mut categories, op), group, ns, 1e-3));
            }
            if bars.is_empty() {
                continue;
            }
            let groups = targets
                .iter()
                .map(|t| {
                    let r = recs.iter().find(|r| data::target(r) == t).expect("seen");
                    (label(r), ctx.colour(t))
                })
                .collect();
            svgs.push(plot::bar_chart(&BarChart {
                y_label: format!(
                    "µs per operation, median ({})",
                    if fsync {
                        "open, I/O, fsync, close"
                    } else {
                        "open, I/O, close"
                    }
                ),
                categories,
                groups,
                bars,
                hmarks: vec![],
                flag: page_size_flag(recs.iter().copied()),
            }));
        }
        (!svgs.is_empty()).then_some(Panel {
            svgs,
            table: None,
            targets,
        })
    }
}

/// fio's bandwidth against its job count, one chart per workload, one curve per target.
pub struct FioBandwidth;

impl Figure for FioBandwidth {
    fn id(&self) -> &'static str {
        "fio"
    }
    fn title(&self) -> &'static str {
        "fio 4 KiB bandwidth vs jobs (seed 004 Figure 24)"
    }
    fn experiments(&self) -> &'static [&'static str] {
        &["fio", "comparison"]
    }
    fn render(&self, records: &[Record], ctx: &Ctx) -> Option<Panel> {
        let recs: Vec<&Record> = data::of(records, "fio")
            .filter(|r| data::median(r).is_some())
            .collect();
        let mut workloads = Vec::new();
        for r in &recs {
            if let Some(rw) = r.text(p::RW) {
                index_of(&mut workloads, rw);
            }
        }
        let mut svgs = Vec::new();
        for rw in &workloads {
            let of: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.text(p::RW) == Some(rw.as_str()))
                .collect();
            let curves = group(of.iter().filter_map(|r| {
                Some((
                    data::target(r).to_string(),
                    r.count(p::JOBS)? as f64,
                    estimate(r)?,
                ))
            }));
            let sync = if rw.contains("write") {
                ", fsync after each write"
            } else {
                ""
            };
            svgs.push(plot::line_chart(&LineChart {
                x_label: format!("fio jobs ({rw}, 4 KiB sync calls{sync})"),
                y_label: "MB/s".into(),
                x: Axis::Count,
                y: Axis::Linear,
                series: curves
                    .into_iter()
                    .map(|(t, points)| {
                        let r = of.iter().find(|r| data::target(r) == t).expect("seen");
                        series(format!("{} {rw}", label(r)), ctx.colour(&t), &points)
                    })
                    .collect(),
                vmarks: vec![],
                hmarks: vec![],
                points: vec![],
                flag: page_size_flag(of.iter().copied()),
            }));
        }
        (!svgs.is_empty()).then(|| Panel {
            svgs,
            table: None,
            targets: data::targets(recs.iter().copied()),
        })
    }
}
