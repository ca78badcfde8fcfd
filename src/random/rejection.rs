//! ATen's rejection samplers: gamma (Marsaglia-Tsang), Poisson and
//! binomial (inversion below a mean of 10, BTRS above).

use super::{cast, float_only, CpuGenerator};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

/// ATen's `sample_gamma` (Marsaglia and Tsang's rejection method, with
/// alpha < 1 boosted to alpha + 1 and scaled by u^(1/alpha)), drawing double
/// uniforms and `normal_distribution<double>` samples (which share the
/// generator's cached Box-Muller value). `single` reproduces the float32
/// kernel, where the arithmetic on alpha itself is in float; the constants
/// are float literals in both, as in ATen.
pub fn sample_gamma(g: &mut CpuGenerator, alpha: f64, single: bool) -> f64 {
    let third = 1.0f32 / 3.0f32;
    let mut scale = 1.0f64;
    let mut alpha = alpha;
    if alpha < 1.0 {
        if alpha == 0.0 {
            return 0.0;
        }
        let inv = if single {
            (1.0f32 / alpha as f32) as f64
        } else {
            1.0 / alpha
        };
        scale *= (1.0 - g.uniform_f64()).powf(inv);
        alpha = if single {
            (alpha as f32 + 1.0f32) as f64
        } else {
            alpha + 1.0
        };
    }
    let d = if single {
        (alpha as f32 - third) as f64
    } else {
        alpha - third as f64
    };
    let c = 1.0 / (9.0 * d).sqrt();
    let squeeze = 0.0331f32 as f64;
    loop {
        let (x, y) = loop {
            let x = g.normal_f64(0.0, 1.0);
            let y = 1.0 + c * x;
            // ATen redraws while y <= 0: a NaN y (alpha NaN) leaves the loop.
            if y > 0.0 || y.is_nan() {
                break (x, y);
            }
        };
        let v = y * y * y;
        let u = 1.0 - g.uniform_f64();
        let xx = x * x;
        if u < 1.0 - squeeze * xx * xx || u.ln() < 0.5 * xx + d * (1.0 - v + v.ln()) {
            return scale * d * v;
        }
    }
}

/// `_standard_gamma(alpha)`: one standard Gamma sample per concentration,
/// in row-major order, clamped below at the dtype's smallest normal number.
pub fn standard_gamma(g: &mut CpuGenerator, alpha: &Tensor) -> Result<Tensor> {
    let shape = alpha.shape();
    match alpha.dtype() {
        DType::F32 => {
            let v: Vec<f32> = alpha
                .to_vec::<f32>()
                .iter()
                .map(|&a| (sample_gamma(g, a as f64, true) as f32).max(f32::MIN_POSITIVE))
                .collect();
            Ok(Tensor::from_vec(v, shape))
        }
        DType::F64 => {
            let v: Vec<f64> = alpha
                .to_vec::<f64>()
                .iter()
                .map(|&a| sample_gamma(g, a, false).max(f64::MIN_POSITIVE))
                .collect();
            Ok(Tensor::from_vec(v, shape))
        }
        other => Err(Error::runtime(format!(
            "\"gamma_cpu\" not implemented for '{}'",
            other.scalar_name()
        ))),
    }
}

/// The double Gamma samples `_sample_dirichlet` normalises (ATen draws them
/// in double whatever the dtype), in row-major order.
pub fn dirichlet_gammas(g: &mut CpuGenerator, alpha: &Tensor) -> Result<Vec<f64>> {
    float_only(alpha.dtype(), "dirichlet")?;
    Ok(alpha
        .to_vec::<f64>()
        .iter()
        .map(|&a| sample_gamma(g, a, false).max(f64::MIN_POSITIVE))
        .collect())
}

/// ATen's `sample_poisson`: Hoermann's transformed rejection (PTRS) from
/// rate 10 on, the multiplication method below it, double uniforms.
pub fn sample_poisson(g: &mut CpuGenerator, lambda: f64) -> f64 {
    if lambda >= 10.0 {
        let slam = lambda.sqrt();
        let loglam = lambda.ln();
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let invalpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = g.uniform_f64() - 0.5;
            let v = g.uniform_f64();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return k;
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            if v.ln() + invalpha.ln() - (a / (us * us) + b).ln()
                <= -lambda + k * loglam - libm::lgamma(k + 1.0)
            {
                return k;
            }
        }
    }
    if lambda == 0.0 {
        return 0.0;
    }
    let enlam = (-lambda).exp();
    let (mut x, mut prod) = (0.0, 1.0);
    loop {
        prod *= g.uniform_f64();
        if prod > enlam {
            x += 1.0;
        } else {
            return x;
        }
    }
}

/// `poisson(rates)`: one sample per rate, in `rates`' dtype (float only).
pub fn poisson(g: &mut CpuGenerator, rates: &Tensor) -> Result<Tensor> {
    float_only(rates.dtype(), "poisson_cpu")?;
    let lam = rates.to_vec::<f64>();
    if lam.iter().any(|&l| l < 0.0 || l.is_nan()) {
        return Err(Error::runtime(
            "invalid Poisson rate, expected rate to be non-negative",
        ));
    }
    let v: Vec<f64> = lam.iter().map(|&l| sample_poisson(g, l)).collect();
    Ok(cast(Tensor::from_vec(v, rates.shape()), rates.dtype()))
}

/// The Stirling-series tail log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2],
/// tabulated below 10 and by its asymptotic series above, as ATen's BTRS uses it.
fn stirling_tail(k: f64) -> f64 {
    const TAIL: [f64; 10] = [
        0.081_061_466_795_327_2,
        0.041_340_695_955_409_2,
        0.027_677_925_684_998_3,
        0.020_790_672_103_765_09,
        0.016_644_691_189_821_1,
        0.013_876_128_823_070_7,
        0.011_896_709_945_891_7,
        0.010_411_265_261_972_0,
        0.009_255_462_182_712_73,
        0.008_330_563_433_362_87,
    ];
    if k <= 9.0 {
        return TAIL[k as usize];
    }
    let kp1sq = (k + 1.0) * (k + 1.0);
    (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp1sq) / kp1sq) / (k + 1.0)
}

/// Rounds `x` to the sampler's scalar type (float32 when `single`).
fn scalar(x: f64, single: bool) -> f64 {
    if single {
        x as f32 as f64
    } else {
        x
    }
}

/// ATen's `binomial_inversion`: geometric waiting times summed until they pass
/// `count` (log1p(-prob) in the scalar type).
fn binomial_inversion(g: &mut CpuGenerator, count: f64, prob: f64, single: bool) -> f64 {
    let logprob = if single {
        (-(prob as f32)).ln_1p() as f64
    } else {
        (-prob).ln_1p()
    };
    let (mut geom_sum, mut num_geom) = (0.0f64, 0.0f64);
    loop {
        let u = g.uniform_f64();
        geom_sum += (u.ln() / logprob).ceil();
        if geom_sum > count {
            return num_geom;
        }
        num_geom += 1.0;
    }
}

/// ATen's BTRS (Hoermann's transformed rejection with squeeze), with the
/// products of `count` and `prob` taken in the scalar type as there.
fn btrs(g: &mut CpuGenerator, count: f64, prob: f64, single: bool) -> f64 {
    let np = scalar(count * prob, single);
    let stddev = scalar(
        scalar(np * scalar(1.0 - prob, single), single).sqrt(),
        single,
    );
    let b = 1.15 + 2.53 * stddev;
    let a = -0.0873 + 0.0248 * b + 0.01 * prob;
    let c = np + 0.5;
    let v_r = 0.92 - 4.2 / b;
    let r = scalar(prob / scalar(1.0 - prob, single), single);
    let alpha = (2.83 + 5.1 / b) * stddev;
    let m = scalar((count + 1.0) * prob, single).floor();
    loop {
        let u = g.uniform_f64() - 0.5;
        let v = g.uniform_f64();
        let us = 0.5 - u.abs();
        let k = scalar(((2.0 * a / us + b) * u + c).floor(), single);
        if k < 0.0 || k > count {
            continue;
        }
        if us >= 0.07 && v <= v_r {
            return k;
        }
        let v = (v * alpha / (a / (us * us) + b)).ln();
        let upperbound = (m + 0.5) * ((m + 1.0) / (r * (count - m + 1.0))).ln()
            + (count + 1.0) * ((count - m + 1.0) / (count - k + 1.0)).ln()
            + (k + 0.5) * (r * (count - k + 1.0) / (k + 1.0)).ln()
            + stirling_tail(m)
            + stirling_tail(count - m)
            - stirling_tail(k)
            - stirling_tail(count - k);
        if v <= upperbound {
            return k;
        }
    }
}

/// ATen's `sample_binomial`: BTRS when the mean of the smaller tail is at
/// least 10, inversion below; `single` reproduces the float32 kernel.
pub fn sample_binomial(g: &mut CpuGenerator, count: f64, prob: f64, single: bool) -> f64 {
    if count.is_nan() {
        // The inversion loop would never pass a NaN count.
        return f64::NAN;
    }
    if count <= 0.0 || prob <= 0.0 {
        0.0
    } else if prob >= 1.0 {
        count
    } else if prob <= 0.5 {
        if scalar(count * prob, single) >= 10.0 {
            btrs(g, count, prob, single)
        } else {
            binomial_inversion(g, count, prob, single)
        }
    } else if prob > 0.5 {
        let q = scalar(1.0 - prob, single);
        if scalar(count * q, single) >= 10.0 {
            count - btrs(g, count, q, single)
        } else {
            count - binomial_inversion(g, count, q, single)
        }
    } else {
        f64::NAN
    }
}

/// `binomial(count, prob)`: one sample per element of the two same-shaped
/// tensors, in their dtype (float only).
pub fn binomial(g: &mut CpuGenerator, count: &Tensor, prob: &Tensor) -> Result<Tensor> {
    float_only(count.dtype(), "binomial_cpu")?;
    let single = count.dtype() == DType::F32;
    let (n, p) = (count.to_vec::<f64>(), prob.to_vec::<f64>());
    let v: Vec<f64> = n
        .iter()
        .zip(&p)
        .map(|(&n, &p)| sample_binomial(g, n, p, single))
        .collect();
    Ok(cast(Tensor::from_vec(v, count.shape()), count.dtype()))
}
