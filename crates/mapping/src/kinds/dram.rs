//! `dram[:4k|thp|2m|1g]` — anonymous private memory with a page policy.

use super::common::{PagePolicy, check_hugetlb_pool, hugetlb_room, parse_policy};
use super::{Kind, KindEntry, PrepareCtx};
use crate::backing::{Backing, Expectation, MapOptions};
use crate::error::SpecError;
use crate::room::TargetRoom;
use crate::{HeapBacking, TargetError};
use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::units::{Bytes, MIB2};
use pmscope_sys::dax::ExtentLayout;
use pmscope_sys::hugepages;
use pmscope_sys::mman::{self, AnonPages};
use std::sync::Arc;

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
    options: &[],
    parse,
};

fn parse(arg: Option<&str>, _options: &[(&str, &str)]) -> Result<Arc<dyn Kind>, SpecError> {
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
        target: &PrepareCtx,
        bytes: u64,
        opts: &MapOptions,
    ) -> Result<Backing, TargetError> {
        prepare(target, self.pages, bytes, opts)
    }

    fn room(&self, target: &PrepareCtx, opts: &MapOptions) -> TargetRoom {
        match self.pages.hugetlb_bytes() {
            Some(size) => hugetlb_room(opts, size, target.node),
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

fn prepare(
    target: &PrepareCtx,
    pages: PagePolicy,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Backing, TargetError> {
    let (len, align, anon) = match pages.hugetlb_bytes() {
        Some(size) => {
            let len = bytes.next_multiple_of(size);
            check_hugetlb_pool(opts, size, len, target.node)?;
            (len, size, AnonPages::Hugetlb(size))
        }
        None => {
            let len = bytes.next_multiple_of(pages.length_granule());
            opts.guard.check(len, &target.canonical)?;
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
                hugepages::Pool::nr_path(size, target.node)
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
