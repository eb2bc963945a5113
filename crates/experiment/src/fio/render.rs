//! The `fio` tables, drawn from records alone.

use crate::render::fields::by_target;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::vocab::{p, v};

/// Per target and workload: bandwidth, IOPS and latency by job count; with several
/// targets, their bandwidth side by side.
pub fn render(records: &[Record]) -> String {
    let targets = by_target(records, "fio");
    let mut out = String::new();
    for (spec, of) in &targets {
        out += &target(spec, of);
    }
    if targets.len() > 1 {
        out += &side_by_side(&targets);
        out += "\n";
    }
    out
}

/// One target: its file system and fio, then a row per run.
fn target(spec: &str, of: &[&Record]) -> String {
    let first = of[0];
    let mut out = format!(
        "{spec}: {} on {} ({}); {}, 4 KiB {} calls, fsync after every write, {} s per run\n",
        first.text(p::FS_TYPE).unwrap_or_default(),
        first.text(p::DEVICE).unwrap_or_default(),
        first.text(p::MOUNT_OPTIONS).unwrap_or_default(),
        first.text(p::FIO_VERSION).unwrap_or_default(),
        first.text(p::IOENGINE).unwrap_or_default(),
        first.number(p::DURATION_S).unwrap_or_default(),
    );
    let mut t = Table::new(&[
        "workload", "jobs", "MB/s", "IOPS", "mean us", "p50 us", "p99 us", "p99.9 us",
    ]);
    for r in of {
        let us = |key| format!("{:.2}", r.val(key).unwrap_or_default() / 1e3);
        t.row(vec![
            r.text(p::RW).unwrap_or_default().into(),
            r.count(p::JOBS).unwrap_or_default().to_string(),
            r.summary
                .as_ref()
                .map_or("-".into(), |s| format!("{:.1}", s.p50)),
            format!("{:.0}", r.val(v::IOPS).unwrap_or_default()),
            us(v::LAT_MEAN_NS),
            us(v::LAT_P50_NS),
            us(v::LAT_P99_NS),
            us(v::LAT_P999_NS),
        ]);
    }
    out += &format!("{}\n\n", t.render());
    out
}

/// MB/s of each workload and job count on every target, and against the first target.
fn side_by_side(targets: &[(&str, Vec<&Record>)]) -> String {
    let mut header = vec!["MB/s (× the first)", "jobs"];
    header.extend(targets.iter().map(|(s, _)| *s));
    let mut t = Table::new(&header);
    let point = |r: &Record| {
        (
            r.text(p::RW).unwrap_or_default().to_string(),
            r.count(p::JOBS).unwrap_or_default(),
        )
    };
    let mut points: Vec<(String, u64)> = Vec::new();
    for r in targets.iter().flat_map(|(_, of)| of) {
        if !points.contains(&point(r)) {
            points.push(point(r));
        }
    }
    for pt in points {
        let mb_s = |of: &[&Record]| {
            of.iter()
                .find(|r| point(r) == pt)
                .and_then(|r| r.summary.as_ref())
                .map(|s| s.p50)
        };
        let first = mb_s(&targets[0].1);
        let mut row = vec![pt.0.clone(), pt.1.to_string()];
        for (i, (_, of)) in targets.iter().enumerate() {
            row.push(match (mb_s(of), first) {
                (Some(v), Some(f)) if i > 0 && f > 0.0 => format!("{v:.1} ×{:.2}", v / f),
                (Some(v), _) => format!("{v:.1}"),
                (None, _) => "-".into(),
            });
        }
        t.row(row);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fields::on_target;

    fn run(spec: &str, rw: &str, jobs: u64, mb_s: f64) -> Record {
        let mut r = Record::new("fio", Vec::new(), Default::default())
            .param(p::RW, rw)
            .param(p::JOBS, jobs)
            .param(p::FS_TYPE, "ext4")
            .value(v::IOPS, mb_s * 1e6 / 4096.0);
        r.summary = pmscope_core::summary::Summary::of(&[mb_s]);
        on_target(r, spec)
    }

    #[test]
    fn each_target_then_the_bandwidth_against_the_first() {
        let rs = [
            run("file:/a", "read", 1, 100.0),
            run("file:/b", "read", 1, 50.0),
        ];
        let s = render(&rs);
        assert!(s.starts_with("file:/a: ext4 on "), "{s}");
        let last = s.trim_end().lines().last().unwrap();
        assert!(
            last.contains("100.0") && last.ends_with("50.0 ×0.50"),
            "{s}"
        );
    }
}
