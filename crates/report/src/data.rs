//! Reading records through the vocabulary's keys.

use pmscope_core::record::Record;
use pmscope_core::units::page_size_name;

/// The record's metric: the median of its summary.
pub fn median(r: &Record) -> Option<f64> {
    r.summary.as_ref().map(|s| s.p50).filter(|v| v.is_finite())
}

/// The target spec of a record (`-` when it has none).
pub fn target(r: &Record) -> &str {
    r.target.as_ref().map(|t| t.spec.as_str()).unwrap_or("-")
}

/// The verified page size of a record's target.
pub fn page_size(r: &Record) -> Option<u64> {
    r.target.as_ref().and_then(|t| t.achieved.page_size)
}

/// "4 KiB" etc., or "unclear".
pub fn page_name(size: Option<u64>) -> String {
    size.map(page_size_name).unwrap_or_else(|| "unclear".into())
}

/// Records of one experiment.
pub fn of<'a>(records: &'a [Record], experiment: &'a str) -> impl Iterator<Item = &'a Record> {
    records.iter().filter(move |r| r.experiment == experiment)
}

/// The targets of some records, in first-seen order.
pub fn targets<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        let t = target(r);
        if t != "-" && !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    out
}

/// Bytes as the report prints them: 64 B, 4 KiB, 2 MiB.
pub fn bytes(n: f64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, name) in units {
        if n >= size as f64 {
            let v = n / size as f64;
            return if (v - v.round()).abs() < 0.05 {
                format!("{} {name}", v.round())
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{} B", n.round())
}

/// Whether a record's target is the machine's own DRAM: a `dram` or `shm` target, volatile
/// or DRAM-emulated pmem, on no pmem region and bound to no node (a node may be far
/// memory: CXL, a CPU-less node).
pub fn is_local_dram(r: &Record) -> bool {
    use pmscope_core::achieved::Persistence;
    let Some(t) = &r.target else {
        return false;
    };
    let kind = t.spec.split([':', ',']).next().unwrap_or("");
    matches!(kind, "dram" | "shm")
        && !t.spec.contains("node=")
        && matches!(
            t.achieved.persistence,
            Persistence::Volatile | Persistence::Emulated
        )
        && t.achieved.pmem_region.is_none()
}
