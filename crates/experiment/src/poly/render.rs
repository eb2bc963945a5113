//! The `poly` output, drawn from the `poly` records alone: with one target a row per
//! kernel and variant; with several, Table 1's layout ([`super::table1`]). Then the
//! verified pages, the counters and the checksum verdict.

use super::COUNTERS_AVAILABLE;
use super::cells::{find, page_size, seconds, time};
use crate::render::fields::by_target;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::units::page_size_name;
use pmscope_core::vocab::{ValueKey, p, v};

/// Whether perf_event counted the record's misses.
fn counted(r: &Record) -> bool {
    r.text(p::PERF_COUNTERS) == Some(COUNTERS_AVAILABLE)
}

/// A miss count as a cell: the figure where perf_event counted it, else `unavailable`.
fn misses(r: &Record, key: ValueKey) -> String {
    if counted(r) {
        format!("{:.3e}", r.val(key).unwrap_or_default())
    } else {
        "unavailable".into()
    }
}

/// The human output: the table, then how the repetitions varied, the verified pages, the
/// counters, and the checksum verdict.
pub fn render(records: &[Record]) -> String {
    let targets = by_target(records, "poly");
    let Some(first) = targets.first().and_then(|(_, rs)| rs.first()) else {
        return String::new();
    };
    let mut kernels: Vec<(&str, u64)> = Vec::new();
    let mut variants: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| r.experiment == "poly") {
        let kernel = r.text(p::KERNEL).unwrap_or_default();
        if !kernels.iter().any(|(k, _)| *k == kernel) {
            kernels.push((kernel, r.count(p::DATA_BYTES).unwrap_or_default()));
        }
        let variant = r.text(p::VARIANT).unwrap_or_default();
        if !variants.contains(&variant) {
            variants.push(variant);
        }
    }
    // Adaptive repetitions keep more where the first ones missed the precision target.
    let kept: Vec<usize> = records
        .iter()
        .filter(|r| r.experiment == "poly")
        .filter_map(|r| r.summary.as_ref().map(|s| s.n))
        .collect();
    let (lo, hi) = (
        kept.iter().copied().min().unwrap_or(0),
        kept.iter().copied().max().unwrap_or(0),
    );
    let n = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    };
    let cpu = first.threads.first().map_or(0, |t| t.cpu_requested);
    let blocks = first.blocks.len();
    let how = if blocks > 1 {
        format!(
            "the geometric mean of {blocks} blocks' medians, {n} run(s) in all (each block ran one more first and dropped it)"
        )
    } else {
        format!("median of {n} run(s) (one more ran first and was dropped)")
    };
    let mut out = format!(
        "PolyBench kernels (seed 000 Table 1), preset {}, single thread on CPU {cpu}: seconds, {how}\n",
        first.text(p::PRESET).unwrap_or_default(),
    );
    if targets.len() == 1 {
        out += &one_target(records, targets[0].0, &kernels, &variants);
    } else {
        out += &super::table1::table1(records, &targets, &kernels, &variants);
    }
    out += &spread_note(records);
    out += "pages verified:\n";
    for (spec, rs) in &targets {
        if let Some(t) = rs[0].target.as_ref() {
            out += &format!("  {spec}: {}\n", t.achieved.describe());
        }
    }
    out += &counters_note(records, &targets, &kernels, &variants);
    out += &checksum_verdict(records);
    out
}

/// A row per kernel and variant on the one target, with its pages and counters.
fn one_target(
    records: &[Record],
    spec: &str,
    kernels: &[(&str, u64)],
    variants: &[&str],
) -> String {
    let mut t = Table::new(&[
        "kernel",
        "MiB",
        "variant",
        "seconds",
        "cv %",
        "pages",
        "dTLB misses",
        "LLC misses",
    ]);
    for (k, bytes) in kernels {
        for v in variants {
            let Some(r) = find(records, spec, k, v) else {
                continue;
            };
            t.row(vec![
                k.to_string(),
                format!("{:.1}", *bytes as f64 / f64::from(1 << 20)),
                v.to_string(),
                seconds(time(r)),
                format!("{:.1}", 100.0 * r.summary.as_ref().map_or(0.0, |s| s.cv())),
                page_size(r).map_or("unclear".into(), page_size_name),
                misses(r, v::DTLB_LOAD_MISSES),
                misses(r, v::LLC_LOAD_MISSES),
            ]);
        }
    }
    format!("{}\n", t.render())
}

/// Whether every run of a kernel computed the same result, else the runs that differ.
fn checksum_verdict(records: &[Record]) -> String {
    let mismatches: Vec<&str> = records
        .iter()
        .filter(|r| r.experiment == "poly")
        .flat_map(|r| &r.warnings)
        .filter(|w| w.code == "checksum-mismatch")
        .map(|w| w.message.as_str())
        .collect();
    if mismatches.is_empty() {
        return "checksums: every run of a kernel computed the same result (ref, opt and every target)\n".into();
    }
    let mut out = format!(
        "checksums DIFFER in {} run(s), do not use their times:\n",
        mismatches.len()
    );
    for m in mismatches {
        out += &format!("  {m}\n");
    }
    out
}

/// How much the repetitions varied: the median and the largest coefficient of variation,
/// so a reader can tell a real difference between two cells from noise.
fn spread_note(records: &[Record]) -> String {
    let mut cvs: Vec<(f64, &Record)> = records
        .iter()
        .filter(|r| r.experiment == "poly")
        .filter_map(|r| r.summary.as_ref().filter(|s| s.n > 1).map(|s| (s.cv(), r)))
        .collect();
    if cvs.is_empty() {
        return String::new();
    }
    cvs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (worst, r) = cvs[cvs.len() - 1];
    format!(
        "spread of the repetitions (cv): median {:.1}%, largest {:.1}% ({} {} on {})\n",
        100.0 * cvs[cvs.len() / 2].0,
        100.0 * worst,
        r.text(p::KERNEL).unwrap_or_default(),
        r.text(p::VARIANT).unwrap_or_default(),
        r.spec().unwrap_or_default()
    )
}

/// The dTLB and LLC misses: a table where perf_event counted them, else one line saying
/// they are unavailable and why (never a number).
fn counters_note(
    records: &[Record],
    targets: &[(&str, Vec<&Record>)],
    kernels: &[(&str, u64)],
    variants: &[&str],
) -> String {
    let poly: Vec<&Record> = records.iter().filter(|r| r.experiment == "poly").collect();
    if !poly.iter().any(|r| counted(r)) {
        let why = poly
            .first()
            .map(|r| r.text(p::PERF_COUNTERS).unwrap_or_default())
            .unwrap_or("unavailable");
        return format!("dTLB and LLC misses: {why}\n");
    }
    if targets.len() == 1 {
        return String::new(); // in the table already
    }
    let mut header: Vec<String> = vec!["kernel".into(), "variant".into()];
    for (spec, _) in targets {
        header.push(format!("{spec} dTLB"));
        header.push(format!("{spec} LLC"));
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    for (k, _) in kernels {
        for v in variants {
            let mut row = vec![k.to_string(), v.to_string()];
            for (spec, _) in targets {
                let r = find(records, spec, k, v);
                for key in [v::DTLB_LOAD_MISSES, v::LLC_LOAD_MISSES] {
                    row.push(r.map_or("-".into(), |r| misses(r, key)));
                }
            }
            t.row(row);
        }
    }
    format!(
        "dTLB and LLC read misses per run (median, perf_event):\n{}\n",
        t.render()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fields::on_target;
    use pmscope_core::record::SystemSummary;
    use pmscope_core::summary::Summary;

    fn record(spec: &str, kernel: &str, variant: &str, secs: f64, page: u64) -> Record {
        let mut r = on_target(
            Record::new("poly", vec![], SystemSummary::default())
                .param(p::KERNEL, kernel)
                .param(p::VARIANT, variant)
                .param(p::PRESET, "mini")
                .param(p::DATA_BYTES, 3_000_000u64)
                .param(p::PERF_COUNTERS, "unavailable: no PMU"),
            spec,
        );
        r.target.as_mut().unwrap().achieved.page_size = Some(page);
        r.metric = Some("time_s".into());
        r.summary = Summary::of(&[secs]);
        r
    }

    #[test]
    fn table1_has_ratios_and_speedups_per_memory_kind() {
        let mut rs = Vec::new();
        for (k, slow) in [("gemm", 1.0), ("jacobi-2d", 3.0)] {
            rs.push(record("dram:4k", k, "ref", 2.0 * slow, 4096));
            rs.push(record("dram:4k", k, "opt", 1.0 * slow, 4096));
            rs.push(record("dram:thp", k, "ref", 2.0, 2 << 20));
            rs.push(record("dram:thp", k, "opt", 1.0, 2 << 20));
        }
        let out = render(&rs);
        assert!(
            out.contains("dram:4k ref") && out.contains("dram:thp opt"),
            "{out}"
        );
        assert!(out.contains("dram 4K->2M ref"), "{out}");
        let jacobi: Vec<&str> = out
            .lines()
            .find(|l| l.starts_with("jacobi-2d"))
            .unwrap()
            .split_whitespace()
            .collect();
        // Per target ref, opt, ref/opt; then the 4K->2M speed-up of each variant.
        assert_eq!(
            jacobi,
            [
                "jacobi-2d",
                "2.9",
                "6.000",
                "3.000",
                "2.00",
                "2.000",
                "1.000",
                "2.00",
                "3.00",
                "3.00"
            ]
        );
        assert!(
            out.contains("2M pages help most: jacobi-2d (dram ref 3.00x)\n"),
            "{out}"
        );
        assert!(
            out.contains("dTLB and LLC misses: unavailable: no PMU"),
            "{out}"
        );
        assert!(
            !out.contains("spread of the repetitions"),
            "one sample has no spread"
        );
        assert!(
            out.contains("every run of a kernel computed the same result"),
            "{out}"
        );
    }

    #[test]
    fn a_2m_request_that_came_back_4k_has_no_speedup() {
        let rs = vec![
            record("dram:4k", "gemm", "ref", 1.0, 4096),
            record("dram:thp", "gemm", "ref", 1.0, 4096),
        ];
        let out = render(&rs);
        assert!(!out.contains("4K->2M ref"), "{out}");
        assert!(
            out.contains(
                "no 4K-to-2M speed-up for dram: its targets verified dram:4k = 4k, dram:thp = 4k"
            ),
            "{out}"
        );
    }
}
