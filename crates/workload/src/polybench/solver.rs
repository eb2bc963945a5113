//! Linear solvers and factorisations: gramschmidt, durbin, trisolv, cholesky, lu.
//! Inputs are made well conditioned (diagonally dominant, symmetric positive definite where
//! the method needs it) so both variants stay close in floating point.

use super::{Variant, fill};

pub(super) fn one_sq(n: usize) -> Vec<usize> {
    vec![n * n]
}
pub(super) fn gramschmidt_layout(n: usize) -> Vec<usize> {
    // A, R, Q
    vec![n * n; 3]
}
pub(super) fn durbin_layout(n: usize) -> Vec<usize> {
    // r, y, z
    vec![n; 3]
}
pub(super) fn trisolv_layout(n: usize) -> Vec<usize> {
    // L, x, b
    vec![n * n, n, n]
}

pub(super) fn gramschmidt_init(n: usize, a: &mut [&mut [f64]]) {
    fill(a[0], 5);
    for i in 0..n {
        a[0][i * n + i] += n as f64;
    }
    a[1].iter_mut().for_each(|x| *x = 0.0);
    a[2].iter_mut().for_each(|x| *x = 0.0);
}

pub(super) fn durbin_init(n: usize, a: &mut [&mut [f64]]) {
    // A decaying autocorrelation, the kind Levinson-Durbin solves stably.
    for i in 0..n {
        a[0][i] = 0.5f64.powi(i as i32 + 1);
    }
    a[1].iter_mut().for_each(|x| *x = 0.0);
    a[2].iter_mut().for_each(|x| *x = 0.0);
}

pub(super) fn lower_init(n: usize, a: &mut [&mut [f64]]) {
    fill(a[0], 7);
    for i in 0..n {
        a[0][i * n + i] = n as f64 + 1.0;
    }
    a[1].iter_mut().for_each(|x| *x = 0.0);
    fill(a[2], 8);
}

/// A symmetric, diagonally dominant (so positive definite) matrix.
pub(super) fn spd_init(n: usize, a: &mut [&mut [f64]]) {
    let m = &mut *a[0];
    for i in 0..n {
        for j in 0..=i {
            let v = 0.1 + ((i * 7 + j * 3 + 1) % 101) as f64 / 101.0;
            m[i * n + j] = v;
            m[j * n + i] = v;
        }
        m[i * n + i] = 2.0 * n as f64;
    }
}

/// Modified Gram-Schmidt QR: A = Q*R.
pub(super) fn gramschmidt(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [m, r, q] = a else {
        unreachable!("gramschmidt has three arrays")
    };
    for k in 0..n {
        let nrm: f64 = (0..n).map(|i| m[i * n + k] * m[i * n + k]).sum();
        r[k * n + k] = nrm.sqrt();
        for i in 0..n {
            q[i * n + k] = m[i * n + k] / r[k * n + k];
        }
        match v {
            // Textbook: per column j, a dot product and an update down the column (stride n).
            Variant::Ref => {
                for j in k + 1..n {
                    r[k * n + j] = (0..n).map(|i| q[i * n + k] * m[i * n + j]).sum();
                    for i in 0..n {
                        m[i * n + j] -= q[i * n + k] * r[k * n + j];
                    }
                }
            }
            // Interchanged: i outer, j inner, so both passes walk rows of A.
            Variant::Opt => {
                r[k * n + k + 1..(k + 1) * n]
                    .iter_mut()
                    .for_each(|x| *x = 0.0);
                for i in 0..n {
                    let qi = q[i * n + k];
                    for j in k + 1..n {
                        r[k * n + j] += qi * m[i * n + j];
                    }
                }
                for i in 0..n {
                    let qi = q[i * n + k];
                    for j in k + 1..n {
                        m[i * n + j] -= qi * r[k * n + j];
                    }
                }
            }
        }
    }
}

/// Levinson-Durbin recursion for a Toeplitz system. Each step reads the whole solution so
/// far; there is no loop to interchange, so `Opt` is the same as `Ref`.
pub(super) fn durbin(n: usize, _v: Variant, a: &mut [&mut [f64]]) {
    let [r, y, z] = a else {
        unreachable!("durbin has three arrays")
    };
    y[0] = -r[0];
    let mut beta = 1.0;
    let mut alpha = -r[0];
    for k in 1..n {
        beta *= 1.0 - alpha * alpha;
        let sum: f64 = (0..k).map(|i| r[k - i - 1] * y[i]).sum();
        alpha = -(r[k] + sum) / beta;
        for i in 0..k {
            z[i] = y[i] + alpha * y[k - i - 1];
        }
        y[..k].copy_from_slice(&z[..k]);
        y[k] = alpha;
    }
}

/// Forward substitution L*x = b.
pub(super) fn trisolv(n: usize, _v: Variant, a: &mut [&mut [f64]]) {
    let [l, x, b] = a else {
        unreachable!("trisolv has three arrays")
    };
    // Textbook: x[i] from a dot product of row i with the x found so far. It reads L's
    // lower triangle once, row by row, with unit stride: already the order locality asks
    // for, so `Opt` is the same (the seed's polyhedral build gained nothing either, ratio
    // 1.0). The other order, subtracting each solved column from b, reads L with stride n
    // and ran 4x slower here.
    for i in 0..n {
        let s: f64 = (0..i).map(|j| l[i * n + j] * x[j]).sum();
        x[i] = (b[i] - s) / l[i * n + i];
    }
}

/// Cholesky factorisation A = L*L^T in place (lower triangle). The row-wise form reads
/// only rows, so it is already unit stride: `Opt` is the same order.
pub(super) fn cholesky(n: usize, _v: Variant, a: &mut [&mut [f64]]) {
    let [m] = a else {
        unreachable!("cholesky has one array")
    };
    for i in 0..n {
        for j in 0..i {
            let s: f64 = (0..j).map(|k| m[i * n + k] * m[j * n + k]).sum();
            m[i * n + j] = (m[i * n + j] - s) / m[j * n + j];
        }
        let s: f64 = (0..i).map(|k| m[i * n + k] * m[i * n + k]).sum();
        m[i * n + i] = (m[i * n + i] - s).sqrt();
    }
}

/// LU decomposition (Doolittle, no pivoting) in place.
pub(super) fn lu(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [m] = a else {
        unreachable!("lu has one array")
    };
    match v {
        // Textbook: each entry from a dot product of a row of L and a column of U (stride n).
        Variant::Ref => {
            for i in 0..n {
                for j in 0..i {
                    let s: f64 = (0..j).map(|k| m[i * n + k] * m[k * n + j]).sum();
                    m[i * n + j] = (m[i * n + j] - s) / m[j * n + j];
                }
                for j in i..n {
                    let s: f64 = (0..i).map(|k| m[i * n + k] * m[k * n + j]).sum();
                    m[i * n + j] -= s;
                }
            }
        }
        // Interchanged to i-k-j: row k of U scaled by L[i][k] is subtracted from row i.
        Variant::Opt => {
            for i in 0..n {
                for k in 0..i {
                    m[i * n + k] /= m[k * n + k];
                    let lik = m[i * n + k];
                    let (upper, lower) = m.split_at_mut(i * n);
                    let urow = &upper[k * n + k + 1..(k + 1) * n];
                    for (x, u) in lower[k + 1..n].iter_mut().zip(urow) {
                        *x -= lik * u;
                    }
                }
            }
        }
    }
}
