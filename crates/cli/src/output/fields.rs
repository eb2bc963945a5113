//! Reading records back for the human tables: the renderers draw only from records, so
//! they read the target, params and values through these few accessors (a missing key
//! reads as empty or zero, so a table never panics on a record of an older schema).

use pmscope_core::record::Record;

/// Typed reads of a record's fields.
pub trait Fields {
    /// The target spec as given (`""` for records of no target).
    fn spec(&self) -> &str;
    /// A string param (`""` when absent or not a string).
    fn text(&self, key: &str) -> &str;
    /// An integer param (0 when absent).
    fn count(&self, key: &str) -> u64;
    /// An integer param that may be null or absent.
    fn maybe_count(&self, key: &str) -> Option<u64>;
    /// A boolean param (false when absent).
    fn flag(&self, key: &str) -> bool;
    /// A float param (0 when absent).
    fn number(&self, key: &str) -> f64;
    /// A value (0 when absent).
    fn val(&self, key: &str) -> f64;
}

impl Fields for Record {
    fn spec(&self) -> &str {
        self.target.as_ref().map_or("", |t| t.spec.as_str())
    }
    fn text(&self, key: &str) -> &str {
        self.params.get(key).and_then(|v| v.as_str()).unwrap_or("")
    }
    fn count(&self, key: &str) -> u64 {
        self.maybe_count(key).unwrap_or(0)
    }
    fn maybe_count(&self, key: &str) -> Option<u64> {
        self.params.get(key).and_then(|v| v.as_u64())
    }
    fn flag(&self, key: &str) -> bool {
        self.params
            .get(key)
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }
    fn number(&self, key: &str) -> f64 {
        self.params.get(key).and_then(|v| v.as_f64()).unwrap_or(0.0)
    }
    fn val(&self, key: &str) -> f64 {
        self.values.get(key).copied().unwrap_or(0.0)
    }
}

/// The records of `experiment`, grouped by target in the order the targets were measured.
pub fn by_target<'r>(records: &'r [Record], experiment: &str) -> Vec<(&'r str, Vec<&'r Record>)> {
    let mut out: Vec<(&str, Vec<&Record>)> = Vec::new();
    for r in records.iter().filter(|r| r.experiment == experiment) {
        match out.iter_mut().find(|(s, _)| *s == r.spec()) {
            Some((_, v)) => v.push(r),
            None => out.push((r.spec(), vec![r])),
        }
    }
    out
}

/// The reason of an `unsupported` sentence, for a table cell: `loops::Unavailable`
/// displays as `{what}: {reason}`, and `what` (`op with N-byte instructions`) holds no
/// colon.
pub fn short_reason(sentence: &str) -> &str {
    sentence.split_once(": ").map_or(sentence, |(_, why)| why)
}

/// `r` as a record of target `spec` (a 4 KiB DRAM mapping): for the renderers' tests.
#[cfg(test)]
pub fn on_target(mut r: Record, spec: &str) -> Record {
    use pmscope_core::achieved::{Achieved, FaultEvidence, PageMix, Persistence};
    let bytes = 1 << 20;
    r.target = Some(pmscope_core::record::TargetRecord {
        spec: spec.into(),
        achieved: Achieved {
            pages: PageMix {
                bytes_4k: bytes,
                smaps_sees_mapping: true,
                ..PageMix::default()
            },
            faults: FaultEvidence::from_faults(bytes, bytes / 4096),
            page_size: Some(4096),
            page_size_source: "smaps+faults".into(),
            nodes: [(0, bytes / 4096)].into(),
            prefault_ns: 1,
            ..Achieved::unverified(bytes, Persistence::Volatile)
        },
    });
    r
}
