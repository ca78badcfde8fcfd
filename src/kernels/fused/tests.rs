//! Fused programs against the eager ops and engine, bit for bit, and
//! against finite differences.

use super::super::GRAIN;
use super::*;
use crate::autograd::{run_backward, BackwardRequest, GradModeGuard};
use crate::ops::{self, Scalar};
use crate::tensor::{DType, Element, Shape, Tensor};

pub(super) const ALL_OPS: [EwOp; 28] = {
    use EwOp::*;
    [
        Neg, Exp, Log, Sin, Cos, Tan, Tanh, Sigmoid, Relu, Sqrt, Rsqrt, Abs, Reciprocal, Square,
        Log1p, Expm1, Log2, Silu, Gelu, GeluTanh, LeakyRelu, Add, Sub, Mul, Div, Pow, Maximum,
        Minimum,
    ]
};

pub(super) struct Rng(pub(super) u64);
impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(super) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
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
pub(super) fn check_against_eager<T: FusedFloat + Element>(
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

pub(super) fn data(rng: &mut Rng, n_inputs: usize, n: usize) -> Vec<Vec<f64>> {
    (0..n_inputs)
        .map(|_| (0..n).map(|_| rng.uniform(-2.0, 2.0)).collect())
        .collect()
}

pub(super) const SCALARS: [f64; 7] = [0.5, -1.25, 2.0, 3.0, 0.3, 0.0, 1.7];

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
        Neg, Exp, Sin, Cos, Tanh, Sigmoid, Square, Expm1, Silu, Gelu, GeluTanh, Add, Sub, Mul, Div,
        Pow, Reciprocal,
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
    assert!(bad(vec![i(Add, Src::Input(0), Some(Src::Scalar(1)))], vec![]).contains("scalar 1"));
    assert!(bad(vec![i(Exp, Src::Reg(0), None)], vec![]).contains("register 0"));
    assert!(bad(vec![ok, i(Exp, Src::Reg(2), None)], vec![]).contains("register 2"));
    assert!(bad(vec![i(Add, Src::Input(0), None)], vec![]).contains("two operands"));
    assert!(bad(vec![i(Exp, Src::Input(0), Some(Src::Input(0)))], vec![]).contains("one operand"));
    assert!(bad(vec![i(Neg, Src::Scalar(0), None)], vec![]).contains("no tensor"));
    assert!(bad(vec![i(Mul, Src::Scalar(0), Some(Src::Scalar(0)))], vec![]).contains("no tensor"));
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

/// `forward_keep` then `reverse_kept` (with some gradient buffers already
/// holding a gradient) against the one-pass `forward_vjp` followed by the
/// engine's `prev + g` per input.
pub(super) fn check_keep_matches_one_pass<T: FusedFloat + Element>(
    prog: &Program,
    inputs: &[Vec<f64>],
    seeds: &[Option<Vec<f64>>],
    want: &[bool],
    accumulate: &[bool],
) {
    let n = inputs[0].len();
    let xs: Vec<Vec<T>> = inputs
        .iter()
        .map(|v| v.iter().map(|&x| T::of(x)).collect())
        .collect();
    let xr: Vec<&[T]> = xs.iter().map(|v| v.as_slice()).collect();
    let sd: Vec<Option<Vec<T>>> = seeds
        .iter()
        .map(|s| s.as_ref().map(|v| v.iter().map(|&x| T::of(x)).collect()))
        .collect();
    let sr: Vec<Option<&[T]>> = sd.iter().map(|s| s.as_deref()).collect();
    let held: Vec<Vec<T>> = (0..xs.len())
        .map(|k| {
            (0..n)
                .map(|i| T::of(0.125 * (i + k) as f64 - 1.0))
                .collect()
        })
        .collect();

    // One pass, then `prev + g` for the inputs that held a gradient.
    let mut outs1: Vec<Vec<T>> = prog.outputs.iter().map(|_| vec![T::ZERO; n]).collect();
    let mut o1: Vec<&mut [T]> = outs1.iter_mut().map(|v| v.as_mut_slice()).collect();
    let mut g1: Vec<Option<Vec<T>>> = vec![None; xs.len()];
    let seeded: Vec<bool> = sr.iter().map(Option::is_some).collect();
    prog.plan(want, &seeded)
        .unwrap()
        .forward_vjp(&xr, &SCALARS, &sr, &mut o1, &mut g1);

    let plan = prog.plan_into(want, &seeded, accumulate).unwrap();
    let mut kept = vec![T::of(f64::NAN); plan.kept_len(n)];
    let mut outs2: Vec<Vec<T>> = prog.outputs.iter().map(|_| vec![T::of(7.0); n]).collect();
    let mut o2: Vec<&mut [T]> = outs2.iter_mut().map(|v| v.as_mut_slice()).collect();
    plan.forward_keep(&xr, &SCALARS, &mut o2, &mut kept);
    for (a, b) in outs1.iter().flatten().zip(outs2.iter().flatten()) {
        assert!(same(*a, *b), "forward differs: {a:?} vs {b:?}");
    }
    // Garbage in the buffers that are overwritten: they must not leak through.
    let mut g2: Vec<Vec<T>> = (0..xs.len())
        .map(|k| {
            if accumulate[k] {
                held[k].clone()
            } else {
                vec![T::of(f64::NAN); n]
            }
        })
        .collect();
    let mut gr: Vec<Option<&mut [T]>> = g2
        .iter_mut()
        .enumerate()
        .map(|(k, v)| want[k].then_some(v.as_mut_slice()))
        .collect();
    plan.reverse_kept(&xr, &SCALARS, &mut kept, &sr, &mut gr);
    for k in 0..xs.len() {
        if !want[k] {
            continue;
        }
        let one = g1[k].as_ref().unwrap();
        for i in 0..n {
            // The engine adds a later contribution as `prev + g` one at a
            // time; a single contribution makes that `held + g` exactly.
            let expect = if accumulate[k] {
                held[k][i] + one[i]
            } else {
                one[i]
            };
            if accumulate[k] {
                // Several contributions are added one by one after `held`,
                // which can round differently from `held + sum`: compare
                // within a few ulps there and exactly otherwise.
                let (a, b): (f64, f64) = (expect.into(), g2[k][i].into());
                assert!(
                    (a - b).abs() <= 1e-5 * (1.0 + a.abs()) || (a.is_nan() && b.is_nan()),
                    "input {k}[{i}]: {a} vs {b}"
                );
            } else {
                assert!(
                    same(expect, g2[k][i]),
                    "input {k}[{i}]: {expect:?} vs {:?}",
                    g2[k][i]
                );
            }
        }
    }
}

#[test]
fn kept_registers_give_the_one_pass_results() {
    let mut rng = Rng(0xC0FFEE);
    for (round, &n) in [16usize, 1, 300, GRAIN + 300].iter().enumerate() {
        let inputs = data(&mut rng, 3, n);
        let prog = random_program(&mut rng, &inputs, &SCALARS, 40, &ALL_OPS);
        let seeds: Vec<Option<Vec<f64>>> = (0..prog.outputs.len())
            .map(|k| (k % 3 != 2).then(|| (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()))
            .collect();
        let want = [true, round % 2 == 0, true];
        check_keep_matches_one_pass::<f32>(&prog, &inputs, &seeds, &want, &[false; 3]);
        check_keep_matches_one_pass::<f64>(&prog, &inputs, &seeds, &want, &[false; 3]);
        check_keep_matches_one_pass::<f64>(&prog, &inputs, &seeds, &want, &[true, false, true]);
    }
}

#[test]
fn an_accumulated_input_adds_each_contribution_after_the_held_gradient() {
    // y = x * 3 + x: the engine adds x's contributions one by one after a
    // gradient x already held: (held + g) + 3 g, not held + (g + 3 g).
    let prog = Program {
        n_inputs: 1,
        n_scalars: 1,
        instrs: vec![
            Instr {
                op: EwOp::Mul,
                a: Src::Input(0),
                b: Some(Src::Scalar(0)),
            },
            Instr {
                op: EwOp::Add,
                a: Src::Reg(0),
                b: Some(Src::Input(0)),
            },
        ],
        outputs: vec![1],
    };
    let x = [0.5f32];
    // The spacing of float32 here is 8 and 100000008 / 8 is odd: adding 1
    // then 3 leaves it, while adding 4 at once rounds (to even) up by 8.
    let held = 100_000_008.0f32;
    assert_ne!((held + 1.0) + 3.0, held + 4.0);
    let g = 1.0f32;
    let plan = prog.plan_into(&[true], &[true], &[true]).unwrap();
    let mut kept = vec![0.0f32; plan.kept_len(1)];
    let mut out = [0.0f32];
    plan.forward_keep(&[&x[..]], &[3.0f64], &mut [&mut out[..]], &mut kept);
    let mut gx = [held];
    plan.reverse_kept(
        &[&x[..]],
        &[3.0f64],
        &mut kept,
        &[Some(&[g][..])],
        &mut [Some(&mut gx[..])],
    );
    // Engine order: the add's contribution (g to x) first, then the mul's (3 g).
    assert_eq!(gx[0].to_bits(), ((held + g) + 3.0 * g).to_bits());
}
