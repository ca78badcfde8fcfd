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

/// `t`'s dimensions outermost first in memory (by decreasing stride), the
/// order PyTorch's TensorIterator visits elements in; `None` when that is
/// the logical order. (Sorting every element's offset instead took 80 ms
/// for a transposed 1024 x 1024 `uniform_`.)
fn memory_dims(t: &Tensor) -> Option<Vec<usize>> {
    if t.is_contiguous() || t.numel() < 2 {
        return None;
    }
    let v = t.view();
    let mut dims: Vec<usize> = (0..v.shape.len()).filter(|&d| v.shape[d] > 1).collect();
    dims.sort_by_key(|&d| std::cmp::Reverse(v.strides[d]));
    if dims.windows(2).all(|w| w[0] < w[1]) {
        return None;
    }
    // Size-1 dimensions go first: they change no order.
    let mut all: Vec<usize> = (0..v.shape.len()).filter(|&d| v.shape[d] == 1).collect();
    all.extend(dims);
    Some(all)
}

/// `x` (logical shape `shape`) permuted by `dims`, materialised.
fn permuted(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let _g = crate::autograd::GradModeGuard::new(false);
    let d: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    crate::ops::contiguous(&crate::ops::permute(x, &d)?)
}

/// Samples drawn in `t`'s memory order (`drawn`, one per element in draw
/// order) put at their logical positions, so a transposed or sliced
/// destination gets PyTorch's numbers in the same memory cells.
pub fn in_memory_order(t: &Tensor, drawn: Tensor) -> Result<Tensor> {
    let Some(dims) = memory_dims(t) else {
        return Ok(drawn);
    };
    let shape = t.shape();
    let in_memory: Vec<usize> = dims.iter().map(|&d| shape[d]).collect();
    let mut back = vec![0usize; dims.len()];
    for (k, &d) in dims.iter().enumerate() {
        back[d] = k;
    }
    let _g = crate::autograd::GradModeGuard::new(false);
    permuted(&crate::ops::reshape(&drawn, &in_memory)?, &back)
}

/// `p` (already of `t`'s shape) in `t`'s memory order, flattened: the
/// probabilities in the order the draws for `t` use them.
pub fn to_memory_order(t: &Tensor, p: &Tensor) -> Result<Tensor> {
    let Some(dims) = memory_dims(t) else {
        return Ok(p.contiguous_data());
    };
    let _g = crate::autograd::GradModeGuard::new(false);
    crate::ops::reshape(&permuted(p, &dims)?, &p.shape())
}
