//! CXL memory as the kernel's CXL core describes it (`/sys/bus/cxl/devices`): the type-3
//! memory devices (`memN`), the HDM decoders that route host addresses to them (root
//! decoders are the platform's fixed memory windows, switch decoders a host bridge's or a
//! switch's, endpoint decoders a device's), and the regions assembled from them (`regionN`:
//! mode, size, interleave). A region is memory only through what it became: a persistent
//! region an nd region (then namespaces, fsdax or devdax), a dax device, and a NUMA node
//! once that dax device is onlined as system RAM through kmem. pmscope measures the memory;
//! this module says which CXL device and interleave a measured node or DAX region is.

use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};

const BUS: &str = "sys/bus/cxl/devices";

/// A CXL memory device (`memN`, a type-3 device's memory interface).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memdev {
    /// `mem0`.
    pub name: String,
    /// The device serial number (`0x1000`).
    pub serial: Option<String>,
    /// Persistent capacity in bytes.
    pub pmem_bytes: u64,
    /// Volatile capacity in bytes.
    pub ram_bytes: u64,
    /// The NUMA node of the PCI device (its proximity, not where its memory lands).
    pub numa_node: Option<i64>,
    /// The firmware revision the device reports.
    pub firmware_version: Option<String>,
    /// The PCI device (`0000:0d:00.0`).
    pub pci_device: Option<String>,
    /// The host bridge it sits behind (`pci0000:0c`).
    pub host_bridge: Option<String>,
}

/// Where an HDM decoder sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecoderKind {
    /// A platform CXL fixed memory window (ACPI CFMWS).
    Root,
    /// A host bridge's or a switch's decoder.
    Switch,
    /// A memory device's own decoder.
    Endpoint,
    /// A devtype pmscope does not know.
    Unknown,
}

/// An HDM decoder (`decoderP.N`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decoder {
    /// `decoder0.0`.
    pub name: String,
    /// Root, switch or endpoint.
    pub kind: DecoderKind,
    /// The first host physical address it decodes (none while unprogrammed).
    pub start: Option<u64>,
    /// Bytes it decodes (0 while unprogrammed).
    pub size_bytes: u64,
    /// Ways its range is interleaved over its targets.
    pub interleave_ways: u32,
    /// Bytes of a row given to one target before the next.
    pub interleave_granularity: u32,
    /// Its downstream targets in interleave order: host bridge or port ids (`target_list`;
    /// endpoint decoders have none).
    pub targets: Vec<String>,
    /// The region it is part of, if any.
    pub region: Option<String>,
    /// An endpoint decoder's device capacity partition (`pmem`, `ram`), if set.
    pub mode: Option<String>,
}

/// A dax device a region's memory became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaxDevice {
    /// `dax0.0`.
    pub name: String,
    /// Whether kmem onlined it as system RAM (its memory is then a NUMA node's).
    pub system_ram: bool,
    /// The NUMA node its memory belongs to (kmem onlines it there).
    pub target_node: Option<u32>,
}

/// A CXL region (`regionN`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// `region0`.
    pub name: String,
    /// `pmem` or `ram`.
    pub mode: String,
    /// The root decoder (fixed memory window) it was created in.
    pub root_decoder: Option<String>,
    /// The first host physical address.
    pub start: Option<u64>,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Devices interleaved in it.
    pub interleave_ways: u32,
    /// Bytes of a row given to one device before the next.
    pub interleave_granularity: u32,
    /// Whether its decoders are committed (the memory is decoded).
    pub committed: bool,
    /// The endpoint decoders in interleave order (`target0`...).
    pub targets: Vec<String>,
    /// The memory devices of those decoders, in the same order.
    pub memdevs: Vec<String>,
    /// The libnvdimm region a persistent region became (same host addresses).
    pub nd_region: Option<String>,
    /// The dax devices carved from it.
    pub dax_devices: Vec<DaxDevice>,
    /// The NUMA node its memory belongs to (the window's node), once known.
    pub node: Option<u32>,
}

impl Region {
    /// Whether some of its memory is onlined as system RAM (its node holds it).
    pub fn system_ram(&self) -> bool {
        self.dax_devices.iter().any(|d| d.system_ram)
    }

    /// One sentence: what the region is and what it became, for `info`, records and warnings.
    pub fn describe(&self) -> String {
        let ways = match self.interleave_ways {
            1 => format!("1 device ({})", self.memdevs.join(",")),
            n => format!(
                "{n}-way interleaved at {} B over {}",
                self.interleave_granularity,
                self.memdevs.join(",")
            ),
        };
        let mut became = Vec::new();
        if let Some(nd) = &self.nd_region {
            became.push(format!("nd {nd}"));
        }
        for d in &self.dax_devices {
            became.push(if d.system_ram {
                format!("{} onlined as system RAM", d.name)
            } else {
                format!("{} devdax", d.name)
            });
        }
        if let Some(n) = self.node {
            became.push(format!("node {n}"));
        }
        let became = if became.is_empty() {
            String::new()
        } else {
            format!(", {}", became.join(", "))
        };
        let state = if self.committed {
            ""
        } else {
            ", not committed"
        };
        format!(
            "{}: CXL {} region, {ways}{state}{became}",
            self.name, self.mode
        )
    }
}

/// Everything under `/sys/bus/cxl/devices`; empty when the kernel has no CXL bus.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// The memory devices.
    pub memdevs: Vec<Memdev>,
    /// The HDM decoders (root, switch, endpoint).
    pub decoders: Vec<Decoder>,
    /// The regions.
    pub regions: Vec<Region>,
}

impl Inventory {
    /// Reads the CXL bus.
    pub fn read(root: &SysRoot) -> Inventory {
        let names = root.list(BUS);
        let numbered = |prefix: &str| {
            let mut v: Vec<&String> = names
                .iter()
                .filter(|n| n.strip_prefix(prefix).is_some_and(is_index))
                .collect();
            v.sort_by_key(|n| index_key(&n[prefix.len()..]));
            v
        };
        Inventory {
            memdevs: numbered("mem")
                .into_iter()
                .map(|n| memdev(root, n))
                .collect(),
            decoders: numbered("decoder")
                .into_iter()
                .map(|n| decoder(root, n))
                .collect(),
            regions: numbered("region")
                .into_iter()
                .map(|n| region(root, n))
                .collect(),
        }
    }

    /// Whether there is anything CXL at all.
    pub fn is_empty(&self) -> bool {
        self.memdevs.is_empty() && self.decoders.is_empty() && self.regions.is_empty()
    }

    /// The region that became the libnvdimm region `nd` (a DAX target's region).
    pub fn region_of_nd_region(&self, nd: &str) -> Option<&Region> {
        self.regions
            .iter()
            .find(|r| r.nd_region.as_deref() == Some(nd))
    }

    /// The region whose memory kmem onlined on `node`.
    pub fn region_of_node(&self, node: u32) -> Option<&Region> {
        self.regions.iter().find(|r| {
            r.dax_devices
                .iter()
                .any(|d| d.system_ram && d.target_node == Some(node))
        })
    }
}

/// `3` or `0.1` (decoders are numbered port.index).
fn is_index(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn index_key(s: &str) -> Vec<u64> {
    s.split('.')
        .map(|p| p.parse().unwrap_or(u64::MAX))
        .collect()
}

/// A sysfs number, decimal or 0x-hexadecimal (the CXL core writes sizes and addresses in hex).
fn number(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

fn read_number(root: &SysRoot, rel: &str) -> Option<u64> {
    number(&root.read(rel)?)
}

fn nonempty(root: &SysRoot, rel: &str) -> Option<String> {
    root.read_trim(rel).filter(|s| !s.is_empty())
}

/// The last component of where a sysfs link points.
fn link_name(root: &SysRoot, rel: &str) -> Option<String> {
    let target = std::fs::read_link(root.path(rel)).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

fn memdev(root: &SysRoot, name: &str) -> Memdev {
    let dir = format!("{BUS}/{name}");
    // .../pci0000:0c/0000:0c:01.0/0000:0e:00.0/mem0: the PCI device is the parent, the host
    // bridge the first pciDDDD:BB component.
    let real = std::fs::canonicalize(root.path(&dir)).unwrap_or_default();
    let parts: Vec<String> = real
        .components()
        .filter_map(|c| c.as_os_str().to_str().map(str::to_string))
        .collect();
    let pci_device = parts
        .len()
        .checked_sub(2)
        .map(|i| parts[i].clone())
        .filter(|p| p.contains(':') && !p.starts_with("pci"));
    Memdev {
        serial: nonempty(root, &format!("{dir}/serial")),
        pmem_bytes: read_number(root, &format!("{dir}/pmem/size")).unwrap_or(0),
        ram_bytes: read_number(root, &format!("{dir}/ram/size")).unwrap_or(0),
        numa_node: root
            .read_trim(&format!("{dir}/numa_node"))
            .and_then(|s| s.parse().ok())
            .filter(|&n: &i64| n >= 0),
        firmware_version: nonempty(root, &format!("{dir}/firmware_version")),
        pci_device,
        host_bridge: parts.into_iter().find(|p| p.starts_with("pci")),
        name: name.to_string(),
    }
}

fn decoder(root: &SysRoot, name: &str) -> Decoder {
    let dir = format!("{BUS}/{name}");
    let kind = match root.read_trim(&format!("{dir}/devtype")).as_deref() {
        Some("cxl_decoder_root") => DecoderKind::Root,
        Some("cxl_decoder_switch") => DecoderKind::Switch,
        Some("cxl_decoder_endpoint") => DecoderKind::Endpoint,
        _ => DecoderKind::Unknown,
    };
    let size_bytes = read_number(root, &format!("{dir}/size")).unwrap_or(0);
    Decoder {
        name: name.to_string(),
        kind,
        start: read_number(root, &format!("{dir}/start")).filter(|_| size_bytes > 0),
        size_bytes,
        interleave_ways: read_number(root, &format!("{dir}/interleave_ways")).unwrap_or(0) as u32,
        interleave_granularity: read_number(root, &format!("{dir}/interleave_granularity"))
            .unwrap_or(0) as u32,
        targets: root
            .read_trim(&format!("{dir}/target_list"))
            .map(|t| {
                t.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        region: nonempty(root, &format!("{dir}/region")),
        mode: nonempty(root, &format!("{dir}/mode")).filter(|m| m != "none"),
    }
}

fn region(root: &SysRoot, name: &str) -> Region {
    let dir = format!("{BUS}/{name}");
    let children = root.list(&dir);
    let has_child = |prefix: &str| {
        children
            .iter()
            .any(|c| c.strip_prefix(prefix).is_some_and(is_index))
    };
    // Kernels before 6.3 have no `mode` file; a persistent region has a pmem_regionN child,
    // a volatile one a dax_regionN.
    let mode = nonempty(root, &format!("{dir}/mode")).unwrap_or_else(|| {
        if has_child("pmem_region") {
            "pmem".into()
        } else if has_child("dax_region") {
            "ram".into()
        } else {
            "unknown".into()
        }
    });
    let ways = read_number(root, &format!("{dir}/interleave_ways")).unwrap_or(0) as u32;
    let targets: Vec<String> = (0..ways)
        .filter_map(|i| nonempty(root, &format!("{dir}/target{i}")))
        .collect();
    // decoderE.N belongs to endpointE, whose uport is the memory device.
    let memdevs = targets
        .iter()
        .filter_map(|t| {
            let port = t.strip_prefix("decoder")?.split('.').next()?;
            link_name(root, &format!("{BUS}/endpoint{port}/uport"))
        })
        .collect();
    let real = std::fs::canonicalize(root.path(&dir)).unwrap_or_default();
    let root_decoder = real
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n.starts_with("decoder"));
    let start = read_number(root, &format!("{dir}/resource"));
    let size_bytes = read_number(root, &format!("{dir}/size")).unwrap_or(0);
    let nd_region = start
        .filter(|_| size_bytes > 0)
        .and_then(|s| nd_region_at(root, s));
    let dax_devices = dax_devices_of(root, &real, nd_region.as_deref());
    // The window's node: a dax device's target node, else the nd region's.
    let node = dax_devices.iter().find_map(|d| d.target_node).or_else(|| {
        nd_region.as_ref().and_then(|nd| {
            root.read_trim(&format!("sys/bus/nd/devices/{nd}/target_node"))
                .and_then(|s| s.parse::<i64>().ok())
                .and_then(|n| u32::try_from(n).ok())
        })
    });
    Region {
        name: name.to_string(),
        mode,
        root_decoder,
        start,
        size_bytes,
        interleave_ways: ways,
        interleave_granularity: read_number(root, &format!("{dir}/interleave_granularity"))
            .unwrap_or(0) as u32,
        committed: root.read_trim(&format!("{dir}/commit")).as_deref() == Some("1"),
        targets,
        memdevs,
        nd_region,
        dax_devices,
        node,
    }
}

/// The libnvdimm region at host address `start`: a persistent CXL region's nd region is a
/// child of the nvdimm bridge, not of the CXL region, so the address is what ties them.
fn nd_region_at(root: &SysRoot, start: u64) -> Option<String> {
    root.list("sys/bus/nd/devices")
        .into_iter()
        .filter(|n| {
            n.strip_prefix("region")
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
        })
        .find(|n| read_number(root, &format!("sys/bus/nd/devices/{n}/resource")) == Some(start))
}

/// The dax devices below the CXL region (a volatile region's) or below its nd region (a
/// persistent one's, through a devdax namespace).
fn dax_devices_of(
    root: &SysRoot,
    region_path: &std::path::Path,
    nd_region: Option<&str>,
) -> Vec<DaxDevice> {
    let nd_path = nd_region
        .and_then(|nd| std::fs::canonicalize(root.path(&format!("sys/bus/nd/devices/{nd}"))).ok());
    root.list("sys/bus/dax/devices")
        .into_iter()
        .filter_map(|name| {
            let rel = format!("sys/bus/dax/devices/{name}");
            let real = std::fs::canonicalize(root.path(&rel)).ok()?;
            let below = |p: &std::path::Path| !p.as_os_str().is_empty() && real.starts_with(p);
            if !(below(region_path) || nd_path.as_deref().is_some_and(below)) {
                return None;
            }
            Some(DaxDevice {
                system_ram: link_name(root, &format!("{rel}/driver")).as_deref() == Some("kmem"),
                target_node: root
                    .read_trim(&format!("{rel}/target_node"))
                    .and_then(|s| s.parse::<i64>().ok())
                    .and_then(|n| u32::try_from(n).ok()),
                name,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    /// Two host bridges with a window each, as read in a QEMU 7.2 / Linux 6.1 guest (an
    /// early version of the lab's cxl layout): mem1 and mem2 behind the 1st (region0, 2 ways,
    /// devdax onlined by kmem as node 4), mem0 behind the 2nd (region1, 1 way, devdax on
    /// node 5's window).
    fn cxl_guest_tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        guest_memdevs_and_decoders(t.path());
        guest_regions(t.path());
        t
    }

    const GUEST_ACPI: &str = "sys/devices/platform/ACPI0017:00/root0";
    const GUEST_BUS: &str = "sys/bus/cxl/devices";

    /// Writes `v` to `rel` under the fake root `p`.
    fn put(p: &Path, rel: &str, v: &str) {
        let f = p.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, v).unwrap();
    }

    /// A symbolic link at `at` to `target`, both under the fake root `p`.
    fn link(p: &Path, target: &str, at: &str) {
        let at = p.join(at);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(p.join(target), at).unwrap();
    }

    /// The guest's decoders: name, directory under the ACPI root (`.` for the root itself),
    /// devtype, start, size, ways, target list, region, mode (`-`: none).
    const GUEST_DECODERS: &str = "
        decoder0.0 . root 0x410000000 0x100000000 1 12 - -
        decoder0.1 . root 0x510000000 0x100000000 1 222 - -
        decoder1.0 port1 switch 0x410000000 0x40000000 2 1,0 region0 -
        decoder2.0 port2 switch 0x510000000 0x20000000 1 0 region1 -
        decoder3.0 port2/endpoint3 endpoint 0x510000000 0x20000000 1 - region1 pmem
        decoder4.0 port1/endpoint4 endpoint 0x410000000 0x40000000 2 - region0 pmem
        decoder5.0 port1/endpoint5 endpoint 0x410000000 0x40000000 2 - region0 pmem";

    fn guest_memdevs_and_decoders(p: &Path) {
        let (acpi, bus) = (GUEST_ACPI, GUEST_BUS);
        // Memory devices: (name, pci path, serial).
        for (m, pci, serial) in [
            ("mem0", "pci0000:de/0000:de:00.0/0000:df:00.0", "0x1002"),
            ("mem1", "pci0000:0c/0000:0c:00.0/0000:0d:00.0", "0x1000"),
            ("mem2", "pci0000:0c/0000:0c:01.0/0000:0e:00.0", "0x1001"),
        ] {
            let d = format!("sys/devices/{pci}/{m}");
            put(p, &format!("{d}/serial"), &format!("{serial}\n"));
            put(p, &format!("{d}/pmem/size"), "0x20000000\n");
            put(p, &format!("{d}/ram/size"), "0x0\n");
            put(p, &format!("{d}/numa_node"), "-1\n");
            put(p, &format!("{d}/firmware_version"), "BWFW VERSION 00\n");
            link(p, &d, &format!("{bus}/{m}"));
        }
        for line in GUEST_DECODERS.lines().filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [name, dir, kind, start, size, ways, targets, region, mode] = f[..] else {
                panic!("a decoder line has 9 fields: {line}");
            };
            let d = match dir {
                "." => format!("{acpi}/{name}"),
                dir => format!("{acpi}/{dir}/{name}"),
            };
            put(p, &format!("{d}/devtype"), &format!("cxl_decoder_{kind}\n"));
            put(p, &format!("{d}/start"), &format!("{start}\n"));
            put(p, &format!("{d}/size"), &format!("{size}\n"));
            put(p, &format!("{d}/interleave_ways"), &format!("{ways}\n"));
            put(p, &format!("{d}/interleave_granularity"), "256\n");
            if targets != "-" {
                put(p, &format!("{d}/target_list"), &format!("{targets}\n"));
            }
            if kind != "root" {
                let region = if region == "-" { "" } else { region };
                put(p, &format!("{d}/region"), &format!("{region}\n"));
            }
            if mode != "-" {
                put(p, &format!("{d}/mode"), &format!("{mode}\n"));
            }
            link(p, &d, &format!("{bus}/{name}"));
        }
        for (e, m) in [
            (
                "port2/endpoint3",
                "pci0000:de/0000:de:00.0/0000:df:00.0/mem0",
            ),
            (
                "port1/endpoint4",
                "pci0000:0c/0000:0c:00.0/0000:0d:00.0/mem1",
            ),
            (
                "port1/endpoint5",
                "pci0000:0c/0000:0c:01.0/0000:0e:00.0/mem2",
            ),
        ] {
            let name = e.rsplit('/').next().unwrap();
            link(p, &format!("sys/devices/{m}"), &format!("{acpi}/{e}/uport"));
            link(p, &format!("{acpi}/{e}"), &format!("{bus}/{name}"));
        }
    }

    /// Regions (no `mode` file before Linux 6.3), their nd regions and dax devices.
    fn guest_regions(p: &Path) {
        let (acpi, bus) = (GUEST_ACPI, GUEST_BUS);
        let ndbus = format!("{acpi}/nvdimm-bridge0/ndbus0");
        for (i, root_decoder, start, size, ways, targets, node, driver) in [
            (
                0,
                "decoder0.0",
                "0x410000000",
                "0x40000000",
                "2",
                ["decoder5.0", "decoder4.0"].as_slice(),
                "4",
                "kmem",
            ),
            (
                1,
                "decoder0.1",
                "0x510000000",
                "0x20000000",
                "1",
                ["decoder3.0"].as_slice(),
                "5",
                "device_dax",
            ),
        ] {
            let r = format!("{acpi}/{root_decoder}/region{i}");
            put(p, &format!("{r}/resource"), &format!("{start}\n"));
            put(p, &format!("{r}/size"), &format!("{size}\n"));
            put(p, &format!("{r}/interleave_ways"), &format!("{ways}\n"));
            put(p, &format!("{r}/interleave_granularity"), "256\n");
            put(p, &format!("{r}/commit"), "1\n");
            for (k, t) in targets.iter().enumerate() {
                put(p, &format!("{r}/target{k}"), &format!("{t}\n"));
            }
            put(
                p,
                &format!("{r}/pmem_region{i}/devtype"),
                "cxl_pmem_region\n",
            );
            link(p, &r, &format!("{bus}/region{i}"));
            let nd = format!("{ndbus}/region{i}");
            put(p, &format!("{nd}/resource"), &format!("{start}\n"));
            put(p, &format!("{nd}/target_node"), &format!("{node}\n"));
            put(p, &format!("{nd}/numa_node"), "0\n");
            link(p, &nd, &format!("sys/bus/nd/devices/region{i}"));
            let dax = format!("{nd}/dax{i}.0/dax{i}.0");
            put(p, &format!("{dax}/target_node"), &format!("{node}\n"));
            link(
                p,
                &format!("sys/bus/dax/drivers/{driver}"),
                &format!("{dax}/driver"),
            );
            link(p, &dax, &format!("sys/bus/dax/devices/dax{i}.0"));
        }
    }

    #[test]
    fn the_cxl_guests_devices_decoders_and_regions_are_read() {
        let t = cxl_guest_tree();
        let inv = Inventory::read(&SysRoot::at(t.path()));
        let mems: Vec<_> = inv.memdevs.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(mems, ["mem0", "mem1", "mem2"]);
        let m1 = &inv.memdevs[1];
        assert_eq!(m1.serial.as_deref(), Some("0x1000"));
        assert_eq!(m1.pmem_bytes, 512 << 20);
        assert_eq!(m1.ram_bytes, 0);
        assert_eq!(m1.numa_node, None);
        assert_eq!(m1.pci_device.as_deref(), Some("0000:0d:00.0"));
        assert_eq!(m1.host_bridge.as_deref(), Some("pci0000:0c"));
        assert_eq!(m1.firmware_version.as_deref(), Some("BWFW VERSION 00"));

        let decs: Vec<_> = inv.decoders.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            decs,
            [
                "decoder0.0",
                "decoder0.1",
                "decoder1.0",
                "decoder2.0",
                "decoder3.0",
                "decoder4.0",
                "decoder5.0"
            ]
        );
        let window = &inv.decoders[0];
        assert_eq!(window.kind, DecoderKind::Root);
        assert_eq!(window.start, Some(0x4_1000_0000));
        assert_eq!(window.size_bytes, 4 << 30);
        assert_eq!(window.targets, ["12"]);
        assert_eq!(window.region, None);
        let bridge = &inv.decoders[2];
        assert_eq!(bridge.kind, DecoderKind::Switch);
        assert_eq!(
            (bridge.interleave_ways, bridge.interleave_granularity),
            (2, 256)
        );
        assert_eq!(bridge.targets, ["1", "0"]);
        assert_eq!(bridge.region.as_deref(), Some("region0"));
        assert_eq!(inv.decoders[4].kind, DecoderKind::Endpoint);
        assert_eq!(inv.decoders[4].mode.as_deref(), Some("pmem"));
        assert!(inv.decoders[4].targets.is_empty());

        let r0 = &inv.regions[0];
        assert_eq!(r0.mode, "pmem");
        assert_eq!(r0.root_decoder.as_deref(), Some("decoder0.0"));
        assert_eq!(r0.size_bytes, 1 << 30);
        assert_eq!((r0.interleave_ways, r0.interleave_granularity), (2, 256));
        assert!(r0.committed);
        assert_eq!(r0.targets, ["decoder5.0", "decoder4.0"]);
        assert_eq!(r0.memdevs, ["mem2", "mem1"]);
        assert_eq!(r0.nd_region.as_deref(), Some("region0"));
        assert_eq!(
            r0.dax_devices,
            [DaxDevice {
                name: "dax0.0".into(),
                system_ram: true,
                target_node: Some(4)
            }]
        );
        assert_eq!(r0.node, Some(4));
        assert!(r0.system_ram());
        assert_eq!(
            r0.describe(),
            "region0: CXL pmem region, 2-way interleaved at 256 B over mem2,mem1, nd region0, dax0.0 onlined as system RAM, node 4"
        );
        let r1 = &inv.regions[1];
        assert_eq!(r1.memdevs, ["mem0"]);
        assert!(!r1.system_ram());
        assert_eq!(r1.node, Some(5));
        assert_eq!(
            r1.describe(),
            "region1: CXL pmem region, 1 device (mem0), nd region1, dax1.0 devdax, node 5"
        );

        assert_eq!(
            inv.region_of_node(4).map(|r| r.name.as_str()),
            Some("region0")
        );
        // Node 5 is only the window's: nothing is onlined there.
        assert_eq!(inv.region_of_node(5), None);
        assert_eq!(
            inv.region_of_nd_region("region1").map(|r| r.name.as_str()),
            Some("region1")
        );
        assert_eq!(inv.region_of_nd_region("region7"), None);
    }

    #[test]
    fn a_region_without_an_nd_region_says_only_what_it_is() {
        let t = cxl_guest_tree();
        std::fs::remove_file(t.path().join("sys/bus/nd/devices/region1")).unwrap();
        let inv = Inventory::read(&SysRoot::at(t.path()));
        let r1 = &inv.regions[1];
        assert_eq!(r1.nd_region, None);
        assert!(r1.dax_devices.is_empty());
        assert_eq!(r1.node, None);
        assert_eq!(r1.describe(), "region1: CXL pmem region, 1 device (mem0)");
    }

    #[test]
    fn no_cxl_bus_no_inventory() {
        let t = tempfile::tempdir().unwrap();
        let inv = Inventory::read(&SysRoot::at(t.path()));
        assert!(inv.is_empty());
        assert_eq!(inv, Inventory::default());
    }

    #[test]
    fn numbers_are_hex_or_decimal_and_indices_port_dot_n() {
        assert_eq!(number("0x20000000\n"), Some(512 << 20));
        assert_eq!(number("256"), Some(256));
        assert_eq!(number("x"), None);
        assert!(is_index("0.1") && is_index("12"));
        assert!(!is_index("") && !is_index("0.") && !is_index("_region0"));
    }
}
