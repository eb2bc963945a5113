//! What several kinds share, so that no kind imports another: the page policy of
//! anonymous and shm memory and its grammar, the hugetlb pool's room and check (dram's
//! 2m/1g, a file on hugetlbfs), a tmpfs's limit (shm, a file on tmpfs) and the scratch file
//! a file or shm target maps.

use crate::backing::{Backing, MapOptions, Scratch};
use crate::error::{SpecError, TargetError};
use crate::room::{Limit, TargetRoom};
use pmscope_core::units::Bytes;
use pmscope_core::warning::Warning;
use pmscope_sys::dax;
use pmscope_sys::hugepages;
use pmscope_sys::scratch;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The page policy of anonymous (and shm) memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum PagePolicy {
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
    pub(super) fn name(self) -> &'static str {
        match self {
            PagePolicy::Base4k => "4k",
            PagePolicy::Thp => "thp",
            PagePolicy::Huge2m => "2m",
            PagePolicy::Huge1g => "1g",
        }
    }

    /// The hugetlb page size, if this is a hugetlb policy.
    pub(super) fn hugetlb_bytes(self) -> Option<u64> {
        match self {
            PagePolicy::Huge2m => Some(2 << 20),
            PagePolicy::Huge1g => Some(1 << 30),
            _ => None,
        }
    }

    /// The page size the policy asks for.
    pub(super) fn expected_page_bytes(self) -> u64 {
        match self {
            PagePolicy::Base4k => 4 << 10,
            PagePolicy::Thp | PagePolicy::Huge2m => 2 << 20,
            PagePolicy::Huge1g => 1 << 30,
        }
    }

    /// The granule a mapping's length is rounded up to: a huge page for every policy that
    /// asks for one (a THP range that ends inside a 2 MiB page cannot be fully huge), else
    /// a base page.
    pub(super) fn length_granule(self) -> u64 {
        self.expected_page_bytes()
    }
}

/// Parses a page policy; `hugetlb` says whether 2m and 1g are allowed.
pub(super) fn parse_policy(
    arg: Option<&str>,
    kind: &str,
    hugetlb: bool,
) -> Result<PagePolicy, SpecError> {
    let p = match arg {
        None | Some("4k") => PagePolicy::Base4k,
        Some("thp") => PagePolicy::Thp,
        Some("2m") if hugetlb => PagePolicy::Huge2m,
        Some("1g") if hugetlb => PagePolicy::Huge1g,
        Some(other) if hugetlb => {
            return Err(SpecError(format!(
                "'{other}' is not a page policy for {kind}: use 4k, thp, 2m or 1g"
            )));
        }
        Some(other) => {
            return Err(SpecError(format!(
                "'{other}' is not a page policy for {kind}: use 4k or thp (for hugetlb-backed files use file: on a hugetlbfs mount)"
            )));
        }
    };
    Ok(p)
}

/// What a hugetlb pool of `size` pages allows (the pages `check_hugetlb_pool` counts as
/// free): not RAM that MemAvailable counts, but pages reserved beforehand.
pub(super) fn hugetlb_room(opts: &MapOptions, size: u64, node: Option<u32>) -> TargetRoom {
    let free = hugepages::pool(&opts.root, size, None).map_or(0, |p| p.available());
    let node_free = node.and_then(|n| hugepages::pool(&opts.root, size, Some(n)).map(|p| p.free));
    let pages = node_free.map_or(free, |f| f.min(free));
    TargetRoom {
        granule: size,
        ram: false,
        own: Some(Limit {
            bytes: pages * size,
            what: format!(
                "the {pages} free {} huge pages{}",
                Bytes(size),
                node.filter(|_| node_free.is_some())
                    .map_or(String::new(), |n| format!(" of node {n}"))
            ),
            remedy: format!(
                "reserve more with `echo N > {}` as root",
                hugepages::Pool::nr_path(size, node)
            ),
        }),
    }
}

/// Refuses a hugetlb mapping when the pool cannot hold it, saying how to reserve pages.
pub(super) fn check_hugetlb_pool(
    opts: &MapOptions,
    size: u64,
    len: u64,
    node: Option<u32>,
) -> Result<(), TargetError> {
    let needed = len / size;
    let pool = hugepages::pool(&opts.root, size, None);
    let (free, total) = pool
        .as_ref()
        .map(|p| (p.available(), p.total))
        .unwrap_or((0, 0));
    let node_free = node.and_then(|n| hugepages::pool(&opts.root, size, Some(n)).map(|p| p.free));
    let short = free < needed || node_free.is_some_and(|f| f < needed);
    if short {
        let (have, path) = match node_free {
            Some(f) if f < needed => (
                format!("{f} free on node {}", node.unwrap_or(0)),
                hugepages::Pool::nr_path(size, node),
            ),
            _ => (
                format!("{free} of {total} free"),
                hugepages::Pool::nr_path(size, None),
            ),
        };
        let what = if total == 0 && pool.is_none() {
            format!("this kernel offers no {} huge pages", Bytes(size))
        } else {
            format!(
                "not enough free {} huge pages ({have}, {needed} needed)",
                Bytes(size)
            )
        };
        return Err(TargetError::system(format!(
            "{what}; reserve them with `echo {} > {path}` as root",
            total + needed - free.min(needed)
        )));
    }
    Ok(())
}

/// The free space of a tmpfs (its own limit, besides MemAvailable), as shm's
/// `check_tmpfs_room` counts it.
pub(super) fn tmpfs_limit(dir: &Path) -> Option<Limit> {
    let facts = dax::fs_facts(dir).ok()?;
    Some(Limit {
        bytes: facts.available_bytes,
        what: format!(
            "the free space of {} ({} of its {} tmpfs limit)",
            dir.display(),
            Bytes(facts.available_bytes).human(),
            Bytes(facts.total_bytes).human()
        ),
        remedy: format!("remove files you no longer need from {}", dir.display()),
    })
}

/// Creates the scratch file of a target in `dir`: unnamed where the file system allows
/// (`name` is what `--keep` will call it; `None`: a fresh name in `dir`), else named
/// exclusively after this process (`name`, or `pmscope-<pid>-<n>.bin`), after sweeping
/// the files killed runs left in `dir`.
pub(super) fn create_scratch(
    dir: &Path,
    name: Option<&Path>,
    keep: bool,
) -> Result<Backing, TargetError> {
    match scratch::create_unnamed(dir) {
        Ok(file) => {
            return Ok(Backing::scratch(
                file,
                Scratch::Unnamed {
                    dir: dir.to_path_buf(),
                    name: name.map(Path::to_path_buf),
                },
                keep,
            ));
        }
        Err(e) if scratch::unnamed_unsupported(&e) => {}
        Err(e) => {
            return Err(TargetError::system(format!(
                "cannot create a file in {}: {e}",
                dir.display()
            )));
        }
    }
    let stale = scratch::remove_stale(dir);
    let (file, path) = match name {
        Some(path) => {
            let f = create_exclusive(path).map_err(|e| {
                TargetError::usage(format!("cannot create {}: {e}", path.display()))
            })?;
            (f, path.to_path_buf())
        }
        None => create_exclusive_in(dir)?,
    };
    let mut backing = Backing::scratch(file, Scratch::Named(path), keep);
    if !stale.is_empty() {
        backing.note(Warning::new(
            "stale-files-removed",
            format!(
                "removed {} file(s) that killed pmscope runs left in {}: {}",
                stale.len(),
                dir.display(),
                stale
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "nothing to do: this file system has no unnamed files, so a killed run leaves its \
             file until the next run sweeps it",
        ));
    }
    Ok(backing)
}

/// Creates a new file in `dir` with O_EXCL, named after this process, never reusing a name.
fn create_exclusive_in(dir: &Path) -> Result<(File, PathBuf), TargetError> {
    for seq in 0..1000 {
        let path = dir.join(scratch::named(std::process::id(), seq));
        match create_exclusive(&path) {
            Ok(f) => return Ok((f, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(TargetError::system(format!(
                    "cannot create a file in {}: {e}",
                    dir.display()
                )));
            }
        }
    }
    Err(TargetError::system(format!(
        "cannot find a free file name in {}",
        dir.display()
    )))
}

fn create_exclusive(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
}
