//! Hardware-gated mapping tests: a real fsdax file system, a devdax device, legacy (e820)
//! pmem, a memory-only NUMA node and a dax/kmem (CXL-like) node.
//!
//! Each module is named for what its tests need (`needs_fsdax`, `needs_devdax`, ...), and
//! every test is `#[ignore]`d with that reason, so `cargo test` on an ordinary machine lists
//! them as ignored — never as passed. `lab/stage.sh` runs them (`--ignored --exact`)
//! inside the project's qemu lab guest (`lab/vm.sh`), which provides each requirement through a
//! `LABVM_*` variable; there a missing variable fails the test instead of skipping it.
//!
//! Wherever possible a test checks pmscope's verdict against an independent account of what
//! the kernel did: tracefs `fs_dax` fault events and `filefrag` extents for DAX page sizes,
//! `/proc/self/numa_maps` for NUMA placement, sysfs for alignment and CPUs.

use pmscope_core::achieved::Persistence;
use pmscope_core::units::{KIB4, MIB2};
use pmscope_mapping::{DestroyData, MapOptions, Mapping, TargetSpec, map};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The value of a variable the lab guest sets (`/etc/labvm/env`). Missing means the test
/// runs where its hardware is absent, which is a failure: the stage promised it.
fn lab(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: this test needs the lab guest (run by lab/stage.sh)")
    })
}

/// The warnings' codes. The guest's NVDIMMs are QEMU's, so every DAX mapping there carries
/// `pmem-emulated` (a true finding, checked where it appears); the other codes are what a
/// test expects to be absent.
fn codes(m: &Mapping) -> Vec<&str> {
    m.warnings().iter().map(|w| w.code.as_str()).collect()
}

fn spec(s: &str) -> TargetSpec {
    s.parse().unwrap()
}

/// What the kernel reports, through tracefs, about the DAX faults inside one mapping.
#[derive(Debug, Default, PartialEq, Eq)]
struct DaxFaults {
    /// `dax_pmd_fault_done` with a result other than FALLBACK: a 2 MiB page was mapped
    /// (NOPAGE, or NEEDDSYNC for a MAP_SYNC write fault, which then maps the PMD).
    pmd_mapped: u64,
    /// `dax_pmd_fault_done` ending in FALLBACK: the kernel retried with 4 KiB pages.
    pmd_fallback: u64,
    /// `dax_pte_fault_done`: a 4 KiB page was mapped.
    pte: u64,
}

impl DaxFaults {
    /// The page size the kernel used for the whole range, if it used one.
    fn page_size(&self, len: u64) -> Option<u64> {
        if self.pmd_mapped * MIB2 == len && self.pte == 0 {
            Some(MIB2)
        } else if self.pmd_mapped == 0 && self.pte * KIB4 == len {
            Some(KIB4)
        } else {
            None
        }
    }
}

const TRACING: &str = "/sys/kernel/tracing";
const DAX_EVENTS: [&str; 2] = ["dax_pmd_fault_done", "dax_pte_fault_done"];

/// Maps `spec` while the fs_dax fault events are traced, and counts the events whose
/// faulting address lies inside the new mapping. The tests run one at a time
/// (`--test-threads=1`), so nothing else toggles the events meanwhile.
fn map_traced(spec: &TargetSpec, bytes: u64, opts: &MapOptions) -> (Mapping, DaxFaults) {
    let event = |name: &str, on: &str| {
        let path = format!("{TRACING}/events/fs_dax/{name}/enable");
        std::fs::write(&path, on).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    };
    std::fs::write(format!("{TRACING}/trace"), "").expect("clear the trace buffer");
    // Whatever an earlier test left (the function-tracer test of crates/cli stops tracing
    // when it is done): events are recorded only while tracing is on.
    std::fs::write(format!("{TRACING}/tracing_on"), "1").expect("turn tracing on");
    DAX_EVENTS.iter().for_each(|e| event(e, "1"));
    let mapped = map(spec, bytes, opts);
    DAX_EVENTS.iter().for_each(|e| event(e, "0"));
    let m = mapped.unwrap();
    let start = m.as_mut_ptr() as u64;
    let end = start + m.len() as u64;
    let trace = std::fs::read_to_string(format!("{TRACING}/trace")).unwrap();
    let mut faults = DaxFaults::default();
    for line in trace.lines().filter(|l| !l.starts_with('#')) {
        let Some(addr) = line
            .split(" address 0x")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        if !(start..end).contains(&addr) {
            continue;
        }
        if line.contains("dax_pmd_fault_done:") {
            if line.trim_end().ends_with("FALLBACK") {
                faults.pmd_fallback += 1;
            } else {
                faults.pmd_mapped += 1;
            }
        } else if line.contains("dax_pte_fault_done:") {
            faults.pte += 1;
        }
    }
    (m, faults)
}

/// `filefrag -v` (e2fsprogs, independent of pmscope's FIEMAP reader): for each extent,
/// whether its logical and physical offsets agree modulo 2 MiB — the condition for DAX to
/// map it with 2 MiB pages.
fn extents_pmd_congruent(path: &Path) -> Vec<bool> {
    let out = Command::new("filefrag")
        .arg("-v")
        .arg(path)
        .output()
        .expect("run filefrag");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "filefrag failed: {text}");
    let block: u64 = text
        .split(" blocks of ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .expect("filefrag prints the block size");
    text.lines()
        .filter_map(|l| {
            // "   0:        0..    4095:      36864..     40959:   4096:   last,eof"
            let f: Vec<&str> = l.split(':').collect();
            if f.len() < 4 {
                return None;
            }
            f[0].trim().parse::<u32>().ok()?;
            let start = |s: &str| s.split("..").next()?.trim().parse::<u64>().ok();
            let (logical, physical) = (start(f[1])?, start(f[2])?);
            Some((logical * block) % MIB2 == (physical * block) % MIB2)
        })
        .collect()
}

/// Pages per node of the mapping starting at `start`, from `/proc/self/numa_maps`
/// (`N2=4096`): the kernel's own per-VMA count, independent of move_pages.
fn numa_maps_nodes(start: usize) -> BTreeMap<u32, u64> {
    let text = std::fs::read_to_string("/proc/self/numa_maps").unwrap();
    let line = text
        .lines()
        .find(|l| {
            l.split_whitespace()
                .next()
                .and_then(|a| usize::from_str_radix(a, 16).ok())
                == Some(start)
        })
        .unwrap_or_else(|| panic!("no numa_maps line for {start:#x}"));
    line.split_whitespace()
        .filter_map(|w| {
            let (n, c) = w.strip_prefix('N')?.split_once('=')?;
            Some((n.parse().ok()?, c.parse().ok()?))
        })
        .collect()
}

/// dram,node=N places every page on N: move_pages (pmscope) and numa_maps (kernel) agree.
fn assert_every_page_on(node: u32) {
    let m = assert_every_page_mapped_on(node);
    assert!(m.warnings().is_empty(), "{:?}", m.warnings());
}

/// As [`assert_every_page_on`], leaving the warnings to the caller.
fn assert_every_page_mapped_on(node: u32) -> Mapping {
    let cpus = std::fs::read_to_string(format!("/sys/devices/system/node/node{node}/cpulist"))
        .unwrap_or_else(|e| panic!("node {node} is not in sysfs: {e}"));
    assert_eq!(
        cpus.trim(),
        "",
        "node {node} should have memory but no CPUs"
    );
    let m = map(
        &spec(&format!("dram,node={node}")),
        16 << 20,
        &MapOptions::host(),
    )
    .unwrap();
    let a = m.achieved();
    let pages = (16 << 20) / KIB4;
    assert_eq!(a.nodes, BTreeMap::from([(node, pages)]), "{a:?}");
    assert_eq!(a.nodes_unknown, 0);
    assert!(!a.nodes_sampled);
    assert_eq!(
        numa_maps_nodes(m.as_mut_ptr() as usize),
        BTreeMap::from([(node, pages)]),
        "numa_maps disagrees with move_pages"
    );
    m
}

mod needs_fsdax {
    use super::*;

    #[test]
    #[ignore = "needs a real fsdax mount (LABVM_FSDAX_MNT): runs in the lab guest via lab/stage.sh"]
    fn file_is_map_sync_and_recorded_as_dax() {
        let mnt = lab("LABVM_FSDAX_MNT");
        let m = map(&spec(&format!("file:{mnt}")), 64 << 20, &MapOptions::host()).unwrap();
        let a = m.achieved();
        assert_eq!(a.map_sync, Some(true), "{a:?}");
        assert_eq!(a.persistence, Persistence::Dax);
        assert_eq!(a.filesystem.as_deref(), Some("ext4"));
        assert_eq!(codes(&m), ["pmem-emulated"], "{:?}", m.warnings());
        // The scratch file is unnamed (O_TMPFILE) on the DAX mount, and still MAP_SYNC:
        // nothing of it is visible in the directory, and a SIGKILL cannot leak it.
        assert_eq!(a.path.as_deref(), Some(format!("{mnt} (unnamed)").as_str()));
        let names = |dir: &str| -> Vec<String> {
            std::fs::read_dir(dir)
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("pmscope-"))
                .collect()
        };
        assert_eq!(names(&mnt), Vec::<String>::new());
        let path = m.path().unwrap();
        assert!(path.starts_with("/proc/"), "{}", path.display());
        // The kernel's side: the VMA has synchronous faults (VmFlags `sf`), the inode is
        // DAX (statx STATX_ATTR_DAX), and the mount says dax=always.
        let smaps = pmscope_sys::smaps::probe_range(
            &pmscope_sys::sysroot::SysRoot::host(),
            m.as_mut_ptr() as usize,
            m.len(),
        )
        .unwrap();
        assert!(smaps.vm_flags.iter().any(|f| f == "sf"), "{smaps:?}");
        assert_eq!(
            pmscope_sys::dax::fs_facts(&path).unwrap().statx_dax,
            Some(true)
        );
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        assert!(
            mounts
                .lines()
                .any(|l| l.contains(&format!(" {mnt} ")) && l.contains("dax=always")),
            "{mounts}"
        );
        drop(m);
        assert_eq!(names(&mnt), Vec::<String>::new(), "nothing left afterwards");
    }

    #[test]
    #[ignore = "needs a real fsdax mount with 2 MiB-aligned extents (LABVM_FSDAX_MNT) and tracefs: runs in the lab guest via lab/stage.sh"]
    fn page_size_by_fault_count_matches_the_kernels_pmd_faults() {
        let mnt = lab("LABVM_FSDAX_MNT");
        let len = 64 << 20;
        let (m, kernel) = map_traced(&spec(&format!("file:{mnt}")), len, &MapOptions::host());
        let a = m.achieved();
        // The kernel (tracefs): one PMD fault per 2 MiB, none fell back, no 4 KiB faults.
        assert_eq!(
            kernel,
            DaxFaults {
                pmd_mapped: len / MIB2,
                pmd_fallback: 0,
                pte: 0
            },
            "the guest's ext4 (mkfs -E stride=512) should give 2 MiB DAX faults"
        );
        // filefrag predicts the same from the extents.
        let extents = extents_pmd_congruent(&m.path().unwrap());
        assert!(
            !extents.is_empty() && extents.iter().all(|&c| c),
            "{extents:?}"
        );
        // pmscope: smaps is blind to fsdax PMD mappings, so the verdict rests on the fault
        // count, and it matches the kernel's.
        let smaps = pmscope_sys::smaps::probe_range(
            &pmscope_sys::sysroot::SysRoot::host(),
            m.as_mut_ptr() as usize,
            m.len(),
        )
        .unwrap();
        assert_eq!(smaps.file_pmd, 0, "smaps now shows fsdax PMDs: {smaps:?}");
        assert!(!a.pages.smaps_sees_mapping);
        assert_eq!(a.page_size, kernel.page_size(len));
        assert_eq!(a.page_size, Some(MIB2));
        assert_eq!(a.page_size_source, "faults");
        assert!(
            (kernel.pmd_mapped..=kernel.pmd_mapped + 2).contains(&a.faults.minor_faults),
            "{:?} against {} PMD faults",
            a.faults,
            kernel.pmd_mapped
        );
        assert_eq!(codes(&m), ["pmem-emulated"], "{:?}", m.warnings());
    }

    #[test]
    #[ignore = "needs a real fsdax mount with 2 MiB-aligned extents (LABVM_FSDAX_MNT) and tracefs: runs in the lab guest via lab/stage.sh"]
    fn page_option_gives_4k_or_2m_dax_faults_and_refuses_1g_on_fsdax() {
        let mnt = lab("LABVM_FSDAX_MNT");
        let len = 16 << 20;
        // page=4k: MADV_NOHUGEPAGE keeps every DAX fault at 4 KiB on extents that would
        // allow 2 MiB (the default mapping of the same file system gets PMDs, above).
        let (m, kernel) = map_traced(
            &spec(&format!("file:{mnt},page=4k")),
            len,
            &MapOptions::host(),
        );
        assert_eq!(
            kernel,
            DaxFaults {
                pmd_mapped: 0,
                pmd_fallback: 0,
                pte: len / KIB4
            },
            "page=4k on fsdax"
        );
        let a = m.achieved();
        assert_eq!(a.persistence, Persistence::Dax);
        assert_eq!(a.page_size, Some(KIB4));
        assert_eq!(a.page_size_source, "faults");
        assert_eq!(codes(&m), ["pmem-emulated"], "{:?}", m.warnings());
        drop(m);
        // page=2m: the file system's own 2 MiB faults, as without the option.
        let (m, kernel) = map_traced(
            &spec(&format!("file:{mnt},page=2m")),
            len,
            &MapOptions::host(),
        );
        assert_eq!(kernel.page_size(len), Some(MIB2), "{kernel:?}");
        assert_eq!(m.achieved().page_size, Some(MIB2));
        assert_eq!(codes(&m), ["pmem-emulated"], "{:?}", m.warnings());
        drop(m);
        // page=1g: the kernel has no 1 GiB faults for DAX files; refused before anything
        // is created, as a usage error.
        let before = std::fs::read_dir(&mnt).unwrap().count();
        let Err(e) = map(
            &spec(&format!("file:{mnt},page=1g")),
            len,
            &MapOptions::host(),
        ) else {
            panic!("page=1g on fsdax is refused");
        };
        assert!(e.is_usage(), "{e}");
        assert!(e.to_string().contains("at most 2 MiB pages"), "{e}");
        assert_eq!(
            std::fs::read_dir(&mnt).unwrap().count(),
            before,
            "nothing left in {mnt}"
        );
    }
}

mod needs_legacy_pmem {
    use super::*;

    /// A scratch ext4 -o dax on the legacy pmem device, unmounted on drop.
    struct ScratchDax {
        dir: tempfile::TempDir,
    }

    impl ScratchDax {
        fn mkfs(dev: &str, mkfs_args: &[&str]) -> ScratchDax {
            let run = |cmd: &str, args: &[&str]| {
                let o = Command::new(cmd).args(args).output().unwrap();
                assert!(
                    o.status.success(),
                    "{cmd} {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            };
            let mut args = vec!["-q", "-F", "-b", "4096"];
            args.extend_from_slice(mkfs_args);
            args.push(dev);
            run("mkfs.ext4", &args);
            let dir = tempfile::tempdir().unwrap();
            run("mount", &["-o", "dax", dev, dir.path().to_str().unwrap()]);
            ScratchDax { dir }
        }
    }

    impl Drop for ScratchDax {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.dir.path()).status();
        }
    }

    #[test]
    #[ignore = "needs a raw DAX-capable pmem block device it may reformat (LABVM_LEGACY_PMEM) and tracefs: runs in the lab guest via lab/stage.sh"]
    fn misaligned_dax_file_gets_4k_pages_and_says_why() {
        let dev = lab("LABVM_LEGACY_PMEM");
        // Block groups of 32760 blocks: ext4's buddy allocator aligns extents to the group
        // start, and group starts past the first are not 2 MiB-aligned, so DAX falls back
        // to 4 KiB pages (found in the lab guest: extents start 8 blocks short of 2 MiB).
        let fs = ScratchDax::mkfs(&dev, &["-g", "32760"]);
        let len = 16 << 20;
        let target = spec(&format!("file:{}", fs.dir.path().display()));
        let (m, kernel) = map_traced(&target, len, &MapOptions::host());
        let a = m.achieved();
        let extents = extents_pmd_congruent(&m.path().unwrap());
        assert_eq!(
            extents,
            [false],
            "filefrag: one extent, not 2 MiB-congruent"
        );
        assert_eq!(kernel.page_size(len), Some(KIB4), "{kernel:?}");
        assert_eq!(a.page_size, Some(KIB4), "{a:?}");
        assert_eq!(a.page_size_source, "faults");
        assert_eq!(a.persistence, Persistence::Dax);
        let w = m
            .warnings()
            .iter()
            .find(|w| w.code == "page-size-mismatch")
            .unwrap_or_else(|| panic!("no page-size warning: {:?}", m.warnings()));
        assert!(
            w.message.contains("got mostly 4 KiB pages"),
            "{}",
            w.message
        );
        assert!(
            w.remedy
                .contains("0 of the file's first 1 extents are 2 MiB-congruent"),
            "{}",
            w.remedy
        );
        drop(m);
    }
}

mod needs_devdax {
    use super::*;

    fn destroy() -> MapOptions {
        MapOptions {
            destroy_data: Some(DestroyData::accepted_by_flag()),
            ..MapOptions::host()
        }
    }

    #[test]
    #[ignore = "needs a devdax device with 2 MiB alignment (LABVM_DEVDAX): runs in the lab guest via lab/stage.sh"]
    fn maps_at_its_alignment_with_2m_pages() {
        let dev = lab("LABVM_DEVDAX");
        let name = Path::new(&dev).file_name().unwrap().to_str().unwrap();
        let align: u64 = std::fs::read_to_string(format!("/sys/bus/dax/devices/{name}/align"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(align, MIB2, "the lab guest makes its devdax with -a 2M");
        // 63 MiB is not a multiple of the alignment: pmscope rounds it up.
        let m = map(&spec(&format!("devdax:{dev}")), 63 << 20, &destroy()).unwrap();
        let a = m.achieved();
        assert_eq!(a.bytes, 64 << 20);
        assert_eq!(m.as_mut_ptr() as u64 % align, 0);
        assert_eq!(a.alignment, Some(align));
        assert_eq!(a.persistence, Persistence::Dax);
        assert_eq!(a.map_sync, Some(true));
        // smaps sees devdax pages (KernelPageSize 2048 kB), and the fault count agrees.
        assert!(a.pages.smaps_sees_mapping);
        assert_eq!(a.pages.bytes_2m, 64 << 20, "{:?}", a.pages);
        assert_eq!(a.page_size, Some(MIB2));
        assert_eq!(a.page_size_source, "smaps+faults");
        assert!((32..=34).contains(&a.faults.minor_faults), "{:?}", a.faults);
        // 63 MiB became 64 MiB (the note says so), on QEMU's emulated NVDIMM.
        assert_eq!(
            codes(&m),
            ["pmem-emulated", "size-rounded-up"],
            "{:?}",
            m.warnings()
        );
    }

    #[test]
    #[ignore = "needs a devdax device (LABVM_DEVDAX): runs in the lab guest via lab/stage.sh"]
    fn refuses_without_destroy_data_and_the_kernel_refuses_unaligned_lengths() {
        let dev = lab("LABVM_DEVDAX");
        let e = map(
            &spec(&format!("devdax:{dev}")),
            2 << 20,
            &MapOptions::host(),
        )
        .unwrap_err();
        assert!(e.is_usage());
        assert_eq!(
            e.to_string(),
            format!(
                "writing to {dev} destroys its contents; pass --destroy-data if that is what you want"
            )
        );
        // Why pmscope rounds: the device itself refuses a 4 KiB mapping (EINVAL).
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&dev)
            .unwrap();
        use std::os::fd::AsFd;
        let e = pmscope_sys::mman::map_file(
            f.as_fd(),
            4096,
            4096,
            pmscope_sys::mman::FileMapMode::Shared,
        )
        .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
        // A request below the alignment becomes one whole aligned page.
        let m = map(&spec(&format!("devdax:{dev}")), 4096, &destroy()).unwrap();
        assert_eq!(m.len() as u64, MIB2);
    }
}

mod needs_memonly_node {
    use super::*;

    #[test]
    #[ignore = "needs a NUMA node with memory and no CPUs (LABVM_MEMONLY_NODE): runs in the lab guest via lab/stage.sh"]
    fn node_binding_places_every_page_on_the_memory_only_node() {
        assert_every_page_on(lab("LABVM_MEMONLY_NODE").parse().unwrap());
    }
}

mod needs_kmem_node {
    use super::*;

    #[test]
    #[ignore = "needs a dax/kmem (CXL-like) node onlined from pmem (LABVM_KMEM_NODE, lab/vm.sh -l kmem): runs in the lab guest via lab/stage.sh"]
    fn node_binding_places_every_page_on_the_kmem_node() {
        assert_every_page_on(lab("LABVM_KMEM_NODE").parse().unwrap());
    }
}

mod needs_cxl {
    use super::*;

    /// The node a CXL region became through devdax + kmem holds every page, and the mapping
    /// knows it is that region's (QEMU's emulated device: the one warning).
    #[test]
    #[ignore = "needs a CXL region onlined as a NUMA node (LABVM_CXL_NODE, lab/vm.sh -l cxl): runs in the lab guest via lab/stage.sh"]
    fn node_binding_places_every_page_on_the_cxl_node() {
        let node = lab("LABVM_CXL_NODE").parse().unwrap();
        let m = assert_every_page_mapped_on(node);
        let cxl = m.achieved().cxl.as_ref().expect("CXL facts on a CXL node");
        assert_eq!(cxl.region, lab("LABVM_CXL_REGION"));
        assert_eq!(cxl.node, Some(node));
        assert_eq!(codes(&m), ["cxl-emulated"], "{:?}", m.warnings());
    }
}
