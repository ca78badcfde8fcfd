//! float32 `fmod` as vector code, for the quotients below 2^23 that nearly
//! every tensor has.
//!
//! `x % y` on float32 is a call to the C library's `fmodf` per element (no
//! instruction set has it), which keeps `fmod`, `remainder` and
//! `floor_divide` scalar. The result of fmod is exact, and for a quotient
//! below 2^24 float32 itself gets it in one step: `q = trunc(x / y)` is the
//! true truncated quotient or one above it (the rounded division can land
//! on the next integer, never below one, since those integers are
//! representable), `x - q * y` by a fused multiply-add is exact (the true
//! remainder, or it minus `y`, both multiples of `y`'s last place below
//! `2|y|`), and one correction by `|y|` takes the overshoot back. float32
//! lanes divide twice as many elements per instruction as float64 ones, at
//! a third of the latency. Larger quotients need a longer reduction: the
//! callers test [`fmod_needs_libm`] over the operands first and use `%`
//! when any element needs it.

/// Quotients from here on may not be exact in one float32 step (2^24 is
/// the bound; from 2^23 up is what the test below flags).
const LIMIT: f32 = 8_388_608.0;

/// Whether `fmod_f32(x, y)` may differ from C's `fmodf(x, y)`: a finite
/// quotient `|x / y|` of 2^24 or more. (NaN, infinite and zero operands
/// come out right from the one step.) Tested without a division, as
/// `|x| >= 2^23 |y|` (exact: a power-of-two factor, which only overflows
/// where `|x|` cannot reach it), which also takes in quotients from 2^23: a
/// few more pairs than needed go to the C library, none that needs it is
/// missed.
#[inline(always)]
pub(crate) fn fmod_needs_libm(x: f32, y: f32) -> bool {
    let (ax, ay) = (x.abs(), y.abs());
    (ax < f32::INFINITY) & (ay > 0.0) & (ax >= ay * LIMIT)
}

/// C's `fmodf(x, y)` (the result has `x`'s sign), bit for bit, where
/// [`fmod_needs_libm`] is false.
#[inline(always)]
pub(crate) fn fmod_f32(x: f32, y: f32) -> f32 {
    let ay = y.abs();
    let q = (x / y).trunc();
    // Exact (see the module doc); NaN for y = 0 or an infinite x, as fmodf.
    let r = (-q).mul_add(y, x);
    // The quotient one too far: the remainder crossed zero.
    let r = if x >= 0.0 {
        if r < 0.0 {
            r + ay
        } else {
            r
        }
    } else if r > 0.0 {
        r - ay
    } else {
        r
    };
    // fmod(x, +-inf) = x for a finite x (the step gives 0 * inf = NaN).
    let r = if ay == f32::INFINITY && x.abs() != f32::INFINITY {
        x
    } else {
        r
    };
    // A zero remainder keeps x's sign (x - q y rounds an exact 0 to +0).
    r.abs().copysign(x)
}
