//! Fused optimizer updates: one pass over a parameter, its gradient and its
//! state buffers per step, where PyTorch's foreach path streams the same
//! arrays once per elementary op.
//!
//! Each rule performs PyTorch's `_multi_tensor_*` operations in the same
//! order and with the same rounding (every scalar is rounded to the tensor's
//! dtype first, as a wrapped number is), so results equal an op-by-op
//! NumPy reference of the published update. No fused multiply-add is used:
//! it would round differently from that reference.

// Updates are spelled `p = p + value * x`, as the PyTorch op each line
// mirrors (`addcdiv_`, `add_(alpha=)`) reads; `+=` would round the same.
#![allow(clippy::assign_op_pattern)]

use multiversion::multiversion;

use crate::tensor::Float;

/// An optimizer's update rule with its per-group hyper-parameters (Python
/// computes every derived scalar in double precision, as PyTorch does).
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// States: `[momentum_buffer]` when `momentum != 0`. Per tensor:
    /// `[first]` (1 when the buffer is new and takes the gradient as is).
    Sgd {
        lr: f64,
        weight_decay: f64,
        momentum: f64,
        dampening: f64,
        nesterov: bool,
        maximize: bool,
    },
    /// Adam and AdamW. States: `[exp_avg, exp_avg_sq(, max_exp_avg_sq)]`.
    /// Per tensor: `[-step_size, bias_correction2_sqrt]`.
    Adam {
        weight_decay: f64,
        /// `1 - lr * weight_decay`, used when `decoupled`.
        decay: f64,
        decoupled: bool,
        beta1: f64,
        beta2: f64,
        eps: f64,
        amsgrad: bool,
        maximize: bool,
    },
    /// States: `[sum]`. Per tensor: `[-clr]`.
    Adagrad {
        weight_decay: f64,
        eps: f64,
        maximize: bool,
    },
    /// States: `[square_avg(, momentum_buffer)(, grad_avg)]`.
    RmsProp {
        lr: f64,
        weight_decay: f64,
        alpha: f64,
        eps: f64,
        momentum: f64,
        centered: bool,
        maximize: bool,
    },
    /// States: `[exp_avg, exp_inf]`. Per tensor: `[-clr]`.
    Adamax {
        weight_decay: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
        maximize: bool,
    },
    /// States: `[exp_avg, exp_avg_sq]`. Per tensor:
    /// `[bias_correction2_sqrt, -step_size_grad, -step_size_exp_avg]`.
    NAdam {
        weight_decay: f64,
        decay: f64,
        decoupled: bool,
        beta1: f64,
        beta2: f64,
        eps: f64,
        maximize: bool,
    },
    /// States: `[exp_avg, exp_avg_sq]`. Per tensor:
    /// `[bias_correction2_sqrt * rect_step_size, unrect_step_size]`.
    RAdam {
        weight_decay: f64,
        decay: f64,
        decoupled: bool,
        beta1: f64,
        beta2: f64,
        eps: f64,
        maximize: bool,
    },
}

impl Rule {
    /// How many state buffers each parameter passes after its gradient.
    pub fn states(&self) -> usize {
        match *self {
            Rule::Sgd { momentum, .. } => usize::from(momentum != 0.0),
            Rule::Adam { amsgrad, .. } => 2 + usize::from(amsgrad),
            Rule::Adagrad { .. } => 1,
            Rule::RmsProp {
                momentum, centered, ..
            } => 1 + usize::from(momentum > 0.0) + usize::from(centered),
            Rule::Adamax { .. } | Rule::NAdam { .. } | Rule::RAdam { .. } => 2,
        }
    }
}

/// `torch.lerp` with a scalar weight: PyTorch's two-sided form, which is
/// exact at both ends.
#[inline(always)]
fn lerp<T: Float>(a: T, b: T, w: T) -> T {
    if w.abs() < T::from_f64(0.5) {
        a + w * (b - a)
    } else {
        b - (b - a) * (<T as crate::tensor::Element>::one() - w)
    }
}

/// `torch.maximum`: NaN wins.
#[inline(always)]
fn maximum<T: Float>(a: T, b: T) -> T {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}

/// The gradient as the rules see it: negated for `maximize`, plus coupled
/// weight decay (`grad + weight_decay * param`).
#[inline(always)]
fn grad_in<T: Float>(g: T, p: T, maximize: bool, wd: T, has_wd: bool) -> T {
    let g = if maximize { -g } else { g };
    if has_wd {
        g + wd * p
    } else {
        g
    }
}

/// Applies `rule` to one chunk of one parameter. `s` holds the state
/// buffers' matching chunks, in the order [`Rule`] documents; `per` the
/// parameter's own scalars.
pub fn step<T: Float>(rule: &Rule, per: [f64; 3], p: &mut [T], g: &[T], s: &mut [&mut [T]]) {
    let c = T::from_f64;
    match *rule {
        Rule::Sgd {
            lr,
            weight_decay,
            momentum,
            dampening,
            nesterov,
            maximize,
        } => {
            let buf = s.first_mut().map(|b| &mut **b);
            sgd(
                p,
                g,
                buf,
                per[0] != 0.0,
                c(-lr),
                c(weight_decay),
                weight_decay != 0.0,
                c(momentum),
                c(1.0 - dampening),
                nesterov,
                maximize,
            )
        }
        Rule::Adam {
            weight_decay,
            decay,
            decoupled,
            beta1,
            beta2,
            eps,
            amsgrad: _,
            maximize,
        } => {
            let [m, v, rest @ ..] = s else {
                unreachable!("checked by the caller")
            };
            let vmax = rest.first_mut().map(|b| &mut **b);
            adam(
                p,
                g,
                m,
                v,
                vmax,
                AdamC {
                    wd: c(weight_decay),
                    has_wd: weight_decay != 0.0 && !decoupled,
                    decay: c(decay),
                    has_decay: weight_decay != 0.0 && decoupled,
                    w1: c(1.0 - beta1),
                    beta2: c(beta2),
                    w2: c(1.0 - beta2),
                    eps: c(eps),
                    maximize,
                },
                c(per[0]),
                c(per[1]),
            )
        }
        Rule::Adagrad {
            weight_decay,
            eps,
            maximize,
        } => adagrad(
            p,
            g,
            s[0],
            c(weight_decay),
            weight_decay != 0.0,
            c(eps),
            maximize,
            c(per[0]),
        ),
        Rule::RmsProp {
            lr,
            weight_decay,
            alpha,
            eps,
            momentum,
            centered,
            maximize,
        } => {
            let [sq, rest @ ..] = s else {
                unreachable!("checked by the caller")
            };
            let (buf, rest) = if momentum > 0.0 {
                let (b, r) = rest.split_first_mut().expect("checked by the caller");
                (Some(&mut **b), r)
            } else {
                (None, rest)
            };
            let gavg = if centered { Some(&mut *rest[0]) } else { None };
            rmsprop(
                p,
                g,
                sq,
                buf,
                gavg,
                RmsC {
                    neg_lr: c(-lr),
                    wd: c(weight_decay),
                    has_wd: weight_decay != 0.0,
                    alpha: c(alpha),
                    w: c(1.0 - alpha),
                    eps: c(eps),
                    momentum: c(momentum),
                    maximize,
                },
            )
        }
        Rule::Adamax {
            weight_decay,
            beta1,
            beta2,
            eps,
            maximize,
        } => {
            let [m, u] = s else {
                unreachable!("checked by the caller")
            };
            adamax(
                p,
                g,
                m,
                u,
                [c(weight_decay), c(1.0 - beta1), c(beta2), c(eps), c(per[0])],
                weight_decay != 0.0,
                maximize,
            )
        }
        Rule::NAdam {
            weight_decay,
            decay,
            decoupled,
            beta1,
            beta2,
            eps,
            maximize,
        }
        | Rule::RAdam {
            weight_decay,
            decay,
            decoupled,
            beta1,
            beta2,
            eps,
            maximize,
        } => {
            let [m, v] = s else {
                unreachable!("checked by the caller")
            };
            let k = AdamC {
                wd: c(weight_decay),
                has_wd: weight_decay != 0.0 && !decoupled,
                decay: c(decay),
                has_decay: weight_decay != 0.0 && decoupled,
                w1: c(1.0 - beta1),
                beta2: c(beta2),
                w2: c(1.0 - beta2),
                eps: c(eps),
                maximize,
            };
            if matches!(rule, Rule::NAdam { .. }) {
                nadam(p, g, m, v, k, [c(per[0]), c(per[1]), c(per[2])])
            } else {
                radam(p, g, m, v, k, [c(per[0]), c(per[1])])
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn sgd<T: Float>(
    p: &mut [T],
    g: &[T],
    buf: Option<&mut [T]>,
    first: bool,
    neg_lr: T,
    wd: T,
    has_wd: bool,
    momentum: T,
    w: T,
    nesterov: bool,
    maximize: bool,
) {
    let k = SgdC {
        neg_lr,
        wd,
        momentum,
        w,
    };
    // Each flag becomes a constant of its own loop, so every loop is
    // branch-free and vectorises.
    macro_rules! pick {
        ($f:ident, $($args:expr),*) => {
            match (maximize, has_wd) {
                (false, false) => $f::<T, false, false>($($args),*),
                (false, true) => $f::<T, false, true>($($args),*),
                (true, false) => $f::<T, true, false>($($args),*),
                (true, true) => $f::<T, true, true>($($args),*),
            }
        };
    }
    match buf {
        None => pick!(sgd_plain, p, g, k),
        Some(b) if first => pick!(sgd_first, p, g, b, k, nesterov),
        Some(b) if nesterov => pick!(sgd_nesterov, p, g, b, k),
        Some(b) => pick!(sgd_momentum, p, g, b, k),
    }
}

#[derive(Clone, Copy)]
struct SgdC<T> {
    neg_lr: T,
    wd: T,
    momentum: T,
    w: T,
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn sgd_plain<T: Float, const MAX: bool, const WD: bool>(p: &mut [T], g: &[T], k: SgdC<T>) {
    for (p, &g) in p.iter_mut().zip(g) {
        let d = grad_in(g, *p, MAX, k.wd, WD);
        *p = *p + k.neg_lr * d;
    }
}

/// The first momentum step: the buffer takes a copy of the gradient.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn sgd_first<T: Float, const MAX: bool, const WD: bool>(
    p: &mut [T],
    g: &[T],
    buf: &mut [T],
    k: SgdC<T>,
    nesterov: bool,
) {
    for ((p, &g), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
        let d = grad_in(g, *p, MAX, k.wd, WD);
        *b = d;
        let d = if nesterov { d + k.momentum * *b } else { *b };
        *p = *p + k.neg_lr * d;
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn sgd_momentum<T: Float, const MAX: bool, const WD: bool>(
    p: &mut [T],
    g: &[T],
    buf: &mut [T],
    k: SgdC<T>,
) {
    for ((p, &g), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
        let d = grad_in(g, *p, MAX, k.wd, WD);
        *b = *b * k.momentum + k.w * d;
        *p = *p + k.neg_lr * *b;
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn sgd_nesterov<T: Float, const MAX: bool, const WD: bool>(
    p: &mut [T],
    g: &[T],
    buf: &mut [T],
    k: SgdC<T>,
) {
    for ((p, &g), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
        let d = grad_in(g, *p, MAX, k.wd, WD);
        *b = *b * k.momentum + k.w * d;
        *p = *p + k.neg_lr * (d + k.momentum * *b);
    }
}

#[derive(Clone, Copy)]
struct AdamC<T> {
    wd: T,
    has_wd: bool,
    decay: T,
    has_decay: bool,
    w1: T,
    beta2: T,
    w2: T,
    eps: T,
    maximize: bool,
}

/// The first and second moments' update shared by Adam, NAdam and RAdam;
/// returns the gradient used and applies decoupled decay to `p`.
#[inline(always)]
fn moments<T: Float>(p: &mut T, g: T, m: &mut T, v: &mut T, k: &AdamC<T>) -> T {
    let g = grad_in(g, *p, k.maximize, k.wd, k.has_wd);
    if k.has_decay {
        *p = *p * k.decay;
    }
    *m = lerp(*m, g, k.w1);
    *v = *v * k.beta2 + k.w2 * g * g;
    g
}

#[allow(clippy::too_many_arguments)]
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn adam<T: Float>(
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    v: &mut [T],
    vmax: Option<&mut [T]>,
    k: AdamC<T>,
    neg_step: T,
    bc2_sqrt: T,
) {
    match vmax {
        None => {
            for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                moments(p, g, m, v, &k);
                let denom = v.sqrt() / bc2_sqrt + k.eps;
                *p = *p + neg_step * *m / denom;
            }
        }
        Some(vmax) => {
            for ((((p, &g), m), v), vm) in p
                .iter_mut()
                .zip(g)
                .zip(m.iter_mut())
                .zip(v.iter_mut())
                .zip(vmax.iter_mut())
            {
                moments(p, g, m, v, &k);
                *vm = maximum(*vm, *v);
                let denom = vm.sqrt() / bc2_sqrt + k.eps;
                *p = *p + neg_step * *m / denom;
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn adagrad<T: Float>(
    p: &mut [T],
    g: &[T],
    sum: &mut [T],
    wd: T,
    has_wd: bool,
    eps: T,
    maximize: bool,
    neg_clr: T,
) {
    for ((p, &g), s) in p.iter_mut().zip(g).zip(sum.iter_mut()) {
        let g = grad_in(g, *p, maximize, wd, has_wd);
        *s = *s + <T as crate::tensor::Element>::one() * g * g;
        let std = s.sqrt() + eps;
        *p = *p + <T as crate::tensor::Element>::one() * (g * neg_clr) / std;
    }
}

#[derive(Clone, Copy)]
struct RmsC<T> {
    neg_lr: T,
    wd: T,
    has_wd: bool,
    alpha: T,
    w: T,
    eps: T,
    momentum: T,
    maximize: bool,
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn rmsprop<T: Float>(
    p: &mut [T],
    g: &[T],
    sq: &mut [T],
    mut buf: Option<&mut [T]>,
    mut gavg: Option<&mut [T]>,
    k: RmsC<T>,
) {
    for i in 0..p.len() {
        let g = grad_in(g[i], p[i], k.maximize, k.wd, k.has_wd);
        let s = sq[i] * k.alpha + k.w * g * g;
        sq[i] = s;
        let avg = match gavg.as_deref_mut() {
            Some(ga) => {
                let a = lerp(ga[i], g, k.w);
                ga[i] = a;
                (s + -<T as crate::tensor::Element>::one() * a * a).sqrt() + k.eps
            }
            None => s.sqrt() + k.eps,
        };
        match buf.as_deref_mut() {
            Some(b) => {
                let nb = b[i] * k.momentum + <T as crate::tensor::Element>::one() * g / avg;
                b[i] = nb;
                p[i] = p[i] + k.neg_lr * nb;
            }
            None => p[i] = p[i] + k.neg_lr * g / avg,
        }
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn adamax<T: Float>(
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    u: &mut [T],
    k: [T; 5],
    has_wd: bool,
    maximize: bool,
) {
    let [wd, w1, beta2, eps, neg_clr] = k;
    for (((p, &g), m), u) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(u.iter_mut()) {
        let g = grad_in(g, *p, maximize, wd, has_wd);
        *m = lerp(*m, g, w1);
        // amax over [exp_inf * beta2, |grad| + eps]; NaN propagates as in amax.
        *u = maximum(*u * beta2, g.abs() + eps);
        *p = *p + neg_clr * *m / *u;
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn nadam<T: Float>(p: &mut [T], g: &[T], m: &mut [T], v: &mut [T], k: AdamC<T>, per: [T; 3]) {
    let [bc2_sqrt, neg_sg, neg_sm] = per;
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        let g = moments(p, g, m, v, &k);
        let denom = v.sqrt() / bc2_sqrt + k.eps;
        *p = *p + neg_sg * g / denom;
        *p = *p + neg_sm * *m / denom;
    }
}

#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn radam<T: Float>(p: &mut [T], g: &[T], m: &mut [T], v: &mut [T], k: AdamC<T>, per: [T; 2]) {
    let [scale, unrect] = per;
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        moments(p, g, m, v, &k);
        // sqrt(1 - beta2^t) * rect_step / (sqrt(v) + eps) + unrect_step; a
        // zero `scale` (not rectified) gives -0 through the reciprocal of -inf.
        let b = <T as crate::tensor::Element>::one() / ((v.sqrt() + k.eps) / scale) + unrect;
        *p = *p + <T as crate::tensor::Element>::one() * *m * b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sgd_momentum_two_steps() {
        let rule = Rule::Sgd {
            lr: 0.5,
            weight_decay: 0.0,
            momentum: 0.9,
            dampening: 0.0,
            nesterov: false,
            maximize: false,
        };
        let mut p = [1.0f64, 2.0];
        let g = [1.0f64, -1.0];
        let mut b = [0.0f64; 2];
        step(&rule, [1.0, 0.0, 0.0], &mut p, &g, &mut [&mut b]);
        assert_eq!(p, [0.5, 2.5]);
        step(&rule, [0.0, 0.0, 0.0], &mut p, &g, &mut [&mut b]);
        assert_eq!(b, [1.9, -1.9]);
        assert_eq!(p, [0.5 - 0.95, 2.5 + 0.95]);
    }
}
