//! Matrix products through the `gemm` crate, which reads arbitrary strides
//! (so transposed operands need no copy) and dispatches SIMD at run time.
//! Each call into it is single-threaded; we split the result across our own
//! pool (see [`split`]).

use gemm::Parallelism;

use crate::tensor::Element;

/// A read-only strided matrix operand.
#[derive(Clone, Copy)]
pub struct Mat<T> {
    pub ptr: *const T,
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

/// Below this many multiply-adds the product runs on one thread.
const PARALLEL_WORK: usize = 48 * 48 * 48;

/// Where a product's result goes: element `(i, j)` at `ptr + i * rs + j * cs`,
/// replacing what is there or, with `add`, added to it.
#[derive(Clone, Copy)]
pub(crate) struct Dst<T> {
    pub(crate) ptr: *mut T,
    pub(crate) rs: usize,
    pub(crate) cs: usize,
    pub(crate) add: bool,
}

// SAFETY (both): the descriptors are plain pointers plus sizes; every task
// that receives one reads its operands and writes a disjoint block of `Dst`.
unsafe impl<T> Send for Mat<T> {}
unsafe impl<T> Sync for Mat<T> {}
unsafe impl<T> Send for Dst<T> {}
unsafe impl<T> Sync for Dst<T> {}

/// `out[m, n] = a[m, k] @ b[k, n]`, written row-major into `out`.
///
/// # Safety
/// `a` and `b` must describe valid strided matrices and `out` must hold
/// `a.rows * b.cols` elements.
pub unsafe fn gemm_into<T: Element>(a: Mat<T>, b: Mat<T>, out: *mut T, parallel: bool) {
    gemm_impl(a, b, out, parallel, false)
}

/// `out[m, n] += a[m, k] @ b[k, n]` (`addmm`: `out` holds the broadcast bias).
///
/// # Safety
/// As [`gemm_into`], and `out` must be initialised.
pub unsafe fn gemm_add_into<T: Element>(a: Mat<T>, b: Mat<T>, out: *mut T, parallel: bool) {
    gemm_impl(a, b, out, parallel, true)
}

/// `out[m, n] (+)= a[m, k] @ b[k, n]` with the rows of `out` `ld` elements
/// apart, so a product can fill a band of columns of a wider matrix.
///
/// # Safety
/// As [`gemm_into`], with `out` spanning `(a.rows - 1) * ld + b.cols`
/// elements (initialised when `add`).
pub unsafe fn gemm_ld_into<T: Element>(
    a: Mat<T>,
    b: Mat<T>,
    out: *mut T,
    ld: usize,
    add: bool,
    parallel: bool,
) {
    gemm_strided(a, b, out, ld, parallel, add)
}

unsafe fn gemm_impl<T: Element>(a: Mat<T>, b: Mat<T>, out: *mut T, parallel: bool, add: bool) {
    gemm_strided(a, b, out, b.cols, parallel, add)
}

unsafe fn gemm_strided<T: Element>(
    a: Mat<T>,
    b: Mat<T>,
    out: *mut T,
    ld: usize,
    parallel: bool,
    add: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !add {
            for i in 0..m {
                for j in 0..n {
                    *out.add(i * ld + j) = T::zero();
                }
            }
        }
        return;
    }
    let dst = Dst {
        ptr: out,
        rs: ld,
        cs: 1,
        add,
    };
    if super::small_gemm::try_run(a, b, dst) {
        return;
    }
    let work = if parallel && m * n * k >= PARALLEL_WORK {
        m * n * k
    } else {
        0
    };
    super::parallel::run(work, move |threads| {
        // SAFETY: forwarded from the caller's contract.
        unsafe {
            if threads > 1 {
                split(a, b, dst, threads)
            } else {
                block(a, b, dst)
            }
        }
    })
}

/// Cuts the result along its longer side into one block per thread, each a
/// single-threaded product. Measured against gemm's own splitting on two
/// cores: equal on large squares, up to 1.4x faster on the batch-128 shapes
/// of training (128x784 @ 784x512 and the transposed products of backward).
unsafe fn split<T: Element>(a: Mat<T>, b: Mat<T>, dst: Dst<T>, threads: usize) {
    let (m, n) = (a.rows, b.cols);
    // Block edges fall on whole vector registers / micro-tiles.
    let (len, align) = if m >= n { (m, 8) } else { (n, 16) };
    let chunk = len.div_ceil(threads).next_multiple_of(align);
    let parts = len.div_ceil(chunk);
    let part = |t: usize| {
        let lo = t * chunk;
        let hi = (lo + chunk).min(len);
        let (mut a, mut b, mut d) = (a, b, dst);
        if m >= n {
            a.ptr = a.ptr.wrapping_add(lo * a.row_stride);
            a.rows = hi - lo;
            d.ptr = d.ptr.wrapping_add(lo * d.rs);
        } else {
            b.ptr = b.ptr.wrapping_add(lo * b.col_stride);
            b.cols = hi - lo;
            d.ptr = d.ptr.wrapping_add(lo * d.cs);
        }
        // SAFETY: block `t` reads inside the operands and writes only its
        // own rows (or columns) of the destination.
        unsafe { block(a, b, d) }
    };
    super::parallel::tasks(parts, part);
}

/// One product on the calling thread.
unsafe fn block<T: Element>(a: Mat<T>, b: Mat<T>, dst: Dst<T>) {
    if !weight_transposed(&a, &b, &dst) {
        gemm_call(a, b, dst)
    } else if column_major_pays(&a, &b) {
        via_column_major(a, b, dst)
    } else {
        with_row_major(b, |b| unsafe { gemm_call(a, b, dst) })
    }
}

/// `x @ w.t()` (every `linear`): `b` column-major, `a` and the result
/// row-major. The gemm crate turns a row-major result into a column-major
/// one by swapping the operands, and then packs `w` with a transposing
/// gather amortised over only `m` columns: 2-3x slower than the same
/// product with `w.t()` laid out row-major, for `m` up to ~256 rows
/// (measured on a Zen 4: 64x1024 @ 1024x1024 4.1 ms against 1.35 ms).
/// Either form below keeps each element's chain of multiply-adds (and so
/// its bits): only which operand is packed changes, and neither takes the
/// crate's horizontal kernel for tiny results, which sums in another order.
fn weight_transposed<T: Element>(a: &Mat<T>, b: &Mat<T>, dst: &Dst<T>) -> bool {
    T::DTYPE.is_float()
        && dst.cs == 1
        && b.row_stride == 1
        && b.col_stride != 1
        && a.col_stride == 1
        && a.rows > 1
        && b.cols > 1
}

/// Few rows and a deep product: a column-major result lets the crate pack
/// the small `a` instead of `w` (measured 1.0-1.3x faster than copying `w`
/// row-major first, for 8-128 rows and `k >= 128`).
fn column_major_pays<T>(a: &Mat<T>, b: &Mat<T>) -> bool {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    m <= 128 && m < n && k >= 128 && m * n > 256
}

/// `dst (+)= a @ b` into a column-major scratch, then copied (transposing)
/// to `dst`; when accumulating, the scratch starts from `dst` so the sum
/// rounds as the crate's own accumulation does.
unsafe fn via_column_major<T: Element>(a: Mat<T>, b: Mat<T>, dst: Dst<T>) {
    let (m, n) = (a.rows, b.cols);
    let mut tmp: Vec<T> = crate::error::filled_vec(m * n, T::zero());
    let (dst_st, dst_sst) = ([dst.rs, dst.cs], [dst.rs as isize, dst.cs as isize]);
    if dst.add {
        super::copy::copy_box(tmp.as_mut_ptr(), &[1, m], dst.ptr, &dst_sst, &[m, n]);
    }
    let scratch = Dst {
        ptr: tmp.as_mut_ptr(),
        rs: 1,
        cs: m,
        add: dst.add,
    };
    gemm_call(a, b, scratch);
    super::copy::copy_box(dst.ptr, &dst_st, tmp.as_ptr(), &[1, m as isize], &[m, n]);
}

/// Runs `f` on a row-major copy of `b` (a tiled transposing copy). Each
/// block copies its own operand: copying once before the split costs a
/// second parallel region, which measured slower up to 512^3.
unsafe fn with_row_major<T: Element, R>(b: Mat<T>, f: impl FnOnce(Mat<T>) -> R) -> R {
    let (k, n) = (b.rows, b.cols);
    let mut tmp: Vec<T> = crate::error::filled_vec(k * n, T::zero());
    let sst = [b.row_stride as isize, b.col_stride as isize];
    super::copy::copy_box(tmp.as_mut_ptr(), &[n, 1], b.ptr, &sst, &[k, n]);
    f(Mat {
        ptr: tmp.as_ptr(),
        rows: k,
        cols: n,
        row_stride: n,
        col_stride: 1,
    })
}

unsafe fn gemm_call<T: Element>(a: Mat<T>, b: Mat<T>, dst: Dst<T>) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    match T::DTYPE {
        crate::tensor::DType::F32 => gemm::gemm::<f32>(
            m,
            n,
            k,
            dst.ptr as *mut f32,
            dst.cs as isize,
            dst.rs as isize,
            dst.add,
            a.ptr as *const f32,
            a.col_stride as isize,
            a.row_stride as isize,
            b.ptr as *const f32,
            b.col_stride as isize,
            b.row_stride as isize,
            if dst.add { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        ),
        crate::tensor::DType::F64 => gemm::gemm::<f64>(
            m,
            n,
            k,
            dst.ptr as *mut f64,
            dst.cs as isize,
            dst.rs as isize,
            dst.add,
            a.ptr as *const f64,
            a.col_stride as isize,
            a.row_stride as isize,
            b.ptr as *const f64,
            b.col_stride as isize,
            b.row_stride as isize,
            if dst.add { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        ),
        _ => naive(a, b, dst),
    }
}

/// Integer (and bool-free) fallback; integer matmul is rare and small.
unsafe fn naive<T: Element>(a: Mat<T>, b: Mat<T>, dst: Dst<T>) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            let mut acc_i: i128 = 0;
            for p in 0..k {
                let x = *a.ptr.add(i * a.row_stride + p * a.col_stride);
                let y = *b.ptr.add(p * b.row_stride + j * b.col_stride);
                acc += x.to_f64() * y.to_f64();
                acc_i = acc_i.wrapping_add(x.to_i64() as i128 * y.to_i64() as i128);
            }
            let at = dst.ptr.add(i * dst.rs + j * dst.cs);
            if dst.add {
                acc += (*at).to_f64();
                acc_i = acc_i.wrapping_add((*at).to_i64() as i128);
            }
            // Integers wrap, as PyTorch's do (the low bits of the exact sum).
            *at = if T::DTYPE.is_float() {
                T::from_f64(acc)
            } else {
                T::from_i64(acc_i as i64)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(v: &[f64], rows: usize, cols: usize, transposed: bool) -> Mat<f64> {
        let (row_stride, col_stride) = if transposed { (1, rows) } else { (cols, 1) };
        Mat {
            ptr: v.as_ptr(),
            rows,
            cols,
            row_stride,
            col_stride,
        }
    }

    /// Every split shape (tall, wide, square, uneven parts) and operand
    /// layout against the plain triple loop.
    #[test]
    fn split_products_match_the_naive_loop() {
        crate::kernels::parallel::set_num_threads(3).unwrap();
        for &(m, k, n) in &[(300, 40, 17), (9, 50, 333), (130, 70, 130), (1, 200, 900)] {
            let a: Vec<f64> = (0..m * k).map(|i| ((i * 7 % 13) as f64) - 6.0).collect();
            let b: Vec<f64> = (0..k * n).map(|i| ((i * 5 % 11) as f64) - 5.0).collect();
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let (ma, mb) = (mat(&a, m, k, ta), mat(&b, k, n, tb));
                let mut got = vec![f64::NAN; m * n];
                let mut want = vec![f64::NAN; m * n];
                unsafe {
                    gemm_into(ma, mb, got.as_mut_ptr(), true);
                    naive(
                        ma,
                        mb,
                        Dst {
                            ptr: want.as_mut_ptr(),
                            rs: n,
                            cs: 1,
                            add: false,
                        },
                    );
                }
                assert_eq!(got, want, "{m}x{k}x{n} transposed={ta},{tb}");
                // Accumulating into a bias: the same product plus the bias.
                let bias: Vec<f64> = (0..m * n).map(|i| (i % 7) as f64).collect();
                let mut sum = bias.clone();
                unsafe { gemm_add_into(ma, mb, sum.as_mut_ptr(), true) };
                let plus: Vec<f64> = want.iter().zip(&bias).map(|(w, b)| w + b).collect();
                assert_eq!(sum, plus, "{m}x{k}x{n} transposed={ta},{tb} accumulated");
            }
        }
    }

    /// `x @ w.t()` through either of its rewrites rounds as the product of
    /// the same operands laid out row-major, on one thread and on two, with
    /// and without accumulation: non-integer values, `k` beyond the crate's
    /// 512-deep blocks (784, 1100), and splits that leave small blocks.
    #[test]
    fn transposed_weight_products_keep_their_bits() {
        let val = |i: usize, s: usize| ((i * s % 97) as f32 - 48.0) * 0.013_7;
        let shapes = [
            (64, 1024, 1024),
            (8, 256, 1024),
            (64, 784, 128),
            (33, 100, 512),
            (300, 1100, 40),
            (20, 784, 64),
            (130, 130, 130),
        ];
        for &(m, k, n) in &shapes {
            let x: Vec<f32> = (0..m * k).map(|i| val(i, 7)).collect();
            let w: Vec<f32> = (0..n * k).map(|i| val(i, 5)).collect();
            let bias: Vec<f32> = (0..m * n).map(|i| val(i, 3)).collect();
            let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
            let xm = Mat {
                ptr: x.as_ptr(),
                rows: m,
                cols: k,
                row_stride: k,
                col_stride: 1,
            };
            let transposed = Mat {
                ptr: w.as_ptr(),
                rows: k,
                cols: n,
                row_stride: 1,
                col_stride: k,
            };
            let plain = Mat {
                ptr: wt.as_ptr(),
                rows: k,
                cols: n,
                row_stride: n,
                col_stride: 1,
            };
            for threads in [1, 2] {
                crate::kernels::parallel::set_num_threads(threads).unwrap();
                for add in [false, true] {
                    let run = |b: Mat<f32>| {
                        let mut out = if add {
                            bias.clone()
                        } else {
                            vec![f32::NAN; m * n]
                        };
                        unsafe { gemm_impl(xm, b, out.as_mut_ptr(), true, add) };
                        out
                    };
                    let (got, want) = (run(transposed), run(plain));
                    let same = got
                        .iter()
                        .zip(&want)
                        .all(|(g, w)| g.to_bits() == w.to_bits());
                    assert!(same, "{m}x{k}x{n} add={add} threads={threads}");
                }
            }
        }
        crate::kernels::parallel::set_num_threads(1).unwrap();
    }
}
