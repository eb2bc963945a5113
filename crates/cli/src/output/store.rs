//! The sink's results store: a command's records join the store as one run, a suite's
//! as the points of its steps; and the sink as experiments see it ([`Output`]).

use super::Sink;
use crate::args::OutputArgs;
use anyhow::{Context as _, Result};
use pmscope_core::record::Record;
use pmscope_experiment::Output;
use pmscope_store::{RunId, Store};
use std::io::Write;

/// The results store and this command's run in it (begun at the first record).
pub(super) struct StoreRun {
    pub(super) store: Store,
    pub(super) tags: Vec<String>,
    pub(super) run: Option<RunId>,
    /// Inside a suite: the step the next records belong to.
    pub(super) step: Option<usize>,
}

/// Opens the results store: `--results`, else `$PMSCOPE_RESULTS`, else the XDG default.
pub fn open_store(a: &OutputArgs) -> Result<Store> {
    let path = a
        .results
        .clone()
        .or_else(pmscope_store::default_path)
        .ok_or_else(|| {
            crate::error::usage(
                "no results store location: set $HOME or $PMSCOPE_RESULTS, or pass --results PATH",
            )
        })?;
    Ok(Store::open(&path)?)
}

impl Output for Sink {
    /// Whether commands print their human tables and progress (not under --json, not
    /// inside a suite).
    fn human(&self) -> bool {
        !self.json && !self.quiet
    }

    /// The records emitted so far: what the human renderers draw their tables from.
    fn records(&self) -> &[Record] {
        &self.records
    }

    /// Sets whether commands stay quiet (a suite draws its own progress and summary).
    fn set_quiet(&mut self, quiet: bool) {
        self.quiet = quiet;
    }

    /// The results store, unless `--no-store`.
    fn store(&self) -> Option<&Store> {
        self.store.as_ref().map(|s| &s.store)
    }

    /// Begins this command's run now (a suite does, so that a run killed before its first
    /// point can be resumed), or continues `resume`, an incomplete run of the store (which
    /// gains this command's tags).
    /// Returns the run, `None` under `--no-store`.
    fn begin_run(
        &mut self,
        command_line: &[String],
        resume: Option<RunId>,
    ) -> Result<Option<RunId>> {
        let Some(s) = &mut self.store else {
            return Ok(None);
        };
        let run = match resume {
            Some(run) => {
                s.store.add_tags(run, &s.tags)?;
                run
            }
            None => s.store.begin_run(command_line, &s.tags)?,
        };
        s.run = Some(run);
        Ok(Some(run))
    }

    /// Inside a suite: the records that follow belong to step `step` (0-based). Points a
    /// killed attempt of this step left in the run are deleted first, so the step is
    /// stored whole and once.
    fn begin_step(&mut self, step: usize) -> Result<()> {
        if let Some(s) = &mut self.store {
            if let Some(run) = s.run {
                s.store.restart_step(run, step)?;
            }
            s.step = Some(step);
        }
        Ok(())
    }

    /// Inside a suite: step `step` finished, every point of it stored.
    fn finish_step(&mut self, step: usize, name: &str) -> Result<()> {
        if let Some(StoreRun {
            store,
            run: Some(run),
            step: current,
            ..
        }) = &mut self.store
        {
            store.finish_step(*run, step, name)?;
            *current = None;
        }
        Ok(())
    }

    /// A record an earlier, interrupted attempt of this run stored (`suite --resume`): it
    /// goes to `-o` and `--json` as if measured now, and to the renderers, but not again
    /// into the store.
    fn replay(&mut self, r: &Record) -> Result<()> {
        let line = serde_json::to_string(r).context("serialising a record")?;
        if let Some((name, f)) = &mut self.file {
            f.write_line(&line)
                .with_context(|| format!("writing {name}"))?;
        }
        if self.json {
            writeln!(std::io::stdout().lock(), "{line}").context("writing stdout")?;
        }
        self.records.push(r.clone());
        Ok(())
    }
}

// Transitional: the commands still in cli call these as inherent methods.
impl Sink {
    /// See [`Output::human`].
    pub fn human(&self) -> bool {
        Output::human(self)
    }
    /// See [`Output::records`].
    pub fn records(&self) -> &[Record] {
        Output::records(self)
    }
}
