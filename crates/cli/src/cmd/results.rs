//! `pmscope results`: the store's runs.

use crate::args::{ExportFormat, OutputArgs, ResultsArgs, ResultsCommand};
use crate::error::usage;
use crate::output::{open_store, open_store_to_record};
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_store::{Run, StoreError, to_csv, to_jsonl};
use std::io::{BufRead, IsTerminal, Write};

fn describe_run(r: &Run) -> String {
    format!(
        "{:>5}  {}  {:>6} points  {:<10}  {}{}",
        r.id,
        super::report::utc(r.started_ms as u64),
        r.points,
        if r.complete { "complete" } else { "incomplete" },
        r.command_line.join(" "),
        if r.tags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", r.tags.join(", "))
        }
    )
}

/// Runs a `pmscope results` command.
pub fn run(out: &OutputArgs, a: &ResultsArgs) -> Result<()> {
    let store = match &a.command {
        ResultsCommand::Import { file } => {
            if out.no_store {
                return Err(usage(
                    "--no-store contradicts `results import`, whose one job is to store; drop --no-store (or leave the file unimported)",
                ));
            }
            // The file is read and judged before the store is opened (or created).
            let records = pmscope_store::read_jsonl(file)?;
            let ids = open_store_to_record(out)?.import_runs(file, records, &out.tags)?;
            let name = if file.as_os_str() == "-" {
                "standard input".to_string()
            } else {
                file.display().to_string()
            };
            let said = match ids.as_slice() {
                [id] => format!("imported {name} as run {id}"),
                _ => format!(
                    "imported {name} as runs {}: its records are of {} runs (a new run starts where the command line changes or a point comes again)",
                    ids.iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    ids.len()
                ),
            };
            pmscope_experiment::stdout::line(&said)?;
            return Ok(());
        }
        ResultsCommand::List => match open_store(out) {
            // No store yet holds no runs; it is not created by looking.
            Err(e) if matches!(e.downcast_ref(), Some(StoreError::Missing(_))) => {
                eprintln!("pmscope: {e}");
                return Ok(());
            }
            opened => opened?,
        },
        _ => open_store(out)?,
    };
    let mut stdout = pmscope_experiment::stdout::Stdout;
    match &a.command {
        ResultsCommand::List => {
            for r in store.runs(out.tags.first().map(String::as_str))? {
                if out.json {
                    writeln!(stdout, "{}", serde_json::to_string(&r)?)?;
                } else {
                    writeln!(stdout, "{}", describe_run(&r))?;
                }
            }
        }
        ResultsCommand::Show { run } => {
            let r = store.run(store.resolve(run)?)?;
            if out.json {
                writeln!(stdout, "{}", serde_json::to_string(&r)?)?;
            } else {
                writeln!(stdout, "{}", describe_run(&r))?;
                if let Some(h) = &r.host {
                    writeln!(
                        stdout,
                        "host {} | {} | kernel {} | {} MiB | {} NUMA node(s) | pmscope {}",
                        h.hostname,
                        h.cpu_model,
                        h.kernel,
                        h.memory_bytes >> 20,
                        h.numa_nodes,
                        h.pmscope_version
                    )?;
                }
                for rec in store.records(r.id)? {
                    writeln!(stdout, "  {}", point_line(&rec))?;
                }
            }
        }
        ResultsCommand::Export { runs, format } => {
            let mut sets = Vec::new();
            for sel in runs {
                let id = store.resolve(sel)?;
                sets.push((id, store.records(id)?));
            }
            let text = match format {
                ExportFormat::Csv => to_csv(&sets)?,
                ExportFormat::Jsonl => {
                    to_jsonl(&sets.into_iter().flat_map(|(_, r)| r).collect::<Vec<_>>())?
                }
            };
            stdout.write_all(text.as_bytes())?;
        }
        ResultsCommand::Rm { run, yes } => {
            let id = store.resolve(run)?;
            if !yes {
                let stdin = std::io::stdin();
                if !stdin.is_terminal() {
                    return Err(usage(format!(
                        "refusing to remove run {id} without a terminal to ask; pass --yes"
                    )));
                }
                eprint!("remove run {id} and its points? [y/N] ");
                let mut answer = String::new();
                stdin.lock().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    return Err(usage(format!("run {id} kept")));
                }
            }
            store.remove_run(id)?;
            writeln!(stdout, "removed run {id}")?;
        }
        // Imported before the store was opened.
        ResultsCommand::Import { .. } => {}
    }
    Ok(())
}

fn point_line(r: &Record) -> String {
    let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{} {} {} {}: {}",
        r.experiment,
        r.target.as_ref().map_or("-", |t| t.spec.as_str()),
        params.join(" "),
        r.metric.as_deref().unwrap_or("-"),
        r.summary
            .as_ref()
            .map_or("-".to_string(), |s| format!("p50 {:.4} (n {})", s.p50, s.n))
    )
}
