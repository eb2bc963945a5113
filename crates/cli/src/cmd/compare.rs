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

/// The runs of one side: comma-separated selectors, each an id, `latest`, `latest~N`, or a
/// tag (every run carrying it); their blocks are pooled.
fn side_runs(store: &pmscope_store::Store, selectors: &str) -> Result<Vec<i64>> {
    let mut runs = Vec::new();
    for s in selectors
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        for r in store.resolve_all(s)? {
            if !runs.contains(&r) {
                runs.push(r);
            }
        }
    }
    if runs.is_empty() {
        return Err(usage(format!("'{selectors}' names no run")));
    }
    Ok(runs)
}

fn list(runs: &[i64]) -> String {
    runs.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `pmscope compare`.
pub fn run(out: &OutputArgs, a: &CompareArgs) -> Result<()> {
    let store = open_store(out)?;
    let (ra, rb, match_targets) = if a.targets {
        let Some(spec_b) = &a.c else {
            return Err(usage(
                "--targets needs a run and two target specs: pmscope compare --targets RUN SPEC_A SPEC_B",
            ));
        };
        if &a.b == spec_b {
            return Err(usage(format!(
                "both sides name target {spec_b}: a target compared with itself shows nothing; name two targets of run {}",
                a.a
            )));
        }
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
        let (runs_a, runs_b) = (side_runs(&store, &a.a)?, side_runs(&store, &a.b)?);
        if let Some(both) = runs_a.iter().find(|r| runs_b.contains(r)) {
            return Err(usage(format!(
                "run {both} is on both sides ({} and {}): a run compared with itself shows nothing; name other runs for one side",
                a.a, a.b
            )));
        }
        if !out.json && (runs_a.len() > 1 || runs_b.len() > 1) {
            pmscope_experiment::stdout::line(&format!(
                "A: run(s) {} pooled; B: run(s) {} pooled",
                list(&runs_a),
                list(&runs_b)
            ))?;
        }
        let records = |runs: &[i64]| -> Result<Vec<Record>> {
            let mut all = Vec::new();
            for r in runs {
                all.extend(store.records(*r)?);
            }
            Ok(all)
        };
        (records(&runs_a)?, records(&runs_b)?, true)
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
    let mut stdout = pmscope_experiment::stdout::Stdout;
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
        let coarse: Vec<String> = cmp
            .groups
            .iter()
            .filter(|g| g.typical_detectable_pct.is_nan() || g.typical_detectable_pct > pct.0)
            .map(|g| {
                format!(
                    "{} {} ({})",
                    g.experiment,
                    g.metric,
                    if g.typical_detectable_pct.is_finite() {
                        format!("{:.0}%", g.typical_detectable_pct)
                    } else {
                        "nothing".to_string()
                    }
                )
            })
            .collect();
        if !coarse.is_empty() {
            eprintln!(
                "note: --fail-above {} is finer than this comparison resolves at a typical point of {}: a change of {}% there would not be called, so the gate cannot fail on it; name more runs a side or measure with more --blocks",
                pct.0,
                coarse.join(", "),
                pct.0
            );
        }
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
