//! The direct kernels against the im2col + GEMM ones on geometries that
//! exercise vector tails, padding wider than the kernel's reach, dilation,
//! row strides, groups, several register blocks and their remainders.

use super::*;
use crate::kernels::conv::{backward_input_gemm, backward_weight_gemm, forward_gemm};

/// `(n, c, h, w, o, kh, kw, stride, padding, dilation, groups)`.
type Case = (
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    [usize; 2],
    [usize; 2],
    [usize; 2],
    usize,
);

const CASES: &[Case] = &[
    // LeNet's two layers.
    (3, 1, 28, 28, 6, 5, 5, [1, 1], [2, 2], [1, 1], 1),
    (3, 6, 14, 14, 16, 5, 5, [1, 1], [0, 0], [1, 1], 1),
    // Rows of 32 (two whole f32 vectors), 3x3 'same'.
    (2, 5, 9, 32, 13, 3, 3, [1, 1], [1, 1], [1, 1], 1),
    // Row stride, dilation, groups, one-sided padding.
    (2, 4, 11, 19, 6, 3, 2, [2, 1], [1, 0], [1, 2], 2),
    (1, 6, 7, 20, 9, 3, 3, [1, 1], [2, 1], [2, 1], 3),
    // Padding past the kernel's reach (the input gradient goes to GEMM)
    // and a 1-d convolution.
    (2, 2, 5, 6, 3, 2, 2, [1, 1], [2, 2], [1, 1], 1),
    (3, 3, 1, 40, 7, 1, 9, [1, 1], [0, 4], [1, 1], 1),
    // Horizontal strides: the phase-split rows, with dilation and a
    // pointwise kernel.
    (2, 5, 12, 33, 7, 3, 3, [2, 2], [1, 1], [1, 1], 1),
    (1, 3, 9, 40, 5, 3, 4, [1, 3], [0, 2], [1, 2], 1),
    (2, 6, 8, 17, 9, 1, 1, [2, 2], [0, 0], [1, 1], 1),
    // Channel-vector blocks: 8x8 planes of 64 and of 40 channels (vector
    // and block tails), strided, and pixel counts off the block size.
    (2, 8, 8, 8, 64, 3, 3, [1, 1], [1, 1], [1, 1], 1),
    (1, 5, 7, 9, 40, 3, 3, [2, 2], [1, 1], [1, 1], 1),
    (2, 6, 11, 10, 23, 3, 3, [2, 3], [0, 1], [1, 1], 1),
    (1, 4, 6, 6, 18, 2, 2, [1, 1], [1, 1], [2, 1], 2),
    // Depthwise, and a single sample (channel blocks split across threads).
    (2, 8, 10, 17, 8, 3, 3, [1, 1], [1, 1], [1, 1], 8),
    (1, 3, 6, 18, 14, 3, 3, [1, 1], [1, 1], [1, 1], 1),
];

fn geom(c: &Case) -> Geom {
    let &(n, c, h, w, o, kh, kw, stride, padding, dilation, groups) = c;
    Geom {
        n,
        c,
        h,
        w,
        o,
        kh,
        kw,
        oh: (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1,
        ow: (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1,
        stride,
        padding,
        dilation,
        groups,
    }
}

fn values<T: Float>(n: usize, mul: usize, modulo: usize) -> Vec<T> {
    (0..n)
        .map(|i| <T as Element>::from_f64(((i * mul % modulo) as f64) - (modulo / 2) as f64))
        .collect()
}

fn close<T: Float>(a: &[T], b: &[T], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (x, y) = (Element::to_f64(*x), Element::to_f64(*y));
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

/// The kernels this CPU can run: each ISA's row blocks, the widest first,
/// and with AVX-512 the channel-vector blocks (`true`).
fn kernels<T: Element>() -> Vec<(Isa, bool)> {
    match available_isa::<T>() {
        Some(Isa::Avx512) => vec![
            (Isa::Avx512, true),
            (Isa::Avx512, false),
            (Isa::Avx2, false),
        ],
        Some(isa) => vec![(isa, false)],
        None => Vec::new(),
    }
}

fn check<T: Float>(tol: f64) {
    for (isa, channels) in kernels::<T>() {
        for threads in [1, 2] {
            crate::kernels::parallel::set_num_threads(threads).unwrap();
            for case in CASES {
                check_case::<T>(isa, channels, case, tol, threads);
            }
        }
    }
}

fn check_case<T: Float>(isa: Isa, channels: bool, case: &Case, tol: f64, threads: usize) {
    let g = geom(case);
    let what = format!("{g:?} with {isa:?} (channels: {channels}) on {threads} threads");
    let x: Vec<T> = values(g.n * g.c * g.h * g.w, 7, 11);
    let w: Vec<T> = values(g.o * g.c / g.groups * g.kh * g.kw, 5, 9);
    let gy: Vec<T> = values(g.n * g.o * g.oh * g.ow, 3, 7);
    let b: Vec<T> = values(g.o, 1, 5);
    if forward_fits::<T>(&g).is_some() {
        close(
            &forward_with(isa, &g, &x, &w, None, channels),
            &forward_gemm(&g, &x, &w, None),
            tol,
            &what,
        );
        close(
            &forward_with(isa, &g, &x, &w, Some(&b), channels),
            &forward_gemm(&g, &x, &w, Some(&b)),
            tol,
            &what,
        );
        let want = backward_weight_gemm(&g, &x, &gy);
        let got = if channels {
            backward_weight_channels(&g, &x, &gy)
        } else {
            backward_weight_rows(isa, &g, &x, &gy)
        };
        close(&got, &want, tol, &what);
    }
    if backward_input_fits::<T>(&g).is_some() {
        let bc: Vec<T> = values(g.c, 1, 3);
        let want = backward_input_gemm(&g, &gy, &w, Some(&bc));
        close(
            &backward_input_with(isa, &g, &gy, &w, Some(&bc), channels),
            &want,
            tol,
            &what,
        );
    }
}

/// Integer-valued float64 data: both paths are exact, so they agree exactly.
#[test]
fn direct_kernels_match_gemm_f64() {
    check::<f64>(0.0);
}

#[test]
fn direct_kernels_match_gemm_f32() {
    check::<f32>(1e-6);
}

/// A stride far wider than the image (the fuzz suite passes 2^31) would
/// make phase-split rows of `stride` elements: such layers stay with GEMM.
#[test]
fn huge_strides_stay_with_gemm() {
    let g = geom(&(3, 1, 1, 4, 1, 2, 1, [1 << 31, 1 << 31], [1, 1], [2, 2], 1));
    assert!(forward_pays::<f32>(&g).is_none());
    assert!(backward_weight_pays::<f32>(&g).is_none());
    assert!(backward_input_pays::<f32>(&g).is_none());
    let g = geom(&(2, 5, 12, 33, 7, 3, 3, [2, 2], [1, 1], [1, 1], 1));
    assert_eq!(forward_fits::<f32>(&g), available_isa::<f32>());
}
