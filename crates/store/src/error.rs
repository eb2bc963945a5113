//! Why the store, or a file of records, cannot be used: [`StoreError`], each message one
//! sentence, with its class (the user's request or the system).

use std::path::PathBuf;

/// Why the store cannot be used; each message is one sentence.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not a pmscope results store.
    #[error("{0} is not a pmscope results store; pass another --results PATH")]
    NotAStore(PathBuf),
    /// The store was written by a newer pmscope.
    #[error(
        "{path} has store version {found}, newer than this pmscope's {supported}; use a newer pmscope"
    )]
    TooNew {
        /// The database.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// Ours.
        supported: i64,
    },
    /// No run matches a selector.
    #[error(
        "no run matches '{0}' (try an id, latest, latest~N or a tag; see `pmscope results list`)"
    )]
    UnknownRun(String),
    /// A file or directory could not be used.
    #[error("cannot use {path}: {cause}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        /// (Not the error's `source`: the message already says it, once.)
        cause: std::io::Error,
    },
    /// A JSON Lines line is not a record.
    #[error("line {line} of {path} is not a pmscope record: {message}")]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The parser's complaint.
        message: String,
    },
    /// A record of a newer schema than this pmscope reads.
    #[error(
        "{place} is a record of schema version {found}, newer than this pmscope's {supported}; use a newer pmscope",
        supported = pmscope_core::record::SCHEMA_VERSION
    )]
    NewerRecord {
        /// Where it is: `line N of FILE`, `a point of run N`.
        place: String,
        /// Its `schema_version`.
        found: u64,
    },
    /// A file named to be read does not exist.
    #[error("{0} does not exist; pass a JSON Lines file written with -o (or - for standard input)")]
    NoFile(PathBuf),
    /// A directory where a file of records was expected.
    #[error("{0} is a directory; pass a JSON Lines file written with -o")]
    NotAFile(PathBuf),
    /// A file whose bytes are not text (after gzip, if it was gzipped).
    #[error(
        "{path} cannot be read as records: {why}; pass a JSON Lines file written with -o (plain or gzip)"
    )]
    NotText {
        /// The file.
        path: PathBuf,
        /// What is wrong with its bytes.
        why: String,
    },
    /// The records of a file are already in the store.
    #[error(
        "{path} is already in the store as run {run}; nothing was imported (`pmscope results rm {run}` first to import it again)"
    )]
    AlreadyImported {
        /// The file.
        path: PathBuf,
        /// The stored run that holds the same records.
        run: i64,
    },
    /// A JSON Lines file without a single record.
    #[error("{0} holds no records; pass a file written with -o")]
    NoRecords(PathBuf),
    /// A read-only command named a store that does not exist (only commands that record
    /// create one).
    #[error(
        "no results store at {0}: nothing was recorded there; check --results (or $PMSCOPE_RESULTS), or measure something first"
    )]
    Missing(PathBuf),
    /// SQLite failed.
    #[error("results store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored record no longer parses.
    #[error("a stored record does not parse: {0}")]
    Json(#[from] serde_json::Error),
}

impl StoreError {
    /// Whether the user's request is at fault (exit code 2) rather than the system.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            StoreError::NotAStore(_)
                | StoreError::TooNew { .. }
                | StoreError::UnknownRun(_)
                | StoreError::BadRecord { .. }
                | StoreError::NewerRecord { .. }
                | StoreError::NoRecords(_)
                | StoreError::NoFile(_)
                | StoreError::NotAFile(_)
                | StoreError::NotText { .. }
                | StoreError::AlreadyImported { .. }
                | StoreError::Missing(_)
        )
    }
}
