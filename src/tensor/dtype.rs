//! Element types and PyTorch's type-promotion lattice.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// The dtype PyTorch calls the default (`torch.get_default_dtype()`): what
/// Python floats, float creation functions and integer-to-float promotion
/// produce. Only float32 (0) or float64 (1); read on every creation, so an
/// atomic rather than a lock.
static DEFAULT_FLOAT: AtomicU8 = AtomicU8::new(0);

/// The element types a tensor can hold. The order is the promotion order:
/// combining two dtypes yields the larger one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum DType {
    Bool,
    I64,
    F32,
    F64,
}

impl DType {
    /// The current default floating dtype (`set_default_dtype`).
    #[inline]
    pub fn default_float() -> DType {
        if DEFAULT_FLOAT.load(Ordering::Relaxed) == 0 {
            DType::F32
        } else {
            DType::F64
        }
    }

    /// Sets the default floating dtype; `dt` must be float32 or float64
    /// (the binding checks it and raises PyTorch's error otherwise).
    pub fn set_default_float(dt: DType) {
        debug_assert!(dt.is_float());
        DEFAULT_FLOAT.store(u8::from(dt == DType::F64), Ordering::Relaxed);
    }

    /// A number in 0..4 naming the dtype, for packing it into a word.
    #[inline]
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The dtype whose [`index`](Self::index) is `i & 3`.
    #[inline]
    pub fn from_index(i: u8) -> DType {
        match i & 3 {
            0 => DType::Bool,
            1 => DType::I64,
            2 => DType::F32,
            _ => DType::F64,
        }
    }

    #[inline]
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::I64 | DType::F64 => 8,
            DType::F32 => 4,
        }
    }

    /// The name Python sees after `ferrograd.` (`ferrograd.float32`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The short name PyTorch's error messages use (`Float`, `Double`).
    pub fn scalar_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::I64 => "Long",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }

    /// The C++ type name some of PyTorch's messages use (`float`, `long int`).
    pub fn cpp_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I64 => "long int",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }

    pub fn promote(self, other: DType) -> DType {
        self.max(other)
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
    fn from_f64(v: f64) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    fn into_typed(v: Vec<Self>) -> TypedVec;
}

/// A vector of any element type, tagged with its dtype.
pub enum TypedVec {
    Bool(Vec<bool>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
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

macro_rules! numeric_element {
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
            fn zero() -> Self {
                0 as $t
            }
            #[inline(always)]
            fn one() -> Self {
                1 as $t
            }
            fn into_typed(v: Vec<Self>) -> TypedVec {
                TypedVec::$variant(v)
            }
        }
    };
}

numeric_element!(i64, DType::I64, I64);
numeric_element!(f32, DType::F32, F32);
numeric_element!(f64, DType::F64, F64);

/// Floating-point elements: everything differentiable is one of these.
pub trait Float: Element + num_traits::Float + std::iter::Sum + std::ops::AddAssign {
    /// `exp` as the elementwise kernels compute it: float32's vectorisable
    /// form (within 1 ulp), float64's libm.
    fn exp_fast(self) -> Self;
}
impl Float for f32 {
    #[inline(always)]
    fn exp_fast(self) -> Self {
        crate::kernels::math::exp_f32(self)
    }
}
impl Float for f64 {
    #[inline(always)]
    fn exp_fast(self) -> Self {
        self.exp()
    }
}

/// Calls `$body` with `$T` bound to the Rust type of `$dtype`.
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::tensor::DType::Bool => {
                type $T = bool;
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
        }
    };
}

/// Like [`dispatch!`] for the numeric dtypes; bool is first widened by the caller.
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

/// Arithmetic every dtype supports, so one kernel body serves all of them.
/// Bool follows PyTorch: `+` is `or`, `*` is `and`.
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

impl Arith for i64 {
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
