//! Where a curve over a sweep axis steps: the knee of a buffer or cache-size probe, the end
//! of each latency plateau. A step is a rise of more than `threshold` (as a fraction)
//! between neighbouring points; consecutive rises form one transition, since a buffer or
//! a cache level ends over a range of sizes, not at one point, and each transition yields
//! the last point before it. A flat or noisy curve yields nothing — no knee is invented.

/// The x of the last point before each step of `points` (sorted by x), with its y.
pub fn steps(points: &[(u64, f64)], threshold: f64) -> Vec<(u64, f64)> {
    let mut ends = Vec::new();
    let mut rising = false;
    for w in points.windows(2) {
        let rise = w[0].1 > 0.0 && w[1].1 > w[0].1 * (1.0 + threshold);
        if rise && !rising {
            ends.push(w[0]);
        }
        rising = rise;
    }
    ends
}

/// The first knee of a buffer probe: where the curve first rises by more than
/// `threshold`, and the factor from the plateau before it to the highest point after it.
pub fn knee(points: &[(u64, f64)], threshold: f64) -> Option<Knee> {
    let (x, before) = *steps(points, threshold).first()?;
    let after = points
        .iter()
        .filter(|p| p.0 > x)
        .map(|p| p.1)
        .fold(f64::NAN, f64::max);
    Some(Knee {
        size: x,
        before,
        after,
    })
}

/// A knee: the size where the curve leaves its first plateau.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knee {
    /// The last x of the plateau (the buffer's size, as the sweep resolves it).
    pub size: u64,
    /// y on the plateau.
    pub before: f64,
    /// The highest y after it.
    pub after: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(f: impl Fn(u64) -> f64) -> Vec<(u64, f64)> {
        (10..=26).map(|e| (1u64 << e, f(1u64 << e))).collect()
    }

    #[test]
    fn a_step_at_16_kib_is_found() {
        let c = curve(|x| if x <= 16 << 10 { 100.0 } else { 300.0 });
        let k = knee(&c, 0.25).unwrap();
        assert_eq!(k.size, 16 << 10);
        assert_eq!((k.before, k.after), (100.0, 300.0));
    }

    #[test]
    fn a_flat_or_noisy_curve_has_no_knee() {
        assert_eq!(knee(&curve(|_| 100.0), 0.25), None);
        let noisy = curve(|x| 100.0 + ((x >> 10) % 7) as f64 * 2.0);
        assert_eq!(knee(&noisy, 0.25), None);
        assert_eq!(knee(&[], 0.25), None);
    }

    #[test]
    fn a_gradual_rise_is_one_transition() {
        // L1 to 32 KiB, then a rise over three points, then flat: one step, at 32 KiB.
        let c = [
            (16 << 10, 1.2),
            (32 << 10, 1.2),
            (64 << 10, 2.0),
            (128 << 10, 3.0),
            (256 << 10, 4.0),
            (512 << 10, 4.1),
        ];
        assert_eq!(steps(&c, 0.25), vec![(32 << 10, 1.2)]);
    }
}
