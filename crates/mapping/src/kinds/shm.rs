//! `shm[:4k|thp]` — a file in /dev/shm: DRAM pretending to be pmem (seed 004's PM-LDRAM).
//! Flush instructions cost what they would on pmem-less DRAM; nothing is durable.

use super::KindEntry;
use super::dram::parse_policy;
use super::file::create_exclusive_in;
use crate::mapping::{Backing, Expectation, MapOptions};
use crate::spec::{KindSpec, PagePolicy, SpecError};
use crate::{TargetError, TargetSpec};
use pmscope_core::achieved::Persistence;
use pmscope_sys::mman::{self, FileMapMode};
use std::os::fd::AsFd;
use std::path::Path;

pub(super) const ENTRY: KindEntry = KindEntry {
    name: "shm",
    syntax: "shm[:4k|thp][,node=N]",
    doc: "A file pmscope creates in /dev/shm (tmpfs) and maps shared: DRAM-emulated pmem, \
          the seeds' PM-LDRAM configuration. thp asks for huge pages with MADV_HUGEPAGE, which \
          tmpfs honours only when /sys/kernel/mm/transparent_hugepage/shmem_enabled allows it. \
          The file is removed afterwards unless --keep.",
    parse,
};

fn parse(arg: Option<&str>) -> Result<KindSpec, SpecError> {
    Ok(KindSpec::Shm {
        pages: parse_policy(arg, "shm", false)?,
    })
}

pub(super) fn prepare(
    spec: &TargetSpec,
    pages: PagePolicy,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Backing, TargetError> {
    let len = bytes.next_multiple_of(4096);
    opts.guard.check(len, &spec.to_string())?;
    let dir = Path::new("/dev/shm");
    let (file, path) = create_exclusive_in(dir)?;
    let mut backing = Backing::file_pending(file, path.clone(), opts.keep);
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
