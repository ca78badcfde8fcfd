//! The path for CPUs without bfloat16 instructions: both operands widened
//! to float32 (exact: a shift), then the float32 GEMM (the `gemm` crate,
//! which picks its own SIMD at run time), split over the pool the way
//! `kernels::matmul` splits its products. Widening costs `m k + k n`
//! shifts (on the calling thread) against `m n k` multiply-adds.

use gemm::Parallelism;

use super::{bf16_to_f32, bf16_to_f32_slice, f32_to_bf16, finish, MatRef, Out};
use crate::kernels::{parallel, SendPtr};

/// Below this many multiply-adds the product runs on one thread.
const PARALLEL_WORK: usize = 1 << 18;

/// `a` as row-major float32.
fn widen(a: MatRef<u16>) -> Vec<f32> {
    let (m, k) = (a.rows, a.cols);
    let mut out = vec![0f32; m * k];
    if a.rs == 1 && a.cs != 1 {
        // Column-major: read down the columns.
        for p in 0..k {
            for i in 0..m {
                // SAFETY: inside `a`.
                out[i * k + p] = bf16_to_f32(unsafe { a.at(i, p) });
            }
        }
        return out;
    }
    for (i, row) in out.chunks_exact_mut(k.max(1)).enumerate().take(m) {
        if a.cs == 1 {
            // SAFETY: row `i` of `a` holds `k` contiguous elements.
            let src = unsafe { std::slice::from_raw_parts(a.ptr.add(i * a.rs), k) };
            bf16_to_f32_slice(src, row);
        } else {
            for (p, x) in row.iter_mut().enumerate() {
                // SAFETY: inside `a`.
                *x = bf16_to_f32(unsafe { a.at(i, p) });
            }
        }
    }
    out
}

/// `c = alpha * a @ b + beta * c` in float32 with row-major float32
/// operands (`a` is `m x k`, `b` is `k x n`).
#[allow(clippy::too_many_arguments)]
unsafe fn product(
    a: &[f32],
    b: &[f32],
    (m, k, n): (usize, usize, usize),
    c: SendPtr<f32>,
    (rs, cs): (usize, usize),
    alpha: f32,
    beta: f32,
    parallel: bool,
) {
    let (a, b) = (
        SendPtr(a.as_ptr() as *mut f32),
        SendPtr(b.as_ptr() as *mut f32),
    );
    // Rows `lo..hi` (or columns, when `by_rows` is false) of the result.
    let block = |by_rows: bool, lo: usize, hi: usize| {
        let (ap, bp, cp, mm, nn) = if by_rows {
            (
                a.get().wrapping_add(lo * k),
                b.get(),
                c.get().wrapping_add(lo * rs),
                hi - lo,
                n,
            )
        } else {
            (
                a.get(),
                b.get().wrapping_add(lo),
                c.get().wrapping_add(lo * cs),
                m,
                hi - lo,
            )
        };
        // SAFETY: the caller's operands; each block writes its own part of `c`.
        // The gemm crate's `alpha` scales the destination, its `beta` the product.
        unsafe {
            gemm::gemm::<f32>(
                mm,
                nn,
                k,
                cp,
                cs as isize,
                rs as isize,
                beta != 0.0,
                ap,
                1,
                k as isize,
                bp,
                1,
                n as isize,
                beta,
                alpha,
                false,
                false,
                false,
                Parallelism::None,
            )
        }
    };
    let work = if parallel && m * n * k >= PARALLEL_WORK {
        usize::MAX
    } else {
        0
    };
    parallel::run(work, |threads| {
        if threads <= 1 {
            return block(true, 0, m);
        }
        let (len, align, by_rows) = if m >= n { (m, 8, true) } else { (n, 16, false) };
        let chunk = len.div_ceil(threads).next_multiple_of(align);
        parallel::tasks(len.div_ceil(chunk), |t| {
            block(by_rows, t * chunk, ((t + 1) * chunk).min(len))
        });
    });
}

/// # Safety
/// Valid views with chaining shapes, `k >= 1`.
pub(super) unsafe fn gemm(
    a: MatRef<u16>,
    b: MatRef<u16>,
    c: Out,
    alpha: f32,
    beta: f32,
    parallel: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let (af, bf) = (widen(a), widen(b));
    match c {
        Out::F32(c) => product(
            &af,
            &bf,
            (m, k, n),
            SendPtr(c.ptr),
            (c.rs, c.cs),
            alpha,
            beta,
            parallel,
        ),
        Out::Bf16(c) => {
            let mut t = vec![0f32; m * n];
            product(
                &af,
                &bf,
                (m, k, n),
                SendPtr(t.as_mut_ptr()),
                (n, 1),
                1.0,
                0.0,
                parallel,
            );
            for i in 0..m {
                for j in 0..n {
                    let at = c.ptr.add(i * c.rs + j * c.cs);
                    let c0 = if beta == 0.0 { 0.0 } else { bf16_to_f32(*at) };
                    *at = f32_to_bf16(finish(t[i * n + j], c0, alpha, beta));
                }
            }
        }
    }
}
