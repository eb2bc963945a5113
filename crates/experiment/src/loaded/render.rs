//! The `loaded` table, drawn from records alone.

use crate::render::fields::by_target;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::{Pattern, p, v};

/// A curve per target, from the `loaded` records alone.
pub fn render(records: &[Record]) -> String {
    let mut out = String::new();
    for (spec, points) in by_target(records, "loaded") {
        out += &title(spec, &points);
        let mut t = Table::new(&[
            "delay",
            "traffic GB/s",
            "mean ns",
            "p50 ns",
            "p99 ns",
            "p99.9 ns",
        ]);
        for r in &points {
            let s = tail(r);
            t.row(vec![
                r.count(p::DELAY_NS)
                    .map(|d| format!("{d} ns"))
                    .unwrap_or_else(|| "idle".into()),
                format!("{:.2}", r.val(v::TRAFFIC_GB_S).unwrap_or_default()),
                format!("{:.1}", r.val(v::MEAN_LATENCY_NS).unwrap_or_default()),
                format!("{:.1}", s.0),
                format!("{:.1}", s.1),
                format!("{:.1}", s.2),
            ]);
        }
        out += &format!("{}\n", t.render());
        if let (Some(idle), Some(heavy)) = (points.first(), points.last()) {
            let (mi, mh) = (
                idle.val(v::MEAN_LATENCY_NS).unwrap_or_default(),
                heavy.val(v::MEAN_LATENCY_NS).unwrap_or_default(),
            );
            out += &format!(
                "heaviest load: {mh:.1} ns mean vs {mi:.1} ns idle ({:+.1}%), p99 {:.1} vs {:.1} ns\n\n",
                100.0 * (mh / mi - 1.0),
                tail(heavy).1,
                tail(idle).1
            );
        }
    }
    out
}

/// p50, p99 and p99.9 of a point's samples.
fn tail(r: &Record) -> (f64, f64, f64) {
    r.summary
        .as_ref()
        .map_or((0.0, 0.0, 0.0), |s| (s.p50, s.p99, s.p999))
}

/// The line above a target's table: the probe, and the traffic it ran under.
fn title(spec: &str, points: &[&Record]) -> String {
    let first = points[0];
    let probe = first.text(p::PROBE).unwrap_or_default();
    let rw = first.text(p::TRAFFIC_RW).unwrap_or_default();
    let (reads, writes) = rw.split_once(':').unwrap_or(("0", "0"));
    let (reads, writes) = (reads != "0", writes != "0");
    let written = match first.text(p::TRAFFIC_OP).unwrap_or_default() {
        "" | "write" | "read" => "writes".to_string(),
        op => format!("{op} writes"),
    };
    let kind = if reads && writes {
        format!("reads and {written}")
    } else if writes {
        written
    } else if first.text(p::TRAFFIC_OP) == Some("read-ahead") {
        "read-ahead reads".into()
    } else {
        "reads".into()
    };
    let order = if first.text(p::TRAFFIC_PATTERN).unwrap_or_default() == Pattern::Rand.name() {
        " in random order"
    } else {
        ""
    };
    format!(
        "{spec}: probe {probe} on CPU {} ({}), traffic {kind}{order} on {} thread(s), {} accesses, read:write {rw}\n",
        first.threads.first().map_or(0, |t| t.cpu_requested),
        if probe == "chase" {
            format!(
                "random chain over {}",
                Bytes(first.count(p::PROBE_REGION_BYTES).unwrap_or_default())
            )
        } else {
            "random lines".into()
        },
        points
            .iter()
            .map(|r| r.count(p::TRAFFIC_THREADS).unwrap_or_default())
            .max()
            .unwrap_or(0),
        Bytes(first.count(p::TRAFFIC_ACCESS_BYTES).unwrap_or_default()),
    )
}
