//! Fused programs whose gradients reach float32's subnormals, where the
//! reverse pass forms its products in float64 (`land_mul_wide`), against
//! the engine bit for bit.

use super::tests::{check_against_eager, check_keep_matches_one_pass, data, Rng, ALL_OPS, SCALARS};
use super::*;

/// Seeds of subnormal and near-subnormal size send the reverse pass's
/// products down the wide path; every op's gradient must still be the
/// engine's, bit for bit, in one pass and from kept registers.
#[test]
fn tiny_gradients_match_eager_bit_for_bit() {
    let mut rng = Rng(0x5EED);
    let n = 37;
    let mut inputs = data(&mut rng, 3, n);
    inputs[0][3] = 0.0;
    inputs[1][5] = -0.0;
    let tiny: Vec<f64> = (0..n)
        .map(|i| match i % 6 {
            0 => 0.0,
            1 => 1e-40 * rng.uniform(-3.0, 3.0),
            2 => 1e-37 * rng.uniform(-1.0, 1.0),
            3 => 2e-20 * rng.uniform(-1.0, 1.0),
            4 => rng.uniform(-1.0, 1.0),
            _ => 1e-45,
        })
        .collect();
    for op in ALL_OPS {
        let b = match op.arity() {
            1 => None,
            _ if op == EwOp::LeakyRelu => Some(Src::Scalar(4)),
            _ => Some(Src::Input(1)),
        };
        let mut instrs = vec![Instr {
            op,
            a: Src::Input(0),
            b,
        }];
        if op.arity() == 2 && op != EwOp::LeakyRelu {
            instrs.push(Instr {
                op,
                a: Src::Reg(0),
                b: Some(Src::Scalar(4)),
            });
        }
        let prog = Program {
            n_inputs: 3,
            n_scalars: SCALARS.len(),
            outputs: vec![instrs.len() as u16 - 1],
            instrs,
        };
        let seeds = vec![Some(tiny.clone())];
        check_against_eager::<f32>(&prog, &inputs, &SCALARS, &seeds, &[true; 3]);
        check_keep_matches_one_pass::<f32>(&prog, &inputs, &seeds, &[true; 3], &[false; 3]);
    }
}

/// A long chain whose gradient decays through the subnormals to zero (the
/// compiled benchmark's shape) equals the engine.
#[test]
fn a_gradient_decaying_through_subnormals_matches_eager() {
    use EwOp::*;
    let n = 40;
    let xs: Vec<f64> = (0..n).map(|i| (i as f64 - 20.0) * 0.011).collect();
    let x = Src::Input(0);
    let cycle = [
        (Mul, Some(Src::Scalar(0))),
        (Add, Some(x)),
        (Sin, None),
        (Exp, None),
        (Mul, Some(x)),
        (Cos, None),
        (Tanh, None),
    ];
    let instrs: Vec<Instr> = (0..210)
        .map(|i| {
            let (op, b) = cycle[i % cycle.len()];
            let a = if i == 0 { x } else { Src::Reg(i as u16 - 1) };
            Instr { op, a, b }
        })
        .collect();
    let prog = Program {
        n_inputs: 1,
        n_scalars: SCALARS.len(),
        outputs: vec![instrs.len() as u16 - 1],
        instrs,
    };
    let seeds = vec![Some(vec![1.0; n])];
    check_against_eager::<f32>(&prog, std::slice::from_ref(&xs), &SCALARS, &seeds, &[true]);
    check_keep_matches_one_pass::<f32>(&prog, &[xs], &seeds, &[true], &[false]);
}
