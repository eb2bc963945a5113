//! hugetlb page pools (`/sys/kernel/mm/hugepages/hugepages-<size>kB/`), system-wide and
//! per node.

use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};

/// One hugetlb pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pool {
    /// Page size in bytes.
    pub page_bytes: u64,
    /// Pages reserved (`nr_hugepages`).
    pub total: u64,
    /// Pages not yet handed out (`free_hugepages`).
    pub free: u64,
    /// Pages promised to mappings but not yet faulted (`resv_hugepages`).
    pub reserved: u64,
}

impl Pool {
    /// Pages a new mapping can still get: free minus those promised to others.
    pub fn available(&self) -> u64 {
        self.free.saturating_sub(self.reserved)
    }

    /// The sysfs file an administrator writes to reserve pages of this size.
    pub fn nr_path(page_bytes: u64, node: Option<u32>) -> String {
        let kb = page_bytes / 1024;
        match node {
            Some(n) => {
                format!("/sys/devices/system/node/node{n}/hugepages/hugepages-{kb}kB/nr_hugepages")
            }
            None => format!("/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"),
        }
    }
}

/// The pools of the system, or of one node (whose files have no `resv_hugepages`).
pub fn pools(root: &SysRoot, node: Option<u32>) -> Vec<Pool> {
    let base = match node {
        Some(n) => format!("sys/devices/system/node/node{n}/hugepages"),
        None => "sys/kernel/mm/hugepages".to_string(),
    };
    let mut v: Vec<Pool> = root
        .list(&base)
        .into_iter()
        .filter_map(|d| {
            let kb: u64 = d
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let f = |name: &str| root.read_u64(&format!("{base}/{d}/{name}"));
            Some(Pool {
                page_bytes: kb * 1024,
                total: f("nr_hugepages")?,
                free: f("free_hugepages").unwrap_or(0),
                reserved: f("resv_hugepages").unwrap_or(0),
            })
        })
        .collect();
    v.sort_by_key(|p| p.page_bytes);
    v
}

/// The pool of one page size.
pub fn pool(root: &SysRoot, page_bytes: u64, node: Option<u32>) -> Option<Pool> {
    pools(root, node)
        .into_iter()
        .find(|p| p.page_bytes == page_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_2m_pool() {
        let p = pools(&SysRoot::at("/"), None);
        assert!(p.iter().any(|p| p.page_bytes == 2 << 20));
        assert_eq!(
            Pool::nr_path(2 << 20, None),
            "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
        );
    }
}
