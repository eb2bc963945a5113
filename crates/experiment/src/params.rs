//! Typed command-line values, parsed by clap before any command runs, so every command gets
//! checked values and every malformed one gets the same one-sentence error
//! (`pmscope: --flag VALUE: why`, exit 2; see `main`). Zero, negative, infinite and NaN
//! values are refused here, where a command cannot forget to.

use clap::Args;
use pmscope_core::units::Bytes;
use pmscope_core::vocab::Pattern;
use pmscope_loops::catalog;
use pmscope_mapping::TargetSpec;
use std::str::FromStr;

/// A size in bytes, greater than zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Size, String> {
        let b: Bytes = s.parse().map_err(|e| format!("{e}"))?;
        if b.0 == 0 {
            return Err("a size must be greater than zero".into());
        }
        Ok(Size(b.0))
    }
}

/// A size option that defaults to `auto`: a size as given, or sized to the machine
/// (`pmscope_mapping::sizing`: 4x the last-level cache, at least the old fixed default,
/// capped by memory). A given size is never changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoSize {
    /// `auto`.
    Auto,
    /// A size the user gave.
    Given(u64),
}

impl FromStr for AutoSize {
    type Err = String;
    fn from_str(s: &str) -> Result<AutoSize, String> {
        if s.trim() == "auto" {
            return Ok(AutoSize::Auto);
        }
        s.parse::<Size>()
            .map(|b| AutoSize::Given(b.0))
            .map_err(|e| format!("{e}, or auto"))
    }
}

/// A count of at least one (repetitions, samples, accesses, threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub usize);

impl FromStr for Count {
    type Err = String;
    fn from_str(s: &str) -> Result<Count, String> {
        match pmscope_core::whole::parse::<usize>(s) {
            Ok(0) => Err("must be at least 1".into()),
            Ok(n) => Ok(Count(n)),
            Err(e) if e.starts_with("too large") => Err(e),
            Err(_) => Err("not a whole number: give a count of at least 1".into()),
        }
    }
}

/// A duration in seconds: finite and greater than zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub f64);

impl FromStr for Seconds {
    type Err = String;
    fn from_str(s: &str) -> Result<Seconds, String> {
        match s.parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Ok(Seconds(x)),
            Ok(_) => Err("give a finite number of seconds greater than zero, e.g. 0.5".into()),
            Err(_) => Err("not a number of seconds: give e.g. 0.5".into()),
        }
    }
}

/// `--precision PCT`: the half-width of the 95 % interval of each point's median to repeat
/// until, in percent of the median; 0 asks for exactly `--reps` repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrecisionPct(pub f64);

impl PrecisionPct {
    /// The relative half-width (0.03 for 3), or `None` for 0: fixed repetitions.
    pub fn target(self) -> Option<f64> {
        (self.0 > 0.0).then_some(self.0 / 100.0)
    }
}

impl FromStr for PrecisionPct {
    type Err = String;
    fn from_str(s: &str) -> Result<PrecisionPct, String> {
        match s.parse::<f64>() {
            Ok(x) if (0.0..100.0).contains(&x) => Ok(PrecisionPct(x)),
            _ => Err(
                "give a percentage from 0 (exactly --reps repetitions) to below 100, e.g. 3".into(),
            ),
        }
    }
}

/// A CPU list as the kernel writes them (`0-3,8`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpus(pub Vec<usize>);

impl FromStr for Cpus {
    type Err = String;
    fn from_str(s: &str) -> Result<Cpus, String> {
        let v = pmscope_core::cpulist::parse_list(s).map_err(|e| e.to_string())?;
        if v.is_empty() {
            return Err("the CPU list is empty".into());
        }
        Ok(Cpus(v))
    }
}

/// The one rule for thread counts, in every command: one pinned thread per CPU, so at
/// most as many threads as CPUs to pin them to.
pub fn check_threads(threads: usize, cpus: &[usize]) -> Result<(), String> {
    if threads == 0 || threads > cpus.len() {
        return Err(format!(
            "{threads} threads asked for but {} CPUs are available (--cpus {}); pmscope pins one thread per CPU",
            cpus.len(),
            pmscope_core::cpulist::format_list(cpus)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_precision_is_a_percentage_below_100() {
        assert_eq!(
            "3".parse::<PrecisionPct>().map(|p| p.target()),
            Ok(Some(0.03))
        );
        assert_eq!("0".parse::<PrecisionPct>().map(|p| p.target()), Ok(None));
        for bad in ["-1", "NaN", "100", "inf", "3%", ""] {
            assert!(bad.parse::<PrecisionPct>().is_err(), "{bad}");
        }
    }

    #[test]
    fn zero_negative_infinite_and_nan_are_refused() {
        assert_eq!("4KiB".parse::<Size>(), Ok(Size(4096)));
        assert_eq!("auto".parse::<AutoSize>(), Ok(AutoSize::Auto));
        assert_eq!("2GiB".parse::<AutoSize>(), Ok(AutoSize::Given(2 << 30)));
        assert!("0".parse::<AutoSize>().is_err());
        assert!("0".parse::<Size>().is_err());
        assert!("-1".parse::<Size>().is_err());
        assert_eq!("3".parse::<Count>(), Ok(Count(3)));
        for bad in ["0", "-2", "1.5", "x"] {
            assert!(bad.parse::<Count>().is_err(), "{bad}");
        }
        assert_eq!(
            "99999999999999999999".parse::<Count>(),
            Err("too large: at most 18446744073709551615".into())
        );
        assert_eq!("0.25".parse::<Seconds>(), Ok(Seconds(0.25)));
        for bad in ["0", "-1", "inf", "NaN", "1e999", "x"] {
            assert!(bad.parse::<Seconds>().is_err(), "{bad}");
        }
        assert_eq!("0-2".parse::<Cpus>(), Ok(Cpus(vec![0, 1, 2])));
        assert!(check_threads(3, &[0, 1]).is_err());
        assert!(check_threads(0, &[0, 1]).is_err());
        assert!(check_threads(2, &[0, 1]).is_ok());
    }
}

/// The help of `--target`, listing the kinds from their registry.
pub fn target_help() -> String {
    format!(
        "A memory target (repeatable: targets are measured side by side). Syntax: {}, each \
         with an optional ,node=N. See `pmscope list targets`.",
        pmscope_mapping::kinds::syntax_summary()
    )
}

/// Options of every command that maps targets.
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    // The help lists the kinds from their registry, so a new kind appears here by itself.
    /// The targets (see [`target_help`]).
    #[arg(short = 't', long = "target", value_name = "SPEC", help = target_help())]
    pub targets: Vec<TargetSpec>,
    /// Refuse to map more than SIZE of RAM (default: 90% of MemAvailable); also caps the
    /// sizes left at auto.
    #[arg(long, value_name = "SIZE")]
    pub max_mem: Option<Size>,
    /// Keep files pmscope created for file: and shm targets.
    #[arg(long)]
    pub keep: bool,
    /// Refuse file targets that are not on DAX (MAP_SYNC refused).
    #[arg(long)]
    pub require_dax: bool,
    /// Allow writing to devdax devices, destroying their contents.
    #[arg(long)]
    pub destroy_data: bool,
}

// Help texts that list ops or strategies are generated from their registries.

/// The help of `inst --ops`, from the op catalog.
pub fn inst_ops_help() -> String {
    format!(
        "Ops (comma list): {}. Default: all. Each op with each fence is a row of `pmscope list ops`",
        catalog::op_names()
    )
}

/// The help of every `--persist`, from the strategies.
pub fn persist_help() -> String {
    let names: Vec<&str> = pmscope_persist::STRATEGIES
        .iter()
        .map(|s| s.name())
        .collect();
    format!(
        "Persist strategy: {} (see `pmscope list strategies`). Default: {}",
        names.join(", "),
        PERSIST_DEFAULT_HELP
    )
}

/// What `--persist` defaults to, for every option that takes a strategy.
pub const PERSIST_DEFAULT_HELP: &str =
    "clwb, or where the CPU lacks it clflushopt, else clflush (the record says which)";

/// The help of `loaded --probe`, from the catalog.
pub fn probe_help() -> String {
    format!(
        "What the measuring thread times: chase (dependent loads), a persist strategy ({}) meaning its store, flush and drain, or a storing op of `pmscope list ops` such as store+clwb+sfence or SW",
        catalog::strategy_names()
    )
}

/// The address pattern option of the commands that measure either pattern or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Patterns {
    /// Consecutive addresses.
    Seq,
    /// Random addresses.
    Rand,
    /// Both, sequential first.
    Both,
}

impl Patterns {
    /// The patterns measured, in order.
    pub fn patterns(self) -> Vec<Pattern> {
        match self {
            Patterns::Seq => vec![Pattern::Seq],
            Patterns::Rand => vec![Pattern::Rand],
            Patterns::Both => vec![Pattern::Seq, Pattern::Rand],
        }
    }
}
