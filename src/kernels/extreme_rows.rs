//! `amax`/`amin` of a leading dimension of float32/float64 data, streamed
//! row by row with AVX2's max/min instructions.
//!
//! The exact per-element step in `reduce.rs` must select between the kept
//! value and the new one with NaN handled in every lane (three compares and
//! a blend per element), which made a leading-dimension `amax` compute-bound
//! at half PyTorch's speed. Here the NaN question is asked once per block:
//! rows fold four at a time with bare `vmaxps`/`vminps` while an unordered
//! compare collects whether any NaN went by; a block that saw one is handed
//! back and redone by the exact path. Every instruction takes the earlier
//! row's value on a tie (`max(later, earlier)` returns its second operand
//! unless the first is strictly greater), so the result is the exact path's
//! bit for bit, signed zeros included.

use super::vmath::{isa, Isa};
use crate::tensor::Element;

/// Folds rows `0..n` of the `[n, stride]` block starting at `data` into
/// `v` (columns `0..v.len()` of each row), storing row 0 before reading `v`,
/// so `v` may hold anything on entry.
/// Returns `Some(true)` when done, `Some(false)` when a NaN was seen (then
/// `v` is unspecified), `None` when this CPU or element type has no fast
/// path. Only whole groups of lanes are folded: the caller finishes the
/// columns from `lanes::<T>(v.len())` on.
pub(super) fn fold_rows<T: Element>(
    v: &mut [T],
    data: &[T],
    n: usize,
    stride: usize,
    is_max: bool,
) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::any::TypeId;
        if isa() < Isa::Avx2 || n == 0 {
            return None;
        }
        let w = v.len();
        assert!(data.len() >= (n - 1) * stride + w);
        let id = TypeId::of::<T>();
        if id == TypeId::of::<f32>() {
            // SAFETY: `T` is `f32` (checked above); the CPU has AVX2; every
            // row read lies inside `data` (asserted above).
            return Some(unsafe {
                avx2::fold_f32(
                    v.as_mut_ptr().cast(),
                    w,
                    data.as_ptr().cast(),
                    n,
                    stride,
                    is_max,
                )
            });
        }
        if id == TypeId::of::<f64>() {
            // SAFETY: as above, for `f64`.
            return Some(unsafe {
                avx2::fold_f64(
                    v.as_mut_ptr().cast(),
                    w,
                    data.as_ptr().cast(),
                    n,
                    stride,
                    is_max,
                )
            });
        }
    }
    let _ = (v, data, n, stride, is_max);
    None
}

/// How many leading columns of `w` the fast path folds for `T`.
pub(super) fn lanes<T: Element>(w: usize) -> usize {
    let lane = 32 / std::mem::size_of::<T>().max(1);
    w / lane * lane
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    macro_rules! fold {
        ($name:ident, $t:ty, $lane:expr, $load:ident, $store:ident, $max:ident, $min:ident,
         $cmp:ident, $or:ident, $zero:ident, $mask:ident) => {
            /// See `fold_rows`. Safety: AVX2 present; `v` holds `w` elements;
            /// rows `0..n` of `data` hold `w` elements each, `stride` apart.
            #[target_feature(enable = "avx2")]
            pub(super) unsafe fn $name(
                v: *mut $t,
                w: usize,
                data: *const $t,
                n: usize,
                stride: usize,
                is_max: bool,
            ) -> bool {
                // The later operand first: on a tie the earlier row's value stays.
                let op = |later, earlier| {
                    if is_max {
                        $max(later, earlier)
                    } else {
                        $min(later, earlier)
                    }
                };
                let full = w / $lane * $lane;
                let mut nan = $zero();
                let mut i = 0;
                // Row 0 is copied and checked for NaN in one pass.
                while i < full {
                    let r = $load(data.add(i));
                    nan = $or(nan, $cmp(r, r, _CMP_UNORD_Q));
                    $store(v.add(i), r);
                    i += $lane;
                }
                let mut j = 1;
                while j + 4 <= n {
                    let q = [0, 1, 2, 3].map(|k| data.add((j + k) * stride));
                    let mut i = 0;
                    while i < full {
                        let r = q.map(|p| $load(p.add(i)));
                        let seen = $or(
                            $cmp(r[0], r[1], _CMP_UNORD_Q),
                            $cmp(r[2], r[3], _CMP_UNORD_Q),
                        );
                        nan = $or(nan, seen);
                        let t = op(op(r[3], r[2]), op(r[1], r[0]));
                        $store(v.add(i), op(t, $load(v.add(i))));
                        i += $lane;
                    }
                    j += 4;
                }
                while j < n {
                    let p = data.add(j * stride);
                    let mut i = 0;
                    while i < full {
                        let r = $load(p.add(i));
                        nan = $or(nan, $cmp(r, r, _CMP_UNORD_Q));
                        $store(v.add(i), op(r, $load(v.add(i))));
                        i += $lane;
                    }
                    j += 1;
                }
                $mask(nan) == 0
            }
        };
    }

    fold!(
        fold_f32,
        f32,
        8,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_max_ps,
        _mm256_min_ps,
        _mm256_cmp_ps,
        _mm256_or_ps,
        _mm256_setzero_ps,
        _mm256_movemask_ps
    );
    fold!(
        fold_f64,
        f64,
        4,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_max_pd,
        _mm256_min_pd,
        _mm256_cmp_pd,
        _mm256_or_pd,
        _mm256_setzero_pd,
        _mm256_movemask_pd
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact path's rule, element by element: the first NaN wins for
    /// good, otherwise a strictly better value replaces the kept one.
    fn exact<T: Element>(data: &[T], n: usize, stride: usize, w: usize, is_max: bool) -> Vec<T> {
        (0..w)
            .map(|c| {
                let mut a = data[c];
                for j in 1..n {
                    let x = data[j * stride + c];
                    #[allow(clippy::eq_op)]
                    let better = (a == a) & ((if is_max { x > a } else { x < a }) | (x != x));
                    if better {
                        a = x;
                    }
                }
                a
            })
            .collect()
    }

    fn check<T: Element>(vals: &[f64]) {
        for (n, w, stride) in [
            (1, 8, 8),
            (2, 16, 20),
            (5, 24, 24),
            (9, 33, 40),
            (64, 64, 64),
        ] {
            for is_max in [true, false] {
                let mut seed = 0x9e37_79b9_u32.wrapping_mul(n as u32 + w as u32);
                let data: Vec<T> = (0..(n - 1) * stride + w)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 17;
                        seed ^= seed << 5;
                        T::from_f64(vals[seed as usize % vals.len()])
                    })
                    .collect();
                let mut v = vec![T::zero(); w];
                let Some(clean) = fold_rows(&mut v, &data, n, stride, is_max) else {
                    return; // no AVX2 on this CPU: nothing to compare
                };
                let want = exact(&data, n, stride, w, is_max);
                let full = lanes::<T>(w);
                #[allow(clippy::eq_op)]
                let has_nan =
                    (0..n).any(|j| data[j * stride..j * stride + full].iter().any(|x| x != x));
                assert_eq!(clean, !has_nan, "n={n} w={w}");
                if clean {
                    for c in 0..full {
                        assert_eq!(
                            v[c].to_f64().to_bits(),
                            want[c].to_f64().to_bits(),
                            "n={n} w={w} c={c}"
                        );
                    }
                }
            }
        }
    }

    /// Ties between signed zeros and repeated values keep the earlier row's
    /// value, as the exact path does; a NaN anywhere is reported.
    #[test]
    fn matches_the_exact_fold() {
        let plain = [
            0.0,
            -0.0,
            1.5,
            -1.5,
            3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -7.25,
            1e-40,
        ];
        check::<f32>(&plain);
        check::<f64>(&plain);
        let mut with_nan = plain.to_vec();
        with_nan.push(f64::NAN);
        check::<f32>(&with_nan);
        check::<f64>(&with_nan);
    }
}
