//! The running product (`cumprod`) and its gradient.

use multiversion::multiversion;

use super::{fold_rows, tiled, units, SendPtr, LANES};
use crate::tensor::Arith;

/// The running product along `n` (each product taken in `j` order).
pub fn cumprod<T: Arith>(data: &[T], outer: usize, n: usize, inner: usize) -> Vec<T> {
    let total = outer * n * inner;
    if total == 0 {
        // Empty, however large the other factors: no loop over them.
        return Vec::new();
    }
    if inner == 1 {
        return fold_rows(data, outer, n, false, T::one(), |a, x| a.mul(x));
    }
    let mut out = crate::error::filled_vec(total, T::zero());
    let o = SendPtr(out.as_mut_ptr());
    units(outer, n, inner, |r, c0, c1| {
        let base = r * n * inner;
        for j in 0..n {
            let at = base + j * inner;
            let x = &data[at + c0..at + c1];
            // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(at + c0), c1 - c0) };
            if j == 0 {
                dst.copy_from_slice(x);
            } else {
                let prev =
                    unsafe { std::slice::from_raw_parts(o.get().add(at - inner + c0), c1 - c0) };
                mul_rows(dst, prev, x);
            }
        }
    });
    out
}

/// `cumprod` of float32 with a float64 running product, each prefix rounded
/// once to float32 (PyTorch's CPU scan accumulates so; a shrinking product
/// also stays clear of float32's subnormals). Reads float32 and writes
/// float32 directly: no float64 copy of the input or the output.
pub fn cumprod_f32(data: &[f32], outer: usize, n: usize, inner: usize) -> Vec<f32> {
    let total = outer * n * inner;
    if total == 0 {
        return Vec::new();
    }
    if inner == 1 {
        return crate::kernels::build_vec(total, |out| {
            let o = SendPtr(out.as_mut_ptr() as *mut f32);
            let groups = outer.div_ceil(LANES);
            crate::kernels::copy::par_units(groups, n * LANES, |lo, hi| {
                for g in lo..hi {
                    let (r0, r1) = (g * LANES, ((g + 1) * LANES).min(outer));
                    // SAFETY: rows `r0..r1` lie inside `data` and the output,
                    // and only this unit writes them.
                    unsafe {
                        if r1 - r0 == LANES {
                            let mut acc = [1f64; LANES];
                            tiled(
                                data.as_ptr().add(r0 * n),
                                o.get().add(r0 * n),
                                n,
                                false,
                                |t, w| {
                                    for col in t.iter_mut().take(w) {
                                        for (a, e) in acc.iter_mut().zip(col.iter_mut()) {
                                            *a *= f64::from(*e);
                                            *e = *a as f32;
                                        }
                                    }
                                },
                            );
                            continue;
                        }
                        for r in r0..r1 {
                            let mut a = 1f64;
                            for at in r * n..(r + 1) * n {
                                a *= f64::from(*data.get_unchecked(at));
                                *o.get().add(at) = a as f32;
                            }
                        }
                    }
                }
            });
        });
    }
    let mut out = crate::error::filled_vec(total, 0f32);
    let o = SendPtr(out.as_mut_ptr());
    units(outer, n, inner, |r, c0, c1| {
        let w = c1 - c0;
        let mut acc = vec![1f64; w];
        let base = r * n * inner;
        for j in 0..n {
            let at = base + j * inner + c0;
            // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(at), w) };
            mul_acc_f32(&mut acc, &data[at..at + w], dst);
        }
    });
    out
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn mul_acc_f32(acc: &mut [f64], x: &[f32], out: &mut [f32]) {
    for ((a, &x), o) in acc.iter_mut().zip(x).zip(out) {
        *a *= f64::from(x);
        *o = *a as f32;
    }
}

/// The gradient of `out = cumprod(x)` along `n` given `g`, exact where
/// inputs are zero and with no division: with `r[k] = g[k] + x[k+1] r[k+1]`
/// (a reversed linear scan, `r[n-1] = g[n-1]`), the gradient of `x[k]` is
/// `out[k-1] r[k]` (`r[0]` for the first). Each element's scan runs in
/// reverse `j` order on any thread count.
pub fn cumprod_backward<T: Arith>(
    x: &[T],
    out: &[T],
    g: &[T],
    outer: usize,
    n: usize,
    inner: usize,
) -> Vec<T> {
    let total = outer * n * inner;
    if total == 0 {
        return Vec::new();
    }
    let mut gx = crate::error::filled_vec(total, T::zero());
    let o = SendPtr(gx.as_mut_ptr());
    if inner == 1 {
        // Rows side by side, so the dependent multiply-add chains overlap.
        let groups = outer.div_ceil(LANES);
        crate::kernels::copy::par_units(groups, n * LANES, |lo, hi| {
            for grp in lo..hi {
                let (r0, r1) = (grp * LANES, ((grp + 1) * LANES).min(outer));
                let mut acc = [T::zero(); LANES];
                for j in (0..n).rev() {
                    for (l, a) in acc.iter_mut().enumerate().take(r1 - r0) {
                        let at = (r0 + l) * n + j;
                        // SAFETY: `at` is inside row `r0 + l` of this group,
                        // which only this unit writes.
                        unsafe {
                            let gj = *g.get_unchecked(at);
                            *a = if j + 1 == n {
                                gj
                            } else {
                                gj.add(x.get_unchecked(at + 1).mul(*a))
                            };
                            *o.get().add(at) = if j == 0 {
                                *a
                            } else {
                                out.get_unchecked(at - 1).mul(*a)
                            };
                        }
                    }
                }
            }
        });
        return gx;
    }
    units(outer, n, inner, |r, c0, c1| {
        let w = c1 - c0;
        let mut acc = crate::error::filled_vec(w, T::zero());
        let base = r * n * inner;
        for j in (0..n).rev() {
            let at = base + j * inner + c0;
            if j + 1 == n {
                acc.copy_from_slice(&g[at..at + w]);
            } else {
                fma_rows(&mut acc, &g[at..at + w], &x[at + inner..at + inner + w]);
            }
            // SAFETY: the unit owns columns `c0..c1` of outer position `r`.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(at), w) };
            if j == 0 {
                dst.copy_from_slice(&acc);
            } else {
                mul_rows(dst, &out[at - inner..at - inner + w], &acc);
            }
        }
    });
    gx
}

/// `acc = g + x * acc`, elementwise (rounded after each operation).
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn fma_rows<T: Arith>(acc: &mut [T], g: &[T], x: &[T]) {
    for ((a, &g), &x) in acc.iter_mut().zip(g).zip(x) {
        *a = g.add(x.mul(*a));
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn mul_rows<T: Arith>(d: &mut [T], a: &[T], b: &[T]) {
    for ((o, &x), &y) in d.iter_mut().zip(a).zip(b) {
        *o = x.mul(y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backward kernel against the product rule written out (no
    /// division), with zeros first, last, repeated and everywhere, on both
    /// layouts and thread counts.
    #[test]
    fn cumprod_backward_matches_the_product_rule() {
        for &(outer, n, inner) in &[(5, 6, 1), (17, 9, 1), (2, 7, 1100), (3, 1, 4), (1, 5, 3)] {
            let x: Vec<f64> = (0..outer * n * inner)
                .map(|i| match i % 11 {
                    0 | 4 => 0.0,
                    k => k as f64 / 4.0 - 1.3,
                })
                .collect();
            let g: Vec<f64> = (0..x.len()).map(|i| ((i * 5) % 7) as f64 - 3.0).collect();
            let out = cumprod(&x, outer, n, inner);
            for t in [1, 2] {
                crate::kernels::parallel::set_num_threads(t).unwrap();
                let gx = cumprod_backward(&x, &out, &g, outer, n, inner);
                for o in 0..outer {
                    for c in 0..inner {
                        let at = |j: usize| (o * n + j) * inner + c;
                        for k in 0..n {
                            let mut want = 0.0;
                            for j in k..n {
                                let mut p = g[at(j)];
                                for i in (0..=j).filter(|&i| i != k) {
                                    p *= x[at(i)];
                                }
                                want += p;
                            }
                            let got = gx[at(k)];
                            assert!(
                                (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                                "{got} {want}"
                            );
                        }
                    }
                }
            }
        }
        let f: Vec<f32> = (0..8 * 2100).map(|i| 0.5 + (i % 9) as f32 / 8.0).collect();
        for &(outer, n, inner) in &[(3, 2100, 1), (1, 3, 2100), (8, 2100, 1), (19, 70, 1)] {
            let wide: Vec<f64> = f.iter().map(|&v| f64::from(v)).collect();
            let want: Vec<f32> = cumprod(&wide, outer, n, inner)
                .iter()
                .map(|&v| v as f32)
                .collect();
            let got = cumprod_f32(&f, outer, n, inner);
            assert!(got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
}
