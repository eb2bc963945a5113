//! Dynamic programming and region detection: dynprog, reg_detect.

use super::{STEPS, Variant};

pub(super) fn dynprog_layout(n: usize) -> Vec<usize> {
    // c (cost), w (weights), ct (c transposed, used by Opt)
    vec![n * n; 3]
}

/// Optimal-partition DP: c[i][j] = w[i][j] + min over i<k<j of c[i][k] + c[k][j].
/// `Ref` reads c[k][j] down a column; `Opt` keeps a transposed copy so that read is a row.
/// Min and the sums are the same operations in the same order, so both are exact.
pub(super) fn dynprog(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [c, w, ct] = a else {
        unreachable!("dynprog has three arrays")
    };
    for i in (0..n).rev() {
        for j in i + 1..n {
            let best = match v {
                Variant::Ref => (i + 1..j)
                    .map(|k| c[i * n + k] + c[k * n + j])
                    .fold(f64::INFINITY, f64::min),
                Variant::Opt => {
                    let row = &c[i * n + i + 1..i * n + j];
                    let col = &ct[j * n + i + 1..j * n + j];
                    row.iter()
                        .zip(col)
                        .map(|(x, y)| x + y)
                        .fold(f64::INFINITY, f64::min)
                }
            };
            let best = if best.is_finite() { best } else { 0.0 };
            c[i * n + j] = w[i * n + j] + best;
            ct[j * n + i] = c[i * n + j];
        }
    }
}

/// Window length of reg_detect's running sums.
const LENGTH: usize = 8;

pub(super) fn reg_layout(n: usize) -> Vec<usize> {
    let g = (n / 2).max(2);
    // sum_tang, diff, sum_diff, mean, path
    vec![g * g, g * g * LENGTH, g * g * LENGTH, g * g, g * g]
}

/// Region detection: for each upper-triangle cell, a windowed running sum of its tangent
/// values, then a path accumulation along diagonals. `Ref` runs the three phases as separate
/// sweeps; `Opt` fuses the first two per cell so `diff` is reused while in cache.
pub(super) fn reg_detect(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [tang, diff, sdiff, mean, path] = a else {
        unreachable!("reg_detect has five arrays")
    };
    let g = (n / 2).max(2);
    let cell = |j: usize, i: usize| (j * g + i) * LENGTH;
    for _ in 0..STEPS {
        match v {
            Variant::Ref => {
                for j in 0..g {
                    for i in j..g {
                        for c in 0..LENGTH {
                            diff[cell(j, i) + c] = tang[j * g + i] + c as f64;
                        }
                    }
                }
                for j in 0..g {
                    for i in j..g {
                        let b = cell(j, i);
                        sdiff[b] = diff[b];
                        for c in 1..LENGTH {
                            sdiff[b + c] = sdiff[b + c - 1] + diff[b + c];
                        }
                        mean[j * g + i] = sdiff[b + LENGTH - 1];
                    }
                }
            }
            Variant::Opt => {
                for j in 0..g {
                    for i in j..g {
                        let b = cell(j, i);
                        for c in 0..LENGTH {
                            diff[b + c] = tang[j * g + i] + c as f64;
                        }
                        sdiff[b] = diff[b];
                        for c in 1..LENGTH {
                            sdiff[b + c] = sdiff[b + c - 1] + diff[b + c];
                        }
                        mean[j * g + i] = sdiff[b + LENGTH - 1];
                    }
                }
            }
        }
        path[..g].copy_from_slice(&mean[..g]);
        for j in 1..g {
            for i in j..g {
                path[j * g + i] = path[(j - 1) * g + i - 1] + mean[j * g + i];
            }
        }
    }
}
