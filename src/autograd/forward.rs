//! Forward-mode AD: tangents carried beside primals while a dual level is
//! live, propagated by a hook in `record` so every recorded op gets them.
//!
//! Where tangents live: `AutogradMeta::fw_grad` of a tensor that is not a
//! view, always contiguous and of the primal's shape and dtype. A view never
//! owns one of its own when its base has one: its tangent is the same view
//! (`as_strided_region`) of the base's tangent, made on first use and cached,
//! so views and in-place writes through them stay consistent.
//!
//! How an op's output tangent is computed (`tangents_for`), in order:
//! - an explicit rule for the matrix products (`mm`, `mv`, `dot`, batched
//!   products, `addmm`): the product rule in the same differentiable ops;
//! - for ops whose Jacobian is symmetric per input after broadcasting
//!   (elementwise ops, softmax), the op's own backward closure applied to the
//!   tangent: `J t = J^T t`, one call of the rule;
//! - otherwise the transpose trick on the backward closure: with a dummy
//!   cotangent `u` that requires grad, `d/du sum_i <g_i(u), t_i> = J t`.
//!   Exact for every op whose backward is itself differentiable.
//!
//! All three are written in recorded ops, so a tangent is in the graph of
//! its primal and tangent inputs when grad mode is on.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::node::{BackwardCtx, Grads, Node};
use super::{GradModeGuard, NodeRef};
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::{fmt_shape, FwGrad, Tensor, WeakTensor};

/// Generation of the live dual level; 0 when there is none.
static LEVEL: AtomicU64 = AtomicU64::new(0);
static NEXT_LEVEL: AtomicU64 = AtomicU64::new(1);
/// Tensors given a tangent in the live level, so exiting it frees them.
static HOLDERS: Mutex<Holders> = Mutex::new(Holders {
    list: Vec::new(),
    compacted: 0,
});

struct Holders {
    list: Vec<WeakTensor>,
    compacted: usize,
}

// `flags::FW_SUSPENDED` is set while a tangent itself is computed (and
// inside custom Functions' forward), so the ops doing it do not propagate
// tangents of their own.
use crate::flags::{self, FW_SUSPENDED};

/// Whether ops on this thread propagate tangents now: one atomic load when
/// no dual level exists.
#[inline]
pub fn is_active() -> bool {
    LEVEL.load(Ordering::Relaxed) != 0 && !flags::any(FW_SUSPENDED)
}

/// Whether some input carries a tangent (and forward AD is on).
#[inline]
pub fn any_tangent(inputs: &[&Tensor]) -> bool {
    is_active() && inputs.iter().any(|t| has_tangent(t))
}

/// The generation of the live level, if any.
pub fn current_level() -> Option<u64> {
    match LEVEL.load(Ordering::Acquire) {
        0 => None,
        l => Some(l),
    }
}

/// Turns tangent propagation off on this thread until the guard drops.
pub struct Suspend(bool);

impl Suspend {
    pub fn new(suspend: bool) -> Suspend {
        Suspend(flags::replace(FW_SUSPENDED, suspend))
    }
}

impl Drop for Suspend {
    fn drop(&mut self) {
        flags::set(FW_SUSPENDED, self.0);
    }
}

/// Sets whether tangent propagation is off on this thread (PyTorch's
/// `_set_fwd_grad_enabled(not off)`).
pub fn set_suspended(off: bool) {
    flags::set(FW_SUSPENDED, off);
}

pub fn is_suspended() -> bool {
    flags::any(FW_SUSPENDED)
}

/// Opens a dual level. PyTorch supports one at a time.
pub fn enter_level() -> Result<()> {
    let gen = NEXT_LEVEL.fetch_add(1, Ordering::Relaxed);
    if LEVEL
        .compare_exchange(0, gen, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(Error::runtime(
            "Nested forward mode AD is not supported at the moment",
        ));
    }
    Ok(())
}

/// Closes the live level and drops every tangent made in it.
pub fn exit_level() -> Result<()> {
    let gen = LEVEL.swap(0, Ordering::AcqRel);
    if gen == 0 {
        return Err(Error::runtime(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported.",
        ));
    }
    let list = std::mem::take(&mut HOLDERS.lock().list);
    HOLDERS.lock().compacted = 0;
    // Dropped outside the lock: a tangent's graph may be released here.
    let mut dropped = Vec::new();
    for w in list {
        if let Some(t) = w.upgrade() {
            if let Some(f) = t.meta().fw_grad.take() {
                dropped.push(f.tangent);
            }
        }
    }
    drop(dropped);
    Ok(())
}

fn remember(t: &Tensor) {
    let mut h = HOLDERS.lock();
    h.list.push(t.downgrade());
    // Forget dead tensors now and then so a long level does not grow the list
    // with every intermediate it ever made.
    if h.list.len() > 2 * h.compacted + 4096 {
        h.list.retain(|w| w.upgrade().is_some());
        h.compacted = h.list.len();
    }
}

fn own_tangent(t: &Tensor, level: u64) -> Option<(Tensor, usize)> {
    let m = t.meta();
    match &m.fw_grad {
        Some(f) if f.level == level => Some((f.tangent.clone(), f.of_base)),
        _ => None,
    }
}

/// Whether `t` has a tangent at the live level (for a view: its base has).
pub fn has_tangent(t: &Tensor) -> bool {
    let Some(level) = current_level() else {
        return false;
    };
    if let Some(b) = t.base() {
        if own_tangent(b, level).is_some() {
            return true;
        }
    }
    own_tangent(t, level).is_some()
}

/// `t`'s tangent at the live level.
pub fn tangent(t: &Tensor) -> Option<Tensor> {
    let level = current_level()?;
    if let Some(base) = t.base() {
        if let Some((bt, _)) = own_tangent(base, level) {
            let id = bt.id();
            if let Some((cached, of)) = own_tangent(t, level) {
                if of == id {
                    return Some(cached);
                }
            }
            let v = match view_of_tangent(&bt, base, t) {
                Ok(v) => v,
                Err(_) => return None,
            };
            store(t, v.clone(), level, id);
            return Some(v);
        }
    }
    own_tangent(t, level).map(|(t, _)| t)
}

/// The view of the base tangent `bt` that `v` is of `base`.
fn view_of_tangent(bt: &Tensor, base: &Tensor, v: &Tensor) -> Result<Tensor> {
    let region = {
        let (bv, vv) = (base.view(), v.view());
        ops::strided::read_region_of(&bv, &vv)?
    };
    let _s = Suspend::new(true);
    ops::strided::as_strided_region(bt, &std::sync::Arc::new(region), "AsStridedBackward0")
}

fn store(t: &Tensor, tangent: Tensor, level: u64, of_base: usize) {
    let old = t.meta().fw_grad.replace(FwGrad {
        level,
        tangent,
        of_base,
    });
    drop(old);
    remember(t);
}

/// Gives the non-view (or base-less) tensor `t` the tangent `tan`, brought
/// to `t`'s dtype and a contiguous layout (so views of `t` can alias it).
pub fn set_tangent(t: &Tensor, tan: Tensor) -> Result<()> {
    let Some(level) = current_level() else {
        return Ok(());
    };
    let _s = Suspend::new(true);
    let mut tan = tan;
    if tan.shape() != t.shape() {
        tan = ops::expand(&tan, &t.shape())?;
    }
    if tan.dtype() != t.dtype() {
        tan = ops::to_dtype(&tan, t.dtype())?;
    }
    if !tan.is_contiguous() || tan.is_view() {
        tan = ops::clone(&tan)?;
    }
    store(t, tan, level, 0);
    Ok(())
}

/// Drops `t`'s own tangent.
pub fn clear_tangent(t: &Tensor) {
    let old = t.meta().fw_grad.take();
    drop(old);
}

// ---------------------------------------------------------------------------
// The hook in `record`.

/// Whether the node's backward closure, given the tangent as the output
/// gradient, returns `J t` unreduced (its Jacobian per input is diagonal, or
/// symmetric as softmax's, after broadcasting): the registry declares it.
fn self_adjoint(name: &str) -> bool {
    super::node_traits::traits(name) & super::node_traits::SELF_ADJOINT != 0
}

/// An op's own JVP: output tangents from the inputs' tangents (`None` for
/// an input without one), in differentiable ops.
pub type Jvp<'a> = Box<dyn FnOnce(&[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> + 'a>;

/// Computes and stores the tangents of `outs`, the outputs of the op whose
/// (possibly unattached) node is `node` and whose tensor inputs are `inputs`
/// (one slot per node input; `None` for a number operand), with the op's
/// own `jvp` when it has one.
pub(crate) fn propagate(
    node: &NodeRef,
    inputs: &[Option<&Tensor>],
    outs: &[Tensor],
    attached: bool,
    jvp: Option<Jvp<'_>>,
) -> Result<()> {
    // Outputs that need a tangent of their own: floating point, and not a
    // view of a base that already has one (that view aliases it lazily).
    let want: SmallVec<[bool; 2]> = outs
        .iter()
        .map(|o| o.dtype().is_float() && !o.base().is_some_and(has_tangent))
        .collect();
    if !want.iter().any(|&w| w) {
        return Ok(());
    }
    let tangents: SmallVec<[Option<Tensor>; 2]> = inputs
        .iter()
        .map(|t| t.filter(|t| t.dtype().is_float()).and_then(tangent))
        .collect();
    if tangents.iter().all(|t| t.is_none()) {
        return Ok(());
    }
    let _s = Suspend::new(true);
    // Without a graph to build (nothing requires grad, or grad mode is off)
    // rules run with grad mode off, where the fused backward kernels apply.
    let graph = super::is_grad_enabled()
        && (inputs.iter().flatten().any(|t| t.requires_grad())
            || tangents.iter().flatten().any(|t| t.requires_grad()));
    let _g = (!graph).then(|| GradModeGuard::new(false));
    let prev_attached = ATTACHED.with(|a| a.replace(attached));
    let r = match jvp {
        Some(j) => j(&tangents),
        None => compute(node, inputs, &tangents, outs, &want, graph),
    };
    ATTACHED.with(|a| a.set(prev_attached));
    let results = r?;
    for ((o, w), t) in outs.iter().zip(want).zip(results) {
        if !w {
            continue;
        }
        let t = match t {
            Some(t) => t,
            None => Tensor::zeros(o.shape(), o.dtype()),
        };
        set_tangent(o, t)?;
    }
    // A saved output is a detached alias of the output: it carries the same
    // tangent, so a backward run under forward AD (forward-over-reverse)
    // sees it.
    if let Some(level) = current_level() {
        node.for_each_saved_mut(|s| {
            if let Some(nr) = s.output_nr() {
                if let Some(t) = outs.get(nr as usize).and_then(tangent) {
                    store(s.data(), t, level, 0);
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Gives `to`, a fresh alias of `from`, `from`'s tangent.
#[inline]
pub fn carry_tangent(from: &Tensor, to: &Tensor) {
    if let Some(level) = current_level() {
        if let Some((t, _)) = own_tangent(from, level) {
            store(to, t, level, 0);
        }
    }
}

fn compute(
    node: &NodeRef,
    inputs: &[Option<&Tensor>],
    tangents: &[Option<Tensor>],
    outs: &[Tensor],
    want: &[bool],
    graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let name = node.name();
    if let Some(t) = explicit(&name, inputs, tangents, outs)? {
        return Ok(vec![Some(t)]);
    }
    if self_adjoint(&name) && outs.len() == 1 {
        if let Some(t) = by_symmetry(node, inputs, tangents, &outs[0])? {
            return Ok(vec![Some(t)]);
        }
    }
    transpose_trick(node, inputs, tangents, outs, want, graph)
}

fn add_opt(acc: Option<Tensor>, t: Tensor) -> Result<Option<Tensor>> {
    Ok(Some(match acc {
        None => t,
        Some(a) => ops::add(&a, &t)?,
    }))
}

/// Product rules for the matrix products.
fn explicit(
    name: &str,
    inputs: &[Option<&Tensor>],
    tangents: &[Option<Tensor>],
    outs: &[Tensor],
) -> Result<Option<Tensor>> {
    let prod: fn(&Tensor, &Tensor) -> Result<Tensor> = match name {
        "MmBackward0" => ops::mm,
        "MvBackward0" => ops::mv,
        "DotBackward0" => ops::dot,
        "BmmBackward0" => ops::matmul,
        "AddmmBackward0" => ops::mm,
        _ => return Ok(None),
    };
    let off = usize::from(name == "AddmmBackward0");
    let (Some(a), Some(b)) = (inputs[off], inputs[off + 1]) else {
        return Ok(None);
    };
    let mut acc = None;
    if off == 1 {
        if let Some(tb) = &tangents[0] {
            acc = Some(ops::expand(tb, &outs[0].shape())?);
        }
    }
    if let Some(ta) = &tangents[off] {
        acc = add_opt(acc, prod(ta, b)?)?;
    }
    if let Some(tb) = &tangents[off + 1] {
        acc = add_opt(acc, prod(a, tb)?)?;
    }
    let Some(mut t) = acc else { return Ok(None) };
    let shape = outs[0].shape();
    if t.shape() != shape {
        // The batched product's node holds the flat `[batch, n, p]` result.
        t = ops::reshape(&t, &shape)?;
    }
    Ok(Some(t))
}

thread_local! {
    /// Whether the node being propagated is in the graph; a saved output of
    /// one that is not stays detached, so tangents do not require grad
    /// through it.
    static ATTACHED: Cell<bool> = const { Cell::new(true) };
}

fn unpack(node: &NodeRef) -> Result<SmallVec<[Option<Tensor>; 2]>> {
    if ATTACHED.with(|a| a.get()) {
        Node::unpack_saved(node)
    } else {
        let _g = GradModeGuard::new(false);
        Node::unpack_saved(node)
    }
}

/// `J t = J^T t` for a symmetric per-input Jacobian: the backward closure
/// applied to each input's tangent (broadcast to the output). `None` when the
/// rule returned anything not of the output's shape (it reduced: not the
/// elementwise form this relies on).
fn by_symmetry(
    node: &NodeRef,
    inputs: &[Option<&Tensor>],
    tangents: &[Option<Tensor>],
    out: &Tensor,
) -> Result<Option<Tensor>> {
    let shape = out.shape();
    let saved = unpack(node)?;
    let mut acc: Option<Tensor> = None;
    for (i, t) in tangents.iter().enumerate() {
        let Some(t) = t else { continue };
        let g = if t.shape() != shape {
            ops::expand(t, &shape)?
        } else {
            t.clone()
        };
        let g = if g.dtype() != out.dtype() {
            ops::to_dtype(&g, out.dtype())?
        } else {
            g
        };
        let mut needs: SmallVec<[bool; 4]> = SmallVec::from_elem(false, inputs.len());
        needs[i] = true;
        let grads = [Some(g)];
        let ctx = BackwardCtx {
            grads: &grads,
            saved: &saved,
            needs: &needs,
            node,
        };
        let out_grads: Grads = node.backward.apply(&ctx)?;
        let Some(Some(gi)) = out_grads.into_iter().nth(i) else {
            return Ok(None);
        };
        if gi.shape() != shape {
            return Ok(None);
        }
        acc = add_opt(acc, gi)?;
    }
    Ok(acc)
}

/// The generic rule: `J t = d/du sum_i <g_i(u), t_i>` for the backward
/// closure `g`, differentiated with the engine.
fn transpose_trick(
    node: &NodeRef,
    inputs: &[Option<&Tensor>],
    tangents: &[Option<Tensor>],
    outs: &[Tensor],
    want: &[bool],
    create_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let _g = GradModeGuard::new(true);
    let us: Vec<Tensor> = outs
        .iter()
        .map(|o| {
            let u = Tensor::zeros(o.shape(), o.dtype());
            if o.dtype().is_float() {
                u.set_requires_grad_flag(true);
            }
            u
        })
        .collect();
    let grads: SmallVec<[Option<Tensor>; 2]> = us.iter().cloned().map(Some).collect();
    let saved = unpack(node)?;
    let needs: SmallVec<[bool; 4]> = tangents.iter().map(|t| t.is_some()).collect();
    let ctx = BackwardCtx {
        grads: &grads,
        saved: &saved,
        needs: &needs,
        node,
    };
    let gs = node.backward.apply(&ctx)?;
    let mut s: Option<Tensor> = None;
    for (i, t) in tangents.iter().enumerate() {
        let (Some(t), Some(Some(g))) = (t, gs.get(i)) else {
            continue;
        };
        let x = inputs[i].expect("a tangent belongs to a tensor input");
        let mut g = g.clone();
        if g.shape() != x.shape() {
            g = ops::sum_to(&g, &x.shape()).map_err(|_| {
                Error::runtime(format!(
                    "forward AD: the backward of {} returned a gradient of shape {} for an input of shape {}",
                    node.name(),
                    fmt_shape(&g.shape()),
                    fmt_shape(&x.shape())
                ))
            })?;
        }
        let t = if t.dtype() != g.dtype() {
            ops::to_dtype(t, g.dtype())?
        } else {
            t.clone()
        };
        let term = ops::sum(&ops::mul(&g, &t)?, None, false)?;
        let term = if term.dtype() != crate::tensor::DType::F64 {
            ops::to_dtype(&term, crate::tensor::DType::F64)?
        } else {
            term
        };
        s = add_opt(s, term)?;
    }
    let wanted: Vec<usize> = (0..outs.len())
        .filter(|&j| want[j] && outs[j].dtype().is_float())
        .collect();
    let Some(s) = s.filter(|s| s.requires_grad()) else {
        return Ok(vec![None; outs.len()]);
    };
    let res = super::run_backward(super::BackwardRequest {
        roots: vec![s],
        grads: vec![Tensor::scalar_of(1.0, crate::tensor::DType::F64)],
        inputs: Some(wanted.iter().map(|&j| us[j].clone()).collect()),
        retain_graph: false,
        create_graph,
        accumulate: false,
    })?;
    let mut out = vec![None; outs.len()];
    for (k, &j) in wanted.iter().enumerate() {
        out[j] = res[k].clone();
    }
    Ok(out)
}

/// After `dst` was overwritten in place with `new_values`' values (or with
/// constants when `new_tangent` is `None` and `zero` is set): gives `dst` the
/// matching tangent. A view's base gets a new tangent (zeros if it had none)
/// with the view's region replaced, so the base and all its views agree.
pub(crate) fn after_write(dst: &Tensor, new_tangent: Option<Tensor>) -> Result<()> {
    let Some(level) = current_level() else {
        return Ok(());
    };
    if is_suspended() {
        return Ok(());
    }
    if new_tangent.is_none() && !has_tangent(dst) {
        return Ok(());
    }
    if !dst.dtype().is_float() {
        return Ok(());
    }
    let _s = Suspend::new(true);
    let new = match new_tangent {
        Some(t) => t,
        None => Tensor::zeros(dst.shape(), dst.dtype()),
    };
    let Some(base) = dst.base() else {
        return set_tangent(dst, ops::clone(&new)?);
    };
    // A fresh copy of the base's tangent, written through the same view.
    let bt = match own_tangent(base, level) {
        Some((bt, _)) => ops::clone(&bt)?,
        None => Tensor::zeros(base.shape(), base.dtype()),
    };
    let region = {
        let (bv, vv) = (base.view(), dst.view());
        ops::strided::region_of(&bv, &vv)?
    };
    let region = std::sync::Arc::new(region);
    let view = ops::strided::as_strided_region(&bt, &region, "AsStridedBackward0")?;
    let value = ops::copy_value(&view, &new)?;
    ops::commit_inplace(&view, &value)?;
    // `bt` may be a leaf (zeros) that the write made part of a graph; keep
    // the tensor whose history includes the write.
    set_tangent(base, bt)?;
    clear_tangent(dst);
    Ok(())
}
