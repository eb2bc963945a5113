use super::*;

/// Relative tolerance for ref vs opt checksums. The variants add the same terms in a
/// different order (interchange, tiling), so each sum carries a rounding error of about
/// n * 2^-53 relative to its magnitude; the factorisations can amplify that by the
/// condition number, which the diagonally dominant inputs keep small. 1e-9 is many orders
/// above those errors at mini/small sizes yet catches any wrong index or missing term.
const TOLERANCE: f64 = 1e-9;

fn agree(k: &Kernel, p: Preset) {
    let mut buf = vec![0.0; k.layout(p).total()];
    let r = k.execute(p, Variant::Ref, &mut buf);
    let o = k.execute(p, Variant::Opt, &mut buf);
    assert!(r.is_finite() && r != 0.0, "{} {p}: checksum {r}", k.name);
    let rel = (r - o).abs() / r.abs();
    assert!(
        rel <= TOLERANCE,
        "{} {p}: ref {r} vs opt {o} (relative {rel:e})",
        k.name
    );
}

#[test]
fn every_kernel_agrees_at_mini_and_small() {
    for k in KERNELS {
        agree(k, Preset::Mini);
        agree(k, Preset::Small);
    }
}

#[test]
fn the_seed_table_has_22_distinct_kernels() {
    assert_eq!(KERNELS.len(), 22);
    let mut names: Vec<_> = KERNELS.iter().map(|k| k.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 22);
}

#[test]
fn running_changes_the_result() {
    // The checksum reflects the computation, not only the initial values.
    for k in KERNELS {
        let p = Preset::Mini;
        let mut buf = vec![0.0; k.layout(p).total()];
        k.prepare(p, &mut buf);
        let before = k.checksum(p, &mut buf);
        k.compute(p, Variant::Ref, &mut buf);
        assert_ne!(before, k.checksum(p, &mut buf), "{}", k.name);
    }
}

#[test]
fn gemm_matches_a_hand_computed_product() {
    // 2 x 2 would need a custom preset; check one entry of mini's result directly.
    let k = find("gemm").unwrap();
    let p = Preset::Mini;
    let l = k.layout(p);
    let n = l.n;
    let mut buf = vec![0.0; l.total()];
    k.prepare(p, &mut buf);
    let (c0, a, b) = {
        let arr = carve(&mut buf, &l.arrays);
        (arr[0][n + 2], arr[1].to_vec(), arr[2].to_vec())
    };
    k.compute(p, Variant::Opt, &mut buf);
    let want = 1.2 * c0 + 1.5 * (0..n).map(|t| a[n + t] * b[t * n + 2]).sum::<f64>();
    assert!((buf[n + 2] - want).abs() < 1e-12);
}

#[test]
fn carve_splits_in_order() {
    let mut buf: Vec<f64> = (0..6).map(f64::from).collect();
    let parts = carve(&mut buf, &[1, 2, 3]);
    assert_eq!(parts[1], &[1.0, 2.0]);
    assert_eq!(parts[2], &[3.0, 4.0, 5.0]);
}

#[test]
fn presets_parse_and_reject() {
    assert_eq!("medium".parse::<Preset>(), Ok(Preset::Medium));
    assert!(
        "huge"
            .parse::<Preset>()
            .unwrap_err()
            .contains("unknown preset")
    );
}

#[test]
fn the_seed_preset_matches_table_1s_data_sizes() {
    for k in KERNELS {
        let got = k.layout(Preset::Seed).bytes() as f64;
        match k.seed_bytes() {
            Some(want) => {
                let rel = (got - want as f64).abs() / want as f64;
                assert!(rel < 0.01, "{}: {got} bytes vs Table 1's {want}", k.name);
            }
            None => assert_eq!(
                k.layout(Preset::Seed),
                k.layout(Preset::Large),
                "{}",
                k.name
            ),
        }
    }
    // gemm: Table 1's 91.6 MB are 3 x 2000^2 doubles (to the rounding of 91.6).
    let n = find("gemm").unwrap().layout(Preset::Seed).n;
    assert!((1999..=2001).contains(&n), "{n}");
    assert!(KERNELS.iter().filter(|k| k.seed_bytes().is_none()).count() == 1);
}

#[test]
fn presets_grow() {
    for k in KERNELS {
        let sizes: Vec<usize> = Preset::ALL.iter().map(|&p| k.layout(p).bytes()).collect();
        assert!(
            sizes.windows(2).take(3).all(|w| w[0] < w[1]),
            "{}: {sizes:?}",
            k.name
        );
    }
}

#[test]
fn time_skewed_jacobi_2d_computes_every_point_exactly_as_the_textbook_order() {
    // The wavefront gives each point the same operands in the same expression, so the
    // grids are equal bit for bit, not only within the checksum tolerance.
    let k = find("jacobi-2d").unwrap();
    for p in [Preset::Mini, Preset::Small] {
        let grid = |v: Variant| {
            let mut buf = vec![0.0; k.layout(p).total()];
            k.prepare(p, &mut buf);
            k.compute(p, v, &mut buf);
            buf
        };
        let (r, o) = (grid(Variant::Ref), grid(Variant::Opt));
        let differ = r
            .iter()
            .zip(&o)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differ, 0, "{p}: {differ} of {} values differ", r.len());
    }
}
