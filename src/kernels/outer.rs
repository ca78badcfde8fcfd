//! Per-sample outer products, `out[b, i, j] = g[b, i] * x[b, j]`: the weight
//! gradients of a linear layer taken one per sample (`vmap(grad)`).
//!
//! The result (batch x out x in) is usually many times the size of the
//! caches and nothing reads it again soon, so a large one is written with
//! non-temporal stores. An ordinary store first reads the cache line it
//! overwrites; skipping that read halves the memory traffic of this
//! write-only loop.

use super::{build_vec, parallel, SendPtr, GRAIN};

/// Results from this many bytes on (one core's L2 and more) bypass the caches.
const STREAM_BYTES: usize = 1 << 21;

/// A row `dst[j] = s * src[j]`, with stores that bypass the caches where the
/// CPU has them.
pub trait StreamRow: Copy + std::ops::Mul<Output = Self> {
    /// # Safety
    /// `dst` must be valid for `src.len()` writes.
    unsafe fn stream_row(dst: *mut Self, src: &[Self], s: Self);
}

/// The scalar head and tail of a row, and the whole row where no streaming
/// store exists.
#[inline(always)]
unsafe fn plain_row<T: StreamRow>(dst: *mut T, src: &[T], s: T) {
    for (j, &v) in src.iter().enumerate() {
        // SAFETY: the caller gives `src.len()` writable slots.
        unsafe { dst.add(j).write(s * v) };
    }
}

macro_rules! stream_row {
    ($t:ty, $lanes:expr, $set1:ident, $load:ident, $mul:ident, $stream:ident) => {
        impl StreamRow for $t {
            #[cfg(target_arch = "x86_64")]
            unsafe fn stream_row(dst: *mut $t, src: &[$t], s: $t) {
                use std::arch::x86_64::*;
                let n = src.len();
                // Streaming stores need 16-byte alignment: plain stores up to it.
                let head = (dst.align_offset(16)).min(n);
                // SAFETY (whole block): `dst` is valid for `n` writes, `src`
                // holds `n` values, and every vector store lands at a 16-byte
                // boundary at or after `head`. SSE2 is part of x86-64.
                unsafe {
                    plain_row(dst, &src[..head], s);
                    let sv = $set1(s);
                    let mut j = head;
                    while j + $lanes <= n {
                        $stream(dst.add(j), $mul(sv, $load(src.as_ptr().add(j))));
                        j += $lanes;
                    }
                    plain_row(dst.add(j), &src[j..], s);
                }
            }

            #[cfg(not(target_arch = "x86_64"))]
            unsafe fn stream_row(dst: *mut $t, src: &[$t], s: $t) {
                // SAFETY: as the caller promised.
                unsafe { plain_row(dst, src, s) }
            }
        }
    };
}

stream_row!(f32, 4, _mm_set1_ps, _mm_loadu_ps, _mm_mul_ps, _mm_stream_ps);
stream_row!(f64, 2, _mm_set1_pd, _mm_loadu_pd, _mm_mul_pd, _mm_stream_pd);

/// `out[b, i, j] = g[b, i] * x[b, j]` for `g` of `batch x m` and `x` of
/// `batch x n` values, both row-major; the result is `batch x m x n`.
/// Each element is the one product `g * x` would give, so the result is
/// bit-for-bit that of the broadcast multiply.
pub fn batched_outer<T: StreamRow + Send + Sync>(
    g: &[T],
    x: &[T],
    batch: usize,
    m: usize,
    n: usize,
) -> Vec<T> {
    let rows = batch * m;
    let total = rows * n;
    let stream = total * std::mem::size_of::<T>() >= STREAM_BYTES;
    build_vec(total, |out| {
        let o = SendPtr(out.as_mut_ptr().cast::<T>());
        let body = |r0: usize, r1: usize| {
            for r in r0..r1 {
                let (s, xs) = (g[r], &x[(r / m) * n..(r / m + 1) * n]);
                // SAFETY: row `r` of the result, inside `out`, written by this
                // task alone.
                unsafe {
                    let dst = o.get().add(r * n);
                    if stream {
                        T::stream_row(dst, xs, s);
                    } else {
                        plain_row(dst, xs, s);
                    }
                }
            }
            if stream {
                fence();
            }
        };
        parallel::run(total, |threads| {
            if threads == 1 || rows < 2 {
                body(0, rows);
                return;
            }
            let per = (GRAIN / n.max(1)).max(rows.div_ceil(threads * 4)).max(1);
            parallel::tasks(rows.div_ceil(per), |c| {
                body(c * per, ((c + 1) * per).min(rows))
            });
        });
    })
}

/// Orders this thread's streaming stores before whatever signals that its
/// part is done: they are weakly ordered, unlike ordinary stores.
#[inline(always)]
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_broadcast_product_at_every_size_and_alignment() {
        crate::kernels::parallel::set_num_threads(2).unwrap();
        // Small (cached stores) and large (streaming stores, rows not a
        // multiple of the vector width, so heads and tails are exercised).
        for &(b, m, n) in &[
            (3, 2, 5),
            (1, 1, 1),
            (64, 33, 129),
            (256, 128, 64),
            (7, 300, 257),
        ] {
            let g: Vec<f32> = (0..b * m).map(|i| (i % 13) as f32 * 0.37 - 2.0).collect();
            let x: Vec<f32> = (0..b * n).map(|i| (i % 7) as f32 * 1.3 - 4.1).collect();
            let out = batched_outer(&g, &x, b, m, n);
            for bi in 0..b {
                for i in 0..m {
                    for j in 0..n {
                        assert_eq!(out[(bi * m + i) * n + j], g[bi * m + i] * x[bi * n + j]);
                    }
                }
            }
            let g64: Vec<f64> = g.iter().map(|&v| v as f64).collect();
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let out64 = batched_outer(&g64, &x64, b, m, n);
            assert!(out64
                .iter()
                .enumerate()
                .all(|(k, &v)| v == g64[k / n] * x64[(k / (m * n)) * n + k % n]));
        }
    }
}
