//! Transparent huge page settings (`/sys/kernel/mm/transparent_hugepage/`).

use crate::sysroot::{SysRoot, active_choice};
use serde::{Deserialize, Serialize};

/// The THP knobs that decide whether `dram:thp` and `dram:4k` get what they ask for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThpSettings {
    /// `enabled`: always, madvise or never.
    pub enabled: Option<String>,
    /// `defrag`: always, defer, defer+madvise, madvise or never.
    pub defrag: Option<String>,
    /// `shmem_enabled`: THP for tmpfs / shm (always, within_size, advise, never, deny, force).
    pub shmem_enabled: Option<String>,
    /// `khugepaged/defrag`: whether khugepaged collapses pages later (0/1).
    pub khugepaged_defrag: Option<u64>,
}

/// Reads the THP settings.
pub fn settings(root: &SysRoot) -> ThpSettings {
    let base = "sys/kernel/mm/transparent_hugepage";
    let choice = |f: &str| {
        root.read(&format!("{base}/{f}"))
            .and_then(|t| active_choice(&t))
    };
    ThpSettings {
        enabled: choice("enabled"),
        defrag: choice("defrag"),
        shmem_enabled: choice("shmem_enabled"),
        khugepaged_defrag: root.read_u64(&format!("{base}/khugepaged/defrag")),
    }
}
