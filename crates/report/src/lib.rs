//! The offline report: figures drawn from pmscope records (SVG through plotters), the
//! observations derived from them, and the published reference profiles they are held
//! against. Everything here reads `pmscope_core::record::Record`s through the keys declared
//! in `pmscope_core::vocab`, never a command's own structures, so runs read back from
//! JSON Lines files or a results store render alike.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod analysis;
mod data;
pub mod figures;
mod html;
mod markup;
mod noise;
pub mod observations;
mod plot;
pub mod reference;
mod select;
mod trust;
mod warnings;

pub use figures::{FIGURES, Figure, Panel};
pub use html::{html, svg_files};
pub use observations::{Observation, Verdict, observations, plateau_ends};
pub use plot::MAX_CURVES;
pub use reference::Reference;

use pmscope_core::record::Record;

/// One run: the records of one invocation (or one suite) on one machine, with the label
/// the report shows above its figures (e.g. host name and time).
#[derive(Debug, Clone)]
pub struct Run {
    /// What the report calls this run.
    pub label: String,
    /// The run's records, in the order they were produced.
    pub records: Vec<Record>,
}

/// A cache level of the measuring machine, marked on the latency figure.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheLevel {
    /// Its name, e.g. `L1d`, `L2`, `L3`.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// What the report adds to the records.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The report's title (default: "pmscope report").
    pub title: Option<String>,
    /// Cache sizes to mark on the latency figure (records do not carry them; the CLI fills
    /// them from `pmscope info`'s facts). Empty: no cache marks.
    pub caches: Vec<CacheLevel>,
    /// A published profile overlaid where a figure shows a matching quantity.
    pub reference: Option<Reference>,
}
