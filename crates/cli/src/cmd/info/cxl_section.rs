//! `pmscope info`'s CXL section for a person: devices, decoders, regions (`sys::cxl`).

use super::{Info, opt};
use pmscope_core::units::Bytes;

/// CXL memory devices, the fixed memory windows and other decoders, and the regions with
/// what each became (nd region, dax device, node).
pub(super) fn print(o: &mut String, i: &Info) {
    use pmscope_sys::cxl::DecoderKind;
    let c = &i.cxl;
    if c.is_empty() {
        say!(o; "cxl           none (no /sys/bus/cxl devices)");
        return;
    }
    for m in &c.memdevs {
        let mut size = Vec::new();
        if m.pmem_bytes > 0 {
            size.push(format!("{} persistent", Bytes(m.pmem_bytes).human()));
        }
        if m.ram_bytes > 0 {
            size.push(format!("{} volatile", Bytes(m.ram_bytes).human()));
        }
        if size.is_empty() {
            size.push("no capacity".into());
        }
        say!(o; "cxl device    {}: {}, serial {}, PCI {} behind {}",
            m.name,
            size.join(" + "),
            opt(m.serial.as_ref()),
            opt(m.pci_device.as_ref()),
            opt(m.host_bridge.as_ref())
        );
    }
    for d in &c.decoders {
        let kind = match d.kind {
            DecoderKind::Root => "window",
            DecoderKind::Switch => "switch",
            DecoderKind::Endpoint => "endpoint",
            DecoderKind::Unknown => "decoder",
        };
        let range = match d.start {
            Some(s) => format!("{} at {s:#x}", Bytes(d.size_bytes).human()),
            None => "unprogrammed".into(),
        };
        let targets = if d.targets.is_empty() {
            String::new()
        } else {
            format!(", targets {}", d.targets.join(","))
        };
        let used = d
            .region
            .as_ref()
            .map(|r| format!(", {r}"))
            .unwrap_or_default();
        let mode = d
            .mode
            .as_ref()
            .map(|m| format!(", {m}"))
            .unwrap_or_default();
        say!(o; "cxl decoder   {} ({kind}): {range}, {}-way at {} B{targets}{mode}{used}",
            d.name,
            d.interleave_ways,
            d.interleave_granularity
        );
    }
    if c.regions.is_empty() {
        say!(o; "cxl regions   none (`cxl create-region` makes one)");
    }
    for r in &c.regions {
        say!(o; "cxl region    {} ({}{})",
            r.describe(),
            Bytes(r.size_bytes).human(),
            r.root_decoder
                .as_ref()
                .map(|d| format!(", in {d}"))
                .unwrap_or_default()
        );
    }
}
