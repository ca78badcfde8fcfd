//! A batch of cotangents through one graph (`autograd.grad(...,
//! is_grads_batched=True)`, behind `jacobian(vectorize=True)`).
//!
//! The gradient buffers carry a leading batch dimension and the graph is
//! walked once. Nodes whose backward is known row by row run on the whole
//! batch at once: elementwise nodes (a diagonal Jacobian: the rule applied to
//! ones gives the diagonal, which scales every row, then broadcasting is
//! undone per row), reshapes, `t()`, `expand`, the full sum, and the matrix
//! products (`MvBackward0`, `MmBackward0`: one GEMM for all
//! rows instead of one GEMV per row). Every other node runs its ordinary rule
//! once per row and the rows are stacked, so any graph gives exactly what a
//! backward per row would. Graphs with hooks, and `create_graph`, take the
//! plain loop of one engine run per row, which keeps their semantics as they
//! are.

use super::node_traits;

use smallvec::{smallvec, SmallVec};

use super::engine::call_node;
use super::node::{BackwardCtx, Edge, Grads, Node};
use super::walk::{self, add_into};
use super::{BackwardRequest, GradModeGuard, NodeRef};
use crate::error::Result;
use crate::ops;
use crate::tensor::{Shape, Tensor};

/// `req.grads[i]` is `[batch, *roots[i].shape]`; returns, per input, its
/// gradients stacked along a leading batch dimension (`None`: no gradient).
pub fn run_backward_batched(req: BackwardRequest, batch: usize) -> Result<Vec<Option<Tensor>>> {
    let n_inputs = req.inputs.as_ref().map_or(0, |v| v.len());
    if batch == 0 {
        return Ok(vec![None; n_inputs]);
    }
    if !req.create_graph {
        if let Some(r) = batched_engine(&req, batch)? {
            return Ok(r);
        }
    }
    row_loop(req, batch)
}

/// One engine run per row, the graph kept until the last.
fn row_loop(req: BackwardRequest, batch: usize) -> Result<Vec<Option<Tensor>>> {
    let inputs = req.inputs.clone().unwrap_or_default();
    let mut rows: Vec<Vec<Option<Tensor>>> = vec![Vec::with_capacity(batch); inputs.len()];
    for b in 0..batch {
        let row_grads = req
            .grads
            .iter()
            .map(|g| ops::select(g, 0, b as i64))
            .collect::<Result<Vec<_>>>()?;
        let r = super::run_backward(BackwardRequest {
            roots: req.roots.clone(),
            grads: row_grads,
            inputs: Some(inputs.clone()),
            retain_graph: req.retain_graph || b + 1 < batch,
            create_graph: req.create_graph,
            accumulate: false,
        })?;
        for (k, g) in r.into_iter().enumerate() {
            rows[k].push(g);
        }
    }
    inputs
        .iter()
        .zip(rows)
        .map(|(t, r)| stack_rows(r, &t.shape(), t))
        .collect()
}

/// Stacks per-row gradients; a row without one counts as zeros.
fn stack_rows(rows: Vec<Option<Tensor>>, shape: &[usize], like: &Tensor) -> Result<Option<Tensor>> {
    if rows.iter().all(Option::is_none) {
        return Ok(None);
    }
    let filled: Vec<Tensor> = rows
        .into_iter()
        .map(|g| g.unwrap_or_else(|| Tensor::zeros(Shape::from_slice(shape), like.dtype())))
        .collect();
    Ok(Some(ops::stack(&filled, 0)?))
}

fn batched_shape(batch: usize, shape: &[usize]) -> Shape {
    let mut s = Shape::with_capacity(shape.len() + 1);
    s.push(batch);
    s.extend_from_slice(shape);
    s
}

/// The graph walk (`walk.rs`) with batched buffers, or `None` (nothing
/// run) when a node or requested leaf has hooks.
fn batched_engine(req: &BackwardRequest, batch: usize) -> Result<Option<Vec<Option<Tensor>>>> {
    let inputs = req.inputs.as_deref().unwrap_or(&[]);
    // Hooks run per row in the plain loop, which keeps their semantics.
    let Some(targets) = walk::Targets::of(inputs, |t| !t.meta().hooks.is_empty())? else {
        return Ok(None);
    };
    let root_edges = walk::root_edges(&req.roots, req.grads.clone(), |_, _, _| Ok(()))?;
    let Some(mut graph) = walk::Graph::discover(&root_edges, |n| n.hooks_snapshot().is_some())
    else {
        return Ok(None);
    };
    graph.mark_exec(&targets);
    graph.count_deps(|_| {});

    let mut results: Vec<Option<Tensor>> = vec![None; inputs.len()];
    let _mode = GradModeGuard::new(false);
    for (e, g) in root_edges {
        match e {
            Edge::Leaf(t) => {
                if let Some(&k) = targets.leaves.get(&t.id()) {
                    add_into(&mut results[k], g)?;
                }
            }
            e => graph.seed(&e, g)?,
        }
    }
    let results = std::cell::RefCell::new(results);
    graph.run(
        |idx, node, grads, exec, needs| {
            for (nr, g) in grads.iter().enumerate() {
                if let Some(&k) = targets.nodes.get(&(idx, nr as u32)) {
                    results.borrow_mut()[k] = g.clone();
                }
            }
            if !exec {
                return Ok(None);
            }
            let input_grads = call_node_batched(node, grads, batch, needs)?;
            if !req.retain_graph {
                node.release_saved();
            }
            Ok(Some(input_grads))
        },
        |t, g| {
            if let (Some(g), Some(&k)) = (g, targets.leaves.get(&t.id())) {
                add_into(&mut results.borrow_mut()[k], g)?;
            }
            Ok(())
        },
    )?;
    Ok(Some(results.into_inner()))
}

/// One node's backward for a batch of output gradients: on the whole batch
/// where the rule is known row by row, otherwise once per row.
fn call_node_batched(
    node: &NodeRef,
    grads: Grads,
    batch: usize,
    needs: Option<&[bool]>,
) -> Result<Grads> {
    if grads.iter().all(Option::is_none) {
        return Ok(SmallVec::from_elem(None, node.edges.len()));
    }
    if let Some(out) = whole_batch(node, &grads, batch, needs)? {
        let mut checked: Grads = SmallVec::with_capacity(out.len());
        for (i, g) in out.into_iter().enumerate() {
            let meta = &node.inputs[i];
            checked.push(match g {
                Some(_) if !wanted(node, needs, i) => None,
                Some(t) => {
                    debug_assert_eq!(t.shape(), batched_shape(batch, &meta.shape));
                    Some(if t.dtype() != meta.dtype {
                        ops::to_dtype(&t, meta.dtype)?
                    } else {
                        t
                    })
                }
                None => None,
            });
        }
        return Ok(checked);
    }
    let mut rows: Vec<Vec<Option<Tensor>>> = vec![Vec::with_capacity(batch); node.edges.len()];
    for b in 0..batch {
        let row: Grads = grads
            .iter()
            .map(|g| g.as_ref().map(|g| ops::select(g, 0, b as i64)).transpose())
            .collect::<Result<_>>()?;
        for (i, g) in call_node(node, row, needs)?.into_iter().enumerate() {
            rows[i].push(g);
        }
    }
    let mut out: Grads = SmallVec::with_capacity(rows.len());
    for (i, r) in rows.into_iter().enumerate() {
        let meta = &node.inputs[i];
        let like = Tensor::zeros(Shape::new(), meta.dtype);
        out.push(stack_rows(r, &meta.shape, &like)?);
    }
    Ok(out)
}

/// The node's rule on one gradient, without the engine's reduction to the
/// inputs' shapes.
fn raw_rule(node: &NodeRef, g: Tensor, needs: Option<&[bool]>) -> Result<Grads> {
    let saved = Node::unpack_saved(node)?;
    let needs: SmallVec<[bool; 4]> = (0..node.edges.len())
        .map(|i| wanted(node, needs, i))
        .collect();
    let grads: Grads = smallvec![Some(g)];
    let ctx = BackwardCtx {
        grads: &grads,
        saved: &saved,
        needs: &needs,
        node,
    };
    node.backward.apply(&ctx)
}

/// The batched rules; `None` when the node has none (or its shapes do not fit).
/// Whether input `i` gets a gradient: it requires one and, with requested
/// inputs, leads to one (`walk::Info::needs`).
fn wanted(node: &NodeRef, needs: Option<&[bool]>, i: usize) -> bool {
    match needs {
        Some(n) => n.get(i).copied().unwrap_or(false),
        None => !matches!(node.edges[i], Edge::None),
    }
}

fn whole_batch(
    node: &NodeRef,
    grads: &Grads,
    batch: usize,
    needs: Option<&[bool]>,
) -> Result<Option<Grads>> {
    if node.outputs.len() != 1 {
        return Ok(None);
    }
    let Some(g) = grads[0].as_ref() else {
        return Ok(None);
    };
    let name = node.name();
    let out_shape = node.outputs[0].shape.clone();
    let wanted = |i: usize| wanted(node, needs, i);

    if node_traits::traits(&name) & node_traits::DIAGONAL != 0 {
        // The rule is linear in the gradient and elementwise: at ones it gives
        // f'(inputs) at the output's shape, and each row of the batch is that
        // times the row, summed over the dimensions an input was broadcast along.
        let ones = Tensor::full(out_shape.clone(), 1.0, node.outputs[0].dtype);
        let diag = raw_rule(node, ones, needs)?;
        let mut out: Grads = SmallVec::with_capacity(node.edges.len());
        for i in 0..node.edges.len() {
            let d = match diag.get(i) {
                Some(Some(d)) if wanted(i) => d,
                _ => {
                    out.push(None);
                    continue;
                }
            };
            let in_shape = &node.inputs[i].shape;
            if d.shape() != out_shape || in_shape.len() > out_shape.len() {
                // Already reduced by the rule itself, or an unexpected shape.
                return Ok(None);
            }
            let full = ops::mul(g, d)?;
            out.push(Some(if *in_shape == out_shape {
                full
            } else {
                let mut padded = Shape::from_elem(1, out_shape.len() + 1);
                padded[0] = batch;
                let lead = out_shape.len() - in_shape.len();
                padded[1 + lead..].copy_from_slice(in_shape);
                let summed = ops::sum_to(&full, &padded)?;
                ops::reshape(&summed, &batched_shape(batch, in_shape))?
            }));
        }
        return Ok(Some(out));
    }
    if name == "ExpandBackward0" && node.edges.len() == 1 {
        let in_shape = &node.inputs[0].shape;
        if in_shape.len() > out_shape.len() {
            return Ok(None);
        }
        let mut padded = Shape::from_elem(1, out_shape.len() + 1);
        padded[0] = batch;
        padded[1 + out_shape.len() - in_shape.len()..].copy_from_slice(in_shape);
        let summed = ops::sum_to(g, &padded)?;
        return Ok(Some(smallvec![Some(ops::reshape(
            &summed,
            &batched_shape(batch, in_shape)
        )?)]));
    }
    if name == "TBackward0" && node.edges.len() == 1 {
        // `t()` of a matrix swaps its two dimensions; of a vector or scalar it is the identity.
        let gi = if out_shape.len() == 2 {
            ops::transpose(g, 1, 2)?
        } else {
            g.clone()
        };
        return Ok(Some(smallvec![Some(gi)]));
    }
    if node_traits::traits(&name) & node_traits::RESHAPE != 0 && node.edges.len() == 1 {
        let target = batched_shape(batch, &node.inputs[0].shape);
        return Ok(Some(smallvec![Some(ops::reshape(g, &target)?)]));
    }
    match name.as_ref() {
        "SumBackward0" if node.edges.len() == 1 => {
            let in_shape = &node.inputs[0].shape;
            let mut keep = Shape::from_elem(1, in_shape.len() + 1);
            keep[0] = batch;
            let g = ops::reshape(g, &keep)?;
            Ok(Some(smallvec![Some(ops::expand(
                &g,
                &batched_shape(batch, in_shape)
            )?)]))
        }
        "MvBackward0" => {
            // out = a @ v: rows of da are g_b outer v, rows of dv are g_b @ a.
            let saved = Node::unpack_saved(node)?;
            let ga = if wanted(0) {
                let Some(v) = saved.get(1).cloned().flatten() else {
                    return Ok(None);
                };
                Some(ops::mul(&ops::unsqueeze(g, 2)?, &v)?)
            } else {
                None
            };
            let gv = if wanted(1) {
                let Some(a) = saved.first().cloned().flatten() else {
                    return Ok(None);
                };
                Some(ops::mm(g, &a)?)
            } else {
                None
            };
            Ok(Some(smallvec![ga, gv]))
        }
        "MmBackward0" => {
            // out = a @ b: rows of da are g_b @ b^T, rows of db are a^T @ g_b.
            let saved = Node::unpack_saved(node)?;
            let ga = if wanted(0) {
                let Some(b) = saved.get(1).cloned().flatten() else {
                    return Ok(None);
                };
                Some(ops::matmul(g, &ops::transpose(&b, 0, 1)?)?)
            } else {
                None
            };
            let gb = if wanted(1) {
                let Some(a) = saved.first().cloned().flatten() else {
                    return Ok(None);
                };
                Some(ops::matmul(&ops::transpose(&a, 0, 1)?, g)?)
            } else {
                None
            };
            Ok(Some(smallvec![ga, gb]))
        }
        _ => Ok(None),
    }
}
