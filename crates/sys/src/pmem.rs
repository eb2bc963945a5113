//! Persistent-memory regions as libnvdimm describes them (`/sys/bus/nd/devices/region*`):
//! where the region comes from (a real NVDIMM in the ACPI NFIT, a hypervisor's virtual
//! NVDIMM, or DRAM reserved with `memmap=`), its persistence domain (eADR or ADR), and its
//! interleave set. A DAX result is only as true as this: an emulated region records `dax`
//! exactly like Optane unless someone says where it came from.

use crate::sysroot::SysRoot;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where a region's memory comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// A real NVDIMM described by the platform's ACPI NFIT (bare metal).
    Nfit,
    /// An NFIT NVDIMM under a hypervisor: virtual, backed by whatever the host chose.
    VirtualNfit,
    /// DRAM the kernel was told to treat as pmem (`memmap=N!M`, e820 type 12).
    E820,
    /// A persistent CXL region (a type-3 device's persistent capacity, `cxl create-region`).
    Cxl,
    /// A persistent CXL region under a hypervisor: an emulated device (QEMU's cxl-type3).
    VirtualCxl,
    /// A device-tree `pmem-region` (`of_pmem`).
    DeviceTree,
    /// The kernel's nfit_test emulation.
    NfitTest,
    /// A provider pmscope does not know.
    Unknown,
}

impl Origin {
    /// The short name recorded in results.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Nfit => "nfit",
            Origin::VirtualNfit => "virtual-nfit",
            Origin::E820 => "e820",
            Origin::Cxl => "cxl",
            Origin::VirtualCxl => "virtual-cxl",
            Origin::DeviceTree => "of-pmem",
            Origin::NfitTest => "nfit-test",
            Origin::Unknown => "unknown",
        }
    }

    /// Whether the region only emulates persistent memory (its figures are not a
    /// persistent medium's).
    pub fn emulated(self) -> bool {
        !matches!(self, Origin::Nfit | Origin::Cxl | Origin::DeviceTree)
    }
}

/// One NVDIMM of a region's interleave set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimm {
    /// `nmem0`.
    pub name: String,
    /// NFIT identity (`vendor-serial`), when the NFIT gives one.
    pub id: Option<String>,
    /// NFIT vendor id (`0x8980` for Intel Optane).
    pub vendor: Option<String>,
    /// NFIT device id.
    pub device: Option<String>,
}

/// A persistent-memory region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// `region0`.
    pub name: String,
    /// Where its memory comes from.
    pub origin: Origin,
    /// `cpu_cache` (eADR: the caches are inside the persistence domain) or
    /// `memory_controller` (ADR: flushed lines are durable); `None` when the platform
    /// declares neither.
    pub persistence_domain: Option<String>,
    /// The DIMMs interleaved in it (`mappings`), with their NFIT identity.
    pub dimms: Vec<Dimm>,
    /// Size in bytes.
    pub size_bytes: u64,
    /// The NUMA node its memory belongs to.
    pub numa_node: Option<i64>,
}

impl Region {
    /// One sentence: what the region is, for `info`, records and warnings.
    pub fn describe(&self) -> String {
        let cxl = matches!(self.origin, Origin::Cxl | Origin::VirtualCxl);
        let ways = match self.dimms.len() {
            0 => "no NVDIMM behind it".to_string(),
            1 if cxl => "1 CXL device".to_string(),
            1 => "1 DIMM".to_string(),
            n => format!("{n}-way interleaved"),
        };
        let what = match self.origin {
            Origin::Nfit => "an NVDIMM region of the platform's ACPI NFIT".to_string(),
            Origin::VirtualNfit => {
                let qemu = self.dimms.iter().any(|d| {
                    d.vendor.as_deref() == Some("0x8680") && d.device.as_deref() == Some("0x0100")
                });
                format!(
                    "a virtual NVDIMM{} from the hypervisor's NFIT, backed by whatever the host chose",
                    if qemu { " (QEMU)" } else { "" }
                )
            }
            Origin::E820 => "DRAM reserved as pmem with memmap= (e820 type 12): emulated".into(),
            Origin::Cxl => "a persistent CXL region (see `pmscope info`'s cxl section)".into(),
            Origin::VirtualCxl => {
                "a persistent CXL region of the hypervisor's emulated CXL devices".into()
            }
            Origin::DeviceTree => "a device-tree pmem region".into(),
            Origin::NfitTest => "the kernel's nfit_test emulation".into(),
            Origin::Unknown => "a pmem region of unknown origin".into(),
        };
        let domain = match self.persistence_domain.as_deref() {
            Some("cpu_cache") => {
                "persistence domain cpu_cache (eADR: stores are durable once visible)"
            }
            Some("memory_controller") => {
                "persistence domain memory_controller (ADR: durable once flushed)"
            }
            Some(_) | None => "no persistence domain declared",
        };
        format!("{}: {what}, {ways}, {domain}", self.name)
    }
}

/// Every region libnvdimm knows. `hypervisor` tells a bare-metal NFIT from a virtual one.
pub fn regions(root: &SysRoot, hypervisor: bool) -> Vec<Region> {
    let base = "sys/bus/nd/devices";
    let mut names: Vec<String> = root
        .list(base)
        .into_iter()
        .filter(|n| n.strip_prefix("region").is_some_and(is_number))
        .collect();
    names.sort_by_key(|n| n["region".len()..].parse::<u64>().unwrap_or(u64::MAX));
    names
        .into_iter()
        .map(|name| region(root, &name, hypervisor))
        .collect()
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn region(root: &SysRoot, name: &str, hypervisor: bool) -> Region {
    let dir = format!("sys/bus/nd/devices/{name}");
    let real = std::fs::canonicalize(root.path(&dir))
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let provider = root
        .read_trim(&format!("{dir}/../provider"))
        .unwrap_or_default();
    let origin = origin_of(&real, &provider, hypervisor);
    let ways = root.read_u64(&format!("{dir}/mappings")).unwrap_or(0);
    let dimms = (0..ways)
        .filter_map(|i| root.read_trim(&format!("{dir}/mapping{i}")))
        .filter_map(|m| m.split(',').next().map(str::to_string))
        .map(|nmem| {
            let nfit = |f: &str| {
                root.read_trim(&format!("sys/bus/nd/devices/{nmem}/nfit/{f}"))
                    .filter(|s| !s.is_empty())
            };
            Dimm {
                id: nfit("id"),
                vendor: nfit("vendor"),
                device: nfit("device"),
                name: nmem,
            }
        })
        .collect();
    Region {
        name: name.to_string(),
        origin,
        persistence_domain: root
            .read_trim(&format!("{dir}/persistence_domain"))
            .filter(|s| !s.is_empty()),
        dimms,
        size_bytes: root.read_u64(&format!("{dir}/size")).unwrap_or(0),
        numa_node: root
            .read_trim(&format!("{dir}/numa_node"))
            .and_then(|s| s.parse().ok()),
    }
}

/// The origin from the bus provider (`ACPI.NFIT`, `CXL`, `e820`, `of_pmem`, `nfit_test.N`) or,
/// where the file is missing, the region's device path (`ACPI0012` is the NFIT root device).
fn origin_of(real_path: &str, provider: &str, hypervisor: bool) -> Origin {
    let nfit = if hypervisor {
        Origin::VirtualNfit
    } else {
        Origin::Nfit
    };
    if provider == "ACPI.NFIT" || (provider.is_empty() && real_path.contains("/ACPI0012:")) {
        nfit
    } else if provider == "CXL" || (provider.is_empty() && real_path.contains("/nvdimm-bridge")) {
        if hypervisor {
            Origin::VirtualCxl
        } else {
            Origin::Cxl
        }
    } else if provider == "e820" || (provider.is_empty() && real_path.contains("/e820_pmem/")) {
        Origin::E820
    } else if provider.starts_with("of_pmem") || real_path.contains("/of_pmem") {
        Origin::DeviceTree
    } else if provider.starts_with("nfit_test") || real_path.contains("/nfit_test") {
        Origin::NfitTest
    } else {
        Origin::Unknown
    }
}

/// The region holding the pmem block device `name` (`pmem0`), from its sysfs device path.
pub fn region_of_block(root: &SysRoot, name: &str) -> Option<String> {
    region_in(&std::fs::canonicalize(root.path(&format!("sys/block/{name}/device"))).ok()?)
}

/// The region holding the device-DAX instance `name` (`dax1.0`).
pub fn region_of_dax(root: &SysRoot, name: &str) -> Option<String> {
    region_in(&std::fs::canonicalize(root.path(&format!("sys/bus/dax/devices/{name}"))).ok()?)
}

fn region_in(path: &Path) -> Option<String> {
    path.components()
        .filter_map(|c| c.as_os_str().to_str())
        .rfind(|c| c.strip_prefix("region").is_some_and(is_number))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The lab guest's layout, as read there: two QEMU NVDIMMs under the NFIT (no
    /// persistence domain declared) and one memmap= region.
    fn lab_guest_tree(eadr: bool) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let w = |rel: &str, v: &str| {
            let p = t.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        let nfit = "sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0012:00/ndbus0";
        let e820 = "sys/devices/platform/e820_pmem/ndbus1";
        for (i, bus) in [(0, nfit), (1, nfit), (2, e820)] {
            let r = format!("{bus}/region{i}");
            w(
                &format!("{r}/size"),
                if i == 2 {
                    "536870912\n"
                } else {
                    "1073741824\n"
                },
            );
            w(&format!("{r}/numa_node"), "0\n");
            if i < 2 {
                w(&format!("{r}/mappings"), "1\n");
                w(
                    &format!("{r}/mapping0"),
                    &format!("nmem{i},0,1073741824,0\n"),
                );
                w(&format!("{bus}/nmem{i}/nfit/vendor"), "0x8680\n");
                w(&format!("{bus}/nmem{i}/nfit/device"), "0x0100\n");
                w(
                    &format!("{bus}/nmem{i}/nfit/id"),
                    &format!("8680-5{}341200\n", 6 + i),
                );
                if eadr {
                    w(&format!("{r}/persistence_domain"), "cpu_cache\n");
                }
            } else {
                w(&format!("{r}/mappings"), "0\n");
            }
            w(&format!("{r}/namespace{i}.0/x"), "");
        }
        std::fs::create_dir_all(t.path().join("sys/bus/nd/devices")).unwrap();
        std::fs::create_dir_all(t.path().join("sys/block/pmem0")).unwrap();
        std::fs::create_dir_all(t.path().join("sys/bus/dax/devices")).unwrap();
        for (name, target) in [
            ("region0", format!("{nfit}/region0")),
            ("region1", format!("{nfit}/region1")),
            ("region2", format!("{e820}/region2")),
            ("nmem0", format!("{nfit}/nmem0")),
            ("nmem1", format!("{nfit}/nmem1")),
            ("ndbus0", nfit.to_string()),
        ] {
            symlink(
                t.path().join(target),
                t.path().join("sys/bus/nd/devices").join(name),
            )
            .unwrap();
        }
        symlink(
            t.path().join(format!("{nfit}/region0/namespace0.0")),
            t.path().join("sys/block/pmem0/device"),
        )
        .unwrap();
        std::fs::create_dir_all(t.path().join(format!("{nfit}/region1/dax1.0/dax1.0"))).unwrap();
        symlink(
            t.path().join(format!("{nfit}/region1/dax1.0/dax1.0")),
            t.path().join("sys/bus/dax/devices/dax1.0"),
        )
        .unwrap();
        t
    }

    #[test]
    fn the_lab_guests_regions_are_virtual_and_emulated() {
        let t = lab_guest_tree(false);
        let root = SysRoot::at(t.path());
        let r = regions(&root, true);
        let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["region0", "region1", "region2"]);
        assert_eq!(r[0].origin, Origin::VirtualNfit);
        assert_eq!(r[2].origin, Origin::E820);
        assert!(r.iter().all(|r| r.origin.emulated()));
        assert_eq!(r[0].persistence_domain, None);
        assert_eq!(r[0].dimms.len(), 1);
        assert_eq!(r[0].dimms[0].id.as_deref(), Some("8680-56341200"));
        assert_eq!(r[2].dimms, vec![]);
        assert_eq!(
            r[0].describe(),
            "region0: a virtual NVDIMM (QEMU) from the hypervisor's NFIT, backed by whatever the host chose, 1 DIMM, no persistence domain declared"
        );
        assert_eq!(
            r[2].describe(),
            "region2: DRAM reserved as pmem with memmap= (e820 type 12): emulated, no NVDIMM behind it, no persistence domain declared"
        );
        assert_eq!(region_of_block(&root, "pmem0").as_deref(), Some("region0"));
        assert_eq!(region_of_dax(&root, "dax1.0").as_deref(), Some("region1"));
        assert_eq!(region_of_block(&root, "pmem9"), None);
    }

    #[test]
    fn bare_metal_nfit_is_real_and_says_its_domain() {
        let t = lab_guest_tree(true);
        let root = SysRoot::at(t.path());
        let r = regions(&root, false);
        assert_eq!(r[0].origin, Origin::Nfit);
        assert!(!r[0].origin.emulated());
        assert_eq!(r[0].persistence_domain.as_deref(), Some("cpu_cache"));
        assert!(
            r[0].describe()
                .ends_with("persistence domain cpu_cache (eADR: stores are durable once visible)")
        );
        // The e820 region stays emulated on bare metal too.
        assert_eq!(r[2].origin, Origin::E820);
    }

    #[test]
    fn no_libnvdimm_no_regions() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(regions(&SysRoot::at(t.path()), false), vec![]);
    }

    #[test]
    fn providers_name_the_origin() {
        assert_eq!(origin_of("", "ACPI.NFIT", false), Origin::Nfit);
        assert_eq!(origin_of("", "e820", true), Origin::E820);
        assert_eq!(origin_of("", "CXL", false), Origin::Cxl);
        assert!(!Origin::Cxl.emulated());
        assert_eq!(origin_of("", "CXL", true), Origin::VirtualCxl);
        assert!(Origin::VirtualCxl.emulated());
        assert_eq!(
            origin_of(
                "/sys/devices/platform/ACPI0017:00/root0/nvdimm-bridge0/ndbus0/region0",
                "",
                false
            ),
            Origin::Cxl
        );
        assert_eq!(origin_of("", "of_pmem", false), Origin::DeviceTree);
        assert_eq!(origin_of("", "nfit_test.0", false), Origin::NfitTest);
        assert_eq!(origin_of("/sys/devices/x", "", false), Origin::Unknown);
    }
}
