//! `shm[:4k|thp]` — a file in /dev/shm: DRAM pretending to be pmem (seed 004's PM-LDRAM).
//! Flush instructions cost what they would on pmem-less DRAM; nothing is durable.

use super::common::{PagePolicy, create_scratch, parse_policy, tmpfs_limit};
use super::{Kind, KindEntry, PrepareCtx};
use crate::backing::{Backing, Expectation, MapOptions};
use crate::error::SpecError;
use crate::room::TargetRoom;
use crate::{HeapBacking, TargetError};
use pmscope_core::achieved::{Achieved, Persistence};
use pmscope_core::units::Bytes;
use pmscope_sys::dax::{self, ExtentLayout};
use pmscope_sys::mman::{self, FileMapMode};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;

pub(super) const ENTRY: KindEntry = KindEntry {
    name: "shm",
    syntax: "shm[:4k|thp][,node=N]",
    doc: "A file pmscope creates in /dev/shm (tmpfs) and maps shared: DRAM-emulated pmem, \
          the seeds' PM-LDRAM configuration. thp asks for huge pages with MADV_HUGEPAGE, which \
          tmpfs honours only when /sys/kernel/mm/transparent_hugepage/shmem_enabled allows it. \
          The file is removed afterwards unless --keep.",
    options: &[],
    parse,
};

/// `shm:POLICY`.
#[derive(Debug)]
struct Shm {
    pages: PagePolicy,
}

fn parse(arg: Option<&str>, _options: &[(&str, &str)]) -> Result<Arc<dyn Kind>, SpecError> {
    Ok(Arc::new(Shm {
        pages: parse_policy(arg, "shm", false)?,
    }))
}

impl Kind for Shm {
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

    fn room(&self, _target: &PrepareCtx, _opts: &MapOptions) -> TargetRoom {
        TargetRoom {
            own: tmpfs_limit(Path::new("/dev/shm")),
            ..TargetRoom::ram(self.pages.length_granule())
        }
    }

    fn heap(&self) -> Result<(HeapBacking, u64), TargetError> {
        Ok((
            HeapBacking::Directory {
                dir: "/dev/shm".into(),
                pages: self.pages.name(),
            },
            self.pages.expected_page_bytes(),
        ))
    }

    fn page_size_remedy(&self, _: &Achieved, _: u64, _: Option<ExtentLayout>) -> Option<String> {
        Some(
            "tmpfs huge pages follow /sys/kernel/mm/transparent_hugepage/shmem_enabled (advise or always)"
                .into(),
        )
    }
}

/// Refuses a target /dev/shm cannot hold: tmpfs has its own size limit (half of RAM by
/// default), and files already there (another program's, or ones a killed run left) count
/// against it although MemAvailable does not show them as free memory either.
fn check_tmpfs_room(target: &PrepareCtx, dir: &Path, len: u64) -> Result<(), TargetError> {
    let Ok(facts) = dax::fs_facts(dir) else {
        return Ok(());
    };
    if len > facts.available_bytes {
        let held = facts.total_bytes.saturating_sub(facts.available_bytes);
        return Err(TargetError::usage(format!(
            "{target} needs {} but {} has only {} free of its {} limit ({} already held by files there); \
             remove files you no longer need from {} or use a smaller size",
            Bytes(len).human(),
            dir.display(),
            Bytes(facts.available_bytes).human(),
            Bytes(facts.total_bytes).human(),
            Bytes(held).human(),
            dir.display()
        )));
    }
    Ok(())
}

fn prepare(
    target: &PrepareCtx,
    pages: PagePolicy,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Backing, TargetError> {
    let len = bytes.next_multiple_of(pages.length_granule());
    opts.guard.check(len, &target.canonical)?;
    let dir = Path::new("/dev/shm");
    check_tmpfs_room(target, dir, len)?;
    let mut backing = create_scratch(dir, None, opts.keep)?;
    let path = dir;
    let file = backing.file();
    file.set_len(len).map_err(|e| {
        TargetError::system(format!(
            "cannot size {} to {len} bytes: {e}",
            path.display()
        ))
    })?;
    // MAP_SYNC is attempted to record the refusal: tmpfs is never DAX.
    let sync = mman::map_file(file.as_fd(), len as usize, 2 << 20, FileMapMode::Sync);
    let map_sync = sync.is_ok();
    let raw = match sync {
        Ok(raw) => raw,
        Err(_) => mman::map_file(file.as_fd(), len as usize, 2 << 20, FileMapMode::Shared)
            .map_err(|e| TargetError::system(format!("mmap of {} failed: {e}", path.display())))?,
    };
    backing.set_mapped(
        raw,
        Expectation {
            page_bytes: Some(pages.expected_page_bytes()),
            why: if pages == PagePolicy::Thp {
                "shm:thp asks for huge pages"
            } else {
                "shm:4k asks for base pages"
            },
            persistence: Persistence::Emulated,
        },
        2 << 20,
        Some(map_sync),
        Persistence::Emulated,
        false,
    );
    backing.advise_huge(pages == PagePolicy::Thp)?;
    Ok(backing)
}
