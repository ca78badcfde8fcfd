//! bfloat16 matrix products (`kernels::bf16_gemm`) on each available path
//! against the crate's float32 product (`ops::mm`) on the same shapes, and
//! `ops::mm` on bfloat16 tensors (what a user calls: the current path, a
//! bfloat16 result), on one and two threads. Throughput is in
//! floating-point operations (`2 m n k` per product).
//! `cargo bench --bench bf16_gemm`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrograd::kernels::bf16_gemm::{f32_to_bf16, gemm_bf16_with, MatMut, MatRef, Out, Path};
use ferrograd::kernels::set_num_threads;
use ferrograd::ops;
use ferrograd::tensor::{bf16, Shape, Tensor};

fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 * 0.618 + seed) % 1.0) - 0.5)
        .collect()
}

/// One product `m x k @ k x n`; `ta`/`tb`: the operand is stored transposed
/// (as `g.t()` and `w.t()` are in a linear layer's products).
struct Case {
    name: &'static str,
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "square_1024",
        m: 1024,
        k: 1024,
        n: 1024,
        ta: false,
        tb: false,
    },
    Case {
        name: "1024x128@128x512",
        m: 1024,
        k: 128,
        n: 512,
        ta: false,
        tb: false,
    },
    Case {
        name: "128x512@512x128",
        m: 128,
        k: 512,
        n: 128,
        ta: false,
        tb: false,
    },
    // A linear layer 128 -> 512 at batch 1024: forward, input and weight gradients.
    Case {
        name: "x@w.t_1024x128x512",
        m: 1024,
        k: 128,
        n: 512,
        ta: false,
        tb: true,
    },
    Case {
        name: "gy@w_1024x512x128",
        m: 1024,
        k: 512,
        n: 128,
        ta: false,
        tb: false,
    },
    Case {
        name: "gy.t@x_512x1024x128",
        m: 512,
        k: 1024,
        n: 128,
        ta: true,
        tb: false,
    },
];

/// A `rows x cols` operand's storage and strides (`t`: column-major).
fn strides(rows: usize, cols: usize, t: bool) -> (usize, usize) {
    if t {
        (1, rows)
    } else {
        (cols, 1)
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("bf16_gemm");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let paths: Vec<Path> = Path::ALL.into_iter().filter(|p| p.available()).collect();
    for threads in [1usize, 2] {
        set_num_threads(threads).expect("threads");
        for case in CASES {
            let (m, k, n) = (case.m, case.k, case.n);
            g.throughput(Throughput::Elements((2 * m * n * k) as u64));
            let af = values(m * k, 0.1);
            let bf = values(k * n, 0.2);
            let a16: Vec<u16> = af.iter().map(|&x| f32_to_bf16(x)).collect();
            let b16: Vec<u16> = bf.iter().map(|&x| f32_to_bf16(x)).collect();
            let (ars, acs) = strides(m, k, case.ta);
            let (brs, bcs) = strides(k, n, case.tb);
            let mut out = vec![0f32; m * n];
            for &path in &paths {
                let id = BenchmarkId::new(format!("{path:?}/{threads}t"), case.name);
                g.bench_function(id, |bch| {
                    bch.iter(|| {
                        let a = MatRef::new(&a16, m, k, ars, acs);
                        let b = MatRef::new(&b16, k, n, brs, bcs);
                        let c = Out::F32(MatMut::row_major(&mut out, m, n));
                        gemm_bf16_with(path, true, a, b, c, 1.0, 0.0)
                    })
                });
            }
            // The float32 product on the same layout: a transposed operand
            // is a transposed view, as in `x @ w.t()`.
            let view = |v: &[f32], rows: usize, cols: usize, t: bool| {
                if t {
                    let s = Tensor::from_vec(v.to_vec(), Shape::from_slice(&[cols, rows]));
                    ops::transpose(&s, 0, 1).expect("2-D")
                } else {
                    Tensor::from_vec(v.to_vec(), Shape::from_slice(&[rows, cols]))
                }
            };
            let (at, bt) = (view(&af, m, k, case.ta), view(&bf, k, n, case.tb));
            let id = BenchmarkId::new(format!("f32_mm/{threads}t"), case.name);
            g.bench_function(id, |bch| bch.iter(|| ops::mm(&at, &bt).ok()));
            // What a bfloat16 `mm` costs a user: the current path, a bfloat16
            // result, the operands laid out as above.
            let view16 = |v: &[u16], rows: usize, cols: usize, t: bool| {
                let v: Vec<bf16> = v.iter().map(|&h| bf16::from_bits(h)).collect();
                if t {
                    let s = Tensor::from_vec(v, Shape::from_slice(&[cols, rows]));
                    ops::transpose(&s, 0, 1).expect("2-D")
                } else {
                    Tensor::from_vec(v, Shape::from_slice(&[rows, cols]))
                }
            };
            let (ah, bh) = (view16(&a16, m, k, case.ta), view16(&b16, k, n, case.tb));
            let id = BenchmarkId::new(format!("bf16_mm/{threads}t"), case.name);
            g.bench_function(id, |bch| bch.iter(|| ops::mm(&ah, &bh).ok()));
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
