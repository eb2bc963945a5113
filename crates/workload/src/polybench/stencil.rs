//! Stencils: jacobi-1d, jacobi-2d, seidel-2d, fdtd-2d, over [`STEPS`] time steps.
//! The textbook order already walks rows with unit stride. `Opt` skews jacobi-2d's sweeps
//! in time (every half-step in one pass over the grid, each a row behind the one before:
//! the time tiling a polyhedral tool finds), fuses fdtd-2d's two E-field sweeps, and is
//! the same order where dependences within a sweep forbid reordering without skewing
//! (seidel-2d, jacobi-1d): the seed, too, saw no locality gain there.

use super::{STEPS, Variant};

pub(super) fn jacobi1d_layout(n: usize) -> Vec<usize> {
    // Quadratic class: n*n points in a line, so medium is a long vector.
    vec![n * n, n * n]
}
pub(super) fn one_grid(n: usize) -> Vec<usize> {
    vec![n * n]
}
pub(super) fn two_grids(n: usize) -> Vec<usize> {
    vec![n * n, n * n]
}
pub(super) fn fdtd_layout(n: usize) -> Vec<usize> {
    // ex, ey, hz, fict
    vec![n * n, n * n, n * n, STEPS]
}

/// Three-point averaging, A -> B -> A each step.
pub(super) fn jacobi_1d(_n: usize, _v: Variant, a: &mut [&mut [f64]]) {
    let [x, y] = a else {
        unreachable!("jacobi-1d has two arrays")
    };
    let len = x.len();
    for _ in 0..STEPS {
        for i in 1..len - 1 {
            y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0;
        }
        for i in 1..len - 1 {
            x[i] = (y[i - 1] + y[i] + y[i + 1]) / 3.0;
        }
    }
}

/// Five-point averaging of interior row `i` of `dst` from `src`.
fn five_point_row(n: usize, src: &[f64], dst: &mut [f64], i: usize) {
    for j in 1..n - 1 {
        dst[i * n + j] = 0.2
            * (src[i * n + j]
                + src[i * n + j - 1]
                + src[i * n + j + 1]
                + src[(i - 1) * n + j]
                + src[(i + 1) * n + j]);
    }
}

/// Five-point Jacobi, A -> B -> A each step.
pub(super) fn jacobi_2d(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [x, y] = a else {
        unreachable!("jacobi-2d has two arrays")
    };
    match v {
        // Each half-step sweeps the whole grid: 2 x STEPS passes over both arrays.
        Variant::Ref => {
            for _ in 0..STEPS {
                for i in 1..n - 1 {
                    five_point_row(n, x, y, i);
                }
                for i in 1..n - 1 {
                    five_point_row(n, y, x, i);
                }
            }
        }
        // One pass: on wavefront w, half-step s (even: x -> y, odd: y -> x) updates row
        // w - s. Half-step s reads rows r-1..=r+1 of s-1's output: s-1 wrote row r+1 earlier
        // on this wavefront, and s+1, which overwrites that array, is still at row r-2. So
        // every point gets the same operands as in `Ref` (the grids are equal bit for bit),
        // and the grid streams through the caches once instead of 2 x STEPS times: the
        // window in use is about 2 x STEPS + 2 rows of each array.
        Variant::Opt => {
            let stages = 2 * STEPS;
            for w in 1..n - 2 + stages {
                for s in 0..stages.min(w) {
                    let row = w - s;
                    if row > n - 2 {
                        continue;
                    }
                    if s % 2 == 0 {
                        five_point_row(n, x, y, row);
                    } else {
                        five_point_row(n, y, x, row);
                    }
                }
            }
        }
    }
}

/// Gauss-Seidel nine-point averaging in place.
pub(super) fn seidel_2d(n: usize, _v: Variant, a: &mut [&mut [f64]]) {
    let [g] = a else {
        unreachable!("seidel-2d has one array")
    };
    for _ in 0..STEPS {
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                g[i * n + j] = (g[(i - 1) * n + j - 1]
                    + g[(i - 1) * n + j]
                    + g[(i - 1) * n + j + 1]
                    + g[i * n + j - 1]
                    + g[i * n + j]
                    + g[i * n + j + 1]
                    + g[(i + 1) * n + j - 1]
                    + g[(i + 1) * n + j]
                    + g[(i + 1) * n + j + 1])
                    / 9.0;
            }
        }
    }
}

/// 2-D finite-difference time domain (Yee): E fields from H, then H from E.
pub(super) fn fdtd_2d(n: usize, v: Variant, a: &mut [&mut [f64]]) {
    let [ex, ey, hz, fict] = a else {
        unreachable!("fdtd-2d has four arrays")
    };
    for (t, f) in fict.iter_mut().enumerate() {
        *f = t as f64;
    }
    for &f in fict.iter() {
        for j in 0..n {
            ey[j] = f;
        }
        match v {
            Variant::Ref => {
                for i in 1..n {
                    for j in 0..n {
                        ey[i * n + j] -= 0.5 * (hz[i * n + j] - hz[(i - 1) * n + j]);
                    }
                }
                for i in 0..n {
                    for j in 1..n {
                        ex[i * n + j] -= 0.5 * (hz[i * n + j] - hz[i * n + j - 1]);
                    }
                }
            }
            // Fused: both E updates read only hz, so one pass over the rows does both.
            Variant::Opt => {
                for i in 0..n {
                    for j in 0..n {
                        if i > 0 {
                            ey[i * n + j] -= 0.5 * (hz[i * n + j] - hz[(i - 1) * n + j]);
                        }
                        if j > 0 {
                            ex[i * n + j] -= 0.5 * (hz[i * n + j] - hz[i * n + j - 1]);
                        }
                    }
                }
            }
        }
        for i in 0..n - 1 {
            for j in 0..n - 1 {
                hz[i * n + j] -=
                    0.7 * (ex[i * n + j + 1] - ex[i * n + j] + ey[(i + 1) * n + j] - ey[i * n + j]);
            }
        }
    }
}
