//! Table 1's layout for several targets: per target the time of each variant and the
//! ref/opt ratio, per memory the 4K-to-2M speed-up, and the kernels 2M pages helped most.

use super::cells::{find, page_size, ratio, seconds, time, times};
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::units::page_size_name;
use pmscope_mapping::TargetSpec;
use pmscope_workload::polybench::Variant;

/// What a target is apart from its page policy, as its kind says ([`TargetSpec::memory`]):
/// `dram` (with its node) for dram, the file's path for a file (`page=` left out). A spec
/// that does not parse stands for itself.
fn memory_kind(spec: &str) -> String {
    spec.parse::<TargetSpec>()
        .map_or_else(|_| spec.to_string(), |s| s.memory())
}

/// A 4K target and a 2M target of the same memory kind, by verified page size.
struct PagePair<'a> {
    kind: String,
    small: &'a str,
    large: &'a str,
}

/// The 4K/2M pairs of the run, and a note for each kind that was asked for both but did
/// not get both (a 2M request that came back 4K has no speed-up to show).
fn page_pairs<'a>(targets: &[(&'a str, Vec<&Record>)]) -> (Vec<PagePair<'a>>, Vec<String>) {
    let mut kinds: Vec<String> = Vec::new();
    for (spec, _) in targets {
        let k = memory_kind(spec);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let (mut pairs, mut notes) = (Vec::new(), Vec::new());
    for kind in kinds {
        let of_kind: Vec<(&str, Option<u64>)> = targets
            .iter()
            .filter(|(s, _)| memory_kind(s) == kind)
            .map(|(s, rs)| (*s, page_size(rs[0])))
            .collect();
        let with = |size: u64| {
            of_kind
                .iter()
                .find(|(_, p)| *p == Some(size))
                .map(|(s, _)| *s)
        };
        match (with(4 << 10), with(2 << 20)) {
            (Some(small), Some(large)) => pairs.push(PagePair { kind, small, large }),
            _ if of_kind.len() > 1 => notes.push(format!(
                "no 4K-to-2M speed-up for {kind}: its targets verified {}",
                of_kind
                    .iter()
                    .map(|(s, p)| format!("{s} = {}", p.map_or("unclear".into(), page_size_name)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => {}
        }
    }
    (pairs, notes)
}

/// Table 1's layout: per target the time of each variant and the ref/opt ratio, then per
/// memory kind the 4K-to-2M speed-up of each variant; then the kernels 2M pages helped most.
pub(super) fn table1(
    records: &[Record],
    targets: &[(&str, Vec<&Record>)],
    kernels: &[(&str, u64)],
    variants: &[&str],
) -> String {
    let find = |spec: &str, kernel: &str, variant: &str| {
        find(records, spec, kernel, variant).and_then(time)
    };
    let (r, o) = (Variant::Ref.name(), Variant::Opt.name());
    let both = variants.contains(&r) && variants.contains(&o);
    let (pairs, notes) = page_pairs(targets);
    // MiB, as Table 1's "MB" are (gemm: 3 x 2000^2 doubles = 91.6).
    let mut header: Vec<String> = vec!["kernel".into(), "MiB".into()];
    for (spec, _) in targets {
        for v in variants {
            header.push(format!("{spec} {v}"));
        }
        if both {
            header.push("ref/opt".into());
        }
    }
    for p in &pairs {
        for v in variants {
            header.push(format!("{} 4K->2M {v}", p.kind));
        }
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    // (speed-up, kernel, kind, variant) of every cell, for the closing note.
    let mut speedups: Vec<(f64, &str, &str, &str)> = Vec::new();
    for (k, bytes) in kernels {
        let mut row = vec![
            k.to_string(),
            format!("{:.1}", *bytes as f64 / f64::from(1 << 20)),
        ];
        for (spec, _) in targets {
            for v in variants {
                row.push(seconds(find(spec, k, v)));
            }
            if both {
                row.push(times(ratio(find(spec, k, r), find(spec, k, o))));
            }
        }
        for p in &pairs {
            for v in variants {
                let s = ratio(find(p.small, k, v), find(p.large, k, v));
                if let Some(s) = s {
                    speedups.push((s, k, &p.kind, v));
                }
                row.push(times(s));
            }
        }
        t.row(row);
    }
    let mut out = format!("{}\n", t.render());
    out += "ref/opt > 1: the locality-optimised variant is faster; 4K->2M = time on 4 KiB pages / time on 2 MiB pages (> 1: 2M pages help)\n";
    for n in notes {
        out += &format!("{n}\n");
    }
    speedups.sort_by(|a, b| b.0.total_cmp(&a.0));
    speedups.retain(|s| s.0 > 1.0);
    if speedups.is_empty() && !pairs.is_empty() {
        out += "2M pages made no kernel faster here\n";
    } else if !speedups.is_empty() {
        let mut named: Vec<String> = Vec::new();
        for (s, k, kind, v) in &speedups {
            if named.len() == 5 {
                break;
            }
            if !named.iter().any(|n| n.starts_with(&format!("{k} "))) {
                named.push(format!("{k} ({kind} {v} {s:.2}x)"));
            }
        }
        out += &format!("2M pages help most: {}\n", named.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_kinds() {
        assert_eq!(memory_kind("dram:4k"), "dram");
        assert_eq!(memory_kind("dram:2m,node=1"), "dram,node=1");
        assert_eq!(memory_kind("file:/mnt/pmem"), "file:/mnt/pmem");
        // Seed 000's 4K-PMEM and 2M-PMEM columns: one file system at two page sizes.
        assert_eq!(memory_kind("file:/mnt/pmem,page=4k"), "file:/mnt/pmem");
        assert_eq!(memory_kind("file:/mnt/pmem,page=2m"), "file:/mnt/pmem");
    }
}
