//! The fused instruction set: where operands come from ([`Src`]), the
//! elementwise ops ([`EwOp`]), instructions and programs, with
//! [`Program::validate`] and the entry points that evaluate a program
//! forward or forward and back.

use super::eval::run;
use super::float::FusedFloat;
use super::reverse::vjp;

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
    /// otherwise. Builds a [`Plan`](super::Plan) each call; keep one to replay faster.
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
}
