//! Requested versus achieved. [`probe`] reads back what the kernel gave a fresh mapping;
//! [`against_expectation`] turns each difference from what its kind expects into a
//! [`Warning`]; [`compare_targets`] points out the classic error of the field (seed 000):
//! comparing targets backed by different page sizes without saying so.

use crate::TargetSpec;
use crate::backing::{Backing, Expectation, MapOptions, fault_evidence};
use pmscope_core::achieved::{Achieved, CxlFacts, Persistence, PmemRegionFacts};
use pmscope_core::units::{Bytes, GIB1, KIB4, MIB2, page_size_name};
use pmscope_core::warning::Warning;
use pmscope_sys::dax::ExtentLayout;
use pmscope_sys::mman::RawMap;

/// Below this fraction of the expected page size, the result carries a warning.
pub const PAGE_FRACTION_OK: f64 = 0.9;

/// The most pages move_pages is asked about; beyond, the range is sampled evenly.
const MAX_NODE_QUERIES: usize = 1 << 18;

pub(crate) fn probe(
    backing: &Backing,
    raw: RawMap,
    _spec: &TargetSpec,
    prefault_ns: u64,
    faults: u64,
    opts: &MapOptions,
) -> Achieved {
    let len = raw.len as u64;
    let smaps = pmscope_sys::smaps::probe_range(&opts.root, raw.ptr as usize, raw.len);
    let pages = smaps
        .as_ref()
        .map(|s| s.page_mix(len, backing.dax_file()))
        .unwrap_or_default();
    let faults = fault_evidence(len, faults);
    let smaps_size = if pages.smaps_sees_mapping {
        pages.dominant()
    } else {
        None
    };
    let (page_size, source) = match (smaps_size, faults.page_size) {
        (Some(a), Some(b)) if a == b => (Some(a), "smaps+faults"),
        // THP may be split or collapsed after the pre-fault; smaps tells the state now.
        (Some(a), _) => (Some(a), "smaps"),
        (None, Some(b)) => (Some(b), "faults"),
        (None, None) => (None, "none"),
    };
    let step = page_size.unwrap_or(KIB4).min(MIB2) as usize;
    let placement = pmscope_sys::numa::page_nodes(raw.ptr, raw.len, step, MAX_NODE_QUERIES);
    let cxl = cxl_facts(&opts.root, backing.pmem_region(), &placement.per_node);
    Achieved {
        bytes: len,
        pages,
        faults,
        page_size,
        page_size_source: source.to_string(),
        nodes: placement.per_node,
        nodes_unknown: placement.unknown,
        nodes_sampled: placement.sampled,
        persistence: backing.persistence(),
        map_sync: backing.map_sync(),
        path: backing.path_string(),
        filesystem: backing.filesystem(),
        alignment: Some(backing.alignment()),
        prefault_ns,
        pmem_region: backing
            .pmem_region()
            .and_then(|r| region_facts(&opts.root, r)),
        cxl,
    }
}

/// The CXL region the memory is: the one that became the DAX target's nd region, else the
/// one kmem onlined on the node holding most of the mapping's pages.
fn cxl_facts(
    root: &pmscope_sys::sysroot::SysRoot,
    nd_region: Option<&str>,
    nodes: &std::collections::BTreeMap<u32, u64>,
) -> Option<CxlFacts> {
    if nd_region.is_none() && nodes.is_empty() {
        return None;
    }
    let inv = pmscope_sys::cxl::Inventory::read(root);
    if inv.regions.is_empty() {
        return None;
    }
    let region = match nd_region {
        Some(nd) => inv.region_of_nd_region(nd),
        None => nodes
            .iter()
            .filter(|&(_, &pages)| pages > 0)
            .filter_map(|(&n, &pages)| inv.region_of_node(n).map(|r| (pages, r)))
            .max_by_key(|&(pages, _)| pages)
            .map(|(_, r)| r),
    }?;
    let serials = region
        .memdevs
        .iter()
        .filter_map(|m| inv.memdevs.iter().find(|d| &d.name == m)?.serial.clone())
        .collect();
    Some(CxlFacts {
        region: region.name.clone(),
        mode: region.mode.clone(),
        memdevs: region.memdevs.clone(),
        serials,
        interleave_ways: region.interleave_ways,
        interleave_granularity: region.interleave_granularity,
        node: region.node,
        system_ram: region.system_ram(),
        emulated: pmscope_sys::cpu::CpuFeatures::detect().hypervisor,
        description: region.describe(),
    })
}

/// What sysfs says about the region `name`: its origin (real, virtual or memmap= emulated),
/// persistence domain and interleave.
fn region_facts(root: &pmscope_sys::sysroot::SysRoot, name: &str) -> Option<PmemRegionFacts> {
    let hypervisor = pmscope_sys::cpu::CpuFeatures::detect().hypervisor;
    let r = pmscope_sys::pmem::regions(root, hypervisor)
        .into_iter()
        .find(|r| r.name == name)?;
    Some(PmemRegionFacts {
        origin: r.origin.name().to_string(),
        emulated: r.origin.emulated(),
        persistence_domain: r.persistence_domain.clone(),
        interleave_ways: r.dimms.len() as u32,
        description: r.describe(),
        region: r.name,
    })
}

fn size_name(bytes: u64) -> String {
    match bytes {
        KIB4 => "4 KiB".into(),
        MIB2 => "2 MiB".into(),
        GIB1 => "1 GiB".into(),
        b => Bytes(b).to_string(),
    }
}

pub(crate) fn against_expectation(
    spec: &TargetSpec,
    a: &Achieved,
    expect: &Expectation,
    extents: Option<ExtentLayout>,
) -> Vec<Warning> {
    let mut w = Vec::new();
    let name = spec.to_string();
    if let Some(want) = expect.page_bytes {
        let fraction = if a.pages.smaps_sees_mapping {
            a.pages.fraction(want, a.bytes)
        } else if a.faults.page_size == Some(want) {
            1.0
        } else {
            0.0
        };
        // A DAX mapping shorter than one huge page cannot be huge-mapped; nothing to report.
        let meaningful = a.bytes >= want;
        if meaningful && fraction < PAGE_FRACTION_OK {
            let got = match a.page_size {
                Some(s) => format!("mostly {} pages", size_name(s)),
                None => format!(
                    "an unclear page size ({:.0} bytes per fault)",
                    a.faults.bytes_per_fault
                ),
            };
            let share = if a.pages.smaps_sees_mapping {
                format!(
                    "only {:.0}% of the range is backed by {} pages, ",
                    100.0 * fraction,
                    size_name(want)
                )
            } else {
                String::new()
            };
            let remedy = remedy_for_page_size(spec, a, want, extents);
            w.push(Warning::new(
                "page-size-mismatch",
                format!("{name}: {share}got {got} although {}", expect.why),
                remedy,
            ));
        }
    }
    if a.pages.smaps_sees_mapping
        && let (Some(s), Some(f)) = (a.pages.dominant(), a.faults.page_size)
        && s != f
        && s > f
    {
        // smaps shows larger pages than were faulted in: khugepaged collapsed them after the
        // pre-fault. Worth knowing, since timings before and after differ.
        w.push(Warning::new(
            "page-size-changed",
            format!(
                "{name}: pre-faulted as {} pages but smaps now shows {} pages (khugepaged collapsed them)",
                size_name(f),
                size_name(s)
            ),
            "results may depend on when khugepaged ran; use dram:2m (hugetlb) for a fixed page size",
        ));
    }
    if let Some(node) = spec.node {
        let on: u64 = a.nodes.get(&node).copied().unwrap_or(0);
        let all: u64 = a.nodes.values().sum::<u64>();
        if all > 0 && on < all {
            w.push(Warning::new(
                "node-mismatch",
                format!(
                    "{name}: {:.1}% of the pages are not on node {node} (found on nodes {})",
                    100.0 * (all - on) as f64 / all as f64,
                    a.nodes
                        .keys()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                "check free memory on that node (`pmscope info`), or drop node= for this kind",
            ));
        }
    }
    if let Some(r) = a.pmem_region.as_ref().filter(|r| r.emulated) {
        w.push(Warning::new(
            "pmem-emulated",
            format!(
                "{name}: the DAX memory is not a persistent medium: {}",
                r.description
            ),
            "read its figures as the backing memory's (DRAM or the host's file), not as persistent memory's; \
             compare with real NVDIMM or CXL pmem before drawing conclusions about a medium",
        ));
    }
    // A DAX target on emulated CXL pmem is said emulated above; memory onlined from it is not.
    if let Some(c) = a
        .cxl
        .as_ref()
        .filter(|c| c.emulated && a.pmem_region.is_none())
    {
        w.push(Warning::new(
            "cxl-emulated",
            format!(
                "{name}: the memory is an emulated CXL device's, under a hypervisor: {}",
                c.description
            ),
            "read its figures as the hypervisor's emulation (QEMU serves CXL memory as MMIO), \
             not as a CXL device's; measure real CXL memory on bare metal",
        ));
    }
    if a.persistence == Persistence::PageCache {
        w.push(Warning::new(
            "not-dax",
            format!(
                "{name}: {} is not DAX (MAP_SYNC refused), so stores reach the page cache and are durable only after msync",
                a.filesystem.as_deref().unwrap_or("the file system")
            ),
            "mount a DAX file system (-o dax) on persistent memory, or pass --require-dax to refuse such targets",
        ));
    }
    w
}

/// A note when the kind mapped more than was asked for so that its huge pages (or a
/// device's alignment) cover the whole range: a length that ends inside a huge page cannot
/// be fully backed by it, so kinds round up rather than report a page mix the user did not
/// mean, and the note says so and by how much. Base-page targets round silently.
pub(crate) fn rounded_up(
    spec: &TargetSpec,
    asked: u64,
    mapped: u64,
    expect: &Expectation,
) -> Option<Warning> {
    let granule = expect.page_bytes.filter(|&p| p > KIB4)?;
    (mapped > asked.next_multiple_of(KIB4)).then(|| {
        Warning::new(
            "size-rounded-up",
            format!(
                "{spec}: the requested {} was rounded up to {}, a whole number of {} pages, so that all of it can be backed by them",
                Bytes(asked).human(),
                Bytes(mapped).human(),
                size_name(granule)
            ),
            format!(
                "give a multiple of {} to measure exactly the size you name",
                Bytes(granule)
            ),
        )
    })
}

fn remedy_for_page_size(
    spec: &TargetSpec,
    a: &Achieved,
    want: u64,
    extents: Option<ExtentLayout>,
) -> String {
    spec.kind()
        .page_size_remedy(a, want, extents)
        .unwrap_or_else(|| {
            format!(
                "expected {} pages; see `pmscope info` for this system's page-size settings",
                page_size_name(want)
            )
        })
}

/// Warns when targets measured side by side are backed by different page sizes, or sit on
/// different persistence domains, so that a difference is not read as a media difference.
pub fn compare_targets(targets: &[(String, &Achieved)]) -> Vec<Warning> {
    let mut w = Vec::new();
    let sized: Vec<(&String, u64)> = targets
        .iter()
        .filter_map(|(n, a)| a.page_size.map(|s| (n, s)))
        .collect();
    if let Some((first, first_size)) = sized.first() {
        for (other, size) in &sized[1..] {
            if size != first_size {
                w.push(Warning::new(
                    "mixed-page-sizes",
                    format!(
                        "{first} is backed by {} pages but {other} by {} pages: their difference includes the TLB effect, not only the memory (seed 000)",
                        size_name(*first_size),
                        size_name(*size)
                    ),
                    "compare like with like: e.g. dram:thp or dram:2m against a 2 MiB-mapped pmem target, or dram:4k against 4 KiB",
                ));
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::achieved::{FaultEvidence, PageMix};
    use std::collections::BTreeMap;

    fn achieved(page: u64, smaps: bool) -> Achieved {
        Achieved {
            pages: PageMix {
                bytes_2m: if page == MIB2 && smaps { 64 << 20 } else { 0 },
                bytes_4k: if page == KIB4 && smaps { 64 << 20 } else { 0 },
                smaps_sees_mapping: smaps,
                ..PageMix::default()
            },
            faults: FaultEvidence::from_faults(64 << 20, (64 << 20) / page),
            page_size: Some(page),
            page_size_source: "faults".into(),
            nodes: BTreeMap::from([(0, 10)]),
            map_sync: Some(true),
            filesystem: Some("ext4".into()),
            alignment: Some(MIB2),
            prefault_ns: 1,
            ..Achieved::unverified(64 << 20, Persistence::Dax)
        }
    }

    #[test]
    fn dax_file_with_4k_faults_is_explained() {
        let spec: TargetSpec = "file:/mnt/pmem".parse().unwrap();
        let a = achieved(KIB4, false);
        let expect = Expectation {
            page_bytes: Some(MIB2),
            why: "DAX maps 2 MiB pages where the file's extents are 2 MiB-aligned",
            persistence: Persistence::Dax,
        };
        let w = against_expectation(
            &spec,
            &a,
            &expect,
            Some(ExtentLayout {
                extents: 3,
                pmd_congruent: 0,
            }),
        );
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].code, "page-size-mismatch");
        assert!(
            w[0].remedy.contains("0 of the file's first 3 extents"),
            "{}",
            w[0].remedy
        );
        let ok = achieved(MIB2, false);
        assert!(against_expectation(&spec, &ok, &expect, None).is_empty());
    }

    #[test]
    fn node_mismatch_is_reported() {
        let spec: TargetSpec = "dram,node=1".parse().unwrap();
        let mut a = achieved(KIB4, true);
        a.nodes = BTreeMap::from([(0, 3), (1, 1)]);
        let expect = Expectation {
            page_bytes: Some(KIB4),
            why: "4k asks for base pages",
            persistence: Persistence::Volatile,
        };
        let w = against_expectation(&spec, &a, &expect, None);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].code, "node-mismatch");
        assert!(
            w[0].message
                .contains("75.0% of the pages are not on node 1")
        );
    }

    #[test]
    fn memory_of_an_emulated_cxl_device_is_said_emulated_once() {
        let spec: TargetSpec = "dram,node=4".parse().unwrap();
        let expect = Expectation {
            page_bytes: None,
            why: "",
            persistence: Persistence::Volatile,
        };
        let mut a = achieved(KIB4, true);
        a.persistence = Persistence::Volatile;
        a.nodes = BTreeMap::from([(4, 10)]);
        let cxl = |emulated| CxlFacts {
            region: "region0".into(),
            mode: "pmem".into(),
            memdevs: vec!["mem2".into(), "mem1".into()],
            serials: vec![],
            interleave_ways: 2,
            interleave_granularity: 256,
            node: Some(4),
            system_ram: true,
            emulated,
            description: "region0: CXL pmem region".into(),
        };
        a.cxl = Some(cxl(false));
        assert!(against_expectation(&spec, &a, &expect, None).is_empty());
        a.cxl = Some(cxl(true));
        let w = against_expectation(&spec, &a, &expect, None);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].code, "cxl-emulated");
        assert!(w[0].message.ends_with("region0: CXL pmem region"));
        // On a DAX target the emulated pmem region says it already.
        a.pmem_region = Some(PmemRegionFacts {
            region: "region0".into(),
            origin: "virtual-cxl".into(),
            emulated: true,
            persistence_domain: None,
            interleave_ways: 2,
            description: String::new(),
        });
        let codes: Vec<_> = against_expectation(&spec, &a, &expect, None)
            .into_iter()
            .map(|w| w.code)
            .collect();
        assert_eq!(codes, ["pmem-emulated"]);
    }

    #[test]
    fn mixed_page_sizes_are_pointed_out() {
        let a = achieved(KIB4, true);
        let b = achieved(MIB2, false);
        let w = compare_targets(&[("dram:4k".into(), &a), ("file:/mnt/pmem".into(), &b)]);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].code, "mixed-page-sizes");
        assert!(compare_targets(&[("a".into(), &a), ("b".into(), &a)]).is_empty());
    }
}
