//! Which records a figure or an observation reads, and how they become curves: the plain
//! bandwidth records and their ops, the largest value of a param, the `inst` records and
//! the one of a cell, the loaded-latency curves, points grouped into curves and
//! categories in first-seen order. `figures` and `observations` both build on it, so
//! neither imports the other.

use crate::data;
use pmscope_core::record::Record;
use pmscope_core::vocab::{ParamKey, p, v};

/// Points grouped into named curves, in first-seen order of their keys, each curve sorted
/// by x (`Y` is the figure, or whatever a point carries: its record, its interval).
pub(crate) fn group<K: PartialEq + Clone, Y>(
    items: impl IntoIterator<Item = (K, f64, Y)>,
) -> Vec<(K, Vec<(f64, Y)>)> {
    let mut out: Vec<(K, Vec<(f64, Y)>)> = Vec::new();
    for (k, x, y) in items {
        match out.iter_mut().find(|o| o.0 == k) {
            Some(o) => o.1.push((x, y)),
            None => out.push((k, vec![(x, y)])),
        }
    }
    for o in &mut out {
        o.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Categories in first-seen order; returns the index of `name`.
pub(crate) fn index_of(list: &mut Vec<String>, name: &str) -> usize {
    match list.iter().position(|c| c == name) {
        Some(i) => i,
        None => {
            list.push(name.to_string());
            list.len() - 1
        }
    }
}

/// Plain (unmixed) bandwidth records with a median.
pub(crate) fn bandwidth_plain(records: &[Record]) -> Vec<&Record> {
    data::of(records, "bandwidth")
        .filter(|r| r.text(p::MIX).unwrap_or("").is_empty() && data::median(r).is_some())
        .collect()
}

/// The ops of some records, in first-seen order.
pub(crate) fn bandwidth_ops(recs: &[&Record]) -> Vec<String> {
    let mut out = Vec::new();
    for r in recs {
        if let Some(op) = r.text(p::OP) {
            index_of(&mut out, op);
        }
    }
    out
}

/// The largest value of an integer param among some records.
pub(crate) fn largest(recs: &[&Record], key: ParamKey) -> Option<u64> {
    recs.iter().filter_map(|r| r.count(key)).max()
}

/// The `inst` records with a summary.
pub(crate) fn inst_records(records: &[Record]) -> Vec<&Record> {
    data::of(records, "inst")
        .filter(|r| r.summary.is_some())
        .collect()
}

/// The `inst` record of one cell, preferring the given fences in order, loads of flushed
/// lines (so memory answers) and the widest access instruction.
pub(crate) fn inst_pick<'a>(
    recs: &[&'a Record],
    target: &str,
    op: &str,
    pattern: &str,
    access: u64,
    fences: &[&str],
) -> Option<&'a Record> {
    recs.iter()
        .copied()
        .filter(|r| {
            data::target(r) == target
                && r.text(p::OP) == Some(op)
                && r.text(p::PATTERN) == Some(pattern)
                && r.count(p::ACCESS_BYTES) == Some(access)
                && r.summary.is_some()
                && r.get(p::UNSUPPORTED).is_none()
        })
        .filter_map(|r| {
            let fence = fences.iter().position(|f| Some(*f) == r.text(p::FENCE))?;
            let cold = r.flag(p::FLUSHED_BEFORE) != Some(true);
            Some((
                (fence, cold, u64::MAX - r.count(p::WIDTH_BYTES).unwrap_or(0)),
                r,
            ))
        })
        .min_by_key(|(k, _)| *k)
        .map(|(_, r)| r)
}

/// The loaded-latency curves: (target, traffic mix) → (traffic GB/s, the probe's record,
/// whose median is its latency), by bandwidth. One curve per (target, traffic R:W mix).
pub(crate) type LoadedCurves<'a> = Vec<((String, String), Vec<(f64, &'a Record)>)>;

/// The `loaded` records with a median, as curves.
pub(crate) fn loaded_curves(records: &[Record]) -> LoadedCurves<'_> {
    let recs: Vec<&Record> = data::of(records, "loaded")
        .filter(|r| data::median(r).is_some())
        .collect();
    // The idle point (no traffic threads) belongs to every mix of its target.
    let mixes: Vec<String> = {
        let mut m: Vec<String> = Vec::new();
        for r in &recs {
            if r.count(p::TRAFFIC_THREADS).unwrap_or(0) > 0 {
                let rw = r.text(p::TRAFFIC_RW).unwrap_or("?").to_string();
                if !m.contains(&rw) {
                    m.push(rw);
                }
            }
        }
        m
    };
    group(recs.iter().flat_map(|r| {
        let t = data::target(r).to_string();
        let bw = r.val(v::TRAFFIC_GB_S).unwrap_or(0.0);
        let idle = r.count(p::TRAFFIC_THREADS).unwrap_or(0) == 0;
        let keys: Vec<String> = if idle {
            mixes.clone()
        } else {
            vec![r.text(p::TRAFFIC_RW).unwrap_or("?").to_string()]
        };
        keys.into_iter()
            .map(move |k| ((t.clone(), k), if idle { 0.0 } else { bw }, *r))
            .collect::<Vec<_>>()
    }))
}
