//! The one door records come in by from outside this pmscope: a JSON Lines file
//! (`results import`, `report FILE.jsonl`) and a record stored in the results store
//! (`results show`, `export`, `report`, `compare`). A record of a newer schema than this
//! pmscope's, a line that is not a record, an empty file or one without records are
//! refused with one sentence naming where; nothing is imported from a file that holds any
//! of them.

use crate::error::StoreError;
use pmscope_core::record::{Record, SCHEMA_VERSION};
use std::path::Path;

/// Why one piece of text is not a record this pmscope can read.
#[derive(Debug, Clone, PartialEq)]
pub enum Unreadable {
    /// A record written by a newer pmscope (its `schema_version`).
    Newer(u64),
    /// Not a record: the parser's complaint.
    NotARecord(String),
}

/// Reads one record, refusing one of a newer schema before its fields are looked at (a
/// newer record may parse and mean something else).
pub fn parse_record(text: &str) -> Result<Record, Unreadable> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Unreadable::NotARecord(e.to_string()))?;
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    match version {
        Some(v) if v > u64::from(SCHEMA_VERSION) => return Err(Unreadable::Newer(v)),
        Some(0) => {
            return Err(Unreadable::NotARecord(
                "schema_version 0 is no pmscope schema".into(),
            ));
        }
        _ => {}
    }
    serde_json::from_value(value).map_err(|e| Unreadable::NotARecord(e.to_string()))
}

/// The text of a JSON Lines file: `-` is standard input, a gzip file (by its magic bytes,
/// whatever its name) is decompressed; a missing file, a directory and bytes that are not
/// text are refused in one sentence each.
fn read_text(path: &Path) -> Result<String, StoreError> {
    use std::io::Read;
    let io = |cause| StoreError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes).map_err(io)?;
    } else {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NoFile(path.to_path_buf()));
            }
            Ok(m) if m.is_dir() => return Err(StoreError::NotAFile(path.to_path_buf())),
            _ => {}
        }
        bytes = std::fs::read(path).map_err(io)?;
    }
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut plain)
            .map_err(|e| StoreError::NotText {
                path: path.to_path_buf(),
                why: format!("its gzip stream is broken ({e})"),
            })?;
        bytes = plain;
    }
    String::from_utf8(bytes).map_err(|_| StoreError::NotText {
        path: path.to_path_buf(),
        why: "it is not UTF-8 text".into(),
    })
}

/// Every record of the JSON Lines file `path` (as `-o` writes them; `-` for standard
/// input, plain or gzip), or the first reason it cannot be read: a missing file, a
/// directory, bytes that are not text, an empty file, one whose lines are all blank, a line
/// that is not a record or is a record of a newer schema.
pub fn read_jsonl(path: &Path) -> Result<Vec<Record>, StoreError> {
    let text = read_text(path)?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = parse_record(line).map_err(|why| match why {
            Unreadable::Newer(found) => StoreError::NewerRecord {
                place: format!("line {} of {}", i + 1, path.display()),
                found,
            },
            Unreadable::NotARecord(message) => StoreError::BadRecord {
                path: path.to_path_buf(),
                line: i + 1,
                message,
            },
        })?;
        records.push(record);
    }
    if records.is_empty() {
        return Err(StoreError::NoRecords(path.to_path_buf()));
    }
    Ok(records)
}

/// The records of a file cut into the runs they came from: a record starts a new run where
/// its command line differs from the one before's, or where its point (experiment, target,
/// metric and parameters) is already in the current run (a run measures each point once:
/// the same point again is a second run of the same command, as `cat a.jsonl b.jsonl`
/// makes).
pub fn split_runs(records: Vec<Record>) -> Vec<Vec<Record>> {
    let mut runs: Vec<Vec<Record>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in records {
        let key = pmscope_core::blocks::point_key(&r, true);
        let new_run = match runs.last().and_then(|run| run.last()) {
            None => true,
            Some(prev) => {
                prev.command_line != r.command_line
                    || key.as_ref().is_some_and(|k| seen.contains(k))
            }
        };
        if new_run {
            runs.push(Vec::new());
            seen.clear();
        }
        if let Some(k) = key {
            seen.insert(k);
        }
        runs.last_mut().expect("a run was pushed").push(r);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(version: u32) -> String {
        let r = Record::new("verify", vec!["pmscope".into()], Default::default());
        let mut v = serde_json::to_value(&r).unwrap();
        v["schema_version"] = version.into();
        v.to_string()
    }

    #[test]
    fn what_cannot_be_read_is_refused_with_its_place() {
        let d = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let good = write("good.jsonl", &format!("{}\n\n", line(SCHEMA_VERSION)));
        assert_eq!(read_jsonl(&good).unwrap().len(), 1);
        for (name, text, wanted) in [
            ("empty.jsonl", String::new(), "holds no records"),
            ("blank.jsonl", "\n  \n".to_string(), "holds no records"),
            (
                "future.jsonl",
                format!("{}\n{}\n", line(SCHEMA_VERSION), line(SCHEMA_VERSION + 1)),
                "line 2 of",
            ),
            ("text.jsonl", "hello\n".to_string(), "line 1 of"),
            (
                "object.jsonl",
                "{}\n".to_string(),
                "is not a pmscope record",
            ),
            ("zero.jsonl", line(0), "schema_version 0"),
        ] {
            let p = write(name, &text);
            let e = read_jsonl(&p).unwrap_err();
            assert!(e.is_usage(), "{name}: {e}");
            assert!(e.to_string().contains(wanted), "{name}: {e}");
        }
        let e = read_jsonl(&d.path().join("future.jsonl")).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "schema version {}, newer than",
                SCHEMA_VERSION + 1
            )),
            "{e}"
        );
        // A file the user named that is not there is the request's fault (exit 2), as a
        // missing genome is for `kmer count`.
        let e = read_jsonl(&d.path().join("missing.jsonl")).unwrap_err();
        assert!(
            e.is_usage() && e.to_string().contains("does not exist"),
            "{e}"
        );
    }
}
