//! The per-entry steps of a static replay: an entry's VJP by its captured
//! node rules (or the elementwise fast path), the engine's gradient
//! accumulation into slots, and the elementwise forward fast path.

use smallvec::{smallvec, SmallVec};

use super::ew::{self, Pool};
use super::replay::slot;
use super::static_backward::SStep;
use super::{Desc, EdgeTo, Entry, Graph, SIn, SavedRef, Step};
use crate::autograd::{self, BackwardCtx, Grads};
use crate::ops::{self, Scalar};
use crate::tensor::Tensor;

/// Runs one `SStep::Vjp`; true when it took the elementwise fast path.
pub(super) fn run_vjp(
    st: &SStep,
    entries: &[Entry],
    slots: &mut [Option<Tensor>],
    numbers: &[f64],
    pool: &mut Pool,
) -> crate::Result<bool> {
    let SStep::Vjp {
        entry,
        ins_g,
        outs_g,
    } = st
    else {
        return Err(crate::Error::runtime("compiled tape: not a VJP step"));
    };
    vjp(&entries[*entry], ins_g, outs_g, slots, numbers, pool)
}

/// The rules of the ops that take a Python number and keep its value in
/// their closure (`arith.rs`: `scalar_op!`, `pow_scalar`, `rpow_scalar`),
/// with the number `s` of this call. `None` for rules that keep no number.
fn scalar_rule(
    node: &autograd::NodeRef,
    c: &BackwardCtx<'_>,
    s: Scalar,
) -> crate::Result<Option<Grads>> {
    let name = node.name();
    // `record_with_scalar`'s nodes: the number is input 1, with no edge.
    let with_scalar = node.edges.len() == 2 && c.saved.is_empty();
    Ok(Some(match name.as_ref() {
        "MulBackward0" | "MulBackward1" if with_scalar => {
            smallvec![Some(ops::mul_scalar(c.grad()?, s)?), None]
        }
        "DivBackward0" | "DivBackward1" if with_scalar => {
            smallvec![Some(ops::div_scalar(c.grad()?, s)?), None]
        }
        "PowBackward0" => {
            let g = c.grad()?;
            let ef = s.to_f64();
            if ef == 0.0 {
                return Ok(Some(smallvec![Some(ops::mul_f64(g, 0.0)?)]));
            }
            let d = ops::mul_f64(&ops::pow_scalar(c.saved(0)?, Scalar::Float(ef - 1.0))?, ef)?;
            smallvec![Some(ops::mul(g, &d)?)]
        }
        "PowBackward2" => {
            let g = c.grad()?;
            let base = s.to_f64();
            let out = c.saved(1)?;
            let raw = ops::mul(g, &ops::mul_f64(out, base.ln())?)?;
            if base != 0.0 {
                return Ok(Some(smallvec![Some(raw)]));
            }
            let e = c.saved(0)?;
            let nonneg = ops::ge(e, &Tensor::scalar_of(0.0, e.dtype()))?;
            smallvec![Some(ops::where_(
                &nonneg,
                &Tensor::scalar_of(0.0, raw.dtype()),
                &raw,
            )?)]
        }
        _ => return Ok(None),
    }))
}

/// The engine's `add_into`: the first contribution as it is, later ones
/// added after the earlier ones (`prev + g`).
fn add_into(slot: &mut Option<Tensor>, g: Tensor, pool: &mut Pool) -> crate::Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(prev) => match ew::accumulate(prev, &g, pool) {
            Ok(sum) => {
                pool.put(g);
                sum
            }
            Err(prev) => ops::add(&prev, &g)?,
        },
    });
    Ok(())
}

/// Runs an elementwise forward entry on the fast path; false when it does
/// not qualify.
pub(super) fn fast_forward(
    e: &Entry,
    slots: &mut [Option<Tensor>],
    numbers: &[f64],
    pool: &mut Pool,
) -> crate::Result<bool> {
    if !matches!(
        e.desc,
        Desc::Unary(_) | Desc::Binary(_) | Desc::ScalarRhs(_)
    ) {
        return Ok(false);
    }
    let Step::Op {
        ins, sins, outs, ..
    } = &e.step
    else {
        return Ok(false);
    };
    let r = {
        let ts: SmallVec<[&Tensor; 2]> = ins
            .iter()
            .map(|&s| slot(slots, s))
            .collect::<crate::Result<_>>()?;
        let s = sins.first().map(|s| super::replay::resolve(s, numbers));
        ew::forward(e.desc, &ts, s, pool)
    };
    match r {
        Some(t) => {
            slots[outs[0]] = Some(t);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// `linear`'s weight gradient (`mm(x.t(), g)` through `w.t()`'s
/// `TBackward0`) added straight into the weight's running gradient, as an
/// unrolled loop produces one per step: the product's elements are summed
/// into the existing buffer instead of being formed in a new one and added
/// afterwards. The same operands, frame and kernel as the product the rule
/// would form (only stored transposed), so the sum is bit for bit the engine's.
/// Returns the input of link `k` whose gradient is now done.
fn weight_grad_in_place(
    links: &[super::Link],
    k: usize,
    grads: &Grads,
    saved: &[Option<Tensor>],
    bufs: &[Grads],
    slots: &[Option<Tensor>],
    ins_g: &[Option<usize>],
) -> Option<usize> {
    let link = &links[k];
    let ib = match link.node.name().as_ref() {
        "AddmmBackward0" => 2,
        "MmBackward0" => 1,
        _ => return None,
    };
    let EdgeTo::Inner(k2, nr) = *link.edges.get(ib)? else {
        return None;
    };
    let tl = links.get(k2)?;
    if tl.node.name().as_ref() != "TBackward0" || tl.edges.len() != 1 {
        return None;
    }
    if bufs[k2].get(nr as usize)?.is_some() {
        return None;
    }
    let EdgeTo::In(x) = tl.edges[0] else {
        return None;
    };
    let prev = slots[(*ins_g.get(x)?)?].as_ref()?;
    let g = grads.first()?.as_ref()?;
    let a = saved.first()?.as_ref()?;
    // The rule forms `mm(a.t(), g)` and `TBackward0` transposes it: the same
    // product, in the same frame, added into the transposed weight gradient.
    let at = ops::transpose(a, 0, 1).ok()?;
    ops::mm_accumulate(prev, &at, g, true).then_some(ib)
}

/// Runs an entry's node rules, newest first, as the engine's `call_node`
/// does, sending each input's gradient to its slot.
fn vjp(
    e: &Entry,
    ins_g: &[Option<usize>],
    outs_g: &[Option<usize>],
    slots: &mut [Option<Tensor>],
    numbers: &[f64],
    pool: &mut Pool,
) -> crate::Result<bool> {
    let mut all_fast = true;
    let (
        Step::Op {
            ins, outs, sins, ..
        },
        Graph::Nodes { links, outs: omap },
    ) = (&e.step, &e.graph)
    else {
        return Err(crate::Error::runtime(
            "compiled tape: a static VJP step without its nodes",
        ));
    };
    let mut bufs: SmallVec<[Grads; 2]> = links
        .iter()
        .map(|l| SmallVec::from_elem(None, l.node.outputs.len()))
        .collect();
    for (j, gs) in outs_g.iter().enumerate() {
        if let (Some(gs), Some((k, nr))) = (gs, omap[j]) {
            bufs[k][nr as usize] = slots[*gs].take();
        }
    }
    // A number argument of the call given to the op: rules that captured
    // its capture-time value are recomputed with this call's value.
    let arg = sins
        .iter()
        .find(|s| matches!(s, SIn::Arg(..)))
        .map(|s| super::replay::resolve(s, numbers));
    for (k, link) in links.iter().enumerate() {
        let mut grads = std::mem::take(&mut bufs[k]);
        if grads.iter().all(|g| g.is_none()) {
            continue;
        }
        let node = &link.node;
        if node.backward.materialize_grads() {
            for (g, meta) in grads.iter_mut().zip(node.outputs.iter()) {
                if g.is_none() {
                    *g = Some(Tensor::zeros(meta.shape.clone(), meta.dtype));
                }
            }
        }
        let mut saved: SmallVec<[Option<Tensor>; 2]> = SmallVec::with_capacity(link.saved.len());
        for r in &link.saved {
            saved.push(match *r {
                None => None,
                Some(SavedRef::In(i)) => Some(slot(slots, ins[i])?.clone()),
                Some(SavedRef::Out(j)) => Some(slot(slots, outs[j])?.clone()),
                Some(SavedRef::TOf(i)) => Some(ops::t(slot(slots, ins[i])?)?),
            });
        }
        let mut needs: SmallVec<[bool; 4]> = link
            .edges
            .iter()
            .map(|e| !matches!(e, EdgeTo::None))
            .collect();
        if let Some(i) = weight_grad_in_place(links, k, &grads, &saved, &bufs, slots, ins_g) {
            needs[i] = false;
        }
        let ctx = BackwardCtx {
            grads: &grads,
            saved: &saved,
            needs: &needs,
            node,
        };
        let fast = if links.len() == 1 && grads.len() == 1 && e.desc != Desc::Opaque {
            // The operands the node saved, by position.
            let mut sin: SmallVec<[Option<&Tensor>; 2]> = smallvec![None; ins.len()];
            let mut sout = None;
            for (r, t) in link.saved.iter().zip(saved.iter()) {
                match (r, t) {
                    (Some(SavedRef::In(i)), Some(t)) => sin[*i] = Some(t),
                    (Some(SavedRef::Out(0)), Some(t)) => sout = Some(t),
                    _ => {}
                }
            }
            match &grads[0] {
                Some(g) => ew::vjp(
                    e.desc,
                    node.name().as_ref(),
                    g,
                    &sin,
                    sout,
                    sins.first().map(|s| super::replay::resolve(s, numbers)),
                    &needs,
                    pool,
                ),
                None => None,
            }
        } else {
            None
        };
        all_fast &= fast.is_some();
        let mut out = match fast {
            Some(r) => r,
            None => match arg.and_then(|s| scalar_rule(node, &ctx, s).transpose()) {
                Some(r) => r?,
                None => node.backward.apply(&ctx)?,
            },
        };
        out.resize(link.edges.len(), None);
        for (i, g) in out.into_iter().enumerate() {
            let Some(mut g) = g else { continue };
            let to = link.edges[i];
            if matches!(to, EdgeTo::None) {
                continue;
            }
            let meta = &node.inputs[i];
            if g.shape() != meta.shape {
                g = ops::sum_to(&g, &meta.shape)?;
            }
            if g.dtype() != meta.dtype {
                g = ops::to_dtype(&g, meta.dtype)?;
            }
            match to {
                EdgeTo::In(x) => {
                    if let Some(gs) = ins_g[x] {
                        add_into(&mut slots[gs], g, pool)?;
                    }
                }
                EdgeTo::Inner(k2, nr) => add_into(&mut bufs[k2][nr as usize], g, pool)?,
                EdgeTo::None => {}
            }
        }
        // The saved tensors go first, so the output gradients can be pooled.
        drop(saved);
        for g in grads.into_iter().flatten() {
            pool.put(g);
        }
    }
    Ok(all_fast)
}
