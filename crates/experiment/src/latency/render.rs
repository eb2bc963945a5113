//! The `latency` tables, drawn from records alone (and this machine's caches, which the
//! plateaus are set beside).

use crate::render::precision::half_width;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::summary::Summary;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::p;
use pmscope_sys::cpu;
use pmscope_sys::sysroot::SysRoot;
use std::fmt::Write;

/// One measured point.
struct Point {
    /// Working set in bytes.
    ws: u64,
    /// ns per load.
    summary: Summary,
    /// The half-width of the median's 95 % interval (`±1.2%`).
    half_width: String,
}

/// One target's curve, its distribution record and its block-access records.
type Curve<'r> = (&'r str, Vec<Point>, Option<&'r Record>, Vec<&'r Record>);

/// Where the latency curve steps up: the last point before each rise of more than 25 %
/// between neighbouring points (`core::knee::steps`; a cache level ends over a range of
/// sizes, so consecutive rises are one transition).
fn plateau_ends(points: &[Point]) -> Vec<(u64, f64)> {
    let curve: Vec<(u64, f64)> = points.iter().map(|p| (p.ws, p.summary.p50)).collect();
    pmscope_core::knee::steps(&curve, 0.25)
}

/// The curves of the records, a target each in the order measured.
fn curves(records: &[Record]) -> Vec<Curve<'_>> {
    let mut curves: Vec<Curve> = Vec::new();
    let ours = |r: &&Record| {
        matches!(
            r.experiment.as_str(),
            "latency" | "latency-distribution" | "latency-mlp"
        )
    };
    for r in records.iter().filter(ours) {
        let Some(spec) = r.spec() else {
            continue;
        };
        if !curves.iter().any(|c| c.0 == spec) {
            curves.push((spec, Vec::new(), None, Vec::new()));
        }
        let c = curves.iter_mut().find(|c| c.0 == spec).expect("pushed");
        match (r.experiment.as_str(), &r.summary) {
            ("latency", Some(s)) => c.1.push(Point {
                ws: r.count(p::WORKING_SET_BYTES).unwrap_or(0),
                summary: s.clone(),
                half_width: half_width(r),
            }),
            ("latency-distribution", _) => c.2 = Some(r),
            ("latency-mlp", Some(_)) => c.3.push(r),
            _ => {}
        }
    }
    curves
}

/// The human tables, drawn from the records alone: a curve per target with its plateaus,
/// the distribution at the largest point, and the targets side by side there. The
/// plateaus are set beside the caches `pmscope info` reports on this machine.
pub fn render(records: &[Record]) -> String {
    let mut out = String::new();
    let curves = curves(records);
    let Some(first) = records.iter().find(|r| r.experiment == "latency") else {
        return out;
    };
    let pattern = first.text(p::PATTERN).unwrap_or("?");
    let caches = cpu::caches(&SysRoot::host(), 0);
    let levels: Vec<&cpu::Cache> = caches.iter().filter(|c| c.kind != "Instruction").collect();
    for (target, points, dist, mlp) in &curves {
        let _ = writeln!(
            out,
            "{target}: {pattern} chain, {}-byte elements{}",
            first
                .count(p::ELEMENT_BYTES)
                .map_or("?".into(), |e| e.to_string()),
            first
                .count(p::TLB_WINDOW_PAGES)
                .map(|w| format!(", TLB window {w} pages"))
                .unwrap_or_default()
        );
        out += &curve_table(points, &levels);
        if let Some(d) = dist
            && let (Some(s), Some(h)) = (&d.summary, &d.histogram)
        {
            let _ = writeln!(
                out,
                "per-load distribution at {} ({} loads): p50 {:.1} ns, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}",
                Bytes(d.count(p::WORKING_SET_BYTES).unwrap_or(0)),
                s.n,
                s.p50,
                s.p90,
                s.p99,
                s.p999,
                s.max
            );
            out += &crate::render::histogram::text(h);
        }
        out += &mlp_table(points, mlp);
        out.push('\n');
    }
    out += &side_by_side(&curves, pattern);
    out
}

/// One curve's table and the plateaus found in it.
fn curve_table(points: &[Point], levels: &[&cpu::Cache]) -> String {
    let mut t = Table::new(&[
        "working set",
        "ns/load",
        "95% ci",
        "min",
        "max",
        "cv %",
        "reps",
    ]);
    for p in points {
        t.row(vec![
            Bytes(p.ws).to_string(),
            format!("{:.2}", p.summary.p50),
            p.half_width.clone(),
            format!("{:.2}", p.summary.min),
            format!("{:.2}", p.summary.max),
            format!("{:.1}", 100.0 * p.summary.cv()),
            p.summary.n.to_string(),
        ]);
    }
    let mut out = format!("{}\n", t.render());
    out += "plateaus (where the curve steps up by more than 25% between neighbours):\n";
    for (i, (ws, ns)) in plateau_ends(points).iter().enumerate() {
        let reported = levels
            .get(i)
            .map(|c| format!("L{} is {} per `pmscope info`", c.level, Bytes(c.size_bytes)))
            .unwrap_or_else(|| "beyond the reported caches (TLB reach or memory)".into());
        let _ = writeln!(
            out,
            "  step {}: plateau ends at {} ({ns:.1} ns); {reported}",
            i + 1,
            Bytes(*ws)
        );
    }
    out
}

/// The block-access points: ns per load with n chains side by side, and the overlap, the
/// single chain's ns per load (its own point, else the curve's at that working set) over
/// this one's.
fn mlp_table(points: &[Point], mlp: &[&Record]) -> String {
    let Some(first) = mlp.first() else {
        return String::new();
    };
    let ws = first.count(p::WORKING_SET_BYTES).unwrap_or(0);
    let ns = |r: &Record| r.summary.as_ref().map_or(f64::NAN, |s| s.p50);
    let single = mlp
        .iter()
        .find(|r| r.count(p::CHAINS) == Some(1))
        .map(|r| ns(r))
        .or_else(|| points.iter().find(|p| p.ws == ws).map(|p| p.summary.p50));
    let mut t = Table::new(&["chains", "ns/load", "95% ci", "overlap x"]);
    for r in mlp {
        t.row(vec![
            r.count(p::CHAINS).map_or("?".into(), |n| n.to_string()),
            format!("{:.2}", ns(r)),
            half_width(r),
            single.map_or("-".into(), |one| format!("{:.2}", one / ns(r))),
        ]);
    }
    format!(
        "block access at {} (chains chased side by side; overlap = one chain's ns/load over this):\n{}\n",
        Bytes(ws),
        t.render()
    )
}

/// With two targets or more: each at the largest working set, against the first.
fn side_by_side(curves: &[Curve<'_>], pattern: &str) -> String {
    let mut out = String::new();
    if curves.len() > 1
        && let Some(fp) = curves[0].1.last()
    {
        let _ = writeln!(out, "at {} ({pattern}):", Bytes(fp.ws));
        for (target, points, _, _) in curves {
            if let Some(p) = points.last() {
                let _ = writeln!(
                    out,
                    "  {target:<24} {:>8.2} ns/load   {:+.2} ns ({:+.1}%) vs {}",
                    p.summary.p50,
                    p.summary.p50 - fp.summary.p50,
                    100.0 * (p.summary.p50 / fp.summary.p50 - 1.0),
                    curves[0].0
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[(u64, f64)]) -> Vec<Point> {
        v.iter()
            .map(|&(ws, ns)| Point {
                ws,
                summary: Summary::of(&[ns]).unwrap(),
                half_width: "-".into(),
            })
            .collect()
    }

    #[test]
    fn plateaus_from_a_measured_curve() {
        // This VM's dram:thp curve (ns): L1 to 32 KiB, L2 to 512 KiB, L3 to 4 MiB.
        let p = pts(&[
            (16 << 10, 1.2),
            (32 << 10, 1.2),
            (48 << 10, 3.8),
            (256 << 10, 3.8),
            (384 << 10, 4.4),
            (512 << 10, 4.8),
            (768 << 10, 6.5),
            (1 << 20, 8.3),
            (3 << 19, 12.1),
            (2 << 20, 13.6),
            (4 << 20, 15.2),
            (6 << 20, 21.1),
            (8 << 20, 105.0),
            (12 << 20, 122.0),
            (1 << 30, 140.0),
        ]);
        let ends: Vec<u64> = plateau_ends(&p).iter().map(|e| e.0).collect();
        assert_eq!(ends, [32 << 10, 512 << 10, 4 << 20]);
    }
}
