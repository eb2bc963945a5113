//! The target kinds. Each file holds everything about its kind: its grammar (parse and
//! canonical form), its documentation, its preflight checks and mapping, what it expects to
//! achieve and the remedy when it does not. To add a kind: one file here and one row in
//! [`KINDS`]. Code outside this crate asks a spec what it needs (`TargetSpec::directory`,
//! `room`, `memory`) instead of naming kinds, except three places that still do and need
//! a question of their own before a new kind is added: `kmer --partition nodes`
//! (experiment `kmer/job.rs`: which kinds cannot be split across nodes), the message of
//! `filedir.rs` for a `file:` path that is not a directory, and where tx-pm keeps its pool
//! (workload `kmer/table/tx_pm.rs`). What several kinds share is in `common`, which names
//! none, so no kind imports another.

use crate::backing::{Backing, MapOptions};
use crate::error::SpecError;
use crate::room::TargetRoom;
use crate::{HeapBacking, TargetError};
use pmscope_core::achieved::Achieved;
use pmscope_sys::dax::ExtentLayout;
use std::fmt;
use std::panic::RefUnwindSafe;
use std::sync::Arc;

mod common;
mod devdax;
mod dram;
mod file;
mod shm;

/// What a kind needs of its spec to size or map it: the node and the canonical spelling
/// its messages name (`Display`). `TargetSpec` makes it, so that no kind names the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrepareCtx {
    /// NUMA node to bind to before the first touch.
    pub node: Option<u32>,
    /// The spec's canonical form (`dram:thp,node=0`).
    pub canonical: String,
}

impl fmt::Display for PrepareCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

/// One parsed kind: what `kind[:arg]` asked for. Crate-private, so the only way to name a
/// kind outside this crate is its spelling in the grammar.
pub(crate) trait Kind: fmt::Debug + Send + Sync + RefUnwindSafe {
    /// The kind's row in [`KINDS`].
    fn entry(&self) -> &'static KindEntry;

    /// The canonical argument after `kind:` (`Display` of the spec writes it).
    fn argument(&self) -> String;

    /// The page policy the argument chooses (`4k`, `thp`, ...), for kinds whose argument is
    /// one; `None` where the page size is not the spec's to choose (a device's is its
    /// alignment, a file's its file system's unless `page=` asks).
    fn page_policy(&self) -> Option<&'static str> {
        None
    }

    /// The memory the target maps, apart from its page policy and node: the kind's name
    /// where the argument is only a page policy (`dram` for `dram:thp`), else the kind with
    /// its argument.
    fn memory(&self) -> String {
        if self.page_policy().is_some() {
            self.entry().name.to_string()
        } else {
            format!("{}:{}", self.entry().name, self.argument())
        }
    }

    /// Refuses, before anything is mapped for any target, what this kind can tell is
    /// wrong from the spec, the options and the file system alone.
    fn preflight(&self, _opts: &MapOptions) -> Result<(), TargetError> {
        Ok(())
    }

    /// How `pmscope run` maps each large allocation of a program on this kind, and the
    /// page size that should give (after `preflight`). Default: it cannot.
    fn heap(&self) -> Result<(HeapBacking, u64), TargetError> {
        Err(TargetError::usage(format!(
            "pmscope run cannot place a program's heap on {} targets yet",
            self.entry().name
        )))
    }

    /// The existing directory this target creates its files in, for commands that do file
    /// I/O there rather than map memory (`fs`, `fio`); `None` for every kind but `file:`.
    fn directory(&self) -> Option<&std::path::Path> {
        None
    }

    /// What bounds a default size on this kind before anything is mapped
    /// ([`crate::sizing`]): the granule `prepare` rounds the length up to, whether the pages
    /// are RAM (MemAvailable and --max-mem), and the kind's own capacity, mirroring the
    /// checks `prepare` makes. Default: RAM of base pages.
    fn room(&self, _target: &PrepareCtx, _opts: &MapOptions) -> TargetRoom {
        TargetRoom::ram(4096)
    }

    /// Runs the kind's preflight checks and creates its mapping (untouched).
    fn prepare(
        &self,
        target: &PrepareCtx,
        bytes: u64,
        opts: &MapOptions,
    ) -> Result<Backing, TargetError>;

    /// What to do when the achieved page size falls short of the expected `want` bytes;
    /// `None` for the generic advice.
    fn page_size_remedy(
        &self,
        _achieved: &Achieved,
        _want: u64,
        _extents: Option<ExtentLayout>,
    ) -> Option<String> {
        None
    }
}

/// A kind's parser of the part after `kind:`, with the options of its own
/// ([`KindEntry::options`]) the spec gave, as `(key, value)` pairs in the spec's order.
pub(crate) type ParseFn = fn(Option<&str>, &[(&str, &str)]) -> Result<Arc<dyn Kind>, SpecError>;

/// One row of the kind registry: what `--help`, `pmscope list targets` and the parser use.
pub struct KindEntry {
    /// The kind's name in the grammar.
    pub name: &'static str,
    /// Its syntax.
    pub syntax: &'static str,
    /// One paragraph on what it maps and what it needs.
    pub doc: &'static str,
    /// The `key=value` options the kind takes besides `node=N`, as the grammar spells them
    /// (`page=4k|2m|1g`); the parser hands these to `parse` and refuses any other.
    pub options: &'static [&'static str],
    /// Parses the part after `kind:` (None when absent).
    pub(crate) parse: ParseFn,
}

/// The registry: every kind pmscope can map, in the order help lists them.
pub const KINDS: &[&KindEntry] = &[&dram::ENTRY, &file::ENTRY, &shm::ENTRY, &devdax::ENTRY];

/// The kinds' syntax, for the `--target` help: `dram[:4k|thp|2m|1g], file:PATH, ...`.
pub fn syntax_summary() -> String {
    KINDS
        .iter()
        .map(|k| k.syntax.split("[,").next().unwrap_or(k.syntax))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = super::KINDS.iter().map(|k| k.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), super::KINDS.len());
    }

    #[test]
    fn every_syntax_starts_with_its_name_and_takes_a_node() {
        for k in super::KINDS {
            assert!(k.syntax.starts_with(k.name), "{}", k.syntax);
            assert!(k.syntax.ends_with("[,node=N]"), "{}", k.syntax);
            for option in k.options {
                assert!(k.syntax.contains(&format!("[,{option}]")), "{}", k.syntax);
            }
        }
    }
}
