//! Convolution and pooling benchmarks (`cargo bench --bench conv`): the
//! 32x32x32x32 -> 64, 3x3 pad 1 layer of `benches/compare.py` through the ops
//! layer (forward) and its two backward kernels, LeNet's second convolution
//! and its pooling.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ferrograd::kernels::conv::{conv_backward_input, conv_backward_weight, Geom};
use ferrograd::ops;
use ferrograd::tensor::{Shape, Tensor};

fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 * 0.618 + seed) % 1.0) - 0.5)
        .collect()
}

fn conv2d(c: &mut Criterion) {
    let mut g = c.benchmark_group("conv2d_32x32x32x32_64_3x3");
    let geom = Geom {
        n: 32,
        c: 32,
        h: 32,
        w: 32,
        o: 64,
        kh: 3,
        kw: 3,
        oh: 32,
        ow: 32,
        stride: [1, 1],
        padding: [1, 1],
        dilation: [1, 1],
        groups: 1,
    };
    let (xv, wv, gv) = (
        values(32 * 32 * 32 * 32, 0.1),
        values(64 * 32 * 9, 0.2),
        values(32 * 64 * 32 * 32, 0.3),
    );
    let x = Tensor::from_vec(xv.clone(), Shape::from_slice(&[32, 32, 32, 32]));
    let w = Tensor::from_vec(wv.clone(), Shape::from_slice(&[64, 32, 3, 3]));
    // Multiply-adds of one product: N * O * (C*9) * (OH*OW).
    g.throughput(Throughput::Elements(32 * 64 * 288 * 1024));
    g.sample_size(20);
    g.bench_function("forward", |b| {
        b.iter(|| ops::convolution(&x, &w, None, &[1], &[1], &[1], false, &[0], 1).ok())
    });
    g.bench_function("backward_input", |b| {
        b.iter(|| conv_backward_input(&geom, &gv, &wv, None))
    });
    g.bench_function("backward_weight", |b| {
        b.iter(|| conv_backward_weight(&geom, &xv, &gv))
    });
    g.finish();
}

/// LeNet's second convolution (6 -> 16, 5x5 on 14x14, batch 64), which the
/// direct kernels run: forward and weight gradient.
fn lenet_conv2(c: &mut Criterion) {
    let mut g = c.benchmark_group("conv2d_lenet_64x6x14x14_16_5x5");
    let geom = Geom {
        n: 64,
        c: 6,
        h: 14,
        w: 14,
        o: 16,
        kh: 5,
        kw: 5,
        oh: 10,
        ow: 10,
        stride: [1, 1],
        padding: [0, 0],
        dilation: [1, 1],
        groups: 1,
    };
    let (xv, wv, gv) = (
        values(64 * 6 * 14 * 14, 0.1),
        values(16 * 6 * 25, 0.2),
        values(64 * 16 * 10 * 10, 0.3),
    );
    let x = Tensor::from_vec(xv.clone(), Shape::from_slice(&[64, 6, 14, 14]));
    let w = Tensor::from_vec(wv, Shape::from_slice(&[16, 6, 5, 5]));
    g.throughput(Throughput::Elements(64 * 16 * 150 * 100));
    g.bench_function("forward", |b| {
        b.iter(|| ops::convolution(&x, &w, None, &[1], &[0], &[1], false, &[0], 1).ok())
    });
    g.bench_function("backward_weight", |b| {
        b.iter(|| conv_backward_weight(&geom, &xv, &gv))
    });
    g.finish();
}

fn pool(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool");
    let x = Tensor::from_vec(
        values(64 * 6 * 28 * 28, 0.4),
        Shape::from_slice(&[64, 6, 28, 28]),
    );
    g.throughput(Throughput::Elements(64 * 6 * 28 * 28));
    g.bench_function("max_pool2d_2x2_64x6x28x28", |b| {
        b.iter(|| ops::max_pool2d_with_indices(&x, &[2], &[], &[0], &[1], false).ok())
    });
    g.bench_function("avg_pool2d_2x2_64x6x28x28", |b| {
        b.iter(|| ops::avg_pool2d(&x, &[2], &[], &[0], false, true, None).ok())
    });
    g.finish();
}

criterion_group!(benches, conv2d, lenet_conv2, pool);
criterion_main!(benches);
