//! Helpers of the human tables, which draw only from records (read through the typed
//! accessors of `Record`).

use pmscope_core::record::Record;

/// The records of `experiment`, grouped by target in the order the targets were measured.
pub fn by_target<'r>(records: &'r [Record], experiment: &str) -> Vec<(&'r str, Vec<&'r Record>)> {
    let mut out: Vec<(&str, Vec<&Record>)> = Vec::new();
    for r in records.iter().filter(|r| r.experiment == experiment) {
        match out
            .iter_mut()
            .find(|(s, _)| *s == r.spec().unwrap_or_default())
        {
            Some((_, v)) => v.push(r),
            None => out.push((r.spec().unwrap_or_default(), vec![r])),
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
#[doc(hidden)]
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
