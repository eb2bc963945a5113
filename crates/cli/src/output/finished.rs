//! What an interrupted run prints: the points it finished, one line each, from the records
//! (the command's own table needs the whole run).

use pmscope_core::record::Record;
use pmscope_experiment::render::table::Table;
use pmscope_experiment::stdout::{StdoutClosed, line};

/// Prints the finished points of an interrupted run to stdout.
pub fn print(records: &[Record]) -> Result<(), StdoutClosed> {
    let measured: Vec<&Record> = records.iter().filter(|r| r.summary.is_some()).collect();
    line(&format!(
        "{} point{} finished before the interruption:",
        measured.len(),
        if measured.len() == 1 { "" } else { "s" }
    ))?;
    if measured.is_empty() {
        return Ok(());
    }
    let mut t = Table::new(&["experiment", "target", "parameters", "metric", "median"]);
    for r in measured {
        let params = r
            .params
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "seed" | "executor"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        t.row(vec![
            r.experiment.clone(),
            r.target
                .as_ref()
                .map(|t| t.spec.clone())
                .unwrap_or_default(),
            params,
            r.metric.clone().unwrap_or_default(),
            r.summary
                .as_ref()
                .map(|s| format!("{:.2}", s.p50))
                .unwrap_or_default(),
        ]);
    }
    line(&t.render())
}
