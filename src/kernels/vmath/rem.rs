//! float32 `fmod` as vector code, for the quotients of at most 2^28 that
//! nearly every tensor has.
//!
//! `x % y` on float32 is a call to the C library's `fmodf` per element (no
//! instruction set has it), which keeps `fmod`, `remainder` and
//! `floor_divide` scalar. The result of fmod is exact, and for a quotient
//! below 2^28 float64 gets it exactly in one step: `q = trunc(x / y)` is
//! the true truncated quotient or one above it (the float64 division can
//! round up onto the next integer, never down past one, since the integers
//! are representable), `q * y` has at most 28 + 24 bits so `x - q * y` by a
//! fused multiply-add is exact, and one correction by `|y|` takes the
//! overshoot back. Larger quotients need a longer reduction: the callers
//! test [`fmod_needs_libm`] over the operands first and use `%` when any
//! element needs it.

/// Quotients from here on may not be exact in one float64 step.
const LIMIT: f64 = (1u64 << 28) as f64;

/// Whether `fmod_f32(x, y)` may differ from C's `fmodf(x, y)`: a finite
/// quotient `|x / y|` of 2^28 or more. (NaN, infinite and zero operands
/// come out right from the one step.) Tested without a division, as
/// `|x| >= 2^27 |y|` in float32 (exact: a power-of-two factor, which only
/// overflows where `|x|` cannot reach it), which also takes in quotients
/// from 2^27: a few more pairs than needed go to the C library, none that
/// need it is missed, and the test runs in float32 lanes at memory speed.
#[inline(always)]
pub(crate) fn fmod_needs_libm(x: f32, y: f32) -> bool {
    let (ax, ay) = (x.abs(), y.abs());
    ax < f32::INFINITY && ay > 0.0 && ax >= ay * (LIMIT as f32 * 0.5)
}

/// C's `fmodf(x, y)` (the result has `x`'s sign), bit for bit, where
/// [`fmod_needs_libm`] is false.
#[inline(always)]
pub(crate) fn fmod_f32(x: f32, y: f32) -> f32 {
    let (xx, yy) = (x as f64, y as f64);
    let ay = yy.abs();
    let q = (xx / yy).trunc();
    // Exact (see the module doc); NaN for y = 0 or an infinite x, as fmodf.
    let r = (-q).mul_add(yy, xx);
    // The quotient one too far: the remainder crossed zero.
    let r = if xx >= 0.0 {
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
    let r = if ay == f64::INFINITY && xx.abs() != f64::INFINITY {
        xx
    } else {
        r
    };
    // A zero remainder keeps x's sign (x - q y rounds an exact 0 to +0).
    r.abs().copysign(xx) as f32
}
