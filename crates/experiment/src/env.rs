//! What every command needs before it measures: the command line, the system summary, the
//! targets parsed and checked, the mapping options, and the start of a measurement.

use crate::error::usage;
use crate::output::Output;
use crate::params::{AutoSize, TargetArgs};
use anyhow::Result;
use pmscope_core::record::SystemSummary;
use pmscope_mapping::sizing::{self, Room, Source, Want};
use pmscope_mapping::{DestroyData, MapOptions, MemoryGuard, TargetSpec};
use pmscope_runner::executor::Executor;
use pmscope_runner::harness::{Harness, Measurement, Session};
use pmscope_sys::cpu::CpuFeatures;
use pmscope_sys::sysroot::SysRoot;

/// Blocks per point when `--blocks` is not given.
pub const DEFAULT_BLOCKS: usize = 5;

/// The run's shared facts: the runner's [`Session`] (machine, command line, executor),
/// plus the argument helpers every command uses.
pub struct Env {
    session: Session,
}

impl std::ops::Deref for Env {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl std::ops::DerefMut for Env {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

impl Env {
    /// Reads the machine once.
    pub fn new(executor: Executor) -> Env {
        let root = SysRoot::host();
        let features = CpuFeatures::detect();
        let thp = pmscope_sys::thp::settings(&root);
        let system = SystemSummary {
            hostname: pmscope_sys::environment::hostname(&root),
            kernel: pmscope_sys::environment::kernel_release(&root),
            cpu_model: pmscope_sys::cpu::brand_string(),
            cpus_online: pmscope_sys::environment::online_cpus(&root).len(),
            numa_nodes: pmscope_sys::numa::nodes(&root).len(),
            hypervisor: features.hypervisor,
            timer: None,
            thp_enabled: thp.enabled.unwrap_or_default(),
            thp_defrag: thp.defrag.unwrap_or_default(),
            smt_active: pmscope_sys::environment::smt_active(&root),
            kernel_cmdline: pmscope_sys::environment::kernel_cmdline(&root),
            mitigations: pmscope_sys::environment::mitigations(&root),
            observed_core_ghz: None,
            core_clock_unmeasurable: None,
        };
        Env {
            session: Session {
                root,
                command_line: std::env::args().collect(),
                features,
                system,
                executor,
                prefetchers_off: false,
                precision: Some(pmscope_runner::repeat::RepeatPolicy::DEFAULT_TARGET),
                blocks: DEFAULT_BLOCKS,
                round: None,
                frames: Default::default(),
                notes: Vec::new(),
            },
        }
    }

    /// Starts a measurement on `cpus`: CPUs checked (a usage error naming the allowed ones), timer
    /// calibrated, environment judged. Every measuring command starts here; its points are
    /// measured in `--blocks` blocks.
    pub fn start<'s>(
        &'s mut self,
        out: &'s mut dyn Output,
        cpus: &[usize],
        working_set: Option<u64>,
        times_single_accesses: bool,
    ) -> Result<Harness<'s>> {
        let blocks = self.session.blocks;
        self.start_measurement(
            out,
            Measurement {
                cpus: cpus.to_vec(),
                working_set,
                times_single_accesses,
                wall_clocked: false,
                blocks,
            },
        )
    }

    /// [`Env::start`] for a measurement in one block whatever `--blocks` says: a
    /// verification (nothing timed), or file I/O in a directory (no mapping to place anew).
    pub fn start_once<'s>(
        &'s mut self,
        out: &'s mut dyn Output,
        cpus: &[usize],
        working_set: Option<u64>,
    ) -> Result<Harness<'s>> {
        self.start_measurement(
            out,
            Measurement {
                cpus: cpus.to_vec(),
                working_set,
                times_single_accesses: false,
                wall_clocked: false,
                blocks: 1,
            },
        )
    }

    /// [`Env::start`] for a command that times whole phases with the monotonic clock (a
    /// K-mer job), not intervals with the TSC.
    pub fn start_wall_clocked<'s>(
        &'s mut self,
        out: &'s mut dyn Output,
        cpus: &[usize],
    ) -> Result<Harness<'s>> {
        self.start_measurement(
            out,
            Measurement {
                cpus: cpus.to_vec(),
                working_set: None,
                times_single_accesses: false,
                wall_clocked: true,
                blocks: 1,
            },
        )
    }

    fn start_measurement<'s>(
        &'s mut self,
        out: &'s mut dyn Output,
        m: Measurement,
    ) -> Result<Harness<'s>> {
        Harness::start(&mut self.session, out, &m).map_err(|e| {
            // The CPUs come from --cpu, --cpus or --threads, or the default: name the cure.
            usage(format!("{e}: give --cpu or --cpus from that list"))
        })
    }

    /// Parses the targets (or the defaults when none are given) and the mapping options.
    pub fn targets(
        &self,
        a: &TargetArgs,
        defaults: &[&str],
    ) -> Result<(Vec<TargetSpec>, MapOptions)> {
        let given: Vec<TargetSpec> = if a.targets.is_empty() {
            defaults
                .iter()
                .map(|s| s.parse().expect("the embedded default targets parse"))
                .collect()
        } else {
            a.targets.clone()
        };
        let mut specs: Vec<TargetSpec> = Vec::new();
        for spec in given {
            if specs.contains(&spec) {
                return Err(usage(format!("--target {spec} is given twice")));
            }
            specs.push(spec);
        }
        let max_mem = a.max_mem.map(|m| m.0);
        let opts = MapOptions {
            guard: MemoryGuard::new(&self.root, max_mem),
            root: self.root.clone(),
            keep: a.keep,
            require_dax: a.require_dax,
            destroy_data: a.destroy_data.then(DestroyData::accepted_by_flag),
            first_touch_cpus: Vec::new(),
            first_touch_order: Default::default(),
        };
        for spec in &specs {
            spec.preflight(&opts)?;
        }
        Ok((specs, opts))
    }
}

/// A size as a command will use it, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// Bytes.
    pub bytes: u64,
    /// `auto` or `explicit` (the records' `size_source`).
    pub source: Source,
    /// Why an `auto` size is what it is (`4x the 480.0 MiB last-level cache`).
    pub why: String,
}

impl Env {
    /// The size a size option stands for: as given (never changed), or for `auto` the one
    /// rule of `pmscope_mapping::sizing` over these targets and mapping options. A capped
    /// default's `size-capped` note goes into every record of the next measurement.
    pub fn size(
        &mut self,
        given: AutoSize,
        want: Want,
        specs: &[TargetSpec],
        opts: &MapOptions,
    ) -> Result<Chosen> {
        Ok(match given {
            AutoSize::Given(bytes) => Chosen {
                bytes,
                source: Source::Explicit,
                why: "given".into(),
            },
            AutoSize::Auto => {
                let s = sizing::memory_default(&want, &Room::of(specs, opts))?;
                self.session.notes.extend(s.note);
                Chosen {
                    bytes: s.bytes,
                    source: Source::Auto,
                    why: s.why,
                }
            }
        })
    }
}

/// Parses an address pattern argument: `seq`, `rand` or `both` (false = sequential).
pub fn parse_patterns(s: &str) -> Result<Vec<bool>> {
    match s {
        "both" => Ok(vec![false, true]),
        "seq" => Ok(vec![false]),
        "rand" => Ok(vec![true]),
        other => Err(usage(format!(
            "'{other}' is not a pattern: use seq, rand or both"
        ))),
    }
}
