//! Where records go: JSON Lines on stdout with `--json`, a human table otherwise, and
//! JSON Lines into `-o FILE` (created exclusively unless `--force`). Warnings live inside
//! the records; in table mode the sink renders each distinct one to stderr when the first
//! record carrying it arrives, so stderr never holds a finding the records lack.

pub mod progress;
pub mod table;

use crate::args::OutputArgs;
use crate::error::usage;
use anyhow::{Context as _, Result};
use pmscope_core::record::Record;
use pmscope_core::warning::Warning;
use std::fs::File;
use std::io::{BufWriter, Write};

/// The destination of a command's records.
pub struct Sink {
    json: bool,
    file: Option<(String, BufWriter<File>)>,
    printed: Vec<String>,
    records: Vec<Record>,
}

impl Sink {
    /// Opens `-o FILE` now, before anything is measured, so a clobber is refused at once.
    pub fn open(a: &OutputArgs) -> Result<Sink> {
        let file = match &a.output {
            None => None,
            Some(path) => {
                let mut o = std::fs::OpenOptions::new();
                o.write(true);
                if a.force {
                    o.create(true).truncate(true);
                } else {
                    o.create_new(true);
                }
                let f = o.open(path).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        usage(format!(
                            "{} already exists; pass --force to overwrite it or choose another -o file",
                            path.display()
                        ))
                    } else {
                        anyhow::anyhow!("cannot create {}: {e}", path.display())
                    }
                })?;
                Some((path.display().to_string(), BufWriter::new(f)))
            }
        };
        Ok(Sink {
            json: a.json,
            file,
            printed: Vec::new(),
            records: Vec::new(),
        })
    }

    /// Whether stdout takes JSON Lines.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Emits one record: to the file (flushed at once, so an interrupted sweep keeps its
    /// finished points) and, with `--json`, to stdout.
    pub fn emit(&mut self, r: &Record) -> Result<()> {
        let line = serde_json::to_string(r).context("serialising a record")?;
        if let Some((name, f)) = &mut self.file {
            writeln!(f, "{line}")
                .and_then(|_| f.flush())
                .with_context(|| format!("writing {name}"))?;
        }
        if self.json {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}").context("writing stdout")?;
        } else {
            self.print_warnings(&r.warnings);
        }
        self.records.push(r.clone());
        Ok(())
    }

    /// Emits a JSON object that is not a measurement (`info`'s inventory, `list`'s rows):
    /// like a record, to `-o` and, with `--json`, to stdout.
    pub fn emit_value(&mut self, v: &impl serde::Serialize) -> Result<()> {
        let line = serde_json::to_string(v).context("serialising")?;
        if let Some((name, f)) = &mut self.file {
            writeln!(f, "{line}")
                .and_then(|_| f.flush())
                .with_context(|| format!("writing {name}"))?;
        }
        if self.json {
            writeln!(std::io::stdout().lock(), "{line}").context("writing stdout")?;
        }
        Ok(())
    }

    /// The records emitted so far: what the human renderers draw their tables from.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The records of `experiment` emitted so far.
    pub fn of<'a>(&'a self, experiment: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
        self.records
            .iter()
            .filter(move |r| r.experiment == experiment)
    }

    /// Renders warnings once each (table mode), to stderr. Only for output that is not a
    /// record (`info`); a record's warnings are rendered when it is emitted.
    pub fn print_warnings(&mut self, warnings: &[Warning]) {
        for w in warnings {
            let key = format!("{}{}", w.code, w.message);
            if self.printed.contains(&key) {
                continue;
            }
            self.printed.push(key);
            eprintln!("warning: {}\n         remedy: {}", w.message, w.remedy);
        }
    }

    /// Prints human text (table mode only).
    pub fn text(&self, s: &str) {
        if !self.json {
            println!("{s}");
        }
    }
}

impl pmscope_runner::harness::RecordSink for Sink {
    fn emit(&mut self, r: &Record) -> Result<()> {
        Sink::emit(self, r)
    }
}
