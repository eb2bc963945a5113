//! What the curves say, as numbers: where a latency curve's plateaus end, the knee of a
//! bandwidth-vs-access-size curve, the traffic at which loaded latency doubles. Pure
//! functions of points; the latency figure and the observations share them.

/// The rise between neighbouring working sets that ends a latency plateau: 25 %.
pub const PLATEAU_RISE: f64 = 0.25;

/// Where a latency curve (working set, ns) steps up: the last point before each rise of
/// more than [`PLATEAU_RISE`] between neighbouring points (`pmscope_core::knee::steps`;
/// consecutive rises are one transition). The latency figure marks them.
pub fn plateau_ends(points: &[(u64, f64)]) -> Vec<(u64, f64)> {
    pmscope_core::knee::steps(points, PLATEAU_RISE)
}

/// The knee of a bandwidth-vs-access-size curve (sorted by size): the first size reaching
/// 90 % of the peak when the curve started below 70 % of it, at least one larger size was
/// measured and every larger size stays within 90 % of the peak. `None` for a curve still
/// rising at its end or flat from the start.
pub fn knee(curve: &[(f64, f64)]) -> Option<usize> {
    if curve.len() < 3 {
        return None;
    }
    let peak = curve.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    if peak.is_nan() || peak <= 0.0 || curve[0].1 > 0.7 * peak {
        return None;
    }
    let k = curve.iter().position(|p| p.1 >= 0.9 * peak)?;
    (k + 1 < curve.len() && curve[k..].iter().all(|p| p.1 >= 0.9 * peak)).then_some(k)
}

/// The traffic bandwidth at which a loaded-latency curve (GB/s, ns; sorted by bandwidth,
/// its first point the least loaded) reaches twice its first latency, interpolated linearly.
pub fn doubling_bandwidth(curve: &[(f64, f64)]) -> Option<(f64, f64)> {
    let (_, base) = *curve.first()?;
    let i = curve.iter().position(|p| p.1 >= 2.0 * base)?;
    let (x0, y0) = curve[i.checked_sub(1)?];
    let (x1, y1) = curve[i];
    let f = if y1 > y0 {
        (2.0 * base - y0) / (y1 - y0)
    } else {
        1.0
    };
    Some((x0 + f * (x1 - x0), base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plateaus_end_before_each_rise() {
        let pts = [
            (4096, 1.0),
            (8192, 1.0),
            (16384, 5.0),
            (32768, 9.0),
            (65536, 9.5),
            (1 << 20, 30.0),
        ];
        assert_eq!(plateau_ends(&pts), vec![(8192, 1.0), (65536, 9.5)]);
        assert!(plateau_ends(&[(1, 1.0), (2, 1.1)]).is_empty());
    }

    #[test]
    fn knee_at_256_is_found_and_a_rising_or_flat_curve_has_none() {
        let knee_at_256 = [
            (64.0, 1.0),
            (128.0, 2.0),
            (256.0, 3.8),
            (512.0, 3.9),
            (1024.0, 4.0),
        ];
        assert_eq!(knee(&knee_at_256).map(|k| knee_at_256[k].0), Some(256.0));
        let rising = [
            (64.0, 1.0),
            (128.0, 2.0),
            (256.0, 4.0),
            (512.0, 8.0),
            (1024.0, 16.0),
        ];
        assert_eq!(knee(&rising), None);
        let flat = [(64.0, 3.9), (128.0, 4.0), (256.0, 4.0)];
        assert_eq!(knee(&flat), None);
    }

    #[test]
    fn doubling_is_interpolated_and_absent_when_latency_never_doubles() {
        let c = [(0.0, 100.0), (5.0, 120.0), (10.0, 180.0), (12.0, 260.0)];
        let (gb, base) = doubling_bandwidth(&c).unwrap();
        assert_eq!(base, 100.0);
        assert!((gb - 10.5).abs() < 1e-9, "{gb}");
        assert_eq!(doubling_bandwidth(&[(0.0, 100.0), (9.0, 150.0)]), None);
    }
}
