//! Opening, creating and migrating the database; runs and their points.

use crate::error::StoreError;
use pmscope_core::record::Record;
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Layout version of the database, kept in `PRAGMA user_version`. Version 2 added the
/// steps of suite runs (`run_steps`, `points.step`), so `pmscope suite --resume` knows
/// which steps finished.
pub const STORE_SCHEMA_VERSION: i64 = 2;
/// `PRAGMA application_id` of a pmscope store ("PMSC"): tells our file from other SQLite files.
const APPLICATION_ID: i64 = 0x504D_5343;
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// A run's id.
pub type RunId = i64;

/// The machine a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Host {
    /// Host name.
    pub hostname: String,
    /// CPU brand string.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// `MemTotal` in bytes (0 if unknown).
    pub memory_bytes: u64,
    /// NUMA nodes with memory or CPUs.
    pub numa_nodes: usize,
    /// The pmscope version.
    pub pmscope_version: String,
}

impl Host {
    /// The fingerprint of the machine that wrote `record`.
    pub fn of_record(record: &Record) -> Host {
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .map_or(0, |kib| kib * 1024);
        Host {
            hostname: record.system.hostname.clone(),
            cpu_model: record.system.cpu_model.clone(),
            kernel: record.system.kernel.clone(),
            memory_bytes,
            numa_nodes: record.system.numa_nodes,
            pmscope_version: record.pmscope_version.clone(),
        }
    }
}

/// One run as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its id.
    pub id: RunId,
    /// Milliseconds since the epoch when it started.
    pub started_ms: i64,
    /// When it was marked complete, if it was.
    pub ended_ms: Option<i64>,
    /// The command line.
    pub command_line: Vec<String>,
    /// Its `--tag` values.
    pub tags: Vec<String>,
    /// The machine, once a point was stored.
    pub host: Option<Host>,
    /// Whether it ended normally.
    pub complete: bool,
    /// Points stored.
    pub points: i64,
}

/// An open results store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// `--results` default: `$PMSCOPE_RESULTS`, else `$XDG_DATA_HOME/pmscope/results.sqlite`,
/// else `~/.local/share/pmscope/results.sqlite`. A relative `XDG_DATA_HOME` is ignored, as
/// the XDG Base Directory specification says (it would put the store under whatever
/// directory the command ran in).
pub fn default_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PMSCOPE_RESULTS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|p| Path::new(p).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(data.join("pmscope").join("results.sqlite"))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Creates a complete, empty store at `path` unless a file is there by then.
fn create_whole(path: &Path) -> Result<(), StoreError> {
    let io = |cause| StoreError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results.sqlite".into());
    let temp = path.with_file_name(format!(".{name}.pmscope-{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    {
        let conn = Connection::open_with_flags(
            &temp,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let store = Store {
            conn,
            path: temp.clone(),
        };
        store.migrate()?;
        // Back to a single file before it takes its name (no -wal/-shm beside the temp).
        store.conn.pragma_update(None, "journal_mode", "DELETE")?;
    }
    let linked = std::fs::hard_link(&temp, path);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

impl Store {
    /// Opens the store at `path`, creating it (and its directory) if absent. A file that
    /// is not a pmscope store, or one from a newer pmscope, is refused and not touched.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let io = |cause| StoreError::Io {
            path: path.to_path_buf(),
            cause,
        };
        let existed = match std::fs::metadata(path) {
            Ok(meta) => {
                if !meta.is_file() || meta.len() < 100 {
                    return Err(StoreError::NotAStore(path.to_path_buf()));
                }
                let mut head = [0u8; 16];
                use std::io::Read;
                std::fs::File::open(path)
                    .and_then(|mut f| f.read_exact(&mut head))
                    .map_err(io)?;
                if &head != SQLITE_MAGIC {
                    return Err(StoreError::NotAStore(path.to_path_buf()));
                }
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
                // A new store appears whole: built beside its name and linked into place,
                // so another pmscope opening the same path at that moment never sees a
                // half-made file (it would refuse it as foreign); if one appeared meanwhile,
                // that one is used.
                create_whole(path)?;
                true
            }
            Err(e) => return Err(io(e)),
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        debug_assert!(existed);
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        if existed {
            // Read-only checks first: a foreign or newer file must stay byte-for-byte intact.
            let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
            let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let tables: i64 =
                conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            if app != APPLICATION_ID && !(app == 0 && version == 0 && tables == 0) {
                return Err(StoreError::NotAStore(path.to_path_buf()));
            }
            if version > STORE_SCHEMA_VERSION {
                return Err(StoreError::TooNew {
                    path: path.to_path_buf(),
                    found: version,
                    supported: STORE_SCHEMA_VERSION,
                });
            }
        }
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Opens the existing store at `path` (as [`Store::open`]), never creating one: what
    /// commands that only read the store use, so a mistyped `--results` leaves nothing behind.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::Missing(path.to_path_buf()))
            }
            _ => Store::open(path),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version >= STORE_SCHEMA_VERSION {
            return Ok(());
        }
        // IMMEDIATE: two pmscope processes opening an old store at once migrate it once;
        // the second waits for the first and then finds the work done.
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version < 1 {
            tx.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID};
                 CREATE TABLE runs (
                     id INTEGER PRIMARY KEY,
                     started_ms INTEGER NOT NULL,
                     ended_ms INTEGER,
                     command_line TEXT NOT NULL,
                     host TEXT,
                     complete INTEGER NOT NULL DEFAULT 0);
                 CREATE TABLE run_tags (
                     run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                     tag TEXT NOT NULL);
                 CREATE INDEX run_tags_tag ON run_tags(tag);
                 CREATE TABLE points (
                     id INTEGER PRIMARY KEY,
                     run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                     experiment TEXT NOT NULL,
                     target_spec TEXT,
                     metric TEXT,
                     p50 REAL,
                     record TEXT NOT NULL);
                 CREATE INDEX points_run ON points(run_id);
                 CREATE INDEX points_key ON points(experiment, target_spec, metric);
                 PRAGMA user_version = 1;"
            ))?;
        }
        if version < 2 {
            tx.execute_batch(
                "ALTER TABLE points ADD COLUMN step INTEGER;
                 CREATE TABLE run_steps (
                     run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                     step INTEGER NOT NULL,
                     name TEXT NOT NULL,
                     ended_ms INTEGER NOT NULL,
                     PRIMARY KEY (run_id, step));
                 PRAGMA user_version = 2;",
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Starts a run (committed at once, incomplete until [`Store::finish_run`]).
    pub fn begin_run(&self, command_line: &[String], tags: &[String]) -> Result<RunId, StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "INSERT INTO runs (started_ms, command_line) VALUES (?1, ?2)",
            params![now_ms(), serde_json::to_string(command_line)?],
        )?;
        let id = tx.last_insert_rowid();
        for tag in tags {
            tx.execute(
                "INSERT INTO run_tags (run_id, tag) VALUES (?1, ?2)",
                params![id, tag],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Adds `tags` to `run` (those it has already are not repeated).
    pub fn add_tags(&self, run: RunId, tags: &[String]) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        for tag in tags {
            tx.execute(
                "INSERT INTO run_tags (run_id, tag) SELECT ?1, ?2
                 WHERE NOT EXISTS (SELECT 1 FROM run_tags WHERE run_id = ?1 AND tag = ?2)",
                params![run, tag],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores one point of `run` in its own transaction; the first point sets the run's
    /// host fingerprint.
    pub fn add_record(&self, run: RunId, record: &Record) -> Result<(), StoreError> {
        self.add_step_record(run, None, record)
    }

    /// Stores one point of `run` made by suite step `step` (0-based), in its own
    /// transaction, like [`Store::add_record`].
    pub fn add_step_record(
        &self,
        run: RunId,
        step: Option<usize>,
        record: &Record,
    ) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        Self::insert(&tx, run, step, record)?;
        tx.execute(
            "UPDATE runs SET host = ?2 WHERE id = ?1 AND host IS NULL",
            params![run, serde_json::to_string(&Host::of_record(record))?],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn insert(
        conn: &Connection,
        run: RunId,
        step: Option<usize>,
        record: &Record,
    ) -> Result<(), StoreError> {
        conn.execute(
            "INSERT INTO points (run_id, experiment, target_spec, metric, p50, record, step)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                run,
                record.experiment,
                record.target.as_ref().map(|t| t.spec.clone()),
                record.metric,
                record.summary.as_ref().map(|s| s.p50),
                serde_json::to_string(record)?,
                step.map(|s| s as i64)
            ],
        )?;
        Ok(())
    }

    /// Starts suite step `step` of `run` again: the points an interrupted attempt left
    /// are deleted (the step is re-run whole), so a resumed run never holds a point twice.
    /// Returns how many were deleted.
    pub fn restart_step(&self, run: RunId, step: usize) -> Result<usize, StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "DELETE FROM run_steps WHERE run_id = ?1 AND step = ?2",
            params![run, step as i64],
        )?;
        let n = tx.execute(
            "DELETE FROM points WHERE run_id = ?1 AND step = ?2",
            params![run, step as i64],
        )?;
        tx.commit()?;
        Ok(n)
    }

    /// Marks suite step `step` (named `name`) of `run` finished: every point it made is stored.
    pub fn finish_step(&self, run: RunId, step: usize, name: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT OR REPLACE INTO run_steps (run_id, step, name, ended_ms) VALUES (?1, ?2, ?3, ?4)",
            params![run, step as i64, name, now_ms()],
        )?;
        Ok(())
    }

    /// The finished suite steps of `run` (index and name), in order.
    pub fn finished_steps(&self, run: RunId) -> Result<Vec<(usize, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT step, name FROM run_steps WHERE run_id = ?1 ORDER BY step")?;
        let steps = stmt
            .query_map([run], |r| Ok((r.get::<_, i64>(0)? as usize, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(steps)
    }

    /// The records of `run` with the suite step that made each (`None` outside suites),
    /// in the order they were stored.
    pub fn step_records(&self, run: RunId) -> Result<Vec<(Option<usize>, Record)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT step, record FROM points WHERE run_id = ?1 ORDER BY id")?;
        let rows: Vec<(Option<i64>, String)> = stmt
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        rows.into_iter()
            .map(|(step, t)| Ok((step.map(|s| s as usize), serde_json::from_str(&t)?)))
            .collect()
    }

    /// Marks `run` complete.
    pub fn finish_run(&self, run: RunId) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE runs SET complete = 1, ended_ms = ?2 WHERE id = ?1",
            params![run, now_ms()],
        )?;
        Ok(())
    }

    /// Adds the records of a JSON Lines file (as written by `-o`) as complete runs, one per
    /// run they came from ([`crate::import::split_runs`]), each stored whole (one
    /// transaction per run): a file [`crate::import::read_jsonl`] refuses, or one whose runs
    /// the store already holds, stores nothing.
    pub fn import_jsonl(&self, file: &Path, tags: &[String]) -> Result<Vec<RunId>, StoreError> {
        self.import_runs(file, crate::import::read_jsonl(file)?, tags)
    }

    /// Adds `records` (read from `file` by [`crate::import::read_jsonl`]) as complete runs,
    /// one per run they came from; refused, with nothing stored, when the store already
    /// holds one of those runs.
    pub fn import_runs(
        &self,
        file: &Path,
        records: Vec<Record>,
        tags: &[String],
    ) -> Result<Vec<RunId>, StoreError> {
        let runs = crate::import::split_runs(records);
        for run in &runs {
            if let Some(id) = self.holding(run)? {
                return Err(StoreError::AlreadyImported {
                    path: file.to_path_buf(),
                    run: id,
                });
            }
        }
        runs.iter()
            .map(|run| self.import_records(run, tags))
            .collect()
    }

    /// The stored run that holds exactly `records` (an import of the same file, or of an
    /// export of that run), if one does: same start, command line and records.
    pub fn holding(&self, records: &[Record]) -> Result<Option<RunId>, StoreError> {
        let Some(first) = records.first() else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM runs WHERE started_ms = ?1 AND command_line = ?2")?;
        let candidates: Vec<RunId> = stmt
            .query_map(
                params![
                    first.timestamp_ms as i64,
                    serde_json::to_string(&first.command_line)?
                ],
                |r| r.get(0),
            )?
            .collect::<Result<_, _>>()?;
        // As stored: serde_json may read the last digit of a float differently from the
        // file's text, and a stored record is the text of the parsed one.
        let as_stored = records
            .iter()
            .map(|r| serde_json::from_str::<Record>(&serde_json::to_string(r)?))
            .collect::<Result<Vec<Record>, _>>()?;
        for id in candidates {
            if self.records(id)? == as_stored {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// Adds `records` (read by [`crate::import::read_jsonl`]) as one complete run.
    pub fn import_records(&self, records: &[Record], tags: &[String]) -> Result<RunId, StoreError> {
        let command_line = records
            .first()
            .map(|r| r.command_line.clone())
            .unwrap_or_default();
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "INSERT INTO runs (started_ms, ended_ms, command_line, host, complete)
             VALUES (?1, ?1, ?2, ?3, 1)",
            params![
                records.first().map_or(now_ms(), |r| r.timestamp_ms as i64),
                serde_json::to_string(&command_line)?,
                records
                    .first()
                    .map(|r| serde_json::to_string(&Host::of_record(r)))
                    .transpose()?
            ],
        )?;
        let id = tx.last_insert_rowid();
        for tag in tags {
            tx.execute(
                "INSERT INTO run_tags (run_id, tag) VALUES (?1, ?2)",
                params![id, tag],
            )?;
        }
        for record in records {
            Self::insert(&tx, id, None, record)?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Runs, oldest first, optionally only those tagged `tag`.
    pub fn runs(&self, tag: Option<&str>) -> Result<Vec<Run>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, started_ms, ended_ms, command_line, host, complete,
                    (SELECT count(*) FROM points p WHERE p.run_id = runs.id)
             FROM runs
             WHERE ?1 IS NULL OR id IN (SELECT run_id FROM run_tags WHERE tag = ?1)
             ORDER BY id",
        )?;
        let rows = stmt.query_map(params![tag], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, bool>(5)?,
                r.get::<_, i64>(6)?,
            ))
        })?;
        let mut runs = Vec::new();
        for row in rows {
            let (id, started_ms, ended_ms, cmd, host, complete, points) = row?;
            runs.push(Run {
                id,
                started_ms,
                ended_ms,
                command_line: serde_json::from_str(&cmd)?,
                tags: self.tags(id)?,
                host: host.map(|h| serde_json::from_str(&h)).transpose()?,
                complete,
                points,
            });
        }
        Ok(runs)
    }

    fn tags(&self, run: RunId) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT tag FROM run_tags WHERE run_id = ?1 ORDER BY rowid")?;
        let tags = stmt
            .query_map([run], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(tags)
    }

    /// One run.
    pub fn run(&self, id: RunId) -> Result<Run, StoreError> {
        self.runs(None)?
            .into_iter()
            .find(|r| r.id == id)
            .ok_or_else(|| StoreError::UnknownRun(id.to_string()))
    }

    /// Resolves a run selector: an id, `latest`, `latest~N`, or a tag (its newest run).
    pub fn resolve(&self, selector: &str) -> Result<RunId, StoreError> {
        let unknown = || StoreError::UnknownRun(selector.to_string());
        let back = if selector == "latest" {
            Some(0)
        } else if let Some(n) = selector.strip_prefix("latest~") {
            Some(n.parse::<i64>().map_err(|_| unknown())?)
        } else {
            None
        };
        let found: Option<i64> = if let Some(n) = back {
            self.conn
                .query_row(
                    "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1",
                    [n],
                    |r| r.get(0),
                )
                .optional()?
        } else if let Ok(id) = selector.parse::<i64>() {
            self.conn
                .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()?
        } else {
            self.conn
                .query_row(
                    "SELECT max(run_id) FROM run_tags WHERE tag = ?1",
                    [selector],
                    |r| r.get(0),
                )
                .optional()?
                .flatten()
        };
        found.ok_or_else(unknown)
    }

    /// The runs a selector names for a comparison side: an id, `latest` or `latest~N` name
    /// one; a tag names every run that carries it, oldest first.
    pub fn resolve_all(&self, selector: &str) -> Result<Vec<RunId>, StoreError> {
        let tagged: Vec<i64> = if selector.parse::<i64>().is_ok() || selector.starts_with("latest")
        {
            Vec::new()
        } else {
            let mut stmt = self
                .conn
                .prepare("SELECT run_id FROM run_tags WHERE tag = ?1 ORDER BY run_id")?;
            stmt.query_map([selector], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        if tagged.is_empty() {
            return Ok(vec![self.resolve(selector)?]);
        }
        Ok(tagged)
    }

    /// The records of `run`, in the order they were stored.
    pub fn records(&self, run: RunId) -> Result<Vec<Record>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT record FROM points WHERE run_id = ?1 ORDER BY id")?;
        let texts: Vec<String> = stmt
            .query_map([run], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        texts
            .iter()
            .map(|t| {
                crate::import::parse_record(t).map_err(|why| match why {
                    crate::import::Unreadable::Newer(found) => StoreError::NewerRecord {
                        place: format!("a point of run {run}"),
                        found,
                    },
                    crate::import::Unreadable::NotARecord(m) => {
                        StoreError::Json(serde_json::Error::io(std::io::Error::other(m)))
                    }
                })
            })
            .collect()
    }

    /// Deletes `run` and its points.
    pub fn remove_run(&self, run: RunId) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute("DELETE FROM points WHERE run_id = ?1", [run])?;
        tx.execute("DELETE FROM run_tags WHERE run_id = ?1", [run])?;
        tx.execute("DELETE FROM run_steps WHERE run_id = ?1", [run])?;
        let n = tx.execute("DELETE FROM runs WHERE id = ?1", [run])?;
        if n == 0 {
            return Err(StoreError::UnknownRun(run.to_string()));
        }
        tx.commit()?;
        Ok(())
    }

    /// `PRAGMA integrity_check` says `ok`.
    pub fn integrity_ok(&self) -> Result<bool, StoreError> {
        let s: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(s == "ok")
    }
}
