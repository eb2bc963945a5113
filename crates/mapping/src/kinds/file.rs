//! `file:PATH` — a shared mapping of a file pmscope creates exclusively (O_EXCL), in the
//! directory PATH or at the new path PATH; removed afterwards unless `--keep`.
//!
//! On a DAX file system the file is mapped `MAP_SHARED_VALIDATE | MAP_SYNC` and stores are
//! durable after a cache flush and fence (`persistence: dax`); anywhere else MAP_SYNC is
//! refused with EOPNOTSUPP and the mapping goes through the page cache (`persistence:
//! page-cache (msync needed)`), which `--require-dax` turns into an error. A file on a
//! hugetlbfs mount is how hugetlb-backed shared memory is measured.

use super::common::{check_hugetlb_pool, create_scratch, hugetlb_room, tmpfs_limit};
use super::{Kind, KindEntry, PrepareCtx};
use crate::backing::{Backing, Expectation, MapOptions};
use crate::error::SpecError;
use crate::room::{Limit, TargetRoom};
use crate::{HeapBacking, TargetError};
use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::units::Bytes;
use pmscope_sys::dax::{self, ExtentLayout};
use pmscope_sys::mman::{self, FileMapMode, RawMap};
use pmscope_sys::path::{self, Found, parent_of};
use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) const ENTRY: KindEntry = KindEntry {
    name: "file",
    syntax: "file:PATH[,page=4k|2m|1g][,node=N]",
    doc: "A file pmscope creates exclusively (never an existing one) in directory PATH, or at \
          PATH if it does not exist, and maps shared. On a DAX file system it is mapped with \
          MAP_SYNC (persistence: dax); elsewhere through the page cache (msync needed), \
          which --require-dax refuses. Removed afterwards unless --keep. On a hugetlbfs mount \
          it gives hugetlb-backed shared memory. page= asks for a page size instead of the \
          file system's own: 4k refuses huge pages (MADV_NOHUGEPAGE, also on DAX), 2m needs \
          DAX (or tmpfs THP, or a 2 MiB hugetlbfs), 1g a hugetlbfs mount with 1 GiB pages \
          (the kernel maps DAX files with at most 2 MiB pages; a devdax device aligned at \
          1 GiB gives 1 GiB pages).",
    options: &["page=4k|2m|1g"],
    parse,
};

/// `file:PATH[,page=SIZE]`.
#[derive(Debug)]
struct FileKind {
    path: PathBuf,
    /// The page size `page=` asks for; `None`: the file system's own (DAX 2 MiB where the
    /// extents allow, the page cache 4 KiB, hugetlbfs its page size).
    page: Option<FilePage>,
}

/// A page size `page=` can ask of a file's mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FilePage {
    Base4k,
    Huge2m,
    Huge1g,
}

impl FilePage {
    fn parse(value: &str) -> Result<FilePage, SpecError> {
        match value {
            "4k" => Ok(FilePage::Base4k),
            "2m" => Ok(FilePage::Huge2m),
            "1g" => Ok(FilePage::Huge1g),
            other => Err(SpecError(format!(
                "page '{other}' is not a page size for file: use page=4k, page=2m or page=1g"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            FilePage::Base4k => "4k",
            FilePage::Huge2m => "2m",
            FilePage::Huge1g => "1g",
        }
    }

    fn bytes(self) -> u64 {
        match self {
            FilePage::Base4k => 4 << 10,
            FilePage::Huge2m => 2 << 20,
            FilePage::Huge1g => 1 << 30,
        }
    }
}

impl Kind for FileKind {
    fn entry(&self) -> &'static KindEntry {
        &ENTRY
    }

    fn argument(&self) -> String {
        match self.page {
            Some(page) => format!("{},page={}", self.path.display(), page.name()),
            None => self.path.display().to_string(),
        }
    }

    fn page_policy(&self) -> Option<&'static str> {
        self.page.map(FilePage::name)
    }

    fn memory(&self) -> String {
        format!("file:{}", self.path.display())
    }

    fn preflight(&self, _opts: &MapOptions) -> Result<(), TargetError> {
        let place = where_to_create(&self.path)?;
        if let Some(page) = self.page {
            let dir = match place {
                Place::InDirectory => self.path.as_path(),
                Place::NewFile => parent_of(&self.path),
            };
            check_page_request(page, &Home::of(dir.to_path_buf())?)?;
        }
        Ok(())
    }

    fn room(&self, target: &PrepareCtx, opts: &MapOptions) -> TargetRoom {
        // As `prepare` checks: a hugetlbfs file takes pool pages, a tmpfs file RAM and the
        // tmpfs's room, any other file its file system's free space.
        let dir = if self.path.is_dir() {
            self.path.as_path()
        } else {
            parent_of(&self.path)
        };
        let Ok(facts) = dax::fs_facts(dir) else {
            return TargetRoom::ram(2 << 20);
        };
        if facts.magic == dax::HUGETLBFS_MAGIC {
            return hugetlb_room(opts, huge_page_size_of(dir).unwrap_or(2 << 20), target.node);
        }
        if facts.magic == dax::TMPFS_MAGIC {
            return TargetRoom {
                own: tmpfs_limit(dir),
                ..TargetRoom::ram(2 << 20)
            };
        }
        TargetRoom {
            granule: 2 << 20,
            ram: false,
            own: Some(Limit {
                bytes: facts.available_bytes,
                what: format!(
                    "the free space of {} ({})",
                    dir.display(),
                    Bytes(facts.available_bytes).human()
                ),
                remedy: format!("free space on {}", dir.display()),
            }),
        }
    }

    fn heap(&self) -> Result<(HeapBacking, u64), TargetError> {
        if let Some(page) = self.page {
            return Err(TargetError::usage(format!(
                "pmscope run maps a program's files at their file system's page size and takes no page= yet; \
                 drop page={} from the target",
                page.name()
            )));
        }
        if where_to_create(&self.path)? != Place::InDirectory {
            return Err(TargetError::usage(format!(
                "pmscope run puts each allocation in a file of its own, so file: must name a directory, not the new file {}",
                self.path.display()
            )));
        }
        let backing = HeapBacking::Directory {
            dir: self.path.clone(),
            pages: "4k",
        };
        Ok((backing, 4096))
    }

    fn directory(&self) -> Option<&Path> {
        (where_to_create(&self.path).ok()? == Place::InDirectory).then_some(self.path.as_path())
    }

    fn prepare(
        &self,
        target: &PrepareCtx,
        bytes: u64,
        opts: &MapOptions,
    ) -> Result<Backing, TargetError> {
        prepare(target, &self.path, self.page, bytes, opts)
    }

    fn page_size_remedy(
        &self,
        achieved: &Achieved,
        _want: u64,
        extents: Option<ExtentLayout>,
    ) -> Option<String> {
        if achieved.persistence == Persistence::Emulated && self.page == Some(FilePage::Huge2m) {
            let shmem = pmscope_sys::thp::settings(&pmscope_sys::sysroot::SysRoot::host())
                .shmem_enabled
                .unwrap_or_else(|| "unknown".into());
            return Some(format!(
                "tmpfs honours MADV_HUGEPAGE only when /sys/kernel/mm/transparent_hugepage/shmem_enabled \
                 is advise, within_size or always (it is {shmem}), or the mount has huge=; or use a \
                 hugetlbfs mount"
            ));
        }
        if achieved.persistence != Persistence::Dax {
            return None;
        }
        let why = match extents {
            Some(e) if e.extents > 0 => format!(
                "{} of the file's first {} extents are 2 MiB-congruent on the device",
                e.pmd_congruent, e.extents
            ),
            _ => "the file's extent layout could not be read".into(),
        };
        Some(format!(
            "DAX maps 2 MiB pages only where the file's blocks are 2 MiB-aligned ({why}): make the file system with \
             `mkfs.ext4 -E stride=512,stripe_width=512` or `mkfs.xfs -d su=2m,sw=1`, or use a devdax target"
        ))
    }
}

fn parse(arg: Option<&str>, options: &[(&str, &str)]) -> Result<Arc<dyn Kind>, SpecError> {
    let mut page = None;
    for (key, value) in options {
        match *key {
            "page" => page = Some(FilePage::parse(value)?),
            other => unreachable!("the spec parser passes only file's own options, not {other}"),
        }
    }
    match arg {
        Some(p) => Ok(Arc::new(FileKind {
            path: PathBuf::from(p),
            page,
        })),
        None => Err(SpecError(
            "file needs a path: file:/mnt/pmem (a directory) or file:/mnt/pmem/bench.dat (a new file)"
                .into(),
        )),
    }
}

/// Which of the two meanings of `file:PATH` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// PATH is an existing directory: a new file is made in it.
    InDirectory,
    /// PATH does not exist and its parent is a directory: PATH itself is made.
    NewFile,
}

/// Decides what `file:PATH` means through the one path resolver (`sys::path`: a trailing
/// slash on what is not a directory, a missing directory, a dangling link and an
/// unwritable directory are refused there), then refuses the readings a user rarely means:
/// an existing file (never overwritten) and a new file in `/dev` (where
/// `file:/dev/hugepages` without that mount would silently measure a plain file on
/// devtmpfs instead of hugetlbfs).
fn where_to_create(path: &Path) -> Result<Place, TargetError> {
    match path::look(path).map_err(|e| TargetError::usage(e.0))? {
        Found::Directory => return Ok(Place::InDirectory),
        Found::File => {
            return Err(TargetError::usage(format!(
                "{} already exists and pmscope never overwrites a file; name a directory or a new path",
                path.display()
            )));
        }
        Found::New => {}
    }
    if parent_of(path)
        .canonicalize()
        .is_ok_and(|p| p == Path::new("/dev"))
    {
        return Err(TargetError::usage(format!(
            "{} does not exist, and pmscope creates no files in /dev: if it is a mount point \
             (e.g. hugetlbfs), mount it first; otherwise name a directory on the file system to measure",
            path.display()
        )));
    }
    Ok(Place::NewFile)
}

/// Creates the file where `file:PATH` says, checks that its file system can hold `bytes`,
/// allocates and maps it: MAP_SYNC where the file system is DAX, else through the page
/// cache (refused under `--require-dax`).
fn prepare(
    target: &PrepareCtx,
    path: &Path,
    page: Option<FilePage>,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Backing, TargetError> {
    let (mut backing, dir) = create_file(path, opts.keep)?;
    let home = Home::of(dir)?;
    if let Some(page) = page {
        check_page_request(page, &home)?;
    }
    let align = home.granule();
    let len = bytes.next_multiple_of(align);
    home.check_room(target, len, opts)?;
    mman::allocate_file(backing.file(), len).map_err(|e| {
        TargetError::system(format!(
            "cannot allocate {len} bytes for {}: {e}",
            home.dir.display()
        ))
    })?;
    let (raw, map_sync) = home.map(backing.file(), len, align, opts.require_dax)?;
    let expect = home.expectation(map_sync, page);
    backing.set_mapped(
        raw,
        expect,
        align,
        Some(map_sync),
        expect.persistence,
        map_sync,
    );
    backing.set_filesystem(
        home.facts.fstype.clone(),
        map_sync
            .then(|| dax::extent_layout(backing.file()))
            .flatten(),
    );
    if map_sync {
        backing.set_pmem_region(home.pmem_region(opts));
    }
    if let Some(page) = page {
        // Before the first touch, which is when the kernel picks each fault's size. On the
        // error path `backing` drops: unmapped, and the unnamed file gone with it.
        advise_page(&backing, page, &home, map_sync, target)?;
    }
    Ok(backing)
}

/// Refuses a `page=` the file system cannot give, before anything is created where it can
/// tell (hugetlbfs: its mount's page size is the only one) and for 1 GiB everywhere else.
fn check_page_request(page: FilePage, home: &Home) -> Result<(), TargetError> {
    let dir = home.dir.display();
    match (home.huge_page, page) {
        (Some(size), page) if size != page.bytes() => Err(TargetError::usage(format!(
            "page={} on {dir}: a hugetlbfs mount maps only its own page size, {}; \
             drop page= or use a hugetlbfs mounted with pagesize={}",
            page.name(),
            Bytes(size).human(),
            page.name().to_uppercase()
        ))),
        (Some(_), _) => Ok(()),
        (None, FilePage::Huge1g) => Err(TargetError::usage(format!(
            "page=1g on {dir}: the kernel maps files on {} with at most 2 MiB pages (fs/dax.c \
             falls back from 1 GiB faults; only device DAX and hugetlbfs have them); use a devdax \
             device aligned at 1 GiB (ndctl create-namespace -m devdax -a 1G) or a hugetlbfs mounted \
             with pagesize=1G",
            home.facts.fstype
        ))),
        (None, _) => Ok(()),
    }
}

/// Applies `page=` to a fresh mapping: 4k refuses huge pages (MADV_NOHUGEPAGE, which also
/// keeps DAX faults to 4 KiB), 2m asks tmpfs for THP (MADV_HUGEPAGE) and needs DAX
/// anywhere else, since the page cache of a disk file system maps base pages.
fn advise_page(
    backing: &Backing,
    page: FilePage,
    home: &Home,
    map_sync: bool,
    target: &PrepareCtx,
) -> Result<(), TargetError> {
    if home.huge_page.is_some() {
        return Ok(()); // hugetlbfs: its page size, checked to be the one asked for
    }
    match page {
        FilePage::Base4k => backing.advise_huge(false),
        FilePage::Huge2m if map_sync => Ok(()), // DAX: 2 MiB faults where extents allow
        FilePage::Huge2m if home.facts.magic == dax::TMPFS_MAGIC => backing.advise_huge(true),
        FilePage::Huge2m => Err(TargetError::usage(format!(
            "{target}: {} on {} is not DAX, and its page cache maps files with 4 KiB pages; \
             use a file system mounted with -o dax on persistent memory, tmpfs, or a hugetlbfs",
            home.dir.display(),
            home.facts.fstype
        ))),
        FilePage::Huge1g => unreachable!("check_page_request refuses page=1g off hugetlbfs"),
    }
}

/// Creates the scratch file `file:PATH` names: a new file in the directory PATH, or PATH
/// itself. Returns it with its directory.
fn create_file(path: &Path, keep: bool) -> Result<(Backing, PathBuf), TargetError> {
    Ok(match where_to_create(path)? {
        Place::InDirectory => (create_scratch(path, None, keep)?, path.to_path_buf()),
        Place::NewFile => {
            let dir = parent_of(path);
            (create_scratch(dir, Some(path), keep)?, dir.to_path_buf())
        }
    })
}

/// The file system a target's file lives on, as `prepare` needs it.
struct Home {
    /// The file's directory: an unnamed file has no path of its own, so the directory is
    /// what statfs and the mount table are asked about (a file lives on its directory's
    /// file system).
    dir: PathBuf,
    facts: dax::FsFacts,
    /// The page size of a hugetlbfs mount.
    huge_page: Option<u64>,
    /// Whether its pages are RAM (hugetlbfs, tmpfs).
    in_ram: bool,
}

impl Home {
    fn of(dir: PathBuf) -> Result<Home, TargetError> {
        let facts = dax::fs_facts(&dir)
            .map_err(|e| TargetError::system(format!("statfs {} failed: {e}", dir.display())))?;
        let hugetlbfs = facts.magic == dax::HUGETLBFS_MAGIC;
        let huge_page = if hugetlbfs {
            huge_page_size_of(&dir)
        } else {
            None
        };
        Ok(Home {
            in_ram: hugetlbfs || facts.magic == dax::TMPFS_MAGIC,
            huge_page,
            facts,
            dir,
        })
    }

    /// What the length is rounded up to and the mapping aligned at: the hugetlbfs page,
    /// else 2 MiB.
    fn granule(&self) -> u64 {
        self.huge_page.unwrap_or(2 << 20)
    }

    /// Refuses a length the file system cannot hold: a hugetlbfs file takes pool pages, a
    /// tmpfs file RAM (the memory guard), any other file its free space.
    fn check_room(
        &self,
        target: &PrepareCtx,
        len: u64,
        opts: &MapOptions,
    ) -> Result<(), TargetError> {
        if let Some(size) = self.huge_page {
            check_hugetlb_pool(opts, size, len, target.node)?;
        } else if self.in_ram {
            opts.guard.check(len, &target.canonical)?;
        } else if len > self.facts.available_bytes {
            return Err(TargetError::usage(format!(
                "{target} needs {} but {} has only {} free; use a smaller size",
                Bytes(len).human(),
                self.dir.display(),
                Bytes(self.facts.available_bytes).human()
            )));
        }
        Ok(())
    }

    /// Maps the file MAP_SYNC, or shared through the page cache where the file system
    /// refuses MAP_SYNC (unless `require_dax`); says whether MAP_SYNC held.
    fn map(
        &self,
        file: &File,
        len: u64,
        align: u64,
        require_dax: bool,
    ) -> Result<(RawMap, bool), TargetError> {
        let map = |mode| mman::map_file(file.as_fd(), len as usize, align as usize, mode);
        let failed = |e| TargetError::system(format!("mmap of {} failed: {e}", self.dir.display()));
        match map(FileMapMode::Sync) {
            Ok(raw) => Ok((raw, true)),
            Err(e)
                if e.raw_os_error() == Some(libc::EOPNOTSUPP)
                    || e.raw_os_error() == Some(libc::EINVAL) =>
            {
                if require_dax {
                    return Err(TargetError::usage(format!(
                        "{} is on {} without DAX (MAP_SYNC refused: {e}), and --require-dax was given; \
                         use a file system mounted with -o dax on persistent memory",
                        self.dir.display(),
                        self.facts.fstype
                    )));
                }
                Ok((map(FileMapMode::Shared).map_err(failed)?, false))
            }
            Err(e) => Err(failed(e)),
        }
    }

    /// What the mapping should achieve, given whether MAP_SYNC held and the page size
    /// `page=` asked for (checked by `check_page_request` and applied by `advise_page`).
    fn expectation(&self, map_sync: bool, page: Option<FilePage>) -> Expectation {
        let persistence = if map_sync {
            Persistence::Dax
        } else if self.in_ram {
            Persistence::Emulated
        } else {
            Persistence::PageCache
        };
        let (page_bytes, why) = match (self.huge_page, map_sync) {
            (Some(size), _) => (Some(size), "hugetlbfs maps its page size"),
            (None, true) if page == Some(FilePage::Base4k) => (
                Some(4 << 10),
                "page=4k: MADV_NOHUGEPAGE keeps DAX faults to 4 KiB pages",
            ),
            (None, false) if page == Some(FilePage::Huge2m) => (
                Some(2 << 20),
                "page=2m: MADV_HUGEPAGE asks tmpfs for transparent huge pages",
            ),
            (None, true) => (
                Some(2 << 20),
                "DAX maps 2 MiB pages where the file's extents are 2 MiB-aligned",
            ),
            (None, false) => (Some(4 << 10), "the page cache maps base pages"),
        };
        Expectation {
            page_bytes,
            why,
            persistence,
        }
    }

    /// The libnvdimm region of a DAX mount: its pmem block device names it.
    fn pmem_region(&self, opts: &MapOptions) -> Option<String> {
        let mounts = dax::mounts(&opts.root);
        dax::mount_of(&mounts, &self.dir)
            .and_then(|m| m.source.strip_prefix("/dev/"))
            .and_then(|block| pmscope_sys::pmem::region_of_block(&opts.root, block))
    }
}

/// The page size of the hugetlbfs mount holding `path` (its `pagesize=` option, or the
/// default 2 MiB).
fn huge_page_size_of(path: &Path) -> Option<u64> {
    let mounts = dax::mounts(&pmscope_sys::sysroot::SysRoot::host());
    let m = dax::mount_of(&mounts, path)?;
    let size = m
        .options
        .split(',')
        .find_map(|o| o.strip_prefix("pagesize="))
        .and_then(|s| s.parse::<Bytes>().ok())
        .map(|b| b.0)
        .unwrap_or(2 << 20);
    Some(size)
}
