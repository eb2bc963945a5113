//! `run`'s placement report, drawn from the launch's outcome: it lists every process under
//! the program, which the `run` record only sums.

use crate::render::table::Table;
use pmscope_core::units::{Bytes, page_size_name};
use pmscope_mapping::TargetSpec;
use pmscope_runner::launch::{self, Outcome};
use std::ffi::OsString;
use std::fmt::Write;

/// The placement report, for stderr: one row per process that placed something, then the
/// total, the verified page size and the files kept.
pub fn report(command: &[OsString], target: &TargetSpec, o: &Outcome) -> String {
    let p = &o.placement;
    let mut t = Table::new(&[
        "process",
        "placed",
        "bytes",
        "resident 4K / 2M / 1G",
        "nodes",
        "below threshold",
        "refused",
    ]);
    let row = |name: String, r: &launch::ProcessReport| {
        let nodes = if r.node_bytes.is_empty() {
            "-".to_string()
        } else {
            r.node_bytes
                .iter()
                .map(|(n, b)| format!("{n}:{}", Bytes(*b).human()))
                .collect::<Vec<_>>()
                .join(" ")
        };
        vec![
            name,
            r.served_count.to_string(),
            Bytes(r.served_bytes).human(),
            format!(
                "{} / {} / {}",
                Bytes(r.pages.bytes_4k).human(),
                Bytes(r.pages.bytes_2m).human(),
                Bytes(r.pages.bytes_1g).human()
            ),
            nodes,
            format!("{} ({})", r.below_count, Bytes(r.below_bytes).human()),
            r.failed_count.to_string(),
        ]
    };
    let placing: Vec<_> = p
        .processes
        .iter()
        .filter(|r| r.served_count + r.failed_count > 0)
        .collect();
    for r in &placing {
        let exe = r.exe.rsplit('/').next().unwrap_or(&r.exe);
        t.row(row(format!("{} {exe}", r.pid), r));
    }
    let others = p.processes.len() - placing.len();
    t.row(row(
        format!(
            "total ({} process{}{})",
            p.processes.len(),
            if p.processes.len() == 1 { "" } else { "es" },
            if others > 0 {
                format!(", {others} placed nothing")
            } else {
                String::new()
            }
        ),
        &p.total,
    ));
    let verified = match p.verified_page_bytes() {
        Some(b) => page_size_name(b),
        None => "not verified (nothing resident when read back)".into(),
    };
    let mut out = format!(
        "\npmscope run: {} on {} (allocations >= {}), exit status {}\n",
        command
            .first()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default(),
        target,
        Bytes(p.threshold),
        o.exit_code
    );
    let _ = writeln!(out, "{}", t.render().trim_end());
    let _ = writeln!(
        out,
        "verified page size: {verified} (asked {}); {} region(s) read back from smaps",
        page_size_name(p.plan.expected_page_bytes),
        p.total.verified_count
    );
    for f in &p.kept_files {
        let _ = writeln!(out, "kept: {}", f.display());
    }
    out
}
