//! What the experiments that do file I/O share: the description of a directory's file
//! system that their records carry (`fs`, `fio`, and the append-only file of
//! `app redis --aof-on`).

use pmscope_core::record::Record;
use pmscope_core::vocab::p;
use pmscope_sys::mountinfo::MountInfo;
use std::path::Path;

/// `r` with `dir` and the facts of the file system it is on (`mount`) as params: the one
/// description of a directory every record of file I/O carries (`fs`, `fio`, and the
/// append-only file of `app redis --aof-on`).
pub fn describe_directory(r: Record, dir: &Path, mount: Option<&MountInfo>) -> Record {
    r.param(p::DIRECTORY, dir.display().to_string())
        .param(p::FS_TYPE, mount.map(|m| m.fstype.clone()))
        .param(p::MOUNT_POINT, mount.map(|m| m.mount_point.clone()))
        .param(p::MOUNT_OPTIONS, mount.map(|m| m.options()))
        .param(
            p::DEVICE,
            mount.map(|m| format!("{} ({})", m.source, m.device_number)),
        )
        .param(p::DAX, mount.and_then(|m| m.dax()))
        .param(p::JOURNAL, mount.and_then(|m| m.journal()))
}
