//! Vectorisable float32 math and the instruction-set dispatch every
//! elementwise loop goes through.
//!
//! The functions here are written branch free (both sides of a choice are
//! computed and one is selected), with no call into the C library on the
//! hot path, so a loop over a slice compiles to SIMD code. Most float32
//! transcendental functions reduce their argument and evaluate a polynomial
//! in float64 (SLEEF's and glibc's libmvec designs, with our own
//! coefficients fitted to the float64 functions): that is accurate far
//! beyond float32's precision, so each result is within 1 ulp of the
//! correctly rounded value (erfinv within 2; lgamma and digamma next to
//! their zeros below 0 within an absolute bound), and the code needs no
//! double-float tricks. `exp2`, the logarithms, `log1p`, `atanh` and
//! `tanh` (`explog32`), `erf`, `erfc` and `erfinv` (`erf`),
//! `sin`/`cos`/`tan` (`kernels::trig_f32`), `atan`/`atan2`/`asin`/`acos`
//! (`invtrig`) are evaluated in
//! float32 lanes instead, twice as many per instruction, with the steps
//! that would lose the 1 ulp bound carried as pairs of floats. `pow`
//! (`pow`) evaluates `e^(y ln|x|)` in float64 lanes, float64 `pow`
//! (`pow64`) the same with `ln|x|` and `y ln|x|` as pairs of doubles, and
//! `lgamma`, `digamma` and `trigamma` (`gamma`) also work in float64 lanes. Every
//! `mul_add` is a fused multiply-add on every
//! path (an instruction with FMA, the C library's exact `fma` without), so
//! the AVX-512, AVX2 and portable paths give the same bits.
//!
//! [`map`], [`zip`] and [`update`] run a closure over slices through a copy
//! of the loop compiled for AVX-512, one for AVX2+FMA and the x86-64
//! baseline, chosen once at run time ([`isa`]); `FERROGRAD_ISA=avx2` or
//! `portable` in the environment caps the choice (for tests and
//! comparisons), and the `*_on` forms take the path explicitly.

mod core;
mod erf;
mod explog;
mod explog32;
mod gamma;
mod invtrig;
mod pow;
mod pow64;
mod rem;
#[cfg(test)]
mod tests;

pub(crate) use core::clenshaw;
pub(crate) use erf::{erf_f32, erfc_f32, erfinv_f32};
pub(crate) use explog::{acosh_f32, asinh_f32, cosh_f32, expm1_f32, sinh_f32};
pub(crate) use explog32::{
    atanh_f32, exp2_f32, fast_two_sum, log10_f32, log1p_f32, log2_f32, log_f32, poly as poly_f32,
    tanh_f32, SHIFT as SHIFT_F32,
};
pub(crate) use gamma::{digamma_f32, lgamma_f32, trigamma_f32};
pub(crate) use invtrig::{acos_f32, asin_f32, atan2_f32, atan_f32};
pub(crate) use pow::pow_f32;
pub(crate) use pow64::{
    estrin, exp_f64, exp_f64_pair, ln_f64, log_reduce, pow_f64, LN2_HI, LN2_LO,
};
pub(crate) use rem::{fmod_f32, fmod_needs_libm};

use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// The instruction sets the elementwise loops are compiled for.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Isa {
    Portable,
    Avx2,
    Avx512,
}

/// The widest instruction set this CPU has, capped by `FERROGRAD_ISA`.
pub(crate) fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        let cap = match std::env::var("FERROGRAD_ISA").as_deref() {
            Ok("portable") => Isa::Portable,
            Ok("avx2") => Isa::Avx2,
            _ => Isa::Avx512,
        };
        detected().min(cap)
    })
}

/// What the CPU supports, tested once: every vectorised loop asks, and on
/// short runs (a broadcast's rows of 32) five feature tests per call were
/// a fifth of the work.
pub(crate) fn detected() -> Isa {
    static DETECTED: OnceLock<Isa> = OnceLock::new();
    *DETECTED.get_or_init(probe)
}

fn probe() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("fma")
        {
            return Isa::Avx512;
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Isa::Avx2;
        }
    }
    Isa::Portable
}

/// Defines `$name_on(isa, ...)`, which runs `$body` compiled for that
/// instruction set, and `$name(...)`, which runs it on [`isa`].
macro_rules! isa_loop {
    (
        $(#[$m:meta])*
        fn $name:ident / $on:ident <$($g:ident),*> ($($arg:ident : $ty:ty),*)
        where [$($bounds:tt)*] $body:block
    ) => {
        $(#[$m])*
        #[inline]
        pub(crate) fn $name<$($g),*>($($arg: $ty),*) where $($bounds)* {
            $on(isa(), $($arg),*)
        }

        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $on<$($g),*>(which: Isa, $($arg: $ty),*) where $($bounds)* {
            #[inline(always)]
            fn body<$($g),*>($($arg: $ty),*) where $($bounds)* $body

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx,avx2,fma,avx512f,avx512vl,avx512bw,avx512dq")]
            unsafe fn wide<$($g),*>($($arg: $ty),*) where $($bounds)* {
                body($($arg),*)
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx,avx2,fma")]
            unsafe fn avx2<$($g),*>($($arg: $ty),*) where $($bounds)* {
                body($($arg),*)
            }

            #[cfg(target_arch = "x86_64")]
            {
                // Never above what the CPU has, whatever was asked.
                match which.min(detected()) {
                    // SAFETY: the CPU has the features each copy is compiled for.
                    Isa::Avx512 => return unsafe { wide($($arg),*) },
                    Isa::Avx2 => return unsafe { avx2($($arg),*) },
                    Isa::Portable => {}
                }
            }
            let _ = which;
            body($($arg),*)
        }
    };
}
// Other kernels' loops take the same three copies and the same
// `FERROGRAD_ISA` cap (the caller brings `isa`, `detected` and `Isa` into scope).
pub(crate) use isa_loop;

isa_loop! {
    /// `dst[i] = f(src[i])`.
    fn map / map_on<T, U, F>(dst: &mut [MaybeUninit<U>], src: &[T], f: &F)
    where [T: Copy, U: Copy, F: Fn(T) -> U] {
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(f(x));
        }
    }
}

isa_loop! {
    /// `dst[i] = f(a[i], b[i])`.
    fn zip / zip_on<T, U, F>(dst: &mut [MaybeUninit<U>], a: &[T], b: &[T], f: &F)
    where [T: Copy, U: Copy, F: Fn(T, T) -> U] {
        for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            d.write(f(x, y));
        }
    }
}

isa_loop! {
    /// For each run `r`: `dst[r.pos + i] = f(a[r.offs[0] + i * ia],
    /// b[r.offs[1] + i * ib])` for `i < r.len`, the steps 0 or 1 (one
    /// operand's value held for the run, or both read along it).
    fn zip_runs / zip_runs_on<T, U, F>(
        dst: &mut [MaybeUninit<U>],
        runs: &[crate::kernels::Run<2>],
        a: &[T],
        b: &[T],
        steps: (usize, usize),
        f: &F
    )
    where [T: Copy, U: Copy, F: Fn(T, T) -> U] {
        for r in runs {
            let d = &mut dst[r.pos..r.pos + r.len];
            let [oa, ob] = r.offs;
            match steps {
                (1, 1) => {
                    for ((o, &x), &y) in d.iter_mut().zip(&a[oa..oa + r.len]).zip(&b[ob..ob + r.len]) {
                        o.write(f(x, y));
                    }
                }
                (1, _) => {
                    let y = b[ob];
                    for (o, &x) in d.iter_mut().zip(&a[oa..oa + r.len]) {
                        o.write(f(x, y));
                    }
                }
                (_, 1) => {
                    let x = a[oa];
                    for (o, &y) in d.iter_mut().zip(&b[ob..ob + r.len]) {
                        o.write(f(x, y));
                    }
                }
                _ => {
                    let v = f(a[oa], b[ob]);
                    for o in d.iter_mut() {
                        o.write(v);
                    }
                }
            }
        }
    }
}

isa_loop! {
    /// `dst[i] = f(dst[i], a[i], b[i])`.
    fn update2 / update2_on<T, F>(dst: &mut [T], a: &[T], b: &[T], f: &F)
    where [T: Copy, F: Fn(T, T, T) -> T] {
        for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            *d = f(*d, x, y);
        }
    }
}

isa_loop! {
    /// `dst[i] = f(dst[i], src[i])`.
    fn update / update_on<T, F>(dst: &mut [T], src: &[T], f: &F)
    where [T: Copy, F: Fn(T, T) -> T] {
        for (d, &y) in dst.iter_mut().zip(src) {
            *d = f(*d, y);
        }
    }
}

isa_loop! {
    /// `*hit = true` when `f(a[i], b[i])` holds for some `i` (a `b` of one
    /// element is broadcast). Blocks of 64 with no early exit inside keep
    /// the test in vector lanes, a pass at memory speed.
    fn any_pair / any_pair_on<T, F>(a: &[T], b: &[T], hit: &mut bool, f: &F)
    where [T: Copy, F: Fn(T, T) -> bool] {
        const BLOCK: usize = 64;
        if let [y] = *b {
            for ca in a.chunks(BLOCK) {
                let mut m = 0u32;
                for &x in ca {
                    m |= f(x, y) as u32;
                }
                if m != 0 {
                    *hit = true;
                    return;
                }
            }
        } else {
            for (ca, cb) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
                let mut m = 0u32;
                for (&x, &y) in ca.iter().zip(cb) {
                    m |= f(x, y) as u32;
                }
                if m != 0 {
                    *hit = true;
                    return;
                }
            }
        }
    }
}

/// `f` over `src` into a fresh vector on the given path (tests).
#[cfg(test)]
pub(crate) fn eval_on(which: Isa, src: &[f32], f: impl Fn(f32) -> f32) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(src.len());
    map_on(which, &mut out.spare_capacity_mut()[..src.len()], src, &f);
    // SAFETY: `map_on` wrote every element.
    unsafe { out.set_len(src.len()) };
    out
}
