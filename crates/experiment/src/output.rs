//! Where an experiment's records go. The binary's sink (table or JSON on stdout, `-o FILE`,
//! the results store) implements [`Output`]; an experiment only emits records and asks
//! whether a human is watching.

use crate::atomic_file::PendingOutput;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_runner::harness::RecordSink;
use pmscope_store::{RunId, Store};
use std::path::Path;

/// The destination of records, as experiments and suites see it.
pub trait Output: RecordSink {
    /// Whether tables and progress bars are shown (not under `--json`, not inside a suite).
    fn human(&self) -> bool;
    /// The records emitted so far (what the tables are drawn from).
    fn records(&self) -> &[Record];
    /// Sets whether experiments stay quiet (a suite draws its own progress and summary).
    fn set_quiet(&mut self, quiet: bool);
    /// The results store, unless `--no-store`.
    fn store(&self) -> Option<&Store>;
    /// Begins the run in the store now, or continues `resume`; `None` under `--no-store`.
    fn begin_run(
        &mut self,
        command_line: &[String],
        resume: Option<RunId>,
    ) -> Result<Option<RunId>>;
    /// The records that follow belong to suite step `step` (its earlier partial points are
    /// deleted first).
    fn begin_step(&mut self, step: usize) -> Result<()>;
    /// Suite step `step` finished, every point of it stored.
    fn finish_step(&mut self, step: usize, name: &str) -> Result<()>;
    /// A record an interrupted attempt stored, passed on as if measured now (not stored
    /// again).
    fn replay(&mut self, r: &Record) -> Result<()>;

    /// While on, records go into the results store and [`Output::records`] only, not to
    /// `-o`, `--json` or the terminal: a suite's block records, which it shows merged.
    fn set_store_only(&mut self, on: bool) {
        let _ = on;
    }

    /// Deletes suite step `step`'s points and its finished mark from the run (a round's
    /// block records, once their merged points are stored).
    fn discard_step(&mut self, step: usize) -> Result<()> {
        let _ = step;
        Ok(())
    }

    // For an experiment with outputs of its own (`kmer` writes k-mers to `--kmers`): the
    // record file is the binary's, so the experiment asks where it goes.

    /// Where `-o` sends the records (`-`: stdout), if it was given.
    fn file(&self) -> Option<&Path> {
        None
    }

    /// Sends the records to `path` as `-o path` would (`kmer --record`, the old name of
    /// `-o`): prepared now, so an existing file is refused at once (unless `--force`).
    fn set_file(&mut self, path: &Path) -> Result<()> {
        Err(anyhow::anyhow!(
            "this output cannot send records to {}",
            path.display()
        ))
    }

    /// Prepares an output of the experiment's own (`kmer --kmers FILE`) under the rules of
    /// `-o`: refused at once if the file exists (unless `--force`), in place only when
    /// committed.
    fn prepare_output(&self, flag: &'static str, path: &Path) -> Result<PendingOutput> {
        PendingOutput::prepare_for(flag, path, false)
    }

    /// The records that follow are not measurements (a data set written, a pool checked):
    /// they go to the terminal and `-o`, not into the results store.
    fn keep_out_of_store(&mut self) {}
}
