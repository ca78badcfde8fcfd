//! Embedding lookups and their scatter-add adjoint over rows of `d` elements.

use super::{build_vec, parallel, SendPtr};
use crate::tensor::{Element, Float};

/// `out[i] = w[idx[i]] * scale[i]` (rows of `d`); a row whose `zero[i]` is
/// set is zeros. Indices are in range (checked by the caller).
pub fn lookup<T: Element + std::ops::Mul<Output = T>>(
    w: &[T],
    d: usize,
    idx: &[i64],
    scale: Option<&[T]>,
    zero: Option<i64>,
) -> Vec<T> {
    let n = idx.len();
    build_vec(n * d, |out| {
        let o = SendPtr(out.as_mut_ptr());
        let work = n * d;
        parallel::run(work, |threads| {
            let per = if threads == 1 {
                n.max(1)
            } else {
                n.div_ceil(threads * 4).max(1)
            };
            parallel::tasks(n.div_ceil(per), |t| {
                for i in t * per..((t + 1) * per).min(n) {
                    // SAFETY: row i of `out` is written by this task only.
                    let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(i * d), d) };
                    let k = idx[i];
                    if zero == Some(k) {
                        for r in row.iter_mut() {
                            r.write(T::zero());
                        }
                        continue;
                    }
                    let src = &w[k as usize * d..(k as usize + 1) * d];
                    match scale {
                        Some(s) => {
                            for (r, &v) in row.iter_mut().zip(src) {
                                r.write(v * s[i]);
                            }
                        }
                        None => {
                            for (r, &v) in row.iter_mut().zip(src) {
                                r.write(v);
                            }
                        }
                    }
                }
            });
        });
    })
}

/// The adjoint of [`lookup`]: `out[idx[i]] += g[i] * scale[i]` into a
/// `[v, d]` zero matrix, skipping rows whose index is `skip`. Each task owns
/// a range of output rows and scans every index, so no two tasks add into
/// one row.
pub fn scatter_rows<T: Element + std::ops::Mul<Output = T> + std::ops::AddAssign>(
    g: &[T],
    d: usize,
    idx: &[i64],
    v: usize,
    scale: Option<&[T]>,
    skip: Option<i64>,
) -> Vec<T> {
    let mut out = crate::error::filled_vec(v * d, T::zero());
    let o = SendPtr(out.as_mut_ptr());
    let n = idx.len();
    parallel::run(n * d, |threads| {
        let parts = if threads == 1 {
            1
        } else {
            (threads * 2).min(v.max(1))
        };
        let per = v.div_ceil(parts).max(1);
        parallel::tasks(v.div_ceil(per), |t| {
            let (v0, v1) = (t * per, ((t + 1) * per).min(v));
            for (i, &k) in idx.iter().enumerate() {
                let ku = k as usize;
                if skip == Some(k) || ku < v0 || ku >= v1 {
                    continue;
                }
                // SAFETY: rows v0..v1 of `out` belong to this task.
                let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(ku * d), d) };
                let src = &g[i * d..(i + 1) * d];
                match scale {
                    Some(s) => {
                        for (a, &b) in dst.iter_mut().zip(src) {
                            *a += b * s[i];
                        }
                    }
                    None => {
                        for (a, &b) in dst.iter_mut().zip(src) {
                            *a += b;
                        }
                    }
                }
            }
        });
    });
    out
}

/// The sum of each bag's rows: bag `b` adds the rows of `w` (`d` wide) at
/// `idx[b * len..(b + 1) * len]`, in that order (as the gather then a sum
/// over the bag would), with no `bags x len x d` gather in between.
pub fn bag_sums<T: Float>(w: &[T], d: usize, idx: &[i64], len: usize) -> Vec<T> {
    let bags = idx.len().checked_div(len).unwrap_or(0);
    let mut out: Vec<T> = crate::error::filled_vec(bags * d, <T as Element>::zero());
    let o = SendPtr(out.as_mut_ptr());
    super::par_ranges(bags * len * d.max(1), |a, b| {
        let per = len * d.max(1);
        let (lo, hi) = (a.div_ceil(per), b.div_ceil(per).min(bags));
        for bag in lo..hi {
            // SAFETY: row `bag` of `out` belongs to this range alone.
            let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(bag * d), d) };
            add_rows(w, d, &idx[bag * len..(bag + 1) * len], row);
        }
    });
    out
}

/// `row += w[k]` for each index `k` of one bag, in order.
#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn add_rows<T: Float>(w: &[T], d: usize, bag: &[i64], row: &mut [T]) {
    for &k in bag {
        let src = &w[k as usize * d..(k as usize + 1) * d];
        for (r, &v) in row.iter_mut().zip(src) {
            *r += v;
        }
    }
}
