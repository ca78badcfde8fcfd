//! Element types and PyTorch's type-promotion lattice.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

pub use half::{bf16, f16};

/// The dtype PyTorch calls the default (`torch.get_default_dtype()`): what
/// Python floats, float creation functions and integer-to-float promotion
/// produce. A floating dtype's [`DType::index`] (float32 at first); read on
/// every creation, so an atomic rather than a lock.
static DEFAULT_FLOAT: AtomicU8 = AtomicU8::new(DType::F32 as u8);

/// The element types a tensor can hold, by category (bool, integers,
/// floating point) and within a category by width. Promotion is PyTorch's
/// table ([`DType::promote`]), which is not this order: uint8 with int8 is
/// int16, float16 with bfloat16 is float32.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

/// Every dtype, in [`DType::index`] order.
pub const ALL_DTYPES: [DType; 10] = [
    DType::Bool,
    DType::U8,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

/// Bits a packed dtype takes ([`DType::index`] is below `1 << DTYPE_BITS`).
pub const DTYPE_BITS: u32 = 4;

impl DType {
    /// The current default floating dtype (`set_default_dtype`).
    #[inline]
    pub fn default_float() -> DType {
        DType::from_index(DEFAULT_FLOAT.load(Ordering::Relaxed))
    }

    /// Sets the default floating dtype; `dt` must be floating (the binding
    /// checks it and raises PyTorch's error otherwise).
    pub fn set_default_float(dt: DType) {
        debug_assert!(dt.is_float());
        DEFAULT_FLOAT.store(dt.index(), Ordering::Relaxed);
    }

    /// A number in 0..10 naming the dtype, for packing it into
    /// [`DTYPE_BITS`] bits of a word.
    #[inline]
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The dtype whose [`index`](Self::index) is `i & 15` (an index past
    /// the last dtype reads as float64; packed words never hold one).
    #[inline]
    pub fn from_index(i: u8) -> DType {
        ALL_DTYPES[((i & 15) as usize).min(9)]
    }

    /// float16, bfloat16, float32, float64.
    #[inline]
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// float16 and bfloat16: stored in 16 bits, computed in float32.
    #[inline]
    pub fn is_low_precision(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// The integer types (not bool).
    #[inline]
    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64
        )
    }

    /// Whether the type can hold negative values (PyTorch's `is_signed`).
    pub fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8)
    }

    /// The dtype kernels compute in: float32 for float16/bfloat16 (each
    /// result rounded once on the way out, as PyTorch's CPU kernels do), the
    /// dtype itself otherwise.
    #[inline]
    pub fn compute(self) -> DType {
        if self.is_low_precision() {
            DType::F32
        } else {
            self
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// The name Python sees after `ferrograd.` (`ferrograd.float32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The short name PyTorch's error messages use (`Float`, `Half`).
    pub fn scalar_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }

    /// The C++ type name some of PyTorch's messages use (`float`, `long int`).
    pub fn cpp_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "unsigned char",
            DType::I8 => "signed char",
            DType::I16 => "short int",
            DType::I32 => "int",
            DType::I64 => "long int",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }

    /// bool < integer < floating point.
    #[inline]
    pub fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => 1,
            _ => 2,
        }
    }

    /// PyTorch's promotion table (`torch.promote_types`): within a category
    /// the wider type, uint8 with int8 is int16 (the narrowest type holding
    /// both), float16 with bfloat16 is float32; across categories the type of
    /// the higher category.
    pub fn promote(self, other: DType) -> DType {
        if self == other {
            return self;
        }
        let (ca, cb) = (self.category(), other.category());
        if ca != cb {
            return if ca > cb { self } else { other };
        }
        match (self, other) {
            (DType::U8, DType::I8) | (DType::I8, DType::U8) => DType::I16,
            (DType::F16, DType::BF16) | (DType::BF16, DType::F16) => DType::F32,
            // uint8 is below every other signed integer in width or equal to
            // int8's, handled above; otherwise the enum orders by width.
            (a, b) => a.max(b),
        }
    }

    /// The dtype an op that must produce floats (division, `exp`, `mean`)
    /// computes in for an input of this dtype.
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::default_float()
        }
    }

    /// `torch.can_cast(self, to)`: casting may not go down a category
    /// (float to integer, integer to bool); within one any cast is allowed.
    pub fn can_cast(self, to: DType) -> bool {
        self.category() <= to.category()
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be stored in a tensor.
pub trait Element: Copy + Send + Sync + PartialEq + PartialOrd + Default + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    /// `v` converted as `tensor.to(dtype)` converts a float64 (see
    /// [`float_to_int`] for integers; float16/bfloat16 round through float32,
    /// as PyTorch's `static_cast` does).
    fn from_f64(v: f64) -> Self;
    /// The value as an int64 for integer and bool elements (exact); floats
    /// convert as [`from_f64`](Self::from_f64) would to int64.
    fn to_i64(self) -> i64;
    /// `v` converted as an int64 tensor's `.to(dtype)` does: integers wrap,
    /// floats round to nearest (directly, not through float64).
    fn from_i64(v: i64) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    fn into_typed(v: Vec<Self>) -> TypedVec;
}

/// A vector of any element type, tagged with its dtype.
pub enum TypedVec {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    // NaN is true, as any nonzero.
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn into_typed(v: Vec<Self>) -> TypedVec {
        TypedVec::Bool(v)
    }
}

/// A float converted to an integer type as PyTorch does on x86-64, where
/// `static_cast` is the truncating `cvtt` instruction: in range the value
/// truncates toward zero; NaN, infinities and values past int64 become
/// int64's minimum. int64 and int32 take that result of their own width
/// (`cvttsd2si` of 32 bits for int32: out of its range is `i32::MIN`); the
/// narrower types keep the low bits of the 32-bit conversion, so 300.0 to
/// uint8 is 44 and -1.0 is 255.
#[inline(always)]
pub fn float_to_i64(v: f64) -> i64 {
    // `as` saturates and maps NaN to 0; the hardware gives the minimum.
    // -2^63 and 2^63, exactly.
    const LIMIT: f64 = -(i64::MIN as f64);
    if v.is_nan() || !(-LIMIT..LIMIT).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// The 32-bit truncating conversion (`cvttsd2si` with a 32-bit destination).
#[inline(always)]
pub fn float_to_i32(v: f64) -> i32 {
    if v.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&v) {
        i32::MIN
    } else {
        v as i32
    }
}

macro_rules! int_element {
    ($t:ty, $dt:expr, $variant:ident, $from_float:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                let f: fn(f64) -> $t = $from_float;
                f(v)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn zero() -> Self {
                0
            }
            #[inline(always)]
            fn one() -> Self {
                1
            }
            fn into_typed(v: Vec<Self>) -> TypedVec {
                TypedVec::$variant(v)
            }
        }
    };
}

int_element!(i64, DType::I64, I64, float_to_i64);
int_element!(i32, DType::I32, I32, float_to_i32);
int_element!(i16, DType::I16, I16, |v| float_to_i32(v) as i16);
int_element!(i8, DType::I8, I8, |v| float_to_i32(v) as i8);
int_element!(u8, DType::U8, U8, |v| float_to_i32(v) as u8);

macro_rules! float_element {
    ($t:ty, $dt:expr, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                float_to_i64(self as f64)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn zero() -> Self {
                0.0
            }
            #[inline(always)]
            fn one() -> Self {
                1.0
            }
            fn into_typed(v: Vec<Self>) -> TypedVec {
                TypedVec::$variant(v)
            }
        }
    };
}

float_element!(f32, DType::F32, F32);
float_element!(f64, DType::F64, F64);

macro_rules! half_element {
    ($t:ty, $dt:expr, $variant:ident, $from_f32:path) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }
            // Through float32, as PyTorch's constructor from double does.
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from_f32(v as f32)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                float_to_i64(self.to_f32() as f64)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                $from_f32(v as f32)
            }
            #[inline(always)]
            fn zero() -> Self {
                <$t>::ZERO
            }
            #[inline(always)]
            fn one() -> Self {
                <$t>::ONE
            }
            fn into_typed(v: Vec<Self>) -> TypedVec {
                TypedVec::$variant(v)
            }
        }
    };
}

half_element!(f16, DType::F16, F16, f16::from_f32);
half_element!(
    bf16,
    DType::BF16,
    BF16,
    crate::kernels::convert::f32_to_bf16
);

/// Floating-point elements the float kernels are written for (float32 and
/// float64; float16/bfloat16 are computed in float32 and rounded once).
pub trait Float: Element + num_traits::Float + std::iter::Sum + std::ops::AddAssign {
    /// `exp` as the elementwise kernels compute it: float32's vectorisable
    /// form (within 1 ulp), float64's libm.
    fn exp_fast(self) -> Self;
    /// `self ** e` as the elementwise kernels compute it: C's `pow` with
    /// the exact forms `x * x`, `x * x * x`, `x`, `1 / x` for `e` = 2, 3,
    /// 1, -1; vectorisable forms for both (within 1 ulp).
    fn pow_fast(self, e: Self) -> Self;
    /// `ln` as the `log` op computes it: float32's vectorisable form
    /// (within 1 ulp), float64's libm.
    fn ln_fast(self) -> Self;
}
impl Float for f32 {
    #[inline(always)]
    fn exp_fast(self) -> Self {
        crate::kernels::math::exp_f32(self)
    }
    #[inline(always)]
    fn pow_fast(self, e: Self) -> Self {
        crate::kernels::vmath::pow_f32(self, e)
    }
    #[inline(always)]
    fn ln_fast(self) -> Self {
        crate::kernels::vmath::log_f32(self)
    }
}
impl Float for f64 {
    #[inline(always)]
    fn exp_fast(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn pow_fast(self, e: Self) -> Self {
        crate::kernels::vmath::pow_f64(self, e)
    }
    #[inline(always)]
    fn ln_fast(self) -> Self {
        self.ln()
    }
}

/// Calls `$body` with `$T` bound to the Rust type of `$dtype` (every dtype).
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::tensor::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::tensor::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::tensor::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::tensor::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::tensor::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::tensor::DType::F16 => {
                type $T = $crate::tensor::f16;
                $body
            }
            $crate::tensor::DType::BF16 => {
                type $T = $crate::tensor::bf16;
                $body
            }
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

/// Like [`dispatch!`] for float32 and float64, the dtypes float kernels are
/// written for. Callers compute float16/bfloat16 through float32 first
/// ([`DType::compute`]); any other dtype here is a bug.
#[macro_export]
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $body
            }
            other => unreachable!("float kernel called with {other}"),
        }
    };
}

/// Like [`dispatch!`] without float16/bfloat16: the dtypes whose
/// arithmetic is native (the low-precision floats are computed in float32 by
/// the caller: [`DType::compute`]).
#[macro_export]
macro_rules! dispatch_native {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::tensor::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::tensor::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::tensor::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::tensor::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::tensor::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $body
            }
            other => unreachable!("native kernel called with {other}"),
        }
    };
}

/// Arithmetic every dtype supports, so one kernel body serves all of them.
/// Bool follows PyTorch: `+` is `or`, `*` is `and`. Integers wrap, as
/// PyTorch's do; float16/bfloat16 compute each result in float32 and round
/// it once.
pub trait Arith: Element {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn max_of(self, o: Self) -> Self;
    fn min_of(self, o: Self) -> Self;
}

impl Arith for bool {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn max_of(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn min_of(self, o: Self) -> Self {
        self & o
    }
}

macro_rules! int_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn max_of(self, o: Self) -> Self {
                self.max(o)
            }
            #[inline(always)]
            fn min_of(self, o: Self) -> Self {
                self.min(o)
            }
        }
    };
}

int_arith!(i64);
int_arith!(i32);
int_arith!(i16);
int_arith!(i8);
int_arith!(u8);

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            // NaN propagates, as in PyTorch's maximum/minimum, and a tie
            // gives the second operand (`maximum(-0.0, 0.0)` is 0.0).
            #[inline(always)]
            fn max_of(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn min_of(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self < o {
                    self
                } else {
                    o
                }
            }
        }
    };
}

float_arith!(f32);
float_arith!(f64);

macro_rules! half_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                <$t as Element>::from_f64((self.to_f32() + o.to_f32()) as f64)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() - o.to_f32())
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() * o.to_f32())
            }
            #[inline(always)]
            fn max_of(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().max_of(o.to_f32()))
            }
            #[inline(always)]
            fn min_of(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().min_of(o.to_f32()))
            }
        }
    };
}

half_arith!(f16);
half_arith!(bf16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trips_and_fits_its_bits() {
        for d in ALL_DTYPES {
            assert_eq!(DType::from_index(d.index()), d);
            assert!(u32::from(d.index()) < 1 << DTYPE_BITS);
        }
    }

    #[test]
    fn promotion_is_symmetric_and_idempotent() {
        for a in ALL_DTYPES {
            for b in ALL_DTYPES {
                assert_eq!(a.promote(b), b.promote(a));
                let p = a.promote(b);
                assert_eq!(p.promote(a), p);
                assert_eq!(p.promote(b), p);
            }
        }
        assert_eq!(DType::U8.promote(DType::I8), DType::I16);
        assert_eq!(DType::F16.promote(DType::BF16), DType::F32);
        assert_eq!(DType::I64.promote(DType::F16), DType::F16);
    }

    #[test]
    fn float_to_int_is_x86s_truncation() {
        assert_eq!(i64::from_f64(f64::NAN), i64::MIN);
        assert_eq!(i32::from_f64(f64::INFINITY), i32::MIN);
        assert_eq!(u8::from_f64(300.0), 44);
        assert_eq!(u8::from_f64(-1.0), 255);
        assert_eq!(i8::from_f64(-3.7), -3);
        assert_eq!(i16::from_i64(65543), 7);
    }
}
