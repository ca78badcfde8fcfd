//! Random generators reproducing PyTorch's CPU generator bit for bit.
//!
//! A generator is PyTorch's `at::mt19937` (a Mersenne Twister seeded by the
//! low 32 bits of a 64-bit seed) plus the cached second Box-Muller sample of
//! `at::normal_distribution`. The samplers below follow ATen's CPU kernels
//! (`DistributionsHelper.h`, `TransformationHelper.h`, `cpu/DistributionTemplates.h`,
//! `randperm_cpu`, the multinomial kernel) draw for draw, so a seeded program
//! gets PyTorch's numbers. Where ATen on x86 takes a SIMD or MKL path the
//! function says which one is followed.

use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::error::{alloc_vec, Error, Result};
use crate::tensor::{numel, DType, Shape, Tensor};

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UMASK: u32 = 0x8000_0000;
const LMASK: u32 = 0x7fff_ffff;

/// The seed PyTorch's default generator starts from (`default_rng_seed_val`).
pub const DEFAULT_SEED: u64 = 67280421310721;

/// Bytes of PyTorch's `CPUGeneratorImplState` (what `get_rng_state` returns).
pub const STATE_BYTES: usize = 5056;
/// Bytes of the older `CPUGeneratorImplStateLegacy`, still accepted by `set_state`.
const LEGACY_STATE_BYTES: usize = 5048;

/// One CPU generator: `at::CPUGeneratorImpl`'s fields.
#[derive(Clone)]
pub struct CpuGenerator {
    seed: u64,
    state: [u32; N],
    left: i32,
    next: u32,
    next_double_normal: Option<f64>,
    next_float_normal: Option<f32>,
}

impl CpuGenerator {
    pub fn new(seed: u64) -> Self {
        let mut g = CpuGenerator {
            seed: 0,
            state: [0; N],
            left: 1,
            next: 0,
            next_double_normal: None,
            next_float_normal: None,
        };
        g.set_seed(seed);
        g
    }

    /// `manual_seed`: a fresh stream and no cached normal sample.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
        self.state[0] = seed as u32;
        for j in 1..N {
            let p = self.state[j - 1];
            self.state[j] = 1812433253u32
                .wrapping_mul(p ^ (p >> 30))
                .wrapping_add(j as u32);
        }
        self.left = 1;
        self.next = 0;
        self.next_double_normal = None;
        self.next_float_normal = None;
    }

    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    fn next_state(&mut self) {
        let s = &mut self.state;
        let twist = |u: u32, v: u32| {
            (((u & UMASK) | (v & LMASK)) >> 1) ^ if v & 1 != 0 { MATRIX_A } else { 0 }
        };
        for k in 0..N - M {
            s[k] = s[k + M] ^ twist(s[k], s[k + 1]);
        }
        for k in N - M..N - 1 {
            s[k] = s[k + M - N] ^ twist(s[k], s[k + 1]);
        }
        s[N - 1] = s[M - 1] ^ twist(s[N - 1], s[0]);
        self.left = N as i32;
        self.next = 0;
    }

    /// `generator->random()`: one 32-bit draw.
    #[inline]
    pub fn random(&mut self) -> u32 {
        self.left -= 1;
        if self.left == 0 {
            self.next_state();
        }
        let mut y = self.state[self.next as usize];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `generator->random64()`: two 32-bit draws, the first the high half.
    #[inline]
    pub fn random64(&mut self) -> u64 {
        let hi = self.random() as u64;
        let lo = self.random() as u64;
        (hi << 32) | lo
    }

    /// `uniform_real_distribution<float>(0, 1)`: 24 bits of one 32-bit draw.
    #[inline]
    pub fn uniform_f32(&mut self) -> f32 {
        (self.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// `uniform_real_distribution<double>(0, 1)`: 53 bits of one 64-bit draw.
    #[inline]
    pub fn uniform_f64(&mut self) -> f64 {
        (self.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `at::normal_distribution<double>(mean, std)`: Box-Muller, the sine
    /// sample cached in the generator for the next call.
    pub fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        // `val * std + mean`, contracted to one FMA in PyTorch's build.
        if let Some(z) = self.next_double_normal.take() {
            return z.mul_add(std, mean);
        }
        let u1 = self.uniform_f64();
        let u2 = self.uniform_f64();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        (r * theta.cos()).mul_add(std, mean)
    }

    /// PyTorch's byte layout of `CPUGeneratorImplState` (x86-64/aarch64 little endian).
    pub fn get_state(&self) -> Vec<u8> {
        let mut b = vec![0u8; STATE_BYTES];
        b[0..8].copy_from_slice(&self.seed.to_le_bytes());
        b[8..12].copy_from_slice(&self.left.to_le_bytes());
        b[12..16].copy_from_slice(&1i32.to_le_bytes());
        b[16..24].copy_from_slice(&(self.next as u64).to_le_bytes());
        for (k, s) in self.state.iter().enumerate() {
            b[24 + 8 * k..32 + 8 * k].copy_from_slice(&(*s as u64).to_le_bytes());
        }
        if let Some(y) = self.next_double_normal {
            b[5024..5032].copy_from_slice(&y.to_le_bytes());
            b[5040..5044].copy_from_slice(&1i32.to_le_bytes());
        }
        if let Some(f) = self.next_float_normal {
            b[5048..5052].copy_from_slice(&f.to_le_bytes());
            b[5052] = 1;
        }
        b
    }

    /// Restores a state from `get_state` (or PyTorch's legacy layout); on
    /// error the generator is unchanged.
    pub fn set_state(&mut self, b: &[u8]) -> Result<()> {
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let i32_at = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let f64_at = |o: usize| f64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let (mut float_normal, double_normal);
        match b.len() {
            LEGACY_STATE_BYTES => {
                float_normal = None;
                double_normal = (i32_at(5040) != 0).then(|| {
                    let theta = 2.0 * std::f64::consts::PI * f64_at(5016);
                    f64_at(5032) * theta.sin()
                });
            }
            STATE_BYTES => {
                float_normal = None;
                if b[5052] != 0 {
                    float_normal = Some(f32::from_le_bytes(b[5048..5052].try_into().unwrap()));
                }
                double_normal = (i32_at(5040) != 0).then(|| f64_at(5024));
            }
            n => {
                return Err(Error::runtime(format!(
                    "Expected either a CPUGeneratorImplStateLegacy of size {LEGACY_STATE_BYTES} \
                     or a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG \
                     state size to be {n}"
                )))
            }
        }
        let left = i32_at(8);
        let seeded = i32_at(12) != 0;
        let next = u64_at(16) as u32;
        if !(seeded && left > 0 && left <= N as i32 && next as usize <= N) {
            return Err(Error::runtime("Invalid mt19937 state"));
        }
        self.seed = u64_at(0);
        self.left = left;
        self.next = next;
        for k in 0..N {
            self.state[k] = u64_at(24 + 8 * k) as u32;
        }
        self.next_double_normal = double_normal;
        self.next_float_normal = float_normal.take();
        Ok(())
    }
}

/// A generator shared between Python objects and threads.
pub type GenRef = Arc<Mutex<CpuGenerator>>;

static DEFAULT: LazyLock<GenRef> =
    LazyLock::new(|| Arc::new(Mutex::new(CpuGenerator::new(DEFAULT_SEED))));

/// `torch.default_generator`.
pub fn default_generator() -> &'static GenRef {
    &DEFAULT
}

pub fn manual_seed(seed: u64) {
    DEFAULT.lock().set_seed(seed);
}

/// Runs `f` on `gen`, or on the default generator when `None`.
pub fn with_gen<R>(gen: Option<&GenRef>, f: impl FnOnce(&mut CpuGenerator) -> R) -> R {
    let mut g = gen.unwrap_or(&DEFAULT).lock();
    f(&mut g)
}

fn float_only(dtype: DType, kernel: &str) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "\"{kernel}\" not implemented for '{}'",
            dtype.scalar_name()
        )))
    }
}

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
        let mut v = alloc_vec(n);
        v.extend((0..n).map(|_| g.uniform_f32().mul_add(to - from, from)));
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
            let mut d: Vec<f32> = alloc_vec(n);
            d.extend((0..n).map(|_| g.uniform_f32()));
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
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has FMA, checked just above.
        unsafe { fill16_f32_fma(d, mean, std) };
        return;
    }
    fill16_f32_body(d, mean, std)
}

/// The same arithmetic with `mul_add` as one instruction instead of a libm
/// call (an FMA is exact either way, so the numbers do not change).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
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

/// `random_(from, to)`: `random() % range + from`, 64-bit draws when the
/// range needs them; `range` is `to - from` as an unsigned number.
pub fn randint(g: &mut CpuGenerator, low: i64, range: u64, shape: Shape, dtype: DType) -> Tensor {
    let n = numel(&shape);
    let mut v: Vec<i64> = alloc_vec(n);
    let wide = range >= 1 << 32 && dtype != DType::Bool;
    v.extend((0..n).map(|_| {
        let r = if wide {
            g.random64() % range
        } else {
            g.random() as u64 % range
        };
        low.wrapping_add(r as i64)
    }));
    cast(Tensor::from_vec(v, shape), dtype)
}

/// `random_()`: integers uniform over what the dtype holds exactly
/// (`uniform_int_distribution`).
pub fn random_full(g: &mut CpuGenerator, shape: Shape, dtype: DType) -> Tensor {
    let n = numel(&shape);
    match dtype {
        DType::Bool => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| g.random() & 1 == 1));
            Tensor::from_vec(v, shape)
        }
        DType::I64 => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random64() % (1u64 << 63)) as i64));
            Tensor::from_vec(v, shape)
        }
        DType::F32 => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random() as u64 % ((1u64 << 24) + 1)) as f32));
            Tensor::from_vec(v, shape)
        }
        DType::F64 => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random64() % ((1u64 << 53) + 1)) as f64));
            Tensor::from_vec(v, shape)
        }
        // 32 random bits modulo the type's largest value + 1 (its mantissa's
        // range for the 16-bit floats), as PyTorch's `uniform_int`.
        dt => {
            let modulus: u64 = match dt {
                DType::U8 => 256,
                DType::I8 => 128,
                DType::I16 => 1 << 15,
                DType::I32 => 1 << 31,
                DType::F16 => (1 << 11) + 1,
                _ => (1 << 8) + 1,
            };
            let mut v: Vec<i64> = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random() as u64 % modulus) as i64));
            crate::ops::cast_data(&Tensor::from_vec(v, shape), dt)
        }
    }
}

fn cast(t: Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        t
    } else {
        crate::ops::cast_data(&t, dtype)
    }
}

/// `bernoulli_(p)` with a scalar `p`: the generic kernel (a double uniform
/// per element, 1 when below `p`). PyTorch builds with MKL take a different
/// path on Intel CPUs (`viRngBernoulli`), whose numbers this does not give.
pub fn bernoulli_scalar(
    g: &mut CpuGenerator,
    shape: Shape,
    dtype: DType,
    p: f64,
) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::runtime(format!(
            "bernoulli_ expects p to be in [0, 1], but got p={p}"
        )));
    }
    let n = numel(&shape);
    let mut v: Vec<f64> = alloc_vec(n);
    v.extend((0..n).map(|_| if g.uniform_f64() < p { 1.0 } else { 0.0 }));
    Ok(cast(Tensor::from_vec(v, shape), dtype))
}

/// `bernoulli(p)` with a tensor of probabilities: the uniform has `p`'s
/// precision (a float draw for float32 `p`, a double draw for float64).
pub fn bernoulli_tensor(g: &mut CpuGenerator, p: &Tensor, dtype: DType) -> Result<Tensor> {
    let shape = p.shape();
    let check = |x: f64| {
        if (0.0..=1.0).contains(&x) {
            Ok(())
        } else {
            Err(Error::runtime(
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.",
            ))
        }
    };
    let out: Vec<f64> = match p.dtype() {
        DType::F64 => {
            let ps = p.to_vec::<f64>();
            ps.iter().try_for_each(|&x| check(x))?;
            ps.iter()
                .map(|&x| if g.uniform_f64() < x { 1.0 } else { 0.0 })
                .collect()
        }
        DType::F32 | DType::F16 | DType::BF16 => {
            let ps = p.to_vec::<f32>();
            ps.iter().try_for_each(|&x| check(x as f64))?;
            ps.iter()
                .map(|&x| if g.uniform_f32() < x { 1.0 } else { 0.0 })
                .collect()
        }
        other => {
            return Err(Error::runtime(format!(
                "\"bernoulli_tensor_cpu_p_\" not implemented for '{}'",
                other.scalar_name()
            )))
        }
    };
    Ok(cast(Tensor::from_vec(out, shape), dtype))
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

/// The logical (row-major) positions of `t`'s elements in the order
/// PyTorch's TensorIterator visits them (memory order); `None` when the two
/// orders agree.
fn memory_order(t: &Tensor) -> Option<Vec<usize>> {
    if t.is_contiguous() || t.numel() < 2 {
        return None;
    }
    let (shape, strides) = {
        let v = t.view();
        (v.shape.clone(), v.strides.clone())
    };
    let n = t.numel();
    let mut offsets: Vec<usize> = crate::error::filled_vec(n, 0);
    let mut idx = vec![0usize; shape.len()];
    for off in offsets.iter_mut() {
        *off = idx.iter().zip(strides.iter()).map(|(i, s)| i * s).sum();
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| offsets[i]);
    Some(order)
}

/// Samples drawn in `t`'s memory order (`drawn`, one per element in draw
/// order) put at their logical positions, so a transposed or sliced
/// destination gets PyTorch's numbers in the same memory cells.
pub fn in_memory_order(t: &Tensor, drawn: Tensor) -> Tensor {
    let Some(order) = memory_order(t) else {
        return drawn;
    };
    let shape = t.shape();
    crate::dispatch!(drawn.dtype(), T => {
        let src = drawn.to_vec::<T>();
        let mut out = src.clone();
        for (k, &pos) in order.iter().enumerate() {
            out[pos] = src[k];
        }
        Tensor::from_vec(out, shape)
    })
}

/// `p` (already of `t`'s shape) in `t`'s memory order, flattened: the
/// probabilities in the order the draws for `t` use them.
pub fn to_memory_order(t: &Tensor, p: &Tensor) -> Tensor {
    let flat = p.contiguous_data();
    let Some(order) = memory_order(t) else {
        return flat;
    };
    let shape = p.shape();
    crate::dispatch!(flat.dtype(), T => {
        let src = flat.to_vec::<T>();
        Tensor::from_vec(order.iter().map(|&i| src[i]).collect::<Vec<T>>(), shape)
    })
}

/// `randperm(n)`: `randperm_cpu`'s Fisher-Yates with 32-bit draws (the
/// branch every `n` below `u32::MAX / 20` takes), and its inside-out
/// variant with 64-bit draws above.
pub fn randperm(g: &mut CpuGenerator, n: usize) -> Vec<i64> {
    let mut r: Vec<i64> = alloc_vec(n);
    if (n as u64) < u32::MAX as u64 / 20 {
        r.extend(0..n as i64);
        for i in 0..n.saturating_sub(1) {
            let z = g.random() as usize % (n - i);
            r.swap(i, i + z);
        }
    } else {
        r.resize(n, 0);
        for i in 0..n {
            let z = (g.random64() % (i as u64 + 1)) as usize;
            r[i] = r[z];
            r[z] = i as i64;
        }
    }
    r
}

/// Multinomial sampling with replacement (the CPU kernel): each row's
/// cumulative sum normalised by its total, the last bucket forced to 1, and a
/// double uniform located by binary search. `rows` holds the probabilities
/// (already validated) row after row, each `k` long.
pub fn multinomial_with_replacement<T>(
    g: &mut CpuGenerator,
    rows: &[T],
    k: usize,
    draws: usize,
) -> Vec<i64>
where
    T: Copy
        + PartialOrd
        + std::ops::Add<Output = T>
        + std::ops::Div<Output = T>
        + Into<f64>
        + From<u8>,
{
    let mut out = alloc_vec((rows.len() / k.max(1)).saturating_mul(draws));
    let mut cum: Vec<T> = crate::error::filled_vec(k, T::from(0));
    for row in rows.chunks_exact(k) {
        let mut sum = T::from(0);
        for (c, &p) in cum.iter_mut().zip(row) {
            sum = sum + p;
            *c = sum;
        }
        for c in cum.iter_mut() {
            *c = *c / sum;
        }
        cum[k - 1] = T::from(1);
        for _ in 0..draws {
            let u = g.uniform_f64();
            let (mut lo, mut hi) = (0usize, k);
            while hi > lo {
                let mid = lo + (hi - lo) / 2;
                if cum[mid].into() < u {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            out.push(lo as i64);
        }
    }
    out
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

/// `geometric_(p)`: `geometric_distribution<double>`,
/// `ceil(log(u) / log1p(-p))` from a double uniform, then cast (integer
/// dtypes too).
pub fn geometric(g: &mut CpuGenerator, shape: Shape, dtype: DType, p: f64) -> Result<Tensor> {
    if dtype == DType::Bool {
        return Err(Error::runtime(
            "\"geometric_cpu\" not implemented for 'Bool'".to_string(),
        ));
    }
    if !(p > 0.0 && p < 1.0) {
        return Err(Error::runtime(format!(
            "geometric_ expects p to be in (0, 1), but got p={p}"
        )));
    }
    let n = numel(&shape);
    let mut v: Vec<f64> = alloc_vec(n);
    v.extend((0..n).map(|_| (g.uniform_f64().ln() / (-p).ln_1p()).ceil()));
    Ok(cast(Tensor::from_vec(v, shape), dtype))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_reference_stream() {
        // The 10000th output of std::mt19937 seeded 5489 (C++11 [rand.predef]).
        let mut g = CpuGenerator::new(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = g.random();
        }
        assert_eq!(last, 4123659995);
    }

    #[test]
    fn state_round_trip_keeps_the_cached_normal() {
        let mut g = CpuGenerator::new(3);
        g.normal_f64(0.0, 1.0);
        let s = g.get_state();
        let mut h = CpuGenerator::new(0);
        h.set_state(&s).unwrap();
        assert_eq!(g.normal_f64(0.0, 1.0), h.normal_f64(0.0, 1.0));
        let a: Vec<u32> = (0..700).map(|_| g.random()).collect();
        let b: Vec<u32> = (0..700).map(|_| h.random()).collect();
        assert_eq!(a, b);
        assert!(h.set_state(&s[..100]).is_err());
    }
}
