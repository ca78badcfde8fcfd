//! Float32 row loops of the normalisation kernels (`norm.rs`) written with
//! AVX-512 intrinsics. The compiler turned the generic loops that widen
//! float32 to float64, and the layer-norm backward's row, into mostly scalar
//! code; these do the same arithmetic in the same precision. `norm.rs` calls
//! them only for `f32` data on a CPU with AVX-512F.

#![cfg(target_arch = "x86_64")]

/// `norm::shifted_sums` of float32 data with AVX-512: each element widened to
/// float64 and added into four registers per sum. The compiler turned the
/// generic loop into scalar code (about 2.4 cycles an element); this is
/// the same arithmetic in the same precision, only the order of the
/// additions differs.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn shifted_sums_f32_avx512(x: &[f32], k: f64) -> (f64, f64) {
    use std::arch::x86_64::*;
    let kv = _mm512_set1_pd(k);
    let mut s = [_mm512_setzero_pd(); 4];
    let mut q = [_mm512_setzero_pd(); 4];
    let n = x.len() - x.len() % 32;
    let p = x.as_ptr();
    let mut j = 0;
    while j < n {
        for r in 0..4 {
            // SAFETY: `j + 8 * r + 8 <= n <= x.len()`.
            let v = unsafe { _mm256_loadu_ps(p.add(j + 8 * r)) };
            let d = _mm512_sub_pd(_mm512_cvtps_pd(v), kv);
            s[r] = _mm512_add_pd(s[r], d);
            q[r] = _mm512_fmadd_pd(d, d, q[r]);
        }
        j += 32;
    }
    let s4 = _mm512_add_pd(_mm512_add_pd(s[0], s[1]), _mm512_add_pd(s[2], s[3]));
    let q4 = _mm512_add_pd(_mm512_add_pd(q[0], q[1]), _mm512_add_pd(q[2], q[3]));
    let (mut s0, mut q0) = (_mm512_reduce_add_pd(s4), _mm512_reduce_add_pd(q4));
    for &v in &x[n..] {
        let d = v as f64 - k;
        s0 += d;
        q0 += d * d;
    }
    (s0, q0)
}

/// `norm::grad_sums` of float32 data with AVX-512, as [`shifted_sums_f32_avx512`].
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn grad_sums_f32_avx512(g: &[f32], x: &[f32], c: f64) -> (f64, f64) {
    use std::arch::x86_64::*;
    let len = g.len().min(x.len());
    let cv = _mm512_set1_pd(c);
    let mut s = [_mm512_setzero_pd(); 4];
    let mut q = [_mm512_setzero_pd(); 4];
    let n = len - len % 32;
    let (pg, px) = (g.as_ptr(), x.as_ptr());
    let mut j = 0;
    while j < n {
        for r in 0..4 {
            // SAFETY: `j + 8 * r + 8 <= n <= len` for both slices.
            let (gv, xv) = unsafe {
                (
                    _mm512_cvtps_pd(_mm256_loadu_ps(pg.add(j + 8 * r))),
                    _mm512_cvtps_pd(_mm256_loadu_ps(px.add(j + 8 * r))),
                )
            };
            s[r] = _mm512_add_pd(s[r], gv);
            q[r] = _mm512_fmadd_pd(gv, _mm512_sub_pd(xv, cv), q[r]);
        }
        j += 32;
    }
    let s4 = _mm512_add_pd(_mm512_add_pd(s[0], s[1]), _mm512_add_pd(s[2], s[3]));
    let q4 = _mm512_add_pd(_mm512_add_pd(q[0], q[1]), _mm512_add_pd(q[2], q[3]));
    let (mut s0, mut q0) = (_mm512_reduce_add_pd(s4), _mm512_reduce_add_pd(q4));
    for (&gv, &xv) in g[n..len].iter().zip(&x[n..len]) {
        s0 += gv as f64;
        q0 += gv as f64 * (xv as f64 - c);
    }
    (s0, q0)
}

/// `norm::ln_row_backward` of a float32 row with AVX-512: the generic loops
/// compiled to mostly scalar code (the backward took three times the
/// forward). Same lanes, same order of operations and no fused multiply-adds,
/// so the results are the generic path's bit for bit.
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ln_row_backward_f32_avx512(
    g: &[f32],
    x: &[f32],
    dx: &mut [f32],
    mean: f32,
    rstd: f32,
    w: &[f32],
    dw: &mut [f32],
    db: &mut [f32],
) {
    use std::arch::x86_64::*;
    let m = g.len();
    let n16 = m - m % 16;
    let meanv = _mm512_set1_ps(mean);
    let (mut aa, mut cc) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut j = 0;
    while j < n16 {
        // SAFETY: `j + 16 <= n16 <= m` for every slice.
        let (gv, xv, wv) = unsafe {
            (
                _mm512_loadu_ps(g.as_ptr().add(j)),
                _mm512_loadu_ps(x.as_ptr().add(j)),
                _mm512_loadu_ps(w.as_ptr().add(j)),
            )
        };
        let gw = _mm512_mul_ps(gv, wv);
        aa = _mm512_add_ps(aa, gw);
        cc = _mm512_add_ps(cc, _mm512_mul_ps(gw, _mm512_sub_ps(xv, meanv)));
        j += 16;
    }
    let (mut al, mut cl) = ([0f32; 16], [0f32; 16]);
    // SAFETY: 16 floats each.
    unsafe {
        _mm512_storeu_ps(al.as_mut_ptr(), aa);
        _mm512_storeu_ps(cl.as_mut_ptr(), cc);
    }
    let (mut a, mut c) = (0f32, 0f32);
    for i in 0..16 {
        a += al[i];
        c += cl[i];
    }
    for j in n16..m {
        let gw = g[j] * w[j];
        a += gw;
        c += gw * (x[j] - mean);
    }
    let c = c * rstd;
    let inv_m = (1.0 / m as f64) as f32;
    let (a, c) = (a * inv_m, c * inv_m);
    let (av, cv, rv) = (_mm512_set1_ps(a), _mm512_set1_ps(c), _mm512_set1_ps(rstd));
    let mut j = 0;
    while j < n16 {
        // SAFETY: as above; `dx`, `dw` and `db` hold `m` elements too.
        unsafe {
            let gv = _mm512_loadu_ps(g.as_ptr().add(j));
            let xv = _mm512_loadu_ps(x.as_ptr().add(j));
            let wv = _mm512_loadu_ps(w.as_ptr().add(j));
            let xh = _mm512_mul_ps(_mm512_sub_ps(xv, meanv), rv);
            let inner = _mm512_sub_ps(
                _mm512_sub_ps(_mm512_mul_ps(gv, wv), av),
                _mm512_mul_ps(xh, cv),
            );
            _mm512_storeu_ps(dx.as_mut_ptr().add(j), _mm512_mul_ps(rv, inner));
            let dwp = dw.as_mut_ptr().add(j);
            _mm512_storeu_ps(
                dwp,
                _mm512_add_ps(_mm512_loadu_ps(dwp), _mm512_mul_ps(gv, xh)),
            );
            let dbp = db.as_mut_ptr().add(j);
            _mm512_storeu_ps(dbp, _mm512_add_ps(_mm512_loadu_ps(dbp), gv));
        }
        j += 16;
    }
    for j in n16..m {
        let xh = (x[j] - mean) * rstd;
        dx[j] = rstd * (g[j] * w[j] - a - xh * c);
        dw[j] += g[j] * xh;
        db[j] += g[j];
    }
}
