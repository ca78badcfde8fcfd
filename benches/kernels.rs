//! Kernel benchmarks (`cargo bench`): elementwise, broadcast, reductions,
//! softmax, matrix products and normalisation, called through the ops layer
//! (or, for the norm backward rules, the kernels) without Python.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrograd::ops;
use ferrograd::tensor::{DType, Shape, Tensor};

fn filled(shape: &[usize], seed: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| ((i as f32 * 0.618 + seed) % 1.0) - 0.5)
        .collect();
    Tensor::from_vec(v, Shape::from_slice(shape))
}

fn elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise");
    for &n in &[1usize << 10, 1 << 16, 1 << 22] {
        let a = filled(&[n], 0.1);
        let b = filled(&[n], 0.2);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("mul", n), &n, |bch, _| {
            bch.iter(|| ops::mul(&a, &b).ok())
        });
        g.bench_with_input(BenchmarkId::new("tanh", n), &n, |bch, _| {
            bch.iter(|| ops::tanh(&a).ok())
        });
        g.bench_with_input(BenchmarkId::new("exp", n), &n, |bch, _| {
            bch.iter(|| ops::exp(&a).ok())
        });
    }
    g.finish();
}

fn broadcast(c: &mut Criterion) {
    let mut g = c.benchmark_group("broadcast");
    let a = filled(&[1024, 1024], 0.3);
    let row = filled(&[1024], 0.4);
    let col = filled(&[1024, 1], 0.5);
    g.throughput(Throughput::Elements(1 << 20));
    g.bench_function("add_row_1024x1024", |b| b.iter(|| ops::add(&a, &row).ok()));
    g.bench_function("add_col_1024x1024", |b| b.iter(|| ops::add(&a, &col).ok()));
    let at = ops::transpose(&a, 0, 1).expect("2-D");
    g.bench_function("add_transposed_1024x1024", |b| {
        b.iter(|| ops::add(&a, &at).ok())
    });
    g.finish();
}

fn reduce(c: &mut Criterion) {
    let mut g = c.benchmark_group("reduce");
    let a = filled(&[1024, 1024], 0.6);
    g.throughput(Throughput::Elements(1 << 20));
    g.bench_function("sum_all_1M", |b| b.iter(|| ops::sum(&a, None, false).ok()));
    g.bench_function("sum_dim0_1024x1024", |b| {
        b.iter(|| ops::sum(&a, Some(&[0]), false).ok())
    });
    g.bench_function("sum_dim1_1024x1024", |b| {
        b.iter(|| ops::sum(&a, Some(&[1]), false).ok())
    });
    g.bench_function("amax_dim1_1024x1024", |b| {
        b.iter(|| ops::amax(&a, Some(&[1]), false).ok())
    });
    g.bench_function("softmax_dim1_1024x1024", |b| {
        b.iter(|| ops::softmax(&a, 1, None).ok())
    });
    g.bench_function("softmax_dim0_1024x1024", |b| {
        b.iter(|| ops::softmax(&a, 0, None).ok())
    });
    g.bench_function("log_softmax_dim1_1024x1024", |b| {
        b.iter(|| ops::log_softmax(&a, 1, None).ok())
    });
    g.finish();
}

fn matmul(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul");
    g.sample_size(20);
    for &n in &[64usize, 256, 1024] {
        let a = filled(&[n, n], 0.7);
        let b = filled(&[n, n], 0.8);
        g.throughput(Throughput::Elements((2 * n * n * n) as u64));
        g.bench_with_input(BenchmarkId::new("mm", n), &n, |bch, _| {
            bch.iter(|| ops::mm(&a, &b).ok())
        });
        let bt = ops::transpose(&b, 0, 1).expect("2-D");
        g.bench_with_input(BenchmarkId::new("mm_transposed_rhs", n), &n, |bch, _| {
            bch.iter(|| ops::mm(&a, &bt).ok())
        });
    }
    // A recurrent cell's products (batch 8, 64 -> 4 x 64 gates): the
    // forward `x @ w.t()`, the input's gradient and the weight's.
    let x = filled(&[8, 64], 0.3);
    let w = filled(&[256, 64], 0.4);
    let dg = filled(&[8, 256], 0.5);
    let wt = ops::transpose(&w, 0, 1).expect("2-D");
    let dgt = ops::transpose(&dg, 0, 1).expect("2-D");
    g.throughput(Throughput::Elements(2 * 8 * 64 * 256));
    g.bench_function("cell_x_wt_8x64x256", |bch| {
        bch.iter(|| ops::mm(&x, &wt).ok())
    });
    g.bench_function("cell_dg_w_8x256x64", |bch| {
        bch.iter(|| ops::mm(&dg, &w).ok())
    });
    g.bench_function("cell_dgt_x_256x8x64", |bch| {
        bch.iter(|| ops::mm(&dgt, &x).ok())
    });
    let a = filled(&[32, 128, 128], 0.1);
    let b = filled(&[32, 128, 128], 0.2);
    g.throughput(Throughput::Elements(2 * 32 * 128 * 128 * 128));
    g.bench_function("bmm_32x128", |bch| bch.iter(|| ops::matmul(&a, &b).ok()));
    g.finish();
}

fn norm(c: &mut Criterion) {
    use ferrograd::kernels::norm as kn;
    let mut g = c.benchmark_group("norm");
    g.sample_size(20);
    // BatchNorm2d(64) on 64x64x32x32 and LayerNorm(512) on 64x128x512.
    let bn = [64usize, 64, 32, 32];
    let x = filled(&bn, 0.3);
    let gy = filled(&bn, 0.7);
    let n: usize = bn.iter().product();
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("batch_norm_fwd", |b| {
        b.iter(|| ops::batch_norm(&x, None, None, None, None, true, 0.1, 1e-5).ok())
    });
    let (xs, gs) = (x.to_vec::<f32>(), gy.to_vec::<f32>());
    let s = 32 * 32;
    let (bm, _) = kn::block_moments(&xs, s);
    let k: Vec<[f32; 4]> = bm.iter().map(|&m| [1.0, -0.01, m as f32, 0.0]).collect();
    g.bench_function("batch_norm_bwd", |b| {
        b.iter(|| {
            let sums = kn::block_grad_sums(&gs, &xs, s, &bm);
            (sums, kn::block_linear(&gs, &xs, s, &k))
        })
    });
    let ln = [64usize, 128, 512];
    let x = filled(&ln, 0.3);
    let xs = x.to_vec::<f32>();
    let gs = filled(&ln, 0.7).to_vec::<f32>();
    g.bench_function("layer_norm_fwd", |b| {
        b.iter(|| ops::layer_norm(&x, &[512], None, None, 1e-5).ok())
    });
    let (_, mean, rstd) = kn::layer_norm(&xs, 512, None, None, 1e-5);
    g.bench_function("layer_norm_bwd", |b| {
        b.iter(|| kn::layer_norm_backward(&gs, &xs, 512, &mean, &rstd, None))
    });
    g.finish();
}

/// float32 <-> float16/bfloat16 of 16M elements against a parallel copy of
/// the float32 tensor (the copy-bandwidth yardstick: the issue asks the
/// conversions for 70% of it, counting the bytes each moves).
fn convert(c: &mut Criterion) {
    let mut g = c.benchmark_group("convert");
    let n = 1usize << 24;
    let x = filled(&[n], 0.7);
    g.sample_size(20);
    g.throughput(Throughput::Bytes((n * 8) as u64));
    g.bench_function("copy f32", |b| b.iter(|| ops::clone_data(&x)));
    g.throughput(Throughput::Bytes((n * 6) as u64));
    for (name, dt) in [("f32->bf16", DType::BF16), ("f32->f16", DType::F16)] {
        g.bench_function(name, |b| b.iter(|| ops::to_dtype(&x, dt).ok()));
    }
    for (name, dt) in [("bf16->f32", DType::BF16), ("f16->f32", DType::F16)] {
        let h = ops::to_dtype(&x, dt).expect("conversion");
        g.bench_function(name, |b| b.iter(|| ops::to_dtype(&h, DType::F32).ok()));
    }
    g.finish();
}

/// What the profiler costs while no profile is open: a chain of 200 ops on
/// 16 floats (the small-tensor workload), run directly and through the
/// wrapper every recording binding calls (`profiler::timed`). The two times
/// should agree within noise: the closed wrapper is one relaxed load.
fn profiler_closed(c: &mut Criterion) {
    use ferrograd::profiler::{timed, Kind};
    let mut g = c.benchmark_group("profiler_closed");
    let x = filled(&[16], 0.8);
    let chain = |wrapped: bool| {
        let mut y = x.clone();
        for _ in 0..200 {
            let step = || ops::mul(&y, &x).expect("mul");
            y = if wrapped {
                timed(|| "mul".into(), Kind::Op, Vec::new, step)
            } else {
                step()
            };
        }
        y
    };
    g.bench_function("200 ops, direct", |b| b.iter(|| chain(false)));
    g.bench_function("200 ops, through profiler::timed", |b| {
        b.iter(|| chain(true))
    });
    g.finish();
}

criterion_group!(
    benches,
    elementwise,
    broadcast,
    reduce,
    matmul,
    norm,
    convert,
    profiler_closed
);
criterion_main!(benches);
