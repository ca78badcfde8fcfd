//! Block-by-block evaluation of a fused program over the pool: every
//! register holds one block, forward then (with a schedule) reverse, and
//! each op's forward expression.

use multiversion::multiversion;

use super::super::{parallel, SendPtr, GRAIN};
use super::float::{powf_exact, powf_special, sigmoid, FusedFloat, GELU_BETA, GELU_KAPPA};
use super::program::{EwOp, Program, Src};
use super::reverse::{backward_op, backward_wide, land, Act, Schedule};

/// Elements per block: every register holds one block, so a block of a
/// 200-instruction float32 program keeps its registers and their gradients
/// (200 KB) in L2, and one instruction's loop is long enough to vectorise.
pub(super) const BLOCK: usize = 128;

/// What the reverse pass derives from a scalar operand, in float64 from the
/// number as the eager rules do; computed once per call, since the compiler
/// may evaluate a `ln` in the loops even where its branch is not taken.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScalarConsts<T> {
    pub(super) zero: bool,
    /// `pow_scalar`'s `e - 1` and `e`.
    pub(super) minus_one: T,
    pub(super) value: T,
    /// `rpow_scalar`'s `ln(s)`.
    pub(super) ln: T,
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
    /// Where every block's registers live between a [`Pass::Keep`] forward
    /// and its [`Pass::Kept`] reverse (null for [`Pass::Both`]).
    kept: SendPtr<T>,
    pass: Pass,
    /// [`n_aux`] of the program.
    n_aux: usize,
}

/// Which halves of the evaluation a call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pass {
    /// Forward, then (with a schedule) reverse, registers in scratch.
    Both,
    /// Forward only, every register kept in the caller's arena.
    Keep,
    /// Reverse only, reading the registers a `Keep` pass left in the arena.
    Kept,
}

/// Length of the arena a [`Pass::Keep`] call fills: every register and
/// auxiliary register of every block, `min(BLOCK, n)` apart.
pub(super) fn kept_len(prog: &Program, n_aux: usize, n: usize) -> usize {
    (prog.instrs.len() + n_aux) * n.div_ceil(BLOCK.min(n).max(1)) * BLOCK.min(n)
}

/// Whether an op's forward leaves a second value for its gradient rule in
/// an auxiliary register: `sin` and `cos` compute the other one from the
/// same argument reduction, which the reverse pass would otherwise redo.
#[inline(always)]
pub(super) fn has_aux(op: EwOp) -> bool {
    matches!(op, EwOp::Sin | EwOp::Cos)
}

/// Auxiliary registers of a program, one per [`has_aux`] instruction in
/// order, after the registers.
pub(super) fn n_aux(prog: &Program) -> usize {
    prog.instrs.iter().filter(|i| has_aux(i.op)).count()
}

pub(super) fn run<T: FusedFloat>(
    prog: &Program,
    sched: Option<&Schedule>,
    inputs: &[&[T]],
    scalars: &[impl Into<f64> + Copy],
    seeds: &[Option<&[T]>],
    outs: &mut [&mut [T]],
    grads: &mut [Option<Vec<T>>],
) {
    let n = inputs
        .first()
        .map(|s| s.len())
        .or_else(|| outs.first().map(|s| s.len()))
        .unwrap_or(0);
    let gradp: smallvec::SmallVec<[SendPtr<T>; 4]> = grads
        .iter_mut()
        .enumerate()
        .map(|(k, g)| match g {
            Some(v) if sched.is_some_and(|s| s.want[k]) && v.len() == n => SendPtr(v.as_mut_ptr()),
            _ => SendPtr(std::ptr::null_mut()),
        })
        .collect();
    run_pass(
        prog,
        sched,
        sched.map_or(0, |_| n_aux(prog)),
        Pass::Both,
        inputs,
        scalars,
        seeds,
        outs,
        &gradp,
        SendPtr(std::ptr::null_mut()),
    );
}

/// The general entry: `grads` are raw pointers (null when not wanted),
/// `kept` the register arena of the `Keep`/`Kept` passes; `n_aux` is
/// [`n_aux`] of the program (0 will do for a forward-only `Both`).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_pass<T: FusedFloat>(
    prog: &Program,
    sched: Option<&Schedule>,
    n_aux: usize,
    pass: Pass,
    inputs: &[&[T]],
    scalars: &[impl Into<f64> + Copy],
    seeds: &[Option<&[T]>],
    outs: &mut [&mut [T]],
    gradp: &[SendPtr<T>],
    kept: SendPtr<T>,
) {
    assert_eq!(inputs.len(), prog.n_inputs, "one slice per program input");
    assert_eq!(
        scalars.len(),
        prog.n_scalars,
        "one value per program scalar"
    );
    // The reverse-only pass writes no outputs.
    assert_eq!(
        outs.len(),
        if pass == Pass::Kept {
            0
        } else {
            prog.outputs.len()
        },
        "one slice per program output"
    );
    let n = inputs
        .first()
        .map(|s| s.len())
        .or_else(|| outs.first().map(|s| s.len()))
        .or_else(|| seeds.iter().flatten().next().map(|s| s.len()))
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
    assert!(
        pass == Pass::Both || !kept.get().is_null(),
        "a kept pass needs its arena"
    );
    let job = Job {
        prog,
        sched,
        inputs,
        scalars: &scalars_t,
        consts: &consts,
        seeds,
        outs: &outp,
        grads: gradp,
        kept,
        pass,
        n_aux,
    };
    parallel::run(n, |threads| {
        if threads == 1 || n < GRAIN {
            run_range(&job, n, 0, n);
            return;
        }
        let chunk = GRAIN.max(n.div_ceil(threads * 4)).next_multiple_of(BLOCK);
        parallel::tasks(n.div_ceil(chunk), |c| {
            run_range(&job, n, c * chunk, ((c + 1) * chunk).min(n))
        });
    });
}

/// Evaluates blocks `lo..hi`, forward and (with a schedule) backward,
/// writing outputs and gradients for those elements only.
#[multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn run_range<T: FusedFloat>(job: &Job<'_, T>, n: usize, lo: usize, hi: usize) {
    let prog = job.prog;
    let ni = prog.instrs.len();
    let ns = prog.n_scalars;
    // The reverse pass reads auxiliary registers; a forward-only call
    // computes none.
    let aux = job.sched.is_some() || job.pass == Pass::Keep;
    let nr = if aux { ni + job.n_aux } else { ni };
    // Registers are `stride` apart: a short range needs no full block each.
    // Kept registers use one stride for the whole length, so a block's
    // place in the arena does not depend on how the range was cut.
    let stride = if job.pass == Pass::Both {
        BLOCK.min(hi - lo)
    } else {
        BLOCK.min(n)
    };
    let regs_len = if job.pass == Pass::Both {
        nr * stride
    } else {
        0
    };
    let adj_len = if job.sched.is_some() && job.pass != Pass::Keep {
        ni * stride
    } else {
        0
    };
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
        let regs: &mut [T] = if job.pass == Pass::Both {
            &mut *regs
        } else {
            // SAFETY: the arena holds `kept_len` elements (checked by the
            // caller); block `pos / stride` owns the `nr * stride` of them
            // at its offset, and only this thread evaluates that block.
            unsafe {
                std::slice::from_raw_parts_mut(
                    job.kept.get().add((pos / stride) * nr * stride),
                    nr * stride,
                )
            }
        };
        if job.pass != Pass::Kept {
            block_forward(job, regs, aux, splat, stride, pos, len);
        }
        if job.pass != Pass::Keep {
            block_reverse(job, regs, adj, splat, stride, pos, len, wide::<T>);
        }
        pos += len;
    }
    T::put_scratch(scratch);

    /// [`backward_wide`] out of line, with this clone's target features.
    #[multiversion::inherit_target]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn wide<T: FusedFloat>(
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
        backward_wide(op, slot, d, act, g, y, x, a, b)
    }
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

/// The forward of one block; with `aux`, `sin` and `cos` also fill their
/// auxiliary registers.
#[inline(always)]
fn block_forward<T: FusedFloat>(
    job: &Job<'_, T>,
    regs: &mut [T],
    aux: bool,
    splat: &[T],
    stride: usize,
    pos: usize,
    len: usize,
) {
    let prog = job.prog;
    let ni = prog.instrs.len();
    let (regs, auxs) = regs.split_at_mut(ni * stride);
    let mut k = 0;
    for (i, ins) in prog.instrs.iter().enumerate() {
        let (done, rest) = regs.split_at_mut(i * stride);
        let d = &mut rest[..len];
        let a = operand(ins.a, job.inputs, done, splat, stride, pos, len);
        let b = match ins.b {
            Some(b) => operand(b, job.inputs, done, splat, stride, pos, len),
            None => &[],
        };
        if aux && has_aux(ins.op) {
            let x = &mut auxs[k * stride..k * stride + len];
            k += 1;
            match ins.op {
                EwOp::Sin => T::sincos_slice(d, x, a),
                _ => T::sincos_slice(x, d, a),
            }
            continue;
        }
        if matches!(ins.op, EwOp::Pow) && !matches!(ins.b, Some(Src::Scalar(_))) {
            // `s ** x` is the eager tensor `pow` (C's), not `pow_scalar`'s forms.
            map2(
                d,
                a,
                b,
                #[inline(always)]
                |x, e| powf_exact(x, e),
            );
            continue;
        }
        forward_op(ins.op, d, a, b);
    }
    for (k, &o) in prog.outputs.iter().enumerate() {
        let r = o as usize * stride;
        // SAFETY: `outs[k]` has the program's length and this thread alone
        // writes its elements `pos..pos + len`.
        let dst = unsafe { std::slice::from_raw_parts_mut(job.outs[k].get().add(pos), len) };
        dst.copy_from_slice(&regs[r..r + len]);
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_reverse<T: FusedFloat>(
    job: &Job<'_, T>,
    regs: &[T],
    adj: &mut [T],
    splat: &[T],
    stride: usize,
    pos: usize,
    len: usize,
    wide: WideFn<T>,
) {
    let prog = job.prog;
    let Some(sched) = job.sched else {
        return;
    };
    let ni = prog.instrs.len();
    let (regs, auxs) = regs.split_at(ni * stride);
    let mut k = auxs.len() / stride;
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
    for i in (0..ni).rev() {
        let ins = prog.instrs[i];
        let x = if has_aux(ins.op) {
            k -= 1;
            &auxs[k * stride..k * stride + len]
        } else {
            &[]
        };
        if !sched.live[i] {
            continue;
        }
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
            // A gradient decaying down a long chain reaches subnormal
            // products, which the plain multiply takes an assist for.
            if !(T::any_tiny(g) && wide(ins.op, slot, dst, act, g, y, x, a, b)) {
                backward_op(ins.op, slot, dst, act, g, y, x, a, b, sa, sb);
            }
        }
    }
}

/// [`backward_wide`]'s signature.
type WideFn<T> = fn(EwOp, usize, &mut [T], Act, &[T], &[T], &[T], &[T], &[T]) -> bool;

/// Lanes per step of the loops below: a fixed-size step compiles to whole
/// vector instructions, so a 16-float block costs one per operation.
const W: usize = 16;

/// `d[i] = f(d[i], a[i], b[i], c[i])` over the first `d.len()` elements.
/// Callers pass an operand they do not use as another one; its loads fold away.
#[inline(always)]
pub(super) fn each<T: FusedFloat>(
    d: &mut [T],
    a: &[T],
    b: &[T],
    c: &[T],
    f: impl Fn(T, T, T, T) -> T,
) {
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
    each(
        d,
        a,
        a,
        a,
        #[inline(always)]
        |_, x, _, _| f(x),
    );
}

/// `d = f(a, b)` elementwise.
#[inline(always)]
fn map2<T: FusedFloat>(d: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T) -> T) {
    // Always inlined: a large `f` (the lane-wise pow) left out of line would be
    // compiled for the baseline and call the software `fma` per element.
    each(
        d,
        a,
        b,
        a,
        #[inline(always)]
        |_, x, y, _| f(x, y),
    );
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
        Sin => T::sin_slice(d, a),
        Cos => T::cos_slice(d, a),
        Tan => map1(d, a, |x| x.k_tan()),
        Tanh => map1(d, a, |x| x.k_tanh()),
        Sigmoid => map1(d, a, sigmoid),
        // As eager relu: NaN and -0 pass through.
        Relu => map1(d, a, |x| if x < zero { zero } else { x }),
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
        Pow => map2(
            d,
            a,
            b,
            #[inline(always)]
            |x, e| powf_special(x, e),
        ),
        Maximum => map2(d, a, b, |x, y| x.k_max(y)),
        Minimum => map2(d, a, b, |x, y| x.k_min(y)),
    }
}
