//! What memaslap and redis-benchmark print, read into a [`ClientResult`].

/// What one client run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientResult {
    /// Operations per second over the run.
    pub ops_per_s: f64,
    /// Operations completed.
    pub ops: u64,
    /// Mean latency, µs.
    pub mean_us: f64,
    /// Median latency, µs (memaslap: the upper bound of its power-of-two bucket).
    pub p50_us: f64,
    /// 99th percentile, µs (memaslap: the upper bound of its power-of-two bucket).
    pub p99_us: f64,
    /// Largest latency, µs.
    pub max_us: f64,
    /// Whether the percentiles are power-of-two bucket bounds rather than exact.
    pub percentiles_bucketed: bool,
}

/// Why a client's output could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{client} printed no {what}: {excerpt}")]
pub struct ParseError {
    client: &'static str,
    what: &'static str,
    excerpt: String,
}

fn excerpt(text: &str) -> String {
    let t: String = text.trim().chars().take(200).collect();
    if t.is_empty() { "(nothing)".into() } else { t }
}

/// Reads memaslap's final report: the `Run time: ... Ops: N TPS: T` line, and the `Total
/// Statistics (N events)` block (Min, Max, Avg and the `Log2 Dist` histogram, whose row `k:`
/// holds the counts of latencies in [2^(k-1), 2^k), [2^k, 2^(k+1)), ... µs — the reading
/// its Min and Max agree with) for the percentiles, given as the upper bound of the bucket
/// they fall in.
pub fn parse_memaslap(text: &str) -> Result<ClientResult, ParseError> {
    let fail = |what| ParseError {
        client: "memaslap",
        what,
        excerpt: excerpt(text),
    };
    let run = text
        .lines()
        .find(|l| l.starts_with("Run time:"))
        .ok_or_else(|| fail("`Run time:` line"))?;
    let field = |name: &str| -> Option<f64> {
        let mut it = run.split_whitespace();
        it.position(|w| w == name)?;
        it.next()?.parse().ok()
    };
    let ops = field("Ops:").ok_or_else(|| fail("operation count"))?;
    let tps = field("TPS:").ok_or_else(|| fail("throughput"))?;
    let total = text
        .find("Total Statistics (")
        .map(|i| &text[i..])
        .ok_or_else(|| fail("`Total Statistics` block"))?;
    let stat = |name: &str| -> Option<f64> {
        total
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    let mean = stat("Avg:").ok_or_else(|| fail("average latency"))?;
    let max = stat("Max:").ok_or_else(|| fail("maximum latency"))?;
    let mut buckets: Vec<(u32, u64)> = Vec::new();
    let dist = total
        .find("Log2 Dist:")
        .map(|i| &total[i + "Log2 Dist:".len()..])
        .ok_or_else(|| fail("latency histogram"))?;
    for line in dist.lines().map(str::trim).skip_while(|l| l.is_empty()) {
        let Some((start, counts)) = line.split_once(':') else {
            break;
        };
        let Ok(start) = start.trim().parse::<u32>() else {
            break;
        };
        for (i, c) in counts.split_whitespace().enumerate() {
            let c: u64 = c.parse().map_err(|_| fail("latency histogram"))?;
            buckets.push((start + i as u32, c));
        }
    }
    let events: u64 = buckets.iter().map(|b| b.1).sum();
    if events == 0 {
        return Err(fail("latency histogram"));
    }
    let percentile = |q: f64| -> f64 {
        let want = (q * events as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for &(k, c) in &buckets {
            seen += c;
            if seen >= want {
                return (1u64 << k) as f64;
            }
        }
        max
    };
    Ok(ClientResult {
        ops_per_s: tps,
        ops: ops as u64,
        mean_us: mean,
        p50_us: percentile(0.5).min(max),
        p99_us: percentile(0.99).min(max),
        max_us: max,
        percentiles_bucketed: true,
    })
}

/// Reads redis-benchmark's `--csv` output: one row per test, latencies in ms. Returns the
/// row of `test` (`SET`, `GET`, `MSET (10 keys)`: matched on the first word, any case).
pub fn parse_redis_csv(text: &str, test: &str) -> Result<ClientResult, ParseError> {
    let fail = |what| ParseError {
        client: "redis-benchmark",
        what,
        excerpt: excerpt(text),
    };
    let mut lines = text.lines().filter(|l| l.starts_with('"'));
    let header: Vec<String> = split_csv(lines.next().ok_or_else(|| fail("CSV header"))?);
    let col = |name: &str| header.iter().position(|h| h == name);
    let (rps, avg, p50, p99, max) = (
        col("rps").ok_or_else(|| fail("rps column"))?,
        col("avg_latency_ms").ok_or_else(|| fail("avg_latency_ms column"))?,
        col("p50_latency_ms").ok_or_else(|| fail("p50_latency_ms column"))?,
        col("p99_latency_ms").ok_or_else(|| fail("p99_latency_ms column"))?,
        col("max_latency_ms").ok_or_else(|| fail("max_latency_ms column"))?,
    );
    for line in lines {
        let row = split_csv(line);
        let name = row.first().map(String::as_str).unwrap_or("");
        if !name
            .split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case(test))
        {
            continue;
        }
        let num = |i: usize| -> Result<f64, ParseError> {
            row.get(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| fail("number in its row"))
        };
        return Ok(ClientResult {
            ops_per_s: num(rps)?,
            ops: 0,
            mean_us: num(avg)? * 1e3,
            p50_us: num(p50)? * 1e3,
            p99_us: num(p99)? * 1e3,
            max_us: num(max)? * 1e3,
            percentiles_bucketed: false,
        });
    }
    Err(fail("row for the test"))
}

fn split_csv(line: &str) -> Vec<String> {
    line.split(',')
        .map(|f| f.trim().trim_matches('"').to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// memaslap 1.0 (Debian's libmemcached-tools 1.1.4) against memcached 1.6.18 on this
    /// machine: `memcaslap -s 127.0.0.1:11311 -T 1 -c 8 -t 2s -F cfg -S 2s`, the tail.
    const MEMASLAP: &str = "\
Total Statistics (30649 events)
   Min:        19
   Max:     21291
   Avg:       524
   Geo:    132.39
   Std:   1815.69
   Log2 Dist:
       4:        0      212     5100    15353
       8:     6898      880      108      228
      12:      666      569      620       15

cmd_get: 15325
cmd_set: 15332
get_misses: 0
written_bytes: 19968341
read_bytes: 18112976
object_bytes: 17662464

Run time: 2.0s Ops: 30657 TPS: 15327 Net_rate: 18.2M/s
";

    /// redis-benchmark 7.0.15, `-t set,get -n 20000 -d 512 -c 12 --csv`, on this machine.
    const REDIS: &str = "\
\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"
\"SET\",\"14174.34\",\"0.676\",\"0.056\",\"0.191\",\"4.423\",\"9.751\",\"28.303\"
\"GET\",\"7840.06\",\"1.403\",\"0.048\",\"0.127\",\"7.959\",\"11.567\",\"19.583\"
";

    #[test]
    fn memaslap_report_is_read() {
        let r = parse_memaslap(MEMASLAP).unwrap();
        assert_eq!(r.ops, 30657);
        assert_eq!(r.ops_per_s, 15327.0);
        assert_eq!(r.mean_us, 524.0);
        assert_eq!(r.max_us, 21291.0);
        // Row k holds [2^(k-1), 2^k): Min 19 lies in row 4's second bucket (212 events, the
        // first is empty) and Max 21291 in row 12's last, [16384, 32768).
        // 30649 events: the 15325th falls in row 4's fourth bucket [64, 128) µs
        // (0 + 212 + 5100 + 15353 = 20665 >= 15325 > 5312).
        assert_eq!(r.p50_us, 128.0);
        // 99 %: the 30343rd; cumulative after row 8 = 28779, then 666 -> 29445, 569 ->
        // 30014, 620 -> 30634 >= 30343: bucket [8192, 16384).
        assert_eq!(r.p99_us, 16384.0);
        assert!(r.percentiles_bucketed);
    }

    #[test]
    fn redis_csv_rows_are_read_by_test() {
        let set = parse_redis_csv(REDIS, "set").unwrap();
        assert_eq!(set.ops_per_s, 14174.34);
        assert!((set.p50_us - 191.0).abs() < 1e-9);
        assert!((set.p99_us - 9751.0).abs() < 1e-9);
        let get = parse_redis_csv(REDIS, "GET").unwrap();
        assert_eq!(get.ops_per_s, 7840.06);
        let mset = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\"MSET (10 keys)\",\"10526.32\",\"1.057\",\"0.080\",\"0.455\",\"4.823\",\"11.519\",\"11.999\"\n";
        assert_eq!(parse_redis_csv(mset, "mset").unwrap().ops_per_s, 10526.32);
    }

    #[test]
    fn unreadable_output_names_the_client_and_shows_it() {
        let e = parse_memaslap("connect failed").unwrap_err().to_string();
        assert!(
            e.starts_with("memaslap printed no `Run time:` line: connect failed"),
            "{e}"
        );
        let e = parse_redis_csv(REDIS, "lpush").unwrap_err().to_string();
        assert!(e.contains("row for the test"), "{e}");
        assert!(parse_redis_csv("", "set").is_err());
    }
}
