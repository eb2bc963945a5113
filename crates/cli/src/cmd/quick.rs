//! `pmscope quick`: the main job on the embedded default targets. Maps dram:4k, dram:thp
//! and shm:4k, verifies each and prints the configuration achieved.

use crate::args::QuickArgs;
use crate::cmd::verify::{print_table, verify_targets};
use crate::context::{Context, parse_size};
use crate::output::Sink;
use anyhow::Result;

/// The embedded default targets.
pub const DEFAULT_TARGETS: [&str; 3] = ["dram:4k", "dram:thp", "shm:4k"];

pub fn run(ctx: &mut Context, sink: &mut Sink, a: &QuickArgs) -> Result<()> {
    let size = parse_size(&a.size)?;
    let (specs, opts) = ctx.targets(&a.targets, &DEFAULT_TARGETS)?;
    sink.text(&format!(
        "pmscope quick: {} on {} ({} CPUs, {} NUMA node{})\n",
        specs
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        ctx.system.cpu_model,
        ctx.system.cpus_online,
        ctx.system.numa_nodes,
        if ctx.system.numa_nodes == 1 { "" } else { "s" }
    ));
    let records = verify_targets(ctx, sink, &specs, size, &opts)?;
    sink.text("configuration achieved:");
    print_table(sink, &records);
    Ok(())
}
