//! Branch-free elementwise math that vectorises, for the float32 paths where
//! the C library's scalar functions would dominate the run time.

/// tanh(x) for float32 as a rational minimax approximation (odd degree-13
/// numerator over even degree-6 denominator) on [-7.9, 7.9], beyond which
/// float32 tanh is exactly +-1. Within a few ulp of the correctly rounded
/// result; `tests::tanh_f32_is_accurate` checks the bound.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    const CLAMP: f32 = 7.905_311;
    const A1: f32 = 4.893_524_6e-3;
    const A3: f32 = 6.372_619_3e-4;
    const A5: f32 = 1.485_722_4e-5;
    const A7: f32 = 5.122_297e-8;
    const A9: f32 = -8.604_672e-11;
    const A11: f32 = 2.000_188e-13;
    const A13: f32 = -2.760_768_5e-16;
    const B0: f32 = 4.893_525e-3;
    const B2: f32 = 2.268_434_6e-3;
    const B4: f32 = 1.185_347e-4;
    const B6: f32 = 1.198_258_4e-6;
    // Tiny inputs: tanh(x) = x to float precision, and keeps the sign of -0.
    let tiny = x.abs() < 4e-4;
    let c = x.clamp(-CLAMP, CLAMP);
    let x2 = c * c;
    let mut p = x2.mul_add(A13, A11);
    p = x2.mul_add(p, A9);
    p = x2.mul_add(p, A7);
    p = x2.mul_add(p, A5);
    p = x2.mul_add(p, A3);
    p = x2.mul_add(p, A1);
    p *= c;
    let mut q = x2.mul_add(B6, B4);
    q = x2.mul_add(q, B2);
    q = x2.mul_add(q, B0);
    // The ratio rounds to just below 1 at the clamp; float32 tanh is 1 there.
    let r = (p / q).clamp(-1.0, 1.0);
    if tiny {
        x
    } else if c.abs() >= CLAMP {
        1.0f32.copysign(x)
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tanh_f32_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -12.0f32;
        while x < 12.0 {
            let exact = (x as f64).tanh();
            let got = tanh_f32(x) as f64;
            let ulp = (exact as f32).abs().max(f32::MIN_POSITIVE) as f64 * f32::EPSILON as f64;
            worst = worst.max((got - exact).abs() / ulp);
            x += 1.0e-4;
        }
        assert!(worst <= 4.0, "worst error {worst} ulp");
        assert_eq!(tanh_f32(0.0), 0.0);
        assert!(tanh_f32(-0.0).is_sign_negative());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }
}
