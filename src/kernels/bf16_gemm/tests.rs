//! Every path against a float64 reference of the bfloat16 inputs, within
//! the bound in the module documentation, and against each other.

use super::*;

/// xorshift64: reproducible values without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A bfloat16 of either sign with magnitude in [2^-4, 2^4), or zero
    /// one time in sixteen.
    fn bf16(&mut self) -> u16 {
        if self.next().is_multiple_of(16) {
            return 0;
        }
        let e = (self.next() % 8) as i32 - 4;
        let x = (1.0 + self.unit()) * 2f64.powi(e);
        let x = if self.next().is_multiple_of(2) { x } else { -x };
        f32_to_bf16(x as f32)
    }
}

fn paths() -> Vec<Path> {
    Path::ALL.into_iter().filter(|p| p.available()).collect()
}

/// How an operand sits in memory.
#[derive(Clone, Copy, Debug)]
enum Layout {
    RowMajor,
    /// Stored transposed (column-major): `x.t()` of a row-major matrix.
    ColMajor,
    /// Row-major inside a wider buffer, every other column.
    Strided,
}

const LAYOUTS: [Layout; 3] = [Layout::RowMajor, Layout::ColMajor, Layout::Strided];

/// `vals` (row-major `rows x cols`) laid out as `layout`: buffer, strides.
fn lay_out<T: Copy + Default>(
    vals: &[T],
    rows: usize,
    cols: usize,
    layout: Layout,
) -> (Vec<T>, usize, usize) {
    let (rs, cs, len) = match layout {
        Layout::RowMajor => (cols, 1, rows * cols),
        Layout::ColMajor => (1, rows, rows * cols),
        Layout::Strided => (2 * cols + 3, 2, rows * (2 * cols + 3)),
    };
    let mut buf = vec![T::default(); len.max(1)];
    for i in 0..rows {
        for j in 0..cols {
            buf[i * rs + j * cs] = vals[i * cols + j];
        }
    }
    (buf, rs, cs)
}

fn read_back<T: Copy>(buf: &[T], rows: usize, cols: usize, rs: usize, cs: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        for j in 0..cols {
            v.push(buf[i * rs + j * cs]);
        }
    }
    v
}

/// `g(n) = n u / (1 - n u)` for float32.
fn gamma(n: usize) -> f64 {
    let nu = n as f64 * 2f64.powi(-24);
    nu / (1.0 - nu)
}

/// The exact result (float64 is exact for these sums of bfloat16 products
/// up to its own rounding, far below the bound) and the documented bound.
struct Reference {
    value: Vec<f64>,
    bound: Vec<f64>,
}

#[allow(clippy::too_many_arguments)]
fn reference(
    a: &[u16],
    b: &[u16],
    c0: &[f32],
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    beta: f32,
) -> Reference {
    let (al, be) = (alpha as f64, beta as f64);
    let sub = |h: u16| h & 0x7f80 == 0 && h & 0x7f != 0;
    let mut value = vec![0.0; m * n];
    let mut bound = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut abs, mut daz) = (0.0f64, 0.0f64, 0.0f64);
            for p in 0..k {
                let (x, y) = (a[i * k + p], b[p * n + j]);
                let t = bf16_to_f32(x) as f64 * bf16_to_f32(y) as f64;
                s += t;
                abs += t.abs();
                if sub(x) || sub(y) {
                    daz += t.abs();
                }
            }
            let c = if beta == 0.0 {
                0.0
            } else {
                c0[i * n + j] as f64
            };
            value[i * n + j] = al * s + be * c;
            bound[i * n + j] = gamma(k + k.div_ceil(64) + 3) * (al.abs() * abs + (be * c).abs())
                + (al.abs() + 1.0) * (k + 3) as f64 * 2f64.powi(-126)
                + al.abs() * daz;
        }
    }
    Reference { value, bound }
}

/// Runs one product with every layout given, returning C row-major.
#[allow(clippy::too_many_arguments)]
fn run(
    path: Path,
    parallel: bool,
    (a, b, c0): (&[u16], &[u16], &[f32]),
    (m, k, n): (usize, usize, usize),
    (la, lb, lc): (Layout, Layout, Layout),
    alpha: f32,
    beta: f32,
    bf16_out: bool,
) -> Vec<f32> {
    let (abuf, ars, acs) = lay_out(a, m, k, la);
    let (bbuf, brs, bcs) = lay_out(b, k, n, lb);
    let am = MatRef::new(&abuf, m, k, ars, acs);
    let bm = MatRef::new(&bbuf, k, n, brs, bcs);
    if bf16_out {
        let c16: Vec<u16> = c0.iter().map(|&x| f32_to_bf16(x)).collect();
        let (mut cbuf, rs, cs) = lay_out(&c16, m, n, lc);
        gemm_bf16_with(
            path,
            parallel,
            am,
            bm,
            Out::Bf16(MatMut::new(&mut cbuf, m, n, rs, cs)),
            alpha,
            beta,
        );
        read_back(&cbuf, m, n, rs, cs)
            .into_iter()
            .map(bf16_to_f32)
            .collect()
    } else {
        let (mut cbuf, rs, cs) = lay_out(c0, m, n, lc);
        gemm_bf16_with(
            path,
            parallel,
            am,
            bm,
            Out::F32(MatMut::new(&mut cbuf, m, n, rs, cs)),
            alpha,
            beta,
        );
        read_back(&cbuf, m, n, rs, cs)
    }
}

const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 5, 1),
    (0, 3, 4),
    (3, 0, 4),
    (3, 4, 0),
    (2, 1, 3),
    (7, 3, 5),
    (17, 31, 33),
    (33, 64, 47),
    (8, 256, 48),
    (9, 257, 49),
    (40, 600, 70),
    (64, 1030, 33),
    (130, 96, 300),
    (300, 40, 130),
    (1, 700, 300),
    (300, 700, 1),
    // Results large enough for non-temporal stores.
    (1024, 6, 1024),
    (1030, 5, 1030),
];

const SCALES: [(f32, f32); 4] = [(1.0, 0.0), (1.0, 1.0), (-0.75, 0.5), (2.0, 0.0)];

#[test]
fn every_path_is_within_the_bound_and_the_paths_agree() {
    crate::kernels::parallel::set_num_threads(2).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (si, &(m, k, n)) in SHAPES.iter().enumerate() {
        let a: Vec<u16> = (0..m * k).map(|_| rng.bf16()).collect();
        let b: Vec<u16> = (0..k * n).map(|_| rng.bf16()).collect();
        // Start values that are bfloat16 already, so both outputs start alike.
        let c0: Vec<f32> = (0..m * n).map(|_| bf16_to_f32(rng.bf16())).collect();
        for (li, (la, lb)) in LAYOUTS
            .iter()
            .flat_map(|&x| LAYOUTS.iter().map(move |&y| (x, y)))
            .enumerate()
        {
            let lc = LAYOUTS[(li + si) % 3];
            let (alpha, beta) = SCALES[(li + si) % 4];
            let want = reference(&a, &b, &c0, m, k, n, alpha, beta);
            let mut results = Vec::new();
            for path in paths() {
                for bf16_out in [false, true] {
                    let got = run(
                        path,
                        true,
                        (&a, &b, &c0),
                        (m, k, n),
                        (la, lb, lc),
                        alpha,
                        beta,
                        bf16_out,
                    );
                    let what = format!("{path:?} {m}x{k}x{n} {la:?} {lb:?} {lc:?} alpha={alpha} beta={beta} bf16={bf16_out}");
                    for (e, g) in got.iter().enumerate() {
                        let (w, bd) = (want.value[e], want.bound[e]);
                        // A bfloat16 result adds one rounding of the float32 one.
                        let bd = if bf16_out {
                            bd + 2f64.powi(-8) * (w.abs() + bd) + 2f64.powi(-133)
                        } else {
                            bd
                        };
                        assert!(
                            (*g as f64 - w).abs() <= bd,
                            "{what} at {e}: got {g}, want {w} +- {bd}"
                        );
                    }
                    if !bf16_out {
                        results.push((path, got));
                    }
                }
            }
            // The paths agree within one bound (not just two).
            for (p, x) in &results {
                for (q, y) in &results {
                    for (e, (u, v)) in x.iter().zip(y).enumerate() {
                        assert!(
                            (u - v).abs() as f64 <= want.bound[e],
                            "{p:?} vs {q:?} {m}x{k}x{n} at {e}: {u} vs {v}"
                        );
                    }
                }
            }
        }
    }
}

/// A bfloat16 result is the float32 one rounded once, and the instruction
/// paths' bits do not depend on the thread count or the operands' layout.
#[test]
fn bfloat16_output_is_the_float32_result_rounded_and_bits_are_stable() {
    crate::kernels::parallel::set_num_threads(3).unwrap();
    let mut rng = Rng(77);
    for &(m, k, n) in &[
        (5, 9, 7),
        (70, 300, 90),
        (129, 1100, 65),
        (40, 2, 700),
        (1024, 40, 1024),
    ] {
        let a: Vec<u16> = (0..m * k).map(|_| rng.bf16()).collect();
        let b: Vec<u16> = (0..k * n).map(|_| rng.bf16()).collect();
        let c0 = vec![f32::NAN; m * n];
        let row = (Layout::RowMajor, Layout::RowMajor, Layout::RowMajor);
        for path in paths() {
            let f = run(path, true, (&a, &b, &c0), (m, k, n), row, 1.0, 0.0, false);
            let h = run(path, true, (&a, &b, &c0), (m, k, n), row, 1.0, 0.0, true);
            for (x, y) in f.iter().zip(&h) {
                assert_eq!(f32_to_bf16(*x), f32_to_bf16(*y), "{path:?} {m}x{k}x{n}");
            }
            if path == Path::Portable {
                continue;
            }
            let serial = run(path, false, (&a, &b, &c0), (m, k, n), row, 1.0, 0.0, false);
            let moved = (Layout::ColMajor, Layout::Strided, Layout::ColMajor);
            let other = run(path, true, (&a, &b, &c0), (m, k, n), moved, 1.0, 0.0, false);
            for ((x, y), z) in f.iter().zip(&serial).zip(&other) {
                assert_eq!(x.to_bits(), y.to_bits(), "{path:?} {m}x{k}x{n} serial");
                assert_eq!(x.to_bits(), z.to_bits(), "{path:?} {m}x{k}x{n} layout");
            }
        }
    }
}

/// NaN, infinity and overflow behave as float32 accumulation: the sums
/// here have one outcome in any order of addition.
#[test]
fn nan_and_overflow_propagate_as_in_float32() {
    let (m, k, n) = (6, 40, 5);
    let mut rng = Rng(5);
    // Positive, normal values so only the planted ones misbehave.
    let pos = |rng: &mut Rng| f32_to_bf16((1.0 + rng.unit()) as f32);
    let mut a: Vec<u16> = (0..m * k).map(|_| pos(&mut rng)).collect();
    let mut b: Vec<u16> = (0..k * n).map(|_| pos(&mut rng)).collect();
    let big = f32_to_bf16(2f32.powi(64));
    a[0] = f32_to_bf16(f32::NAN); // row 0 all NaN
    for p in 0..k {
        a[k + p] = big; // row 1 times column 1 overflows per product
        b[p * n + 1] = big;
        // Row 2 times column 3: terms of 2^126 whose sum leaves the range.
        a[2 * k + p] = f32_to_bf16(2f32.powi(63));
        b[p * n + 3] = f32_to_bf16(2f32.powi(63));
    }
    b[3 * n + 2] = f32_to_bf16(f32::INFINITY); // column 2: +inf, except...
    a[3 * k + 3] = 0; // ...row 3 meets it with 0: NaN
    a[4 * k + 7] = f32_to_bf16(f32::INFINITY); // row 4: inf - inf in column 4
    a[4 * k + 8] = f32_to_bf16(f32::INFINITY);
    b[7 * n + 4] = f32_to_bf16(1.0);
    b[8 * n + 4] = f32_to_bf16(-1.0);
    let mut c0 = vec![1.0f32; m * n];
    c0[5 * n] = f32::NAN; // read only when beta != 0
    for path in paths() {
        for beta in [0.0f32, 1.0] {
            let lay = (Layout::RowMajor, Layout::ColMajor, Layout::RowMajor);
            let got = run(path, true, (&a, &b, &c0), (m, k, n), lay, 1.0, beta, false);
            for i in 0..m {
                for j in 0..n {
                    // Float32 accumulation in order, as the reference.
                    let mut s = 0f32;
                    for p in 0..k {
                        s += bf16_to_f32(a[i * k + p]) * bf16_to_f32(b[p * n + j]);
                    }
                    let want = if beta == 0.0 {
                        s
                    } else {
                        s + beta * c0[i * n + j]
                    };
                    let g = got[i * n + j];
                    let what = format!("{path:?} beta={beta} at ({i}, {j}): got {g}, want {want}");
                    if want.is_nan() {
                        assert!(g.is_nan(), "{what}");
                    } else if want.is_infinite() {
                        assert_eq!(g, want, "{what}");
                    } else {
                        assert!(((g - want) / want).abs() < 1e-5, "{what}");
                    }
                }
            }
            assert!(got[0..n].iter().all(|x| x.is_nan()));
            assert_eq!(got[n + 1], f32::INFINITY);
            assert_eq!(got[2 * n + 3], f32::INFINITY);
            assert!(got[3 * n + 2].is_nan());
            assert!(got[4 * n + 4].is_nan());
            assert_eq!(got[5 * n].is_nan(), beta != 0.0);
        }
    }
}

/// bfloat16 subnormal inputs: within the bound's allowance for the
/// instructions reading them as zero.
#[test]
fn subnormal_inputs_stay_within_the_bound() {
    let (m, k, n) = (9, 70, 20);
    let mut rng = Rng(11);
    let a: Vec<u16> = (0..m * k)
        .map(|i| {
            if i % 3 == 0 {
                (rng.next() % 0x7f + 1) as u16
            } else {
                rng.bf16()
            }
        })
        .collect();
    let b: Vec<u16> = (0..k * n).map(|_| rng.bf16()).collect();
    let c0 = vec![0f32; m * n];
    let want = reference(&a, &b, &c0, m, k, n, 1.0, 0.0);
    for path in paths() {
        let lay = (Layout::RowMajor, Layout::RowMajor, Layout::RowMajor);
        let got = run(path, true, (&a, &b, &c0), (m, k, n), lay, 1.0, 0.0, false);
        for (e, g) in got.iter().enumerate() {
            assert!(
                (*g as f64 - want.value[e]).abs() <= want.bound[e],
                "{path:?} at {e}"
            );
        }
    }
}

/// No terms (`k == 0`) or `alpha == 0`: `C = beta * C`, `A` and `B` unread.
#[test]
fn an_empty_sum_scales_c() {
    let a = vec![f32_to_bf16(f32::NAN); 6];
    let b = vec![f32_to_bf16(f32::NAN); 6];
    for path in paths() {
        let mut c = vec![1.5f32, f32::NAN, -2.0, 4.0];
        let am = MatRef::row_major(&a, 2, 0);
        let bm = MatRef::row_major(&b, 0, 2);
        gemm_bf16_with(
            path,
            true,
            am,
            bm,
            Out::F32(MatMut::row_major(&mut c, 2, 2)),
            1.0,
            2.0,
        );
        assert_eq!(c[0], 3.0);
        assert!(c[1].is_nan());
        assert_eq!(&c[2..], &[-4.0, 8.0]);
        gemm_bf16_with(
            path,
            true,
            am,
            bm,
            Out::F32(MatMut::row_major(&mut c, 2, 2)),
            1.0,
            0.0,
        );
        assert_eq!(c, vec![0.0; 4]);
        let mut h = vec![f32_to_bf16(3.0); 4];
        let (am, bm) = (MatRef::row_major(&a, 2, 3), MatRef::row_major(&b, 3, 2));
        gemm_bf16_with(
            path,
            true,
            am,
            bm,
            Out::Bf16(MatMut::row_major(&mut h, 2, 2)),
            0.0,
            -1.0,
        );
        assert_eq!(h, vec![f32_to_bf16(-3.0); 4]);
    }
}

#[test]
#[should_panic(expected = "map two elements")]
fn an_aliasing_destination_is_refused() {
    let mut c = vec![0f32; 10];
    let _ = MatMut::new(&mut c, 3, 3, 2, 1);
}

#[test]
#[should_panic(expected = "reaches past")]
fn a_view_past_its_buffer_is_refused() {
    let a = vec![0u16; 10];
    let _ = MatRef::new(&a, 3, 4, 4, 1);
}

#[test]
#[should_panic(expected = "do not chain")]
fn shapes_that_do_not_chain_are_refused() {
    let (a, b, mut c) = (vec![0u16; 6], vec![0u16; 6], vec![0f32; 4]);
    gemm_bf16(
        MatRef::row_major(&a, 2, 3),
        MatRef::row_major(&b, 2, 3),
        MatMut::row_major(&mut c, 2, 2),
        1.0,
        0.0,
    );
}
