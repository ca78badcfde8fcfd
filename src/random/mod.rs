//! Random generators reproducing PyTorch's CPU generator bit for bit.
//!
//! A generator is PyTorch's `at::mt19937` (a Mersenne Twister seeded by the
//! low 32 bits of a 64-bit seed) plus the cached second Box-Muller sample of
//! `at::normal_distribution`. The samplers below follow ATen's CPU kernels
//! (`DistributionsHelper.h`, `TransformationHelper.h`, `cpu/DistributionTemplates.h`,
//! `randperm_cpu`, the multinomial kernel) draw for draw, so a seeded program
//! gets PyTorch's numbers. Where ATen on x86 takes a SIMD or MKL path the
//! function says which one is followed.
//!
//! `generator` holds the Mersenne Twister and its state; `continuous` the
//! uniform, normal and other real-valued distributions; `discrete` integer
//! draws, Bernoulli, permutations, multinomial and geometric; `rejection`
//! the gamma, Poisson and binomial samplers (ATen's rejection methods).

mod continuous;
mod discrete;
mod generator;
mod rejection;

pub use continuous::{cauchy, exponential, log_normal, normal, uniform};
pub use discrete::{
    bernoulli_scalar, bernoulli_tensor, geometric, multinomial_with_replacement, randint,
    random_full, randperm,
};
pub use generator::{
    default_generator, manual_seed, with_gen, CpuGenerator, GenRef, DEFAULT_SEED, STATE_BYTES,
};
pub use rejection::{
    binomial, dirichlet_gammas, poisson, sample_binomial, sample_gamma, sample_poisson,
    standard_gamma,
};

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

fn float_only(dtype: DType, kernel: &str) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "\"{kernel}\" not implemented for '{}'",
            dtype.scalar_name()
        )))
    }
}

fn cast(t: Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        t
    } else {
        crate::ops::cast_data(&t, dtype)
    }
}

/// The logical (row-major) positions of `t`'s elements in the order
/// PyTorch's TensorIterator visits them (memory order); `None` when the two
/// orders agree.
fn memory_order(t: &Tensor) -> Option<Vec<usize>> {
    if t.is_contiguous() || t.numel() < 2 {
        return None;
    }
    let (shape, strides) = {
        let v = t.view();
        (v.shape.clone(), v.strides.clone())
    };
    let n = t.numel();
    let mut offsets: Vec<usize> = crate::error::filled_vec(n, 0);
    let mut idx = vec![0usize; shape.len()];
    for off in offsets.iter_mut() {
        *off = idx.iter().zip(strides.iter()).map(|(i, s)| i * s).sum();
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| offsets[i]);
    Some(order)
}

/// Samples drawn in `t`'s memory order (`drawn`, one per element in draw
/// order) put at their logical positions, so a transposed or sliced
/// destination gets PyTorch's numbers in the same memory cells.
pub fn in_memory_order(t: &Tensor, drawn: Tensor) -> Tensor {
    let Some(order) = memory_order(t) else {
        return drawn;
    };
    let shape = t.shape();
    crate::dispatch!(drawn.dtype(), T => {
        let src = drawn.to_vec::<T>();
        let mut out = src.clone();
        for (k, &pos) in order.iter().enumerate() {
            out[pos] = src[k];
        }
        Tensor::from_vec(out, shape)
    })
}

/// `p` (already of `t`'s shape) in `t`'s memory order, flattened: the
/// probabilities in the order the draws for `t` use them.
pub fn to_memory_order(t: &Tensor, p: &Tensor) -> Tensor {
    let flat = p.contiguous_data();
    let Some(order) = memory_order(t) else {
        return flat;
    };
    let shape = p.shape();
    crate::dispatch!(flat.dtype(), T => {
        let src = flat.to_vec::<T>();
        Tensor::from_vec(order.iter().map(|&i| src[i]).collect::<Vec<T>>(), shape)
    })
}
