//! The target kinds. Each file holds everything about its kind: the argument parser, the
//! preflight checks, the mapping, and what the kind expects to achieve. To add a kind: one
//! file here, one row in [`KINDS`], one variant of [`crate::KindSpec`] and one arm in
//! [`prepare`].

use crate::mapping::{Backing, MapOptions};
use crate::spec::{KindSpec, SpecError};
use crate::{TargetError, TargetSpec};

mod devdax;
mod dram;
mod file;
mod shm;

/// One row of the kind registry: what `--help`, `pmscope list targets` and the parser use.
pub struct KindEntry {
    /// The kind's name in the grammar.
    pub name: &'static str,
    /// Its syntax.
    pub syntax: &'static str,
    /// One paragraph on what it maps and what it needs.
    pub doc: &'static str,
    /// Parses the part after `kind:` (None when absent).
    pub parse: fn(Option<&str>) -> Result<KindSpec, SpecError>,
}

/// The registry: every kind pmscope can map, in the order help lists them.
pub const KINDS: &[KindEntry] = &[dram::ENTRY, file::ENTRY, shm::ENTRY, devdax::ENTRY];

/// Runs the kind's preflight checks and creates its mapping (untouched).
pub(crate) fn prepare(
    spec: &TargetSpec,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Backing, TargetError> {
    match &spec.kind {
        KindSpec::Dram { pages } => dram::prepare(spec, *pages, bytes, opts),
        KindSpec::File { path } => file::prepare(spec, path, bytes, opts),
        KindSpec::Shm { pages } => shm::prepare(spec, *pages, bytes, opts),
        KindSpec::Devdax { path } => devdax::prepare(spec, path, bytes, opts),
    }
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
}
