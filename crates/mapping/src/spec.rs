//! The target-spec grammar, parsed in one place, with `Display` giving the canonical form
//! (property-tested to round-trip).

use crate::backing::{Backing, MapOptions};
use crate::error::{SpecError, TargetError};
use crate::heap::HeapPlan;
use crate::kinds::{self, Kind, PrepareCtx};
use crate::room::TargetRoom;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

/// A parsed target spec: a kind with its argument, and where to place it.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    kind: Arc<dyn Kind>,
    /// NUMA node to bind to before the first touch.
    pub node: Option<u32>,
}

impl TargetSpec {
    /// The kind's name in the grammar (`dram`, `file`, ...).
    pub fn kind_name(&self) -> &'static str {
        self.kind.entry().name
    }

    /// Refuses what can be told wrong before anything is mapped (a `file:` path that is
    /// neither a directory nor a new file in one, a devdax target without
    /// `--destroy-data`, ...), so a bad second target never costs the first one's run.
    pub fn preflight(&self, opts: &MapOptions) -> Result<(), TargetError> {
        self.kind.preflight(opts)
    }

    /// The existing directory a `file:DIR` target names (where `fs` and `fio` do their file
    /// I/O, beside the file the target maps); `None` for other kinds and for `file:` paths
    /// that name a new file.
    pub fn directory(&self) -> Option<&std::path::Path> {
        self.kind.directory()
    }

    /// The memory the target maps, apart from its page policy: `dram,node=1` for
    /// `dram:thp,node=1` and `file:/mnt/pmem` for `file:/mnt/pmem,page=4k`, so targets that
    /// differ only in page size can be set side by side; the whole spec for a device (its
    /// page size is its alignment).
    pub fn memory(&self) -> String {
        let memory = self.kind.memory();
        match self.node {
            Some(n) => format!("{memory},node={n}"),
            None => memory,
        }
    }

    /// The heap recipe of this target, after its preflight: refuses, before any program
    /// starts, what it refuses before mapping (a `file:` path that exists as a file, devdax
    /// without `--destroy-data`, ...) and what cannot hold a heap at all.
    pub fn heap_plan(&self, opts: &MapOptions) -> Result<HeapPlan, TargetError> {
        self.preflight(opts)?;
        let (backing, expected_page_bytes) = self.kind.heap()?;
        Ok(HeapPlan {
            backing,
            node: self.node,
            expected_page_bytes,
        })
    }

    /// What this target's kind says bounds a size on it before anything is mapped: whether
    /// its pages are RAM that MemAvailable and `--max-mem` count, its own capacity, its
    /// granule ([`crate::sizing`]).
    pub fn room(&self, opts: &MapOptions) -> TargetRoom {
        self.kind.room(&self.ctx(), opts)
    }

    /// The kind's preflight and mapping (untouched) of at least `bytes` bytes.
    pub(crate) fn prepare(&self, bytes: u64, opts: &MapOptions) -> Result<Backing, TargetError> {
        self.kind.prepare(&self.ctx(), bytes, opts)
    }

    pub(crate) fn kind(&self) -> &dyn Kind {
        &*self.kind
    }

    /// What the kind needs of the spec: its node and canonical form.
    fn ctx(&self) -> PrepareCtx {
        PrepareCtx {
            node: self.node,
            canonical: self.to_string(),
        }
    }
}

/// Specs are equal when they say the same thing: their canonical forms agree.
impl PartialEq for TargetSpec {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for TargetSpec {}

impl Hash for TargetSpec {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.to_string().hash(state);
    }
}

fn err(msg: impl Into<String>) -> SpecError {
    SpecError(msg.into())
}

impl FromStr for TargetSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(err(
                "empty target spec: expected kind[:arg][,key=value]..., e.g. dram:thp or file:/mnt/pmem",
            ));
        }
        let mut parts = s.split(',');
        let head = parts.next().unwrap_or_default();
        let (kind, arg) = match head.split_once(':') {
            Some((k, a)) => {
                if a.is_empty() {
                    return Err(err(format!("empty argument after '{k}:' in target '{s}'")));
                }
                (k, Some(a))
            }
            None => (head, None),
        };
        let entry = kinds::KINDS
            .iter()
            .find(|k| k.name == kind)
            .ok_or_else(|| {
                let names: Vec<&str> = kinds::KINDS.iter().map(|k| k.name).collect();
                err(format!(
                    "unknown target kind '{kind}': use one of {}",
                    names.join(", ")
                ))
            })?;
        let mut node = None;
        let mut own: Vec<(&str, &str)> = Vec::new();
        for opt in parts {
            let (key, value) = opt.split_once('=').ok_or_else(|| {
                err(format!(
                    "option '{opt}' in target '{s}' is not key=value (paths may not contain commas)"
                ))
            })?;
            let given_twice = || err(format!("option '{key}' is given twice in target '{s}'"));
            match key {
                "node" => {
                    if node.is_some() {
                        return Err(given_twice());
                    }
                    node = Some(value.parse::<u32>().map_err(|_| {
                        err(format!(
                            "node '{value}' is not a node number (node=0, node=1, ...)"
                        ))
                    })?);
                }
                "" => return Err(err(format!("empty option name in target '{s}'"))),
                key if entry
                    .options
                    .iter()
                    .any(|o| o.split('=').next() == Some(key)) =>
                {
                    if own.iter().any(|(k, _)| *k == key) {
                        return Err(given_twice());
                    }
                    own.push((key, value));
                }
                other => {
                    let options: Vec<&str> =
                        entry.options.iter().copied().chain(["node=N"]).collect();
                    let hint = if other == "page" && entry.name != "file" {
                        format!(
                            " ({} takes its page size after the colon, as in its syntax {})",
                            entry.name, entry.syntax
                        )
                    } else {
                        String::new()
                    };
                    return Err(err(match options.as_slice() {
                        [only] => format!(
                            "unknown option '{other}' for {}: the only option is {only}{hint}",
                            entry.name
                        ),
                        _ => format!(
                            "unknown option '{other}' for {}: the options are {}{hint}",
                            entry.name,
                            options.join(" and ")
                        ),
                    }));
                }
            }
        }
        let kind = (entry.parse)(arg, &own)?;
        Ok(TargetSpec { kind, node })
    }
}

impl fmt::Display for TargetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind_name(), self.kind.argument())?;
        if let Some(n) = self.node {
            write!(f, ",node={n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(s: &str) -> Result<TargetSpec, String> {
        s.parse::<TargetSpec>().map_err(|e| e.0)
    }

    #[test]
    fn only_a_file_target_naming_an_existing_directory_has_one() {
        let dir = std::env::temp_dir();
        let d = parse(&format!("file:{}", dir.display())).unwrap();
        assert_eq!(d.directory(), Some(dir.as_path()));
        let new_file = dir.join(format!("pmscope-never-made-{}", std::process::id()));
        assert_eq!(
            parse(&format!("file:{}", new_file.display()))
                .unwrap()
                .directory(),
            None
        );
        assert_eq!(parse("dram:4k").unwrap().directory(), None);
        assert_eq!(parse("shm").unwrap().directory(), None);
    }

    #[test]
    fn memory_leaves_out_the_page_policy_only() {
        for (spec, memory) in [
            ("dram:4k", "dram"),
            ("dram:2m,node=1", "dram,node=1"),
            ("shm:thp", "shm"),
            ("file:/mnt/pmem", "file:/mnt/pmem"),
            ("file:/mnt/pmem,node=0", "file:/mnt/pmem,node=0"),
            ("file:/mnt/pmem,page=4k", "file:/mnt/pmem"),
            ("file:/mnt/pmem,page=2m,node=0", "file:/mnt/pmem,node=0"),
            ("devdax:/dev/dax0.0", "devdax:/dev/dax0.0"),
        ] {
            assert_eq!(parse(spec).unwrap().memory(), memory, "{spec}");
        }
    }

    #[test]
    fn every_form() {
        let cases = [
            ("dram", "dram:4k"),
            ("dram:4k", "dram:4k"),
            ("dram:thp", "dram:thp"),
            ("dram:2m", "dram:2m"),
            ("dram:1g", "dram:1g"),
            ("dram:thp,node=1", "dram:thp,node=1"),
            ("dram,node=2", "dram:4k,node=2"),
            ("file:/mnt/pmem", "file:/mnt/pmem"),
            (
                "file:/mnt/pmem/bench.dat,node=0",
                "file:/mnt/pmem/bench.dat,node=0",
            ),
            ("file:relative/dir", "file:relative/dir"),
            ("file:/mnt/pmem,page=4k", "file:/mnt/pmem,page=4k"),
            (
                "file:/mnt/pmem,node=1,page=1g",
                "file:/mnt/pmem,page=1g,node=1",
            ),
            ("shm", "shm:4k"),
            ("shm:thp", "shm:thp"),
            ("shm,node=0", "shm:4k,node=0"),
            ("devdax:/dev/dax0.0", "devdax:/dev/dax0.0"),
            ("devdax:/dev/dax1.2,node=3", "devdax:/dev/dax1.2,node=3"),
            ("  dram:thp  ", "dram:thp"),
        ];
        for (input, canonical) in cases {
            let spec = parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(spec.to_string(), canonical, "{input}");
            assert_eq!(parse(canonical).unwrap(), spec);
        }
    }

    #[test]
    fn malformed_specs_have_exact_errors() {
        let cases = [
            (
                "",
                "empty target spec: expected kind[:arg][,key=value]..., e.g. dram:thp or file:/mnt/pmem",
            ),
            (
                "ram",
                "unknown target kind 'ram': use one of dram, file, shm, devdax",
            ),
            (
                "dram:8k",
                "'8k' is not a page policy for dram: use 4k, thp, 2m or 1g",
            ),
            ("dram:", "empty argument after 'dram:' in target 'dram:'"),
            (
                "dram,node=x",
                "node 'x' is not a node number (node=0, node=1, ...)",
            ),
            (
                "dram,node=-1",
                "node '-1' is not a node number (node=0, node=1, ...)",
            ),
            (
                "dram,node",
                "option 'node' in target 'dram,node' is not key=value (paths may not contain commas)",
            ),
            (
                "dram,node=1,node=2",
                "option 'node' is given twice in target 'dram,node=1,node=2'",
            ),
            (
                "dram,color=red",
                "unknown option 'color' for dram: the only option is node=N",
            ),
            ("dram,=1", "empty option name in target 'dram,=1'"),
            (
                "dram,page=2m",
                "unknown option 'page' for dram: the only option is node=N (dram takes its page size after the colon, as in its syntax dram[:4k|thp|2m|1g][,node=N])",
            ),
            (
                "file:/a,size=1",
                "unknown option 'size' for file: the options are page=4k|2m|1g and node=N",
            ),
            (
                "file:/a,page=8k",
                "page '8k' is not a page size for file: use page=4k, page=2m or page=1g",
            ),
            (
                "file:/a,page=4k,page=2m",
                "option 'page' is given twice in target 'file:/a,page=4k,page=2m'",
            ),
            (
                "file",
                "file needs a path: file:/mnt/pmem (a directory) or file:/mnt/pmem/bench.dat (a new file)",
            ),
            (
                "file:/a,b",
                "option 'b' in target 'file:/a,b' is not key=value (paths may not contain commas)",
            ),
            (
                "shm:2m",
                "'2m' is not a page policy for shm: use 4k or thp (for hugetlb-backed files use file: on a hugetlbfs mount)",
            ),
            ("devdax", "devdax needs a device path: devdax:/dev/dax0.0"),
            (
                "devdax:/tmp/x",
                "'/tmp/x' is not a device-DAX path: expected /dev/daxX.Y",
            ),
            (
                "DRAM",
                "unknown target kind 'DRAM': use one of dram, file, shm, devdax",
            ),
        ];
        for (input, message) in cases {
            assert_eq!(parse(input), Err(message.to_string()), "{input}");
        }
    }

    proptest! {
        /// Any spec the grammar accepts prints in a canonical form that parses back to it.
        #[test]
        fn display_round_trips(
            kind in 0usize..4,
            policy in 0usize..4,
            node in proptest::option::of(0u32..1024),
            name in "[a-z0-9_/.-]{1,20}",
            dev in (0u32..8, 0u32..8),
        ) {
            let text = match kind {
                0 => format!("dram:{}", ["4k", "thp", "2m", "1g"][policy]),
                1 => match policy {
                    0 => format!("file:/{name}"),
                    p => format!("file:/{name},page={}", ["4k", "2m", "1g"][p - 1]),
                },
                2 => format!("shm:{}", ["4k", "thp"][policy % 2]),
                _ => format!("devdax:/dev/dax{}.{}", dev.0, dev.1),
            };
            let text = match node {
                Some(n) => format!("{text},node={n}"),
                None => text,
            };
            let spec = text.parse::<TargetSpec>().unwrap();
            prop_assert_eq!(spec.to_string(), text.clone());
            prop_assert_eq!(spec.to_string().parse::<TargetSpec>(), Ok(spec));
        }
    }
}
