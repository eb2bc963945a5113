//! `pmscope compare`: two runs, or two targets of one run, point by point, each point
//! judged against the noise by `pmscope_store::compare`.

use crate::args::{CompareArgs, OutputArgs};
use crate::error::usage;
use crate::output::open_store;
use anyhow::Result;
use pmscope_core::record::Record;
use pmscope_store::{Settings, compare_records};
use std::io::Write;

/// The smallest difference worth resolving when no gate names one, in percent.
const DEFAULT_WANTED_PCT: f64 = 10.0;

/// Runs `pmscope compare`.
pub fn run(out: &OutputArgs, a: &CompareArgs) -> Result<()> {
    let store = open_store(out)?;
    let (ra, rb, match_targets) = if a.targets {
        let Some(spec_b) = &a.c else {
            return Err(usage(
                "--targets needs a run and two target specs: pmscope compare --targets RUN SPEC_A SPEC_B",
            ));
        };
        let all = store.records(store.resolve(&a.a)?)?;
        let of = |spec: &str| -> Vec<Record> {
            all.iter()
                .filter(|r| r.target.as_ref().is_some_and(|t| t.spec == spec))
                .cloned()
                .collect()
        };
        (of(&a.b), of(spec_b), false)
    } else {
        if a.c.is_some() {
            return Err(usage(
                "compare takes two runs; to compare two targets of one run pass --targets RUN SPEC_A SPEC_B",
            ));
        }
        (
            store.records(store.resolve(&a.a)?)?,
            store.records(store.resolve(&a.b)?)?,
            true,
        )
    };
    let settings = Settings {
        alpha: a.alpha.0,
        noise_floor: a.noise_floor.0 / 100.0,
        wanted_pct: a.fail_above.map_or(DEFAULT_WANTED_PCT, |p| p.0),
    };
    let cmp = compare_records(&ra, &rb, match_targets, &settings);
    if cmp.points.is_empty() {
        return Err(usage(
            "the two sides share no point (same experiment, metric and parameters)",
        ));
    }
    let mut stdout = std::io::stdout().lock();
    if out.json {
        writeln!(stdout, "{}", serde_json::to_string(&cmp)?)?;
    } else {
        write!(
            stdout,
            "{}",
            pmscope_store::compare::table(&cmp, match_targets, a.verbose)
        )?;
    }
    if let Some(pct) = a.fail_above {
        let worse = cmp.worse_than(pct.0).count();
        if worse > 0 {
            anyhow::bail!(
                "{worse} point(s) got worse by more than {}% beyond the noise",
                pct.0
            );
        }
    }
    Ok(())
}
