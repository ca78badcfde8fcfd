//! Sums, means and norms over all elements or chosen dimensions.

use smallvec::{smallvec, SmallVec};

use super::{cast_data, div, expand, mul, mul_f64, reshape};
use crate::autograd::{needs_record, record, SavedTensor};
use crate::error::{Error, Result};
use crate::kernels::reduce::{sum_all, sum_dims};
use crate::saved;
use crate::tensor::{wrap_dim, DType, Shape, Tensor};

/// Which dimensions a `dim=` argument names (`None`: all of them).
pub(crate) fn reduce_mask(ndim: usize, dims: Option<&[i64]>) -> Result<SmallVec<[bool; 4]>> {
    // `dim=()` reduces everything, as in PyTorch.
    let dims = dims.filter(|d| !d.is_empty());
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
    let dt = a.dtype();
    if dt.is_low_precision() {
        // Accumulated in float32, rounded once.
        return super::back_to(sum_kernel(&cast_data(a, DType::F32), mask), dt);
    }
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
    let src = if a.dtype().is_float() {
        a.clone()
    } else {
        cast_data(a, DType::I64)
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
        let dims = dims.map(|d| d.to_vec());
        crate::autograd::record_jvp(
            name,
            &[a],
            &out,
            saved![],
            move |c| {
                let g = reshape(c.grad()?, &keep_shape)?;
                Ok(smallvec![Some(expand(&g, &shape)?)])
            },
            |t| {
                sum(
                    t[0].as_ref().expect("the input's tangent"),
                    dims.as_deref(),
                    keepdim,
                )
            },
        );
    }
    Ok(out)
}

/// `mean(a, dim, keepdim)`; defined for floating dtypes only, as in PyTorch.
pub(crate) fn mean(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
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
    let dt = a.dtype();
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        // The tangent is `mean`'s own (below), not the sum's.
        let _s = crate::autograd::forward::Suspend::new(true);
        // float16/bfloat16: summed and divided in float32, rounded once.
        let s = sum(&cast_data(a, dt.compute()), dims, keepdim)?;
        let out = if count == 0 {
            mul_f64(&s, f64::NAN)?
        } else {
            mul_f64(&s, 1.0 / count as f64)?
        };
        super::back_to(out, dt)
    };
    if needs_record(&[a]) {
        let name = if dims.is_none() {
            "MeanBackward0"
        } else {
            "MeanBackward1"
        };
        let keep_shape = reduced_shape(&shape, &mask, true);
        let dims = dims.map(|d| d.to_vec());
        crate::autograd::record_jvp(
            name,
            &[a],
            &out,
            saved![],
            move |c| {
                let g = reshape(c.grad()?, &keep_shape)?;
                let g = mul_f64(&g, 1.0 / count.max(1) as f64)?;
                Ok(smallvec![Some(expand(&g, &shape)?)])
            },
            |t| {
                mean(
                    t[0].as_ref().expect("the input's tangent"),
                    dims.as_deref(),
                    keepdim,
                )
            },
        );
    }
    Ok(out)
}

/// Sums `g` down to `shape` (the inverse of broadcasting `shape` up to g's).
pub(crate) fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
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

/// `reduced_shape` for other reduction families.
pub(crate) fn reduce_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Shape {
    reduced_shape(shape, mask, keepdim)
}

/// `a`'s values (unrecorded) with the reduced dimensions moved last, as a
/// contiguous `[rows, cols]` block: one row per output element.
pub(crate) fn rows_of(a: &Tensor, mask: &[bool]) -> Result<(Tensor, usize, usize)> {
    let _g = crate::autograd::GradModeGuard::new(false);
    let shape = a.shape();
    let perm: SmallVec<[i64; 4]> = (0..shape.len())
        .filter(|&d| !mask[d])
        .chain((0..shape.len()).filter(|&d| mask[d]))
        .map(|d| d as i64)
        .collect();
    let p = super::permute(&a.detach(), &perm)?;
    // Already in row order (reducing trailing dims of a contiguous tensor):
    // read it where it is.
    let c = if p.is_contiguous() {
        p
    } else {
        super::clone_data(&p)
    };
    let cols: usize = (0..shape.len())
        .filter(|&d| mask[d])
        .map(|d| shape[d])
        .product();
    let rows: usize = (0..shape.len())
        .filter(|&d| !mask[d])
        .map(|d| shape[d])
        .product();
    Ok((c, rows, cols))
}

/// `prod(a, dim, keepdim)`; bool and integer products are int64.
pub(crate) fn prod(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let shape = a.shape();
    let mask = reduce_mask(shape.len(), dims)?;
    // float16/bfloat16 multiply in float32 (rounded once); integers in int64.
    let src = if a.dtype().is_float() {
        cast_data(a, a.dtype().compute())
    } else {
        cast_data(a, DType::I64)
    };
    let out_shape = reduced_shape(&shape, &mask, keepdim);
    let out = if let Some((outer, n, inner)) = super::extrema::leading_one(&src, &mask) {
        // A leading dimension: rows streamed and multiplied column-wise, in
        // row order (as PyTorch's vectorised outer reduction), no transpose.
        let v = src.view();
        crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            Tensor::from_vec(crate::kernels::reduce::prod_mid(data, outer, n, inner), out_shape)
        })
    } else {
        let (rows_t, rows, cols) = rows_of(&src, &mask)?;
        let v = rows_t.view();
        crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            let r: Vec<T> = crate::kernels::index::map_rows(data, rows, cols, |row| {
                crate::kernels::reduce::prod_slice(row)
            });
            Tensor::from_vec(r, out_shape)
        })
    };
    let out = if a.dtype().is_low_precision() {
        super::back_to(out, a.dtype())
    } else {
        out
    };
    if needs_record(&[a]) {
        let keep_shape = reduced_shape(&shape, &mask, true);
        record(
            if dims.is_none() {
                "ProdBackward0"
            } else {
                "ProdBackward1"
            },
            &[a],
            &out,
            saved![a, Some(SavedTensor::output(&out, 0))],
            move |c| {
                let (x, y) = (c.saved(0)?, c.saved(1)?);
                let g = reshape(c.grad()?, &keep_shape)?;
                let zeros = super::sum(
                    &super::eq(x, &Tensor::scalar_of(0.0, x.dtype()))?,
                    None,
                    false,
                )?
                .item()?;
                if zeros == 0.0 {
                    // Away from zeros, d prod / d x_i = prod / x_i.
                    let y = reshape(y, &keep_shape)?;
                    return Ok(smallvec![Some(div(&mul(&g, &y)?, x)?)]);
                }
                Ok(smallvec![Some(mul(&g, &prod_of_others(x, &mask)?)?)])
            },
        );
    }
    Ok(out)
}

/// For each element, the product of the other elements of its reduction
/// group, exact where some are zero: the product of those before it times
/// the product of those after it (PyTorch's `prod_safe_zeros_backward`),
/// in memory proportional to the input.
fn prod_of_others(x: &Tensor, mask: &[bool]) -> Result<Tensor> {
    let shape = x.shape();
    let nd = shape.len();
    let kept: SmallVec<[usize; 4]> = (0..nd).filter(|&d| !mask[d]).collect();
    let red: SmallVec<[usize; 4]> = (0..nd).filter(|&d| mask[d]).collect();
    let perm: SmallVec<[i64; 4]> = kept.iter().chain(red.iter()).map(|&d| d as i64).collect();
    let r: usize = red.iter().map(|&d| shape[d]).product();
    let mut flat: Shape = kept.iter().map(|&d| shape[d]).collect();
    flat.push(r);
    let x2 = reshape(&super::permute(x, &perm)?, &flat)?;
    let before = exclusive_cumprod(&x2)?;
    let after = super::flip(&exclusive_cumprod(&super::flip(&x2, &[-1])?)?, &[-1])?;
    let others = mul(&before, &after)?;
    let permuted: Shape = perm.iter().map(|&d| shape[d as usize]).collect();
    let back = reshape(&others, &permuted)?;
    let mut inv: SmallVec<[i64; 4]> = SmallVec::from_elem(0, nd);
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as i64;
    }
    super::permute(&back, &inv)
}

/// The product of the elements before each one along the last dimension (1
/// for the first), in recorded multiplications: log2(n) doubling steps, so
/// it differentiates again.
fn exclusive_cumprod(x: &Tensor) -> Result<Tensor> {
    let shape = x.shape();
    let n = *shape.last().unwrap_or(&0);
    if n == 0 {
        return Ok(x.clone());
    }
    let ones_of = |k: usize| {
        let mut s = shape.clone();
        *s.last_mut().expect("at least one dimension") = k;
        Tensor::full(s, 1.0, x.dtype())
    };
    let shift = |t: &Tensor, k: usize| -> Result<Tensor> {
        let kept = super::narrow(t, -1, 0, (n - k) as i64)?;
        super::cat(&[ones_of(k), kept], -1)
    };
    let mut out = shift(x, 1)?;
    let mut k = 1;
    while k < n {
        out = mul(&out, &shift(&out, k)?)?;
        k *= 2;
    }
    Ok(out)
}

/// `var(a, dim, correction, keepdim)`: the mean squared deviation, divided
/// by `N - correction` (PyTorch clamps that at zero, giving inf or NaN).
pub(crate) fn var(
    a: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
) -> Result<Tensor> {
    var_std(a, dims, correction, keepdim, false)
}

/// `std`: the square root of `var`; its gradient is 0 where it is 0, as in PyTorch.
pub(crate) fn std(
    a: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
) -> Result<Tensor> {
    var_std(a, dims, correction, keepdim, true)
}

fn var_std(
    a: &Tensor,
    dims: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
    is_std: bool,
) -> Result<Tensor> {
    if !a.dtype().is_float() {
        return Err(Error::runtime(format!(
            "std and var only support floating point and complex dtypes, got {}",
            a.dtype().scalar_name()
        )));
    }
    let shape = a.shape();
    let mask = reduce_mask(shape.len(), dims)?;
    let n: usize = shape
        .iter()
        .zip(&mask)
        .filter(|(_, &m)| m)
        .map(|(&s, _)| s)
        .product();
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let m = mean(a, dims, true)?;
        let d = super::sub(a, &m)?;
        let ss = sum(&mul(&d, &d)?, dims, keepdim)?;
        let denom = (n as f64 - correction).max(0.0);
        let v = div(&ss, &Tensor::scalar_of(denom, a.dtype()))?;
        if is_std {
            super::sqrt(&v)?
        } else {
            v
        }
    };
    if needs_record(&[a]) {
        let keep_shape = reduced_shape(&shape, &mask, true);
        let dims: Option<SmallVec<[i64; 4]>> = dims.map(SmallVec::from_slice);
        // PyTorch's var_backward: 2 / (N - correction) * g * (x - mean(x)),
        // with N - correction unclamped.
        let scale = 2.0 / (n as f64 - correction);
        let (name, saved) = if is_std {
            (
                "StdBackward0",
                saved![a, Some(SavedTensor::output(&out, 0))],
            )
        } else {
            ("VarBackward0", saved![a])
        };
        record(name, &[a], &out, saved, move |c| {
            let x = c.saved(0)?;
            let mut g = reshape(c.grad()?, &keep_shape)?;
            if is_std {
                // d std = d var / (2 std), taken as 0 where std is 0.
                let r = reshape(c.saved(1)?, &keep_shape)?;
                let zero = super::compare::eq(&r, &Tensor::scalar_of(0.0, r.dtype()))?;
                let q = div(&g, &mul_f64(&r, 2.0)?)?;
                g = super::where_(&zero, &Tensor::scalar_of(0.0, q.dtype()), &q)?;
            }
            let d = super::sub(x, &mean(x, dims.as_deref(), true)?)?;
            Ok(smallvec![Some(mul(&d, &mul_f64(&g, scale)?)?)])
        });
    }
    Ok(out)
}

/// `linalg.vector_norm(a, ord, dim, keepdim)` for ord 2, 1, inf, -inf, 0 and
/// any other positive or negative p, recorded as one node whose gradient is 0
/// where the norm is 0 (PyTorch's subgradient).
pub(crate) fn vector_norm(
    a: &Tensor,
    ord: f64,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    if !a.dtype().is_float() {
        return Err(Error::runtime(format!(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
            a.dtype().scalar_name()
        )));
    }
    let shape = a.shape();
    let mask = reduce_mask(shape.len(), dims)?;
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        if ord == 2.0 {
            norm2(a, &mask, dims, keepdim)?
        } else {
            let abs = super::abs(a)?;
            norm_other(a, &abs, ord, dims, keepdim)?
        }
    };
    record_norm(a, out, ord, &shape, &mask, dims)
}

/// The 2-norm: when the reduced dimensions are the trailing ones of a
/// contiguous tensor, one pass summing squares per row (in float32 for
/// float16/bfloat16, rounded once); otherwise `sqrt(sum(a * a))`.
fn norm2(a: &Tensor, mask: &[bool], dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let shape = a.shape();
    let first = mask.iter().position(|&m| m).unwrap_or(mask.len());
    let trailing = mask[first..].iter().all(|&m| m);
    if !(trailing && a.is_contiguous()) || shape.is_empty() {
        return super::sqrt(&sum(&mul(a, a)?, dims, keepdim)?);
    }
    let dt = a.dtype();
    let x = cast_data(a, dt.compute());
    let cols: usize = shape[first..].iter().product();
    let rows: usize = shape[..first].iter().product();
    let out_shape = reduced_shape(&shape, mask, keepdim);
    let v = x.view();
    let sq = crate::dispatch_float!(v.dtype(), T => {
        let data = v.as_slice::<T>().unwrap_or(&[]);
        let r: Vec<T> = if cols == 0 {
            crate::error::filled_vec(rows, <T as crate::tensor::Element>::zero())
        } else {
            crate::kernels::reduce::sum_sq_rows(data, rows, cols)
        };
        Tensor::from_vec(r, out_shape)
    });
    Ok(super::back_to(super::sqrt(&sq)?, dt))
}

fn norm_other(
    a: &Tensor,
    abs: &Tensor,
    ord: f64,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    Ok({
        if ord == 1.0 {
            sum(abs, dims, keepdim)?
        } else if ord == f64::INFINITY {
            super::amax(abs, dims, keepdim)?
        } else if ord == f64::NEG_INFINITY {
            super::amin(abs, dims, keepdim)?
        } else if ord == 0.0 {
            let nz = super::compare::ne(a, &Tensor::scalar_of(0.0, a.dtype()))?;
            super::to_dtype(&sum(&nz, dims, keepdim)?, a.dtype())?
        } else {
            let p = super::pow_scalar(abs, super::Scalar::Float(ord))?;
            super::pow_scalar(&sum(&p, dims, keepdim)?, super::Scalar::Float(1.0 / ord))?
        }
    })
}

fn record_norm(
    a: &Tensor,
    out: Tensor,
    ord: f64,
    shape: &[usize],
    mask: &[bool],
    dims: Option<&[i64]>,
) -> Result<Tensor> {
    if needs_record(&[a]) {
        let keep_shape = reduced_shape(shape, mask, true);
        let dims: Option<SmallVec<[i64; 4]>> = dims.map(SmallVec::from_slice);
        record(
            "LinalgVectorNormBackward0",
            &[a],
            &out,
            saved![a, Some(SavedTensor::output(&out, 0))],
            move |c| {
                let x = c.saved(0)?;
                let g = reshape(c.grad()?, &keep_shape)?;
                let grad = if ord == 0.0 {
                    // A count of non-zeros is flat almost everywhere; like
                    // PyTorch, no gradient at all rather than zeros.
                    return Ok(smallvec![None]);
                } else if ord == 1.0 {
                    mul(&g, &super::sign(x)?)?
                } else if ord.is_infinite() {
                    // Elements at the extreme share the gradient evenly.
                    let y = reshape(c.saved(1)?, &keep_shape)?;
                    let hit =
                        super::cast_data(&super::compare::eq(&super::abs(x)?, &y)?, g.dtype());
                    let count = sum(&hit, dims.as_deref(), true)?;
                    mul(&div(&mul(&g, &super::sign(x)?)?, &count)?, &hit)?
                } else {
                    // g * sign(x) |x|^(p-1) / y^(p-1), and 0 where the norm is 0.
                    let y = reshape(c.saved(1)?, &keep_shape)?;
                    let zero = super::compare::eq(&y, &Tensor::scalar_of(0.0, y.dtype()))?;
                    let safe = super::where_(&zero, &Tensor::scalar_of(1.0, y.dtype()), &y)?;
                    let e = super::Scalar::Float(ord - 1.0);
                    let denom = if ord == 2.0 {
                        safe
                    } else {
                        super::pow_scalar(&safe, e)?
                    };
                    let scale = div(&g, &denom)?;
                    let scale = super::where_(&zero, &Tensor::scalar_of(0.0, y.dtype()), &scale)?;
                    if ord == 2.0 {
                        // sign(x) |x| is x itself.
                        return Ok(smallvec![Some(mul(x, &scale)?)]);
                    }
                    // sign(x) |x|^(p-1), taken as 0 at x = 0 (where it is
                    // 0 * inf for p < 1), as PyTorch does.
                    let d = mul(&super::sign(x)?, &super::pow_scalar(&super::abs(x)?, e)?)?;
                    let at_zero = super::compare::eq(x, &Tensor::scalar_of(0.0, x.dtype()))?;
                    let d = super::where_(&at_zero, &Tensor::scalar_of(0.0, d.dtype()), &d)?;
                    mul(&d, &scale)?
                };
                Ok(smallvec![Some(grad)])
            },
        );
    }
    Ok(out)
}

/// `logsumexp` of float32/float64 over one dimension (or all) in one Rust
/// pass per row (`kernels::softmax::logsumexp`); `None` for other cases.
fn logsumexp_fused(a: &Tensor, mask: &[bool], keepdim: bool) -> Option<Tensor> {
    let shape = a.shape();
    if !matches!(a.dtype(), DType::F32 | DType::F64) || a.numel() == 0 {
        return None;
    }
    let all = mask.iter().all(|&m| m);
    let r = if all {
        crate::kernels::softmax::Rows {
            outer: 1,
            n: a.numel(),
            inner: 1,
        }
    } else {
        let mut dims = (0..shape.len()).filter(|&d| mask[d]);
        let d = dims.next()?;
        if dims.next().is_some() {
            return None;
        }
        crate::kernels::softmax::Rows {
            outer: shape[..d].iter().product(),
            n: shape[d],
            inner: shape[d + 1..].iter().product(),
        }
    };
    let src = a.contiguous_data();
    let v = src.view();
    let out_shape = reduced_shape(&shape, mask, keepdim);
    Some(crate::dispatch_float!(a.dtype(), T => {
        let data = v.as_slice::<T>()?;
        Tensor::from_vec(crate::kernels::softmax::logsumexp(data, r), out_shape)
    }))
}

/// `logsumexp(a, dim, keepdim)`, shifted by the (constant) maximum so that
/// large inputs do not overflow; the gradient is `g * exp(a - result)`.
pub(crate) fn logsumexp(a: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let a = if a.dtype().is_float() {
        a.clone()
    } else {
        super::to_dtype(a, DType::default_float())?
    };
    let shape = a.shape();
    let mask = reduce_mask(shape.len(), dims)?;
    let keep_shape = reduced_shape(&shape, &mask, true);
    let out = if let Some(out) = logsumexp_fused(&a, &mask, keepdim) {
        out
    } else {
        let _g = crate::autograd::GradModeGuard::new(false);
        let a = a.detach();
        let m = if a.numel() == 0 || mask.iter().zip(&shape).any(|(&m, &s)| m && s == 0) {
            Tensor::zeros(keep_shape.clone(), a.dtype())
        } else {
            let m = super::amax(&a, dims, true)?;
            // An infinite maximum would give inf - inf; shift by zero there instead.
            let inf = super::isinf(&m)?;
            super::where_(&inf, &Tensor::scalar_of(0.0, m.dtype()), &m)?
        };
        let s = sum(&super::exp(&super::sub(&a, &m)?)?, dims, true)?;
        let out = super::add(&super::log(&s)?, &m)?;
        if keepdim {
            out
        } else {
            reshape(&out, &reduced_shape(&shape, &mask, false))?
        }
    };
    if needs_record(&[&a]) {
        record(
            "LogsumexpBackward0",
            &[&a],
            &out,
            saved![&a, Some(SavedTensor::output(&out, 0))],
            move |c| {
                let g = reshape(c.grad()?, &keep_shape)?;
                let r = reshape(c.saved(1)?, &keep_shape)?;
                let p = super::exp(&super::sub(c.saved(0)?, &r)?)?;
                Ok(smallvec![Some(mul(&g, &p)?)])
            },
        );
    }
    Ok(out)
}
