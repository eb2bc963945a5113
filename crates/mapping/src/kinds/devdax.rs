//! `devdax:/dev/daxX.Y` — a device-DAX character device, mapped at its alignment.
//!
//! Writing to a devdax device destroys whatever it held (a file system image, another
//! program's persistent heap), so mapping one requires `--destroy-data`, whose only
//! constructor is the CLI flag ([`crate::DestroyData`]). The kernel refuses mapping lengths
//! and addresses that are not multiples of the device's alignment (EINVAL), so pmscope
//! rounds the length up and places the mapping at that alignment.

use super::{Kind, KindEntry, PrepareCtx};
use crate::TargetError;
use crate::backing::{Backing, Expectation, MapOptions};
use crate::error::SpecError;
use crate::room::{Limit, TargetRoom};
use pmscope_core::achieved::Persistence;
use pmscope_core::units::Bytes;
use pmscope_sys::dax;
use pmscope_sys::mman::{self, FileMapMode};
use std::fs::OpenOptions;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) const ENTRY: KindEntry = KindEntry {
    name: "devdax",
    syntax: "devdax:/dev/daxX.Y[,node=N]",
    doc: "A device-DAX character device, mapped at its alignment (from sysfs) with the length \
          rounded up to it. Writing destroys the device's contents, so it is refused unless \
          --destroy-data is given.",
    options: &[],
    parse,
};

fn device_name(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("dax")?;
    let (a, b) = rest.split_once('.')?;
    (!a.is_empty()
        && !b.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit())
        && b.bytes().all(|c| c.is_ascii_digit()))
    .then_some(name)
}

/// `devdax:/dev/daxX.Y`.
#[derive(Debug)]
struct Devdax {
    path: PathBuf,
}

impl Kind for Devdax {
    fn entry(&self) -> &'static KindEntry {
        &ENTRY
    }

    fn argument(&self) -> String {
        self.path.display().to_string()
    }

    fn preflight(&self, opts: &MapOptions) -> Result<(), TargetError> {
        if opts.destroy_data.is_none() {
            return Err(TargetError::usage(format!(
                "writing to {} destroys its contents; pass --destroy-data if that is what you want",
                self.path.display()
            )));
        }
        Ok(())
    }

    fn prepare(
        &self,
        target: &PrepareCtx,
        bytes: u64,
        opts: &MapOptions,
    ) -> Result<Backing, TargetError> {
        self.preflight(opts)?;
        prepare(target, &self.path, bytes, opts)
    }

    fn room(&self, _target: &PrepareCtx, opts: &MapOptions) -> TargetRoom {
        let info = device_name(&self.path).and_then(|n| dax::device(&opts.root, n));
        TargetRoom {
            granule: info.as_ref().and_then(|d| d.align_bytes).unwrap_or(2 << 20),
            ram: false,
            own: info.and_then(|d| d.size_bytes).map(|bytes| Limit {
                bytes,
                what: format!(
                    "the size of {} ({})",
                    self.path.display(),
                    Bytes(bytes).human()
                ),
                remedy: "use a larger device".into(),
            }),
        }
    }
}

fn parse(arg: Option<&str>, _options: &[(&str, &str)]) -> Result<Arc<dyn Kind>, SpecError> {
    let Some(p) = arg else {
        return Err(SpecError(
            "devdax needs a device path: devdax:/dev/dax0.0".into(),
        ));
    };
    let path = PathBuf::from(p);
    if device_name(&path).is_none() || !p.starts_with("/dev/") {
        return Err(SpecError(format!(
            "'{p}' is not a device-DAX path: expected /dev/daxX.Y"
        )));
    }
    Ok(Arc::new(Devdax { path }))
}

fn prepare(
    target: &PrepareCtx,
    path: &Path,
    bytes: u64,
    opts: &MapOptions,
) -> Result<Backing, TargetError> {
    let name = device_name(path).unwrap_or("dax");
    let info = dax::device(&opts.root, name);
    let align = info.as_ref().and_then(|d| d.align_bytes).unwrap_or(2 << 20);
    let len = bytes.next_multiple_of(align);
    if let Some(size) = info.as_ref().and_then(|d| d.size_bytes)
        && len > size
    {
        return Err(TargetError::usage(format!(
            "{target} needs {} but {} holds only {}; use a smaller size",
            Bytes(len).human(),
            path.display(),
            Bytes(size).human()
        )));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| match e.kind() {
            // A device the user named that is not there is the request's fault (exit 2).
            std::io::ErrorKind::NotFound => TargetError::usage(format!(
                "{target}: {} does not exist; `ls /dev/dax*` lists the device-DAX devices (ndctl list -X)",
                path.display()
            )),
            _ => TargetError::system(format!("cannot open {}: {e}", path.display())),
        })?;
    let (raw, map_sync) = match mman::map_file(
        file.as_fd(),
        len as usize,
        align as usize,
        FileMapMode::Sync,
    ) {
        Ok(raw) => (raw, true),
        Err(_) => (
            mman::map_file(
                file.as_fd(),
                len as usize,
                align as usize,
                FileMapMode::Shared,
            )
            .map_err(|e| {
                TargetError::system(format!(
                    "mmap of {} at {}-byte alignment failed: {e}",
                    path.display(),
                    align
                ))
            })?,
            false,
        ),
    };
    let mut backing = Backing::device(file, path.to_path_buf());
    backing.set_mapped(
        raw,
        Expectation {
            page_bytes: Some(align.min(1 << 30)),
            why: "devdax maps pages of its alignment",
            persistence: Persistence::Dax,
        },
        align,
        Some(map_sync),
        Persistence::Dax,
        false,
    );
    backing.set_filesystem("devdax".into(), None);
    backing.set_pmem_region(pmscope_sys::pmem::region_of_dax(&opts.root, name));
    Ok(backing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names() {
        assert_eq!(device_name(Path::new("/dev/dax0.0")), Some("dax0.0"));
        assert_eq!(device_name(Path::new("/dev/dax12.3")), Some("dax12.3"));
        assert_eq!(device_name(Path::new("/dev/dax0")), None);
        assert_eq!(device_name(Path::new("/dev/pmem0")), None);
        assert_eq!(device_name(Path::new("/dev/daxa.0")), None);
    }
}
