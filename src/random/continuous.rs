//! Real-valued distributions: uniform and normal (with ATen's 16-wide
//! Box-Muller blocks) and the ones drawn from one double uniform or normal
//! per element (exponential, Cauchy, log-normal).

use super::{cast, float_only, CpuGenerator};
use crate::error::{alloc_vec, Error, Result};
use crate::tensor::{numel, DType, Shape, Tensor};

/// `uniform_(from, to)`: `uniform_kernel` with the bounds cast to the dtype first.
pub fn uniform(
    g: &mut CpuGenerator,
    shape: Shape,
    dtype: DType,
    from: f64,
    to: f64,
) -> Result<Tensor> {
    float_only(dtype, "check_uniform_bounds")?;
    let n = numel(&shape);
    if dtype.is_low_precision() {
        // Drawn as float32 and rounded, as PyTorch's kernel computes in float.
        let t = uniform(g, shape, DType::F32, from, to)?;
        return Ok(crate::ops::cast_data(&t, dtype));
    }
    Ok(if dtype == DType::F32 {
        let (from, to) = (from as f32, to as f32);
        let mut v = crate::error::filled_vec(n, 0.0f32);
        g.fill_uniform_f32(&mut v);
        scale_shift(&mut v, to - from, from);
        Tensor::from_vec(v, shape)
    } else {
        let mut v = alloc_vec(n);
        v.extend((0..n).map(|_| g.uniform_f64().mul_add(to - from, from)));
        Tensor::from_vec(v, shape)
    })
}

/// `normal_(mean, std)`: `normal_kernel`. Fewer than 16 elements, or a
/// non-contiguous destination, take the scalar `normal_distribution<double>`
/// (with the generator's cached sample); otherwise `normal_fill`: uniforms
/// first, then Box-Muller over blocks of 16 with the last block redrawn.
/// float32 follows the AVX2 kernel (`normal_fill_16_AVX2`), which every x86
/// build of PyTorch runs on CPUs with AVX2.
pub fn normal(
    g: &mut CpuGenerator,
    shape: Shape,
    dtype: DType,
    mean: f64,
    std: f64,
    contiguous: bool,
) -> Result<Tensor> {
    float_only(dtype, "normal_kernel_cpu")?;
    let n = numel(&shape);
    let vectorised = n >= 16 && contiguous;
    Ok(match dtype {
        // float16/bfloat16: PyTorch's scalar path (fewer than 16 values) is
        // the double sample rounded, matched here; from 16 values on its
        // generic kernel computes in the 16-bit type itself, which ferrograd
        // does not reproduce: it draws float32's vectorised samples and
        // rounds them once.
        DType::F16 | DType::BF16 if vectorised => {
            let t = normal(g, shape, DType::F32, mean, std, contiguous)?;
            crate::ops::cast_data(&t, dtype)
        }
        DType::F16 | DType::BF16 => {
            let mut v: Vec<f64> = alloc_vec(n);
            v.extend((0..n).map(|_| g.normal_f64(mean, std)));
            crate::ops::cast_data(&Tensor::from_vec(v, shape), dtype)
        }
        DType::F32 if vectorised => {
            let mut d = crate::error::filled_vec(n, 0.0f32);
            g.fill_uniform_f32(&mut d);
            let (mean, std) = (mean as f32, std as f32);
            normal_fill(&mut d, |d| fill16_f32(d, mean, std), || g.uniform_f32());
            Tensor::from_vec(d, shape)
        }
        DType::F64 if vectorised => {
            let mut d: Vec<f64> = alloc_vec(n);
            d.extend((0..n).map(|_| g.uniform_f64()));
            normal_fill(&mut d, |d| fill16_f64(d, mean, std), || g.uniform_f64());
            Tensor::from_vec(d, shape)
        }
        DType::F32 => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| g.normal_f64(mean, std) as f32));
            Tensor::from_vec(v, shape)
        }
        _ => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| g.normal_f64(mean, std)));
            Tensor::from_vec(v, shape)
        }
    })
}

/// `x * a + b` for every `x`, rounded once (PyTorch's compiler contracts
/// it), with the FMA instruction where the CPU has it: the portable
/// `mul_add` is a libm call per element.
fn scale_shift(v: &mut [f32], a: f32, b: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn fused(v: &mut [f32], a: f32, b: f32) {
            for x in v.iter_mut() {
                *x = x.mul_add(a, b);
            }
        }
        // SAFETY: the CPU has AVX2 and FMA, checked just above.
        unsafe { fused(v, a, b) };
        return;
    }
    for x in v.iter_mut() {
        *x = x.mul_add(a, b);
    }
}

fn normal_fill<T>(d: &mut [T], mut fill16: impl FnMut(&mut [T]), mut draw: impl FnMut() -> T) {
    let n = d.len();
    for block in d.chunks_exact_mut(16) {
        fill16(block);
    }
    if !n.is_multiple_of(16) {
        let tail = &mut d[n - 16..];
        for x in tail.iter_mut() {
            *x = draw();
        }
        fill16(tail);
    }
}

fn fill16_f64(d: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        d[j] = (radius * theta.cos()).mul_add(std, mean);
        d[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}

fn fill16_f32(d: &mut [f32], mean: f32, std: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has FMA and AVX2, checked just above.
        unsafe { fill16_f32_fma(d, mean, std) };
        return;
    }
    fill16_f32_body(d, mean, std)
}

/// The same arithmetic with `mul_add` as one instruction instead of a libm
/// call (an FMA is exact either way, so the numbers do not change), and the
/// eight lanes in one AVX2 register as PyTorch's kernel holds them (each
/// lane's operations are the scalar ones: the values do not change either).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fill16_f32_fma(d: &mut [f32], mean: f32, std: f32) {
    fill16_f32_body(d, mean, std)
}

#[inline(always)]
fn fill16_f32_body(d: &mut [f32], mean: f32, std: f32) {
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    for j in 0..8 {
        let u1 = 1.0 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0 * avx_mathfun::log(u1)).sqrt();
        let theta = two_pi * u2;
        let (s, c) = avx_mathfun::sincos(theta);
        d[j] = (radius * c).mul_add(std, mean);
        d[j + 8] = (radius * s).mul_add(std, mean);
    }
}

/// Scalar transcriptions of `log256_ps` and `sincos256_ps` from ATen's
/// `avx_mathfun.h` (Cephes polynomials in float), lane for lane, so float32
/// `randn` matches PyTorch's AVX2 kernel bit for bit. The compiler that
/// builds PyTorch contracts some multiply-adds of those intrinsics into FMAs
/// (`-ffp-contract=fast` with `-mfma`); the `mul_add`s below are where it
/// does, found by comparing with PyTorch's output over 32,000 samples.
// The constants are written as published so they round to the same floats.
#[allow(clippy::excessive_precision)]
mod avx_mathfun {
    #[inline(always)]
    pub fn log(x: f32) -> f32 {
        // Inputs here are in (0, 1]: no zero, negative or NaN lanes to mask.
        let bits = x.to_bits();
        let mut e = ((bits >> 23) as i32 - 0x7f) as f32;
        let m = f32::from_bits((bits & !0x7f80_0000) | 0x3f00_0000);
        e += 1.0;
        let sqrthf = std::f32::consts::FRAC_1_SQRT_2;
        let mut x = m;
        let mask = x < sqrthf;
        let tmp = if mask { x } else { 0.0 };
        x -= 1.0;
        e -= if mask { 1.0 } else { 0.0 };
        x += tmp;
        let z = x * x;
        let mut y = 7.037_683_629_2e-2_f32;
        for c in [
            -1.151_461_031_0e-1_f32,
            1.167_699_874_0e-1,
            -1.242_014_084_6e-1,
            1.424_932_278_7e-1,
            -1.666_805_766_5e-1,
            2.000_071_476_5e-1,
            -2.499_999_399_3e-1,
            3.333_333_117_4e-1,
        ] {
            y = y.mul_add(x, c);
        }
        y *= x;
        y = y.mul_add(z, e * -2.121_944_40e-4);
        y = z.mul_add(-0.5, y);
        x += y;
        e.mul_add(0.693_359_375, x)
    }

    /// `(sin x, cos x)` for `x` in [0, 2 pi).
    #[inline(always)]
    pub fn sincos(x: f32) -> (f32, f32) {
        let sign_sin = x.is_sign_negative();
        let x = x.abs();
        let mut y = x * 1.273_239_544_735_16_f32;
        let mut j = y as i32;
        j += 1;
        j &= !1;
        y = j as f32;
        let j4 = j;
        let poly_mask = j & 2 == 0;
        let swap_sin = j & 4 != 0;
        let swap_cos = (j4 - 2) & 4 == 0; // negate the cosine
        let mut x = x;
        x = y.mul_add(-0.785_156_25, x);
        x = y.mul_add(-2.418_756_484_985_351_562_5e-4, x);
        x = y.mul_add(-3.774_894_977_445_941_08e-8, x);
        let z = x * x;
        let mut yc = 2.443_315_711_809_948e-5_f32;
        yc = yc.mul_add(z, -1.388_731_625_493_765e-3);
        yc = yc.mul_add(z, 4.166_664_568_298_827e-2);
        yc *= z;
        yc = yc.mul_add(z, -(z * 0.5));
        yc += 1.0;
        let mut ys = -1.951_529_589_1e-4_f32;
        ys = ys.mul_add(z, 8.332_160_873_6e-3);
        ys = ys.mul_add(z, -1.666_665_461_1e-1);
        ys *= z;
        ys = ys.mul_add(x, x);
        let (s, c) = if poly_mask { (ys, yc) } else { (yc, ys) };
        let s = if swap_sin != sign_sin { -s } else { s };
        let c = if swap_cos { -c } else { c };
        (s, c)
    }
}

/// `exponential_(lambd)`: `-1/lambd * log1p(-u)` from a double uniform,
/// then cast, whatever the dtype (`exponential_distribution<double>`).
pub fn exponential(g: &mut CpuGenerator, shape: Shape, dtype: DType, lambd: f64) -> Result<Tensor> {
    float_only(dtype, "exponential_cpu")?;
    if !(lambd > 0.0 && lambd.is_finite()) {
        return Err(Error::runtime(format!(
            "exponential_ expects lambda > 0.0, but found lambda={lambd}"
        )));
    }
    let n = numel(&shape);
    let mut v: Vec<f64> = alloc_vec(n);
    v.extend((0..n).map(|_| -1.0 / lambd * (-g.uniform_f64()).ln_1p()));
    Ok(cast(Tensor::from_vec(v, shape), dtype))
}

/// `cauchy_(median, sigma)`: `cauchy_distribution<double>` per element,
/// `median + sigma * tan(pi * (u - 0.5))` from a double uniform (the
/// multiply-add fused, as in PyTorch's AVX2 build), then cast.
pub fn cauchy(
    g: &mut CpuGenerator,
    shape: Shape,
    dtype: DType,
    median: f64,
    sigma: f64,
) -> Result<Tensor> {
    float_only(dtype, "cauchy_cpu")?;
    if sigma.is_nan() || sigma <= 0.0 {
        return Err(Error::runtime(format!(
            "cauchy_ expects sigma > 0.0, but found sigma={sigma}"
        )));
    }
    let n = numel(&shape);
    let mut v: Vec<f64> = alloc_vec(n);
    v.extend((0..n).map(|_| {
        let u = g.uniform_f64();
        sigma.mul_add((std::f64::consts::PI * (u - 0.5)).tan(), median)
    }));
    Ok(cast(Tensor::from_vec(v, shape), dtype))
}

/// `log_normal_(mean, std)`: `lognormal_distribution<double>`, the exp of
/// the scalar (Box-Muller, cached) normal sample, then cast.
pub fn log_normal(
    g: &mut CpuGenerator,
    shape: Shape,
    dtype: DType,
    mean: f64,
    std: f64,
) -> Result<Tensor> {
    float_only(dtype, "log_normal_cpu")?;
    if std.is_nan() || std <= 0.0 {
        return Err(Error::runtime(format!(
            "log_normal_ expects std > 0.0, but found std={std}"
        )));
    }
    let n = numel(&shape);
    let mut v: Vec<f64> = alloc_vec(n);
    v.extend((0..n).map(|_| g.normal_f64(mean, std).exp()));
    Ok(cast(Tensor::from_vec(v, shape), dtype))
}
