//! Fused elementwise programs: a straight-line list of elementwise
//! instructions over same-length inputs, evaluated block by block so no
//! intermediate ever takes a full-length buffer, forward and (in the same
//! pass) reverse mode.
//!
//! Each instruction computes exactly what ferrograd's eager op computes
//! (same expression, same float32 kernels such as [`math::exp_f32`]), so a
//! fused forward equals the eager ops bit for bit. The reverse pass uses the
//! eager backward rules' expressions as the engine runs them without
//! `create_graph` (`relu`, `tanh` and `sigmoid` take their one-pass forms),
//! and accumulates a value's gradient contributions in the order the engine
//! does: the seed first, then one contribution per use, newest use first
//! (operand `a` before `b` within an instruction). What can differ from
//! eager is listed on [`Program::forward_vjp`].

use std::cell::RefCell;
use std::ops::{Add, Div, Mul, Neg, Sub};

use multiversion::multiversion;

use super::math;
use super::{parallel, SendPtr, GRAIN};

/// Where an instruction reads an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// A tensor input with the program's length.
    Input(u16),
    /// A number, one value per call (never differentiated).
    Scalar(u16),
    /// The result of instruction `i`, which must come earlier.
    Reg(u16),
}

/// An elementwise operation; each matches one eager op (named in brackets)
/// in its forward value and its backward rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EwOp {
    /// `-a` [neg]
    Neg,
    /// `exp(a)` [exp; float32 uses the kernel's vectorised exp]
    Exp,
    /// `log(a)` [log]
    Log,
    /// `sin(a)` [sin]
    Sin,
    /// `cos(a)` [cos]
    Cos,
    /// `tan(a)` [tan]
    Tan,
    /// `tanh(a)` [tanh; float32 uses the kernel's rational tanh]
    Tanh,
    /// `1 / (1 + exp(-a))` [sigmoid]
    Sigmoid,
    /// `max(a, 0)`, gradient 0 at 0 [relu]
    Relu,
    /// `sqrt(a)` [sqrt]
    Sqrt,
    /// `1 / sqrt(a)` [rsqrt]
    Rsqrt,
    /// `|a|` [abs]
    Abs,
    /// `1 / a` [reciprocal]
    Reciprocal,
    /// `a * a` [square, i.e. `pow(a, 2)`]
    Square,
    /// `log(1 + a)` [log1p]
    Log1p,
    /// `exp(a) - 1` [expm1]
    Expm1,
    /// `log2(a)` [log2]
    Log2,
    /// `a * sigmoid(a)` [silu]
    Silu,
    /// `a/2 (1 + erf(a / sqrt 2))` [gelu]
    Gelu,
    /// `a/2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))` [gelu, approximate='tanh']
    GeluTanh,
    /// `a` where `a > 0`, else `a * b`; `b` must be a `Scalar` [leaky_relu]
    LeakyRelu,
    /// `a + b` [add, add_scalar]
    Add,
    /// `a - b` [sub, sub_scalar, rsub_scalar]
    Sub,
    /// `a * b` [mul, mul_scalar]
    Mul,
    /// `a / b` [div, div_scalar; a `Scalar` numerator is `div(tensor(s), b)`,
    /// not Python's `s / b`, which ferrograd computes as `reciprocal(b) * s`]
    Div,
    /// `a ** b` [pow for two tensors, pow_scalar for a `Scalar` exponent,
    /// rpow_scalar for a `Scalar` base]
    Pow,
    /// `maximum(a, b)`, NaN propagating, gradient split on ties [maximum]
    Maximum,
    /// `minimum(a, b)` [minimum]
    Minimum,
}

impl EwOp {
    /// Number of operands: 1, or 2 for the binary ops (and `LeakyRelu`).
    pub fn arity(self) -> usize {
        use EwOp::*;
        match self {
            LeakyRelu | Add | Sub | Mul | Div | Pow | Maximum | Minimum => 2,
            _ => 1,
        }
    }
}

/// One instruction: `op(a)` or `op(a, b)`; its result is register `i` for
/// the instruction at index `i`.
#[derive(Clone, Copy, Debug)]
pub struct Instr {
    pub op: EwOp,
    pub a: Src,
    pub b: Option<Src>,
}

/// A straight-line elementwise program. `outputs` lists the registers the
/// caller receives (a register may be listed more than once).
#[derive(Clone, Debug)]
pub struct Program {
    pub n_inputs: usize,
    pub n_scalars: usize,
    pub instrs: Vec<Instr>,
    pub outputs: Vec<u16>,
}

/// Elements per block: every register holds one block, so a block of a
/// 200-instruction float32 program keeps its registers and their gradients
/// (200 KB) in L2, and one instruction's loop is long enough to vectorise.
const BLOCK: usize = 128;

/// The float types programs run in, with the exact functions ferrograd's
/// eager kernels use for them.
pub trait FusedFloat:
    Copy
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Into<f64>
    + std::fmt::Debug
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    /// `x as T` (what `Element::from_f64` does).
    fn of(x: f64) -> Self;
    fn k_exp(self) -> Self;
    fn k_tanh(self) -> Self;
    fn k_erf(self) -> Self;
    fn k_sin(self) -> Self;
    fn k_cos(self) -> Self;
    fn k_tan(self) -> Self;
    fn k_ln(self) -> Self;
    fn k_ln_1p(self) -> Self;
    fn k_exp_m1(self) -> Self;
    fn k_log2(self) -> Self;
    fn k_sqrt(self) -> Self;
    fn k_abs(self) -> Self;
    fn k_powf(self, e: Self) -> Self;
    fn k_is_nan(self) -> bool;
    fn k_max(self, o: Self) -> Self;
    fn k_min(self, o: Self) -> Self;
    /// This thread's reusable buffer (empty if it is in use); hand it back
    /// with [`FusedFloat::put_scratch`].
    #[doc(hidden)]
    fn take_scratch() -> Vec<Self>;
    #[doc(hidden)]
    fn put_scratch(v: Vec<Self>);
}

macro_rules! fused_float {
    ($t:ty, $scratch:ident, $exp:expr, $tanh:expr, $erf:expr) => {
        thread_local! {
            static $scratch: RefCell<Vec<$t>> = const { RefCell::new(Vec::new()) };
        }
        impl FusedFloat for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn of(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn k_exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn k_tanh(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn k_erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn k_sin(self) -> Self {
                self.sin()
            }
            #[inline(always)]
            fn k_cos(self) -> Self {
                self.cos()
            }
            #[inline(always)]
            fn k_tan(self) -> Self {
                self.tan()
            }
            #[inline(always)]
            fn k_ln(self) -> Self {
                self.ln()
            }
            #[inline(always)]
            fn k_ln_1p(self) -> Self {
                self.ln_1p()
            }
            #[inline(always)]
            fn k_exp_m1(self) -> Self {
                self.exp_m1()
            }
            #[inline(always)]
            fn k_log2(self) -> Self {
                self.log2()
            }
            #[inline(always)]
            fn k_sqrt(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn k_abs(self) -> Self {
                self.abs()
            }
            #[inline(always)]
            fn k_powf(self, e: Self) -> Self {
                self.powf(e)
            }
            #[inline(always)]
            fn k_is_nan(self) -> bool {
                self.is_nan()
            }
            // As `Arith::max_of`/`min_of`: NaN propagates.
            #[inline(always)]
            fn k_max(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else {
                    self.max(o)
                }
            }
            #[inline(always)]
            fn k_min(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else {
                    self.min(o)
                }
            }
            fn take_scratch() -> Vec<Self> {
                $scratch.with(|cell| std::mem::take(&mut *cell.borrow_mut()))
            }
            fn put_scratch(v: Vec<Self>) {
                $scratch.with(|cell| {
                    let mut slot = cell.borrow_mut();
                    if v.len() > slot.len() {
                        *slot = v;
                    }
                })
            }
        }
    };
}

fused_float!(f32, SCRATCH_F32, math::exp_f32, math::tanh_f32, libm::erff);
fused_float!(f64, SCRATCH_F64, f64::exp, f64::tanh, libm::erf);

/// `pow` as the eager kernel computes it: exact products for the common
/// small exponents (`arith::powf_special`).
#[inline(always)]
fn powf_special<T: FusedFloat>(x: T, e: T) -> T {
    let two = T::ONE + T::ONE;
    if e == two {
        x * x
    } else if e == two + T::ONE {
        x * x * x
    } else if e == T::ONE {
        x
    } else if e == T::ONE / two {
        x.k_sqrt()
    } else if e == -T::ONE {
        T::ONE / x
    } else {
        x.k_powf(e)
    }
}

#[inline(always)]
fn sigmoid<T: FusedFloat>(x: T) -> T {
    T::ONE / (T::ONE + (-x).k_exp())
}

#[inline(always)]
fn sign<T: FusedFloat>(x: T) -> T {
    if x > T::ZERO {
        T::ONE
    } else if x < T::ZERO {
        -T::ONE
    } else {
        x * T::ZERO
    }
}

const GELU_KAPPA: f64 = 0.044715;
/// sqrt(2 / pi), as in ops/activation.rs.
const GELU_BETA: f64 = 0.797_884_560_802_865_4;

/// The share of the gradient the first operand of `maximum` (`is_max`) or
/// `minimum` gets: all where it wins, none where it loses, half on a tie.
#[inline(always)]
fn extreme_share<T: FusedFloat>(x: T, other: T, is_max: bool) -> T {
    let lost = if is_max { x < other } else { x > other };
    if x == other {
        T::of(0.5)
    } else if lost {
        T::ZERO
    } else {
        T::ONE
    }
}

impl Program {
    /// Checks that every operand index is in range, registers only refer to
    /// earlier instructions, operand counts match the ops, every
    /// instruction reads at least one tensor, `LeakyRelu`'s slope is a
    /// scalar, and outputs name existing registers.
    pub fn validate(&self) -> Result<(), String> {
        if self.instrs.len() > u16::MAX as usize + 1 {
            return Err(format!(
                "a fused program holds at most 65536 instructions, got {}",
                self.instrs.len()
            ));
        }
        let check = |i: usize, s: Src| -> Result<(), String> {
            match s {
                Src::Input(k) if k as usize >= self.n_inputs => Err(format!(
                    "instruction {i} reads input {k}, but the program has {} inputs",
                    self.n_inputs
                )),
                Src::Scalar(k) if k as usize >= self.n_scalars => Err(format!(
                    "instruction {i} reads scalar {k}, but the program has {} scalars",
                    self.n_scalars
                )),
                Src::Reg(r) if r as usize >= i => Err(format!(
                    "instruction {i} reads register {r}, which is not computed before it"
                )),
                _ => Ok(()),
            }
        };
        for (i, ins) in self.instrs.iter().enumerate() {
            let arity = ins.op.arity();
            match (arity, ins.b) {
                (1, Some(_)) => {
                    return Err(format!(
                        "instruction {i}: {:?} takes one operand, got two",
                        ins.op
                    ))
                }
                (2, None) => {
                    return Err(format!(
                        "instruction {i}: {:?} takes two operands, got one",
                        ins.op
                    ))
                }
                _ => {}
            }
            check(i, ins.a)?;
            if let Some(b) = ins.b {
                check(i, b)?;
            }
            let scalar = |s: Src| matches!(s, Src::Scalar(_));
            if ins.op == EwOp::LeakyRelu {
                if scalar(ins.a) || !ins.b.is_some_and(scalar) {
                    return Err(format!(
                        "instruction {i}: LeakyRelu takes a tensor and a scalar slope"
                    ));
                }
            } else if scalar(ins.a) && ins.b.is_none_or(scalar) {
                return Err(format!(
                    "instruction {i}: {:?} has no tensor operand",
                    ins.op
                ));
            }
        }
        for &o in &self.outputs {
            if o as usize >= self.instrs.len() {
                return Err(format!(
                    "output register {o} does not exist (the program has {} instructions)",
                    self.instrs.len()
                ));
            }
        }
        Ok(())
    }

    /// Evaluates the program: `outs[k]` receives register `outputs[k]`.
    /// `scalars` are the numbers (f64, or already `T`), converted to `T` as
    /// the eager scalar ops do.
    ///
    /// # Panics
    /// If the program does not validate, or the slices' counts or lengths
    /// disagree with it.
    pub fn forward<T: FusedFloat>(
        &self,
        inputs: &[&[T]],
        scalars: &[impl Into<f64> + Copy],
        outs: &mut [&mut [T]],
    ) {
        if let Err(e) = self.validate() {
            panic!("invalid fused program: {e}");
        }
        run(self, None, inputs, scalars, &[], outs, &mut []);
    }

    /// Forward and reverse mode in one pass: `seeds[k]` is the gradient of
    /// output `k` (`None`: zero); `grads[i]` becomes `Some` for every input
    /// with `want[i]` (zeros if no gradient reaches it) and is left as it is
    /// otherwise. Builds a [`Plan`] each call; keep one to replay faster.
    ///
    /// Numerics: forward values equal the eager ops bit for bit. Gradients
    /// equal the eager engine's (`backward()` without `create_graph`) bit
    /// for bit, given the program lists instructions in the order eager ran
    /// them. They can differ where (a) scalars are passed as float32 and the
    /// eager rule derives a constant from the Python number in float64
    /// (`pow`'s `e - 1` for a scalar exponent, `log(s)` for a scalar base),
    /// (b) the engine would have summed a value's gradients in another order
    /// (a graph not recorded in instruction order), or (c) a NaN's payload
    /// differs; and `relu`'s gradient is the one-pass form (`g` where the
    /// result is positive, else exactly 0, even for an infinite `g`) that the
    /// engine uses without `create_graph`.
    ///
    /// # Panics
    /// As [`Program::forward`], and if `seeds`, `want` or `grads` have the
    /// wrong counts or lengths.
    pub fn forward_vjp<T: FusedFloat>(
        &self,
        inputs: &[&[T]],
        scalars: &[impl Into<f64> + Copy],
        seeds: &[Option<&[T]>],
        want: &[bool],
        outs: &mut [&mut [T]],
        grads: &mut [Option<Vec<T>>],
    ) {
        assert_eq!(seeds.len(), self.outputs.len(), "one seed per output");
        let seeded: smallvec::SmallVec<[bool; 4]> = seeds.iter().map(Option::is_some).collect();
        let sched = match self.schedule(want, &seeded) {
            Ok(p) => p,
            Err(e) => panic!("invalid fused program: {e}"),
        };
        vjp(self, &sched, inputs, scalars, seeds, outs, grads);
    }

    /// Validates the program and plans its reverse pass for the inputs
    /// `want` marks and the outputs `seeded` marks as having a gradient.
    pub fn plan(&self, want: &[bool], seeded: &[bool]) -> Result<Plan, String> {
        Ok(Plan {
            sched: self.schedule(want, seeded)?,
            prog: self.clone(),
        })
    }

    fn schedule(&self, want: &[bool], seeded: &[bool]) -> Result<Schedule, String> {
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
        let mut has_in = vec![false; self.n_inputs];
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
            seeded: seeded.to_vec(),
            seed_act,
            live: has_reg,
            act,
        })
    }
}

/// How one gradient contribution lands in its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Skip,
    /// The target's first contribution: written.
    Set,
    /// A later one: added to what is there (`prev + new`, as the engine).
    Add,
}

#[derive(Clone, Debug)]
struct Schedule {
    want: Vec<bool>,
    seeded: Vec<bool>,
    seed_act: Vec<Act>,
    /// Registers that receive a gradient.
    live: Vec<bool>,
    act: Vec<[Act; 2]>,
}

/// A validated program with its reverse pass planned for one choice of
/// wanted inputs and seeded outputs; reuse it across calls.
#[derive(Clone, Debug)]
pub struct Plan {
    prog: Program,
    sched: Schedule,
}

impl Plan {
    pub fn program(&self) -> &Program {
        &self.prog
    }

    /// The inputs this plan differentiates for.
    pub fn want(&self) -> &[bool] {
        &self.sched.want
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
fn vjp<T: FusedFloat>(
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

/// What the reverse pass derives from a scalar operand, in float64 from the
/// number as the eager rules do; computed once per call, since the compiler
/// may evaluate a `ln` in the loops even where its branch is not taken.
#[derive(Clone, Copy, Debug)]
struct ScalarConsts<T> {
    zero: bool,
    /// `pow_scalar`'s `e - 1` and `e`.
    minus_one: T,
    value: T,
    /// `rpow_scalar`'s `ln(s)`.
    ln: T,
}

/// Everything one range of blocks needs; shared by the pool's threads.
struct Job<'a, T> {
    prog: &'a Program,
    sched: Option<&'a Schedule>,
    inputs: &'a [&'a [T]],
    scalars: &'a [T],
    consts: &'a [ScalarConsts<T>],
    seeds: &'a [Option<&'a [T]>],
    outs: &'a [SendPtr<T>],
    /// Null for inputs whose gradient is not wanted.
    grads: &'a [SendPtr<T>],
}

fn run<T: FusedFloat>(
    prog: &Program,
    sched: Option<&Schedule>,
    inputs: &[&[T]],
    scalars: &[impl Into<f64> + Copy],
    seeds: &[Option<&[T]>],
    outs: &mut [&mut [T]],
    grads: &mut [Option<Vec<T>>],
) {
    assert_eq!(inputs.len(), prog.n_inputs, "one slice per program input");
    assert_eq!(
        scalars.len(),
        prog.n_scalars,
        "one value per program scalar"
    );
    assert_eq!(
        outs.len(),
        prog.outputs.len(),
        "one slice per program output"
    );
    let n = inputs
        .first()
        .map(|s| s.len())
        .or_else(|| outs.first().map(|s| s.len()))
        .unwrap_or(0);
    assert!(
        inputs.iter().all(|s| s.len() == n) && outs.iter().all(|s| s.len() == n),
        "inputs and outputs of a fused program have one length"
    );
    assert!(
        seeds.iter().flatten().all(|s| s.len() == n),
        "seeds have the inputs' length"
    );
    if n == 0 || prog.instrs.is_empty() {
        return;
    }
    let scalars64: smallvec::SmallVec<[f64; 8]> = scalars.iter().map(|&s| s.into()).collect();
    let scalars_t: smallvec::SmallVec<[T; 8]> = scalars64.iter().map(|&s| T::of(s)).collect();
    let consts: smallvec::SmallVec<[ScalarConsts<T>; 8]> = scalars64
        .iter()
        .map(|&s| ScalarConsts {
            zero: s == 0.0,
            minus_one: T::of(s - 1.0),
            value: T::of(s),
            ln: T::of(s.ln()),
        })
        .collect();
    let outp: smallvec::SmallVec<[SendPtr<T>; 4]> =
        outs.iter_mut().map(|o| SendPtr(o.as_mut_ptr())).collect();
    let gradp: smallvec::SmallVec<[SendPtr<T>; 4]> = grads
        .iter_mut()
        .enumerate()
        .map(|(k, g)| match g {
            Some(v) if sched.is_some_and(|s| s.want[k]) && v.len() == n => SendPtr(v.as_mut_ptr()),
            _ => SendPtr(std::ptr::null_mut()),
        })
        .collect();
    let job = Job {
        prog,
        sched,
        inputs,
        scalars: &scalars_t,
        consts: &consts,
        seeds,
        outs: &outp,
        grads: &gradp,
    };
    parallel::run(n, |threads| {
        if threads == 1 || n < GRAIN {
            run_range(&job, 0, n);
            return;
        }
        let chunk = GRAIN.max(n.div_ceil(threads * 4)).next_multiple_of(BLOCK);
        parallel::tasks(n.div_ceil(chunk), |c| {
            run_range(&job, c * chunk, ((c + 1) * chunk).min(n))
        });
    });
}

/// Evaluates blocks `lo..hi`, forward and (with a schedule) backward,
/// writing outputs and gradients for those elements only.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn run_range<T: FusedFloat>(job: &Job<'_, T>, lo: usize, hi: usize) {
    let prog = job.prog;
    let ni = prog.instrs.len();
    let ns = prog.n_scalars;
    // Registers are `stride` apart: a short range needs no full block each.
    let stride = BLOCK.min(hi - lo);
    let regs_len = ni * stride;
    let adj_len = if job.sched.is_some() { regs_len } else { 0 };
    // Taken rather than borrowed in a closure, so the loops below stay in
    // this function and get its target features.
    let mut scratch = T::take_scratch();
    let total = regs_len + adj_len + ns * stride;
    if scratch.len() < total {
        scratch.resize(total, T::ZERO);
    }
    let (regs, rest) = scratch[..total].split_at_mut(regs_len);
    let (adj, splat) = rest.split_at_mut(adj_len);
    // A scalar is read like a register holding its value.
    for (k, &v) in job.scalars.iter().enumerate() {
        splat[k * stride..(k + 1) * stride].fill(v);
    }
    let splat = &*splat;
    let mut pos = lo;
    while pos < hi {
        let len = stride.min(hi - pos);
        block(job, regs, adj, splat, stride, pos, len);
        pos += len;
    }
    T::put_scratch(scratch);
}

/// The slice an operand reads for the block at `pos`.
#[inline(always)]
fn operand<'s, T: FusedFloat>(
    s: Src,
    inputs: &'s [&'s [T]],
    regs: &'s [T],
    splat: &'s [T],
    stride: usize,
    pos: usize,
    len: usize,
) -> &'s [T] {
    match s {
        Src::Input(k) => &inputs[k as usize][pos..pos + len],
        Src::Scalar(k) => &splat[k as usize * stride..k as usize * stride + len],
        Src::Reg(r) => &regs[r as usize * stride..r as usize * stride + len],
    }
}

#[inline(always)]
fn block<T: FusedFloat>(
    job: &Job<'_, T>,
    regs: &mut [T],
    adj: &mut [T],
    splat: &[T],
    stride: usize,
    pos: usize,
    len: usize,
) {
    let prog = job.prog;
    for (i, ins) in prog.instrs.iter().enumerate() {
        let (done, rest) = regs.split_at_mut(i * stride);
        let d = &mut rest[..len];
        let a = operand(ins.a, job.inputs, done, splat, stride, pos, len);
        let b = match ins.b {
            Some(b) => operand(b, job.inputs, done, splat, stride, pos, len),
            None => &[],
        };
        forward_op(ins.op, d, a, b);
    }
    for (k, &o) in prog.outputs.iter().enumerate() {
        let r = o as usize * stride;
        // SAFETY: `outs[k]` has the program's length and this thread alone
        // writes its elements `pos..pos + len`.
        let dst = unsafe { std::slice::from_raw_parts_mut(job.outs[k].get().add(pos), len) };
        dst.copy_from_slice(&regs[r..r + len]);
    }
    let Some(sched) = job.sched else {
        return;
    };
    let regs = &*regs;
    for (k, &o) in prog.outputs.iter().enumerate() {
        let (Some(seed), act) = (job.seeds[k], sched.seed_act[k]) else {
            continue;
        };
        if act == Act::Skip {
            continue;
        }
        let r = o as usize * stride;
        land(&mut adj[r..r + len], act, &seed[pos..pos + len], |g| g);
    }
    for i in (0..prog.instrs.len()).rev() {
        if !sched.live[i] {
            continue;
        }
        let ins = prog.instrs[i];
        let (lower, upper) = adj.split_at_mut(i * stride);
        let g = &upper[..len];
        let y = &regs[i * stride..i * stride + len];
        let a = operand(ins.a, job.inputs, regs, splat, stride, pos, len);
        let b = match ins.b {
            Some(b) => operand(b, job.inputs, regs, splat, stride, pos, len),
            None => &[],
        };
        let num = |s: Option<Src>| match s {
            Some(Src::Scalar(k)) => Some(job.consts[k as usize]),
            _ => None,
        };
        let (sa, sb) = (num(Some(ins.a)), num(ins.b));
        for (slot, s) in [Some(ins.a), ins.b].into_iter().enumerate() {
            let act = sched.act[i][slot];
            if act == Act::Skip {
                continue;
            }
            let dst: &mut [T] = match s {
                Some(Src::Reg(r)) => &mut lower[r as usize * stride..r as usize * stride + len],
                Some(Src::Input(k)) => {
                    let p = job.grads[k as usize];
                    assert!(!p.get().is_null(), "gradient buffer missing");
                    // SAFETY: a planned contribution to an input means it is
                    // wanted, so `grads[k]` is a live vector of the program's
                    // length; this thread alone touches `pos..pos + len`.
                    unsafe { std::slice::from_raw_parts_mut(p.get().add(pos), len) }
                }
                _ => continue,
            };
            backward_op(ins.op, slot, dst, act, g, y, a, b, sa, sb);
        }
    }
}

/// Lanes per step of the loops below: a fixed-size step compiles to whole
/// vector instructions, so a 16-float block costs one per operation.
const W: usize = 16;

/// `d[i] = f(d[i], a[i], b[i], c[i])` over the first `d.len()` elements.
/// Callers pass an operand they do not use as another one; its loads fold away.
#[inline(always)]
fn each<T: FusedFloat>(d: &mut [T], a: &[T], b: &[T], c: &[T], f: impl Fn(T, T, T, T) -> T) {
    let n = d.len();
    let (a, b, c) = (&a[..n], &b[..n], &c[..n]);
    let mut i = 0;
    while i + W <= n {
        let dw: &mut [T; W] = (&mut d[i..i + W]).try_into().unwrap();
        let aw: &[T; W] = a[i..i + W].try_into().unwrap();
        let bw: &[T; W] = b[i..i + W].try_into().unwrap();
        let cw: &[T; W] = c[i..i + W].try_into().unwrap();
        for j in 0..W {
            dw[j] = f(dw[j], aw[j], bw[j], cw[j]);
        }
        i += W;
    }
    for j in i..n {
        d[j] = f(d[j], a[j], b[j], c[j]);
    }
}

/// `d = f(a)` elementwise.
#[inline(always)]
fn map1<T: FusedFloat>(d: &mut [T], a: &[T], f: impl Fn(T) -> T) {
    each(d, a, a, a, |_, x, _, _| f(x));
}

/// `d = f(a, b)` elementwise.
#[inline(always)]
fn map2<T: FusedFloat>(d: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T) -> T) {
    each(d, a, b, a, |_, x, y, _| f(x, y));
}

#[inline(always)]
fn forward_op<T: FusedFloat>(op: EwOp, d: &mut [T], a: &[T], b: &[T]) {
    use EwOp::*;
    let one = T::ONE;
    let zero = T::ZERO;
    match op {
        Neg => map1(d, a, |x| -x),
        Exp => map1(d, a, |x| x.k_exp()),
        Log => map1(d, a, |x| x.k_ln()),
        Sin => map1(d, a, |x| x.k_sin()),
        Cos => map1(d, a, |x| x.k_cos()),
        Tan => map1(d, a, |x| x.k_tan()),
        Tanh => map1(d, a, |x| x.k_tanh()),
        Sigmoid => map1(d, a, sigmoid),
        Relu => map1(d, a, |x| if x > zero { x } else { zero }),
        Sqrt => map1(d, a, |x| x.k_sqrt()),
        Rsqrt => map1(d, a, |x| one / x.k_sqrt()),
        Abs => map1(d, a, |x| x.k_abs()),
        Reciprocal => map1(d, a, |x| one / x),
        Square => map1(d, a, |x| x * x),
        Log1p => map1(d, a, |x| x.k_ln_1p()),
        Expm1 => map1(d, a, |x| x.k_exp_m1()),
        Log2 => map1(d, a, |x| x.k_log2()),
        Silu => map1(d, a, |x| x * sigmoid(x)),
        Gelu => {
            let (c, half) = (T::of(std::f64::consts::FRAC_1_SQRT_2), T::of(0.5));
            map1(d, a, |x| (x * half) * ((x * c).k_erf() + one))
        }
        GeluTanh => {
            let (kappa, beta, half) = (T::of(GELU_KAPPA), T::of(GELU_BETA), T::of(0.5));
            map1(d, a, |x| {
                let t = ((x + ((x * x) * x) * kappa) * beta).k_tanh();
                (x * half) * (t + one)
            })
        }
        LeakyRelu => map2(d, a, b, |x, s| if x > zero { x } else { x * s }),
        Add => map2(d, a, b, |x, y| x + y),
        Sub => map2(d, a, b, |x, y| x - y),
        Mul => map2(d, a, b, |x, y| x * y),
        Div => map2(d, a, b, |x, y| x / y),
        Pow => map2(d, a, b, powf_special),
        Maximum => map2(d, a, b, |x, y| x.k_max(y)),
        Minimum => map2(d, a, b, |x, y| x.k_min(y)),
    }
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
        each(d, g, u, v, |d, g, u, v| d + f(g, u, v));
    } else {
        each(d, g, u, v, |_, g, u, v| f(g, u, v));
    }
}

/// Lands `f(g, u)` in `d`.
#[inline(always)]
fn land2<T: FusedFloat>(d: &mut [T], act: Act, g: &[T], u: &[T], f: impl Fn(T, T) -> T) {
    land3(d, act, g, u, u, |g, u, _| f(g, u));
}

/// Lands `f(g)` in `d`.
#[inline(always)]
fn land<T: FusedFloat>(d: &mut [T], act: Act, g: &[T], f: impl Fn(T) -> T) {
    land3(d, act, g, g, g, |g, _, _| f(g));
}

/// The gradient operand `slot` (0 for `a`, 1 for `b`) receives from an
/// instruction whose result `y` has gradient `g`, each written as the eager
/// rule computes it (comments name the rule's ops). `sa`/`sb` are the
/// constants derived from the operands' numbers when they are scalars.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn backward_op<T: FusedFloat>(
    op: EwOp,
    slot: usize,
    d: &mut [T],
    act: Act,
    g: &[T],
    y: &[T],
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
        // mul(g, cos(x))
        (Sin, _) => land2(d, act, g, a, |g, x| g * x.k_cos()),
        // mul(g, neg(sin(x)))
        (Cos, _) => land2(d, act, g, a, |g, x| g * -x.k_sin()),
        // mul(g, add(mul(y, y), 1))
        (Tan, _) => land2(d, act, g, y, |g, y| g * ((y * y) + one)),
        // g * (1 - y^2)
        (Tanh, _) => land2(d, act, g, y, |g, y| g * (one - y * y)),
        // g * (y * (1 - y))
        (Sigmoid, _) => land2(d, act, g, y, |g, y| g * (y * (one - y))),
        // g where y > 0, else 0
        (Relu, _) => land2(d, act, g, y, |g, y| if y > zero { g } else { zero }),
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
        (Silu, _) => land2(d, act, g, a, |g, x| {
            let s = sigmoid(x);
            g * (s * ((x * (one - s)) + one))
        }),
        // mul(g, add(cdf, mul(x, pdf)))
        (Gelu, _) => {
            let c = T::of(std::f64::consts::FRAC_1_SQRT_2);
            let half = T::of(0.5);
            let mhalf = T::of(-0.5);
            let norm = T::of(1.0 / (2.0 * std::f64::consts::PI).sqrt());
            land2(d, act, g, a, |g, x| {
                let cdf = ((x * c).k_erf() + one) * half;
                let pdf = ((x * x) * mhalf).k_exp() * norm;
                g * (cdf + (x * pdf))
            })
        }
        (GeluTanh, _) => {
            let (kappa, beta, half) = (T::of(GELU_KAPPA), T::of(GELU_BETA), T::of(0.5));
            let kappa3 = T::of(3.0 * GELU_KAPPA);
            land2(d, act, g, a, |g, x| {
                let t = ((x + ((x * x) * x) * kappa) * beta).k_tanh();
                let left = (t + one) * half;
                let sech2 = one - (t * t);
                let du = (((x * x) * kappa3) + one) * beta;
                g * (left + ((x * half) * (sech2 * du)))
            })
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
                land2(d, act, g, a, |g, x| g * (powf_special(x, em1) * et))
            }
            // mul(g, mul(b, pow(a, sub(b, 1))))
            None => land3(d, act, g, a, b, |g, x, e| {
                g * (e * powf_special(x, e - one))
            }),
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
                each(t, g, y, a, |_, g, y, x| g * (y * x.k_ln()));
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
        (Maximum, 0) => land3(d, act, g, a, b, |g, x, o| g * extreme_share(x, o, true)),
        (Maximum, _) => land3(d, act, g, b, a, |g, x, o| g * extreme_share(x, o, true)),
        (Minimum, 0) => land3(d, act, g, a, b, |g, x, o| g * extreme_share(x, o, false)),
        (Minimum, _) => land3(d, act, g, b, a, |g, x, o| g * extreme_share(x, o, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::{run_backward, BackwardRequest, GradModeGuard};
    use crate::ops::{self, Scalar};
    use crate::tensor::{DType, Element, Shape, Tensor};

    const ALL_OPS: [EwOp; 28] = {
        use EwOp::*;
        [
            Neg, Exp, Log, Sin, Cos, Tan, Tanh, Sigmoid, Relu, Sqrt, Rsqrt, Abs, Reciprocal,
            Square, Log1p, Expm1, Log2, Silu, Gelu, GeluTanh, LeakyRelu, Add, Sub, Mul, Div, Pow,
            Maximum, Minimum,
        ]
    };

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn tensor<T: Element>(v: &[f64]) -> Tensor {
        let data: Vec<T> = v.iter().map(|&x| T::from_f64(x)).collect();
        Tensor::from_vec(data, Shape::from_slice(&[v.len()]))
    }

    /// The eager op an instruction stands for, on tensors of `dt`.
    fn eager(
        ins: &Instr,
        regs: &[Tensor],
        inputs: &[Tensor],
        scalars: &[f64],
        dt: DType,
    ) -> crate::Result<Tensor> {
        use EwOp::*;
        let t = |s: Src| match s {
            Src::Input(k) => inputs[k as usize].clone(),
            Src::Reg(r) => regs[r as usize].clone(),
            Src::Scalar(k) => Tensor::scalar_of(scalars[k as usize], dt),
        };
        let num = |s: Option<Src>| match s {
            Some(Src::Scalar(k)) => Some(scalars[k as usize]),
            _ => None,
        };
        let a = t(ins.a);
        let (sa, sb) = (num(Some(ins.a)), num(ins.b));
        let b = ins.b.map(t);
        let f = Scalar::Float;
        Ok(match (ins.op, b) {
            (Neg, _) => ops::neg(&a)?,
            (Exp, _) => ops::exp(&a)?,
            (Log, _) => ops::log(&a)?,
            (Sin, _) => ops::sin(&a)?,
            (Cos, _) => ops::cos(&a)?,
            (Tan, _) => ops::tan(&a)?,
            (Tanh, _) => ops::tanh(&a)?,
            (Sigmoid, _) => ops::sigmoid(&a)?,
            (Relu, _) => ops::relu(&a)?,
            (Sqrt, _) => ops::sqrt(&a)?,
            (Rsqrt, _) => ops::rsqrt(&a)?,
            (Abs, _) => ops::abs(&a)?,
            (Reciprocal, _) => ops::reciprocal(&a)?,
            (Square, _) => ops::square(&a)?,
            (Log1p, _) => ops::log1p(&a)?,
            (Expm1, _) => ops::expm1(&a)?,
            (Log2, _) => ops::log2(&a)?,
            (Silu, _) => ops::silu(&a)?,
            (Gelu, _) => ops::gelu(&a, false)?,
            (GeluTanh, _) => ops::gelu(&a, true)?,
            (LeakyRelu, _) => ops::leaky_relu(&a, sb.unwrap())?,
            (Add, Some(b)) => match (sa, sb) {
                (Some(s), _) => ops::add_scalar(&b, f(s))?,
                (_, Some(s)) => ops::add_scalar(&a, f(s))?,
                _ => ops::add(&a, &b)?,
            },
            (Sub, Some(b)) => match (sa, sb) {
                (Some(s), _) => ops::rsub_scalar(&b, f(s))?,
                (_, Some(s)) => ops::sub_scalar(&a, f(s))?,
                _ => ops::sub(&a, &b)?,
            },
            (Mul, Some(b)) => match (sa, sb) {
                (Some(s), _) => ops::mul_scalar(&b, f(s))?,
                (_, Some(s)) => ops::mul_scalar(&a, f(s))?,
                _ => ops::mul(&a, &b)?,
            },
            (Div, Some(b)) => match sb {
                Some(s) => ops::div_scalar(&a, f(s))?,
                None => ops::div(&a, &b)?,
            },
            (Pow, Some(b)) => match (sa, sb) {
                (Some(s), _) => ops::rpow_scalar(&b, f(s))?,
                (_, Some(s)) => ops::pow_scalar(&a, f(s))?,
                _ => ops::pow(&a, &b)?,
            },
            (Maximum, Some(b)) => ops::maximum(&a, &b)?,
            (Minimum, Some(b)) => ops::minimum(&a, &b)?,
            (op, None) => panic!("{op:?} needs two operands"),
        })
    }

    /// A random program of `len` instructions over `inputs`, drawn so that
    /// every register stays finite and moderate on these inputs in float64
    /// (checked with the eager ops), with a few outputs.
    fn random_program(
        rng: &mut Rng,
        inputs: &[Vec<f64>],
        scalars: &[f64],
        len: usize,
        ops_allowed: &[EwOp],
    ) -> Program {
        let _g = GradModeGuard::new(false);
        let xs: Vec<Tensor> = inputs.iter().map(|v| tensor::<f64>(v)).collect();
        let mut regs: Vec<Tensor> = Vec::new();
        let mut instrs: Vec<Instr> = Vec::new();
        while instrs.len() < len {
            let op = ops_allowed[rng.below(ops_allowed.len())];
            let pick = |rng: &mut Rng| {
                // Favour recent registers, so chains get deep.
                if regs.is_empty() || rng.below(4) == 0 {
                    Src::Input(rng.below(xs.len()) as u16)
                } else {
                    let back = rng.below(regs.len().min(6));
                    Src::Reg((regs.len() - 1 - back) as u16)
                }
            };
            let a = pick(rng);
            let b = (op.arity() == 2).then(|| {
                if op == EwOp::LeakyRelu || rng.below(3) == 0 {
                    Src::Scalar(rng.below(scalars.len()) as u16)
                } else {
                    pick(rng)
                }
            });
            // Sometimes the scalar goes first (rsub, rpow, ...).
            let (a, b) = match b {
                Some(Src::Scalar(_)) if op != EwOp::LeakyRelu && rng.below(2) == 0 => {
                    (b.unwrap(), Some(a))
                }
                _ => (a, b),
            };
            let ins = Instr { op, a, b };
            let Ok(y) = eager(&ins, &regs, &xs, scalars, DType::F64) else {
                continue;
            };
            if y.to_vec::<f64>()
                .iter()
                .all(|v| v.is_finite() && v.abs() < 1e4)
            {
                regs.push(y);
                instrs.push(ins);
            }
        }
        // Every register nothing else reads is an output, so gradients flow
        // through the whole program; then one output twice, and one that
        // callers leave unseeded.
        let n = instrs.len() as u16;
        let mut used = vec![false; n as usize];
        for ins in &instrs {
            for s in [Some(ins.a), ins.b].into_iter().flatten() {
                if let Src::Reg(r) = s {
                    used[r as usize] = true;
                }
            }
        }
        let mut outputs: Vec<u16> = (0..n).filter(|&r| !used[r as usize]).collect();
        outputs.push(rng.below(n as usize) as u16);
        outputs.push(n - 1);
        outputs.push(n / 2);
        Program {
            n_inputs: inputs.len(),
            n_scalars: scalars.len(),
            instrs,
            outputs,
        }
    }

    fn same<T: FusedFloat>(x: T, y: T) -> bool {
        let (x, y): (f64, f64) = (x.into(), y.into());
        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
    }

    /// Runs `prog` fused and eagerly (forward, then the engine's backward
    /// from `seeds`) in `T`, and checks both agree bit for bit.
    fn check_against_eager<T: FusedFloat + Element>(
        prog: &Program,
        inputs: &[Vec<f64>],
        scalars: &[f64],
        seeds: &[Option<Vec<f64>>],
        want: &[bool],
    ) {
        let n = inputs[0].len();
        let xs: Vec<Tensor> = inputs.iter().map(|v| tensor::<T>(v)).collect();
        for x in &xs {
            x.set_requires_grad(true).unwrap();
        }
        let mut regs = Vec::new();
        for ins in &prog.instrs {
            let y = eager(ins, &regs, &xs, scalars, T::DTYPE).unwrap();
            regs.push(y);
        }
        let roots: Vec<Tensor> = prog
            .outputs
            .iter()
            .zip(seeds)
            .filter(|(_, s)| s.is_some())
            .map(|(&o, _)| regs[o as usize].clone())
            .collect();
        let root_grads: Vec<Tensor> = seeds.iter().flatten().map(|s| tensor::<T>(s)).collect();
        let targets: Vec<Tensor> = xs
            .iter()
            .zip(want)
            .filter(|(_, &w)| w)
            .map(|(x, _)| x.clone())
            .collect();
        let eager_grads = run_backward(BackwardRequest {
            roots,
            grads: root_grads,
            inputs: Some(targets),
            retain_graph: false,
            create_graph: false,
            accumulate: false,
        })
        .unwrap();

        let in_t: Vec<Vec<T>> = xs.iter().map(|x| x.to_vec::<T>()).collect();
        let in_s: Vec<&[T]> = in_t.iter().map(|v| v.as_slice()).collect();
        let seed_t: Vec<Option<Vec<T>>> = seeds
            .iter()
            .map(|s| s.as_ref().map(|s| s.iter().map(|&v| T::of(v)).collect()))
            .collect();
        let seed_s: Vec<Option<&[T]>> = seed_t.iter().map(|s| s.as_deref()).collect();
        let mut out_v: Vec<Vec<T>> = vec![vec![T::ZERO; n]; prog.outputs.len()];
        let mut grads: Vec<Option<Vec<T>>> = vec![None; prog.n_inputs];
        {
            let mut outs: Vec<&mut [T]> = out_v.iter_mut().map(|v| v.as_mut_slice()).collect();
            prog.forward_vjp(&in_s, scalars, &seed_s, want, &mut outs, &mut grads);
        }
        // Forward alone gives the same outputs.
        let mut fwd_v: Vec<Vec<T>> = vec![vec![T::ZERO; n]; prog.outputs.len()];
        {
            let mut outs: Vec<&mut [T]> = fwd_v.iter_mut().map(|v| v.as_mut_slice()).collect();
            prog.forward(&in_s, scalars, &mut outs);
        }
        for (k, &o) in prog.outputs.iter().enumerate() {
            let e = regs[o as usize].to_vec::<T>();
            for j in 0..n {
                assert!(
                    same(out_v[k][j], e[j]) && same(fwd_v[k][j], e[j]),
                    "output {k} (register {o}, {:?}) element {j}: fused {:?}, eager {:?}",
                    prog.instrs[o as usize],
                    out_v[k][j],
                    e[j]
                );
            }
        }
        let mut eg = eager_grads.into_iter();
        for (i, &w) in want.iter().enumerate() {
            if !w {
                assert!(grads[i].is_none());
                continue;
            }
            let got = grads[i].as_ref().unwrap();
            let expect = match eg.next().unwrap() {
                Some(t) => t.to_vec::<T>(),
                None => vec![T::ZERO; n],
            };
            for j in 0..n {
                assert!(
                    same(got[j], expect[j]),
                    "gradient of input {i} element {j}: fused {:?}, eager {:?}",
                    got[j],
                    expect[j]
                );
            }
        }
    }

    fn data(rng: &mut Rng, n_inputs: usize, n: usize) -> Vec<Vec<f64>> {
        (0..n_inputs)
            .map(|_| (0..n).map(|_| rng.uniform(-2.0, 2.0)).collect())
            .collect()
    }

    const SCALARS: [f64; 7] = [0.5, -1.25, 2.0, 3.0, 0.3, 0.0, 1.7];

    #[test]
    fn random_programs_match_eager_bit_for_bit() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..3 {
            // Lengths around and across block boundaries.
            let n = [37, 300, 16][round];
            let inputs = data(&mut rng, 3, n);
            let prog = random_program(&mut rng, &inputs, &SCALARS, 50, &ALL_OPS);
            prog.validate().unwrap();
            let seeds: Vec<Option<Vec<f64>>> = (0..prog.outputs.len())
                .map(|k| {
                    (k + 1 != prog.outputs.len())
                        .then(|| (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect())
                })
                .collect();
            let want = [true, round != 1, true];
            check_against_eager::<f32>(&prog, &inputs, &SCALARS, &seeds, &want);
            check_against_eager::<f64>(&prog, &inputs, &SCALARS, &seeds, &want);
        }
    }

    #[test]
    fn every_op_matches_eager_with_every_operand_kind() {
        let mut rng = Rng(12345);
        let n = 21;
        let mut inputs = data(&mut rng, 2, n);
        // Ties and zeros for maximum/minimum/relu/abs/pow's special cases.
        inputs[0][0] = 0.0;
        inputs[1][0] = 0.0;
        inputs[0][1] = inputs[1][1];
        inputs[0][2] = -0.0;
        let pos: Vec<f64> = inputs[0].iter().map(|v| v.abs() + 0.1).collect();
        inputs.push(pos);
        for op in ALL_OPS {
            let kinds: Vec<(Src, Option<Src>)> = if op.arity() == 1 {
                vec![(Src::Input(0), None), (Src::Input(2), None)]
            } else if op == EwOp::LeakyRelu {
                vec![
                    (Src::Input(0), Some(Src::Scalar(0))),
                    (Src::Input(0), Some(Src::Scalar(1))),
                ]
            } else {
                let mut k = vec![
                    (Src::Input(0), Some(Src::Input(1))),
                    (Src::Input(2), Some(Src::Input(0))),
                    (Src::Input(0), Some(Src::Input(0))),
                ];
                for s in 0..SCALARS.len() as u16 {
                    k.push((Src::Input(2), Some(Src::Scalar(s))));
                    k.push((Src::Scalar(s), Some(Src::Input(0))));
                }
                k
            };
            for (a, b) in kinds {
                let prog = Program {
                    n_inputs: 3,
                    n_scalars: SCALARS.len(),
                    instrs: vec![Instr { op, a, b }],
                    outputs: vec![0],
                };
                let seeds = vec![Some((0..n).map(|_| rng.uniform(-1.0, 1.0)).collect())];
                check_against_eager::<f32>(&prog, &inputs, &SCALARS, &seeds, &[true; 3]);
                check_against_eager::<f64>(&prog, &inputs, &SCALARS, &seeds, &[true; 3]);
            }
        }
    }

    #[test]
    fn an_input_used_many_times_sums_its_gradients_in_engine_order() {
        use EwOp::*;
        let mut rng = Rng(77);
        let n = 150;
        let inputs = data(&mut rng, 2, n);
        let x = Src::Input(0);
        let mut instrs = vec![Instr {
            op: Mul,
            a: x,
            b: Some(x),
        }];
        for i in 0..40u16 {
            let op = [Add, Mul, Sub, Maximum][i as usize % 4];
            let prev = Src::Reg(instrs.len() as u16 - 1);
            instrs.push(Instr {
                op,
                a: prev,
                b: Some(x),
            });
            instrs.push(Instr {
                op: Tanh,
                a: Src::Reg(instrs.len() as u16 - 1),
                b: None,
            });
            if i % 7 == 0 {
                instrs.push(Instr {
                    op: Sin,
                    a: x,
                    b: None,
                });
                let r = instrs.len() as u16;
                instrs.push(Instr {
                    op: Mul,
                    a: Src::Reg(r - 1),
                    b: Some(Src::Reg(r - 2)),
                });
            }
        }
        let last = instrs.len() as u16 - 1;
        let prog = Program {
            n_inputs: 2,
            n_scalars: 0,
            instrs,
            outputs: vec![last, 0],
        };
        let seeds = vec![
            Some(vec![1.0; n]),
            Some((0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()),
        ];
        check_against_eager::<f32>(&prog, &inputs, &[], &seeds, &[true, true]);
        check_against_eager::<f64>(&prog, &inputs, &[], &seeds, &[true, true]);
    }

    #[test]
    fn gradients_match_finite_differences() {
        use EwOp::*;
        let smooth = [
            Neg, Exp, Sin, Cos, Tanh, Sigmoid, Square, Expm1, Silu, Gelu, GeluTanh, Add, Sub, Mul,
            Div, Pow, Reciprocal,
        ];
        let mut rng = Rng(2024);
        let n = 5;
        let inputs = data(&mut rng, 2, n);
        let prog = random_program(&mut rng, &inputs, &SCALARS, 20, &smooth);
        let seeds: Vec<Vec<f64>> = (0..prog.outputs.len())
            .map(|_| (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect())
            .collect();
        let loss = |xs: &[Vec<f64>]| -> f64 {
            let ins: Vec<&[f64]> = xs.iter().map(|v| v.as_slice()).collect();
            let mut out_v = vec![vec![0.0; n]; prog.outputs.len()];
            let mut outs: Vec<&mut [f64]> = out_v.iter_mut().map(|v| v.as_mut_slice()).collect();
            prog.forward(&ins, &SCALARS, &mut outs);
            out_v
                .iter()
                .zip(&seeds)
                .map(|(o, s)| o.iter().zip(s).map(|(a, b)| a * b).sum::<f64>())
                .sum()
        };
        let ins: Vec<&[f64]> = inputs.iter().map(|v| v.as_slice()).collect();
        let seed_s: Vec<Option<&[f64]>> = seeds.iter().map(|s| Some(s.as_slice())).collect();
        let mut out_v = vec![vec![0.0; n]; prog.outputs.len()];
        let mut outs: Vec<&mut [f64]> = out_v.iter_mut().map(|v| v.as_mut_slice()).collect();
        let mut grads = vec![None, None];
        prog.forward_vjp(
            &ins,
            &SCALARS,
            &seed_s,
            &[true, true],
            &mut outs,
            &mut grads,
        );
        let h = 1e-6;
        for i in 0..2 {
            for j in 0..n {
                let mut p = inputs.clone();
                p[i][j] += h;
                let mut m = inputs.clone();
                m[i][j] -= h;
                let fd = (loss(&p) - loss(&m)) / (2.0 * h);
                let an = grads[i].as_ref().unwrap()[j];
                assert!(
                    (fd - an).abs() <= 1e-5 * an.abs().max(1.0),
                    "input {i} element {j}: analytic {an}, finite difference {fd}"
                );
            }
        }
    }

    #[test]
    fn validate_rejects_bad_programs() {
        use EwOp::*;
        let ok = Instr {
            op: Exp,
            a: Src::Input(0),
            b: None,
        };
        let bad = |instrs: Vec<Instr>, outputs: Vec<u16>| {
            Program {
                n_inputs: 1,
                n_scalars: 1,
                instrs,
                outputs,
            }
            .validate()
            .unwrap_err()
        };
        let i = |op, a, b| Instr { op, a, b };
        assert!(bad(vec![i(Exp, Src::Input(1), None)], vec![]).contains("input 1"));
        assert!(
            bad(vec![i(Add, Src::Input(0), Some(Src::Scalar(1)))], vec![]).contains("scalar 1")
        );
        assert!(bad(vec![i(Exp, Src::Reg(0), None)], vec![]).contains("register 0"));
        assert!(bad(vec![ok, i(Exp, Src::Reg(2), None)], vec![]).contains("register 2"));
        assert!(bad(vec![i(Add, Src::Input(0), None)], vec![]).contains("two operands"));
        assert!(
            bad(vec![i(Exp, Src::Input(0), Some(Src::Input(0)))], vec![]).contains("one operand")
        );
        assert!(bad(vec![i(Neg, Src::Scalar(0), None)], vec![]).contains("no tensor"));
        assert!(
            bad(vec![i(Mul, Src::Scalar(0), Some(Src::Scalar(0)))], vec![]).contains("no tensor")
        );
        assert!(bad(
            vec![i(LeakyRelu, Src::Input(0), Some(Src::Input(0)))],
            vec![]
        )
        .contains("slope"));
        assert!(bad(vec![ok], vec![1]).contains("output register 1"));
        let good = Program {
            n_inputs: 1,
            n_scalars: 1,
            instrs: vec![ok],
            outputs: vec![0, 0],
        };
        good.validate().unwrap();
        assert!(good.plan(&[true, false], &[true, true]).is_err());
        assert!(good.plan(&[true], &[true]).is_err());
    }

    #[test]
    fn empty_inputs_and_unreached_gradients() {
        use EwOp::*;
        let prog = Program {
            n_inputs: 2,
            n_scalars: 1,
            instrs: vec![
                Instr {
                    op: Mul,
                    a: Src::Input(0),
                    b: Some(Src::Scalar(0)),
                },
                Instr {
                    op: Sin,
                    a: Src::Input(1),
                    b: None,
                },
            ],
            outputs: vec![0, 1],
        };
        let e: &[f32] = &[];
        let mut o0: Vec<f32> = vec![];
        let mut o1: Vec<f32> = vec![];
        let mut grads = vec![None, None];
        prog.forward_vjp(
            &[e, e],
            &[2.0f32],
            &[Some(e), Some(e)],
            &[true, true],
            &mut [&mut o0, &mut o1],
            &mut grads,
        );
        assert_eq!(grads, vec![Some(vec![]), Some(vec![])]);
        // Input 1's only path is through an output without a seed: zeros.
        let x = [1.0f32, 2.0];
        let mut o0 = [0.0f32; 2];
        let mut o1 = [0.0f32; 2];
        let mut grads = vec![None, Some(vec![9.0])];
        let plan = prog.plan(&[true, false], &[true, false]).unwrap();
        plan.forward_vjp(
            &[&x, &x],
            &[0.5f64],
            &[Some(&[1.0, 1.0]), None],
            &mut [&mut o0, &mut o1],
            &mut grads,
        );
        assert_eq!(o0, [0.5, 1.0]);
        assert_eq!(o1, [1.0f32.sin(), 2.0f32.sin()]);
        assert_eq!(grads, vec![Some(vec![0.5, 0.5]), Some(vec![9.0])]);
        let mut grads = vec![None, None];
        prog.forward_vjp(
            &[&x, &x],
            &[0.5f64],
            &[None, None],
            &[true, true],
            &mut [&mut o0, &mut o1],
            &mut grads,
        );
        assert_eq!(grads, vec![Some(vec![0.0, 0.0]), Some(vec![0.0, 0.0])]);
    }

    #[test]
    fn long_inputs_split_across_threads_match_eager() {
        let mut rng = Rng(99);
        let n = GRAIN + 1000;
        let inputs = data(&mut rng, 2, n);
        let ops = [
            EwOp::Mul,
            EwOp::Add,
            EwOp::Tanh,
            EwOp::Exp,
            EwOp::Sigmoid,
            EwOp::Div,
        ];
        let prog = random_program(&mut rng, &inputs, &SCALARS, 8, &ops);
        let seeds: Vec<Option<Vec<f64>>> = (0..prog.outputs.len())
            .map(|_| Some(vec![0.25; n]))
            .collect();
        check_against_eager::<f32>(&prog, &inputs, &SCALARS, &seeds, &[true, true]);
    }
}
