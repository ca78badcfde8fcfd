//! In-place ops: the result is computed (and recorded) out of place, written
//! into the destination's memory, the shared version counter is bumped, and
//! the destination takes over the result's place in the graph.

use std::sync::Arc;

use smallvec::smallvec;

use super::strided::{
    as_strided_region, embed_region, read_region_of, region_of, zero_region, Region,
};
use super::{cast_data, category_of};
use crate::autograd::{current_seq, is_grad_enabled, record, Edge, NodeRef};
use crate::error::{Error, Result};
use crate::kernels::copy::scatter;
use crate::saved;
use crate::tensor::{fmt_shape, CreationMeta, DType, Element, Shape, Tensor};

const LEAF_MSG: &str = "a leaf Variable that requires grad is being used in an in-place operation.";
const LEAF_VIEW_MSG: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";
const NO_GRAD_VIEW_ADVICE: &str = "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

const MULTI_OUTPUT_ADVICE: &str = "This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";

/// The name PyTorch gives a node's forward op in messages (`Split` for
/// `SplitBackward0`).
fn forward_op_name(node: &str) -> String {
    node.replacen("Backward0", "", 1)
        .replacen("Backward", "", 1)
}

/// PyTorch's refusal to rebase a view that is not an ordinary one (see
/// `CreationMeta`) onto new history: it is being written in place in grad
/// mode, or (`indirect`) its base or another view of it was written.
/// Gives the tensor layer what it needs to refresh a stale view; called
/// wherever `ops` makes a view of a base, before the view exists.
#[inline]
pub(crate) fn install_view_refresh() {
    crate::tensor::install_view_refresh(|| crate::tensor::ViewRefresh {
        rebase_error: view_rebase_error,
        regenerate: regenerate_view,
    });
}

pub(crate) fn view_rebase_error(t: &Tensor, indirect: bool) -> Error {
    let what = if indirect {
        "its base or another view of its base has been"
    } else {
        "is being"
    };
    let msg = match t.creation_meta() {
        CreationMeta::MultiOutput => {
            // Named after the view's own node, when it has one (a piece of a
            // tensor that did not require grad has none).
            let node = t.meta().grad_fn.clone();
            let head = match node {
                Some((n, nr)) => format!(
                    "Output {nr} of {} is a view and {what} modified inplace.",
                    forward_op_name(&n.name())
                ),
                None => format!(
                    "A view was created in no_grad mode and {what} modified inplace with grad mode enabled."
                ),
            };
            format!("{head} {MULTI_OUTPUT_ADVICE}")
        }
        CreationMeta::OfNoGradView(op) => format!(
            "Output 0 of {} is a view of a view which was created in no_grad mode and {what} modified inplace with grad mode enabled. {NO_GRAD_VIEW_ADVICE}",
            forward_op_name(op)
        ),
        _ => format!(
            "A view was created in no_grad mode and {what} modified inplace with grad mode enabled. {NO_GRAD_VIEW_ADVICE}"
        ),
    };
    Error::runtime(msg)
}

/// PyTorch's refusals: in grad mode, a leaf that requires grad (or a view of
/// one) may not be written in place, nor may a view taken under `no_grad()`
/// of a tensor that requires grad. Under `no_grad()` it may (optimizers).
pub(crate) fn check_inplace(t: &Tensor) -> Result<()> {
    if !is_grad_enabled() {
        return Ok(());
    }
    if t.requires_grad() && t.is_leaf() && !t.is_view() {
        return Err(Error::runtime(LEAF_MSG));
    }
    if let Some(base) = t.base() {
        if base.requires_grad() {
            if t.creation_meta() != CreationMeta::Default {
                return Err(view_rebase_error(t, false));
            }
            if base.is_leaf() {
                return Err(Error::runtime(LEAF_VIEW_MSG));
            }
        }
    }
    Ok(())
}

/// `t.op_(...)`: PyTorch's refusals, then `compute` (recorded as usual), then
/// the write into `t`. A node recorded by `compute` that saved `t` itself
/// keeps the values from before the write (see `keep_originals`).
pub(crate) fn apply_inplace(t: &Tensor, compute: impl FnOnce() -> Result<Tensor>) -> Result<()> {
    check_inplace(t)?;
    let mark = current_seq();
    let r = compute()?;
    commit_since(t, &r, Some(mark))
}

thread_local! {
    /// The destination of the [`apply_inplace_map`] under way on this thread.
    static MAP_TARGET: std::cell::RefCell<Option<Tensor>> = const { std::cell::RefCell::new(None) };
}

/// Restores the previous [`MAP_TARGET`] however the op ends.
struct MapTarget(Option<Tensor>);

impl Drop for MapTarget {
    fn drop(&mut self) {
        let prev = self.0.take();
        MAP_TARGET.with(|c| *c.borrow_mut() = prev);
    }
}

/// [`apply_inplace`] for an op whose result is one elementwise map of `t`
/// itself, its last step (`x.relu_()`, `x.clamp_(0, 1)`): with nothing to
/// record, that map writes straight into `t`'s memory (see
/// [`claim_map_target`]) instead of filling a new buffer that is then
/// copied back; at 4 MB the fresh pages and the copy cost twice the map.
/// A composition that reads `t` again after mapping it (`x - trunc(x)`)
/// must not come here: `tests/test_inplace_direct.py` checks every user
/// against its out-of-place form. `others` are the op's other inputs.
pub(crate) fn apply_inplace_map(
    t: &Tensor,
    others: &[&Tensor],
    compute: impl FnOnce() -> Result<Tensor>,
) -> Result<()> {
    let mut ins: smallvec::SmallVec<[&Tensor; 4]> = smallvec![t];
    ins.extend_from_slice(others);
    if crate::autograd::needs_record(&ins) || crate::autograd::forward::any_tangent(&ins) {
        return apply_inplace(t, compute);
    }
    check_inplace(t)?;
    let mark = current_seq();
    let prev = MAP_TARGET.with(|c| c.replace(Some(t.clone())));
    let _restore = MapTarget(prev);
    let r = compute()?;
    drop(_restore);
    // Another operand may still record (`x.lerp_(y, w)` with `w` requiring
    // grad): then the map was not claimed, and the op's nodes keep `t`'s old
    // values as `apply_inplace` has them keep.
    commit_since(t, &r, Some(mark))
}

/// Whether an [`apply_inplace_map`] is under way with its destination not
/// yet claimed: the cheap test before a claim's checks.
pub(crate) fn map_target_set() -> bool {
    MAP_TARGET.with(|c| c.borrow().is_some())
}

/// `a`'s memory as one dense run of its `numel` elements, to be mapped in
/// place, when `a` is (a handle to) the destination of the
/// [`apply_inplace_map`] under way; the destination is taken, so one map
/// per op writes it. None for anything else, or for memory with gaps or
/// overlaps (a slice, an expand), which the op then maps into a new buffer.
pub(crate) fn claim_map_target(a: &Tensor) -> Option<crate::tensor::View> {
    MAP_TARGET.with(|c| {
        let mut slot = c.borrow_mut();
        let same = {
            let (tv, av) = (slot.as_ref()?.view(), a.view());
            Arc::ptr_eq(&tv.storage, &av.storage)
                && tv.offset == av.offset
                && tv.shape == av.shape
                && tv.strides == av.strides
        };
        if !same {
            return None;
        }
        slot.take();
        let av = a.view();
        if av.is_contiguous() {
            let n = av.numel();
            return Some(crate::tensor::View {
                storage: av.storage.clone(),
                shape: smallvec![n],
                strides: smallvec![1],
                offset: av.offset,
            });
        }
        super::layout::memory_order(a).map(|(flat, ..)| flat.view().clone())
    })
}

/// Writes `result` into `t` and moves `t` onto `result`'s node.
pub(crate) fn commit_inplace(t: &Tensor, result: &Tensor) -> Result<()> {
    commit_since(t, result, None)
}

/// `commit_inplace`, where the nodes recorded after `mark` computed `result`
/// from `t` and may have saved `t`.
fn commit_since(t: &Tensor, result: &Tensor, mark: Option<u64>) -> Result<()> {
    check_inplace(t)?;
    let (ts, rs) = (t.shape(), result.shape());
    if ts != rs {
        return Err(Error::runtime(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_shape(&ts),
            fmt_shape(&rs)
        )));
    }
    let (td, rd) = (t.dtype(), result.dtype());
    if category_of(rd) > category_of(td) {
        return Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            rd.scalar_name(),
            td.scalar_name()
        )));
    }
    if crate::autograd::forward::is_active() {
        crate::autograd::forward::after_write(t, crate::autograd::forward::tangent(result))?;
    }
    let tracked = result.requires_grad() && is_grad_enabled();
    if tracked && t.creation_meta() != CreationMeta::Default {
        // Another operand requires grad (the base's own case is in `check_inplace`).
        return Err(view_rebase_error(t, false));
    }
    let nodes = match mark {
        Some(m) if tracked => nodes_since(result, m),
        _ => Vec::new(),
    };
    keep_originals(&nodes, t)?;
    if let Some(base) = t.base() {
        if is_grad_enabled() && (result.requires_grad() || base.requires_grad()) {
            commit_into_view(t, base, result)?;
            resave_outputs(&nodes, t, result);
            return Ok(());
        }
    }
    write_values(t, result);
    resave_outputs(&nodes, t, result);
    if tracked {
        match result.grad_fn() {
            Some((node, nr)) => t.set_grad_fn(node, nr),
            // The result is a leaf (`x.copy_(y)`): `t` now follows it.
            None => record("CopyBackwards", &[result], t, saved![], |c| {
                Ok(smallvec![Some(c.grad()?.clone())])
            }),
        }
    } else if is_grad_enabled() && t.requires_grad() && !t.is_leaf() {
        // The values no longer depend on the old history.
        t.detach_in_place();
    }
    Ok(())
}

/// The nodes recorded after `mark` that `result`'s history goes through:
/// those of the op being committed.
fn nodes_since(result: &Tensor, mark: u64) -> Vec<NodeRef> {
    let mut found: Vec<NodeRef> = Vec::new();
    let Some((root, _)) = result.grad_fn() else {
        return found;
    };
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.seq <= mark || found.iter().any(|m| m.ptr_eq(&n)) {
            continue;
        }
        for e in n.edges.iter() {
            if let Edge::Node(m, _) = e {
                stack.push(m.clone());
            }
        }
        found.push(n);
    }
    found
}

/// Before `t` is overwritten: the op's nodes that saved `t`'s memory (the
/// `self` of `v.mul_(y)`, needed for `y`'s gradient) get a copy of it taken
/// now, as PyTorch saves `self.clone()` then. The copy is recorded, so the
/// saved value still differentiates into `t`'s old history. Nothing is
/// copied when no node saved it (`v.mul_(2)`, or `y` not requiring grad).
fn keep_originals(nodes: &[NodeRef], t: &Tensor) -> Result<()> {
    if nodes.is_empty() {
        return Ok(());
    }
    let storage = t.storage();
    let mut copies: Vec<(Tensor, Tensor)> = Vec::new();
    for n in nodes {
        n.for_each_saved_mut(|s| {
            let d = s.data();
            if s.is_output() || !s.is_current() || !Arc::ptr_eq(&d.storage(), &storage) {
                return Ok(());
            }
            let copy = match copies.iter().find(|(o, _)| o.same(d)) {
                Some((_, c)) => c.clone(),
                None => {
                    let c = super::clone(d)?;
                    copies.push((d.clone(), c.clone()));
                    c
                }
            };
            s.replace(copy);
            Ok(())
        })?;
    }
    Ok(())
}

/// After the write: an output the op saved (`exp_` saves its result) now
/// lives in `t`, so the node keeps `t` rather than the temporary, as in
/// PyTorch (writing into `t` again makes that backward refuse).
fn resave_outputs(nodes: &[NodeRef], t: &Tensor, result: &Tensor) {
    let Some(n) = nodes.first() else {
        return;
    };
    if t.dtype() != result.dtype() {
        return;
    }
    let storage = result.storage();
    let _ = n.for_each_saved_mut(|s| {
        if s.is_output() && s.is_current() && Arc::ptr_eq(&s.data().storage(), &storage) {
            s.replace(t.clone());
        }
        Ok(())
    });
}

/// PyTorch's `CopySlices`: writes `result` into the view `v` of `base`, then
/// gives `base` a node with inputs (its old history, `result`) whose backward
/// sends the gradient outside the view's region to the old history and the
/// region itself to `result`; `v` becomes a view (`AsStridedBackward0`) of
/// `base`'s new history.
fn commit_into_view(v: &Tensor, base: &Tensor, result: &Tensor) -> Result<()> {
    let (region, base_shape) = {
        let (bv, vv) = (base.view(), v.view());
        (Arc::new(region_of(&bv, &vv)?), bv.shape.clone())
    };
    write_values(v, result);
    let r_dtype = result.dtype();
    let reg = region.clone();
    record("CopySlices", &[base, result], base, saved![], move |c| {
        let g = c.grad()?;
        let old = zero_region(g, &reg)?;
        let mut part = as_strided_region(g, &reg, "AsStridedBackward0")?;
        if part.dtype() != r_dtype {
            part = super::to_dtype(&part, r_dtype)?;
        }
        Ok(smallvec![Some(old), Some(part)])
    });
    attach_view(v, base, base_shape, region);
    Ok(())
}

/// Makes `v`'s grad_fn a view node (`AsStridedBackward0`) on `base`'s current history.
fn attach_view(v: &Tensor, base: &Tensor, base_shape: Shape, region: Arc<Region>) {
    record("AsStridedBackward0", &[base], v, saved![], move |c| {
        Ok(smallvec![Some(embed_region(
            c.grad()?,
            &base_shape,
            &region
        )?)])
    });
}

/// After `base` got new history through a write into one of its views,
/// re-attaches another view `v` of it to that history (a no-op when `v` is
/// not a view, or nothing requires grad).
pub(crate) fn refresh_view(v: &Tensor) -> Result<()> {
    let Some(base) = v.base() else {
        return Ok(());
    };
    if !(is_grad_enabled() && base.requires_grad()) {
        return Ok(());
    }
    let (region, base_shape) = {
        let (bv, vv) = (base.view(), v.view());
        (Arc::new(read_region_of(&bv, &vv)?), bv.shape.clone())
    };
    attach_view(v, base, base_shape, region);
    Ok(())
}

/// Re-attaches the stale view `v` to its base's current history (called
/// from `Tensor::grad_fn` after the shared memory was written), as a view
/// that reads `v`'s elements of the base; an expanded view reads some more
/// than once and its backward sums their gradients. (A view taken under
/// `no_grad()` is never regenerated: see `Tensor::try_grad_fn`.)
pub(crate) fn regenerate_view(v: &Tensor) {
    let Some(base) = v.base() else {
        return;
    };
    let found = {
        let (bv, vv) = (base.view(), v.view());
        read_region_of(&bv, &vv).map(|r| (Arc::new(r), bv.shape.clone()))
    };
    match found {
        Ok((region, base_shape)) => attach_view(v, base, base_shape, region),
        // Views are always strided regions of their base's memory; a base
        // whose own layout cannot be mapped (overlapping memory from NumPy)
        // must not keep a stale history either.
        Err(e) if base.requires_grad() => {
            let msg = match e {
                Error::Runtime(m) => m,
                other => other.to_string(),
            };
            record("AsStridedBackward0", &[base], v, saved![], move |_| {
                Err(Error::runtime(msg.clone()))
            });
        }
        Err(_) => {}
    }
}

/// What `a.copy_(b)` writes: `b` broadcast to `a`'s shape and cast to its
/// dtype. Recorded as PyTorch's `CopyBackwards`, whose inputs are `a`'s old
/// history (it gets zeros: its values are gone) and `b`.
pub(crate) fn copy_value(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let e = super::expand(b, &a.shape())?;
        let (ve, va) = (e.view(), a.view());
        // Already dense in the destination's layout, in other memory: written
        // back as it is, one flat copy (as `contiguous` hands a row-major
        // value back uncopied).
        let as_is = ve.strides == va.strides
            && e.dtype() == a.dtype()
            && !std::sync::Arc::ptr_eq(&ve.storage, &va.storage)
            && super::layout::memory_order(&e).is_some();
        // Otherwise in the destination's layout, so writing it back is a flat copy.
        let laid = if as_is {
            e.clone()
        } else {
            match super::layout::copied_like(&e, a) {
                Some(c) => c,
                None => super::contiguous(&e)?,
            }
        };
        super::to_dtype(&laid, a.dtype())?
    };
    if !crate::autograd::needs_record(&[a, b]) {
        return Ok(out);
    }
    // A fresh handle to carry the node, without copying the values.
    let out = out.detach();
    let b_dtype = b.dtype();
    record("CopyBackwards", &[a, b], &out, saved![], move |c| {
        let g = c.grad()?;
        let ga = c.needs(0).then(|| Tensor::zeros(g.shape(), g.dtype()));
        let gb = if !c.needs(1) {
            None
        } else if g.dtype() != b_dtype {
            Some(super::to_dtype(g, b_dtype)?)
        } else {
            Some(g.clone())
        };
        Ok(smallvec![ga, gb])
    });
    Ok(out)
}

/// Copies `src`'s values (cast to `dst`'s dtype) into `dst` and bumps the version.
fn write_values(dst: &Tensor, src: &Tensor) {
    let src = cast_data(src, dst.dtype());
    // A value in the destination's own dense layout (a transpose) copies
    // memory to memory.
    if src.shape() == dst.shape() && src.view().strides == dst.view().strides {
        if let (Some((fd, ..)), Some((fs, ..))) = (
            super::layout::memory_order(dst),
            super::layout::memory_order(&src),
        ) {
            let (dv, sv) = (fd.view(), fs.view());
            crate::dispatch!(dv.dtype(), T => {
                if let Some(s) = sv.as_slice::<T>() {
                    if !std::ptr::eq(s.as_ptr(), dv.ptr::<T>()) {
                        scatter::<T>(&dv, s);
                    }
                }
            });
            dv.storage.bump_version();
            return;
        }
    }
    let src = src.contiguous_data();
    let sv = src.view();
    let dv = dst.view();
    crate::dispatch!(dv.dtype(), T => {
        if let Some(s) = sv.as_slice::<T>() {
            // A result that aliases `dst` itself needs no copy.
            if !(std::ptr::eq(s.as_ptr(), dv.ptr::<T>()) && dv.is_contiguous()) {
                scatter::<T>(&dv, s);
            }
        }
    });
    dv.storage.bump_version();
}

/// `dst += src` outside the graph (gradient accumulation into `.grad`).
pub(crate) fn add_in_place_untracked(dst: &Tensor, src: &Tensor) -> Result<()> {
    let _g = crate::autograd::GradModeGuard::new(false);
    if try_update_in_place(dst, src, InplaceOp::Add)? {
        return Ok(());
    }
    let sum = super::add(dst, src)?;
    write_values(dst, &sum);
    Ok(())
}

/// Whether writing untracked values into `t` must go through the graph
/// (a view of a tensor that requires grad, in grad mode).
fn view_in_graph(t: &Tensor) -> bool {
    is_grad_enabled() && t.base().is_some_and(|b| b.requires_grad())
}

/// `t.fill_(v)`.
pub(crate) fn fill_(t: &Tensor, v: f64) -> Result<()> {
    fill_named(t, v, "FillBackward2")
}

/// `fill_` recorded under `name` when `t` is in the graph: `t` stays in it,
/// with a node sending zeros to its old history (the values no longer
/// depend on it), as PyTorch's `FillBackward2`/`ZeroBackward0` do.
fn fill_named(t: &Tensor, v: f64, name: &'static str) -> Result<()> {
    check_inplace(t)?;
    if view_in_graph(t) {
        let r = Tensor::full(t.shape(), v, t.dtype());
        return commit_inplace(t, &r);
    }
    let dv = t.view();
    crate::dispatch!(dv.dtype(), T => scatter::<T>(&dv, &[T::from_f64(v)]));
    dv.storage.bump_version();
    drop(dv);
    crate::autograd::forward::after_write(t, None)?;
    if is_grad_enabled() && t.requires_grad() && !t.is_leaf() {
        record(name, &[t], t, saved![], |c| {
            let g = c.grad()?;
            Ok(smallvec![Some(Tensor::zeros(g.shape(), g.dtype()))])
        });
    }
    Ok(())
}

/// Overwrites `t` with fresh values (`values`, already of `t`'s shape), outside the graph.
fn overwrite_untracked(t: &Tensor, values: &Tensor) -> Result<()> {
    let _g = (!view_in_graph(t)).then(|| crate::autograd::GradModeGuard::new(false));
    commit_inplace(t, values)?;
    drop(_g);
    if is_grad_enabled() && t.requires_grad() && !t.is_leaf() && !t.is_view() {
        t.detach_in_place();
    }
    Ok(())
}

/// Fresh standard-normal or [0, 1)-uniform samples from the default
/// generator (`randn`, `rand`, `randn_like`, `rand_like`).
pub fn random_tensor(shape: Shape, dtype: crate::tensor::DType, normal: bool) -> Result<Tensor> {
    crate::random::with_gen(None, |g| {
        if normal {
            crate::random::normal(g, shape, dtype, 0.0, 1.0, true)
        } else {
            crate::random::uniform(g, shape, dtype, 0.0, 1.0)
        }
    })
}

/// `t.normal_(mean, std)`: samples from N(mean, std²) as PyTorch draws them
/// (its kernel depends on `t`'s size and contiguity) from `gen` (the default
/// generator when None), not recorded.
pub fn normal_with(
    t: &Tensor,
    mean: f64,
    std: f64,
    gen: Option<&crate::random::GenRef>,
) -> Result<()> {
    check_inplace(t)?;
    if std.is_nan() || std < 0.0 {
        return Err(Error::runtime(format!(
            "normal expects std >= 0.0, but found std {std}"
        )));
    }
    let v = crate::random::with_gen(gen, |g| {
        crate::random::normal(g, t.shape(), t.dtype(), mean, std, t.is_contiguous())
    })?;
    overwrite_untracked(t, &crate::random::in_memory_order(t, v)?)
}

/// `t.uniform_(a, b)`: samples uniformly from [a, b) drawn from `gen` (the
/// default generator when None), not recorded.
pub fn uniform_with(
    t: &Tensor,
    from: f64,
    to: f64,
    gen: Option<&crate::random::GenRef>,
) -> Result<()> {
    check_inplace(t)?;
    if from > to || !from.is_finite() || !to.is_finite() {
        return Err(Error::runtime(format!(
            "uniform_ expects to return a [from, to) range, but found from={from} > to={to}"
        )));
    }
    let v = crate::random::with_gen(gen, |g| {
        crate::random::uniform(g, t.shape(), t.dtype(), from, to)
    })?;
    overwrite_untracked(t, &crate::random::in_memory_order(t, v)?)
}

/// Overwrites `t` with `values` (same shape, any dtype, drawn in `t`'s
/// memory order) outside the graph: the sampling methods (`bernoulli_`,
/// `random_`, `exponential_`).
pub fn overwrite_sampled(t: &Tensor, values: Tensor) -> Result<()> {
    check_inplace(t)?;
    let v = super::cast_data(&crate::random::in_memory_order(t, values)?, t.dtype());
    overwrite_untracked(t, &v)
}

/// `t[key] = value` through the view `target` of `t` when something
/// requires grad: `value` is broadcast and cast to the view, written in
/// place (recorded as `CopySlices` on the base), and `t`, if itself a view,
/// is re-attached to the base's new history.
pub(crate) fn assign_tracked(t: &Tensor, target: &Tensor, value: &Tensor) -> Result<()> {
    let shape = target.shape();
    check_fits(&value.shape(), &shape)?;
    let r = super::to_dtype(&super::expand(value, &shape)?, target.dtype())?;
    commit_inplace(target, &r)?;
    if !target.same(t) {
        refresh_view(t)?;
    }
    Ok(())
}

fn check_fits(vs: &[usize], shape: &[usize]) -> Result<()> {
    let fits = crate::tensor::broadcast_shapes(vs, shape)
        .map(|b| b.as_slice() == shape)
        .unwrap_or(false);
    if !fits {
        return Err(Error::runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(vs),
            fmt_shape(shape)
        )));
    }
    Ok(())
}

/// `t.zero_()`.
pub(crate) fn zero_(t: &Tensor) -> Result<()> {
    fill_named(t, 0.0, "ZeroBackward0")
}

/// Writes `value` (broadcast to `dst`'s shape, cast to its dtype) into
/// `dst`'s memory, outside the graph: `t[basic key] = value` when nothing
/// needs recording.
pub(crate) fn assign(dst: &Tensor, value: &Tensor) -> Result<()> {
    let shape = dst.shape();
    check_fits(&value.shape(), &shape)?;
    let _g = crate::autograd::GradModeGuard::new(false);
    let v = super::expand(&value.detach(), &shape)?;
    write_values(dst, &v);
    if crate::autograd::forward::is_active() {
        let t = crate::autograd::forward::tangent(value)
            .map(|t| super::expand(&t, &shape))
            .transpose()?;
        crate::autograd::forward::after_write(dst, t)?;
    }
    Ok(())
}

/// The arithmetic an in-place operator applies.
#[derive(Clone, Copy, Debug)]
pub enum InplaceOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// `a <op>= b` straight into `a`'s memory when nothing needs recording and
/// no conversion or broadcast of `a` is involved (an optimizer's update,
/// `x.t().mul_(2)`): one pass in memory order, no temporary. `a` may be any
/// dense layout (a transpose, a permutation, a view of one) when `b` is one
/// number or has `a`'s very layout. Returns `false` when the general path
/// must run.
pub(crate) fn try_update_in_place(a: &Tensor, b: &Tensor, op: InplaceOp) -> Result<bool> {
    let recording = is_grad_enabled() && (a.requires_grad() || b.requires_grad());
    if recording || crate::autograd::forward::any_tangent(&[a, b]) {
        return Ok(false);
    }
    let dt = a.dtype();
    if !matches!(dt, DType::F32 | DType::F64) || super::result_type(a, b) != dt || b.dtype() != dt {
        return Ok(false);
    }
    let (av, bv) = (a.view(), b.view());
    let n = av.numel();
    // A dense layout (strides are never negative) fills the `n` slots from
    // its first element's.
    if !av.is_contiguous() && super::layout::memory_order(a).is_none() {
        return Ok(false);
    }
    // One number broadcasts, unless its extra dimensions would widen `a`.
    let b_matches = (bv.numel() == 1 && bv.shape.len() <= av.shape.len())
        || (av.is_contiguous() && bv.is_contiguous() && bv.shape == av.shape)
        || (bv.shape == av.shape && bv.strides == av.strides);
    if !b_matches {
        return Ok(false);
    }
    // Distinct memory only (`x += x` takes the general path).
    if Arc::ptr_eq(&av.storage, &bv.storage) {
        return Ok(false);
    }
    crate::dispatch_float!(dt, T => {
        // SAFETY: `a`'s `n` elements fill the `n` slots from its first one
        // (contiguous, or dense in another order); `b` is one element or has
        // `a`'s shape and strides, so its elements fill its `n` slots in the
        // same order, in memory that is not `a`'s.
        let dst = unsafe { std::slice::from_raw_parts_mut(av.ptr::<T>(), n) };
        let src = unsafe { std::slice::from_raw_parts(bv.ptr::<T>() as *const T, bv.numel()) };
        match op {
            InplaceOp::Add => crate::kernels::elementwise::update(dst, src, #[inline(always)] |x, y| x + y),
            InplaceOp::Sub => crate::kernels::elementwise::update(dst, src, #[inline(always)] |x, y| x - y),
            InplaceOp::Mul => crate::kernels::elementwise::update(dst, src, #[inline(always)] |x, y| x * y),
            InplaceOp::Div => crate::kernels::elementwise::update(dst, src, #[inline(always)] |x, y| x / y),
        }
    });
    av.storage.bump_version();
    Ok(true)
}
