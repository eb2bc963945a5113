//! `/proc/self/smaps` for one address range: which page sizes back it.
//!
//! One mapping may appear as several VMAs (the kernel splits a VMA when advice or policy
//! differs), so every VMA overlapping the range is summed. A VMA may also reach beyond the
//! range (the kernel merges adjacent anonymous mappings with equal flags, e.g. a thread
//! stack next to ours): its counts are then taken in proportion to the overlap, an estimate
//! that is exact for the VMAs wholly inside the range. What each field tells:
//!
//! | field            | backing it counts                                  |
//! |------------------|----------------------------------------------------|
//! | `KernelPageSize` | the VMA's page size: 2048 kB for hugetlb 2M and devdax, 1048576 kB for 1G |
//! | `Rss`            | resident bytes (not hugetlb pages, which are in `*_Hugetlb`) |
//! | `AnonHugePages`  | anonymous THP (PMD-mapped) bytes                   |
//! | `ShmemPmdMapped` | PMD-mapped shmem/tmpfs bytes                       |
//! | `FilePmdMapped`  | PMD-mapped page-cache file bytes                   |
//! | `Shared_Hugetlb` / `Private_Hugetlb` | hugetlb bytes                  |
//!
//! fsdax files are the blind spot: DAX pages are devmap, so their PMD mappings show neither
//! in `FilePmdMapped` nor in `Rss` (labvm README); pmscope counts faults for those.

use crate::sysroot::SysRoot;
use pmscope_core::achieved::PageMix;
use pmscope_core::units::{GIB1, MIB2};

/// The summed smaps fields of the VMAs overlapping a range, in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmapsRange {
    /// Number of VMAs found.
    pub vmas: usize,
    /// Largest `KernelPageSize` among them.
    pub kernel_page_size: u64,
    /// Resident bytes.
    pub rss: u64,
    /// Anonymous THP bytes.
    pub anon_huge: u64,
    /// PMD-mapped shmem bytes.
    pub shmem_pmd: u64,
    /// PMD-mapped file bytes.
    pub file_pmd: u64,
    /// hugetlb bytes (shared + private).
    pub hugetlb: u64,
    /// The union of `VmFlags` (`sf` = synchronous faults, i.e. MAP_SYNC; `hg` = MADV_HUGEPAGE).
    pub vm_flags: Vec<String>,
}

/// Reads the smaps entries overlapping `[start, start + len)` of the calling process.
pub fn probe_range(root: &SysRoot, start: usize, len: usize) -> Option<SmapsRange> {
    Some(parse_range(&root.read("proc/self/smaps")?, start, len))
}

fn parse_range(text: &str, start: usize, len: usize) -> SmapsRange {
    let end = start + len;
    let mut out = SmapsRange::default();
    let mut inside = false;
    let mut share = 1.0f64;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-')
            && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            && !first.ends_with(':')
        {
            inside = a < end && b > start;
            if inside {
                out.vmas += 1;
                let overlap = b.min(end) - a.max(start);
                share = overlap as f64 / (b - a) as f64;
            }
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if key == "VmFlags" {
            for f in value.split_whitespace() {
                if !out.vm_flags.iter().any(|x| x == f) {
                    out.vm_flags.push(f.to_string());
                }
            }
            continue;
        }
        let kb = value
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        let bytes = kb * 1024;
        if key == "KernelPageSize" {
            out.kernel_page_size = out.kernel_page_size.max(bytes);
            continue;
        }
        let bytes = (bytes as f64 * share).round() as u64;
        match key {
            "Rss" => out.rss += bytes,
            "AnonHugePages" => out.anon_huge += bytes,
            "ShmemPmdMapped" => out.shmem_pmd += bytes,
            "FilePmdMapped" => out.file_pmd += bytes,
            "Shared_Hugetlb" | "Private_Hugetlb" => out.hugetlb += bytes,
            _ => {}
        }
    }
    out
}

impl SmapsRange {
    /// Converts the fields into bytes per page size for a mapping of `len` bytes.
    /// `dax_file` marks an fsdax file, whose PMD mappings smaps cannot see.
    pub fn page_mix(&self, len: u64, dax_file: bool) -> PageMix {
        let mut mix = PageMix {
            smaps_sees_mapping: !dax_file,
            ..PageMix::default()
        };
        if self.hugetlb > 0 || self.kernel_page_size >= MIB2 {
            // hugetlb or devdax: every resident byte is in pages of KernelPageSize.
            let resident = if self.hugetlb > 0 {
                self.hugetlb
            } else {
                self.rss
            };
            match self.kernel_page_size {
                GIB1 => mix.bytes_1g = resident,
                _ => mix.bytes_2m = resident,
            }
        } else {
            let pmd = self.anon_huge + self.shmem_pmd + self.file_pmd;
            mix.bytes_2m = pmd.min(self.rss);
            mix.bytes_4k = self.rss.saturating_sub(pmd);
        }
        let resident = mix.bytes_4k + mix.bytes_2m + mix.bytes_1g;
        mix.bytes_unmapped = len.saturating_sub(resident);
        if dax_file {
            // Whatever smaps says about an fsdax file is not evidence of its page sizes.
            mix.bytes_4k = 0;
            mix.bytes_2m = 0;
            mix.bytes_unmapped = 0;
        }
        mix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
7f0000000000-7f0000200000 rw-p 00000000 00:00 0 
Size:               2048 kB
KernelPageSize:        4 kB
Rss:                2048 kB
AnonHugePages:      2048 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
VmFlags: rd wr mr mw me ac hg
7f0000200000-7f0000400000 rw-p 00000000 00:00 0 
Size:               2048 kB
KernelPageSize:        4 kB
Rss:                1024 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac nh
7f0000400000-7f0000600000 rw-p 00000000 00:00 0 
Size:               2048 kB
KernelPageSize:        4 kB
Rss:                2048 kB
AnonHugePages:      2048 kB
VmFlags: rd wr
";

    #[test]
    fn sums_overlapping_vmas_only() {
        let r = parse_range(SAMPLE, 0x7f00_0000_0000, 4 << 20);
        assert_eq!(r.vmas, 2);
        assert_eq!(r.rss, 3 << 20);
        assert_eq!(r.anon_huge, 2 << 20);
        assert!(r.vm_flags.contains(&"hg".to_string()));
        let mix = r.page_mix(4 << 20, false);
        assert_eq!(mix.bytes_2m, 2 << 20);
        assert_eq!(mix.bytes_4k, 1 << 20);
        assert_eq!(mix.bytes_unmapped, 1 << 20);
    }

    #[test]
    fn a_vma_reaching_beyond_the_range_counts_in_proportion() {
        // A merged VMA of 4 MiB of which the range is the upper 2 MiB.
        let merged = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0 
KernelPageSize:        4 kB
Rss:                4096 kB
AnonHugePages:         0 kB
";
        let r = parse_range(merged, 0x7f00_0020_0000, 2 << 20);
        assert_eq!(r.rss, 2 << 20);
        assert_eq!(r.page_mix(2 << 20, false).bytes_4k, 2 << 20);
    }

    #[test]
    fn hugetlb_and_devdax() {
        let hugetlb = "\
7f4000000000-7f4040000000 rw-p 00000000 00:10 0 /anon_hugepage (deleted)
KernelPageSize:  1048576 kB
Rss:                   0 kB
Private_Hugetlb: 1048576 kB
";
        let mix = parse_range(hugetlb, 0x7f40_0000_0000, 1 << 30).page_mix(1 << 30, false);
        assert_eq!(mix.bytes_1g, 1 << 30);
        assert_eq!(mix.bytes_unmapped, 0);
        let devdax = "\
7f4000000000-7f4004000000 rw-s 00000000 00:06 5 /dev/dax1.0
KernelPageSize:     2048 kB
Rss:               65536 kB
";
        let mix = parse_range(devdax, 0x7f40_0000_0000, 64 << 20).page_mix(64 << 20, false);
        assert_eq!(mix.bytes_2m, 64 << 20);
    }

    #[test]
    fn fsdax_is_not_evidence() {
        let dax = "\
7f4000000000-7f4004000000 rw-s 00000000 fd:00 12 /mnt/pmem/f
KernelPageSize:        4 kB
Rss:                  64 kB
FilePmdMapped:         0 kB
VmFlags: rd wr sh mr mw me ms sf
";
        let r = parse_range(dax, 0x7f40_0000_0000, 64 << 20);
        assert!(r.vm_flags.contains(&"sf".to_string()));
        let mix = r.page_mix(64 << 20, true);
        assert!(!mix.smaps_sees_mapping);
        assert_eq!(mix.dominant(), None);
    }
}
