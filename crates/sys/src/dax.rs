//! DAX inventory and detection: devdax devices (`/sys/bus/dax/devices`), DAX mounts
//! (`/proc/mounts`), pmem block devices, and the file-system facts of a path (statfs magic,
//! statx's DAX attribute).
#![allow(unsafe_code)]

use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A device-DAX instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaxDevice {
    /// `dax0.0`.
    pub name: String,
    /// Size in bytes.
    pub size_bytes: Option<u64>,
    /// Mapping alignment in bytes: mmap lengths and offsets must be multiples of it.
    pub align_bytes: Option<u64>,
    /// The NUMA node the memory belongs to.
    pub target_node: Option<i64>,
    /// The driver bound (`device_dax`, or `kmem` once onlined as system RAM).
    pub driver: Option<String>,
}

/// Every device under `/sys/bus/dax/devices`.
pub fn devices(root: &SysRoot) -> Vec<DaxDevice> {
    let base = "sys/bus/dax/devices";
    root.list(base)
        .into_iter()
        .map(|name| device_at(root, base, name))
        .collect()
}

/// The device `name` (`dax0.0`), if sysfs knows it.
pub fn device(root: &SysRoot, name: &str) -> Option<DaxDevice> {
    let base = "sys/bus/dax/devices";
    root.exists(&format!("{base}/{name}"))
        .then(|| device_at(root, base, name.to_string()))
}

fn device_at(root: &SysRoot, base: &str, name: String) -> DaxDevice {
    let dir = format!("{base}/{name}");
    // Newer kernels have `align`; older ones only the region's.
    let align = root
        .read_u64(&format!("{dir}/align"))
        .or_else(|| root.read_u64(&format!("{dir}/../../dax_region/align")))
        .or_else(|| root.read_u64(&format!("sys/class/dax/{name}/device/dax_region/align")));
    let driver = std::fs::read_link(root.path(&format!("{dir}/driver")))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    DaxDevice {
        size_bytes: root.read_u64(&format!("{dir}/size")),
        align_bytes: align,
        target_node: root
            .read_trim(&format!("{dir}/target_node"))
            .and_then(|s| s.parse().ok()),
        driver,
        name,
    }
}

/// A mount from `/proc/mounts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// Device.
    pub source: String,
    /// Mount point.
    pub target: String,
    /// File-system type.
    pub fstype: String,
    /// Mount options.
    pub options: String,
}

impl Mount {
    /// Whether the options request DAX (`dax`, `dax=always`; not `dax=never`/`dax=inode`).
    pub fn is_dax(&self) -> bool {
        self.options
            .split(',')
            .any(|o| o == "dax" || o == "dax=always")
    }
}

/// Every mount.
pub fn mounts(root: &SysRoot) -> Vec<Mount> {
    root.read("proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some(Mount {
                source: it.next()?.to_string(),
                target: unescape_mount(it.next()?),
                fstype: it.next()?.to_string(),
                options: it.next()?.to_string(),
            })
        })
        .collect()
}

/// /proc/mounts escapes space, tab, newline and backslash as octal.
fn unescape_mount(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The mount a path lives on (longest matching mount point).
pub fn mount_of<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.target))
        .max_by_key(|m| m.target.len())
}

/// A pmem block device (`/sys/block/pmem*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmemBlock {
    /// `pmem0`.
    pub name: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Whether the block device supports DAX (`queue/dax`).
    pub dax: bool,
}

/// Every pmem block device.
pub fn pmem_blocks(root: &SysRoot) -> Vec<PmemBlock> {
    root.list("sys/block")
        .into_iter()
        .filter(|n| n.starts_with("pmem"))
        .map(|name| PmemBlock {
            size_bytes: root
                .read_u64(&format!("sys/block/{name}/size"))
                .unwrap_or(0)
                * 512,
            dax: root.read_u64(&format!("sys/block/{name}/queue/dax")) == Some(1),
            name,
        })
        .collect()
}

/// File-system facts of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsFacts {
    /// Name of the file system type from its statfs magic (`ext4`, `xfs`, `tmpfs`, ...).
    pub fstype: String,
    /// The statfs magic number.
    pub magic: i64,
    /// Free bytes available to unprivileged users.
    pub available_bytes: u64,
    /// The file system's size in bytes (for tmpfs: its `size=` limit).
    pub total_bytes: u64,
    /// The file carries statx's `STATX_ATTR_DAX` (Linux 5.8+); `None` if statx cannot say.
    pub statx_dax: Option<bool>,
}

/// Reads statfs and statx facts of `path` (a file or a directory).
pub fn fs_facts(path: &Path) -> std::io::Result<FsFacts> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: statfs is plain data; all-zero is valid.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid local the kernel fills.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statx is plain data; all-zero is valid.
    let mut sx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: as above; AT_FDCWD with an absolute or relative NUL-terminated path.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            0,
            libc::STATX_BASIC_STATS,
            &mut sx,
        )
    };
    let dax_bit = libc::STATX_ATTR_DAX as u64;
    let statx_dax = (rc == 0 && sx.stx_attributes_mask & dax_bit != 0)
        .then_some(sx.stx_attributes & dax_bit != 0);
    let magic = st.f_type as i64;
    Ok(FsFacts {
        fstype: fs_name(magic).to_string(),
        magic,
        available_bytes: st.f_bavail * st.f_bsize as u64,
        total_bytes: st.f_blocks * st.f_bsize as u64,
        statx_dax,
    })
}

/// The usual name of a statfs magic number.
pub fn fs_name(magic: i64) -> &'static str {
    match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x0102_1994 => "tmpfs",
        0x9584_58f6 => "hugetlbfs",
        0x9123_683E => "btrfs",
        0x794c_7630 => "overlayfs",
        0x6969 => "nfs",
        0x2FC1_2FC1 => "zfs",
        0x0102_1997 => "v9fs",
        0x6573_5546 => "fuse",
        0x8584_58f6 => "ramfs",
        _ => "unknown",
    }
}

/// `HUGETLBFS_MAGIC`.
pub const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;
/// `TMPFS_MAGIC`.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dax_mount_options() {
        let m = |o: &str| Mount {
            source: "/dev/pmem0".into(),
            target: "/mnt/pmem".into(),
            fstype: "ext4".into(),
            options: o.into(),
        };
        assert!(m("rw,relatime,dax").is_dax());
        assert!(m("rw,dax=always").is_dax());
        assert!(!m("rw,dax=never").is_dax());
        assert!(!m("rw,relatime").is_dax());
    }

    #[test]
    fn facts_of_dev_shm() {
        let f = fs_facts(Path::new("/dev/shm")).unwrap();
        assert_eq!(f.fstype, "tmpfs");
        assert_ne!(f.statx_dax, Some(true));
        let ms = mounts(&SysRoot::at("/"));
        assert!(mount_of(&ms, Path::new("/dev/shm/x")).is_some());
    }
}

/// How a file's extents sit on the device, which decides whether DAX can map it with
/// 2 MiB (PMD) pages: a PMD fault needs the logical and the physical offset of the 2 MiB
/// block to agree modulo 2 MiB and the block to be one contiguous extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtentLayout {
    /// Extents reported (up to the first 512).
    pub extents: u32,
    /// Extents whose physical start is congruent to their logical start modulo 2 MiB.
    pub pmd_congruent: u32,
}

/// Reads the extent map of an open file with `FS_IOC_FIEMAP` (first 512 extents).
/// `None` where the file system does not support it (tmpfs).
pub fn extent_layout(file: &std::fs::File) -> Option<ExtentLayout> {
    use std::os::fd::AsRawFd;
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_FLAG_SYNC: u32 = 1;
    const MAX: usize = 512;
    // struct fiemap (32 bytes) followed by MAX struct fiemap_extent (56 bytes each), as u64s.
    let words = (32 + MAX * 56) / 8;
    let mut buf = vec![0u64; words];
    buf[1] = u64::MAX; // fm_length: the whole file
    // fm_flags (u32 at byte 16), fm_extent_count (u32 at byte 24)
    buf[2] = FIEMAP_FLAG_SYNC as u64;
    buf[3] = MAX as u64;
    // SAFETY: the buffer is a live, 8-byte aligned allocation large enough for the header and
    // MAX extents, which is what fm_extent_count tells the kernel it may write.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, buf.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    let mapped = (buf[2] >> 32) as u32; // fm_mapped_extents, u32 at byte 20
    let mut layout = ExtentLayout {
        extents: mapped.min(MAX as u32),
        pmd_congruent: 0,
    };
    for i in 0..layout.extents as usize {
        let base = 4 + i * 7; // extents start at byte 32; 56 bytes = 7 words each
        let (logical, physical) = (buf[base], buf[base + 1]);
        if logical % (2 << 20) == physical % (2 << 20) {
            layout.pmd_congruent += 1;
        }
    }
    Some(layout)
}
