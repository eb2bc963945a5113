//! The `fs` tables, drawn from records alone.

use crate::render::fields::by_target;
use crate::render::table::Table;
use pmscope_core::record::Record;
use pmscope_core::vocab::p;

/// Per target: its file system, then one row per operation (µs, median and tail), and the
/// targets side by side when there are several.
pub fn render(records: &[Record]) -> String {
    let targets = by_target(records, "fs-op");
    let mut out = String::new();
    for (spec, of) in &targets {
        out += &target(spec, of);
    }
    if targets.len() > 1 {
        out += &side_by_side(&targets);
        out += "\n";
    }
    out
}

/// Whether the record's operations fsynced, as a cell.
fn fsync(r: &Record) -> &'static str {
    if r.flag(p::FSYNC).unwrap_or_default() {
        "yes"
    } else {
        "no"
    }
}

/// One target: its file system and its operations.
fn target(spec: &str, of: &[&Record]) -> String {
    let first = of[0];
    let achieved = first
        .target
        .as_ref()
        .map(|t| t.achieved.describe())
        .unwrap_or_default();
    let inode = match first.flag(p::INODE_DAX) {
        Some(true) => "DAX (no page cache)",
        Some(false) => "not DAX (page cache)",
        None => "unknown to statx",
    };
    let mut out = format!(
        "{spec}: {} on {} at {} ({})\n  the measured files' inodes: {inode}; a file mapped there: {achieved}\n",
        first.text(p::FS_TYPE).unwrap_or_default(),
        first.text(p::DEVICE).unwrap_or_default(),
        first.text(p::MOUNT_POINT).unwrap_or_default(),
        first.text(p::MOUNT_OPTIONS).unwrap_or_default(),
    );
    let mut t = Table::new(&[
        "operation",
        "fsync",
        "p50 us",
        "p90 us",
        "p99 us",
        "max us",
        "samples",
    ]);
    for r in of {
        let op = r.text(p::FILE_OP).unwrap_or_default().to_string();
        match &r.summary {
            Some(s) => t.row(vec![
                op,
                fsync(r).into(),
                format!("{:.2}", s.p50 / 1e3),
                format!("{:.2}", s.p90 / 1e3),
                format!("{:.2}", s.p99 / 1e3),
                format!("{:.1}", s.max / 1e3),
                s.n.to_string(),
            ]),
            None => t.row(vec![
                op,
                fsync(r).into(),
                format!(
                    "unsupported ({})",
                    r.text(p::UNSUPPORTED).unwrap_or_default()
                ),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]),
        }
    }
    out += &format!("{}\n\n", t.render());
    out
}

/// The median of every operation on every target.
fn side_by_side(targets: &[(&str, Vec<&Record>)]) -> String {
    let mut header = vec!["median us".to_string(), "fsync".to_string()];
    header.extend(targets.iter().map(|(s, _)| s.to_string()));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header);
    let key = |r: &Record| {
        (
            r.text(p::FILE_OP).unwrap_or_default().to_string(),
            r.flag(p::FSYNC).unwrap_or_default(),
        )
    };
    let mut keys: Vec<(String, bool)> = Vec::new();
    for r in targets.iter().flat_map(|(_, of)| of) {
        if !keys.contains(&key(r)) {
            keys.push(key(r));
        }
    }
    for k in keys {
        let mut row = vec![k.0.clone(), if k.1 { "yes" } else { "no" }.into()];
        for (_, of) in targets {
            row.push(
                of.iter()
                    .find(|r| key(r) == k)
                    .and_then(|r| r.summary.as_ref())
                    .map_or("-".into(), |s| format!("{:.2}", s.p50 / 1e3)),
            );
        }
        t.row(row);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fields::on_target;

    fn op(spec: &str, name: &str, fsync: bool, p50: f64) -> Record {
        let mut r = Record::new("fs-op", Vec::new(), Default::default())
            .param(p::FILE_OP, name)
            .param(p::FSYNC, fsync)
            .param(p::FS_TYPE, "tmpfs")
            .param(p::INODE_DAX, false);
        r.summary = pmscope_core::summary::Summary::of(&[p50, p50]);
        on_target(r, spec)
    }

    #[test]
    fn each_target_then_the_medians_side_by_side() {
        let rs = [
            op("file:/a", "create", false, 2000.0),
            op("file:/a", "create", true, 8000.0),
            op("file:/b", "create", false, 3000.0),
        ];
        let s = render(&rs);
        assert!(s.starts_with("file:/a: tmpfs on "), "{s}");
        assert!(s.contains("not DAX (page cache)"), "{s}");
        assert!(s.contains("file:/b: tmpfs"), "{s}");
        let last = s.trim_end().lines().last().unwrap();
        assert!(last.starts_with("create") && last.ends_with('-'), "{s}");
    }
}
