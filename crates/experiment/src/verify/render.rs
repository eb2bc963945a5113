//! The `verify` table, drawn from records alone: what each target achieved, then which
//! file a `file:` or `shm` target became. `quick` prints the same table.

use crate::render::table::Table;
use pmscope_core::achieved::Achieved;
use pmscope_core::record::Record;
use pmscope_core::units::{Bytes, page_size_name};

/// The table of the `verify` records, then the file each target mapped where it has one.
pub fn render(records: &[Record]) -> String {
    let verified: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "verify")
        .collect();
    let mut t = Table::new(&[
        "target",
        "mapped",
        "page size",
        "evidence",
        "faults",
        "pre-fault",
        "nodes",
        "persistence",
        "MAP_SYNC",
    ]);
    for r in &verified {
        let Some(tr) = &r.target else { continue };
        let a = &tr.achieved;
        t.row(vec![
            tr.spec.clone(),
            Bytes(a.bytes).to_string(),
            page(a),
            a.page_size_source.clone(),
            a.faults.minor_faults.to_string(),
            format!("{:.1} ms", a.prefault_ns as f64 / 1e6),
            nodes(a),
            a.persistence.describe().into(),
            match a.map_sync {
                Some(true) => "accepted".into(),
                Some(false) => "refused".into(),
                None => "-".into(),
            },
        ]);
    }
    let mut out = format!("{}\n", t.render());
    // Which file a file: or shm target became (a directory gets a new file in it), since
    // the spec alone does not say.
    for r in &verified {
        if let Some(tr) = &r.target
            && let Some(path) = &tr.achieved.path
        {
            let path = match path.strip_suffix(" (unnamed)") {
                Some(p) => format!(
                    "{p} (unnamed: O_TMPFILE, it vanishes with the process unless --keep names it)"
                ),
                None => path.clone(),
            };
            out += &format!("{}: {path}\n", tr.spec);
        }
    }
    out
}

/// The verified page size, with its share where smaps sees the mapping.
fn page(a: &Achieved) -> String {
    match a.page_size {
        Some(s) if a.pages.smaps_sees_mapping => format!(
            "{} {:.0}%",
            page_size_name(s),
            100.0 * a.pages.fraction(s, a.bytes)
        ),
        Some(s) => page_size_name(s),
        None => "unclear".into(),
    }
}

/// The pages per NUMA node, `node:pages,...`; where move_pages was asked about a sample of
/// the pages (a large mapping), the counts are the sample's and the cell says so.
fn nodes(a: &Achieved) -> String {
    if a.nodes.is_empty() {
        return "unknown".into();
    }
    let counts = a
        .nodes
        .iter()
        .map(|(n, c)| format!("{n}:{c}"))
        .collect::<Vec<_>>()
        .join(",");
    if a.nodes_sampled {
        let pages = a.bytes / a.page_size.unwrap_or(4096).max(1);
        format!("{counts} (a sample of {pages} pages)")
    } else {
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::achieved::Persistence;

    /// A sampled node count says it is a sample, and of how many pages; a full one does not.
    #[test]
    fn a_sampled_node_count_says_so() {
        let mut a = Achieved::unverified(1 << 30, Persistence::Volatile);
        a.page_size = Some(4096);
        a.nodes.insert(0, 65536);
        assert_eq!(nodes(&a), "0:65536");
        a.nodes_sampled = true;
        assert_eq!(nodes(&a), "0:65536 (a sample of 262144 pages)");
    }
}
