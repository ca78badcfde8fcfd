//! The fused elementwise interpreter (`kernels::fused`) on benches/bench_compile.py's
//! elementwise workload: 200 ops cycling `y * 0.5, y + x, sin(y), exp(y), y * x`
//! from `y = x`, then the gradient of `sum(y)` with respect to `x`, forward and
//! reverse in one `forward_vjp` call (and as a compiled replay runs it,
//! `forward_keep` then `reverse_kept`). Criterion reports the time per
//! call; divide by 200 for the time per op.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ferrograd::kernels::fused::{EwOp, Instr, Program, Src};

const OPS: usize = 200;

/// The workload's program; `sin` can be swapped for `neg` to show what the
/// C library's `sinf` (and `cosf` in the reverse pass) costs.
fn program(sin: EwOp) -> Program {
    let x = Src::Input(0);
    let mut instrs = Vec::with_capacity(OPS);
    for i in 0..OPS {
        let y = if i == 0 { x } else { Src::Reg(i as u16 - 1) };
        let (op, b) = match i % 5 {
            0 => (EwOp::Mul, Some(Src::Scalar(0))),
            1 => (EwOp::Add, Some(x)),
            2 => (sin, None),
            3 => (EwOp::Exp, None),
            _ => (EwOp::Mul, Some(x)),
        };
        instrs.push(Instr { op, a: y, b });
    }
    Program {
        n_inputs: 1,
        n_scalars: 1,
        instrs,
        outputs: vec![OPS as u16 - 1],
    }
}

fn fused(c: &mut Criterion) {
    let mut g = c.benchmark_group("fused_200_ops");
    g.sample_size(30)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    for (name, sin) in [("fwd_bwd", EwOp::Sin), ("fwd_bwd_sin_as_neg", EwOp::Neg)] {
        let prog = program(sin);
        let plan = prog.plan(&[true], &[true]).expect("valid program");
        for n in [16usize, 4096] {
            let x: Vec<f32> = (0..n).map(|i| ((i as f32 * 0.618) % 2.0) - 1.0).collect();
            let seed = vec![1.0f32; n];
            let mut out = vec![0.0f32; n];
            g.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| {
                    let mut grads = [None];
                    plan.forward_vjp(
                        &[&x],
                        &[0.5f64],
                        &[Some(&seed)],
                        &mut [&mut out],
                        &mut grads,
                    );
                    grads
                })
            });
            if sin == EwOp::Sin {
                g.bench_with_input(BenchmarkId::new("fwd", n), &n, |b, _| {
                    b.iter(|| plan.forward(&[&x], &[0.5f64], &mut [&mut out]))
                });
                // What a compiled replay runs: the forward keeping its
                // registers, then the reverse pass from them.
                let mut kept = vec![0.0f32; plan.kept_len(n)];
                let mut grad = vec![0.0f32; n];
                g.bench_with_input(BenchmarkId::new("keep_kept", n), &n, |b, _| {
                    b.iter(|| {
                        plan.forward_keep(&[&x], &[0.5f64], &mut [&mut out], &mut kept);
                        plan.reverse_kept(
                            &[&x],
                            &[0.5f64],
                            &mut kept,
                            &[Some(&seed)],
                            &mut [Some(&mut grad)],
                        );
                    })
                });
                g.bench_with_input(BenchmarkId::new("fwd_bwd_unplanned", n), &n, |b, _| {
                    b.iter(|| {
                        let mut grads = [None];
                        prog.forward_vjp(
                            &[&x],
                            &[0.5f64],
                            &[Some(&seed)],
                            &[true],
                            &mut [&mut out],
                            &mut grads,
                        );
                        grads
                    })
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, fused);
criterion_main!(benches);
