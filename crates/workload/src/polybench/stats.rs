//! Data mining: covariance and correlation of n features over n samples.
//! `data[k][j]` is sample k of feature j. `Ref` forms each output entry as a dot product of
//! two columns (stride n); `Opt` accumulates rank-1 updates row by row (unit stride).

use super::{Variant, fill};

pub(super) fn layout(n: usize) -> Vec<usize> {
    // data, out (n x n), mean, stddev
    vec![n * n, n * n, n, n]
}

pub(super) fn init(_n: usize, a: &mut [&mut [f64]]) {
    fill(a[0], 3);
    for arr in a[1..].iter_mut() {
        arr.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// Subtracts each feature's mean from its column, leaving the means in `mean`.
fn center(n: usize, data: &mut [f64], mean: &mut [f64]) {
    for (j, m) in mean.iter_mut().enumerate() {
        *m = (0..n).map(|k| data[k * n + j]).sum::<f64>() / n as f64;
    }
    for k in 0..n {
        for j in 0..n {
            data[k * n + j] -= mean[j];
        }
    }
}

/// out[i][j] = scale * sum_k data[k][i]*data[k][j] for j >= i, mirrored.
fn gram(n: usize, v: Variant, data: &[f64], out: &mut [f64], scale: f64) {
    match v {
        Variant::Ref => {
            for i in 0..n {
                for j in i..n {
                    let s: f64 = (0..n).map(|k| data[k * n + i] * data[k * n + j]).sum();
                    out[i * n + j] = s * scale;
                }
            }
        }
        Variant::Opt => {
            out.iter_mut().for_each(|x| *x = 0.0);
            for k in 0..n {
                let row = &data[k * n..(k + 1) * n];
                for i in 0..n {
                    let di = row[i];
                    for (o, dj) in out[i * n + i..(i + 1) * n].iter_mut().zip(&row[i..]) {
                        *o += di * dj;
                    }
                }
            }
            out.iter_mut().for_each(|x| *x *= scale);
        }
    }
    for i in 0..n {
        for j in 0..i {
            out[i * n + j] = out[j * n + i];
        }
    }
}

/// cov = (data - mean)^T (data - mean) / (n - 1).
pub(super) fn covariance(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [data, cov, mean, _] = a else {
        unreachable!("covariance has four arrays")
    };
    center(n, data, mean);
    gram(n, v, data, cov, 1.0 / (n as f64 - 1.0));
}

/// corr[i][j] = Pearson correlation of features i and j (1 on the diagonal).
pub(super) fn correlation(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [data, corr, mean, stddev] = a else {
        unreachable!("correlation has four arrays")
    };
    center(n, data, mean);
    for (j, s) in stddev.iter_mut().enumerate() {
        let var = (0..n)
            .map(|k| data[k * n + j] * data[k * n + j])
            .sum::<f64>()
            / n as f64;
        // PolyBench's guard: a near-constant feature gets 1 so it does not divide by zero.
        *s = if var.sqrt() <= 0.1 { 1.0 } else { var.sqrt() };
    }
    let norm = (n as f64).sqrt();
    for k in 0..n {
        for j in 0..n {
            data[k * n + j] /= norm * stddev[j];
        }
    }
    gram(n, v, data, corr, 1.0);
    for i in 0..n {
        corr[i * n + i] = 1.0;
    }
}
