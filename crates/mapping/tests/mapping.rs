//! Mapping real targets on this machine and reading back what the kernel gave.
//! The hugetlb tests need reserved pages: `./dev test` (and CI) reserves them; run bare,
//! they fail with the command that would.

use pmscope_core::achieved::Persistence;
use pmscope_core::units::{GIB1, KIB4, MIB2};
use pmscope_mapping::{DestroyData, MapOptions, MemoryGuard, TargetSpec, map};
use pmscope_sys::sysroot::SysRoot;

fn spec(s: &str) -> TargetSpec {
    s.parse().unwrap()
}

fn need_hugepages(size: u64, count: u64) {
    let pool = pmscope_sys::hugepages::pool(&SysRoot::host(), size, None);
    let free = pool.map(|p| p.available()).unwrap_or(0);
    assert!(
        free >= count,
        "this test needs {count} free hugetlb pages of {size} bytes ({free} free): run `./dev test`, \
         which reserves them, or `echo {count} > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages`",
        size / 1024
    );
}

#[test]
fn dram_4k_is_base_pages_on_node_0() {
    let m = map(&spec("dram:4k"), 16 << 20, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert_eq!(a.bytes, 16 << 20);
    assert_eq!(a.page_size, Some(KIB4));
    assert_eq!(a.page_size_source, "smaps+faults");
    assert_eq!(a.pages.bytes_4k, 16 << 20);
    assert!(a.faults.minor_faults >= 4096, "{:?}", a.faults);
    assert_eq!(a.persistence, Persistence::Volatile);
    assert!(a.nodes.contains_key(&0));
    assert!(m.warnings().is_empty(), "{:?}", m.warnings());
}

#[test]
fn dram_thp_shows_huge_pages_in_smaps() {
    let m = map(&spec("dram:thp"), 64 << 20, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert!(a.pages.bytes_2m > 0, "no AnonHugePages: {:?}", a.pages);
    assert_eq!(a.page_size, Some(MIB2), "{a:?}");
    // One fault per 2 MiB page, not one per 4 KiB.
    assert!(a.faults.minor_faults < 1024, "{:?}", a.faults);
}

/// A THP range ending inside a 2 MiB page cannot be fully huge: the kind rounds it up and
/// says so, instead of blaming the THP settings for a size the user chose (issue 17).
#[test]
fn dram_thp_rounds_a_partial_huge_page_up_and_says_so() {
    let m = map(&spec("dram:thp"), 3 << 20, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert_eq!(a.bytes, 4 << 20);
    let codes: Vec<&str> = m.warnings().iter().map(|w| w.code.as_str()).collect();
    assert!(codes.contains(&"size-rounded-up"), "{:?}", m.warnings());
    assert!(!codes.contains(&"page-size-mismatch"), "{:?}", m.warnings());
    let note = m
        .warnings()
        .iter()
        .find(|w| w.code == "size-rounded-up")
        .unwrap();
    assert!(
        note.message.contains("3.0 MiB was rounded up to 4.0 MiB"),
        "{}",
        note.message
    );
    // A size pmscope chose itself (a k-mer table's) is rounded the same, silently: no note
    // asks the user for a size they never gave (issue 27).
    let m = pmscope_mapping::map_chosen(&spec("dram:thp"), 3 << 20, &MapOptions::host()).unwrap();
    assert_eq!(m.achieved().bytes, 4 << 20);
    assert!(
        m.warnings().iter().all(|w| w.code != "size-rounded-up"),
        "{:?}",
        m.warnings()
    );
    // A size that is already whole gets no note.
    let m = map(&spec("dram:thp"), 4 << 20, &MapOptions::host()).unwrap();
    assert!(m.warnings().iter().all(|w| w.code != "size-rounded-up"));
    // Base pages need no rounding beyond 4 KiB.
    let m = map(&spec("dram:4k"), 3 << 20, &MapOptions::host()).unwrap();
    assert_eq!(m.achieved().bytes, 3 << 20);
    assert!(m.warnings().is_empty(), "{:?}", m.warnings());
}

#[test]
fn node_binding_places_pages_on_the_node() {
    let m = map(&spec("dram:4k,node=0"), 8 << 20, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert_eq!(a.nodes.get(&0).copied(), Some(2048));
    assert_eq!(a.nodes.len(), 1);
    assert!(m.warnings().is_empty());
    // A node the machine lacks is the user's mistake, refused before anything is mapped.
    let e = map(&spec("dram:4k,node=63"), 8 << 20, &MapOptions::host()).unwrap_err();
    assert!(e.is_usage(), "{e}");
    assert!(
        e.to_string()
            .starts_with("dram:4k,node=63: this machine has no node 63; nodes with memory here: "),
        "{e}"
    );
}

#[test]
fn hugetlb_2m_reads_back_2m_pages() {
    need_hugepages(MIB2, 8);
    let m = map(&spec("dram:2m"), 15 << 20, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert_eq!(a.bytes, 16 << 20, "rounded up to whole huge pages");
    assert_eq!(a.pages.bytes_2m, 16 << 20);
    assert_eq!(a.page_size, Some(MIB2));
    assert_eq!(a.page_size_source, "smaps+faults");
    assert_eq!(a.faults.minor_faults, 8);
}

#[test]
fn hugetlb_1g_reads_back_1g_pages() {
    need_hugepages(GIB1, 1);
    let m = map(&spec("dram:1g"), 1 << 30, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert_eq!(a.pages.bytes_1g, 1 << 30);
    assert_eq!(a.page_size, Some(GIB1));
    assert_eq!(a.faults.minor_faults, 1);
    assert_eq!(m.as_mut_ptr() as usize % (1 << 30), 0);
}

#[test]
fn no_free_huge_pages_says_how_to_reserve() {
    let root = tempfile::tempdir().unwrap();
    let pool = root.path().join("sys/kernel/mm/hugepages/hugepages-2048kB");
    std::fs::create_dir_all(&pool).unwrap();
    for (f, v) in [
        ("nr_hugepages", "0"),
        ("free_hugepages", "0"),
        ("resv_hugepages", "0"),
    ] {
        std::fs::write(pool.join(f), v).unwrap();
    }
    let opts = MapOptions {
        root: SysRoot::at(root.path()),
        ..MapOptions::host()
    };
    let e = map(&spec("dram:2m"), 64 << 20, &opts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not enough free 2MiB huge pages (0 of 0 free, 32 needed); reserve them with \
         `echo 32 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages` as root"
    );
    assert!(!e.is_usage());
    let e = map(&spec("dram:1g"), 1 << 30, &opts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "this kernel offers no 1GiB huge pages; reserve them with \
         `echo 1 > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages` as root"
    );
}

#[test]
fn shm_is_emulated_and_refuses_map_sync() {
    let m = map(&spec("shm"), 8 << 20, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert_eq!(a.map_sync, Some(false));
    assert_eq!(a.persistence, Persistence::Emulated);
    assert_eq!(a.filesystem, None);
    // Unnamed (O_TMPFILE): nothing in /dev/shm carries this process's files, so a
    // SIGKILL cannot leak them; the process reaches it through /proc.
    assert_eq!(a.path.as_deref(), Some("/dev/shm (unnamed)"));
    let ours = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("pmscope-{}-", std::process::id())))
            .collect()
    };
    assert_eq!(ours(), Vec::<String>::new());
    let path = m.path().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 8 << 20);
    drop(m);
    assert_eq!(ours(), Vec::<String>::new());
}

#[test]
fn ordinary_file_is_page_cache_and_require_dax_refuses_it() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = spec(&format!("file:{}", dir.path().display()));
    let m = map(&target, 4 << 20, &MapOptions::host()).unwrap();
    let a = m.achieved();
    assert_eq!(a.map_sync, Some(false));
    assert_eq!(a.persistence, Persistence::PageCache);
    assert!(m.warnings().iter().any(|w| w.code == "not-dax"));
    drop(m);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "file removed"
    );
    let opts = MapOptions {
        require_dax: true,
        ..MapOptions::host()
    };
    let e = map(&target, 4 << 20, &opts).unwrap_err();
    assert!(
        e.to_string().contains("without DAX (MAP_SYNC refused"),
        "{e}"
    );
    assert!(e.is_usage());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file left after refusal"
    );
}

#[test]
fn file_never_overwrites_and_keep_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.dat");
    std::fs::write(&path, b"precious").unwrap();
    let e = map(
        &spec(&format!("file:{}", path.display())),
        1 << 20,
        &MapOptions::host(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} already exists and pmscope never overwrites a file; name a directory or a new path",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
    let fresh = dir.path().join("new.dat");
    let opts = MapOptions {
        keep: true,
        ..MapOptions::host()
    };
    let m = map(&spec(&format!("file:{}", fresh.display())), 1 << 20, &opts).unwrap();
    drop(m);
    assert!(fresh.exists(), "--keep keeps the file");
}

#[test]
fn devdax_is_refused_without_destroy_data() {
    let e = map(&spec("devdax:/dev/dax0.0"), 2 << 20, &MapOptions::host()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "writing to /dev/dax0.0 destroys its contents; pass --destroy-data if that is what you want"
    );
    assert!(e.is_usage());
    // With the token the refusal is the device's absence, not the flag.
    let opts = MapOptions {
        destroy_data: Some(DestroyData::accepted_by_flag()),
        ..MapOptions::host()
    };
    if !std::path::Path::new("/dev/dax0.0").exists() {
        let e = map(&spec("devdax:/dev/dax0.0"), 2 << 20, &opts).unwrap_err();
        assert!(e.to_string().contains("/dev/dax0.0 does not exist"), "{e}");
        assert!(
            e.is_usage(),
            "a device the user named that is not there: {e}"
        );
    }
}

#[test]
fn memory_guard_refuses_before_mapping() {
    let opts = MapOptions {
        guard: MemoryGuard::with(1 << 30, Some(64 << 20)),
        ..MapOptions::host()
    };
    let e = map(&spec("dram:4k"), 128 << 20, &opts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "dram:4k needs 128.0 MiB but --max-mem allows 64.0 MiB; use a smaller size or raise --max-mem"
    );
    let e = map(&spec("shm"), 2 << 30, &opts).unwrap_err();
    assert!(
        e.to_string()
            .contains("only 1.0 GiB of memory is available"),
        "{e}"
    );
}

#[test]
fn mapped_memory_is_usable_through_every_view() {
    let mut m = map(&spec("dram:4k"), 1 << 20, &MapOptions::host()).unwrap();
    m.bytes_mut()[4095] = 42;
    assert_eq!(m.bytes_mut()[4095], 42);
    m.atomics()[1].store(7, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        u64::from_ne_bytes(m.bytes_mut()[8..16].try_into().unwrap()),
        7
    );
    assert_eq!(m.slice_mut::<u64>().unwrap()[1], 7);
    m.slice_mut::<u32>().unwrap()[0] = 0xdead_beef;
    assert_eq!(m.slice_mut::<u32>().unwrap().len(), (1 << 20) / 4);
    assert_eq!(&m.bytes_mut()[..4], &0xdead_beefu32.to_ne_bytes());
    // Anonymous memory has nothing another process could open.
    assert_eq!(m.handoff(), None);
}

#[test]
fn a_file_mapping_hands_off_its_path_and_range() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let s = spec(&format!("file:{}", dir.path().display()));
    let m = map(&s, 1 << 20, &MapOptions::host()).unwrap();
    let h = m.handoff().expect("file-backed");
    assert_eq!(Some(h.path.clone()), m.path());
    assert_eq!(h.offset, 0);
    assert_eq!(h.len, m.len() as u64);
}

#[test]
fn first_touch_by_several_cpus_prefaults_every_page_once() {
    let cpus = pmscope_sys::affinity::allowed_cpus().unwrap();
    let opts = MapOptions {
        first_touch_cpus: cpus.clone(),
        ..MapOptions::host()
    };
    let m = map(&spec("dram:4k"), 8 << 20, &opts).unwrap();
    let a = m.achieved();
    // Every 4 KiB page faulted once, by one of the threads, whatever their number.
    assert!(
        a.faults.minor_faults >= 2048 && a.faults.minor_faults < 2048 + 16 * cpus.len() as u64,
        "{:?}",
        a.faults
    );
    assert_eq!(a.page_size, Some(KIB4));
    assert_eq!(a.pages.bytes_4k, 8 << 20);
}

/// Pages touched in a random order: every page still faulted once; and (as root, where
/// pagemap shows frame numbers) a second mapping made beside the first meets other page
/// colours at the same offsets about as often as chance says (1/64), where two mappings
/// touched in address order mostly meet the same ones.
#[test]
fn shuffled_first_touch_gives_each_offset_a_random_page() {
    use pmscope_mapping::FirstTouch;
    let opts = |order| MapOptions {
        first_touch_order: order,
        ..MapOptions::host()
    };
    let bytes = 64u64 << 20;
    let a = map(&spec("dram:4k"), bytes, &opts(FirstTouch::Shuffled(1))).unwrap();
    let f = a.achieved().faults.minor_faults;
    assert!((16384..16384 + 64).contains(&f), "{f} faults");
    let b = map(&spec("dram:4k"), bytes, &opts(FirstTouch::Shuffled(2))).unwrap();
    let frames = |m: &pmscope_mapping::Mapping| {
        pmscope_sys::pagemap::frames(m.as_mut_ptr() as usize, m.len(), 4096)
    };
    let same_colour = |x: &[u64], y: &[u64]| {
        x.iter().zip(y).filter(|(p, q)| *p % 64 == *q % 64).count() as f64 / x.len() as f64
    };
    let (Some(fa), Some(fb)) = (frames(&a), frames(&b)) else {
        assert_ne!(
            pmscope_sys::process::effective_uid(),
            0,
            "root reads frames"
        );
        return;
    };
    let shuffled = same_colour(&fa, &fb);
    assert!(
        shuffled < 0.05,
        "shuffled: {shuffled} of offsets kept their colour"
    );
    // Mapped while the first still held its pages: no frame is shared.
    let held: std::collections::HashSet<u64> = fa.iter().copied().collect();
    assert!(fb.iter().all(|p| !held.contains(p)));
}

/// `--keep` on a directory target names the unnamed file with a kept name, which a later
/// run's stale-file sweep never takes.
#[test]
fn a_kept_file_gets_a_name_no_sweep_takes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = MapOptions {
        keep: true,
        ..MapOptions::host()
    };
    let m = map(
        &spec(&format!("file:{}", dir.path().display())),
        1 << 20,
        &opts,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "unnamed while mapped"
    );
    drop(m);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [format!("pmscope-{}-0-kept.bin", std::process::id())]
    );
    assert!(pmscope_sys::scratch::remove_stale(dir.path()).is_empty());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
