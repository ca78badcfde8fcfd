//! Branch-free elementwise math that vectorises, for the float32 paths where
//! the C library's scalar functions would dominate the run time.

/// tanh(x) for float32, within 1 ulp (`kernels::vmath`'s form, evaluated in
/// float32 lanes); `tests::tanh_f32_is_accurate` checks the bound.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    super::vmath::tanh_f32(x)
}

/// exp(x) for float32: `x = n ln2 + r` with |r| <= ln2/2, a degree-7
/// polynomial for exp(r), and 2^n applied as two exact power-of-two factors
/// so results that overflow become inf and tiny ones round through the
/// subnormals, both without a branch. Within 1 ulp of the correctly rounded
/// result; `tests::exp_f32_is_accurate` checks the bound.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that n * LN2_HI is exact for every n used here.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding 1.5 * 2^23 rounds to an integer (to nearest even), which then
    // sits in the low mantissa bits.
    const SHIFT: f32 = 12_582_912.0;
    // exp is inf in float32 above 88.73 and rounds to 0 below -103.98; the
    // clamp keeps n (and so both scale factors) in range. NaN passes through.
    // Below -104 (a masked score's -inf, say) the result is 0 outright: the
    // scaling would underflow through subnormals, which costs a microcode
    // assist per element on Intel cores (softmax over a causal mask ran 4x
    // slower), so those lanes compute exp(0) and are replaced.
    let under = x < -104.0;
    let c = if under { 0.0 } else { x.clamp(-104.0, 89.0) };
    let t = c.mul_add(LOG2E, SHIFT);
    let n = t - SHIFT;
    let r = n.mul_add(-LN2_HI, c);
    let r = n.mul_add(-LN2_LO, r);
    let mut p = r.mul_add(1.0 / 5040.0, 1.0 / 720.0);
    p = r.mul_add(p, 1.0 / 120.0);
    p = r.mul_add(p, 1.0 / 24.0);
    p = r.mul_add(p, 1.0 / 6.0);
    p = r.mul_add(p, 0.5);
    p = r.mul_add(p, 1.0);
    p = r.mul_add(p, 1.0);
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    let s1 = f32::from_bits((n1.wrapping_add(127) << 23) as u32);
    let s2 = f32::from_bits((n2.wrapping_add(127) << 23) as u32);
    let e = p * s1 * s2;
    if under {
        0.0
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_f32_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.7 {
            let exact = (x as f64).exp();
            let got = exp_f32(x) as f64;
            let ulp = (exact as f32).abs() as f64 * f32::EPSILON as f64;
            worst = worst.max((got - exact).abs() / ulp);
            x += 1.3e-4;
        }
        assert!(worst <= 1.0, "worst error {worst} ulp");
        // Subnormal results: within one subnormal step.
        let mut x = -103.9f32;
        while x < -87.0 {
            let exact = (x as f64).exp();
            let step = f32::from_bits(1) as f64;
            assert!(
                (exp_f32(x) as f64 - exact).abs() <= step.max(exact * 2.5e-7),
                "{x}"
            );
            x += 1.0e-3;
        }
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-0.0), 1.0);
        assert_eq!(exp_f32(1.0), std::f32::consts::E);
        assert_eq!(exp_f32(88.8), f32::INFINITY);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::MAX), f32::INFINITY);
        assert_eq!(exp_f32(-104.0), 0.0);
        assert_eq!(exp_f32(-104.5), 0.0);
        assert_eq!(exp_f32(-1.0e30), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(f32::MIN), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(88.72), 88.72f32.exp());
    }

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
        assert!(worst <= 1.0, "worst error {worst} ulp");
        assert_eq!(tanh_f32(0.0), 0.0);
        assert!(tanh_f32(-0.0).is_sign_negative());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }
}
