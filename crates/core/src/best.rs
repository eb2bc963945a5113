//! The best setting of a sweep (seed 004 Figure 11: the best-performing thread count per
//! access size): the setting with the highest median, its runner-up, and whether their
//! 95 % intervals separate — a best that lies within the runner-up's noise is said to.

/// One measured setting: its median and 95 % interval (low = high = median when unknown).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The swept setting (a thread count).
    pub setting: u64,
    /// The median figure.
    pub median: f64,
    /// Lower end of its interval.
    pub low: f64,
    /// Upper end of its interval.
    pub high: f64,
}

/// The winner of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Best {
    /// The setting with the highest median (the smaller setting among equal medians).
    pub best: Point,
    /// The next highest, when another setting was measured.
    pub runner_up: Option<Point>,
}

impl Best {
    /// Whether the best's interval lies wholly above the runner-up's: the choice is not
    /// noise. A sweep of one setting has nothing to be confused with.
    pub fn clear(&self) -> bool {
        self.runner_up.is_none_or(|r| self.best.low > r.high)
    }
}

/// The best of `points` (finite medians only), or `None` when none is finite.
pub fn best(points: &[Point]) -> Option<Best> {
    let mut ranked: Vec<Point> = points
        .iter()
        .copied()
        .filter(|p| p.median.is_finite())
        .collect();
    ranked.sort_by(|a, b| {
        b.median
            .total_cmp(&a.median)
            .then(a.setting.cmp(&b.setting))
    });
    let best = *ranked.first()?;
    Some(Best {
        best,
        runner_up: ranked.get(1).copied(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(setting: u64, median: f64, half: f64) -> Point {
        Point {
            setting,
            median,
            low: median - half,
            high: median + half,
        }
    }

    #[test]
    fn the_highest_median_wins_and_its_runner_up_is_kept() {
        let b = best(&[pt(1, 5.0, 0.1), pt(2, 9.0, 0.1), pt(4, 7.0, 0.1)]).unwrap();
        assert_eq!(b.best.setting, 2);
        assert_eq!(b.runner_up.unwrap().setting, 4);
        assert!(b.clear());
    }

    #[test]
    fn overlapping_intervals_make_the_best_unclear() {
        let b = best(&[pt(1, 8.9, 0.3), pt(2, 9.0, 0.3)]).unwrap();
        assert_eq!(b.best.setting, 2);
        assert!(!b.clear());
    }

    #[test]
    fn ties_go_to_fewer_threads_and_nan_is_ignored() {
        let b = best(&[pt(4, 9.0, 0.0), pt(2, 9.0, 0.0), pt(8, f64::NAN, 0.0)]).unwrap();
        assert_eq!((b.best.setting, b.runner_up.unwrap().setting), (2, 4));
        assert!(best(&[pt(1, f64::NAN, 0.0)]).is_none());
        assert!(best(&[pt(1, 3.0, 1.0)]).unwrap().clear());
    }
}
