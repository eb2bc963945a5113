//! Export of stored records: JSON Lines (the records as written) and tidy CSV (one row
//! per point and statistic; columns in docs/results-schema.md).

use crate::store::RunId;
use pmscope_core::record::Record;

/// The records as JSON Lines, one record per line, exactly as `-o` writes them.
pub fn to_jsonl(records: &[Record]) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for r in records {
        out.push_str(&serde_json::to_string(r)?);
        out.push('\n');
    }
    Ok(out)
}

/// Tidy long CSV: `run,point,experiment,target,metric,params,statistic,value`, one row per
/// summary statistic of the metric and per named value of each point.
pub fn to_csv(runs: &[(RunId, Vec<Record>)]) -> Result<String, serde_json::Error> {
    let mut out = String::from("run,point,experiment,target,metric,params,statistic,value\n");
    for (run, records) in runs {
        for (point, r) in records.iter().enumerate() {
            let target = r.target.as_ref().map_or("", |t| t.spec.as_str());
            let metric = r.metric.as_deref().unwrap_or("");
            let params = serde_json::to_string(&r.params)?;
            let mut row = |stat: &str, value: f64| {
                out.push_str(&format!(
                    "{run},{point},{},{},{},{},{},{value}\n",
                    quote(&r.experiment),
                    quote(target),
                    quote(metric),
                    quote(&params),
                    quote(stat)
                ));
            };
            if let Some(s) = &r.summary {
                for (name, v) in [
                    ("n", s.n as f64),
                    ("min", s.min),
                    ("p50", s.p50),
                    ("p90", s.p90),
                    ("p99", s.p99),
                    ("p999", s.p999),
                    ("max", s.max),
                    ("mean", s.mean),
                    ("stddev", s.stddev),
                ] {
                    row(name, v);
                }
            }
            for (name, v) in &r.values {
                row(name, *v);
            }
        }
    }
    Ok(out)
}

/// RFC 4180 quoting where needed.
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
