//! What every command needs before it measures: the command line, the system summary, the
//! targets parsed and checked, the mapping options, the timer.

use crate::args::TargetArgs;
use crate::error::usage;
use anyhow::Result;
use pmscope_core::record::{Record, SystemSummary, TimerInfo};
use pmscope_core::units::Bytes;
use pmscope_core::warning::Warning;
use pmscope_mapping::{DestroyData, MapOptions, MemoryGuard, TargetSpec};
use pmscope_runner::sanity;
use pmscope_runner::timer::Timer;
use pmscope_sys::cpu::CpuFeatures;
use pmscope_sys::sysroot::SysRoot;
use std::time::Duration;

/// The run's shared facts.
pub struct Context {
    /// `/sys` and `/proc`.
    pub root: SysRoot,
    /// The command line as given.
    pub command_line: Vec<String>,
    /// CPU features.
    pub features: CpuFeatures,
    /// The machine, as every record repeats it.
    pub system: SystemSummary,
}

impl Context {
    /// Reads the machine once.
    pub fn new() -> Context {
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
        };
        Context {
            root,
            command_line: std::env::args().collect(),
            features,
            system,
        }
    }

    /// Records the timer in the system summary every later record carries.
    pub fn set_timer(&mut self, t: TimerInfo) {
        self.system.timer = Some(t);
    }

    /// Calibrates the timer for an experiment on `cpus` (recorded in every later record) and
    /// judges the environment it will run in: the two things every experiment does first.
    pub fn start_measuring(
        &mut self,
        cpus: &[usize],
        memory_working_set: Option<u64>,
        times_single_accesses: bool,
    ) -> (Timer, Vec<Warning>) {
        let timer = Timer::calibrate(&self.features, Duration::from_millis(100));
        self.set_timer(timer.info());
        let env = sanity::check(
            &sanity::EnvFacts::probe(&self.root, cpus),
            &sanity::Context {
                timer: Some(timer.info()),
                memory_working_set,
                times_single_accesses,
            },
        );
        (timer, env)
    }

    /// An empty record of `experiment` for this run.
    pub fn record(&self, experiment: &str) -> Record {
        Record::new(experiment, self.command_line.clone(), self.system.clone())
    }

    /// Parses the targets (or the defaults when none are given) and the mapping options.
    pub fn targets(
        &self,
        a: &TargetArgs,
        defaults: &[&str],
    ) -> Result<(Vec<TargetSpec>, MapOptions)> {
        let given: Vec<String> = if a.targets.is_empty() {
            defaults.iter().map(|s| s.to_string()).collect()
        } else {
            a.targets.clone()
        };
        let mut specs: Vec<TargetSpec> = Vec::new();
        for s in &given {
            let spec: TargetSpec = s
                .parse()
                .map_err(|e: pmscope_mapping::SpecError| usage(format!("--target {s}: {e}")))?;
            if specs.contains(&spec) {
                return Err(usage(format!("--target {spec} is given twice")));
            }
            specs.push(spec);
        }
        let max_mem = a.max_mem.as_deref().map(parse_size).transpose()?;
        let opts = MapOptions {
            guard: MemoryGuard::new(&self.root, max_mem),
            root: self.root.clone(),
            keep: a.keep,
            require_dax: a.require_dax,
            destroy_data: a.destroy_data.then(DestroyData::accepted_by_flag),
            first_touch_cpus: Vec::new(),
        };
        Ok((specs, opts))
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

/// Parses a size argument, as a usage error when malformed.
pub fn parse_size(s: &str) -> Result<u64> {
    let b: Bytes = s.parse().map_err(|e| usage(format!("{e}")))?;
    if b.0 == 0 {
        return Err(usage(format!("size '{s}' must be greater than zero")));
    }
    Ok(b.0)
}
