//! The sink's results store (opened when first needed) and the sink as experiments see it
//! ([`pmscope_experiment::Output`]).

use super::Sink;
use crate::args::OutputArgs;
use anyhow::{Context as _, Result};
use pmscope_core::record::Record;
use pmscope_experiment::atomic_file::PendingOutput;
use pmscope_store::{RunId, Store};

/// The results store and this command's run in it (begun at the first record).
pub(super) struct StoreRun {
    pub(super) store: LazyStore,
    pub(super) tags: Vec<String>,
    pub(super) run: Option<RunId>,
    /// Inside a suite: the step the next records belong to.
    pub(super) step: Option<usize>,
}

fn store_path(a: &OutputArgs) -> Result<std::path::PathBuf> {
    Ok(crate::environment::store_location(a.results.as_deref())?.path)
}

/// The store a command records into: refused now if it cannot be written, not after the
/// measurement.
fn store_path_to_record(a: &OutputArgs) -> Result<std::path::PathBuf> {
    let loc = crate::environment::store_location(a.results.as_deref())?;
    crate::environment::check_writable(&loc)?;
    Ok(loc.path)
}

/// Opens the existing results store for a command that only reads it (`results`,
/// `compare`, `report`): a missing one is refused, never created.
pub fn open_store(a: &OutputArgs) -> Result<Store> {
    Ok(Store::open_existing(&store_path(a)?)?)
}

/// Opens the results store for a command that records into it (`results import`),
/// creating it if absent.
pub fn open_store_to_record(a: &OutputArgs) -> Result<Store> {
    Ok(Store::open(&store_path_to_record(a)?)?)
}

/// A results store opened when first needed: an existing one is opened (and checked) when
/// the sink opens; a new one is created with the first record, so a command refused before
/// it measured anything leaves no store behind.
pub(super) struct LazyStore {
    path: std::path::PathBuf,
    store: std::cell::OnceCell<Store>,
}

impl LazyStore {
    pub(super) fn new(a: &OutputArgs) -> Result<LazyStore> {
        let lazy = LazyStore {
            path: store_path_to_record(a)?,
            store: std::cell::OnceCell::new(),
        };
        if lazy.path.exists() {
            lazy.get()?;
        }
        Ok(lazy)
    }

    pub(super) fn get(&self) -> Result<&Store> {
        if let Some(s) = self.store.get() {
            return Ok(s);
        }
        let opened = Store::open(&self.path)?;
        Ok(self.store.get_or_init(|| opened))
    }
}

impl Sink {
    /// Begins this command's run now (a suite does, so that a run killed before its first
    /// point can be resumed), or continues `resume`, an incomplete run of the store (which
    /// gains this command's tags).
    /// Returns the run, `None` under `--no-store`.
    pub fn begin_run(
        &mut self,
        command_line: &[String],
        resume: Option<RunId>,
    ) -> Result<Option<RunId>> {
        let Some(s) = &mut self.store else {
            return Ok(None);
        };
        let run = match resume {
            Some(run) => {
                s.store.get()?.add_tags(run, &s.tags)?;
                run
            }
            None => s.store.get()?.begin_run(command_line, &s.tags)?,
        };
        s.run = Some(run);
        Ok(Some(run))
    }

    /// Inside a suite: the records that follow belong to step `step` (0-based). Points a
    /// killed attempt of this step left in the run are deleted first, so the step is
    /// stored whole and once.
    pub fn begin_step(&mut self, step: usize) -> Result<()> {
        if let Some(s) = &mut self.store {
            if let Some(run) = s.run {
                s.store.get()?.restart_step(run, step)?;
            }
            s.step = Some(step);
        }
        Ok(())
    }

    /// Inside a suite: step `step` finished, every point of it stored.
    pub fn finish_step(&mut self, step: usize, name: &str) -> Result<()> {
        if let Some(StoreRun {
            store,
            run: Some(run),
            step: current,
            ..
        }) = &mut self.store
        {
            store.get()?.finish_step(*run, step, name)?;
            *current = None;
        }
        Ok(())
    }

    /// A record an earlier, interrupted attempt of this run stored (`suite --resume`): it
    /// goes to `-o` and `--json` as if measured now, and to the renderers, but not again
    /// into the store.
    pub fn replay(&mut self, r: &Record) -> Result<()> {
        if !self.store_only {
            let line = serde_json::to_string(r).context("serialising a record")?;
            if let Some((name, f)) = &mut self.file {
                f.write_line(&line)
                    .with_context(|| format!("writing {name}"))?;
            }
            if self.json {
                self.print_record(&line)?;
            }
        }
        self.records.push(r.clone());
        Ok(())
    }

    /// While on, records go into the store and `records` only (a suite's block records,
    /// which it shows merged).
    pub fn set_store_only(&mut self, on: bool) {
        self.store_only = on;
    }

    /// Deletes suite step `step`'s points and finished mark from the run.
    pub fn discard_step(&mut self, step: usize) -> Result<()> {
        if let Some(StoreRun {
            store,
            run: Some(run),
            ..
        }) = &self.store
        {
            store.get()?.restart_step(*run, step)?;
        }
        Ok(())
    }
}

impl pmscope_experiment::Output for Sink {
    fn human(&self) -> bool {
        Sink::human(self)
    }
    fn records(&self) -> &[Record] {
        Sink::records(self)
    }
    fn set_quiet(&mut self, quiet: bool) {
        Sink::set_quiet(self, quiet)
    }
    fn store(&self) -> Option<&Store> {
        Sink::store(self)
    }
    fn begin_run(
        &mut self,
        command_line: &[String],
        resume: Option<RunId>,
    ) -> Result<Option<RunId>> {
        Sink::begin_run(self, command_line, resume)
    }
    fn begin_step(&mut self, step: usize) -> Result<()> {
        Sink::begin_step(self, step)
    }
    fn finish_step(&mut self, step: usize, name: &str) -> Result<()> {
        Sink::finish_step(self, step, name)
    }
    fn replay(&mut self, r: &Record) -> Result<()> {
        Sink::replay(self, r)
    }
    fn set_store_only(&mut self, on: bool) {
        Sink::set_store_only(self, on)
    }
    fn discard_step(&mut self, step: usize) -> Result<()> {
        Sink::discard_step(self, step)
    }
    fn file(&self) -> Option<&std::path::Path> {
        self.output.as_deref()
    }
    fn set_file(&mut self, path: &std::path::Path) -> Result<()> {
        if self.output.is_some() {
            return Err(anyhow::anyhow!("the records already go to -o"));
        }
        if path == std::path::Path::new("-") {
            self.json = true;
        } else {
            let pending = PendingOutput::prepare(path, self.force)?;
            self.file = Some((path.display().to_string(), pending));
        }
        self.output = Some(path.to_path_buf());
        Ok(())
    }
    fn prepare_output(&self, flag: &'static str, path: &std::path::Path) -> Result<PendingOutput> {
        PendingOutput::prepare_for(flag, path, self.force)
    }
    fn keep_out_of_store(&mut self) {
        self.store = None;
    }
}
