//! float32 `erf`, `erfc` and `erfinv`, evaluated in float64 from fitted
//! polynomials and rounded once.

use super::core::{exp_core, log_core, poly};

/// erf(x) / x as a polynomial in x^2 on [0, 0.81] (x in [0, 0.9]); relative
/// error 1.3e-13.
const ERF_SMALL: [f64; 9] = [
    1.128_379_167_095_363_1,
    -0.376_126_389_002_485_46,
    0.112_837_915_758_392_72,
    -0.026_866_158_709_596_032,
    0.005_223_902_193_164_218,
    -0.000_854_563_272_802_813_9,
    0.000_119_983_234_857_423_96,
    -1.421_217_636_387_005_2e-5,
    1.148_095_314_008_005e-6,
];

/// erf(x) on [0.9, 3.95] as a polynomial in `(x - 2.425) / 1.525`; relative
/// error 1.0e-9. Beyond 3.95 erf rounds to 1 in float32.
const ERF_MID: [f64; 17] = [
    0.999_395_233_825_651_9,
    0.004_806_184_629_124_377,
    -0.017_773_902_251_651_028,
    0.040_095_118_124_595_32,
    -0.060_359_206_463_137_73,
    0.061_300_985_005_305_626,
    -0.038_139_624_721_766_33,
    0.006_426_181_898_625_318,
    0.013_093_241_621_968_966,
    -0.013_900_007_030_833_031,
    0.004_797_095_242_502_886,
    0.002_501_248_817_880_691_7,
    -0.003_125_843_439_197_599,
    0.000_492_506_464_078_254_6,
    0.000_604_440_609_343_520_1,
    -0.000_176_336_533_340_116_16,
    -3.733_981_142_987_512e-5,
];

/// `erf(|x|)` in float64 for `|x| <= 3.95`, NaN or any larger value (which
/// the callers replace).
#[inline(always)]
fn erf_abs(a: f64) -> f64 {
    let small = a * poly(a * a, &ERF_SMALL);
    let u = (a - 2.425) * (1.0 / 1.525);
    let mid = poly(u, &ERF_MID);
    if a < 0.9 {
        small
    } else {
        mid
    }
}

/// `erf(x)`, within 1 ulp.
#[inline(always)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    let a = (x as f64).abs();
    let r = if a < 3.95 { erf_abs(a) } else { 1.0 } as f32;
    let r = if x.is_nan() { x } else { r };
    r.copysign(x)
}

/// erfc(x) e^(x^2) x as a polynomial in `(1/x - 0.6055) / 0.5065` for x in
/// [0.9, 10.1]; relative error 2.0e-12. Beyond 10.1 erfc is 0 in float32.
const ERFCX: [f64; 19] = [
    0.492_869_669_548_515_9,
    -0.086_839_710_644_222_3,
    -0.001_460_817_972_503_929,
    0.010_184_480_942_267_512,
    -0.005_457_632_954_407_091,
    0.001_685_574_152_137_332_5,
    -0.000_105_394_978_299_798_72,
    -0.000_274_494_887_774_989_7,
    0.000_232_956_741_485_376_04,
    -0.000_120_887_002_458_166_6,
    4.086_049_907_204_05e-5,
    -1.549_565_811_340_129_6e-6,
    -7.749_004_698_970_959e-6,
    4.604_763_980_268_791e-6,
    -4.861_435_643_063_326e-6,
    5.714_214_449_156_74e-6,
    -1.372_816_073_004_64e-6,
    -1.708_101_200_745_713_5e-6,
    8.223_910_077_972_524e-7,
];

/// `erfc(x) = 1 - erf(x)`, within 1 ulp, without the cancellation for
/// large `x` (the tail is `e^(-x^2)` times a fitted slowly varying factor).
#[inline(always)]
pub(crate) fn erfc_f32(x: f32) -> f32 {
    let a = (x as f64).abs();
    let near = 1.0 - erf_abs(a);
    let c = if a > 10.1 { 10.1 } else { a };
    let t = 1.0 / c;
    let tail = exp_core(-(c * c)) * poly((t - 0.6055) * (1.0 / 0.5065), &ERFCX) * t;
    let tail = if a > 10.1 { 0.0 } else { tail };
    let e = if a < 0.9 { near } else { tail };
    // erfc(-a) = 2 - erfc(a).
    let r = if x < 0.0 { 2.0 - e } else { e } as f32;
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// erfinv(x) / x as a polynomial in `(w - 3.125) / 3.125`, w = -ln(1 - x^2)
/// in [0, 6.25]; relative error 3.7e-11.
const ERFINV_W: [f64; 15] = [
    1.653_654_562_651_509_6,
    0.750_494_319_324_596_9,
    -0.058_922_563_824_394_106,
    -0.022_604_418_745_330_583,
    0.017_808_305_141_767_893,
    -0.004_137_629_964_121_68,
    -0.001_271_314_280_018_551_5,
    0.001_234_017_798_189_827_8,
    -0.000_265_649_725_488_870_33,
    -0.000_120_723_584_472_413_02,
    9.568_540_562_780_983e-5,
    -9.844_348_541_484_393e-6,
    -1.373_614_923_690_165_9e-5,
    3.498_750_784_640_557e-6,
    8.554_318_798_778_59e-7,
];

/// erfinv(x) / x as a polynomial in `(sqrt(w) - 3.25) / 0.75`, sqrt(w) in
/// [2.5, 4] (float32's largest |x| below 1 gives sqrt(w) = 3.99); relative
/// error 3.6e-11.
const ERFINV_S: [f64; 12] = [
    3.083_885_610_414_667,
    0.753_944_226_286_079_2,
    0.003_021_144_995_544_908_6,
    -0.001_582_553_693_516_279_8,
    0.000_788_243_661_393_872,
    -0.000_400_545_727_042_727_44,
    0.000_169_933_622_107_090_06,
    -4.767_186_626_263_448e-5,
    1.907_081_568_196_828_8e-6,
    5.557_507_543_480_906e-6,
    -2.259_248_304_340_252_5e-6,
    2.042_940_006_430_104_7e-7,
];

/// `erfinv(x)`, within 1 ulp: ±inf at ±1, NaN beyond.
#[inline(always)]
pub(crate) fn erfinv_f32(x: f32) -> f32 {
    let t = x as f64;
    let a = t.abs();
    // 1 - a and 1 + a are exact; their product rounds once.
    let w = -log_core((1.0 - a) * (1.0 + a));
    let pw = poly((w - 3.125) * (1.0 / 3.125), &ERFINV_W);
    let ps = poly((w.sqrt() - 3.25) * (1.0 / 0.75), &ERFINV_S);
    let r = (if w < 6.25 { pw } else { ps } * t) as f32;
    let r = if a < 1.0 {
        r
    } else if a == 1.0 {
        f32::INFINITY.copysign(x)
    } else {
        f32::NAN
    };
    if x == 0.0 {
        x
    } else {
        r
    }
}
