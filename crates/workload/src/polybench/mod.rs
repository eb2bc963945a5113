//! PolyBench-style numeric kernels (seed 000, Table 1) whose arrays live in memory the caller
//! provides, so a command can place them on any pmscope target.
//!
//! Each kernel is written from the published mathematical definition of its PolyBench
//! namesake, in two variants: [`Variant::Ref`] (the textbook loop order) and [`Variant::Opt`]
//! (locality-optimised: loop interchange and tiling where they apply). A kernel says how many
//! `f64` elements each of its arrays needs for a [`Preset`] ([`Kernel::layout`]); the caller
//! provides one `&mut [f64]` of [`Layout::total`] elements and [`carve`] splits it.
//!
//! Adding a kernel is one entry in [`KERNELS`] (plus its functions in the family file).
//!
//! ```
//! use pmscope_workload::polybench::{find, Preset, Variant, carve};
//! let k = find("gemm").unwrap();
//! let layout = k.layout(Preset::Mini);
//! let mut buf = vec![0.0; layout.total()];
//! let sum = k.execute(Preset::Mini, Variant::Opt, &mut buf);
//! assert!(sum.is_finite());
//! # let _ = carve;
//! ```

// Index loops mirror the kernels' mathematical definitions (subscripts i, j, k), which is
// what makes each variant checkable against its definition.
#![allow(clippy::needless_range_loop)]

mod blas;
mod medley;
mod solver;
mod stats;
mod stencil;

use std::fmt;
use std::str::FromStr;

/// Dataset size of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// Tiny: for tests of correctness.
    Mini,
    /// Small: fits in cache; for tests of correctness.
    Small,
    /// Arrays of several MiB to ~100 MiB, beyond the last-level cache, yet all 22 kernels in
    /// both variants finish in minutes on 2 cores.
    Medium,
    /// Larger arrays (hundreds of MiB for the quadratic kernels).
    Large,
    /// The data sizes of seed 000 Table 1 (49.5 to 1717 MiB per kernel): each kernel's n is
    /// the one whose arrays come closest to its Table 1 "Data Size MB" (which is MiB:
    /// gemm's 3 x 2000^2 doubles are 91.6). durbin keeps the large preset's n: its 1526 MB
    /// in the seed are PolyBench 3.2's n x n work arrays, which this durbin does not have
    /// (matching them with its three vectors would mean n = 6.7e7, O(n^2) work).
    Seed,
}

impl Preset {
    /// All presets, smallest first.
    pub const ALL: [Preset; 5] = [
        Preset::Mini,
        Preset::Small,
        Preset::Medium,
        Preset::Large,
        Preset::Seed,
    ];

    /// The preset's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Mini => "mini",
            Preset::Small => "small",
            Preset::Medium => "medium",
            Preset::Large => "large",
            Preset::Seed => "seed",
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!("unknown preset `{s}`; use one of mini, small, medium, large, seed")
            })
    }
}

/// Which loop order a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The textbook loop order of the mathematical definition.
    Ref,
    /// Locality-optimised: interchange and tiling where dependences allow.
    Opt,
}

impl Variant {
    /// The variant's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Ref => "ref",
            Variant::Opt => "opt",
        }
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ref" => Ok(Variant::Ref),
            "opt" => Ok(Variant::Opt),
            _ => Err(format!("unknown variant `{s}`; use ref or opt")),
        }
    }
}

/// How a kernel's memory and work grow with its size parameter; picks the preset sizes.
#[derive(Clone, Copy, Debug)]
enum Class {
    /// O(n^3) work on n x n matrices (gemm, lu, ...).
    Cubic,
    /// O(n^2) work on n x n matrices (mvt, gemver, trisolv, durbin's vectors, ...).
    Quadratic,
    /// Time-stepped stencils on n x n grids (or n-vectors for jacobi-1d).
    Stencil,
    /// O(n^4) work on n^3 arrays (doitgen).
    Quartic,
}

impl Class {
    /// The size parameter n for a preset. Medium keeps the arrays beyond a typical LLC
    /// (tens of MiB) for the quadratic and stencil kernels and a few MiB per matrix for
    /// the cubic ones, whose O(n^3) time bounds the size.
    fn n(self, p: Preset) -> usize {
        use Preset::*;
        match (self, p) {
            (Class::Cubic, Mini) => 12,
            (Class::Cubic, Small) => 40,
            (Class::Cubic, Medium) => 600,
            (Class::Cubic, Large) => 1200,
            (Class::Quadratic, Mini) => 20,
            (Class::Quadratic, Small) => 120,
            (Class::Quadratic, Medium) => 3000,
            (Class::Quadratic, Large) => 6000,
            (Class::Stencil, Mini) => 16,
            (Class::Stencil, Small) => 90,
            (Class::Stencil, Medium) => 2000,
            (Class::Stencil, Large) => 4000,
            (Class::Quartic, Mini) => 8,
            (Class::Quartic, Small) => 20,
            (Class::Quartic, Medium) => 128,
            (Class::Quartic, Large) => 200,
            // Seed sizes come from Table 1 (`Kernel::layout`); a kernel without one keeps
            // the large size.
            (class, Seed) => class.n(Large),
        }
    }
}

/// Time steps of the stencil kernels.
pub(crate) const STEPS: usize = 10;

/// Sizes (in f64 elements) of a kernel's arrays, in the order the kernel carves them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The size parameter the preset gave the kernel.
    pub n: usize,
    /// Element count of each array.
    pub arrays: Vec<usize>,
}

impl Layout {
    /// Elements in all arrays together.
    pub fn total(&self) -> usize {
        self.arrays.iter().sum()
    }
    /// Bytes the caller must provide.
    pub fn bytes(&self) -> usize {
        self.total() * size_of::<f64>()
    }
}

/// One kernel: its name, size class, array layout and the two variants.
pub struct Kernel {
    /// PolyBench's name for it.
    pub name: &'static str,
    class: Class,
    /// Its data size in seed 000 Table 1, MiB (what [`Preset::Seed`] matches).
    seed_mib: Option<f64>,
    arrays: fn(usize) -> Vec<usize>,
    init: fn(usize, &mut [&mut [f64]]),
    run: fn(usize, Variant, &mut [&mut [f64]]),
    /// Indices of the arrays holding the result (summed into the checksum).
    outputs: &'static [usize],
}

impl Kernel {
    /// The arrays this kernel needs at a preset.
    pub fn layout(&self, p: Preset) -> Layout {
        let n = match (p, self.seed_mib) {
            (Preset::Seed, Some(mib)) => self.n_for_bytes((mib * f64::from(1 << 20)) as usize),
            _ => self.class.n(p),
        };
        Layout {
            n,
            arrays: (self.arrays)(n),
        }
    }

    /// Its data size in seed 000 Table 1, in bytes, where [`Preset::Seed`] matches it.
    pub fn seed_bytes(&self) -> Option<u64> {
        self.seed_mib.map(|m| (m * f64::from(1 << 20)) as u64)
    }

    /// The n whose arrays come closest to `bytes` (every layout grows with n).
    fn n_for_bytes(&self, bytes: usize) -> usize {
        let size = |n: usize| (self.arrays)(n).iter().sum::<usize>() * size_of::<f64>();
        // The largest n at or below the target, by bisection, then it or the next one.
        let (mut lo, mut hi) = (1usize, 1usize);
        while size(hi) <= bytes {
            lo = hi;
            hi *= 2;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if size(mid) <= bytes {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if bytes - size(lo).min(bytes) <= size(lo + 1) - bytes {
            lo
        } else {
            lo + 1
        }
    }

    /// Initialises the arrays in `buf` (which must hold exactly `layout(p).total()`
    /// elements) deterministically, runs the variant and returns the checksum of the result.
    ///
    /// # Panics
    /// If `buf` has the wrong length (a caller bug).
    pub fn execute(&self, p: Preset, v: Variant, buf: &mut [f64]) -> f64 {
        self.prepare(p, buf);
        self.compute(p, v, buf);
        self.checksum(p, buf)
    }

    /// Deterministic initialisation of all arrays.
    pub fn prepare(&self, p: Preset, buf: &mut [f64]) {
        let layout = self.layout(p);
        let mut arrays = carve(buf, &layout.arrays);
        (self.init)(layout.n, &mut arrays);
    }

    /// Runs the kernel on prepared arrays (the part a command times).
    pub fn compute(&self, p: Preset, v: Variant, buf: &mut [f64]) {
        let layout = self.layout(p);
        let mut arrays = carve(buf, &layout.arrays);
        (self.run)(layout.n, v, &mut arrays);
    }

    /// A position-weighted sum of the output arrays, so a permuted result differs.
    pub fn checksum(&self, p: Preset, buf: &mut [f64]) -> f64 {
        let layout = self.layout(p);
        let arrays = carve(buf, &layout.arrays);
        self.outputs
            .iter()
            .flat_map(|&a| arrays[a].iter().enumerate())
            .map(|(i, x)| x * (1.0 + (i % 7) as f64))
            .sum()
    }
}

/// Splits `buf` into consecutive arrays of the given element counts.
///
/// # Panics
/// If `buf` does not hold exactly their sum (a caller bug, not an input error).
pub fn carve<'a>(mut buf: &'a mut [f64], sizes: &[usize]) -> Vec<&'a mut [f64]> {
    assert_eq!(
        buf.len(),
        sizes.iter().sum::<usize>(),
        "buffer does not match the kernel's layout"
    );
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes {
        let (head, tail) = std::mem::take(&mut buf).split_at_mut(s);
        out.push(head);
        buf = tail;
    }
    out
}

/// Deterministic initial value of element `i` of array `a`: in [0.1, 1.1), no RNG so results
/// are the same everywhere.
pub(crate) fn fill(a: &mut [f64], salt: usize) {
    for (i, x) in a.iter_mut().enumerate() {
        *x = 0.1 + ((i * 7 + salt * 13 + 1) % 101) as f64 / 101.0;
    }
}

/// Tile edge for the tiled variants: 32 x 32 f64 = 8 KiB per tile, three tiles fit in L1.
pub(crate) const TILE: usize = 32;

/// All kernels, in the order of seed 000 Table 1.
pub static KERNELS: &[Kernel] = &[
    Kernel {
        name: "gemm",
        class: Class::Cubic,
        seed_mib: Some(91.6),
        arrays: blas::three_sq,
        init: blas::init_all,
        run: blas::gemm,
        outputs: &[0],
    },
    Kernel {
        name: "3mm",
        class: Class::Cubic,
        seed_mib: Some(120.2),
        arrays: blas::seven_sq,
        init: blas::init_all,
        run: blas::three_mm,
        outputs: &[6],
    },
    Kernel {
        name: "2mm",
        class: Class::Cubic,
        seed_mib: Some(85.8),
        arrays: blas::five_sq,
        init: blas::init_all,
        run: blas::two_mm,
        outputs: &[4],
    },
    Kernel {
        name: "correlation",
        class: Class::Cubic,
        seed_mib: Some(137.4),
        arrays: stats::layout,
        init: stats::init,
        run: stats::correlation,
        outputs: &[1],
    },
    Kernel {
        name: "covariance",
        class: Class::Cubic,
        seed_mib: Some(49.5),
        arrays: stats::layout,
        init: stats::init,
        run: stats::covariance,
        outputs: &[1],
    },
    Kernel {
        name: "mvt",
        class: Class::Quadratic,
        seed_mib: Some(1717.1),
        arrays: blas::mvt_layout,
        init: blas::init_all,
        run: blas::mvt,
        outputs: &[1, 2],
    },
    Kernel {
        name: "gemver",
        class: Class::Quadratic,
        seed_mib: Some(1717.4),
        arrays: blas::gemver_layout,
        init: blas::init_all,
        run: blas::gemver,
        outputs: &[0, 7],
    },
    Kernel {
        name: "jacobi-1d",
        class: Class::Quadratic,
        seed_mib: Some(152.6),
        arrays: stencil::jacobi1d_layout,
        init: blas::init_all,
        run: stencil::jacobi_1d,
        outputs: &[0],
    },
    Kernel {
        name: "doitgen",
        class: Class::Quartic,
        seed_mib: Some(512.5),
        arrays: blas::doitgen_layout,
        init: blas::init_all,
        run: blas::doitgen,
        outputs: &[0],
    },
    Kernel {
        name: "gramschmidt",
        class: Class::Cubic,
        seed_mib: Some(91.6),
        arrays: solver::gramschmidt_layout,
        init: solver::gramschmidt_init,
        run: solver::gramschmidt,
        outputs: &[1, 2],
    },
    Kernel {
        name: "fdtd-2d",
        class: Class::Stencil,
        seed_mib: Some(1464.8),
        arrays: stencil::fdtd_layout,
        init: blas::init_all,
        run: stencil::fdtd_2d,
        outputs: &[0, 1, 2],
    },
    Kernel {
        name: "syrk",
        class: Class::Cubic,
        seed_mib: Some(61.0),
        arrays: blas::two_sq,
        init: blas::init_all,
        run: blas::syrk,
        outputs: &[0],
    },
    Kernel {
        name: "jacobi-2d",
        class: Class::Stencil,
        seed_mib: Some(976.6),
        arrays: stencil::two_grids,
        init: blas::init_all,
        run: stencil::jacobi_2d,
        outputs: &[0],
    },
    Kernel {
        name: "syr2k",
        class: Class::Cubic,
        seed_mib: Some(91.6),
        arrays: blas::three_sq,
        init: blas::init_all,
        run: blas::syr2k,
        outputs: &[0],
    },
    Kernel {
        name: "symm",
        class: Class::Cubic,
        seed_mib: Some(91.6),
        arrays: blas::three_sq,
        init: blas::init_all,
        run: blas::symm,
        outputs: &[0],
    },
    Kernel {
        name: "dynprog",
        class: Class::Cubic,
        seed_mib: Some(245.4),
        arrays: medley::dynprog_layout,
        init: blas::init_all,
        run: medley::dynprog,
        outputs: &[0],
    },
    Kernel {
        name: "durbin",
        class: Class::Quadratic,
        seed_mib: None,
        arrays: solver::durbin_layout,
        init: solver::durbin_init,
        run: solver::durbin,
        outputs: &[1],
    },
    Kernel {
        name: "seidel-2d",
        class: Class::Stencil,
        seed_mib: Some(190.7),
        arrays: stencil::one_grid,
        init: blas::init_all,
        run: stencil::seidel_2d,
        outputs: &[0],
    },
    Kernel {
        name: "trisolv",
        class: Class::Quadratic,
        seed_mib: Some(1716.8),
        arrays: solver::trisolv_layout,
        init: solver::lower_init,
        run: solver::trisolv,
        outputs: &[1],
    },
    Kernel {
        name: "cholesky",
        class: Class::Cubic,
        seed_mib: Some(122.1),
        arrays: solver::one_sq,
        init: solver::spd_init,
        run: solver::cholesky,
        outputs: &[0],
    },
    Kernel {
        name: "lu",
        class: Class::Cubic,
        seed_mib: Some(122.1),
        arrays: solver::one_sq,
        init: solver::spd_init,
        run: solver::lu,
        outputs: &[0],
    },
    Kernel {
        name: "reg_detect",
        class: Class::Stencil,
        seed_mib: Some(381.6),
        arrays: medley::reg_layout,
        init: blas::init_all,
        run: medley::reg_detect,
        outputs: &[4],
    },
];

/// The kernel of that name.
pub fn find(name: &str) -> Option<&'static Kernel> {
    KERNELS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests;
