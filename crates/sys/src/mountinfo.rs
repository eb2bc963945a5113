//! The mount a directory lives on, from `/proc/self/mountinfo`: the file-system type, the
//! device, and both option lists (the mount point's own and the super block's, where ext4
//! and XFS say `dax=` and `data=`). `/proc/mounts` merges the two lists and drops the
//! device numbers, so this reads mountinfo.

use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountInfo {
    /// Where it is mounted.
    pub mount_point: String,
    /// `major:minor` of the device (`0:23` for a tmpfs).
    pub device_number: String,
    /// The file-system type (`ext4`, `xfs`, `tmpfs`, `hugetlbfs`, ...).
    pub fstype: String,
    /// The mount source: a device path (`/dev/pmem0`) or a name (`tmpfs`).
    pub source: String,
    /// The mount point's options (`rw,relatime`).
    pub mount_options: String,
    /// The super block's options (`rw,dax=always,data=ordered`).
    pub super_options: String,
}

impl MountInfo {
    /// Every option, the mount point's first, without repeats.
    pub fn options(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        for o in self
            .mount_options
            .split(',')
            .chain(self.super_options.split(','))
        {
            if !o.is_empty() && !seen.contains(&o) {
                seen.push(o);
            }
        }
        seen.join(",")
    }

    fn option(&self, key: &str) -> Option<&str> {
        self.super_options
            .split(',')
            .chain(self.mount_options.split(','))
            .find_map(|o| o.strip_prefix(key)?.strip_prefix('='))
    }

    /// The DAX mode the mount asks for: `always` (`dax` or `dax=always`), `never`,
    /// `inode`, or `None` when the options do not say (no DAX on ext4 and XFS).
    pub fn dax(&self) -> Option<String> {
        if self
            .super_options
            .split(',')
            .chain(self.mount_options.split(','))
            .any(|o| o == "dax")
        {
            return Some("always".into());
        }
        self.option("dax").map(str::to_string)
    }

    /// The data journaling mode (ext4's `data=ordered|journal|writeback`), if given.
    pub fn journal(&self) -> Option<String> {
        self.option("data").map(str::to_string)
    }
}

/// Parses mountinfo text: `id parent major:minor root mount-point options [optional
/// fields...] - fstype source super-options`.
pub fn parse(text: &str) -> Vec<MountInfo> {
    text.lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let h: Vec<&str> = head.split(' ').collect();
            let t: Vec<&str> = tail.split(' ').collect();
            Some(MountInfo {
                device_number: h.get(2)?.to_string(),
                mount_point: unescape(h.get(4)?),
                mount_options: h.get(5)?.to_string(),
                fstype: t.first()?.to_string(),
                source: unescape(t.get(1)?),
                super_options: t.get(2).copied().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The mount `dir` lives on: the longest mount point containing its canonical path, the
/// last one mounted among equals (a mount hides what was mounted there before).
pub fn mount_of(mounts: &[MountInfo], dir: &Path) -> Option<MountInfo> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut best: Option<&MountInfo> = None;
    for m in mounts {
        if dir.starts_with(&m.mount_point)
            && best.is_none_or(|b| m.mount_point.len() >= b.mount_point.len())
        {
            best = Some(m);
        }
    }
    best.cloned()
}

/// The mount of `dir` according to this process's `/proc/self/mountinfo` under `root`.
pub fn of(root: &SysRoot, dir: &Path) -> Option<MountInfo> {
    mount_of(&parse(&root.read("proc/self/mountinfo")?), dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUEST: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683656k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=100k
41 27 259:0 / /mnt/pmem\\040fs rw,relatime shared:1 - ext4 /dev/pmem0 rw,dax=always,data=ordered
42 27 259:1 / /mnt/xfs rw,relatime - xfs /dev/pmem1 rw,attr2,dax,inode64
";

    #[test]
    fn a_dax_ext4_mount_with_optional_fields_and_an_escaped_space() {
        let m = parse(GUEST);
        let pmem = mount_of(&m, Path::new("/mnt/pmem fs/sub/dir")).unwrap();
        assert_eq!(pmem.fstype, "ext4");
        assert_eq!(pmem.source, "/dev/pmem0");
        assert_eq!(pmem.device_number, "259:0");
        assert_eq!(pmem.dax().as_deref(), Some("always"));
        assert_eq!(pmem.journal().as_deref(), Some("ordered"));
        assert_eq!(pmem.options(), "rw,relatime,dax=always,data=ordered");
        let xfs = mount_of(&m, Path::new("/mnt/xfs")).unwrap();
        assert_eq!(xfs.dax().as_deref(), Some("always"));
        assert_eq!(xfs.journal(), None);
    }

    #[test]
    fn the_longest_and_latest_mount_point_wins() {
        let m = parse(GUEST);
        let shm = mount_of(&m, Path::new("/dev/shm/x")).unwrap();
        assert_eq!(
            shm.device_number, "0:27",
            "the later of two /dev/shm mounts"
        );
        assert_eq!(shm.dax(), None);
        let root = mount_of(&m, Path::new("/var/tmp")).unwrap();
        assert_eq!(
            (root.fstype.as_str(), root.source.as_str()),
            ("ext4", "/dev/vda")
        );
        // /procfoo is not under /proc.
        assert_eq!(
            mount_of(&m, Path::new("/procfoo")).unwrap().mount_point,
            "/"
        );
    }

    #[test]
    fn this_machines_tmp_has_a_mount() {
        let m = of(&SysRoot::host(), Path::new("/tmp")).expect("/tmp is on some mount");
        assert!(!m.fstype.is_empty() && !m.device_number.is_empty());
    }
}
