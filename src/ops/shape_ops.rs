//! Joining, splitting and rearranging: `cat`, `stack`, `split`, `chunk`,
//! `unbind`, `flip`, `repeat`, `unflatten`, `narrow`, `cumsum`. The pieces
//! of `split`/`chunk`/`unbind` are views that are the outputs of one node;
//! `stack` and `repeat` are composites recorded as one node each, under
//! PyTorch's names.

use smallvec::{smallvec, SmallVec};

use super::{cast_data, expand, reshape, reshape_i, select, slice, unsqueeze};
use crate::autograd::{needs_record, record, record_multi};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{fmt_shape, wrap_dim, DType, Element, Shape, Tensor, View};

/// `cat(tensors, dim)`: dtypes promote; every size but `dim`'s must match.
pub(crate) fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(Error::runtime(
            "torch.cat(): expected a non-empty list of Tensors",
        ));
    }
    // PyTorch still skips legacy empty 1-D tensors of shape [0].
    let parts: Vec<&Tensor> = tensors
        .iter()
        .filter(|t| !(t.ndim() == 1 && t.numel() == 0))
        .collect();
    if parts.is_empty() {
        return super::clone(&tensors[0]);
    }
    let first = parts[0].shape();
    if first.is_empty() {
        return Err(Error::runtime(
            "zero-dimensional tensor (at position 0) cannot be concatenated",
        ));
    }
    let d = wrap_dim(dim, first.len())?;
    let mut dt = parts[0].dtype();
    let mut total = 0usize;
    for (i, t) in parts.iter().enumerate() {
        let s = t.shape();
        if s.len() != first.len() {
            return Err(Error::runtime(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                first.len(),
                s.len()
            )));
        }
        for k in 0..s.len() {
            if k != d && s[k] != first[k] {
                return Err(Error::runtime(format!(
                    "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                    first[k], s[k]
                )));
            }
        }
        total += s[d];
        dt = dt.promote(t.dtype());
    }
    let mut out_shape = first.clone();
    out_shape[d] = total;
    let mut offsets = Vec::with_capacity(parts.len());
    let mut off = 0usize;
    for t in &parts {
        let n = t.shape()[d];
        offsets.push((off, n));
        off += n;
    }
    let srcs: Vec<Tensor> = parts
        .iter()
        .map(|t| {
            if t.dtype() == dt {
                (*t).clone()
            } else {
                cast_data(t, dt)
            }
        })
        .collect();
    let ostrides = crate::tensor::contiguous_strides(&out_shape);
    let total = crate::tensor::numel(&out_shape);
    let out = crate::dispatch!(dt, T => {
        let data: Vec<T> = crate::kernels::build_vec(total, |buf| {
            let base = buf.as_mut_ptr().cast::<T>();
            for (src, &(off, n)) in srcs.iter().zip(&offsets) {
                if n == 0 {
                    continue;
                }
                // Straight from each part's memory (any strides) into its
                // block of the result: no contiguous copy in between.
                let sv = src.view();
                let sst: SmallVec<[isize; 6]> = sv.strides.iter().map(|&x| x as isize).collect();
                // SAFETY: the block `[off, off + n)` along `d` lies inside the
                // fresh result, and the blocks together cover all of it.
                unsafe {
                    crate::kernels::copy::copy_box::<T>(
                        base.add(off * ostrides[d]),
                        &ostrides,
                        sv.ptr::<T>(),
                        &sst,
                        &sv.shape,
                    )
                };
            }
        });
        Tensor::from_vec(data, out_shape.clone())
    });
    let inputs: Vec<&Tensor> = parts.to_vec();
    if needs_record(&inputs) {
        record("CatBackward0", &inputs, &out, saved![], move |c| {
            let g = c.grad()?;
            let mut grads: crate::autograd::Grads = SmallVec::new();
            for (i, &(off, n)) in offsets.iter().enumerate() {
                grads.push(if c.needs(i) {
                    Some(slice(
                        g,
                        d as i64,
                        Some(off as i64),
                        Some((off + n) as i64),
                        1,
                    )?)
                } else {
                    None
                });
            }
            Ok(grads)
        });
    }
    Ok(out)
}

/// `stack(tensors, dim)`: a new dimension; all shapes must be equal.
pub(crate) fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let first = tensors
        .first()
        .ok_or_else(|| Error::runtime("stack expects a non-empty TensorList"))?
        .shape();
    for (i, t) in tensors.iter().enumerate() {
        let s = t.shape();
        if s != first {
            return Err(Error::runtime(format!(
                "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
                fmt_shape(&first),
                fmt_shape(&s)
            )));
        }
    }
    let d = wrap_dim(dim, first.len() + 1)?;
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| unsqueeze(t, d as i64))
            .collect::<Result<_>>()?;
        cat(&parts, d as i64)?
    };
    let inputs: Vec<&Tensor> = tensors.iter().collect();
    if needs_record(&inputs) {
        let n = tensors.len();
        record("StackBackward0", &inputs, &out, saved![], move |c| {
            let g = c.grad()?;
            (0..n)
                .map(|i| {
                    c.needs(i)
                        .then(|| select(g, d as i64, i as i64))
                        .transpose()
                })
                .collect()
        });
    }
    Ok(out)
}

/// The pieces `split`, `chunk` and `unbind` return: views of `t` along
/// dimension `d`, one per entry of `sizes` (with `drop`, each of size 1 and
/// without that dimension). As in PyTorch they are the outputs of one node,
/// `name`, whose backward joins the pieces' gradients (zeros for a piece
/// that got none), and may not be written in place (see
/// `CreationMeta::MultiOutput`).
/// Refuses a count of pieces that could never be made (a huge empty
/// dimension split in ones), before anything as long is built: each piece
/// is a tensor object of a few hundred bytes.
fn probe_pieces(count: usize) {
    crate::error::probe_alloc::<[u64; 32]>(count);
}

fn multi_output_views(
    t: &Tensor,
    d: usize,
    sizes: &[usize],
    drop: bool,
    name: &'static str,
) -> Vec<Tensor> {
    let v = t.view().clone();
    let mut start = 0usize;
    probe_pieces(sizes.len());
    let mut pieces: Vec<Tensor> = crate::error::alloc_vec(sizes.len());
    pieces.extend(sizes.iter().map(|&n| {
        let mut shape = v.shape.clone();
        let mut strides = v.strides.clone();
        // An empty piece keeps the base's offset, as an empty slice does.
        let offset = v.offset + if n > 0 { start * strides[d] } else { 0 };
        if drop {
            shape.remove(d);
            strides.remove(d);
        } else {
            shape[d] = n;
        }
        start += n;
        let view = View {
            storage: v.storage.clone(),
            shape,
            strides,
            offset,
        };
        crate::ops::inplace::install_view_refresh();
        Tensor::new_multi_output_view(view, t)
    }));
    if !pieces.is_empty() && needs_record(&[t]) {
        record_multi(name, &[t], &pieces, saved![], move |c| {
            let grads = c
                .grads
                .iter()
                .zip(c.node.outputs.iter())
                .map(|(g, meta)| match g {
                    Some(g) => g.clone(),
                    None => Tensor::zeros(meta.shape.clone(), meta.dtype),
                })
                .collect::<Vec<_>>();
            Ok(smallvec![Some(if drop {
                stack(&grads, d as i64)?
            } else {
                cat(&grads, d as i64)?
            })])
        });
    }
    pieces
}

/// `split(t, sizes, dim)` with explicit section sizes (views).
pub(crate) fn split_with_sizes(t: &Tensor, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    let shape = t.shape();
    if shape.is_empty() {
        return Err(Error::runtime(
            "split expects at least a 1-dimensional tensor",
        ));
    }
    let d = wrap_dim(dim, shape.len())?;
    let n = shape[d] as i64;
    if sizes.iter().any(|&s| s < 0) || sizes.iter().sum::<i64>() != n {
        let parts: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
        return Err(Error::runtime(format!(
            "split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), but got split_sizes=[{}]",
            parts.join(", ")
        )));
    }
    let sizes: Vec<usize> = sizes.iter().map(|&s| s as usize).collect();
    Ok(multi_output_views(
        t,
        d,
        &sizes,
        false,
        "SplitWithSizesBackward0",
    ))
}

/// `split(t, size, dim)`: pieces of `size` (the last may be shorter).
pub(crate) fn split(t: &Tensor, size: i64, dim: i64) -> Result<Vec<Tensor>> {
    let shape = t.shape();
    if shape.is_empty() {
        return Err(Error::runtime(
            "split expects at least a 1-dimensional tensor",
        ));
    }
    if size < 0 {
        return Err(Error::runtime(format!(
            "split expects split_size be non-negative, but got split_size={size}"
        )));
    }
    let d = wrap_dim(dim, shape.len())?;
    let n = shape[d];
    let sizes: Vec<usize> = if size == 0 {
        if n != 0 {
            return Err(Error::runtime(format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )));
        }
        vec![0]
    } else {
        let size = size as usize;
        let count = n.div_ceil(size).max(1);
        probe_pieces(count);
        let mut sizes = crate::error::alloc_vec(count);
        sizes.extend((0..count).map(|i| size.min(n - i * size)));
        sizes
    };
    Ok(multi_output_views(t, d, &sizes, false, "SplitBackward0"))
}

/// `chunk(t, chunks, dim)`: at most `chunks` pieces of equal size but the last.
pub(crate) fn chunk(t: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    if chunks <= 0 {
        return Err(Error::runtime(format!(
            "chunk expects `chunks` to be greater than 0, got: {chunks}"
        )));
    }
    let shape = t.shape();
    if shape.is_empty() {
        return Err(Error::runtime(
            "chunk expects at least a 1-dimensional tensor",
        ));
    }
    let d = wrap_dim(dim, shape.len())?;
    let n = shape[d] as i64;
    let size = (n + chunks - 1) / chunks;
    if size == 0 {
        // An empty dimension still yields `chunks` empty pieces (PyTorch
        // goes through `split_with_sizes` for that).
        probe_pieces(chunks as usize);
        let sizes = crate::error::filled_vec(chunks as usize, 0usize);
        return Ok(multi_output_views(
            t,
            d,
            &sizes,
            false,
            "SplitWithSizesBackward0",
        ));
    }
    split(t, size, d as i64)
}

/// `unbind(t, dim)`: one view per position along `dim`, without that dimension.
pub(crate) fn unbind(t: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let shape = t.shape();
    if shape.is_empty() {
        return Err(Error::index(
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let d = wrap_dim(dim, shape.len())?;
    probe_pieces(shape[d]);
    let sizes = crate::error::filled_vec(shape[d], 1usize);
    Ok(multi_output_views(t, d, &sizes, true, "UnbindBackward0"))
}

/// `narrow(t, dim, start, length)` (a view).
pub(crate) fn narrow(t: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let shape = t.shape();
    if shape.is_empty() {
        return Err(Error::runtime(
            "narrow() cannot be applied to a 0-dim tensor.",
        ));
    }
    let d = wrap_dim(dim, shape.len())?;
    let n = shape[d] as i64;
    let s = if start < 0 { start + n } else { start };
    if s < 0 || s > n {
        return Err(Error::index(format!(
            "start out of range (expected to be in range of [{}, {n}], but got {start})",
            -n
        )));
    }
    if length < 0 || s + length > n {
        return Err(Error::runtime(format!(
            "start ({s}) + length ({length}) exceeds dimension size ({n})."
        )));
    }
    slice(t, d as i64, Some(s), Some(s + length), 1)
}

/// `flip(t, dims)`: a copy with the listed dimensions reversed.
pub(crate) fn flip(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let shape = t.shape();
    let mut mask: SmallVec<[bool; 4]> = SmallVec::from_elem(false, shape.len());
    for &d in dims {
        let d = wrap_dim(d, shape.len())?;
        if shape.is_empty() {
            continue;
        }
        if mask[d] {
            return Err(Error::runtime(format!(
                "dim {d} appears multiple times in the list of dims"
            )));
        }
        mask[d] = true;
    }
    let out = {
        let v = t.view();
        // Laid out as the input is (PyTorch's rule for a fresh result): a
        // transposed input is flipped over its memory in order.
        match crate::kernels::elementwise::permuted([&v], &shape, &[0]) {
            Some(([p], _, strides)) => {
                let order = crate::kernels::elementwise::result_order(&shape, &[&v.strides]);
                let pmask: SmallVec<[bool; 4]> = order.iter().map(|&d| mask[d]).collect();
                crate::dispatch!(v.dtype(), T => super::layout::laid_out(
                    crate::kernels::index::flip_copy::<T>(&p, &pmask),
                    shape.clone(),
                    strides,
                ))
            }
            None => {
                crate::dispatch!(v.dtype(), T => Tensor::from_vec(crate::kernels::index::flip_copy::<T>(&v, &mask), shape.clone()))
            }
        }
    };
    if needs_record(&[t]) {
        let dims = dims.to_vec();
        record("FlipBackward0", &[t], &out, saved![], move |c| {
            Ok(smallvec![Some(flip(c.grad()?, &dims)?)])
        });
    }
    Ok(out)
}

/// `repeat(t, sizes)`: tiles through a broadcast view (so the gradient is a
/// sum over the copies, which `expand`'s rule already does).
pub(crate) fn repeat(t: &Tensor, reps: &[i64]) -> Result<Tensor> {
    let shape = t.shape();
    if reps.len() < shape.len() {
        return Err(Error::runtime(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        ));
    }
    if let Some(r) = reps.iter().find(|&&r| r < 0) {
        return Err(Error::runtime(format!(
            "Trying to create tensor with negative dimension {r}: {reps:?}"
        )));
    }
    let lead = reps.len() - shape.len();
    let padded: Shape = std::iter::repeat_n(1, lead)
        .chain(shape.iter().copied())
        .collect();
    // [s0, s1] -> [1, s0, 1, s1] -> [r0, s0, r1, s1] -> [r0*s0, r1*s1]
    let mut inter: Shape = SmallVec::new();
    let mut tiled: Shape = SmallVec::new();
    let mut target: Shape = SmallVec::new();
    for (&r, &s) in reps.iter().zip(&padded) {
        inter.extend_from_slice(&[1, s]);
        tiled.extend_from_slice(&[r as usize, s]);
        let n = (r as usize)
            .checked_mul(s)
            .filter(|&n| n <= i64::MAX as usize);
        target.push(n.ok_or_else(|| {
            Error::runtime(format!(
                "Storage size calculation overflowed with sizes={reps:?}"
            ))
        })?);
    }
    crate::tensor::checked_storage_numel(&target, t.dtype().size())?;
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let x = reshape(t, &inter)?;
        let x = expand(&x, &tiled)?;
        super::contiguous(&reshape(&x, &target)?)?
    };
    if needs_record(&[t]) {
        // Each element was copied once per tile: sum the tiles back.
        let tile_dims: SmallVec<[i64; 4]> = (0..reps.len()).map(|k| 2 * k as i64).collect();
        record("RepeatBackward0", &[t], &out, saved![], move |c| {
            let g = reshape(c.grad()?, &tiled)?;
            let g = super::sum(&g, Some(&tile_dims), false)?;
            Ok(smallvec![Some(reshape(&g, &shape)?)])
        });
    }
    Ok(out)
}

/// `flatten(t, start_dim, end_dim)`: merges dimensions `start..=end` into
/// one (a 0-d tensor becomes shape `[1]`); a view when `reshape` can be one.
pub(crate) fn flatten(t: &Tensor, start: i64, end: i64) -> Result<Tensor> {
    let shape = t.shape();
    if shape.is_empty() {
        return reshape(t, &[1]);
    }
    let (s, e) = (wrap_dim(start, shape.len())?, wrap_dim(end, shape.len())?);
    if s > e {
        return Err(Error::runtime(
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ));
    }
    let mut new: Vec<usize> = shape[..s].to_vec();
    new.push(shape[s..=e].iter().product());
    new.extend_from_slice(&shape[e + 1..]);
    reshape(t, &new)
}

/// `unflatten(t, dim, sizes)`: splits one dimension into several (one may be -1).
pub(crate) fn unflatten(t: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    let shape = t.shape();
    if shape.is_empty() {
        return Err(Error::runtime(
            "unflatten: Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let d = wrap_dim(dim, shape.len())?;
    if sizes.is_empty() {
        return Err(Error::runtime("unflatten: sizes must be non-empty"));
    }
    let inner = crate::tensor::infer_shape(sizes, shape[d]).map_err(|_| {
        Error::runtime(format!(
            "unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {dim} ({}) in the input tensor",
            shape[d]
        ))
    })?;
    let mut new: SmallVec<[i64; 6]> = shape[..d].iter().map(|&s| s as i64).collect();
    new.extend(inner.iter().map(|&s| s as i64));
    new.extend(shape[d + 1..].iter().map(|&s| s as i64));
    reshape_i(t, &new)
}

/// `movedim(t, source, destination)` for single dimensions.
pub(crate) fn movedim(t: &Tensor, src: i64, dst: i64) -> Result<Tensor> {
    let n = t.ndim();
    let (s, d) = (wrap_dim(src, n)?, wrap_dim(dst, n)?);
    if n == 0 {
        return Ok(super::alias_of(t));
    }
    let mut order: SmallVec<[i64; 4]> = (0..n as i64).filter(|&k| k != s as i64).collect();
    order.insert(d, s as i64);
    super::permute(t, &order)
}

/// `cumsum(t, dim)`; bool and integer inputs sum in int64. The gradient is
/// the reversed cumulative sum of the incoming gradient.
pub(crate) fn cumsum(t: &Tensor, dim: i64) -> Result<Tensor> {
    let shape = t.shape();
    let d = wrap_dim(dim, shape.len())?;
    // float16/bfloat16 accumulate in float32, each prefix rounded once.
    let src = if t.dtype().is_float() {
        cast_data(t, t.dtype().compute())
    } else {
        cast_data(t, DType::I64)
    };
    let inner: usize = shape.iter().skip(d + 1).product();
    let out = if shape.is_empty() {
        super::clone_data(&src)
    } else if inner == 1 && src.is_contiguous() && src.numel() > 0 {
        // Along the last dimension of a contiguous tensor: the rows are
        // scanned in place of a transposed copy (and the copy back).
        let v = src.view();
        let (rows, n) = (shape[..d].iter().product(), shape[d]);
        crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            Tensor::from_vec(crate::kernels::scan::cumsum_rows(data, rows, n, false), shape.clone())
        })
    } else if inner > 1 && src.is_contiguous() {
        // A leading dimension: whole rows added down it, no transposes.
        let v = src.view();
        let (outer, n) = (shape[..d].iter().product(), shape[d]);
        crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            Tensor::from_vec(crate::kernels::scan::scan_mid(data, outer, n, inner, false), shape.clone())
        })
    } else {
        let mut mask: SmallVec<[bool; 4]> = SmallVec::from_elem(false, shape.len());
        mask[d] = true;
        let (rows_t, rows, cols) = super::reduce::rows_of(&src, &mask)?;
        let v = rows_t.view();
        // Rows hold `dim` last; move it back into place.
        let mut moved = shape.clone();
        let n = moved.remove(d);
        moved.push(n);
        let scanned = crate::dispatch!(v.dtype(), T => {
            let data = v.as_slice::<T>().unwrap_or(&[]);
            let r: Vec<T> = crate::kernels::scan::scan_rows(data, rows, cols, |a, b| {
                let mut acc = <T as crate::tensor::Element>::zero();
                for (x, y) in a.iter().zip(b.iter_mut()) {
                    acc = crate::tensor::Arith::add(acc, *x);
                    *y = acc;
                }
            });
            Tensor::from_vec(r, moved)
        });
        let _g = crate::autograd::GradModeGuard::new(false);
        super::clone_data(&movedim(&scanned, -1, d as i64)?)
    };
    let out = if t.dtype().is_low_precision() {
        super::back_to(out, t.dtype())
    } else {
        out
    };
    if needs_record(&[t]) {
        record("CumsumBackward0", &[t], &out, saved![], move |c| {
            let g = c.grad()?;
            if let Some(r) = reversed_cumsum(g, d) {
                return Ok(smallvec![Some(r)]);
            }
            let dd = [d as i64];
            Ok(smallvec![Some(flip(
                &cumsum(&flip(g, &dd)?, d as i64)?,
                &dd
            )?)])
        });
    }
    Ok(out)
}

/// `flip(cumsum(flip(g, d), d), d)` in one reversed scan (the same
/// additions in the same order), for a float32/float64 gradient when
/// nothing records the backward; `None` otherwise.
fn reversed_cumsum(g: &Tensor, d: usize) -> Option<Tensor> {
    if crate::autograd::is_grad_enabled()
        || !matches!(g.dtype(), DType::F32 | DType::F64)
        || g.ndim() == 0
        || g.numel() == 0
    {
        return None;
    }
    // An expanded gradient (from a sum) is made dense once.
    let g = if g.is_contiguous() {
        g.clone()
    } else {
        super::clone_data(g)
    };
    let shape = g.shape();
    let (outer, n): (usize, usize) = (shape[..d].iter().product(), shape[d]);
    let inner: usize = shape[d + 1..].iter().product();
    let v = g.view();
    Some(crate::dispatch_float!(v.dtype(), T => {
        let data = v.as_slice::<T>()?;
        let r = if inner == 1 {
            crate::kernels::scan::cumsum_rows(data, outer, n, true)
        } else {
            crate::kernels::scan::scan_mid(data, outer, n, inner, true)
        };
        Tensor::from_vec(r, shape.clone())
    }))
}

/// The shape `broadcast_to`/`expand` aim at, with `-1` keeping a size.
pub(crate) fn resolve_expand_shape(cur: &[usize], sizes: &[i64]) -> Result<Shape> {
    if sizes.len() < cur.len() {
        return Err(Error::runtime(format!(
            "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            sizes.len(),
            cur.len()
        )));
    }
    let lead = sizes.len() - cur.len();
    sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            if s == -1 {
                if i < lead {
                    Err(Error::runtime(format!(
                        "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                    )))
                } else {
                    Ok(cur[i - lead])
                }
            } else if s < 0 {
                Err(Error::runtime(format!("invalid shape dimension {s}")))
            } else {
                Ok(s as usize)
            }
        })
        .collect()
}

/// `broadcast_to(t, sizes)` / `expand(*sizes)`.
pub(crate) fn broadcast_to(t: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let shape = resolve_expand_shape(&t.shape(), sizes)?;
    super::expand_view(t, &shape)
}

/// `roll(t, shifts, dims)` along the given dimensions (already checked to
/// pair up; a dimension listed twice rolls by the sum). The result is built
/// from at most two blocks per rolled dimension, each one strided copy
/// straight from `t`'s memory; the gradient rolls back (`RollBackward0`).
pub(crate) fn roll(t: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    let shape = t.shape();
    let nd = shape.len();
    let mut by: SmallVec<[i64; 4]> = SmallVec::from_elem(0, nd);
    for (&s, &d) in shifts.iter().zip(dims) {
        let d = wrap_dim(d, nd)?;
        if d < nd {
            by[d] = by[d].wrapping_add(s);
        }
    }
    let v = t.view().clone();
    let dst_st = crate::tensor::contiguous_strides(&shape);
    // Per dimension: (source start, destination start, length) of each block.
    let segs: Vec<SmallVec<[(usize, usize, usize); 2]>> = (0..nd)
        .map(|d| {
            let n = shape[d];
            let s = if n == 0 {
                0
            } else {
                by[d].rem_euclid(n as i64) as usize
            };
            if s == 0 {
                smallvec![(0, 0, n)]
            } else {
                smallvec![(n - s, 0, s), (0, s, n - s)]
            }
        })
        .collect();
    let sst: SmallVec<[isize; 6]> = v.strides.iter().map(|&x| x as isize).collect();
    let total = crate::tensor::numel(&shape);
    let out = crate::dispatch!(v.dtype(), T => {
        let data: Vec<T> = crate::kernels::build_vec(total, |buf| {
            let base = buf.as_mut_ptr().cast::<T>();
            let mut pick: SmallVec<[usize; 6]> = SmallVec::from_elem(0, nd);
            loop {
                let (mut so, mut dof) = (v.offset, 0usize);
                let mut len: SmallVec<[usize; 6]> = SmallVec::new();
                for d in 0..nd {
                    let (s0, d0, l) = segs[d][pick[d]];
                    so += s0 * v.strides[d];
                    dof += d0 * dst_st[d];
                    len.push(l);
                }
                // SAFETY: each block lies inside both tensors, and the blocks
                // tile the result exactly once.
                unsafe {
                    crate::kernels::copy::copy_box::<T>(
                        base.add(dof),
                        &dst_st,
                        v.storage.typed_ptr::<T>().wrapping_add(so),
                        &sst,
                        &len,
                    )
                };
                // Next combination of blocks.
                let mut d = nd;
                loop {
                    if d == 0 {
                        return;
                    }
                    d -= 1;
                    pick[d] += 1;
                    if pick[d] < segs[d].len() {
                        break;
                    }
                    pick[d] = 0;
                }
            }
        });
        Tensor::from_vec(data, shape.clone())
    });
    if needs_record(&[t]) {
        let back: SmallVec<[i64; 4]> = shifts.iter().map(|&s| s.wrapping_neg()).collect();
        let dims: SmallVec<[i64; 4]> = dims.into();
        record("RollBackward0", &[t], &out, saved![], move |c| {
            Ok(smallvec![Some(roll(c.grad()?, &back, &dims)?)])
        });
    }
    Ok(out)
}

/// `tril(t, diagonal)` (or `triu` with `lower = false`): the last two
/// dimensions' lower (upper) triangle from the `diagonal`-th diagonal, the
/// rest zeros. One pass: each row is a copy of its kept run and a fill of
/// zeros. The gradient is the same triangle of the gradient.
pub(crate) fn tril(t: &Tensor, diagonal: i64, lower: bool) -> Result<Tensor> {
    let shape = t.shape();
    let nd = shape.len();
    if nd < 2 {
        let name = if lower { "tril" } else { "triu" };
        return Err(Error::runtime(format!(
            "{name}: input tensor must have at least 2 dimensions"
        )));
    }
    let (r, c) = (shape[nd - 2], shape[nd - 1]);
    let rows = crate::tensor::numel(&shape) / c.max(1);
    // Columns `[0, keep)` of row `row` are kept by tril, `[keep, c)` by triu.
    let keep = move |row: usize| {
        let i = (row % r.max(1)) as i64;
        let edge = if lower {
            i + diagonal + 1
        } else {
            i + diagonal
        };
        edge.clamp(0, c as i64) as usize
    };
    if t.is_contiguous() {
        if let Some(v) = super::inplace::claim_map_target(t) {
            // In place (`x.tril_()`, see `apply_inplace_map`): only the
            // other triangle is written, with zeros.
            crate::dispatch!(v.dtype(), T => {
                let o = crate::kernels::SendPtr(v.ptr::<T>());
                crate::kernels::copy::par_units(rows, c, |lo, hi| {
                    for row in lo..hi {
                        // SAFETY: row `row` of the contiguous destination
                        // belongs to this unit.
                        let d = unsafe { std::slice::from_raw_parts_mut(o.get().add(row * c), c) };
                        let k = keep(row);
                        if lower {
                            d[k..].fill(T::zero());
                        } else {
                            d[..k].fill(T::zero());
                        }
                    }
                });
            });
            return Ok(t.clone());
        }
    }
    let src = t.contiguous_data();
    let v = src.view();
    let out = crate::dispatch!(v.dtype(), T => {
        let data = v.as_slice::<T>().unwrap_or(&[]);
        let res: Vec<T> = crate::kernels::build_vec(data.len(), |buf| {
            let o = crate::kernels::SendPtr(buf.as_mut_ptr().cast::<T>());
            crate::kernels::copy::par_units(rows, c, |lo, hi| {
                for row in lo..hi {
                    let keep = keep(row);
                    let (s, d) = (&data[row * c..(row + 1) * c], unsafe {
                        // SAFETY: row `row` of the result belongs to this unit.
                        std::slice::from_raw_parts_mut(o.get().add(row * c), c)
                    });
                    if lower {
                        d[..keep].copy_from_slice(&s[..keep]);
                        d[keep..].fill(T::zero());
                    } else {
                        d[..keep].fill(T::zero());
                        d[keep..].copy_from_slice(&s[keep..]);
                    }
                }
            });
        });
        Tensor::from_vec(res, shape.clone())
    });
    if needs_record(&[t]) {
        let name = if lower {
            "TrilBackward0"
        } else {
            "TriuBackward0"
        };
        record(name, &[t], &out, saved![], move |c| {
            Ok(smallvec![Some(tril(c.grad()?, diagonal, lower)?)])
        });
    }
    Ok(out)
}
