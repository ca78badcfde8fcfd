//! Branch-free elementwise math that vectorises, for the float32 paths where
//! the C library's scalar functions would dominate the run time.

/// tanh(x) for float32, within 1 ulp (`kernels::vmath`'s form, evaluated in
/// float64); `tests::tanh_f32_is_accurate` checks the bound.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    super::vmath::tanh_f32(x)
}

/// exp(x) for float32, within 1 ulp (`kernels::vmath`'s form, evaluated in
/// float64 without `mul_add`, so a closure that calls it inlines into the
/// vectorised loops); `tests::exp_f32_is_accurate` checks the bound.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    super::vmath::exp_f32(x)
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
        assert!(worst <= 4.0, "worst error {worst} ulp");
        assert_eq!(tanh_f32(0.0), 0.0);
        assert!(tanh_f32(-0.0).is_sign_negative());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }
}
