//! Where records go: JSON Lines on stdout with `--json`, a human table otherwise, and
//! JSON Lines into `-o FILE` (created exclusively unless `--force`). Warnings live inside
//! the records; in table mode the sink renders each distinct one to stderr when the first
//! record carrying it arrives, so stderr never holds a finding the records lack. Unless
//! `--no-store`, every record also joins the results store as one point of this command's
//! run, committed as it arrives; [`Sink::commit`] marks the run complete.

pub mod finished;
mod store;

use store::{LazyStore, StoreRun};
pub use store::{open_store, open_store_to_record};

pub use pmscope_experiment::atomic_file;

/// The tag of a run whose standard output was closed by its reader.
pub const STDOUT_CLOSED: &str = "stdout-closed";

use crate::args::OutputArgs;
use anyhow::{Context as _, Result};
use atomic_file::PendingOutput;
use pmscope_core::record::Record;
use pmscope_core::warning::Warning;
use pmscope_store::Store;

/// The destination of a command's records.
pub struct Sink {
    json: bool,
    /// Inside a suite: records only, no per-command tables or progress bars.
    quiet: bool,
    file: Option<(String, PendingOutput)>,
    /// `-o` as given (`-`: stdout), and `--force`.
    output: Option<std::path::PathBuf>,
    force: bool,
    printed: Vec<String>,
    records: Vec<Record>,
    store: Option<StoreRun>,
    /// Records go to the store and `records` only (a suite's block records).
    store_only: bool,
    /// A record could not be written to stdout: the run stopped before its end.
    cut: bool,
}

impl Sink {
    /// Prepares `-o FILE` now, before anything is measured, so a clobber is refused at once.
    /// The records are written beside FILE and moved into place by [`Sink::commit`] when the
    /// run succeeded: a failed or interrupted run leaves an existing FILE exactly as it was.
    /// `-o -` is standard output (JSON Lines, as `--json`).
    pub fn open(a: &OutputArgs) -> Result<Sink> {
        let to_stdout = a.output.as_deref() == Some(std::path::Path::new("-"));
        let file = match &a.output {
            Some(path) if !to_stdout => Some((
                path.display().to_string(),
                PendingOutput::prepare(path, a.force)?,
            )),
            _ => None,
        };
        let store = if a.no_store {
            None
        } else {
            Some(StoreRun {
                store: LazyStore::new(a)?,
                tags: a.tags.clone(),
                run: None,
                step: None,
            })
        };
        Ok(Sink {
            json: a.json || to_stdout,
            quiet: false,
            file,
            output: a.output.clone(),
            force: a.force,
            printed: Vec::new(),
            records: Vec::new(),
            store,
            store_only: false,
            cut: false,
        })
    }

    /// The run succeeded: the `-o` file, if it holds anything, takes its name.
    pub fn commit(&mut self) -> Result<()> {
        if let Some(StoreRun {
            store,
            run: Some(run),
            ..
        }) = &self.store
        {
            store.get()?.finish_run(*run)?;
        }
        match self.file.take() {
            Some((_, pending)) if !self.records.is_empty() || pending.written() => pending.commit(),
            _ => Ok(()),
        }
    }

    /// Whether commands print their human tables and progress (not under --json, not
    /// inside a suite).
    pub fn human(&self) -> bool {
        !self.json && !self.quiet
    }

    /// Sets whether commands stay quiet (a suite draws its own progress and summary).
    pub fn set_quiet(&mut self, quiet: bool) {
        self.quiet = quiet;
    }

    /// The results store, unless `--no-store` (or it cannot be opened: the first record
    /// says why).
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref().and_then(|s| s.store.get().ok())
    }

    /// Whether stdout takes JSON Lines.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Emits one record: to the file (flushed at once, so an interrupted sweep keeps its
    /// finished points) and, with `--json`, to stdout.
    pub fn emit(&mut self, r: &Record) -> Result<()> {
        let line = serde_json::to_string(r).context("serialising a record")?;
        if let Some((name, f)) = self.file.as_mut().filter(|_| !self.store_only) {
            f.write_line(&line)
                .with_context(|| format!("writing {name}"))?;
        }
        if let Some(s) = &mut self.store {
            let run = match s.run {
                Some(run) => run,
                None => *s
                    .run
                    .insert(s.store.get()?.begin_run(&r.command_line, &s.tags)?),
            };
            s.store.get()?.add_step_record(run, s.step, r)?;
        }
        if self.json && !self.store_only {
            self.print_record(&line)?;
        } else if !self.store_only {
            self.print_warnings(&r.warnings);
        }
        self.records.push(r.clone());
        Ok(())
    }

    /// Emits a JSON object that is not a measurement (`info`'s inventory, `list`'s rows):
    /// like a record, to `-o` and, with `--json`, to stdout.
    pub fn emit_value(&mut self, v: &impl serde::Serialize) -> Result<()> {
        let line = serde_json::to_string(v).context("serialising")?;
        if let Some((name, f)) = &mut self.file {
            f.write_line(&line)
                .with_context(|| format!("writing {name}"))?;
        }
        if self.json {
            self.print_record(&line)?;
        }
        Ok(())
    }

    /// Writes one JSON line to stdout; a closed stdout stops the run here, before its end.
    fn print_record(&mut self, line: &str) -> Result<()> {
        pmscope_experiment::stdout::line(line).inspect_err(|_| self.cut = true)?;
        Ok(())
    }

    /// The reader of stdout went away (`| head -1`), and the command stopped at its next
    /// write. The run says so with the tag [`STDOUT_CLOSED`]; it is complete (and `-o` is
    /// put in place) when the write that failed came after its last point (the table),
    /// incomplete, and resumable as any stopped run, when a record could not be written.
    pub fn stdout_closed(&mut self) -> Result<()> {
        if let Some(StoreRun {
            store,
            run: Some(run),
            ..
        }) = &self.store
        {
            store.get()?.add_tags(*run, &[STDOUT_CLOSED.to_string()])?;
        }
        if self.cut || self.records.is_empty() {
            return Ok(());
        }
        self.commit()
    }

    /// The records emitted so far: what the human renderers draw their tables from.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Renders warnings once each (table mode), to stderr. Only for output that is not a
    /// record (`info`); a record's warnings are rendered when it is emitted.
    pub fn print_warnings(&mut self, warnings: &[Warning]) {
        for w in warnings {
            let key = format!("{}{}", w.code, w.message);
            if self.printed.contains(&key) {
                continue;
            }
            self.printed.push(key);
            eprintln!("warning: {}\n         remedy: {}", w.message, w.remedy);
        }
    }

    /// Prints human text (table mode only).
    pub fn text(&self, s: &str) -> Result<()> {
        if self.human() {
            pmscope_experiment::stdout::line(s)?;
        }
        Ok(())
    }
}

impl pmscope_runner::harness::RecordSink for Sink {
    fn emit(&mut self, r: &Record) -> Result<()> {
        Sink::emit(self, r)
    }
}
