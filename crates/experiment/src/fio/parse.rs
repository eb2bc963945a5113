//! fio's `--output-format=json`, parsed: the one side (reads or writes) of one run, all jobs
//! together. The null executor parses the output of a real fio checked in under
//! `tests/fixtures/fio/` instead of running fio.

/// What fio's JSON says about one run's reads or writes, all jobs together
/// (`--group_reporting`).
#[derive(Debug, Clone, PartialEq)]
pub struct FioResult {
    /// `fio-3.33`.
    pub version: String,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// Operations per second.
    pub iops: f64,
    /// Bytes moved.
    pub io_bytes: u64,
    /// Completion latency: mean, p50, p99, p99.9 in ns.
    pub clat_mean_ns: f64,
    /// Median completion latency.
    pub clat_p50_ns: f64,
    /// 99th percentile.
    pub clat_p99_ns: f64,
    /// 99.9th percentile.
    pub clat_p999_ns: f64,
}

/// Parses fio's `--output-format=json` for the `read` or `write` side (`direction`). Text
/// before the JSON (fio's own warnings) is skipped.
pub fn parse_fio_json(text: &str, direction: &str) -> Result<FioResult, String> {
    let start = text
        .find("\n{")
        .map(|i| i + 1)
        .or_else(|| text.starts_with('{').then_some(0))
        .ok_or("fio printed no JSON")?;
    let v: serde_json::Value = serde_json::from_str(&text[start..])
        .map_err(|e| format!("fio's JSON does not parse: {e}"))?;
    let version = v["fio version"].as_str().unwrap_or("fio").to_string();
    let jobs = v["jobs"].as_array().ok_or("fio's JSON has no jobs")?;
    if jobs.len() != 1 {
        return Err(format!(
            "fio reported {} job groups where one was asked for (--group_reporting)",
            jobs.len()
        ));
    }
    let job = &jobs[0];
    if let Some(e) = job["error"].as_i64().filter(|&e| e != 0) {
        return Err(format!("fio's job ended with error {e}"));
    }
    let d = &job[direction];
    let num = |v: &serde_json::Value, what: &str| {
        v.as_f64()
            .ok_or_else(|| format!("fio's JSON has no {direction}.{what}"))
    };
    let io_bytes = num(&d["io_bytes"], "io_bytes")? as u64;
    if io_bytes == 0 {
        return Err(format!("fio's job moved no {direction} bytes"));
    }
    let pct = &d["clat_ns"]["percentile"];
    Ok(FioResult {
        version,
        bw_bytes: num(&d["bw_bytes"], "bw_bytes")?,
        iops: num(&d["iops"], "iops")?,
        io_bytes,
        clat_mean_ns: num(&d["clat_ns"]["mean"], "clat_ns.mean")?,
        clat_p50_ns: num(&pct["50.000000"], "clat_ns percentile 50")?,
        clat_p99_ns: num(&pct["99.000000"], "clat_ns percentile 99")?,
        clat_p999_ns: num(&pct["99.900000"], "clat_ns percentile 99.9")?,
    })
}

/// fio output made by fio 3.33 on this project's machine, what the null executor parses: a
/// random-read run of one job.
pub const FIXTURE_READ: &str = include_str!("../../tests/fixtures/fio/randread-1job.json");
/// A random-write run (fsync after every write) of two jobs.
pub const FIXTURE_WRITE: &str = include_str!("../../tests/fixtures/fio/randwrite-fsync-2jobs.json");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_json_made_by_fio_parses() {
        let r = parse_fio_json(FIXTURE_READ, "read").unwrap();
        assert_eq!(r.version, "fio-3.33");
        assert_eq!(r.io_bytes, 55_799_808);
        assert_eq!(r.bw_bytes, 55_744_063.0);
        assert!((r.iops - 13609.390609).abs() < 1e-6);
        assert!(r.clat_p50_ns <= r.clat_p99_ns && r.clat_p99_ns <= r.clat_p999_ns);
        // bandwidth = IOPS x 4 KiB, as fio computed both from the same run.
        assert!((r.bw_bytes / r.iops / 4096.0 - 1.0).abs() < 0.01);
        let w = parse_fio_json(FIXTURE_WRITE, "write").unwrap();
        assert_eq!(w.bw_bytes, 16_791_562.0);
        assert_eq!(w.clat_p50_ns, 9664.0);
        // The read side of a write run moved nothing: an error, not a zero.
        assert_eq!(
            parse_fio_json(FIXTURE_WRITE, "read").unwrap_err(),
            "fio's job moved no read bytes"
        );
    }

    #[test]
    fn fio_warnings_before_the_json_are_skipped_and_garbage_refused() {
        let text = format!("fio: some warning\n{FIXTURE_READ}");
        assert_eq!(
            parse_fio_json(&text, "read").unwrap(),
            parse_fio_json(FIXTURE_READ, "read").unwrap()
        );
        assert_eq!(
            parse_fio_json("fio: file:x:1: bad", "read").unwrap_err(),
            "fio printed no JSON"
        );
        assert!(
            parse_fio_json("{\"jobs\": []}", "read")
                .unwrap_err()
                .contains("0 job groups")
        );
    }
}
