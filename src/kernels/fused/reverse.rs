//! The reverse pass of a fused program: the schedule of which gradient
//! contributions are written or added (in the engine's order), the reusable
//! [`Plan`], and each op's gradient rule as the eager backward computes it.

use super::super::SendPtr;
use super::eval::{each, kept_len, n_aux, run, run_pass, Pass, ScalarConsts, BLOCK};
use super::float::{
    extreme_share, powf_exact, powf_special, sigmoid, sign, FusedFloat, GELU_BETA, GELU_KAPPA,
};
use super::program::{EwOp, Program, Src};

impl Program {
    /// Validates the program and plans its reverse pass for the inputs
    /// `want` marks and the outputs `seeded` marks as having a gradient.
    pub fn plan(&self, want: &[bool], seeded: &[bool]) -> Result<Plan, String> {
        self.plan_into(want, seeded, &vec![false; self.n_inputs])
    }

    /// As [`Program::plan`], for [`Plan::reverse_kept`] calls whose gradient
    /// buffers of the inputs `accumulate` marks already hold a gradient:
    /// this program's contributions are added after it, one by one, as the
    /// engine adds a value's later contributions.
    pub fn plan_into(
        &self,
        want: &[bool],
        seeded: &[bool],
        accumulate: &[bool],
    ) -> Result<Plan, String> {
        if accumulate.len() != self.n_inputs {
            return Err(format!(
                "accumulate has {} flags for {} inputs",
                accumulate.len(),
                self.n_inputs
            ));
        }
        Ok(Plan {
            sched: self.schedule_into(want, seeded, accumulate)?,
            prog: self.clone(),
            n_aux: n_aux(self),
        })
    }

    pub(super) fn schedule(&self, want: &[bool], seeded: &[bool]) -> Result<Schedule, String> {
        self.schedule_into(want, seeded, &vec![false; self.n_inputs])
    }

    fn schedule_into(
        &self,
        want: &[bool],
        seeded: &[bool],
        accumulate: &[bool],
    ) -> Result<Schedule, String> {
        self.validate()?;
        if want.len() != self.n_inputs {
            return Err(format!(
                "want has {} flags for {} inputs",
                want.len(),
                self.n_inputs
            ));
        }
        if seeded.len() != self.outputs.len() {
            return Err(format!(
                "seeded has {} flags for {} outputs",
                seeded.len(),
                self.outputs.len()
            ));
        }
        let n = self.instrs.len();
        let tensor_needed = |s: Src, reach: &[bool]| match s {
            Src::Input(k) => want[k as usize],
            Src::Reg(r) => reach[r as usize],
            Src::Scalar(_) => false,
        };
        // reach[i]: register i depends on a wanted input, so its gradient matters.
        let mut reach = vec![false; n];
        for (i, ins) in self.instrs.iter().enumerate() {
            reach[i] =
                tensor_needed(ins.a, &reach) || ins.b.is_some_and(|b| tensor_needed(b, &reach));
        }
        // Walk in the engine's order, noting whether each contribution is a
        // value's first gradient (written) or a later one (added).
        let mut has_reg = vec![false; n];
        let mut has_in: Vec<bool> = accumulate.iter().zip(want).map(|(&a, &w)| a && w).collect();
        let mut seed_act = vec![Act::Skip; self.outputs.len()];
        for (k, &o) in self.outputs.iter().enumerate() {
            if seeded[k] && reach[o as usize] {
                seed_act[k] = if has_reg[o as usize] {
                    Act::Add
                } else {
                    Act::Set
                };
                has_reg[o as usize] = true;
            }
        }
        let mut act = vec![[Act::Skip; 2]; n];
        for i in (0..n).rev() {
            if !has_reg[i] {
                continue;
            }
            let ins = self.instrs[i];
            for (slot, s) in [Some(ins.a), ins.b].into_iter().enumerate() {
                let flag = match s {
                    Some(Src::Input(k)) if want[k as usize] => &mut has_in[k as usize],
                    Some(Src::Reg(r)) if reach[r as usize] => &mut has_reg[r as usize],
                    _ => continue,
                };
                act[i][slot] = if *flag { Act::Add } else { Act::Set };
                *flag = true;
            }
        }
        Ok(Schedule {
            want: want.to_vec(),
            accumulate: accumulate.to_vec(),
            reached: has_in,
            seeded: seeded.to_vec(),
            seed_act,
            live: has_reg,
            act,
        })
    }
}

/// How one gradient contribution lands in its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    Skip,
    /// The target's first contribution: written.
    Set,
    /// A later one: added to what is there (`prev + new`, as the engine).
    Add,
}

#[derive(Clone, Debug)]
pub(super) struct Schedule {
    pub(super) want: Vec<bool>,
    pub(super) accumulate: Vec<bool>,
    /// Wanted inputs that end with a gradient (held before, or reached).
    pub(super) reached: Vec<bool>,
    pub(super) seeded: Vec<bool>,
    pub(super) seed_act: Vec<Act>,
    /// Registers that receive a gradient.
    pub(super) live: Vec<bool>,
    pub(super) act: Vec<[Act; 2]>,
}

/// A validated program with its reverse pass planned for one choice of
/// wanted inputs and seeded outputs; reuse it across calls.
#[derive(Clone, Debug)]
pub struct Plan {
    prog: Program,
    sched: Schedule,
    n_aux: usize,
}

impl Plan {
    pub fn program(&self) -> &Program {
        &self.prog
    }

    /// The inputs this plan differentiates for.
    pub fn want(&self) -> &[bool] {
        &self.sched.want
    }

    /// The outputs this plan expects a seed for.
    pub fn seeded(&self) -> &[bool] {
        &self.sched.seeded
    }

    /// The inputs whose gradient buffers this plan adds to.
    pub fn accumulate(&self) -> &[bool] {
        &self.sched.accumulate
    }

    /// The length of the register arena [`Plan::forward_keep`] fills for
    /// inputs of `n` elements (every register of every element).
    pub fn kept_len(&self, n: usize) -> usize {
        kept_len(&self.prog, self.n_aux, n)
    }

    /// The forward pass, keeping every register in `kept` (at least
    /// [`Plan::kept_len`] long) for a later [`Plan::reverse_kept`], so the
    /// reverse pass need not compute the forward again.
    ///
    /// # Panics
    /// As [`Program::forward`], and if `kept` is too short.
    pub fn forward_keep<T: FusedFloat>(
        &self,
        inputs: &[&[T]],
        scalars: &[impl Into<f64> + Copy],
        outs: &mut [&mut [T]],
        kept: &mut [T],
    ) {
        let n = inputs.first().map_or(0, |s| s.len());
        assert!(kept.len() >= self.kept_len(n), "register arena too short");
        run_pass(
            &self.prog,
            None,
            self.n_aux,
            Pass::Keep,
            inputs,
            scalars,
            &[],
            outs,
            &[],
            SendPtr(kept.as_mut_ptr()),
        );
    }

    /// The reverse pass from the registers [`Plan::forward_keep`] left in
    /// `kept` (left as it is), for the same `inputs` and `scalars`. `grads[k]` must be a
    /// buffer of the inputs' length for every wanted input (others are
    /// ignored): with the plan's `accumulate` flag it holds a gradient that
    /// the contributions are added to, otherwise it is overwritten (zeros
    /// where no gradient reaches). `seeds` must match the plan's `seeded`.
    ///
    /// # Panics
    /// If the counts or lengths disagree with the plan or the arena.
    pub fn reverse_kept<T: FusedFloat>(
        &self,
        inputs: &[&[T]],
        scalars: &[impl Into<f64> + Copy],
        kept: &mut [T],
        seeds: &[Option<&[T]>],
        grads: &mut [Option<&mut [T]>],
    ) {
        let n = inputs.first().map_or(0, |s| s.len());
        assert!(kept.len() >= self.kept_len(n), "register arena too short");
        assert_eq!(seeds.len(), self.prog.outputs.len(), "one seed per output");
        assert!(
            seeds
                .iter()
                .zip(&self.sched.seeded)
                .all(|(s, &p)| s.is_some() == p),
            "the seeds differ from the plan's"
        );
        assert_eq!(
            grads.len(),
            self.prog.n_inputs,
            "one gradient slot per input"
        );
        let mut gradp: smallvec::SmallVec<[SendPtr<T>; 4]> = smallvec::SmallVec::new();
        for (k, g) in grads.iter_mut().enumerate() {
            match g {
                Some(v) if self.sched.want[k] => {
                    assert_eq!(v.len(), n, "gradient buffers have the inputs' length");
                    if !self.sched.reached[k] {
                        v.fill(T::ZERO);
                    }
                    gradp.push(SendPtr(v.as_mut_ptr()));
                }
                _ => {
                    assert!(!self.sched.want[k], "a wanted input has no gradient buffer");
                    gradp.push(SendPtr(std::ptr::null_mut()));
                }
            }
        }
        run_pass(
            &self.prog,
            Some(&self.sched),
            self.n_aux,
            Pass::Kept,
            inputs,
            scalars,
            seeds,
            &mut [],
            &gradp,
            // Only read (`&mut` so the pass may hold it as its registers).
            SendPtr(kept.as_mut_ptr()),
        );
    }

    /// As [`Program::forward`], without validating again.
    pub fn forward<T: FusedFloat>(
        &self,
        inputs: &[&[T]],
        scalars: &[impl Into<f64> + Copy],
        outs: &mut [&mut [T]],
    ) {
        run(&self.prog, None, inputs, scalars, &[], outs, &mut []);
    }

    /// As [`Program::forward_vjp`] with this plan's `want`. A seed that is
    /// present where the plan expected none (or missing where it expected
    /// one) makes this call plan again.
    ///
    /// # Panics
    /// If the slices' counts or lengths disagree with the program.
    pub fn forward_vjp<T: FusedFloat>(
        &self,
        inputs: &[&[T]],
        scalars: &[impl Into<f64> + Copy],
        seeds: &[Option<&[T]>],
        outs: &mut [&mut [T]],
        grads: &mut [Option<Vec<T>>],
    ) {
        assert_eq!(seeds.len(), self.prog.outputs.len(), "one seed per output");
        if seeds
            .iter()
            .zip(&self.sched.seeded)
            .any(|(s, &p)| s.is_some() != p)
        {
            return self
                .prog
                .forward_vjp(inputs, scalars, seeds, &self.sched.want, outs, grads);
        }
        vjp(&self.prog, &self.sched, inputs, scalars, seeds, outs, grads);
    }
}

/// Allocates the wanted gradients and runs the program forward and back.
pub(super) fn vjp<T: FusedFloat>(
    prog: &Program,
    sched: &Schedule,
    inputs: &[&[T]],
    scalars: &[impl Into<f64> + Copy],
    seeds: &[Option<&[T]>],
    outs: &mut [&mut [T]],
    grads: &mut [Option<Vec<T>>],
) {
    assert_eq!(grads.len(), prog.n_inputs, "one gradient slot per input");
    let n = inputs
        .first()
        .map(|s| s.len())
        .or_else(|| outs.first().map(|s| s.len()))
        .unwrap_or(0);
    for (g, &w) in grads.iter_mut().zip(&sched.want) {
        if w {
            *g = Some(crate::error::filled_vec(n, T::ZERO));
        }
    }
    run(prog, Some(sched), inputs, scalars, seeds, outs, grads);
}

/// Lands `f(g, u, v)` in `d`: written, or added to what is there.
#[inline(always)]
fn land3<T: FusedFloat>(
    d: &mut [T],
    act: Act,
    g: &[T],
    u: &[T],
    v: &[T],
    f: impl Fn(T, T, T) -> T,
) {
    if act == Act::Add {
        each(
            d,
            g,
            u,
            v,
            #[inline(always)]
            |d, g, u, v| d + f(g, u, v),
        );
    } else {
        each(
            d,
            g,
            u,
            v,
            #[inline(always)]
            |_, g, u, v| f(g, u, v),
        );
    }
}

/// Lands `f(g, u)` in `d`.
#[inline(always)]
fn land2<T: FusedFloat>(d: &mut [T], act: Act, g: &[T], u: &[T], f: impl Fn(T, T) -> T) {
    land3(
        d,
        act,
        g,
        u,
        u,
        #[inline(always)]
        |g, u, _| f(g, u),
    );
}

/// Lands `f(g)` in `d`.
#[inline(always)]
pub(super) fn land<T: FusedFloat>(d: &mut [T], act: Act, g: &[T], f: impl Fn(T) -> T) {
    land3(
        d,
        act,
        g,
        g,
        g,
        #[inline(always)]
        |g, _, _| f(g),
    );
}

/// As [`backward_op`] for the rules that end in a product with `g`, when
/// `g` holds tiny values: the factor is formed as the rule forms it, then
/// multiplied by [`FusedFloat::mul_wide`]. Returns false (and does nothing)
/// for other rules. The caller keeps it out of line, so the common path
/// stays small.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn backward_wide<T: FusedFloat>(
    op: EwOp,
    slot: usize,
    d: &mut [T],
    act: Act,
    g: &[T],
    y: &[T],
    x: &[T],
    a: &[T],
    b: &[T],
) -> bool {
    use EwOp::*;
    let one = T::ONE;
    let w = std::hint::black_box(1.0);
    match (op, slot) {
        (Exp, _) => land2(d, act, g, y, |g, y| g.mul_wide(y, w)),
        (Sin, _) => land2(d, act, g, x, |g, c| g.mul_wide(c, w)),
        (Mul, 0) => land2(d, act, g, b, |g, y| g.mul_wide(y, w)),
        (Mul, _) => land2(d, act, g, a, |g, x| g.mul_wide(x, w)),
        (Cos, _) => land2(d, act, g, x, |g, s| g.mul_wide(-s, w)),
        (Tan, _) => land2(d, act, g, y, |g, y| g.mul_wide((y * y) + one, w)),
        (Tanh, _) => land2(d, act, g, y, |g, y| g.mul_wide(one - y * y, w)),
        (Sigmoid, _) => land2(d, act, g, y, |g, y| g.mul_wide(y * (one - y), w)),
        (Expm1, _) => land2(d, act, g, y, |g, y| g.mul_wide(y + one, w)),
        (Abs, _) => land2(d, act, g, a, |g, x| g.mul_wide(sign(x), w)),
        (Square, _) => {
            let two = T::of(2.0);
            land2(d, act, g, a, |g, x| g.mul_wide(x * two, w))
        }
        _ => return false,
    }
    true
}

/// The gradient operand `slot` (0 for `a`, 1 for `b`) receives from an
/// instruction whose result `y` has gradient `g`, each written as the eager
/// rule computes it (comments name the rule's ops). `x` is the auxiliary
/// register the forward left (`cos(a)` for `sin`, `sin(a)` for `cos`), or
/// empty for other ops. `sa`/`sb` are the
/// constants derived from the operands' numbers when they are scalars.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn backward_op<T: FusedFloat>(
    op: EwOp,
    slot: usize,
    d: &mut [T],
    act: Act,
    g: &[T],
    y: &[T],
    x: &[T],
    a: &[T],
    b: &[T],
    sa: Option<ScalarConsts<T>>,
    sb: Option<ScalarConsts<T>>,
) {
    use EwOp::*;
    let one = T::ONE;
    let zero = T::ZERO;
    match (op, slot) {
        (Neg, _) => land(d, act, g, |g| -g),
        // mul(g, result)
        (Exp, _) => land2(d, act, g, y, |g, y| g * y),
        // div(g, x)
        (Log, _) => land2(d, act, g, a, |g, x| g / x),
        // mul(g, cos(x)), the cosines kept by the forward
        (Sin, _) => land2(d, act, g, x, |g, c| g * c),
        // mul(g, neg(sin(x))), the sines kept by the forward
        (Cos, _) => land2(d, act, g, x, |g, s| g * -s),
        // mul(g, add(mul(y, y), 1))
        (Tan, _) => land2(d, act, g, y, |g, y| g * ((y * y) + one)),
        // g * (1 - y^2)
        (Tanh, _) => land2(d, act, g, y, |g, y| g * (one - y * y)),
        // g * (y * (1 - y))
        (Sigmoid, _) => land2(d, act, g, y, |g, y| g * (y * (one - y))),
        // g where y > 0, else 0
        (Relu, _) => land2(d, act, g, y, |g, y| if y <= zero { zero } else { g }),
        // div(g, mul(y, 2))
        (Sqrt, _) => {
            let two = T::of(2.0);
            land2(d, act, g, y, |g, y| g / (y * two))
        }
        // mul(g, mul(mul(mul(y, y), y), -0.5))
        (Rsqrt, _) => {
            let c = T::of(-0.5);
            land2(d, act, g, y, |g, y| g * (((y * y) * y) * c))
        }
        // mul(g, sign(x))
        (Abs, _) => land2(d, act, g, a, |g, x| g * sign(x)),
        // neg(mul(g, mul(y, y)))
        (Reciprocal, _) => land2(d, act, g, y, |g, y| -(g * (y * y))),
        // pow_scalar(x, 2)'s rule: mul(g, mul(pow(x, 1), 2))
        (Square, _) => {
            let two = T::of(2.0);
            land2(d, act, g, a, |g, x| g * (x * two))
        }
        // div(g, add(x, 1))
        (Log1p, _) => land2(d, act, g, a, |g, x| g / (x + one)),
        // mul(g, add(y, 1))
        (Expm1, _) => land2(d, act, g, y, |g, y| g * (y + one)),
        // div(g, mul(x, ln 2))
        (Log2, _) => {
            let ln2 = T::of(std::f64::consts::LN_2);
            land2(d, act, g, a, |g, x| g / (x * ln2))
        }
        // s = sigmoid(x); mul(g, mul(s, add(mul(x, 1 - s), 1)))
        (Silu, _) => land2(
            d,
            act,
            g,
            a,
            #[inline(always)]
            |g, x| {
                let s = sigmoid(x);
                g * (s * ((x * (one - s)) + one))
            },
        ),
        // mul(g, add(cdf, mul(x, pdf)))
        (Gelu, _) => {
            let c = T::of(std::f64::consts::FRAC_1_SQRT_2);
            let half = T::of(0.5);
            let mhalf = T::of(-0.5);
            let norm = T::of(1.0 / (2.0 * std::f64::consts::PI).sqrt());
            land2(
                d,
                act,
                g,
                a,
                #[inline(always)]
                |g, x| {
                    let cdf = ((x * c).k_erf() + one) * half;
                    let pdf = ((x * x) * mhalf).k_exp() * norm;
                    g * (cdf + (x * pdf))
                },
            )
        }
        (GeluTanh, _) => {
            let (kappa, beta, half) = (T::of(GELU_KAPPA), T::of(GELU_BETA), T::of(0.5));
            let kappa3 = T::of(3.0 * GELU_KAPPA);
            land2(
                d,
                act,
                g,
                a,
                #[inline(always)]
                |g, x| {
                    let t = ((x + ((x * x) * x) * kappa) * beta).k_tanh();
                    let left = (t + one) * half;
                    let sech2 = one - (t * t);
                    let du = (((x * x) * kappa3) + one) * beta;
                    g * (left + ((x * half) * (sech2 * du)))
                },
            )
        }
        // where(x > 0, g, mul(g, slope))
        (LeakyRelu, _) => land3(d, act, g, a, b, |g, x, s| if x > zero { g } else { g * s }),
        (Add, _) => land(d, act, g, |g| g),
        (Sub, 0) => land(d, act, g, |g| g),
        (Sub, _) => land(d, act, g, |g| -g),
        (Mul, 0) => land2(d, act, g, b, |g, y| g * y),
        (Mul, _) => land2(d, act, g, a, |g, x| g * x),
        (Div, 0) => land2(d, act, g, b, |g, y| g / y),
        // neg(div(mul(g, div(a, b)), b))
        (Div, _) => land3(d, act, g, a, b, |g, x, y| -((g * (x / y)) / y)),
        (Pow, 0) => match sb {
            // pow_scalar: 0 * g for a zero exponent, else mul(g, mul(pow(x, e - 1), e))
            Some(e) if e.zero => land(d, act, g, |g| g * zero),
            Some(e) => {
                let (em1, et) = (e.minus_one, e.value);
                land2(
                    d,
                    act,
                    g,
                    a,
                    #[inline(always)]
                    |g, x| g * (powf_special(x, em1) * et),
                )
            }
            // mul(g, mul(b, pow(a, sub(b, 1)))), 0 where b == 0 makes it NaN
            None => land3(
                d,
                act,
                g,
                a,
                b,
                #[inline(always)]
                |g, x, e| {
                    let r = g * (e * powf_exact(x, e - one));
                    #[allow(clippy::eq_op)]
                    let nan = r != r;
                    if e == zero && nan {
                        zero
                    } else {
                        r
                    }
                },
            ),
        },
        (Pow, _) => match sa {
            // rpow_scalar: mul(g, mul(out, ln s)), 0 where s == 0 and the exponent >= 0
            Some(s) => {
                let ln = s.ln;
                if s.zero {
                    land3(
                        d,
                        act,
                        g,
                        y,
                        b,
                        |g, y, e| {
                            if e >= zero {
                                zero
                            } else {
                                g * (y * ln)
                            }
                        },
                    )
                } else {
                    land2(d, act, g, y, |g, y| g * (y * ln))
                }
            }
            // mul(g, mul(out, log(a))), 0 where a == 0 and b >= 0
            None => {
                // Four streams: g, y, a, b; `a` and `b` go through `d`'s slot
                // only after the value is formed.
                let mut tmp = [zero; BLOCK];
                let t = &mut tmp[..d.len()];
                each(
                    t,
                    g,
                    y,
                    a,
                    #[inline(always)]
                    |_, g, y, x| g * (y * x.k_ln()),
                );
                each(
                    t,
                    a,
                    b,
                    a,
                    |v, x, e, _| if x == zero && e >= zero { zero } else { v },
                );
                land(d, act, t, |v| v);
            }
        },
        // `apply_share`: a zero share selects 0 (no -0.0, NaN or inf from g).
        (Maximum, 0) => land3(d, act, g, a, b, |g, x, o| {
            shared(g, extreme_share(x, o, true))
        }),
        (Maximum, _) => land3(d, act, g, b, a, |g, x, o| {
            shared(g, extreme_share(x, o, true))
        }),
        (Minimum, 0) => land3(d, act, g, a, b, |g, x, o| {
            shared(g, extreme_share(x, o, false))
        }),
        (Minimum, _) => land3(d, act, g, b, a, |g, x, o| {
            shared(g, extreme_share(x, o, false))
        }),
    }
}

/// `g * w`, or 0 where the share `w` is 0 (as the eager `apply_share`).
#[inline(always)]
fn shared<T: FusedFloat>(g: T, w: T) -> T {
    if w == T::ZERO {
        T::ZERO
    } else {
        g * w
    }
}
