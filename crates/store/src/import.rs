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

/// Every record of the JSON Lines file `path` (as `-o` writes them), or the first reason
/// it cannot be read: a missing file, an empty one, one whose lines are all blank, a line
/// that is not a record or is a record of a newer schema.
pub fn read_jsonl(path: &Path) -> Result<Vec<Record>, StoreError> {
    let text = std::fs::read_to_string(path).map_err(|cause| StoreError::Io {
        path: path.to_path_buf(),
        cause,
    })?;
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
        assert!(
            !read_jsonl(&d.path().join("missing.jsonl"))
                .unwrap_err()
                .is_usage()
        );
    }
}
