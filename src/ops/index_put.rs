//! `index_put`: values written (or added) at the positions an index key
//! picks, the one implementation behind `torch.index_put`, `index_put_` and
//! `t[key] = value` with index tensors in the key.
//!
//! The key is split as for reading (`gather::split_key`): its basic part
//! (ints, slices, `None`, `...`) is a view of the destination, its advanced
//! part a list of element offsets into that view. The write then visits only
//! the picked elements, in the order of the broadcast index shape (so a
//! repeated position keeps its last value, or, accumulating, adds every one
//! in order): its cost follows the values written, not the destination's
//! size. Recorded as `IndexPutBackward0`, whose rules are themselves an
//! `index_put` (of zeros) and an index, so gradients of any order follow.

use std::sync::Arc;

use smallvec::{smallvec, SmallVec};

use super::gather::{plan_advanced, split_key, IndexItem};
use super::{expand, permute};
use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{broadcast_shapes, fmt_shape, Arith, DType, Shape, Tensor};

/// Where the elements of `dst[key]` live in `dst`'s memory.
struct Picks {
    /// Storage offset (in elements) of each pick, in row-major order of
    /// `bshape`; the dimensions the key leaves run from there.
    at: Vec<usize>,
    /// The broadcast shape of the index tensors.
    bshape: Shape,
    /// Sizes and strides of the dimensions the key leaves, in order.
    rest_shape: Shape,
    rest_strides: SmallVec<[usize; 4]>,
    /// How many of those come before the broadcast dimensions in
    /// `dst[key]`'s shape (NumPy's rule: the advanced dimensions stay in
    /// place when they are adjacent, else they go first).
    before: usize,
}

impl Picks {
    /// `dst[key]`'s shape.
    fn result_shape(&self) -> Shape {
        let mut s: Shape = self.rest_shape[..self.before].iter().copied().collect();
        s.extend(self.bshape.iter().copied());
        s.extend(self.rest_shape[self.before..].iter().copied());
        s
    }
}

/// The picks of `key` in `dst`, or `None` when the key has no index tensor
/// (basic indexing, written through a view instead).
fn picks(dst: &Tensor, key: &[IndexItem]) -> Result<Option<Picks>> {
    let _g = GradModeGuard::new(false);
    let (view, adv) = split_key(&dst.detach(), key)?;
    if adv.is_empty() {
        return Ok(None);
    }
    let v = view.view();
    let plan = plan_advanced(&v.shape, &adv)?;
    // Offsets of the advanced dimensions taken together, from the row-major
    // position `lin` over them: the last dimension varies fastest.
    let sizes: SmallVec<[usize; 4]> = plan.dims.iter().map(|&d| v.shape[d]).collect();
    let strides: SmallVec<[usize; 4]> = plan.dims.iter().map(|&d| v.strides[d]).collect();
    // Dimensions laid out one inside the other (a mask over contiguous
    // dimensions, a single index) take the position times one stride.
    let nested = (1..sizes.len()).all(|k| strides[k - 1] == sizes[k] * strides[k]);
    let at = if nested {
        let step = strides.last().copied().unwrap_or(0);
        plan.lin
            .iter()
            .map(|&l| v.offset + l as usize * step)
            .collect()
    } else {
        plan.lin
            .iter()
            .map(|&l| {
                let mut l = l as usize;
                let mut off = v.offset;
                for k in (0..sizes.len()).rev() {
                    off += (l % sizes[k]) * strides[k];
                    l /= sizes[k];
                }
                off
            })
            .collect()
    };
    let rest: SmallVec<[usize; 4]> = (0..v.shape.len())
        .filter(|d| !plan.dims.contains(d))
        .collect();
    let first = plan.dims[0];
    let adjacent = plan.dims.windows(2).all(|w| w[1] == w[0] + 1);
    Ok(Some(Picks {
        at,
        bshape: plan.bshape.clone(),
        rest_shape: rest.iter().map(|&d| v.shape[d]).collect(),
        rest_strides: rest.iter().map(|&d| v.strides[d]).collect(),
        before: if adjacent { first } else { 0 },
    }))
}

/// The error PyTorch gives for a value of another dtype.
fn dtype_mismatch(dst: &Tensor, value: &Tensor) -> Error {
    Error::runtime(format!(
        "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
        dst.dtype().scalar_name(),
        value.dtype().scalar_name()
    ))
}

/// `value` broadcast to `dst[key]`'s shape and arranged as the write visits
/// it: the broadcast index dimensions first, then the others in order. A
/// view (broadcast dimensions have stride 0); copied only when it shares
/// memory with `dst`, which the write would otherwise read after changing.
fn arranged_value(p: &Picks, dst: &Tensor, value: &Tensor) -> Result<Tensor> {
    let shape = p.result_shape();
    let vs = value.shape();
    if broadcast_shapes(&vs, &shape)
        .map(|b| b != shape)
        .unwrap_or(true)
    {
        return Err(Error::runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(&vs),
            fmt_shape(&shape)
        )));
    }
    let _g = GradModeGuard::new(false);
    let mut v = expand(&value.detach(), &shape)?;
    if p.before > 0 {
        let nb = p.bshape.len();
        let perm: SmallVec<[i64; 4]> = (p.before..p.before + nb)
            .chain(0..p.before)
            .chain(p.before + nb..shape.len())
            .map(|d| d as i64)
            .collect();
        v = permute(&v, &perm)?;
    }
    if std::sync::Arc::ptr_eq(&v.view().storage, &dst.view().storage) {
        v = super::clone_data(&v);
    }
    Ok(v)
}

/// Writes (or adds) the arranged `value` at `p`'s picks of `dst`'s memory.
fn write_picks(dst: &Tensor, p: &Picks, value: &Tensor, accumulate: bool) {
    let dv = dst.view();
    let vv = value.view();
    let nbd = p.bshape.len();
    let (vb_strides, vr_strides) = vv.strides.split_at(nbd);
    let rest: usize = p.rest_shape.iter().product();
    if rest == 0 || p.at.is_empty() {
        return;
    }
    crate::dispatch!(dv.dtype(), T => {
        let base = dv.storage.typed_ptr::<T>();
        let src = vv.ptr::<T>() as *const T;
        // The value's offset of each pick (its index dimensions, row-major).
        let vb: Vec<usize> = if nbd == 1 {
            (0..p.at.len()).map(|b| b * vb_strides[0]).collect()
        } else {
            odometer(&p.bshape, vb_strides)
        };
        let rows_first = p.rest_strides.last().is_some_and(|&s| s != 1) && p.at.len() > 1;
        // SAFETY: every pick plus every offset of the dimensions left lies in
        // `dst`'s view (the plan checked the indices), the value's offsets in
        // its own view of the result shape; the value does not share `dst`'s
        // memory (`arranged_value`) and nothing else writes `dst` meanwhile.
        unsafe {
            if p.rest_shape.is_empty() {
                // One element per pick (a mask, or indices on every dimension).
                for (&at, &vo) in p.at.iter().zip(&vb) {
                    write_row::<T>(base.add(at), 1, src.add(vo), 1, 1, accumulate);
                }
            } else if rows_first {
                // The dimensions left are strided (`x[:, idx] = v`): visit the
                // picks inside each of their elements, so the writes stay close.
                let d_rest = odometer(&p.rest_shape, &p.rest_strides);
                let v_rest = odometer(&p.rest_shape, vr_strides);
                for (&dr, &vr) in d_rest.iter().zip(&v_rest) {
                    for (&at, &vo) in p.at.iter().zip(&vb) {
                        write_row::<T>(base.add(at + dr), 1, src.add(vo + vr), 1, 1, accumulate);
                    }
                }
            } else {
                // Rows of the last dimension left (contiguous in `dst` unless
                // there is one pick).
                let outer = p.rest_shape.len() - 1;
                let inner = p.rest_shape[outer];
                let d_rows = odometer(&p.rest_shape[..outer], &p.rest_strides[..outer]);
                let v_rows = odometer(&p.rest_shape[..outer], &vr_strides[..outer]);
                let (d_in, v_in) = (p.rest_strides[outer], vr_strides[outer]);
                for (&at, &vo) in p.at.iter().zip(&vb) {
                    for (&dr, &vr) in d_rows.iter().zip(&v_rows) {
                        write_row::<T>(base.add(at + dr), d_in, src.add(vo + vr), v_in, inner, accumulate);
                    }
                }
            }
        }
    });
    dv.storage.bump_version();
}

/// The offsets of every element of `shape` (row-major) under `strides`.
fn odometer(shape: &[usize], strides: &[usize]) -> Vec<usize> {
    let mut offs = vec![0usize];
    for (&n, &st) in shape.iter().zip(strides) {
        offs = offs
            .iter()
            .flat_map(|&o| (0..n).map(move |i| o + i * st))
            .collect();
    }
    offs
}

/// One row of `n` elements: `dst[i * ds] (+)= src[i * ss]`.
///
/// # Safety
/// Both rows must be in bounds; `dst` must not overlap `src`.
#[inline(always)]
unsafe fn write_row<T: Arith>(
    dst: *mut T,
    ds: usize,
    src: *const T,
    ss: usize,
    n: usize,
    add: bool,
) {
    if ds == 1 && ss == 1 {
        let d = std::slice::from_raw_parts_mut(dst, n);
        let s = std::slice::from_raw_parts(src, n);
        if add {
            for (d, &s) in d.iter_mut().zip(s) {
                *d = d.add(s);
            }
        } else {
            d.copy_from_slice(s);
        }
    } else if add {
        for i in 0..n {
            let d = dst.add(i * ds);
            *d = (*d).add(*src.add(i * ss));
        }
    } else {
        for i in 0..n {
            *dst.add(i * ds) = *src.add(i * ss);
        }
    }
}

/// A key that is one boolean mask of `dst`'s whole shape over a
/// contiguous `dst`, with a contiguous value of `dst`'s dtype holding one
/// element per true flag (or one for all), none of them sharing `dst`'s
/// memory: `x[mask] = value` then runs as one merge pass
/// (`kernels::index::masked_merge`). Returns the mask's flags as a
/// contiguous tensor, or None for any other case (then the general path
/// checks and writes).
fn mask_key(dst: &Tensor, key: &[IndexItem], value: &Tensor) -> Option<Tensor> {
    let [IndexItem::Tensor(mask)] = key else {
        return None;
    };
    let shape = dst.shape();
    if mask.dtype() != DType::Bool
        || mask.shape() != shape
        || shape.is_empty()
        || value.dtype() != dst.dtype()
        || value.ndim() > 1
        || !dst.is_contiguous()
        || !value.is_contiguous()
    {
        return None;
    }
    let (dv, vv) = (dst.view(), value.view());
    let flags = mask.contiguous_data();
    if Arc::ptr_eq(&dv.storage, &vv.storage) || Arc::ptr_eq(&dv.storage, &flags.view().storage) {
        return None;
    }
    let k: usize = {
        let fv = flags.view();
        fv.as_slice::<bool>()?.iter().map(|&f| f as usize).sum()
    };
    let vn = value.numel();
    ((vn == k && k > 0 && value.ndim() == 1) || vn == 1).then_some(flags)
}

/// `dst[mask] = value` for a key [`mask_key`] accepted: into a new tensor
/// (returned) with `new`, else in `dst`'s own memory.
fn masked_write(dst: &Tensor, flags: &Tensor, value: &Tensor, new: bool) -> Option<Tensor> {
    let (dv, fv, vv) = (dst.view(), flags.view(), value.view());
    let flags = fv.as_slice::<bool>()?;
    if dv.numel() != flags.len() || vv.numel() == 0 {
        return None;
    }
    crate::dispatch!(dv.dtype(), T => {
        let vals = vv.as_slice::<T>().unwrap_or(&[]);
        let x = dv.ptr::<T>() as *const T;
        // SAFETY: `dst` (and the new buffer, of its size) hold one element
        // per flag; `mask_key` checked the value's length against the true
        // flags and that neither the value nor the mask shares `dst`'s memory.
        if new {
            let out: Vec<T> = crate::kernels::build_vec(flags.len(), |o| unsafe {
                crate::kernels::index::masked_merge(flags, x, vals, o.as_mut_ptr().cast::<T>())
            });
            Some(Tensor::from_vec(out, dst.shape()))
        } else {
            unsafe { crate::kernels::index::masked_merge(flags, x, vals, dv.ptr::<T>()) };
            None
        }
    })
}

/// The key with its index tensors detached, for the backward rules.
fn detached_key(key: &[IndexItem]) -> Vec<IndexItem> {
    key.iter()
        .map(|i| match i {
            IndexItem::Tensor(x) => IndexItem::Tensor(x.detach()),
            other => other.clone(),
        })
        .collect()
}

/// Checks `value` against `dst` for a key with index tensors.
fn check_value(dst: &Tensor, value: &Tensor) -> Result<()> {
    if value.dtype() != dst.dtype() {
        return Err(dtype_mismatch(dst, value));
    }
    Ok(())
}

/// `index_put(input, key, value, accumulate)`: a copy of `input` (its layout
/// kept) with `value` written, or added, at `input[key]`. Recorded as
/// `IndexPutBackward0`: the input's gradient is the incoming one with the
/// written positions zeroed (passed whole when accumulating), the value's
/// the incoming one at those positions.
pub(crate) fn index_put(
    input: &Tensor,
    key: &[IndexItem],
    value: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    if !accumulate {
        if let Some(flags) = mask_key(input, key, value) {
            // Each element is taken from `input` or `value` in one pass,
            // with no copy of `input` to write over.
            if let Some(out) = masked_write(input, &flags, value, true) {
                record_index_put(input, key, value, &out, accumulate);
                return Ok(out);
            }
        }
    }
    let out = super::layout::clone_kept(&input.detach());
    match picks(&out, key)? {
        Some(p) => {
            check_value(input, value)?;
            let v = arranged_value(&p, &out, value)?;
            write_picks(&out, &p, &v, accumulate);
        }
        None => {
            // Only basic indexing: the write goes through a view.
            let _g = GradModeGuard::new(false);
            let target = super::index(&out, key)?;
            let v = if accumulate {
                super::add(&target, &value.detach())?
            } else {
                value.detach()
            };
            super::assign(&target, &v)?;
        }
    }
    record_index_put(input, key, value, &out, accumulate);
    Ok(out)
}

/// Records `IndexPutBackward0` for `out = index_put(input, key, value)`
/// when a gradient is wanted.
fn record_index_put(
    input: &Tensor,
    key: &[IndexItem],
    value: &Tensor,
    out: &Tensor,
    accumulate: bool,
) {
    if needs_record(&[input, value]) {
        let key = detached_key(key);
        record(
            "IndexPutBackward0",
            &[input, value],
            out,
            saved![],
            move |c| {
                let g = c.grad()?;
                let gi = match (c.needs(0), accumulate) {
                    (false, _) => None,
                    (true, true) => Some(g.clone()),
                    (true, false) => {
                        let zero = Tensor::scalar_of(0.0, g.dtype());
                        Some(index_put(g, &key, &zero, false)?)
                    }
                };
                // The engine sums a broadcast value's gradient to its shape.
                let gv = if c.needs(1) {
                    Some(super::index(g, &key)?)
                } else {
                    None
                };
                Ok(smallvec![gi, gv])
            },
        );
    }
}

/// `t[key] = value` (or `t.index_put_(key, value, accumulate)`) for a key
/// with index tensors, in `t`'s own memory. With nothing to record the
/// values go straight to the picked elements; otherwise `t` takes the
/// recorded out-of-place result, as every in-place op does.
pub(crate) fn index_put_(
    t: &Tensor,
    key: &[IndexItem],
    value: &Tensor,
    accumulate: bool,
) -> Result<()> {
    let direct = !needs_record(&[t, value]) && !crate::autograd::forward::any_tangent(&[t, value]);
    if direct {
        super::check_inplace(t)?;
        if !accumulate {
            if let Some(flags) = mask_key(t, key, value) {
                masked_write(t, &flags, value, false);
                t.view().storage.bump_version();
                return Ok(());
            }
        }
        if let Some(p) = picks(t, key)? {
            check_value(t, value)?;
            let v = arranged_value(&p, t, value)?;
            write_picks(t, &p, &v, accumulate);
            return Ok(());
        }
    }
    super::apply_inplace(t, || index_put(t, key, value, accumulate))
}
