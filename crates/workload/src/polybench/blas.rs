//! Dense linear algebra: gemm, 2mm, 3mm, syrk, syr2k, symm, mvt, gemver, doitgen.
//! Matrices are n x n, row-major. `Ref` runs the textbook i-j-k order (the inner product
//! walks a column of B with stride n); `Opt` interchanges to i-k-j (unit stride) and tiles
//! the k and j loops so a tile of B stays in cache.

use super::{TILE, Variant, fill};

pub(super) fn two_sq(n: usize) -> Vec<usize> {
    vec![n * n; 2]
}
pub(super) fn three_sq(n: usize) -> Vec<usize> {
    vec![n * n; 3]
}
pub(super) fn five_sq(n: usize) -> Vec<usize> {
    vec![n * n; 5]
}
pub(super) fn seven_sq(n: usize) -> Vec<usize> {
    vec![n * n; 7]
}
pub(super) fn mvt_layout(n: usize) -> Vec<usize> {
    // A, x1, x2, y1, y2
    vec![n * n, n, n, n, n]
}
pub(super) fn gemver_layout(n: usize) -> Vec<usize> {
    // A, u1, v1, u2, v2, x, y, w, z
    vec![n * n, n, n, n, n, n, n, n, n]
}
pub(super) fn doitgen_layout(n: usize) -> Vec<usize> {
    // A[r][q][p], C4[s][p], sum[p]
    vec![n * n * n, n * n, n]
}

/// Fills every array with deterministic values, each array differently.
pub(super) fn init_all(_n: usize, a: &mut [&mut [f64]]) {
    for (k, arr) in a.iter_mut().enumerate() {
        fill(arr, k);
    }
}

/// out = beta*out + alpha * a * b  (all n x n).
fn matmul(n: usize, v: Variant, alpha: f64, beta: f64, a: &[f64], b: &[f64], out: &mut [f64]) {
    match v {
        Variant::Ref => {
            for i in 0..n {
                for j in 0..n {
                    let mut s = 0.0;
                    for k in 0..n {
                        s += a[i * n + k] * b[k * n + j];
                    }
                    out[i * n + j] = beta * out[i * n + j] + alpha * s;
                }
            }
        }
        Variant::Opt => {
            out.iter_mut().for_each(|x| *x *= beta);
            for kk in (0..n).step_by(TILE) {
                for jj in (0..n).step_by(TILE) {
                    let je = (jj + TILE).min(n);
                    for i in 0..n {
                        for k in kk..(kk + TILE).min(n) {
                            let aik = alpha * a[i * n + k];
                            let row = &b[k * n + jj..k * n + je];
                            for (o, bv) in out[i * n + jj..i * n + je].iter_mut().zip(row) {
                                *o += aik * bv;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// C = alpha*A*B + beta*C.
pub(super) fn gemm(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [c, x, y] = a else {
        unreachable!("gemm has three arrays")
    };
    matmul(n, v, 1.5, 1.2, x, y, c);
}

/// D = alpha*A*B*C + beta*D (tmp = alpha*A*B first).
pub(super) fn two_mm(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [tmp, x, y, c, d] = a else {
        unreachable!("2mm has five arrays")
    };
    matmul(n, v, 1.5, 0.0, x, y, tmp);
    matmul(n, v, 1.0, 1.2, tmp, c, d);
}

/// G = (A*B)*(C*D).
pub(super) fn three_mm(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [aa, b, c, d, e, f, g] = a else {
        unreachable!("3mm has seven arrays")
    };
    matmul(n, v, 1.0, 0.0, aa, b, e);
    matmul(n, v, 1.0, 0.0, c, d, f);
    matmul(n, v, 1.0, 0.0, e, f, g);
}

/// C = alpha*A*A^T + beta*C on the lower triangle (j <= i).
pub(super) fn syrk(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [c, x] = a else {
        unreachable!("syrk has two arrays")
    };
    let (alpha, beta) = (1.5, 1.2);
    // A*A^T reads rows of A for both operands, so i-j-k is already unit stride; the
    // optimised order tiles j so a block of rows of A stays in cache across i.
    match v {
        Variant::Ref => {
            for i in 0..n {
                for j in 0..=i {
                    let s: f64 = (0..n).map(|k| x[i * n + k] * x[j * n + k]).sum();
                    c[i * n + j] = beta * c[i * n + j] + alpha * s;
                }
            }
        }
        Variant::Opt => {
            for jj in (0..n).step_by(TILE) {
                for i in jj..n {
                    for j in jj..(jj + TILE).min(i + 1) {
                        let s: f64 = (0..n).map(|k| x[i * n + k] * x[j * n + k]).sum();
                        c[i * n + j] = beta * c[i * n + j] + alpha * s;
                    }
                }
            }
        }
    }
}

/// C = alpha*(A*B^T + B*A^T) + beta*C on the lower triangle.
pub(super) fn syr2k(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [c, x, y] = a else {
        unreachable!("syr2k has three arrays")
    };
    let (alpha, beta) = (1.5, 1.2);
    let cell = |i: usize, j: usize| -> f64 {
        (0..n)
            .map(|k| x[i * n + k] * y[j * n + k] + y[i * n + k] * x[j * n + k])
            .sum()
    };
    match v {
        Variant::Ref => {
            for i in 0..n {
                for j in 0..=i {
                    c[i * n + j] = beta * c[i * n + j] + alpha * cell(i, j);
                }
            }
        }
        Variant::Opt => {
            for jj in (0..n).step_by(TILE) {
                for i in jj..n {
                    for j in jj..(jj + TILE).min(i + 1) {
                        c[i * n + j] = beta * c[i * n + j] + alpha * cell(i, j);
                    }
                }
            }
        }
    }
}

/// C = alpha*A*B + beta*C where A is symmetric and only its lower triangle is read.
pub(super) fn symm(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [c, x, y] = a else {
        unreachable!("symm has three arrays")
    };
    let sym = |i: usize, k: usize| if k <= i { x[i * n + k] } else { x[k * n + i] };
    let (alpha, beta) = (1.5, 1.2);
    match v {
        Variant::Ref => {
            for i in 0..n {
                for j in 0..n {
                    let s: f64 = (0..n).map(|k| sym(i, k) * y[k * n + j]).sum();
                    c[i * n + j] = beta * c[i * n + j] + alpha * s;
                }
            }
        }
        Variant::Opt => {
            c.iter_mut().for_each(|e| *e *= beta);
            for i in 0..n {
                for k in 0..n {
                    let aik = alpha * sym(i, k);
                    for j in 0..n {
                        c[i * n + j] += aik * y[k * n + j];
                    }
                }
            }
        }
    }
}

/// x1 += A*y1; x2 += A^T*y2.
pub(super) fn mvt(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [m, x1, x2, y1, y2] = a else {
        unreachable!("mvt has five arrays")
    };
    for i in 0..n {
        x1[i] += (0..n).map(|j| m[i * n + j] * y1[j]).sum::<f64>();
    }
    match v {
        // Textbook: x2[i] = sum_j A[j][i]*y2[j], a column walk of stride n.
        Variant::Ref => {
            for i in 0..n {
                x2[i] += (0..n).map(|j| m[j * n + i] * y2[j]).sum::<f64>();
            }
        }
        // Interchanged: row j of A scaled by y2[j] is added to x2, unit stride.
        Variant::Opt => {
            for j in 0..n {
                let yj = y2[j];
                for (x, mv) in x2.iter_mut().zip(&m[j * n..(j + 1) * n]) {
                    *x += mv * yj;
                }
            }
        }
    }
}

/// A += u1*v1^T + u2*v2^T; x += beta*A^T*y + z; w += alpha*A*x.
pub(super) fn gemver(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [m, u1, v1, u2, v2, x, y, w, z] = a else {
        unreachable!("gemver has nine arrays")
    };
    let (alpha, beta) = (1.5, 1.2);
    for i in 0..n {
        for j in 0..n {
            m[i * n + j] += u1[i] * v1[j] + u2[i] * v2[j];
        }
    }
    match v {
        Variant::Ref => {
            for i in 0..n {
                x[i] += beta * (0..n).map(|j| m[j * n + i] * y[j]).sum::<f64>();
            }
        }
        Variant::Opt => {
            let mut acc = vec![0.0; n];
            for j in 0..n {
                let yj = y[j];
                for (s, mv) in acc.iter_mut().zip(&m[j * n..(j + 1) * n]) {
                    *s += mv * yj;
                }
            }
            for (xi, s) in x.iter_mut().zip(acc) {
                *xi += beta * s;
            }
        }
    }
    for i in 0..n {
        x[i] += z[i];
    }
    for i in 0..n {
        w[i] += alpha * (0..n).map(|j| m[i * n + j] * x[j]).sum::<f64>();
    }
}

/// A[r][q][p] = sum_s A[r][q][s] * C4[s][p] (multiresolution analysis kernel).
pub(super) fn doitgen(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [aa, c4, sum] = a else {
        unreachable!("doitgen has three arrays")
    };
    for r in 0..n {
        for q in 0..n {
            let base = (r * n + q) * n;
            match v {
                Variant::Ref => {
                    for p in 0..n {
                        sum[p] = (0..n).map(|s| aa[base + s] * c4[s * n + p]).sum();
                    }
                }
                Variant::Opt => {
                    sum.iter_mut().for_each(|e| *e = 0.0);
                    for s in 0..n {
                        let av = aa[base + s];
                        for (e, cv) in sum.iter_mut().zip(&c4[s * n..(s + 1) * n]) {
                            *e += av * cv;
                        }
                    }
                }
            }
            aa[base..base + n].copy_from_slice(sum);
        }
    }
}
