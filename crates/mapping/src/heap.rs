//! A target as the home of a program's heap (`pmscope run`): not one mapping pmscope makes,
//! but the recipe the preload library follows for every large allocation of the program.
//! Each kind says in its file (`Kind::heap`) whether and how it can serve one;
//! [`TargetSpec::heap_plan`](crate::TargetSpec::heap_plan) asks it after the preflight.

use std::path::PathBuf;

/// How the preload library maps each allocation it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapBacking {
    /// Private anonymous memory with a page policy (`4k`, `thp`, `2m`, `1g`).
    Anonymous {
        /// The policy's spelling in the grammar.
        pages: &'static str,
    },
    /// One file per allocation, created unnamed (`O_TMPFILE`) in this directory and mapped
    /// shared (with `MAP_SYNC` where the file system is DAX).
    Directory {
        /// The directory.
        dir: PathBuf,
        /// `thp` to ask for huge pages with MADV_HUGEPAGE, else `4k`.
        pages: &'static str,
    },
}

/// The resolved heap recipe of a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapPlan {
    /// How each allocation is mapped.
    pub backing: HeapBacking,
    /// The NUMA node each allocation is bound to (MPOL_BIND) before its first touch.
    pub node: Option<u32>,
    /// The page size the target should give, in bytes (4096 where no huge page is asked;
    /// 2 MiB for a DAX directory is decided by the file system, so 4096 is expected there).
    pub expected_page_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MapOptions, TargetSpec};

    fn plan(spec: &str) -> Result<HeapPlan, String> {
        spec.parse::<TargetSpec>()
            .unwrap()
            .heap_plan(&MapOptions::host())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_resolves_or_says_why_not() {
        let p = plan("dram:2m,node=0").unwrap();
        assert_eq!(p.backing, HeapBacking::Anonymous { pages: "2m" });
        assert_eq!((p.node, p.expected_page_bytes), (Some(0), 2 << 20));
        assert_eq!(plan("dram").unwrap().expected_page_bytes, 4096);
        let shm = plan("shm:thp").unwrap();
        assert_eq!(
            shm.backing,
            HeapBacking::Directory {
                dir: "/dev/shm".into(),
                pages: "thp"
            }
        );
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("file:{}", dir.path().display());
        assert_eq!(
            plan(&spec).unwrap().backing,
            HeapBacking::Directory {
                dir: dir.path().into(),
                pages: "4k"
            }
        );
        let new_file = format!("file:{}/heap.bin", dir.path().display());
        assert_eq!(
            plan(&new_file).unwrap_err(),
            format!(
                "pmscope run puts each allocation in a file of its own, so file: must name a directory, not the new file {}/heap.bin",
                dir.path().display()
            )
        );
        assert_eq!(
            plan("devdax:/dev/dax0.0").unwrap_err(),
            "writing to /dev/dax0.0 destroys its contents; pass --destroy-data if that is what you want"
        );
    }
}
