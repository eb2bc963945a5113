//! The target-spec grammar, parsed in one place, with `Display` giving the canonical form
//! (property-tested to round-trip).

use crate::kinds;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// The page policy of anonymous (and shm) memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PagePolicy {
    /// 4 KiB pages; THP refused with MADV_NOHUGEPAGE.
    Base4k,
    /// Transparent huge pages requested with MADV_HUGEPAGE.
    Thp,
    /// hugetlb 2 MiB pages.
    Huge2m,
    /// hugetlb 1 GiB pages.
    Huge1g,
}

impl PagePolicy {
    /// The spelling in the grammar.
    pub fn name(self) -> &'static str {
        match self {
            PagePolicy::Base4k => "4k",
            PagePolicy::Thp => "thp",
            PagePolicy::Huge2m => "2m",
            PagePolicy::Huge1g => "1g",
        }
    }

    /// The hugetlb page size, if this is a hugetlb policy.
    pub fn hugetlb_bytes(self) -> Option<u64> {
        match self {
            PagePolicy::Huge2m => Some(2 << 20),
            PagePolicy::Huge1g => Some(1 << 30),
            _ => None,
        }
    }

    /// The page size the policy asks for.
    pub fn expected_page_bytes(self) -> u64 {
        match self {
            PagePolicy::Base4k => 4 << 10,
            PagePolicy::Thp | PagePolicy::Huge2m => 2 << 20,
            PagePolicy::Huge1g => 1 << 30,
        }
    }
}

/// The kind-specific part of a spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KindSpec {
    /// `dram[:policy]`.
    Dram {
        /// Page policy.
        pages: PagePolicy,
    },
    /// `file:PATH`.
    File {
        /// A directory to create a file in, or the path of a file to create.
        path: PathBuf,
    },
    /// `shm[:4k|thp]`.
    Shm {
        /// Page policy (4k or thp only).
        pages: PagePolicy,
    },
    /// `devdax:/dev/daxX.Y`.
    Devdax {
        /// The character device.
        path: PathBuf,
    },
}

impl KindSpec {
    /// The kind's name.
    pub fn kind_name(&self) -> &'static str {
        match self {
            KindSpec::Dram { .. } => "dram",
            KindSpec::File { .. } => "file",
            KindSpec::Shm { .. } => "shm",
            KindSpec::Devdax { .. } => "devdax",
        }
    }
}

/// A parsed target spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetSpec {
    /// What to map.
    pub kind: KindSpec,
    /// NUMA node to bind to before the first touch.
    pub node: Option<u32>,
}

/// Why a spec did not parse; the message is one sentence naming the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

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
        let kind = (entry.parse)(arg)?;
        let mut node = None;
        for opt in parts {
            let (key, value) = opt.split_once('=').ok_or_else(|| {
                err(format!(
                    "option '{opt}' in target '{s}' is not key=value (paths may not contain commas)"
                ))
            })?;
            match key {
                "node" => {
                    if node.is_some() {
                        return Err(err(format!("option 'node' is given twice in target '{s}'")));
                    }
                    node = Some(value.parse::<u32>().map_err(|_| {
                        err(format!(
                            "node '{value}' is not a node number (node=0, node=1, ...)"
                        ))
                    })?);
                }
                "" => return Err(err(format!("empty option name in target '{s}'"))),
                other => {
                    return Err(err(format!(
                        "unknown option '{other}' for {}: the only option is node=N",
                        kind.kind_name()
                    )));
                }
            }
        }
        Ok(TargetSpec { kind, node })
    }
}

impl fmt::Display for TargetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            KindSpec::Dram { pages } => write!(f, "dram:{}", pages.name())?,
            KindSpec::File { path } => write!(f, "file:{}", path.display())?,
            KindSpec::Shm { pages } => write!(f, "shm:{}", pages.name())?,
            KindSpec::Devdax { path } => write!(f, "devdax:{}", path.display())?,
        }
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
        #[test]
        fn display_round_trips(
            kind in 0usize..4,
            policy in 0usize..4,
            node in proptest::option::of(0u32..1024),
            name in "[a-z0-9_/.-]{1,20}",
            dev in (0u32..8, 0u32..8),
        ) {
            let pages = [PagePolicy::Base4k, PagePolicy::Thp, PagePolicy::Huge2m, PagePolicy::Huge1g][policy];
            let kind = match kind {
                0 => KindSpec::Dram { pages },
                1 => KindSpec::File { path: PathBuf::from(format!("/{name}")) },
                2 => KindSpec::Shm { pages: if policy % 2 == 0 { PagePolicy::Base4k } else { PagePolicy::Thp } },
                _ => KindSpec::Devdax { path: PathBuf::from(format!("/dev/dax{}.{}", dev.0, dev.1)) },
            };
            let spec = TargetSpec { kind, node };
            prop_assert_eq!(spec.to_string().parse::<TargetSpec>(), Ok(spec));
        }
    }
}
