//! The backward engine: one gradient per root through the graph walk of
//! `walk.rs`, with hooks, `retain_grad`, anomaly traces, `create_graph`, and
//! leaves' gradients finished (hooks, `.grad`) as soon as their last
//! contribution is in.

use std::sync::Arc;

use smallvec::SmallVec;

use super::node::{BackwardCtx, Edge, GradHook, Grads, LeafHookStage, Node, NodeHooks};
use super::walk::{self, add_into, IdMap};
use super::{GradModeGuard, NodeRef};
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::{fmt_shape, Tensor};

/// What to differentiate and how.
pub struct BackwardRequest {
    pub roots: Vec<Tensor>,
    /// One gradient per root (the caller fills in ones for scalars).
    pub grads: Vec<Tensor>,
    /// `autograd.grad`'s inputs, or `backward(inputs=...)`; `None` means every leaf.
    pub inputs: Option<Vec<Tensor>>,
    pub retain_graph: bool,
    pub create_graph: bool,
    /// Accumulate into `.grad` (backward) or return the gradients (grad).
    pub accumulate: bool,
}

/// A leaf's gradient while backward runs: summed until `deps` (edges from
/// nodes that run, plus root edges) reaches zero, then finished at once.
struct LeafSlot {
    leaf: Tensor,
    grad: Option<Tensor>,
    deps: u32,
}

pub fn run_backward(req: BackwardRequest) -> Result<Vec<Option<Tensor>>> {
    let BackwardRequest {
        roots,
        grads,
        inputs,
        retain_graph,
        create_graph,
        accumulate,
    } = req;
    let _valid = super::checkpoint::ValidGuard::new(inputs.is_none());

    let root_edges = walk::root_edges(&roots, grads, |i, t, g| {
        let (ts, gs) = (t.shape(), g.shape());
        if ts != gs {
            return Err(Error::runtime(format!(
                "Mismatch in shape: grad_output[{i}] has a shape of {} and output[{i}] has a shape of {}.",
                fmt_shape(&gs),
                fmt_shape(&ts)
            )));
        }
        Ok(())
    })?;
    let n_targets = inputs.as_ref().map_or(0, |v| v.len());
    let targets =
        walk::Targets::of(inputs.as_deref().unwrap_or(&[]), |_| false)?.unwrap_or_default();
    let filtered = inputs.is_some();
    let Some(mut graph) = walk::Graph::discover(&root_edges, |_| false) else {
        unreachable!("the engine refuses no node")
    };
    if filtered {
        graph.mark_exec(&targets);
    }
    // A leaf's count (edges from nodes that run, plus root edges) lets its
    // gradient be finished as soon as its last contribution is in.
    let mut leaves: Vec<LeafSlot> = Vec::new();
    let mut leaf_slot: IdMap<usize, usize> = IdMap::default();
    let mut count_leaf = |t: &Tensor| {
        let i = *leaf_slot.entry(t.id()).or_insert_with(|| {
            leaves.push(LeafSlot {
                leaf: t.clone(),
                grad: None,
                deps: 0,
            });
            leaves.len() - 1
        });
        leaves[i].deps += 1;
    };
    for (e, _) in &root_edges {
        if let Edge::Leaf(t) = e {
            count_leaf(t);
        }
    }
    graph.count_deps(|t| {
        if !filtered || targets.leaves.contains_key(&t.id()) {
            count_leaf(t)
        }
    });

    // ---- run -------------------------------------------------------------------
    let mut results: Vec<Option<Tensor>> = vec![None; n_targets];
    // Gradients of leaves without a post-accumulate hook wait here and are
    // written to `.grad` only after every node ran, so a failing backward
    // leaves their `.grad` untouched.
    let mut deferred: Vec<(Tensor, Tensor)> = Vec::new();
    let fin = std::cell::RefCell::new(LeafFinish {
        leaf_targets: &targets.leaves,
        results: &mut results,
        deferred: &mut deferred,
        accumulate,
        create_graph,
    });

    let _mode = GradModeGuard::new(create_graph);
    for (e, g) in root_edges {
        match e {
            Edge::Leaf(t) => {
                if let Some(i) = leaf_arrive(&mut leaves, &leaf_slot, &t, Some(g))? {
                    fin.borrow_mut().finish(&mut leaves[i])?;
                }
            }
            e => graph.seed(&e, g)?,
        }
    }
    let leaves = std::cell::RefCell::new(leaves);
    graph.run(
        |idx, node, mut grads, exec, needs| {
            let hooks = node.hooks_snapshot();
            if let Some(h) = &hooks {
                run_node_hooks(node, h, &mut grads, exec)?;
            }
            if filtered {
                let mut fin = fin.borrow_mut();
                for (nr, g) in grads.iter().enumerate() {
                    if let Some(&k) = targets.nodes.get(&(idx, nr as u32)) {
                        fin.results[k] = g.clone();
                    }
                }
            }
            if !exec {
                return Ok(None);
            }
            let post = hooks.filter(|h| !h.node_post.is_empty());
            let grad_outputs = post.as_ref().map(|_| grads.clone());
            let mut input_grads = super::anomaly::run_node(node, || call_node(node, grads, needs))?;
            if let (Some(h), Some(go)) = (&post, &grad_outputs) {
                for (_, hook) in &h.node_post {
                    if let Some(mut new) = hook.call(&input_grads, go)? {
                        new.resize(node.edges.len(), None);
                        input_grads = new;
                    }
                }
            }
            if !retain_graph {
                node.release_saved();
            }
            Ok(Some(input_grads))
        },
        |t, g| {
            if !filtered || targets.leaves.contains_key(&t.id()) {
                let mut leaves = leaves.borrow_mut();
                if let Some(i) = leaf_arrive(&mut leaves, &leaf_slot, t, g)? {
                    fin.borrow_mut().finish(&mut leaves[i])?;
                }
            }
            Ok(())
        },
    )?;

    // ---- deferred leaves: every node ran, so write their .grad now -------------------
    for (leaf, g) in deferred {
        accumulate_grad(&leaf, g, create_graph)?;
    }
    if accumulate && filtered {
        // backward(inputs=[...]) accumulates into the inputs' .grad, leaves or not.
        let inputs = inputs.unwrap_or_default();
        for (t, r) in inputs.iter().zip(results.iter_mut()) {
            if let Some(g) = r.take() {
                accumulate_grad(t, g.clone(), create_graph)?;
                // Only leaves carry post-accumulate hooks.
                run_after_write_hooks(t, &g)?;
            }
        }
    }
    Ok(results)
}

/// Where a finished leaf gradient goes.
struct LeafFinish<'a> {
    leaf_targets: &'a IdMap<usize, usize>,
    results: &'a mut Vec<Option<Tensor>>,
    deferred: &'a mut Vec<(Tensor, Tensor)>,
    accumulate: bool,
    create_graph: bool,
}

impl LeafFinish<'_> {
    /// A leaf's last contribution is in: its tensor hooks and node pre-hooks
    /// run, then the gradient is captured (`inputs`), written to `.grad`
    /// followed by the hooks that run after the write, or (no such hook)
    /// deferred to the end.
    fn finish(&mut self, slot: &mut LeafSlot) -> Result<()> {
        let Some(g) = slot.grad.take() else {
            return Ok(());
        };
        let leaf = &slot.leaf;
        // autograd.grad captures the gradient: the AccumulateGrad node does
        // not run, so only the tensor hooks see it.
        let g = run_leaf_hooks(leaf, g, self.accumulate)?;
        if let Some(&k) = self.leaf_targets.get(&leaf.id()) {
            self.results[k] = Some(g);
            return Ok(());
        }
        if !self.accumulate {
            return Ok(());
        }
        if has_after_write_hooks(leaf) {
            accumulate_grad(leaf, g.clone(), self.create_graph)?;
            run_after_write_hooks(leaf, &g)?;
        } else {
            self.deferred.push((leaf.clone(), g));
        }
        Ok(())
    }
}

/// Adds one contribution (or its absence) to a counted leaf; returns the
/// leaf's slot when that was the last one.
fn leaf_arrive(
    leaves: &mut [LeafSlot],
    slots: &IdMap<usize, usize>,
    leaf: &Tensor,
    g: Option<Tensor>,
) -> Result<Option<usize>> {
    let Some(&i) = slots.get(&leaf.id()) else {
        return Ok(None);
    };
    let s = &mut leaves[i];
    if let Some(g) = g {
        add_into(&mut s.grad, g)?;
    }
    s.deps = s.deps.saturating_sub(1);
    Ok((s.deps == 0).then_some(i))
}

fn has_after_write_hooks(leaf: &Tensor) -> bool {
    leaf.meta()
        .hooks
        .iter()
        .any(|(_, h)| h.stage().after_write())
}

/// The leaf's hooks of one stage, in registration order (a copy: a hook may
/// register or remove hooks while it runs).
fn leaf_hooks(leaf: &Tensor, stage: LeafHookStage) -> Vec<Arc<dyn GradHook>> {
    leaf.meta()
        .hooks
        .iter()
        .filter(|(_, h)| h.stage() == stage)
        .map(|(_, h)| h.clone())
        .collect()
}

/// After `.grad` was written: `register_post_accumulate_grad_hook` hooks
/// (given the leaf), then the `AccumulateGrad` node's post-hooks (given the
/// gradient `g` that was accumulated).
fn run_after_write_hooks(leaf: &Tensor, g: &Tensor) -> Result<()> {
    for h in leaf_hooks(leaf, LeafHookStage::PostAccumulate) {
        h.call(leaf)?;
    }
    for h in leaf_hooks(leaf, LeafHookStage::NodePost) {
        h.call(g)?;
    }
    Ok(())
}

/// Before a node runs, in PyTorch's documented order: tensor hooks on its
/// outputs (hooks on non-leaves), the node's pre-hooks (only when it runs),
/// then `retain_grad` stores, which see what the hooks returned.
pub(crate) fn run_node_hooks(
    node: &NodeRef,
    hooks: &NodeHooks,
    grads: &mut Grads,
    exec: bool,
) -> Result<()> {
    for (_, nr, hook) in &hooks.pre {
        if let Some(Some(g)) = grads.get(*nr as usize) {
            if let Some(new) = hook.call(g)? {
                grads[*nr as usize] = Some(new);
            }
        }
    }
    if exec {
        for (_, hook) in &hooks.node_pre {
            if let Some(mut new) = hook.call(grads)? {
                new.resize(node.outputs.len(), None);
                *grads = new;
            }
        }
    }
    for (nr, weak) in &hooks.retain {
        if let (Some(t), Some(Some(g))) = (weak.upgrade(), grads.get(*nr as usize)) {
            let new = match t.grad() {
                None if super::is_grad_enabled() => g.clone(),
                None => ops::clone_data(g),
                Some(prev) => ops::add(&prev, g)?,
            };
            t.set_grad(Some(new));
        }
    }
    Ok(())
}

/// Before `.grad` is written: tensor hooks, then (when the `AccumulateGrad`
/// node runs) its pre-hooks; each may replace the gradient.
fn run_leaf_hooks(leaf: &Tensor, mut g: Tensor, node_runs: bool) -> Result<Tensor> {
    if leaf.meta().hooks.is_empty() {
        return Ok(g);
    }
    let stages: &[LeafHookStage] = if node_runs {
        &[LeafHookStage::Tensor, LeafHookStage::NodePre]
    } else {
        &[LeafHookStage::Tensor]
    };
    for &stage in stages {
        for h in leaf_hooks(leaf, stage) {
            if let Some(new) = h.call(&g)? {
                g = new;
            }
        }
    }
    Ok(g)
}

/// Adds `g` into `leaf.grad`: in place when nothing records the sum (the
/// `.grad` tensor a user zeroed stays the same object), out of place otherwise.
/// Adds `g` into `leaf.grad` as the engine does after a leaf's last
/// contribution (also used by the compiled replay, without `create_graph`).
pub(crate) fn accumulate_grad(leaf: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    let prev = leaf.grad();
    let new = match prev {
        None => {
            if create_graph {
                g
            } else {
                // A fresh buffer unless `g` is exclusive: the gradient may
                // alias memory that someone else still uses (an expanded
                // ones, a gradient the caller passed in, the same tensor sent
                // to two leaves by `a + b`), and `.grad` is later accumulated
                // into in place. Laid out as the leaf is, as in PyTorch.
                ops::layout::grad_for_leaf(leaf, g)
            }
        }
        Some(prev) => {
            if !create_graph && !prev.requires_grad() && prev.shape() == g.shape() {
                ops::add_in_place_untracked(&prev, &g)?;
                return Ok(());
            }
            ops::add(&prev, &g)?
        }
    };
    leaf.set_grad(Some(new));
    Ok(())
}

/// Runs one node's backward rule and checks what it returned. `needs`
/// narrows the inputs that get a gradient (see `walk::Info::needs`); the
/// others get none, even from a rule that computes them anyway.
pub(crate) fn call_node(node: &NodeRef, mut grads: Grads, needs: Option<&[bool]>) -> Result<Grads> {
    if grads.iter().all(|g| g.is_none()) {
        return Ok(SmallVec::from_elem(None, node.edges.len()));
    }
    if node.backward.materialize_grads() {
        for (g, meta) in grads.iter_mut().zip(node.outputs.iter()) {
            if g.is_none() {
                *g = Some(Tensor::zeros(meta.shape.clone(), meta.dtype));
            }
        }
    }
    let saved = Node::unpack_saved(node)?;
    let needs: SmallVec<[bool; 4]> = match needs {
        Some(n) => n.into(),
        None => node
            .edges
            .iter()
            .map(|e| !matches!(e, Edge::None))
            .collect(),
    };
    let ctx = BackwardCtx {
        grads: &grads,
        saved: &saved,
        needs: &needs,
        node,
    };
    let mut out = crate::profiler::timed(
        || node.name(),
        crate::profiler::Kind::Backward,
        || grads.iter().flatten().map(|g| g.shape().to_vec()).collect(),
        || node.backward.apply(&ctx),
    )?;
    let name = node.name();
    if out.len() != node.edges.len() {
        if node.backward.validate_outputs() {
            return Err(Error::runtime(format!(
                "function {name} returned an incorrect number of gradients (expected {}, got {})",
                node.edges.len(),
                out.len()
            )));
        }
        out.resize(node.edges.len(), None);
    }
    for (i, (g, meta)) in out.iter_mut().zip(node.inputs.iter()).enumerate() {
        if !needs[i] {
            *g = None;
            continue;
        }
        let Some(t) = g.as_ref() else { continue };
        let gs = t.shape();
        if gs != meta.shape {
            // Undo broadcasting in one place, for every op.
            match ops::sum_to(t, &meta.shape) {
                Ok(r) => *g = Some(r),
                Err(_) => {
                    return Err(Error::runtime(format!(
                        "Function {name} returned an invalid gradient at index {i} - got {} but expected shape compatible with {}",
                        fmt_shape(&gs),
                        fmt_shape(&meta.shape)
                    )))
                }
            }
        }
        if let Some(t) = g.as_ref() {
            if t.dtype() != meta.dtype {
                *g = Some(ops::to_dtype(t, meta.dtype)?);
            }
        }
    }
    Ok(out)
}
