//! How precisely the table's figures are known, from the records' `precision`: the
//! half-width of a point's 95 % interval beside its median, and a line saying how many
//! points missed the precision asked for.

use pmscope_core::record::Record;

/// `±1.2%`: the half-width of `r`'s 95 % interval relative to its median; `-` for a record
/// without one (written before pmscope measured it, or summarising no repetitions).
pub fn half_width(r: &Record) -> String {
    match (&r.precision, &r.summary) {
        (Some(p), Some(s)) if p.n >= 2 => {
            let h = 100.0 * p.relative_half_width(s.p50);
            if h.is_finite() {
                format!("±{h:.1}%")
            } else {
                "-".into()
            }
        }
        _ => "-".into(),
    }
}

/// The line after a table when points missed their precision target or repetitions were
/// measured again ("3 of 40 points missed ±3 %: ..."); empty when every point met it.
pub fn footer(records: &[Record]) -> String {
    let judged: Vec<_> = records
        .iter()
        .filter_map(|r| r.precision.as_ref())
        .filter(|p| p.target.is_some())
        .collect();
    let missed = judged.iter().filter(|p| !p.met).count();
    let disturbed: usize = records
        .iter()
        .filter_map(|r| r.precision.as_ref())
        .map(|p| p.disturbed)
        .sum();
    let mut out = String::new();
    if let (true, Some(target)) = (missed > 0, judged.first().and_then(|p| p.target)) {
        out += &format!(
            "{missed} of {} points missed ±{} %: their intervals are in the records (--json, `pmscope results show`)\n",
            judged.len(),
            100.0 * target
        );
    }
    if disturbed > 0 {
        out += &format!(
            "{disturbed} repetitions were disturbed by other work or the hypervisor (too little CPU, stolen time, other processes busy on the machine): measured again where the budget allowed\n"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_core::precision::Precision;
    use pmscope_core::summary::Summary;

    fn point(values: &[f64], target: Option<f64>, disturbed: usize) -> Record {
        let mut r = Record::new("latency", vec![], Default::default());
        r.summary = Summary::of(values);
        r.precision = Precision::of(values, target).map(|p| Precision { disturbed, ..p });
        r
    }

    #[test]
    fn the_half_width_is_relative_to_the_median() {
        let r = point(
            &[98.0, 99.0, 100.0, 101.0, 102.0, 100.0, 100.0],
            Some(0.03),
            0,
        );
        // Order statistics of 7 values: the interval is [98, 102], ±2 % of 100.
        assert_eq!(half_width(&r), "±2.0%");
        assert_eq!(
            half_width(&Record::new("latency", vec![], Default::default())),
            "-"
        );
    }

    #[test]
    fn the_footer_counts_missed_targets_and_disturbed_repetitions() {
        let tight = point(&[100.0; 8], Some(0.03), 0);
        assert_eq!(footer(&[tight.clone(), tight.clone()]), "");
        let wide = point(&[50.0, 150.0, 80.0, 120.0, 100.0, 60.0], Some(0.03), 2);
        let f = footer(&[tight.clone(), wide, tight]);
        assert!(f.starts_with("1 of 3 points missed ±3 %"), "{f}");
        assert!(f.contains("2 repetitions were disturbed"), "{f}");
        // Fixed repetitions (--precision 0) judge no target.
        assert_eq!(footer(&[point(&[50.0, 150.0, 90.0], None, 0)]), "");
    }
}
