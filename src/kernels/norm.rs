//! Normalisation kernels (batch, group, instance and layer norm).
//!
//! Batch, group and instance norm share one "block" layout: a contiguous
//! tensor seen as `blocks` runs of `s` elements (one run per sample and
//! channel, `s` the spatial size). Statistics come from per-block moments
//! merged per group with Chan's formula, the normalise-and-affine step is one
//! `(x - mean) * scale[b] + shift[b]` pass, and the backward rule reduces to two sums
//! per block followed by one `k1[b] * g + k2[b] * (x - mean) + k3[b]` pass. Layer norm
//! has its own row kernels because its affine parameters vary along the row.
//!
//! Moments use a shifted two-accumulator pass in float64 (the shift is the
//! block's first element), which is one read of the data and keeps float32
//! inputs with a large mean from cancelling.

use std::mem::MaybeUninit;

use multiversion::multiversion;

use super::{build_vec, parallel, SendPtr};
use crate::tensor::{Element, Float};

/// Splits `0..count` items of `each` elements into ranges run on the pool
/// when the total work is large enough.
fn for_ranges(count: usize, each: usize, f: impl Fn(usize, usize) + Sync) {
    let work = count.saturating_mul(each.max(1));
    parallel::run(work, |threads| {
        if threads == 1 || count <= 1 {
            f(0, count);
            return;
        }
        let per = count.div_ceil(threads * 4).max(1);
        parallel::tasks(count.div_ceil(per), |t| {
            f(t * per, ((t + 1) * per).min(count))
        });
    });
}

/// `(sum(x - k), sum((x - k)^2))` in float64.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn shifted_sums<T: Float>(x: &[T], k: f64) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
        && std::arch::is_x86_feature_detected!("avx512f")
    {
        // SAFETY: `T` is `f32` (checked above), so the slice is one of f32;
        // the CPU has AVX-512F.
        return unsafe {
            super::norm_f32::shifted_sums_f32_avx512(
                std::slice::from_raw_parts(x.as_ptr().cast(), x.len()),
                k,
            )
        };
    }
    let mut s = [0f64; 8];
    let mut q = [0f64; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            let d = Element::to_f64(c[i]) - k;
            s[i] += d;
            q[i] += d * d;
        }
    }
    let (mut s0, mut q0) = (s.iter().sum::<f64>(), q.iter().sum::<f64>());
    for &v in rest {
        let d = Element::to_f64(v) - k;
        s0 += d;
        q0 += d * d;
    }
    (s0, q0)
}

/// `(sum(g), sum(g * (x - c)))` in float64.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn grad_sums<T: Float>(g: &[T], x: &[T], c: f64) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
        && std::arch::is_x86_feature_detected!("avx512f")
    {
        // SAFETY: `T` is `f32` (checked above); the CPU has AVX-512F.
        return unsafe {
            super::norm_f32::grad_sums_f32_avx512(
                std::slice::from_raw_parts(g.as_ptr().cast(), g.len()),
                std::slice::from_raw_parts(x.as_ptr().cast(), x.len().min(g.len())),
                c,
            )
        };
    }
    let mut s = [0f64; 8];
    let mut q = [0f64; 8];
    let n = g.len() - g.len() % 8;
    for (gc, xc) in g[..n].chunks_exact(8).zip(x[..n].chunks_exact(8)) {
        for i in 0..8 {
            let gv = Element::to_f64(gc[i]);
            s[i] += gv;
            q[i] += gv * (Element::to_f64(xc[i]) - c);
        }
    }
    let (mut s0, mut q0) = (s.iter().sum::<f64>(), q.iter().sum::<f64>());
    for (gv, xv) in g[n..].iter().zip(&x[n..]) {
        s0 += Element::to_f64(*gv);
        q0 += Element::to_f64(*gv) * (Element::to_f64(*xv) - c);
    }
    (s0, q0)
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn scale_shift<T: Float>(x: &[T], out: &mut [MaybeUninit<T>], c: T, a: T, b: T) {
    for (o, &v) in out.iter_mut().zip(x) {
        o.write((v - c) * a + b);
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn linear2<T: Float>(g: &[T], x: &[T], out: &mut [MaybeUninit<T>], k: [T; 4]) {
    let [k1, k2, c, k3] = k;
    for ((o, &gv), &xv) in out.iter_mut().zip(g).zip(x) {
        o.write(k1 * gv + k2 * (xv - c) + k3);
    }
}

/// Per-block mean and sum of squared deviations (`m2`) of `x`, seen as
/// `x.len() / s` blocks of `s` elements.
pub fn block_moments<T: Float>(x: &[T], s: usize) -> (Vec<f64>, Vec<f64>) {
    let blocks = x.len().checked_div(s).unwrap_or(0);
    let mut mean = crate::error::zeroed_vec::<f64>(blocks);
    let mut m2 = crate::error::zeroed_vec::<f64>(blocks);
    let (pm, pq) = (SendPtr(mean.as_mut_ptr()), SendPtr(m2.as_mut_ptr()));
    for_ranges(blocks, s, |b0, b1| {
        for b in b0..b1 {
            let xs = &x[b * s..(b + 1) * s];
            let k = Element::to_f64(xs[0]);
            let (sd, sq) = shifted_sums(xs, k);
            let n = s as f64;
            // SAFETY: each block index is written by exactly one range.
            unsafe {
                *pm.get().add(b) = k + sd / n;
                *pq.get().add(b) = (sq - sd * sd / n).max(0.0);
            }
        }
    });
    (mean, m2)
}

/// Merges block moments (each over `s` elements) into one group's mean and
/// biased variance with Chan's pairwise formula.
pub fn merge_moments(
    blocks: impl Iterator<Item = usize>,
    mean: &[f64],
    m2: &[f64],
    s: usize,
) -> (f64, f64) {
    let (mut n, mut mu, mut q) = (0f64, 0f64, 0f64);
    let nb = s as f64;
    for b in blocks {
        if n == 0.0 {
            (n, mu, q) = (nb, mean[b], m2[b]);
            continue;
        }
        let tot = n + nb;
        let d = mean[b] - mu;
        mu += d * nb / tot;
        q += m2[b] + d * d * n * nb / tot;
        n = tot;
    }
    if n == 0.0 {
        (f64::NAN, f64::NAN)
    } else {
        (mu, q / n)
    }
}

/// `out[b-th block] = (x - center[b]) * scale[b] + shift[b]`: centring
/// first keeps float32 results exact when the mean dwarfs the spread.
pub fn block_apply<T: Float>(x: &[T], s: usize, center: &[T], scale: &[T], shift: &[T]) -> Vec<T> {
    let n = x.len();
    build_vec(n, |out| {
        let o = SendPtr(out.as_mut_ptr());
        for_ranges(scale.len(), s, |b0, b1| {
            // SAFETY: blocks b0..b1 cover a disjoint part of `out`.
            let part =
                unsafe { std::slice::from_raw_parts_mut(o.get().add(b0 * s), (b1 - b0) * s) };
            for b in b0..b1 {
                let r = (b - b0) * s..(b - b0 + 1) * s;
                scale_shift(
                    &x[b * s..(b + 1) * s],
                    &mut part[r],
                    center[b],
                    scale[b],
                    shift[b],
                );
            }
        });
    })
}

/// Per-block `(sum(g), sum(g * (x - center[b])))` in float64.
#[allow(clippy::needless_range_loop)]
pub fn block_grad_sums<T: Float>(
    g: &[T],
    x: &[T],
    s: usize,
    center: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let blocks = center.len();
    let mut sg = crate::error::zeroed_vec::<f64>(blocks);
    let mut sgx = crate::error::zeroed_vec::<f64>(blocks);
    let (pa, pb) = (SendPtr(sg.as_mut_ptr()), SendPtr(sgx.as_mut_ptr()));
    for_ranges(blocks, s, |b0, b1| {
        for b in b0..b1 {
            let r = b * s..(b + 1) * s;
            let (a, c) = grad_sums(&g[r.clone()], &x[r], center[b]);
            // SAFETY: each block index is written by exactly one range.
            unsafe {
                *pa.get().add(b) = a;
                *pb.get().add(b) = c;
            }
        }
    });
    (sg, sgx)
}

/// `out[b-th block] = k1 * g + k2 * (x - c) + k3` with `[k1, k2, c, k3] = k[b]`.
#[allow(clippy::needless_range_loop)]
pub fn block_linear<T: Float>(g: &[T], x: &[T], s: usize, k: &[[T; 4]]) -> Vec<T> {
    let n = x.len();
    build_vec(n, |out| {
        let o = SendPtr(out.as_mut_ptr());
        for_ranges(k.len(), s, |b0, b1| {
            // SAFETY: blocks b0..b1 cover a disjoint part of `out`.
            let part =
                unsafe { std::slice::from_raw_parts_mut(o.get().add(b0 * s), (b1 - b0) * s) };
            for b in b0..b1 {
                let r = b * s..(b + 1) * s;
                let pr = (b - b0) * s..(b - b0 + 1) * s;
                linear2(&g[r.clone()], &x[r], &mut part[pr], k[b]);
            }
        });
    })
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn ln_row<T: Float>(
    x: &[T],
    out: &mut [MaybeUninit<T>],
    mean: [T; 2],
    rstd: T,
    w: Option<&[T]>,
    b: Option<&[T]>,
) {
    // `mean` is the mean rounded to T and what the rounding lost: (v - hi) is
    // exact, so rows whose mean dwarfs their spread keep their digits.
    let [mean, lo] = mean;
    match (w, b) {
        (Some(w), Some(b)) => {
            for (((o, &v), &wv), &bv) in out.iter_mut().zip(x).zip(w).zip(b) {
                o.write(((v - mean) - lo) * rstd * wv + bv);
            }
        }
        (Some(w), None) => {
            for ((o, &v), &wv) in out.iter_mut().zip(x).zip(w) {
                o.write(((v - mean) - lo) * rstd * wv);
            }
        }
        (None, Some(b)) => {
            for ((o, &v), &bv) in out.iter_mut().zip(x).zip(b) {
                o.write(((v - mean) - lo) * rstd + bv);
            }
        }
        (None, None) => {
            for (o, &v) in out.iter_mut().zip(x) {
                o.write(((v - mean) - lo) * rstd);
            }
        }
    }
}

/// Layer norm over rows of `m` elements: returns `y`, and per row the mean
/// and `1 / sqrt(var + eps)`.
pub fn layer_norm<T: Float>(
    x: &[T],
    m: usize,
    w: Option<&[T]>,
    b: Option<&[T]>,
    eps: f64,
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let rows = x.len().checked_div(m).unwrap_or(0);
    let mut mean = crate::error::filled_vec(rows, <T as Element>::zero());
    let mut rstd = crate::error::filled_vec(rows, <T as Element>::zero());
    let (pm, pr) = (SendPtr(mean.as_mut_ptr()), SendPtr(rstd.as_mut_ptr()));
    let y = build_vec(x.len(), |out| {
        let o = SendPtr(out.as_mut_ptr());
        for_ranges(rows, m, |r0, r1| {
            for r in r0..r1 {
                let xs = &x[r * m..(r + 1) * m];
                let k = Element::to_f64(xs[0]);
                let (sd, sq) = shifted_sums(xs, k);
                let n = m as f64;
                let mu = k + sd / n;
                let var = ((sq - sd * sd / n) / n).max(0.0);
                let rs = 1.0 / (var + eps).sqrt();
                let (mu_t, rs_t) = (T::from_f64(mu), T::from_f64(rs));
                let lo = T::from_f64(mu - Element::to_f64(mu_t));
                // SAFETY: row r's output, mean and rstd are written by this range only.
                unsafe {
                    *pm.get().add(r) = mu_t;
                    *pr.get().add(r) = rs_t;
                    let row = std::slice::from_raw_parts_mut(o.get().add(r * m), m);
                    ln_row(xs, row, [mu_t, lo], rs_t, w, b);
                }
            }
        });
    });
    (y, mean, rstd)
}

#[allow(clippy::too_many_arguments)]
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn ln_row_backward<T: Float>(
    g: &[T],
    x: &[T],
    dx: &mut [MaybeUninit<T>],
    mean: T,
    rstd: T,
    w: &[T],
    dw: &mut [T],
    db: &mut [T],
) {
    let m = g.len();
    #[cfg(target_arch = "x86_64")]
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
        && std::arch::is_x86_feature_detected!("avx512f")
        && x.len() >= m
        && w.len() >= m
        && dx.len() >= m
        && dw.len() >= m
        && db.len() >= m
    {
        let f = |v: &[T]| -> &[f32] {
            // SAFETY: `T` is `f32` (checked above).
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), m) }
        };
        let fm = |v: &mut [T]| -> &mut [f32] {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), m) }
        };
        // SAFETY: `T` is `f32`, every slice holds at least `m` elements, the
        // CPU has AVX-512F; `MaybeUninit<f32>` has `f32`'s layout.
        unsafe {
            let dxf = std::slice::from_raw_parts_mut(dx.as_mut_ptr().cast::<f32>(), m);
            let (mean, rstd) = (Element::to_f64(mean) as f32, Element::to_f64(rstd) as f32);
            super::norm_f32::ln_row_backward_f32_avx512(
                f(g),
                f(x),
                dxf,
                mean,
                rstd,
                f(w),
                fm(dw),
                fm(db),
            );
        }
        return;
    }
    // Every slice cut to the row's length up front: with unchecked lengths the
    // loops below kept a bounds check per element and did not vectorise.
    let (x, w, dx, dw, db) = (&x[..m], &w[..m], &mut dx[..m], &mut dw[..m], &mut db[..m]);
    // a = sum(g * w), c = sum(g * w * (x - mean)) * rstd, in 16 lanes (one
    // register) so the loop vectorises: lane arrays updated whole, as the
    // element loop over a chunk was compiled into scalar code.
    let zero = <T as Element>::zero();
    let mut aa = [zero; 16];
    let mut cc = [zero; 16];
    let n16 = m - m % 16;
    for ((gc, xc), wc) in g[..n16]
        .chunks_exact(16)
        .zip(x[..n16].chunks_exact(16))
        .zip(w[..n16].chunks_exact(16))
    {
        let gw: [T; 16] = std::array::from_fn(|i| gc[i] * wc[i]);
        let xc: [T; 16] = std::array::from_fn(|i| xc[i] - mean);
        aa = std::array::from_fn(|i| aa[i] + gw[i]);
        cc = std::array::from_fn(|i| cc[i] + gw[i] * xc[i]);
    }
    let (mut a, mut c) = (zero, zero);
    for i in 0..16 {
        a += aa[i];
        c += cc[i];
    }
    for j in n16..m {
        let gw = g[j] * w[j];
        a += gw;
        c += gw * (x[j] - mean);
    }
    let c = c * rstd;
    let inv_m = T::from_f64(1.0 / m as f64);
    let (a, c) = (a * inv_m, c * inv_m);
    for (((((o, &gj), &xj), &wj), dwj), dbj) in dx
        .iter_mut()
        .zip(g)
        .zip(x)
        .zip(w)
        .zip(dw.iter_mut())
        .zip(db.iter_mut())
    {
        let xh = (xj - mean) * rstd;
        o.write(rstd * (gj * wj - a - xh * c));
        *dwj += gj * xh;
        *dbj += gj;
    }
}

/// Layer norm's backward over rows of `m`: `(dx, dw, db)`, the last two
/// summed over rows in float64.
pub fn layer_norm_backward<T: Float>(
    g: &[T],
    x: &[T],
    m: usize,
    mean: &[T],
    rstd: &[T],
    w: Option<&[T]>,
) -> (Vec<T>, Vec<f64>, Vec<f64>) {
    let rows = mean.len();
    let ones;
    let w = match w {
        Some(w) => w,
        None => {
            ones = crate::error::filled_vec(m, <T as Element>::one());
            &ones[..]
        }
    };
    let threads = parallel::get_num_threads().max(1);
    // Per-range partial sums in T (a range is at most a few thousand rows),
    // added up in float64 at the end.
    let parts = std::sync::Mutex::new(Vec::<(Vec<T>, Vec<T>)>::with_capacity(threads * 4));
    let dx = build_vec(x.len(), |out| {
        let o = SendPtr(out.as_mut_ptr());
        for_ranges(rows, m, |r0, r1| {
            let mut dw = crate::error::filled_vec(m, <T as Element>::zero());
            let mut db = crate::error::filled_vec(m, <T as Element>::zero());
            for r in r0..r1 {
                let rg = r * m..(r + 1) * m;
                // SAFETY: row r of `dx` is written by this range only.
                let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * m), m) };
                ln_row_backward(
                    &g[rg.clone()],
                    &x[rg],
                    row,
                    mean[r],
                    rstd[r],
                    w,
                    &mut dw,
                    &mut db,
                );
            }
            parts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((dw, db));
        });
    });
    let mut dw = crate::error::zeroed_vec::<f64>(m);
    let mut db = crate::error::zeroed_vec::<f64>(m);
    for (pw, pb) in parts.into_inner().unwrap_or_else(|e| e.into_inner()) {
        for j in 0..m {
            dw[j] += Element::to_f64(pw[j]);
            db[j] += Element::to_f64(pb[j]);
        }
    }
    (dx, dw, db)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float32 layer-norm backward (vectorised by hand where the CPU
    /// allows) against the float64 path on the same data, for rows whose
    /// length is and is not a multiple of the vector width.
    #[test]
    fn float32_layer_norm_backward_matches_float64() {
        for m in [1usize, 15, 16, 17, 48, 100] {
            let rows = 5;
            let x: Vec<f32> = (0..rows * m)
                .map(|i| ((i * 37 % 101) as f32) * 0.03 - 1.2)
                .collect();
            let g: Vec<f32> = (0..rows * m)
                .map(|i| ((i * 13 % 29) as f32) * 0.1 - 1.4)
                .collect();
            let w: Vec<f32> = (0..m).map(|i| 0.5 + (i % 7) as f32 * 0.25).collect();
            let (_, mean, rstd) = layer_norm(&x, m, None, None, 1e-5);
            let (dx, dw, db) = layer_norm_backward(&g, &x, m, &mean, &rstd, Some(&w));
            let up = |v: &[f32]| v.iter().map(|&t| t as f64).collect::<Vec<f64>>();
            let (x64, g64, w64, m64, r64) = (up(&x), up(&g), up(&w), up(&mean), up(&rstd));
            let (dx64, dw64, db64) = layer_norm_backward(&g64, &x64, m, &m64, &r64, Some(&w64));
            for (a, b) in dx.iter().zip(&dx64) {
                assert!(
                    (*a as f64 - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "m={m}: {a} vs {b}"
                );
            }
            for (a, b) in dw.iter().zip(&dw64).chain(db.iter().zip(&db64)) {
                assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "m={m}: {a} vs {b}");
            }
        }
    }

    /// The float32 sums (vectorised where the CPU allows) against the same
    /// sums of the data widened to float64 by the generic path, at lengths
    /// around the vector blocks and with a large common offset.
    #[test]
    fn float32_sums_match_the_float64_path() {
        for n in [0usize, 1, 7, 31, 32, 33, 64, 95, 512, 1001] {
            let x: Vec<f32> = (0..n)
                .map(|i| 1000.0 + ((i * 37 % 101) as f32) * 0.25)
                .collect();
            let g: Vec<f32> = (0..n).map(|i| ((i * 13 % 29) as f32) * 0.5 - 7.0).collect();
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let g64: Vec<f64> = g.iter().map(|&v| v as f64).collect();
            let k = x.first().map_or(0.0, |&v| v as f64);
            let (a, b) = (shifted_sums(&x, k), shifted_sums(&x64, k));
            assert!(
                (a.0 - b.0).abs() <= 1e-9 * (1.0 + b.0.abs()),
                "{n}: {a:?} {b:?}"
            );
            assert!(
                (a.1 - b.1).abs() <= 1e-9 * (1.0 + b.1.abs()),
                "{n}: {a:?} {b:?}"
            );
            let (c, d) = (grad_sums(&g, &x, 1000.5), grad_sums(&g64, &x64, 1000.5));
            assert!(
                (c.0 - d.0).abs() <= 1e-9 * (1.0 + d.0.abs()),
                "{n}: {c:?} {d:?}"
            );
            assert!(
                (c.1 - d.1).abs() <= 1e-9 * (1.0 + d.1.abs()),
                "{n}: {c:?} {d:?}"
            );
        }
    }

    #[test]
    fn moments_merge_matches_direct() {
        let x: Vec<f32> = (0..60).map(|i| 1000.0 + (i as f32 * 0.37).sin()).collect();
        let (mean, m2) = block_moments(&x, 10);
        let (mu, var) = merge_moments(0..6, &mean, &m2, 10);
        let xm: f64 = x.iter().map(|&v| v as f64).sum::<f64>() / 60.0;
        let xv: f64 = x.iter().map(|&v| (v as f64 - xm).powi(2)).sum::<f64>() / 60.0;
        assert!((mu - xm).abs() < 1e-9 && (var - xv).abs() < 1e-9);
    }

    #[test]
    fn layer_norm_rows_are_standardised() {
        let x: Vec<f64> = (0..40)
            .map(|i| (i as f64 * 0.7).cos() * 3.0 + 5.0)
            .collect();
        let (y, _, _) = layer_norm(&x, 20, None, None, 0.0);
        for r in y.chunks(20) {
            let m: f64 = r.iter().sum::<f64>() / 20.0;
            let v: f64 = r.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 20.0;
            assert!(m.abs() < 1e-12 && (v - 1.0).abs() < 1e-9);
        }
    }
}

// ----- column layout: statistics per column of a row-major [rows, cols] matrix -----------------
// Batch norm of a `[N, C]` input (or one with a small spatial size) would
// be thousands of one-element blocks; these loops walk rows instead and
// vectorise across the columns.

/// Splits the columns into ranges for the pool; each range walks every row.
fn for_col_ranges(rows: usize, cols: usize, f: impl Fn(usize, usize) + Sync) {
    parallel::run(rows * cols, |threads| {
        if threads == 1 || cols < 64 {
            f(0, cols);
            return;
        }
        let per = cols.div_ceil(threads * 2).next_multiple_of(16).max(16);
        parallel::tasks(cols.div_ceil(per), |t| {
            f(t * per, ((t + 1) * per).min(cols))
        });
    });
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn col_acc<T: Float>(x: &[T], k: &[f64], s: &mut [f64], q: &mut [f64]) {
    for (((&v, &kv), sv), qv) in x.iter().zip(k).zip(s.iter_mut()).zip(q.iter_mut()) {
        let d = Element::to_f64(v) - kv;
        *sv += d;
        *qv += d * d;
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn col_grad_acc<T: Float>(g: &[T], x: &[T], c: &[f64], s: &mut [f64], q: &mut [f64]) {
    for ((((&gv, &xv), &cv), sv), qv) in g.iter().zip(x).zip(c).zip(s.iter_mut()).zip(q.iter_mut())
    {
        let gd = Element::to_f64(gv);
        *sv += gd;
        *qv += gd * (Element::to_f64(xv) - cv);
    }
}

/// Per-column mean and sum of squared deviations of a `[rows, cols]` matrix.
pub fn col_moments<T: Float>(x: &[T], cols: usize) -> (Vec<f64>, Vec<f64>) {
    let rows = x.len().checked_div(cols).unwrap_or(0);
    let mut mean = vec![0f64; cols];
    let mut m2 = vec![0f64; cols];
    if rows == 0 {
        return (mean, m2);
    }
    let (pm, pq) = (SendPtr(mean.as_mut_ptr()), SendPtr(m2.as_mut_ptr()));
    for_col_ranges(rows, cols, |c0, c1| {
        let k: Vec<f64> = x[c0..c1].iter().map(|&v| Element::to_f64(v)).collect();
        let mut s = vec![0f64; c1 - c0];
        let mut q = vec![0f64; c1 - c0];
        for r in 0..rows {
            col_acc(&x[r * cols + c0..r * cols + c1], &k, &mut s, &mut q);
        }
        let n = rows as f64;
        for j in 0..c1 - c0 {
            // SAFETY: columns c0..c1 are written by this range only.
            unsafe {
                *pm.get().add(c0 + j) = k[j] + s[j] / n;
                *pq.get().add(c0 + j) = (q[j] - s[j] * s[j] / n).max(0.0);
            }
        }
    });
    (mean, m2)
}

/// Per-column `(sum(g), sum(g * (x - center[j])))` in float64.
pub fn col_grad_sums<T: Float>(
    g: &[T],
    x: &[T],
    cols: usize,
    center: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let rows = x.len().checked_div(cols).unwrap_or(0);
    let mut sg = vec![0f64; cols];
    let mut sgx = vec![0f64; cols];
    let (pa, pb) = (SendPtr(sg.as_mut_ptr()), SendPtr(sgx.as_mut_ptr()));
    for_col_ranges(rows, cols, |c0, c1| {
        // SAFETY: columns c0..c1 are written by this range only.
        let (s, q) = unsafe {
            (
                std::slice::from_raw_parts_mut(pa.get().add(c0), c1 - c0),
                std::slice::from_raw_parts_mut(pb.get().add(c0), c1 - c0),
            )
        };
        for r in 0..rows {
            let span = r * cols + c0..r * cols + c1;
            col_grad_acc(&g[span.clone()], &x[span], &center[c0..c1], s, q);
        }
    });
    (sg, sgx)
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn col_row<T: Float>(g: Option<&[T]>, x: &[T], out: &mut [MaybeUninit<T>], k: [&[T]; 4]) {
    let [k1, k2, c, k3] = k;
    match g {
        None => {
            for ((((o, &xv), &cv), &a), &b) in out.iter_mut().zip(x).zip(c).zip(k2).zip(k3) {
                o.write((xv - cv) * a + b);
            }
        }
        Some(g) => {
            for (((((o, &gv), &xv), &cv), (&a, &b)), &d) in out
                .iter_mut()
                .zip(g)
                .zip(x)
                .zip(c)
                .zip(k1.iter().zip(k2))
                .zip(k3)
            {
                o.write(a * gv + b * (xv - cv) + d);
            }
        }
    }
}

/// Row by row: `out = k1 * g + k2 * (x - c) + k3` per column, or without
/// `g`, `out = (x - c) * k2 + k3` (the forward's normalise-and-affine).
pub fn col_apply<T: Float>(g: Option<&[T]>, x: &[T], cols: usize, k: [&[T]; 4]) -> Vec<T> {
    let rows = x.len().checked_div(cols).unwrap_or(0);
    build_vec(x.len(), |out| {
        let o = SendPtr(out.as_mut_ptr());
        for_ranges(rows, cols, |r0, r1| {
            for r in r0..r1 {
                let span = r * cols..(r + 1) * cols;
                // SAFETY: row r of `out` is written by this range only.
                let row = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * cols), cols) };
                col_row(g.map(|g| &g[span.clone()]), &x[span], row, k);
            }
        });
    })
}
