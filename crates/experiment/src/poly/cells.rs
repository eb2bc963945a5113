//! The cells of poly's tables, shared by the per-target table and Table 1: which record,
//! its time and page size, and how a time or a ratio is written.

use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// The `poly` record of `kernel` in `variant` on target `spec`.
pub(super) fn find<'r>(
    records: &'r [Record],
    spec: &str,
    kernel: &str,
    variant: &str,
) -> Option<&'r Record> {
    records.iter().find(|r| {
        r.experiment == "poly"
            && r.spec().unwrap_or_default() == spec
            && r.text(p::KERNEL).unwrap_or_default() == kernel
            && r.text(p::VARIANT).unwrap_or_default() == variant
    })
}

/// The median time of a record, in seconds.
pub(super) fn time(r: &Record) -> Option<f64> {
    r.summary.as_ref().map(|s| s.p50)
}

/// The verified page size of a record's target, if clear.
pub(super) fn page_size(r: &Record) -> Option<u64> {
    r.target.as_ref().and_then(|t| t.achieved.page_size)
}

pub(super) fn seconds(t: Option<f64>) -> String {
    match t {
        Some(t) if t >= 10.0 => format!("{t:.1}"),
        Some(t) if t >= 0.01 => format!("{t:.3}"),
        Some(t) => format!("{t:.2e}"),
        None => "-".into(),
    }
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub(super) fn times(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.2}"))
}
