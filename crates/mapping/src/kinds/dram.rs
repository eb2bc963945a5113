//! `dram[:4k|thp|2m|1g]` — anonymous private memory with a page policy.

use super::{Kind, KindEntry};
use crate::mapping::{Backing, Expectation, MapOptions};
use crate::sizing::{Limit, TargetRoom};
use crate::spec::SpecError;
use crate::{HeapBacking, TargetError, TargetSpec};
use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::units::{Bytes, MIB2};
use pmscope_sys::dax::ExtentLayout;
use pmscope_sys::hugepages;
use pmscope_sys::mman::{self, AnonPages};
use std::sync::Arc;

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
    fn hugetlb_bytes(self) -> Option<u64> {
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

/// `dram:POLICY`.
#[derive(Debug)]
struct Dram {
    pages: PagePolicy,
}

pub(super) const ENTRY: KindEntry = KindEntry {
    name: "dram",
    syntax: "dram[:4k|thp|2m|1g][,node=N]",
    doc: "Anonymous private memory. 4k refuses THP (MADV_NOHUGEPAGE), thp asks for it \
          (MADV_HUGEPAGE), 2m and 1g use hugetlb pages, which must be reserved beforehand \
          (/sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages); pmscope never falls \
          back to another page size silently.",
    parse,
};

fn parse(arg: Option<&str>) -> Result<Arc<dyn Kind>, SpecError> {
    Ok(Arc::new(Dram {
        pages: parse_policy(arg, "dram", true)?,
    }))
}

impl Kind for Dram {
    fn entry(&self) -> &'static KindEntry {
        &ENTRY
    }

    fn argument(&self) -> String {
        self.pages.name().into()
    }

    fn page_policy(&self) -> Option<&'static str> {
        Some(self.pages.name())
    }

    fn prepare(
        &self,
        spec: &TargetSpec,
        bytes: u64,
        opts: &MapOptions,
    ) -> Result<Backing, TargetError> {
        prepare(spec, self.pages, bytes, opts)
    }

    fn room(&self, spec: &TargetSpec, opts: &MapOptions) -> TargetRoom {
        match self.pages.hugetlb_bytes() {
            Some(size) => hugetlb_room(opts, size, spec.node),
            None => TargetRoom::ram(self.pages.length_granule()),
        }
    }

    fn heap(&self) -> Result<(HeapBacking, u64), TargetError> {
        Ok((
            HeapBacking::Anonymous {
                pages: self.pages.name(),
            },
            self.pages.expected_page_bytes(),
        ))
    }

    fn page_size_remedy(&self, _: &Achieved, want: u64, _: Option<ExtentLayout>) -> Option<String> {
        Some(if want == MIB2 {
            "THP could not give huge pages: check /sys/kernel/mm/transparent_hugepage/enabled \
             (madvise or always) and defrag (madvise lets MADV_HUGEPAGE compact memory), or use \
             dram:2m for hugetlb pages"
                .into()
        } else {
            "another policy overrode the request: check /sys/kernel/mm/transparent_hugepage/enabled \
             (always forces huge pages unless MADV_NOHUGEPAGE is honoured)"
                .into()
        })
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

fn prepare(
    spec: &TargetSpec,
    pages: PagePolicy,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Backing, TargetError> {
    let (len, align, anon) = match pages.hugetlb_bytes() {
        Some(size) => {
            let len = bytes.next_multiple_of(size);
            check_hugetlb_pool(opts, size, len, spec.node)?;
            (len, size, AnonPages::Hugetlb(size))
        }
        None => {
            let len = bytes.next_multiple_of(pages.length_granule());
            opts.guard.check(len, &spec.to_string())?;
            let anon = if pages == PagePolicy::Thp {
                AnonPages::Transparent
            } else {
                AnonPages::Base
            };
            (len, 2 << 20, anon)
        }
    };
    let raw = mman::map_anonymous(len as usize, align as usize, anon).map_err(|e| {
        if let AnonPages::Hugetlb(size) = anon {
            TargetError::system(format!(
                "the kernel refused {} of {} huge pages ({e}); reserve more with `echo N > {}`",
                Bytes(len).human(),
                Bytes(size),
                hugepages::Pool::nr_path(size, spec.node)
            ))
        } else {
            TargetError::system(format!("mmap of {} failed: {e}", Bytes(len).human()))
        }
    })?;
    Ok(Backing::anonymous(
        raw,
        Expectation {
            page_bytes: Some(pages.expected_page_bytes()),
            why: match pages {
                PagePolicy::Base4k => "4k asks for base pages",
                PagePolicy::Thp => "thp asks for transparent huge pages",
                PagePolicy::Huge2m | PagePolicy::Huge1g => "hugetlb pages were requested",
            },
            persistence: Persistence::Volatile,
        },
        align,
    ))
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
