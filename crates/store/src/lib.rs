//! The results store: every record a measuring command produces, kept in one SQLite
//! database as runs. Each point is committed in its own transaction as it is produced,
//! so an interrupted run leaves every finished point behind and the run marked
//! incomplete. The full record JSON is stored alongside a few indexed columns, so a later
//! change to the record's payload does not break the store. Records from outside (a JSON
//! Lines file) and from the store itself pass one validator, [`import`].

pub mod compare;
mod error;
mod export;
pub mod import;
mod store;

pub use compare::{Comparison, Direction, PointComparison, compare_records};
pub use error::StoreError;
pub use export::{to_csv, to_jsonl};
pub use import::read_jsonl;
pub use store::{Host, Run, RunId, STORE_SCHEMA_VERSION, Store, default_path};
