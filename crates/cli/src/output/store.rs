//! The sink's results store (opened when first needed) and the sink as experiments see it
//! ([`pmscope_experiment::Output`]).

use super::Sink;
use crate::args::OutputArgs;
use anyhow::Result;
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

/// Where the results store is: `--results`, else `$PMSCOPE_RESULTS`, else the XDG default.
/// A `--results` path passes the one path resolver (its directory must exist, no dangling
/// link, no trailing slash); the default locations' directories are made when a command
/// records.
fn store_path(a: &OutputArgs) -> Result<std::path::PathBuf> {
    if let Some(p) = &a.results {
        pmscope_sys::path::look(p).map_err(|e| crate::error::usage(format!("--results {e}")))?;
        return Ok(p.clone());
    }
    pmscope_store::default_path().ok_or_else(|| {
        crate::error::usage(
            "no results store location: set $HOME or $PMSCOPE_RESULTS, or pass --results PATH",
        )
    })
}

/// Opens the existing results store for a command that only reads it (`results`,
/// `compare`, `report`): a missing one is refused, never created.
pub fn open_store(a: &OutputArgs) -> Result<Store> {
    Ok(Store::open_existing(&store_path(a)?)?)
}

/// Opens the results store for a command that records into it (`results import`),
/// creating it if absent.
pub fn open_store_to_record(a: &OutputArgs) -> Result<Store> {
    Ok(Store::open(&store_path(a)?)?)
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
            path: store_path(a)?,
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
