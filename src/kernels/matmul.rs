//! Matrix products through the `gemm` crate, which reads arbitrary strides
//! (so transposed operands need no copy), dispatches SIMD at run time and
//! shares the rayon pool.

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

/// `out[m, n] = a[m, k] @ b[k, n]`, written row-major into `out`.
///
/// # Safety
/// `a` and `b` must describe valid strided matrices and `out` must hold
/// `a.rows * b.cols` elements.
pub unsafe fn gemm_into<T: Element>(a: Mat<T>, b: Mat<T>, out: *mut T, parallel: bool) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        for i in 0..m * n {
            *out.add(i) = T::zero();
        }
        return;
    }
    let work = if parallel && m * n * k >= PARALLEL_WORK {
        m * n * k
    } else {
        0
    };
    let out = super::SendPtr(out);
    let (a, b) = (SendMat(a), SendMat(b));
    super::parallel::run(work, move |threads| {
        let par = if threads > 1 {
            Parallelism::Rayon(threads)
        } else {
            Parallelism::None
        };
        let (a, b, out) = (a, b, out);
        // SAFETY: forwarded from the caller's contract.
        unsafe { gemm_dispatch(a.0, b.0, out.0, par) }
    })
}

/// Lets the operand descriptors cross into the pool; they are read-only.
#[derive(Clone, Copy)]
struct SendMat<T>(Mat<T>);
unsafe impl<T> Send for SendMat<T> {}

unsafe fn gemm_dispatch<T: Element>(a: Mat<T>, b: Mat<T>, out: *mut T, par: Parallelism) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    match T::DTYPE {
        crate::tensor::DType::F32 => gemm::gemm::<f32>(
            m,
            n,
            k,
            out as *mut f32,
            1,
            n as isize,
            false,
            a.ptr as *const f32,
            a.col_stride as isize,
            a.row_stride as isize,
            b.ptr as *const f32,
            b.col_stride as isize,
            b.row_stride as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            par,
        ),
        crate::tensor::DType::F64 => gemm::gemm::<f64>(
            m,
            n,
            k,
            out as *mut f64,
            1,
            n as isize,
            false,
            a.ptr as *const f64,
            a.col_stride as isize,
            a.row_stride as isize,
            b.ptr as *const f64,
            b.col_stride as isize,
            b.row_stride as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            par,
        ),
        _ => naive(a, b, out),
    }
}

/// Integer (and bool-free) fallback; integer matmul is rare and small.
unsafe fn naive<T: Element>(a: Mat<T>, b: Mat<T>, out: *mut T) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            let mut acc_i: i128 = 0;
            for p in 0..k {
                let x = *a.ptr.add(i * a.row_stride + p * a.col_stride);
                let y = *b.ptr.add(p * b.row_stride + j * b.col_stride);
                acc += x.to_f64() * y.to_f64();
                acc_i += x.to_f64() as i128 * y.to_f64() as i128;
            }
            *out.add(i * n + j) = if T::DTYPE.is_float() {
                T::from_f64(acc)
            } else {
                T::from_f64(acc_i as f64)
            };
        }
    }
}
