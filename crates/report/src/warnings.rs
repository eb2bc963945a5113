//! The warnings of some records, each code once: how many distinct findings of it there
//! were, on how many points, and the range of the figure it is about (the load of a busy
//! machine). Environment findings — facts about the machine that every record of a run
//! repeats — are told apart, so the report states them once per run instead of beside
//! every figure.

use crate::noise::{self, BUSY_MACHINE};
use pmscope_core::record::Record;
use pmscope_core::warning::Warning;

/// The codes of the environment checks (`runner::sanity`) that are facts about the machine
/// rather than about one experiment: the same for every figure of a run.
pub const ENVIRONMENT: &[&str] = &[
    "numa-balancing",
    "damon",
    "thp-always",
    "thp-never",
    "thp-unknown",
    "thp-defrag",
    "governor",
    "governor-unknown",
    "tsc-unusable",
    "tsc-frequency-undeclared",
    "tsc-frequency",
    "prefetchers",
];

/// One warning code among some records.
#[derive(Debug, Clone)]
pub struct Grouped<'a> {
    /// Its first occurrence (message and remedy).
    pub first: &'a Warning,
    /// How many distinct messages it came with (each a separate finding: one per
    /// environment check for `busy-machine`).
    pub distinct: usize,
    /// How many of the records carry it.
    pub points: usize,
    /// The range of the load the records carrying it saw (`busy-machine` only).
    pub load: Option<(f64, f64)>,
}

impl Grouped<'_> {
    /// One line: `busy-machine ×7: load 3.50–5.20 on 84 points`, or the first message and
    /// how many others like it there were.
    pub fn summary(&self) -> String {
        let times = if self.distinct > 1 {
            format!(" ×{}", self.distinct)
        } else {
            String::new()
        };
        let code = &self.first.code;
        match self.load {
            Some(l) => format!(
                "{code}{times}: 1-minute load average {} on {} point{} (other work competes for cores and memory bandwidth)",
                noise::show_range(l, 2),
                self.points,
                if self.points == 1 { "" } else { "s" }
            ),
            None if self.distinct > 1 => format!(
                "{code}{times}: {} (and {} more like it)",
                self.first.message,
                self.distinct - 1
            ),
            None => format!("{code}: {}", self.first.message),
        }
    }
}

/// Each warning code of `records` once, in first-seen order, leaving out `skip`.
pub fn grouped<'a>(records: &[&'a Record], skip: &[&str]) -> Vec<Grouped<'a>> {
    let mut codes: Vec<&str> = Vec::new();
    for r in records {
        for w in &r.warnings {
            if !skip.contains(&w.code.as_str()) && !codes.contains(&w.code.as_str()) {
                codes.push(&w.code);
            }
        }
    }
    codes
        .into_iter()
        .map(|code| {
            let carrying: Vec<&&Record> = records
                .iter()
                .filter(|r| r.warnings.iter().any(|w| w.code == code))
                .collect();
            let mut messages: Vec<&Warning> = Vec::new();
            for w in carrying
                .iter()
                .flat_map(|r| r.warnings.iter())
                .filter(|w| w.code == code)
            {
                if !messages.iter().any(|m| m.message == w.message) {
                    messages.push(w);
                }
            }
            let load = (code == BUSY_MACHINE)
                .then(|| noise::range(carrying.iter().filter_map(|r| noise::load(r))))
                .flatten();
            Grouped {
                first: messages[0],
                distinct: messages.len(),
                points: carrying.len(),
                load,
            }
        })
        .collect()
}

/// The codes a run's report states once, in its trust box, rather than beside each
/// figure: the environment findings, and any other code every measured point of the run
/// carries — except `busy-machine`, whose load differs from figure to figure.
pub fn run_wide(records: &[Record]) -> Vec<String> {
    let measured: Vec<&Record> = records.iter().filter(|r| r.summary.is_some()).collect();
    let mut out: Vec<String> = Vec::new();
    for w in records.iter().flat_map(|r| r.warnings.iter()) {
        let everywhere = !measured.is_empty()
            && measured
                .iter()
                .all(|r| r.warnings.iter().any(|x| x.code == w.code));
        let wide = ENVIRONMENT.contains(&w.code.as_str()) || everywhere;
        if wide && w.code != BUSY_MACHINE && !out.contains(&w.code) {
            out.push(w.code.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::record::SystemSummary;
    use pmscope_core::summary::Summary;

    fn rec(load: f64, extra: &[&str]) -> Record {
        let mut r = Record::new("latency", vec![], SystemSummary::default());
        r.summary = Summary::of(&[1.0, 2.0]);
        r.warnings.push(Warning::new(
            BUSY_MACHINE,
            format!("the 1-minute load average is {load:.2} on 2 CPUs: other work competes"),
            "stop other jobs",
        ));
        for code in extra {
            r.warnings
                .push(Warning::new(code, format!("{code} found"), "fix it"));
        }
        r
    }

    /// Seven environment checks at seven loads: one line with the count and the range.
    #[test]
    fn one_line_per_code_with_its_count_and_range() {
        let recs: Vec<Record> = [3.5, 4.0, 4.4, 5.2, 3.9, 4.1, 4.8]
            .into_iter()
            .flat_map(|l| [rec(l, &[]), rec(l, &[])])
            .collect();
        let refs: Vec<&Record> = recs.iter().collect();
        let g = grouped(&refs, &[]);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].distinct, 7);
        assert_eq!(g[0].points, 14);
        assert_eq!(
            g[0].summary(),
            "busy-machine ×7: 1-minute load average 3.50–5.20 on 14 points (other work competes for cores and memory bandwidth)"
        );
    }

    #[test]
    fn environment_and_everywhere_codes_are_run_wide_but_not_the_load() {
        let recs = vec![
            rec(1.0, &["governor-unknown", "fits-in-llc", "prefetchers"]),
            rec(1.0, &["fits-in-llc"]),
            rec(1.0, &["timer-resolution"]),
        ];
        assert_eq!(run_wide(&recs), ["governor-unknown", "prefetchers"]);
        let recs = vec![rec(1.0, &["fits-in-llc"]), rec(1.0, &["fits-in-llc"])];
        assert_eq!(run_wide(&recs), ["fits-in-llc"]);
    }
}
