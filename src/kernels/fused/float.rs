//! The float types fused programs run in ([`FusedFloat`]), with the exact
//! functions ferrograd's eager kernels use for them, and the scalar helpers
//! the instructions' forward and backward expressions share.

use std::cell::RefCell;
use std::ops::{Add, Div, Mul, Neg, Sub};

use super::super::{math, trig_f32, vmath};

/// The float types programs run in, with the exact functions ferrograd's
/// eager kernels use for them.
pub trait FusedFloat:
    Copy
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Into<f64>
    + std::fmt::Debug
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    /// `x as T` (what `Element::from_f64` does).
    fn of(x: f64) -> Self;
    fn k_exp(self) -> Self;
    fn k_tanh(self) -> Self;
    fn k_erf(self) -> Self;
    fn k_sin(self) -> Self;
    fn k_cos(self) -> Self;
    /// `d[i] = sin(a[i])`, vectorised where the element form is not.
    fn sin_slice(d: &mut [Self], a: &[Self]);
    fn cos_slice(d: &mut [Self], a: &[Self]);
    /// `s[i] = sin(a[i])`, `c[i] = cos(a[i])`, each as the slice forms.
    fn sincos_slice(s: &mut [Self], c: &mut [Self], a: &[Self]);
    fn k_tan(self) -> Self;
    fn k_ln(self) -> Self;
    fn k_ln_1p(self) -> Self;
    fn k_exp_m1(self) -> Self;
    fn k_log2(self) -> Self;
    fn k_sqrt(self) -> Self;
    fn k_abs(self) -> Self;
    fn k_powf(self, e: Self) -> Self;
    fn k_is_nan(self) -> bool;
    fn k_max(self, o: Self) -> Self;
    fn k_min(self, o: Self) -> Self;
    /// `self * o`: the plain product's bits, but formed in a wider type
    /// where there is one, so that a product which underflows to a
    /// subnormal takes no microcode assist (about 150 cycles per vector
    /// instruction on Intel cores). `one` must be 1.0, from
    /// [`std::hint::black_box`]: see [`mul_wide_f32`].
    fn mul_wide(self, o: Self, one: f64) -> Self;
    /// Whether a block holds a nonzero value so small that a product with
    /// it may underflow: the cue for [`FusedFloat::mul_wide`]. Always false
    /// where there is no wider type.
    fn any_tiny(s: &[Self]) -> bool;
    /// This thread's reusable buffer (empty if it is in use); hand it back
    /// with [`FusedFloat::put_scratch`].
    #[doc(hidden)]
    fn take_scratch() -> Vec<Self>;
    #[doc(hidden)]
    fn put_scratch(v: Vec<Self>);
}

macro_rules! fused_float {
    ($t:ty, $scratch:ident, $exp:expr, $tanh:expr, $erf:expr, $sin:expr, $cos:expr, $sins:expr, $coss:expr, $sincos:expr, $wide:expr, $tiny:expr, $tan:expr, $ln:expr, $ln1p:expr, $expm1:expr, $log2:expr) => {
        thread_local! {
            static $scratch: RefCell<Vec<$t>> = const { RefCell::new(Vec::new()) };
        }
        impl FusedFloat for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn of(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn k_exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn k_tanh(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn k_erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn k_sin(self) -> Self {
                $sin(self)
            }
            #[inline(always)]
            fn k_cos(self) -> Self {
                $cos(self)
            }
            #[inline(always)]
            fn sin_slice(d: &mut [Self], a: &[Self]) {
                $sins(d, a)
            }
            #[inline(always)]
            fn cos_slice(d: &mut [Self], a: &[Self]) {
                $coss(d, a)
            }
            #[inline(always)]
            fn sincos_slice(s: &mut [Self], c: &mut [Self], a: &[Self]) {
                $sincos(s, c, a)
            }
            #[inline(always)]
            fn k_tan(self) -> Self {
                $tan(self)
            }
            #[inline(always)]
            fn k_ln(self) -> Self {
                $ln(self)
            }
            #[inline(always)]
            fn k_ln_1p(self) -> Self {
                $ln1p(self)
            }
            #[inline(always)]
            fn k_exp_m1(self) -> Self {
                $expm1(self)
            }
            #[inline(always)]
            fn k_log2(self) -> Self {
                $log2(self)
            }
            #[inline(always)]
            fn k_sqrt(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn k_abs(self) -> Self {
                self.abs()
            }
            #[inline(always)]
            fn k_powf(self, e: Self) -> Self {
                crate::tensor::Float::pow_fast(self, e)
            }
            #[inline(always)]
            fn k_is_nan(self) -> bool {
                self.is_nan()
            }
            // As `Arith::max_of`/`min_of`: NaN propagates.
            #[inline(always)]
            fn k_max(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn k_min(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self < o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn mul_wide(self, o: Self, one: f64) -> Self {
                $wide(self, o, one)
            }
            #[inline(always)]
            fn any_tiny(s: &[Self]) -> bool {
                $tiny(s)
            }
            fn take_scratch() -> Vec<Self> {
                $scratch.with(|cell| std::mem::take(&mut *cell.borrow_mut()))
            }
            fn put_scratch(v: Vec<Self>) {
                $scratch.with(|cell| {
                    let mut slot = cell.borrow_mut();
                    if v.len() > slot.len() {
                        *slot = v;
                    }
                })
            }
        }
    };
}

fused_float!(
    f32,
    SCRATCH_F32,
    math::exp_f32,
    math::tanh_f32,
    vmath::erf_f32,
    trig_f32::sin_f32,
    trig_f32::cos_f32,
    trig_f32::sin_slice,
    trig_f32::cos_slice,
    trig_f32::sincos_slice,
    mul_wide_f32,
    any_tiny_f32,
    trig_f32::tan_f32,
    vmath::log_f32,
    vmath::log1p_f32,
    vmath::expm1_f32,
    vmath::log2_f32
);
fused_float!(
    f64,
    SCRATCH_F64,
    f64::exp,
    f64::tanh,
    libm::erf,
    f64::sin,
    f64::cos,
    map_slice(f64::sin),
    map_slice(f64::cos),
    |s: &mut [f64], c: &mut [f64], a: &[f64]| {
        map_slice(f64::sin)(s, a);
        map_slice(f64::cos)(c, a)
    },
    |g: f64, u: f64, _: f64| g * u,
    |_: &[f64]| false,
    f64::tan,
    f64::ln,
    f64::ln_1p,
    f64::exp_m1,
    f64::log2
);

/// `g * u` for float32: exact in float64 (48 significant bits, far from
/// float64's subnormals), so its one rounding to float32 gives the float32
/// product's bits, subnormal or not. The compiler would narrow a float64
/// product of two widened floats back to a float32 one; `u * one`, with a
/// `one` it cannot see, stops that without a step on `g`'s path.
#[inline(always)]
pub(super) fn mul_wide_f32(g: f32, u: f32, one: f64) -> f32 {
    (g as f64 * (u as f64 * one)) as f32
}

/// Nonzero magnitudes below 2^-63: two factors at or above it cannot give
/// a product below float32's smallest normal, 2^-126.
#[inline(always)]
fn any_tiny_f32(s: &[f32]) -> bool {
    const TINY: f32 = 1.0 / 9_223_372_036_854_775_808.0;
    let tiny = |v: f32| (v.abs() < TINY) & (v != 0.0);
    let mut c = s.chunks_exact(16);
    let mut hit = false;
    for w in &mut c {
        let w: &[f32; 16] = w.try_into().unwrap();
        hit |= w.iter().fold(false, |h, &v| h | tiny(v));
    }
    hit | c.remainder().iter().fold(false, |h, &v| h | tiny(v))
}

/// The element function `f` over a slice (float64 keeps libm's scalar calls).
fn map_slice(f: fn(f64) -> f64) -> impl Fn(&mut [f64], &[f64]) {
    move |d, a| d.iter_mut().zip(a).for_each(|(d, &x)| *d = f(x))
}

/// `x ** e` for a Python number `e`, as the eager `pow_scalar` computes it
/// (`arith::powf_special`): `sqrt` and `1 / sqrt` for `e = +-1/2`, else
/// [`powf_exact`].
#[inline(always)]
pub(super) fn powf_special<T: FusedFloat>(x: T, e: T) -> T {
    let half = T::ONE / (T::ONE + T::ONE);
    if e == half {
        x.k_sqrt()
    } else if e == -half {
        T::ONE / x.k_sqrt()
    } else {
        powf_exact(x, e)
    }
}

/// `x ** e` for a tensor exponent, as the eager `pow` computes it
/// (`arith::powf_exact`): C's `pow` with exact products for the small
/// integer exponents.
#[inline(always)]
pub(super) fn powf_exact<T: FusedFloat>(x: T, e: T) -> T {
    let two = T::ONE + T::ONE;
    if e == two {
        x * x
    } else if e == two + T::ONE {
        x * x * x
    } else if e == T::ONE {
        x
    } else if e == -T::ONE {
        T::ONE / x
    } else {
        x.k_powf(e)
    }
}

#[inline(always)]
pub(super) fn sigmoid<T: FusedFloat>(x: T) -> T {
    T::ONE / (T::ONE + (-x).k_exp())
}

#[inline(always)]
/// `ops::sign`'s values: 0 for both zeros and for NaN.
pub(super) fn sign<T: FusedFloat>(x: T) -> T {
    if x > T::ZERO {
        T::ONE
    } else if x < T::ZERO {
        -T::ONE
    } else {
        T::ZERO
    }
}

pub(super) const GELU_KAPPA: f64 = 0.044715;
/// sqrt(2 / pi), as in ops/activation.rs.
pub(super) const GELU_BETA: f64 = 0.797_884_560_802_865_4;

/// The share of the gradient the first operand of `maximum` (`is_max`) or
/// `minimum` gets: all where it wins, none where it loses, half on a tie.
#[inline(always)]
pub(super) fn extreme_share<T: FusedFloat>(x: T, other: T, is_max: bool) -> T {
    let lost = if is_max { x < other } else { x > other };
    if x == other {
        T::of(0.5)
    } else if lost {
        T::ZERO
    } else {
        T::ONE
    }
}
