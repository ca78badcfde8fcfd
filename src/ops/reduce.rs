//! Sums, means and norms over all elements or chosen dimensions.

use smallvec::{smallvec, SmallVec};

use super::{cast_data, div, expand, mul, mul_f64, reshape};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels::reduce::{sum_all, sum_dims};
use crate::saved;
use crate::tensor::{numel, wrap_dim, DType, Shape, Tensor};

/// Which dimensions a `dim=` argument names (`None`: all of them).
pub fn reduce_mask(ndim: usize, dims: Option<&[i64]>) -> Result<SmallVec<[bool; 4]>> {
    let mut mask: SmallVec<[bool; 4]> = SmallVec::from_elem(dims.is_none(), ndim);
    if let Some(dims) = dims {
        for &d in dims {
            let d = wrap_dim(d, ndim)?;
            if ndim == 0 {
                continue;
            }
            if mask[d] {
                return Err(Error::runtime(format!(
                    "dim {d} appears multiple times in the list of dims"
                )));
            }
            mask[d] = true;
        }
    }
    Ok(mask)
}

fn reduced_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Shape {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&n, &m)| match (m, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// The raw (unrecorded) sum of `a` over `mask`, in `a`'s dtype, keepdim shape.
fn sum_kernel(a: &Tensor, mask: &[bool]) -> Tensor {
    let v = a.view();
    let keep = reduced_shape(&v.shape, mask, true);
    if mask.iter().all(|&m| m) {
        return crate::dispatch!(v.dtype(), T => {
            let s: T = sum_all::<T>(&v);
            Tensor::from_vec(vec![s], keep)
        });
    }
    crate::dispatch!(v.dtype(), T => Tensor::from_vec(sum_dims::<T>(&v, mask), keep))
}

/// `sum(a, dim, keepdim)`; bool and integer sums are int64, as in PyTorch.
pub fn sum(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let shape = a.shape();
    let mask = reduce_mask(shape.len(), dims)?;
    let src = if a.dtype() == DType::Bool {
        cast_data(a, DType::I64)
    } else {
        a.clone()
    };
    let kept = sum_kernel(&src, &mask);
    let out = if keepdim {
        kept
    } else {
        kept.reshape_data(reduced_shape(&shape, &mask, false))
    };
    if needs_record(&[a]) {
        let name = if dims.is_none() {
            "SumBackward0"
        } else {
            "SumBackward1"
        };
        let keep_shape = reduced_shape(&shape, &mask, true);
        record(name, &[a], &out, saved![], move |c| {
            let g = reshape(c.grad()?, &keep_shape)?;
            Ok(smallvec![Some(expand(&g, &shape)?)])
        });
    }
    Ok(out)
}

/// `mean(a, dim, keepdim)`; defined for floating dtypes only, as in PyTorch.
pub fn mean(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    if !a.dtype().is_float() {
        return Err(Error::runtime(format!(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            a.dtype().scalar_name()
        )));
    }
    let shape = a.shape();
    let mask = reduce_mask(shape.len(), dims)?;
    let count: usize = shape
        .iter()
        .zip(&mask)
        .filter(|(_, &m)| m)
        .map(|(&n, _)| n)
        .product();
    let s = {
        let _g = crate::autograd::GradModeGuard::new(false);
        sum(a, dims, keepdim)?
    };
    let out = mul_f64(&s, 1.0 / count as f64)?;
    let out = if count == 0 {
        mul_f64(&s, f64::NAN)?
    } else {
        out
    };
    if needs_record(&[a]) {
        let name = if dims.is_none() {
            "MeanBackward0"
        } else {
            "MeanBackward1"
        };
        let keep_shape = reduced_shape(&shape, &mask, true);
        record(name, &[a], &out, saved![], move |c| {
            let g = reshape(c.grad()?, &keep_shape)?;
            let g = mul_f64(&g, 1.0 / count.max(1) as f64)?;
            Ok(smallvec![Some(expand(&g, &shape)?)])
        });
    }
    Ok(out)
}

/// Sums `g` down to `shape` (the inverse of broadcasting `shape` up to g's).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let gs = g.shape();
    if gs.as_slice() == shape {
        return Ok(g.clone());
    }
    if shape.len() > gs.len() {
        return Err(Error::runtime(
            "sum_to: target has more dimensions than the gradient",
        ));
    }
    let lead = gs.len() - shape.len();
    let mut dims: SmallVec<[i64; 4]> = (0..lead as i64).collect();
    for (i, &n) in shape.iter().enumerate() {
        let have = gs[lead + i];
        if n == 1 && have != 1 {
            dims.push((lead + i) as i64);
        } else if n != have {
            return Err(Error::runtime(format!(
                "sum_to: size {have} cannot be reduced to {n}"
            )));
        }
    }
    let s = if dims.is_empty() {
        g.clone()
    } else {
        sum(g, Some(&dims), true)?
    };
    reshape(&s, shape)
}

/// The 2-norm of all elements (`Tensor.norm()`); its gradient at 0 is 0.
pub fn norm(a: &Tensor) -> Result<Tensor> {
    if !a.dtype().is_float() {
        return Err(Error::runtime(format!(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
            a.dtype().scalar_name()
        )));
    }
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        super::sqrt(&sum(&mul(a, a)?, None, false)?)?
    };
    if needs_record(&[a]) {
        record(
            "LinalgVectorNormBackward0",
            &[a],
            &out,
            saved![a, Some(SavedTensor::output(&out, 0))],
            |c| {
                let (x, n) = (c.saved(0)?, c.saved(1)?);
                // g * x / n, with 0/0 taken as 0.
                let zero = super::compare::eq(n, &Tensor::scalar_of(0.0, n.dtype()))?;
                let safe = super::where_(&zero, &Tensor::scalar_of(1.0, n.dtype()), n)?;
                let scale = div(c.grad()?, &safe)?;
                let scale = super::where_(&zero, &Tensor::scalar_of(0.0, n.dtype()), &scale)?;
                Ok(smallvec![Some(mul(x, &scale)?)])
            },
        );
    }
    Ok(out)
}

/// Number of elements, as a helper for losses.
pub fn numel_of(t: &Tensor) -> usize {
    numel(&t.shape())
}
