//! Index-driven ops: `gather` and `scatter_add` are each other's adjoints, so
//! every rule here (and advanced indexing, `index_select`, `max(dim)`, which
//! are built on them) is differentiable to any order. Duplicate indices
//! accumulate their gradients through `scatter_add`.

use smallvec::{smallvec, SmallVec};

use super::{cast_data, expand, permute, reshape, select, slice, unsqueeze, Scalar};
use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::kernels::index::{
    gather_dim, index_add_rows, index_select_rows, scatter_dim, scatter_dim_into, Base, Combine,
};
use crate::saved;
use crate::tensor::{broadcast_shapes, fmt_shape, numel, wrap_dim, DType, Shape, Tensor};

fn check_index_dtype(index: &Tensor, op: &str) -> Result<()> {
    if index.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "{op}(): Expected dtype int64 for index"
        )));
    }
    Ok(())
}

/// PyTorch's error for the first index (in row-major order) outside
/// `0..size`, once a kernel found one.
fn out_of_bounds(index: &Tensor, size: usize, dim: usize) -> Error {
    let ic = index.contiguous_data();
    let v = ic.view();
    let vals = v.as_slice::<i64>().unwrap_or(&[]);
    match vals.iter().find(|&&i| i < 0 || i as usize >= size) {
        Some(i) => Error::runtime(format!(
            "index {i} is out of bounds for dimension {dim} with size {size}"
        )),
        None => Error::runtime(format!(
            "index out of bounds for dimension {dim} with size {size}"
        )),
    }
}

/// `input`'s dimension count, treating a 0-d tensor as 1-d (as PyTorch's index ops do).
fn as_nd(t: &Tensor) -> Result<Tensor> {
    if t.ndim() == 0 {
        let _g = GradModeGuard::new(false);
        return reshape(&t.detach(), &[1]);
    }
    Ok(t.clone())
}

/// `input.gather(dim, index)`: `out[i][j] = input[index[i][j]][j]` for `dim=0`.
pub(crate) fn gather(input: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    check_index_dtype(index, "gather")?;
    let (ishape, xshape) = (index.shape(), input.shape());
    if ishape.len().max(1) != xshape.len().max(1) {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as input tensor",
        ));
    }
    let d = wrap_dim(dim, xshape.len())?;
    let x = as_nd(input)?;
    let xs = x.shape();
    let is: Shape = if ishape.is_empty() {
        smallvec![1]
    } else {
        ishape.clone()
    };
    for k in 0..xs.len() {
        if k != d && is[k] > xs[k] {
            return Err(Error::runtime(format!(
                "Size does not match at dimension {k} expected index {} to be smaller than self {} apart from dimension {d}",
                fmt_shape(&ishape),
                fmt_shape(&xshape)
            )));
        }
    }
    let ic = (numel(&is) != 0).then(|| index.contiguous_data());
    let out = {
        let v = x.view();
        let iv = ic.as_ref().map(|t| t.view());
        let idx = iv.as_ref().and_then(|v| v.as_slice::<i64>()).unwrap_or(&[]);
        if idx.len() != numel(&is) {
            return Err(Error::runtime("gather(): Expected dtype int64 for index"));
        }
        let out = crate::dispatch!(v.dtype(), T => {
            gather_dim::<T>(&v, d, idx, &is).map(|o| Tensor::from_vec(o, ishape.clone()))
        });
        out.ok_or_else(|| out_of_bounds(index, xs[d], d))?
    };
    if needs_record(&[input]) {
        record("GatherBackward0", &[input], &out, saved![index], move |c| {
            Ok(smallvec![Some(scatter_add_zeros(
                &xshape,
                d as i64,
                c.saved(0)?,
                c.grad()?
            )?)])
        });
    }
    Ok(out)
}

fn check_scatter(xs: &[usize], d: usize, index: &Tensor, src: &Tensor, op: &str) -> Result<()> {
    check_index_dtype(index, op)?;
    let (is, ss) = (index.shape(), src.shape());
    if is.len().max(1) != xs.len().max(1) {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as self tensor",
        ));
    }
    if is.len() != ss.len() && numel(&is) != 0 {
        return Err(Error::runtime(
            "Index tensor must have the same number of dimensions as src tensor",
        ));
    }
    for k in 0..is.len() {
        if (k != d && is[k] > xs[k]) || is[k] > ss.get(k).copied().unwrap_or(1) {
            return Err(Error::runtime(format!(
                "Expected index {} to be smaller than self {} apart from dimension {d} and to be smaller size than src {}",
                fmt_shape(&is),
                fmt_shape(xs),
                fmt_shape(&ss)
            )));
        }
    }
    Ok(())
}

/// The unrecorded result of writing or adding `src` into a copy of `input`.
fn scatter_kernel(
    input: &Tensor,
    d: usize,
    index: &Tensor,
    src: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let x = as_nd(input)?;
    scatter_onto(
        &input.shape(),
        input.dtype(),
        Some(&x),
        d,
        index,
        src,
        accumulate,
    )
}

/// `src` written or added along `d` at `index` into a copy of `x` (shape
/// `shape` seen with at least one dimension), or into zeros when `x` is
/// None: then the buffer is written once, not filled, copied and written.
fn scatter_onto(
    shape: &Shape,
    dtype: DType,
    x: Option<&Tensor>,
    d: usize,
    index: &Tensor,
    src: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let xs: Shape = if shape.is_empty() {
        smallvec![1]
    } else {
        shape.clone()
    };
    let is: Shape = if index.ndim() == 0 {
        smallvec![1]
    } else {
        index.shape()
    };
    let ic = (numel(&is) != 0).then(|| index.contiguous_data());
    let iv = ic.as_ref().map(|t| t.view());
    let idx = iv.as_ref().and_then(|v| v.as_slice::<i64>()).unwrap_or(&[]);
    if idx.len() != numel(&is) {
        // Unreachable after `check_scatter`; the kernel trusts the length.
        return Err(Error::runtime("scatter(): Expected dtype int64 for index"));
    }
    let s = as_nd(&cast_data(src, dtype))?;
    let xv = x.map(|x| x.view());
    let out = crate::dispatch!(dtype, T => {
        let base = match &xv {
            Some(v) => Base::Copy(v),
            None => Base::Zeros,
        };
        let sv = s.view();
        scatter_dim::<T>(base, &xs, d, idx, &is, &sv, accumulate)
            .map(|buf| Tensor::from_vec(buf, shape.clone()))
    });
    out.ok_or_else(|| out_of_bounds(index, xs[d], d))
}

/// `scatter_add(zeros(shape), dim, index, src)`, the adjoint of `gather`
/// (and so the backward of every op that picks elements by an index). When
/// nothing records it, the zeros are the kernel's own buffer rather than a
/// tensor that is filled and then copied; recorded (under `create_graph`),
/// it is the `scatter_add` op, differentiable again.
pub(crate) fn scatter_add_zeros(
    shape: &Shape,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
) -> Result<Tensor> {
    if needs_record(&[src]) {
        let zeros = Tensor::zeros(shape.clone(), src.dtype());
        return scatter_add(&zeros, dim, index, src);
    }
    let d = wrap_dim(dim, shape.len())?;
    check_scatter(shape, d, index, src, "scatter_add")?;
    scatter_onto(shape, src.dtype(), None, d, index, src, true)
}

/// `input.scatter_add(dim, index, src)`: adds `src` into a copy of `input`;
/// repeated indices add up.
pub(crate) fn scatter_add(
    input: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
) -> Result<Tensor> {
    let d = wrap_dim(dim, input.ndim())?;
    check_scatter(&input.shape(), d, index, src, "scatter_add")?;
    let out = scatter_kernel(input, d, index, src, true)?;
    if needs_record(&[input, src]) {
        record(
            "ScatterAddBackward0",
            &[input, src],
            &out,
            saved![index],
            move |c| {
                let g = c.grad()?;
                let gs = if c.needs(1) {
                    Some(gather(g, d as i64, c.saved(0)?)?)
                } else {
                    None
                };
                Ok(smallvec![Some(g.clone()), gs])
            },
        );
    }
    Ok(out)
}

/// `input.scatter(dim, index, src)`: writes `src` into a copy of `input`.
pub(crate) fn scatter(input: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, input.ndim())?;
    check_scatter(&input.shape(), d, index, src, "scatter")?;
    let out = scatter_kernel(input, d, index, src, false)?;
    if needs_record(&[input, src]) {
        record(
            "ScatterBackward0",
            &[input, src],
            &out,
            saved![index],
            move |c| {
                let (g, index) = (c.grad()?, c.saved(0)?);
                // Overwritten positions contribute nothing to `input`'s gradient.
                // One zero seen at every position (no tensor of zeros filled).
                let gi = if c.needs(0) {
                    let zero = expand(&Tensor::scalar_of(0.0, g.dtype()), &index.shape())?;
                    Some(scatter(g, d as i64, index, &zero)?)
                } else {
                    None
                };
                let gs = if c.needs(1) {
                    Some(gather(g, d as i64, index)?)
                } else {
                    None
                };
                Ok(smallvec![gi, gs])
            },
        );
    }
    Ok(out)
}

/// `input.scatter(dim, index, value)` for a Python number.
pub(crate) fn scatter_value(
    input: &Tensor,
    dim: i64,
    index: &Tensor,
    value: Scalar,
) -> Result<Tensor> {
    // One element seen at every position: no tensor of the index's size filled.
    let src = expand(
        &Tensor::scalar_of(value.to_f64(), input.dtype()),
        &index.shape(),
    )?;
    scatter(input, dim, index, &src)
}

/// `input.index_select(dim, index)` for a 1-D (or 0-d) int64 index.
pub(crate) fn index_select(input: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if index.dtype() == DType::I32 {
        return index_select(input, dim, &super::cast_data(index, DType::I64));
    }
    if index.dtype() != DType::I64 {
        return Err(Error::runtime(
            "index_select(): Expected dtype int32 or int64 for index",
        ));
    }
    if index.ndim() > 1 {
        return Err(Error::index(
            "index_select(): Index is supposed to be a vector",
        ));
    }
    let xshape = input.shape();
    let d = wrap_dim(dim, xshape.len())?;
    let x = as_nd(input)?;
    let k = index.numel();
    let size = x.shape()[d];
    // The index is read in place, its range found by a min/max pass that
    // vectorises; only a failing index is searched for its first bad entry.
    let ic = index.contiguous_data();
    let iv = ic.view();
    let idx = iv.as_slice::<i64>().unwrap_or(&[]);
    let (lo, hi) = idx
        .iter()
        .fold((0i64, 0i64), |(lo, hi), &i| (lo.min(i), hi.max(i)));
    if !idx.is_empty() && (lo < 0 || hi >= size as i64) {
        let i = idx
            .iter()
            .copied()
            .find(|&i| i < 0 || i >= size as i64)
            .unwrap_or(hi);
        return Err(Error::index(format!(
            "index out of range in self (index {i} for dimension {d} with size {size})"
        )));
    }
    let nd_shape = x.shape();
    let (outer, inner) = around(&nd_shape, d);
    let mut out_shape = nd_shape.clone();
    out_shape[d] = k;
    let out = {
        // Whole rows of `inner` elements are copied, so the source is read
        // contiguous (a strided one is copied once first).
        let xc = x.contiguous_data();
        let v = xc.view();
        crate::dispatch!(v.dtype(), T => {
            let src = v.as_slice::<T>().unwrap_or(&[]);
            let data = index_select_rows::<T>(src, outer, size, inner, idx);
            let shape = if xshape.is_empty() && k == 1 { Shape::new() } else { out_shape.clone() };
            Tensor::from_vec(data, shape)
        })
    };
    if needs_record(&[input]) {
        let index = Tensor::from_vec(idx.to_vec(), smallvec![k]);
        // index_add is index_select's adjoint: repeated picks add up.
        record(
            "IndexSelectBackward0",
            &[input],
            &out,
            saved![&index],
            move |c| {
                let g = reshape(c.grad()?, &out_shape)?;
                let zeros = Tensor::zeros(nd_shape.clone(), g.dtype());
                let gx = index_add(&zeros, d as i64, c.saved(0)?, &g)?;
                Ok(smallvec![Some(reshape(&gx, &xshape)?)])
            },
        );
    }
    Ok(out)
}

/// Products of the sizes before and after dimension `d`.
/// `take(input, index)`: the elements of `input` seen as 1-D at `index`
/// (negative counts from the end), in `index`'s shape. One pass over the
/// index finds its range (a vectorised min/max); only an index holding a
/// negative entry is copied, to wrap it. Recorded as PyTorch's
/// `TakeBackward0`: the gradient adds the incoming values at the picked
/// positions of zeros (repeated picks add up), differentiable again.
pub(crate) fn take(input: &Tensor, index: &Tensor) -> Result<Tensor> {
    check_index_dtype(index, "take")?;
    let n = input.numel();
    let ic = index.contiguous_data();
    let iv = ic.view();
    let raw = iv.as_slice::<i64>().unwrap_or(&[]);
    let (lo, hi) = raw
        .iter()
        .fold((0i64, 0i64), |(lo, hi), &i| (lo.min(i), hi.max(i)));
    if !raw.is_empty() && (hi >= n as i64 || lo < -(n as i64)) {
        let bad = raw.iter().find(|&&i| i >= n as i64 || i < -(n as i64));
        return Err(Error::index(format!(
            "out of range: tried to access index {} on a tensor of {n} elements.",
            bad.copied().unwrap_or(hi)
        )));
    }
    let wrapped: Option<Vec<i64>> = (lo < 0).then(|| {
        raw.iter()
            .map(|&i| if i < 0 { i + n as i64 } else { i })
            .collect()
    });
    let idx: &[i64] = wrapped.as_deref().unwrap_or(raw);
    let out = {
        let xc = input.contiguous_data();
        let v = xc.view();
        crate::dispatch!(v.dtype(), T => {
            let src = v.as_slice::<T>().unwrap_or(&[]);
            Tensor::from_vec(index_select_rows::<T>(src, 1, n, 1, idx), index.shape())
        })
    };
    if needs_record(&[input]) {
        let flat = Tensor::from_vec(idx.to_vec(), smallvec![idx.len()]);
        let xshape = input.shape();
        record("TakeBackward0", &[input], &out, saved![&flat], move |c| {
            let g = c.grad()?;
            let g = reshape(g, &[g.numel()])?;
            let zeros = Tensor::zeros(smallvec![numel(&xshape)], g.dtype());
            let gx = index_add(&zeros, 0, c.saved(0)?, &g)?;
            Ok(smallvec![Some(reshape(&gx, &xshape)?)])
        });
    }
    Ok(out)
}

fn around(shape: &[usize], d: usize) -> (usize, usize) {
    (shape[..d].iter().product(), shape[d + 1..].iter().product())
}

/// `input.index_add(dim, index, source)`: a copy of `input` with
/// `source[.., j, ..]` added at `input[.., index[j], ..]` along `dim`
/// (repeated indices accumulate, in order). The caller has scaled `source`
/// by `alpha`. Recorded as `IndexAddBackward0`: the input's gradient passes
/// through, the source's is an `index_select`.
pub(crate) fn index_add(
    input: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
) -> Result<Tensor> {
    index_put_rows(input, dim, index, source, true)
}

/// `input.index_copy(dim, index, source)`: a copy of `input` with
/// `source[.., j, ..]` written at `input[.., index[j], ..]` (a repeated index
/// keeps its last row). Recorded as `IndexCopyBackward0`: the input's
/// gradient is the incoming one with the written rows zeroed, the source's
/// an `index_select`.
pub(crate) fn index_copy(
    input: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
) -> Result<Tensor> {
    index_put_rows(input, dim, index, source, false)
}

/// The checked arguments of `index_add`/`index_copy`: the dimension, the
/// indices, the source's shape seen with at least one dimension, and the
/// input's as `[outer, size, inner]` around the dimension.
struct Rows {
    d: usize,
    nd_shape: Shape,
    src_shape: Shape,
    idx: Vec<i64>,
    outer: usize,
    size: usize,
    inner: usize,
}

impl Rows {
    fn of(
        input: &Tensor,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        accumulate: bool,
    ) -> Result<Self> {
        let op = if accumulate {
            "index_add_"
        } else {
            "index_copy_"
        };
        if index.dtype() != DType::I64 && index.dtype() != DType::I32 {
            return Err(Error::index(format!(
                "{op}(): Expected dtype int32/int64 for index"
            )));
        }
        let d = wrap_dim(dim, input.ndim())?;
        let nd_shape: Shape = if input.ndim() == 0 {
            smallvec![1]
        } else {
            input.shape()
        };
        let size = nd_shape[d];
        let idx = cast_data(index, DType::I64).to_vec::<i64>();
        if let Some(&i) = idx.iter().find(|&&i| i < 0 || i as usize >= size) {
            return Err(Error::runtime(format!(
                "index {i} is out of bounds for dimension {d} with size {size}"
            )));
        }
        let mut src_shape = nd_shape.clone();
        src_shape[d] = idx.len();
        if source.numel() != numel(&src_shape) {
            return Err(Error::runtime(format!(
                "{op}(): Number of indices ({}) should be equal to source.size(dim) ({})",
                idx.len(),
                source.shape().get(d).copied().unwrap_or(1)
            )));
        }
        let (outer, inner) = around(&nd_shape, d);
        Ok(Self {
            d,
            nd_shape,
            src_shape,
            idx,
            outer,
            size,
            inner,
        })
    }

    /// The rows of `source` written or added into `buf`, the input's
    /// elements in row-major order.
    fn apply<T: crate::tensor::Arith>(&self, buf: &mut [T], source: &Tensor, accumulate: bool) {
        let s = cast_data(source, T::DTYPE).contiguous_data();
        let sv = s.view();
        let src = sv.as_slice::<T>().unwrap_or(&[]);
        index_add_rows::<T>(
            buf, self.outer, self.size, self.inner, &self.idx, src, accumulate,
        );
    }
}

fn index_put_rows(
    input: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let rows = Rows::of(input, dim, index, source, accumulate)?;
    let xshape = input.shape();
    let out = {
        let x = as_nd(input)?;
        let xv = x.view();
        crate::dispatch!(input.dtype(), T => {
            let mut buf: Vec<T> = crate::kernels::copy::gather::<T>(&xv);
            rows.apply::<T>(&mut buf, source, accumulate);
            Tensor::from_vec(buf, xshape.clone())
        })
    };
    if needs_record(&[input, source]) {
        let Rows {
            d,
            nd_shape,
            src_shape,
            idx,
            ..
        } = rows;
        let index = Tensor::from_vec(idx, smallvec![src_shape[d]]);
        let sshape = source.shape();
        let name = if accumulate {
            "IndexAddBackward0"
        } else {
            "IndexCopyBackward0"
        };
        record(name, &[input, source], &out, saved![&index], move |c| {
            let g = c.grad()?;
            let index = c.saved(0)?;
            let gi = if !c.needs(0) {
                None
            } else if accumulate {
                Some(g.clone())
            } else {
                // The written rows of `input` do not reach the result.
                let g_nd = reshape(g, &nd_shape)?;
                let zeros = Tensor::zeros(src_shape.clone(), g.dtype());
                Some(reshape(
                    &index_copy(&g_nd, d as i64, index, &zeros)?,
                    &xshape,
                )?)
            };
            let gs = if c.needs(1) {
                let g_nd = reshape(g, &nd_shape)?;
                Some(reshape(&index_select(&g_nd, d as i64, index)?, &sshape)?)
            } else {
                None
            };
            Ok(smallvec![gi, gs])
        });
    }
    Ok(out)
}

/// Whether an index write into `t` may go straight to its memory: nothing
/// records it, and `t` neither overlaps itself (an expand) nor shares
/// memory with `others` (`x.index_add_(0, i, x)` reads what it writes).
fn writes_directly(t: &Tensor, others: &[&Tensor]) -> bool {
    let mut ins: SmallVec<[&Tensor; 4]> = smallvec![t];
    ins.extend_from_slice(others);
    if needs_record(&ins) || crate::autograd::forward::any_tangent(&ins) {
        return false;
    }
    let tv = t.view();
    super::strided::non_overlapping(&tv.shape, &tv.strides)
        && others
            .iter()
            .all(|o| !std::sync::Arc::ptr_eq(&o.view().storage, &tv.storage))
}

/// `t.index_add_(dim, index, source)` (`index_copy_` without `accumulate`),
/// the source already scaled by `alpha`: with nothing to record, the rows
/// go straight into `t`'s memory (a contiguous `t`), after every check, so
/// bad arguments leave it as it was. Otherwise the recorded out-of-place
/// op is written in, as every in-place op is.
pub(crate) fn index_rows_(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    accumulate: bool,
) -> Result<()> {
    if t.is_contiguous() && writes_directly(t, &[index, source]) {
        let rows = Rows::of(t, dim, index, source, accumulate)?;
        super::check_inplace(t)?;
        let tv = t.view();
        let n = tv.numel();
        crate::dispatch!(t.dtype(), T => {
            if n > 0 {
                // SAFETY: a contiguous `t` holds `n` elements from its first,
                // which nothing else reads or writes meanwhile (no input
                // shares its memory).
                let buf = unsafe { std::slice::from_raw_parts_mut(tv.ptr::<T>(), n) };
                rows.apply::<T>(buf, source, accumulate);
            }
        });
        tv.storage.bump_version();
        return Ok(());
    }
    super::apply_inplace(t, || index_put_rows(t, dim, index, source, accumulate))
}

/// `t.scatter_(dim, index, src)` (`scatter_add_` with [`Combine::Add`],
/// `scatter_reduce_` with the others): with nothing to record, `src` goes
/// straight into `t`'s memory once every index is checked, so bad arguments
/// leave `t` as it was; otherwise the out-of-place op is written in.
pub(crate) fn scatter_(
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    combine: Combine,
) -> Result<()> {
    let op = match combine {
        Combine::Write => "scatter",
        Combine::Add => "scatter_add",
        _ => "scatter_reduce",
    };
    if writes_directly(t, &[index, src]) {
        let d = wrap_dim(dim, t.ndim())?;
        check_scatter(&t.shape(), d, index, src, op)?;
        super::check_inplace(t)?;
        // SAFETY: `t` does not overlap itself nor share memory with `src`
        // (`writes_directly`), and nothing else writes it meanwhile.
        unsafe { scatter_into(t, d, index, src, combine, op)? };
        t.view().storage.bump_version();
        return Ok(());
    }
    super::apply_inplace(t, || match combine {
        Combine::Write => scatter(t, dim, index, src),
        Combine::Add => scatter_add(t, dim, index, src),
        Combine::Mul => scatter_reduce_value(t, dim, index, src, "prod", true),
        Combine::Max => scatter_reduce_value(t, dim, index, src, "amax", true),
        Combine::Min => scatter_reduce_value(t, dim, index, src, "amin", true),
    })
}

/// `src` combined into `dst`'s memory along `d` at `index` (arguments
/// checked by `check_scatter`); PyTorch's error, with nothing written, for an
/// index out of range.
///
/// # Safety
/// `dst` does not overlap itself nor share memory with `src`, and nothing
/// else reads or writes it meanwhile.
unsafe fn scatter_into(
    dst: &Tensor,
    d: usize,
    index: &Tensor,
    src: &Tensor,
    combine: Combine,
    op: &str,
) -> Result<()> {
    let x = as_nd(dst)?;
    let s = as_nd(&cast_data(src, dst.dtype()))?;
    let is: Shape = if index.ndim() == 0 {
        smallvec![1]
    } else {
        index.shape()
    };
    let ic = index.contiguous_data();
    let iv = ic.view();
    let idx = iv.as_slice::<i64>().unwrap_or(&[]);
    if idx.len() != numel(&is) {
        return Err(Error::runtime(format!(
            "{op}(): Expected dtype int64 for index"
        )));
    }
    let (xv, sv) = (x.view(), s.view());
    let written =
        crate::dispatch!(xv.dtype(), T => scatter_dim_into::<T>(&xv, d, idx, &is, &sv, combine));
    if !written {
        return Err(out_of_bounds(index, xv.shape[d], d));
    }
    Ok(())
}

/// `input.scatter_reduce(dim, index, src, reduce, include_self)`'s value for
/// `reduce` in `prod`, `amax`, `amin` (NaN wins the extrema), unrecorded:
/// a copy of `input` (its reached elements first set to the reduction's
/// identity without `include_self`) with `src` combined in, in index order,
/// one pass. Python composes the differentiable form when one is needed.
pub(crate) fn scatter_reduce_value(
    input: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
) -> Result<Tensor> {
    let dt = input.dtype();
    let combine = match reduce {
        "prod" => Combine::Mul,
        "amax" => Combine::Max,
        "amin" => Combine::Min,
        _ => {
            return Err(Error::runtime(format!(
                "reduce argument must be either prod, amax or amin, got {reduce}"
            )))
        }
    };
    let d = wrap_dim(dim, input.ndim())?;
    check_scatter(&input.shape(), d, index, src, "scatter_reduce")?;
    let out = {
        let v = input.view();
        crate::dispatch!(dt, T => Tensor::from_vec(crate::kernels::copy::gather::<T>(&v), input.shape()))
    };
    let identity = expand(&identity_of(combine, dt), &index.shape())?;
    // SAFETY: `out` is a fresh contiguous tensor that no one else holds.
    unsafe {
        if !include_self {
            scatter_into(&out, d, index, &identity, Combine::Write, "scatter_reduce")?;
        }
        scatter_into(&out, d, index, src, combine, "scatter_reduce")?;
    }
    Ok(out)
}

/// The value a reduction starts from: 1 for a product, the dtype's lowest
/// (highest) value for a maximum (minimum), -inf (inf) for floats.
fn identity_of(combine: Combine, dt: DType) -> Tensor {
    let high = combine == Combine::Min;
    macro_rules! extreme {
        ($t:ty) => {
            Tensor::scalar(if high { <$t>::MAX } else { <$t>::MIN })
        };
    }
    match (combine, dt) {
        (Combine::Mul, _) => Tensor::scalar_of(1.0, dt),
        (_, DType::Bool) => Tensor::scalar(high),
        (_, DType::U8) => extreme!(u8),
        (_, DType::I8) => extreme!(i8),
        (_, DType::I16) => extreme!(i16),
        (_, DType::I32) => extreme!(i32),
        (_, DType::I64) => extreme!(i64),
        _ => Tensor::scalar_of(
            if high {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            },
            dt,
        ),
    }
}

/// `t.scatter_(dim, index, value)` for a Python number.
pub(crate) fn scatter_value_(t: &Tensor, dim: i64, index: &Tensor, value: Scalar) -> Result<()> {
    let src = expand(
        &Tensor::scalar_of(value.to_f64(), t.dtype()),
        &index.shape(),
    )?;
    scatter_(t, dim, index, &src, Combine::Write)
}

/// `input.masked_fill(mask, value)`: `value` where `mask` is true.
pub(crate) fn masked_fill(input: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(Error::runtime(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().name()
        )));
    }
    if value.ndim() != 0 {
        return Err(Error::runtime(format!(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            value.ndim()
        )));
    }
    let v = super::to_dtype(value, input.dtype())?;
    super::arith::where_laid("MaskedFillBackward0", mask, &v, input, &[2, 0], true)
}

pub(crate) fn masked_fill_scalar(input: &Tensor, mask: &Tensor, value: Scalar) -> Result<Tensor> {
    masked_fill(
        input,
        mask,
        &Tensor::scalar_of(value.to_f64(), input.dtype()),
    )
}

/// Indices of the true (nonzero) elements, one row per element: `[n, ndim]`.
pub(crate) fn nonzero(input: &Tensor) -> Tensor {
    let shape = input.shape();
    let flags = cast_data(input, DType::Bool).to_vec::<bool>();
    let at = true_positions(&flags);
    if shape.is_empty() {
        return Tensor::from_vec(Vec::<i64>::new(), smallvec![at.len(), 0]);
    }
    // Each flat position as its coordinates, last dimension fastest.
    let nd = shape.len();
    let mut rows = crate::error::zeroed_vec::<i64>(at.len() * nd);
    for (row, &p) in rows.chunks_exact_mut(nd).zip(&at) {
        let mut p = p as usize;
        for d in (0..nd).rev() {
            row[d] = (p % shape[d]) as i64;
            p /= shape[d];
        }
    }
    Tensor::from_vec(rows, smallvec![at.len(), nd])
}

/// The positions of the true flags, in order. Branch-free (a random mask
/// would mispredict a branch per element): every position is stored and the
/// cursor advances by the flag.
pub(super) fn true_positions(flags: &[bool]) -> Vec<i64> {
    let count = flags.iter().filter(|&&f| f).count();
    let mut out = crate::error::zeroed_vec::<i64>(count + 1);
    let mut k = 0usize;
    for (i, &f) in flags.iter().enumerate() {
        out[k] = i as i64;
        k += f as usize;
    }
    out.truncate(count);
    out
}

// ----- Python-style indexing -------------------------------------------------

/// One entry of an index key (`t[0, 1:3, None, ..., idx]`).
#[derive(Clone)]
pub enum IndexItem {
    Int(i64),
    Slice(Option<i64>, Option<i64>, i64),
    NewAxis,
    Ellipsis,
    Tensor(Tensor),
}

/// `t[key]`: basic indexing gives views; integer and boolean tensors give
/// copies through `index_select` (so gradients of repeated picks add up).
pub(crate) fn index(t: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
    index_as(t, items, "IndexBackward0")
}

/// `input.masked_select(mask)`: the elements where the (broadcast) mask is
/// true, as a 1-D tensor.
pub(crate) fn masked_select(input: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(&input.shape(), &mask.shape())?;
    let x = if input.shape() == shape {
        input.clone()
    } else {
        expand(input, &shape)?
    };
    let m = {
        let _g = GradModeGuard::new(false);
        expand(mask, &shape)?
    };
    index_as(&x, &[IndexItem::Tensor(m)], "MaskedSelectBackward0")
}

/// `index`, whose advanced part is recorded as one node called `name`.
fn index_as(t: &Tensor, items: &[IndexItem], name: &'static str) -> Result<Tensor> {
    let (out, adv) = split_key(t, items)?;
    if adv.is_empty() {
        // Only `...` or `()`: still a new tensor, like every index.
        return Ok(if out.id() == t.id() {
            super::alias_of(t)
        } else {
            out
        });
    }
    advanced(&out, &adv, name)
}

/// An advanced index: (first dimension it indexes, index tensor, how many
/// dimensions it spans; a boolean mask spans its own rank).
pub(super) type AdvIndex = (usize, Tensor, usize);

/// `t[key]` split in two: the basic part applied (a view of `t`, recorded
/// like any view), and the advanced indices left to apply to that view.
pub(super) fn split_key(t: &Tensor, items: &[IndexItem]) -> Result<(Tensor, Vec<AdvIndex>)> {
    let consumed: usize = items
        .iter()
        .map(|it| match it {
            IndexItem::Int(_) | IndexItem::Slice(..) => 1,
            IndexItem::Tensor(x) if x.dtype() == DType::Bool => x.ndim(),
            IndexItem::Tensor(_) => 1,
            IndexItem::NewAxis | IndexItem::Ellipsis => 0,
        })
        .sum();
    let ndim = t.ndim();
    if consumed > ndim {
        return Err(Error::index(format!(
            "too many indices for tensor of dimension {ndim}"
        )));
    }
    if items
        .iter()
        .filter(|i| matches!(i, IndexItem::Ellipsis))
        .count()
        > 1
    {
        return Err(Error::index(
            "an index can only have a single ellipsis ('...')",
        ));
    }
    let mut out = t.clone();
    let mut dim = 0usize;
    let mut adv: Vec<AdvIndex> = Vec::new();
    for it in items {
        match it {
            IndexItem::NewAxis => {
                out = unsqueeze(&out, dim as i64)?;
                dim += 1;
            }
            IndexItem::Ellipsis => dim += ndim - consumed,
            IndexItem::Slice(s, e, st) => {
                out = slice(&out, dim as i64, *s, *e, *st)?;
                dim += 1;
            }
            IndexItem::Int(i) => out = select(&out, dim as i64, *i)?,
            IndexItem::Tensor(x) if x.dtype() == DType::Bool => {
                if x.ndim() == 0 {
                    // `t[True]` adds a dimension of size 1, `t[False]` one of size 0.
                    out = unsqueeze(&out, dim as i64)?;
                    let keep: Vec<i64> = if x.item()? != 0.0 { vec![0] } else { vec![] };
                    let n = keep.len();
                    adv.push((dim, Tensor::from_vec(keep, smallvec![n]), 1));
                    dim += 1;
                    continue;
                }
                let ms = x.shape();
                let os = out.shape();
                for (k, &m) in ms.iter().enumerate() {
                    if os[dim + k] != m {
                        return Err(Error::index(format!(
                            "The shape of the mask {} at index {k} does not match the shape of the indexed tensor {} at index {}",
                            fmt_shape(&ms),
                            fmt_shape(&os),
                            dim + k
                        )));
                    }
                }
                // The mask's true positions, row-major over its dimensions,
                // are the flat index into those dimensions taken together.
                let flat = true_positions(&x.to_vec::<bool>());
                let n = flat.len();
                adv.push((dim, Tensor::from_vec(flat, smallvec![n]), ms.len()));
                dim += ms.len();
            }
            IndexItem::Tensor(x) => {
                let x = match x.dtype() {
                    DType::I64 => x.clone(),
                    DType::I32 => cast_data(x, DType::I64),
                    _ => {
                        return Err(Error::index(
                            "tensors used as indices must be long, int, byte or bool tensors",
                        ))
                    }
                };
                adv.push((dim, x, 1));
                dim += 1;
            }
        }
    }
    Ok((out, adv))
}

/// Applies broadcast integer indices at the given dimensions of `x`,
/// recorded as one node `name` whose backward adds the gradient into the
/// picked elements (repeated picks add up) with `index_add`.
fn advanced(x: &Tensor, adv: &[AdvIndex], name: &'static str) -> Result<Tensor> {
    let plan = plan_advanced(&x.shape(), adv)?;
    let out = {
        let _g = GradModeGuard::new(false);
        apply_plan(&x.detach(), &plan)?
    };
    if needs_record(&[x]) {
        let shape = x.shape();
        let lin = Tensor::from_vec(plan.lin.clone(), smallvec![plan.lin.len()]);
        record(name, &[x], &out, saved![&lin], move |c| {
            Ok(smallvec![Some(plan_adjoint(
                c.grad()?,
                &shape,
                &plan,
                c.saved(0)?
            )?)])
        });
    }
    Ok(out)
}

/// How `advanced` picks: the advanced dimensions are moved to the front and
/// flattened into one, whose row-major positions `lin` are `index_select`ed.
pub(super) struct AdvPlan {
    pub lin: Vec<i64>,
    /// The advanced dimensions, in order.
    pub dims: SmallVec<[usize; 4]>,
    /// The broadcast shape of the index tensors.
    pub bshape: Shape,
}

impl AdvPlan {
    /// A single advanced dimension stays where it is (no permute).
    fn single(&self) -> Option<usize> {
        (self.dims.len() == 1).then(|| self.dims[0])
    }
}

pub(super) fn plan_advanced(shape: &[usize], adv: &[AdvIndex]) -> Result<AdvPlan> {
    let mut bshape = Shape::new();
    for (_, i, _) in adv {
        bshape = broadcast_shapes(&bshape, &i.shape()).map_err(|_| {
            let shapes: Vec<String> = adv.iter().map(|(_, i, _)| fmt_shape(&i.shape())).collect();
            Error::index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                shapes.join(", ")
            ))
        })?;
    }
    let nb = numel(&bshape);
    // Row-major linear index into the indexed dimensions, negatives wrapped.
    let mut lin = crate::error::zeroed_vec::<i64>(nb);
    let mut dims: SmallVec<[usize; 4]> = SmallVec::new();
    for (d, i, span) in adv {
        let size = shape[*d..*d + *span].iter().product::<usize>() as i64;
        dims.extend(*d..*d + *span);
        let e = {
            let _g = GradModeGuard::new(false);
            expand(&i.detach(), &bshape)?
        };
        for (acc, v) in lin.iter_mut().zip(e.to_vec::<i64>()) {
            if v < -size || v >= size {
                return Err(Error::index(format!(
                    "index {v} is out of bounds for dimension {d} with size {size}"
                )));
            }
            let v = if v < 0 { v + size } else { v };
            *acc = *acc * size + v;
        }
    }
    Ok(AdvPlan { lin, dims, bshape })
}

/// The advanced dimensions first, then the rest: `(perm, rest)`.
fn adv_perm(nd: usize, dims: &[usize]) -> (SmallVec<[i64; 4]>, SmallVec<[usize; 4]>) {
    let rest: SmallVec<[usize; 4]> = (0..nd).filter(|d| !dims.contains(d)).collect();
    let perm = dims.iter().chain(rest.iter()).map(|&d| d as i64).collect();
    (perm, rest)
}

/// Where the result's broadcast dimensions end up: after the dimensions
/// before the first advanced one when the advanced ones are adjacent
/// (NumPy's rule), else first. `None` when no move is needed.
fn adv_out_perm(plan: &AdvPlan, nrest: usize) -> Option<SmallVec<[i64; 4]>> {
    let first = plan.dims[0];
    let adjacent = plan.dims.windows(2).all(|w| w[1] == w[0] + 1);
    if !adjacent || first == 0 {
        return None;
    }
    let nbd = plan.bshape.len();
    let mut perm: SmallVec<[i64; 4]> = SmallVec::new();
    perm.extend((0..first).map(|k| (nbd + k) as i64));
    perm.extend((0..nbd).map(|k| k as i64));
    perm.extend((first..nrest).map(|k| (nbd + k) as i64));
    Some(perm)
}

fn invert(perm: &[i64]) -> SmallVec<[i64; 4]> {
    let mut inv: SmallVec<[i64; 4]> = SmallVec::from_elem(0, perm.len());
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as i64;
    }
    inv
}

/// The values `advanced` gives (unrecorded when grad mode is off).
fn apply_plan(x: &Tensor, plan: &AdvPlan) -> Result<Tensor> {
    let shape = x.shape();
    let lin = Tensor::from_vec(plan.lin.clone(), smallvec![plan.lin.len()]);
    if let Some(d) = plan.single() {
        // One advanced dimension: an index_select in place.
        let picked = index_select(x, d as i64, &lin)?;
        let mut out_shape: Shape = shape[..d].iter().copied().collect();
        out_shape.extend(plan.bshape.iter().copied());
        out_shape.extend(shape[d + 1..].iter().copied());
        return reshape(&picked, &out_shape);
    }
    let (perm, rest) = adv_perm(shape.len(), &plan.dims);
    let moved = permute(x, &perm)?;
    let mut flat_shape: Shape = smallvec![plan.dims.iter().map(|&d| shape[d]).product()];
    flat_shape.extend(rest.iter().map(|&d| shape[d]));
    let flat = reshape(&moved, &flat_shape)?;
    let picked = index_select(&flat, 0, &lin)?;
    let mut out_shape = plan.bshape.clone();
    out_shape.extend(rest.iter().map(|&d| shape[d]));
    let out = reshape(&picked, &out_shape)?;
    match adv_out_perm(plan, rest.len()) {
        Some(p) => permute(&out, &p),
        None => Ok(out),
    }
}

/// `apply_plan`'s adjoint: the gradient `g` added into zeros of `shape` at
/// the picked positions (`lin` is the plan's flat index as a tensor).
fn plan_adjoint(g: &Tensor, shape: &Shape, plan: &AdvPlan, lin: &Tensor) -> Result<Tensor> {
    let nb = numel(&plan.bshape);
    if let Some(d) = plan.single() {
        let mut gshape: Shape = shape.clone();
        gshape[d] = nb;
        let g = reshape(g, &gshape)?;
        let zeros = Tensor::zeros(shape.clone(), g.dtype());
        return index_add(&zeros, d as i64, lin, &g);
    }
    let (perm, rest) = adv_perm(shape.len(), &plan.dims);
    let g = match adv_out_perm(plan, rest.len()) {
        Some(p) => permute(g, &invert(&p))?,
        None => g.clone(),
    };
    let mut gshape: Shape = smallvec![nb];
    gshape.extend(rest.iter().map(|&d| shape[d]));
    let g = reshape(&g, &gshape)?;
    let mut flat_shape: Shape = smallvec![plan.dims.iter().map(|&d| shape[d]).product()];
    flat_shape.extend(rest.iter().map(|&d| shape[d]));
    let zeros = Tensor::zeros(flat_shape, g.dtype());
    let acc = index_add(&zeros, 0, lin, &g)?;
    let moved: Shape = perm.iter().map(|&d| shape[d as usize]).collect();
    permute(&reshape(&acc, &moved)?, &invert(&perm))
}
