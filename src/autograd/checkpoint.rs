//! Checkpointing's graph surgery. A checkpointed function runs in grad mode,
//! so its nodes (the *region*: nodes recorded on this thread after a mark)
//! have edges to everything it used that requires grad, including
//! parameters it closes over. The region's edges that leave it (the
//! *boundary*) become the edges of one checkpoint node and the region is
//! dropped with its saved tensors. In backward the function is run again and
//! [`backward`] sends the gradients through the new region only, stopping at
//! the boundary, so the gradients are the region's partial derivatives with
//! respect to each boundary edge, exactly what the checkpoint node must
//! return. (Running the main engine with the boundary as `inputs` would give
//! total derivatives, wrong when one boundary tensor was computed from
//! another, and would run nodes outside the region.)

use std::borrow::Cow;
use std::collections::{BinaryHeap, HashMap};

use smallvec::SmallVec;

use super::engine::{call_node, run_node_hooks};
use super::node::{Edge, Grads, Meta};
use super::NodeRef;
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::{fmt_shape, Tensor};

/// The identity of an edge leaving the region: a leaf tensor, or output
/// `nr` of a node recorded before the region.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Key {
    Leaf(usize),
    Node(u32, u32),
}

pub fn key_of(e: &Edge) -> Option<Key> {
    match e {
        Edge::None => None,
        Edge::Leaf(t) => Some(Key::Leaf(t.id())),
        Edge::Node(n, nr) => Some(Key::Node(n.index(), *nr)),
    }
}

/// Shape and dtype of what flows along `e`.
pub fn meta_of(e: &Edge) -> Meta {
    match e {
        Edge::Leaf(t) => Meta::of(t),
        Edge::Node(n, nr) => n.outputs[*nr as usize].clone(),
        Edge::None => Meta {
            shape: Default::default(),
            dtype: crate::tensor::DType::F32,
        },
    }
}

/// A recorded computation: its nodes (oldest first) and the distinct edges
/// leaving it, in the order they were found.
pub struct Region {
    pub nodes: Vec<NodeRef>,
    pub boundary: Vec<Edge>,
}

fn in_region(n: &NodeRef, mark: u64) -> bool {
    n.seq > mark
}

/// The region reached from `outs` through nodes recorded after `mark`.
pub fn region(outs: &[Tensor], mark: u64) -> Result<Region> {
    let mut seen: HashMap<u32, ()> = HashMap::new();
    let mut keys: HashMap<Key, ()> = HashMap::new();
    let mut nodes = Vec::new();
    let mut boundary = Vec::new();
    let mut stack: Vec<NodeRef> = Vec::new();
    for o in outs {
        if let Some((n, _)) = o.try_grad_fn()? {
            if in_region(&n, mark) && seen.insert(n.index(), ()).is_none() {
                stack.push(n);
            }
        }
    }
    while let Some(n) = stack.pop() {
        for e in n.edges.iter() {
            match e {
                Edge::Node(c, _) if in_region(c, mark) => {
                    if seen.insert(c.index(), ()).is_none() {
                        stack.push(c.clone());
                    }
                }
                Edge::None => {}
                _ => {
                    let k = key_of(e).expect("edge has a key");
                    if keys.insert(k, ()).is_none() {
                        boundary.push(e.clone());
                    }
                }
            }
        }
        nodes.push(n);
    }
    nodes.sort_by_key(|n| n.seq);
    Ok(Region { nodes, boundary })
}

/// What a region saved, in recording order: the check that a recomputation
/// did the same work (PyTorch compares the saved tensors' shapes and dtypes).
pub struct Fingerprint {
    names: Vec<Cow<'static, str>>,
    saved: Vec<Meta>,
}

pub fn fingerprint(r: &Region) -> Fingerprint {
    let mut saved = Vec::new();
    for n in &r.nodes {
        for t in n.saved_tensors().unwrap_or_default() {
            saved.push(Meta::of(&t));
        }
    }
    Fingerprint {
        names: r.nodes.iter().map(|n| n.name()).collect(),
        saved,
    }
}

fn fmt_meta(m: &Meta) -> String {
    format!(
        "{{'shape': ferrograd.Size({}), 'dtype': ferrograd.{}}}",
        fmt_shape(&m.shape),
        m.dtype.name()
    )
}

/// PyTorch's messages for a recomputation that saved different tensors, or
/// `None` when it matched. With `debug`, both lists of ops are appended.
pub fn compare(fwd: &Fingerprint, rec: &Fingerprint, debug: bool) -> Option<String> {
    let mut msg = if fwd.saved.len() != rec.saved.len() {
        format!(
            "ferrograd.utils.checkpoint: A different number of tensors was saved during the original forward and recomputation.\nNumber of tensors saved during forward: {}\nNumber of tensors saved during recomputation: {}.\n",
            fwd.saved.len(),
            rec.saved.len()
        )
    } else {
        let mut bad = String::new();
        for (i, (a, b)) in fwd.saved.iter().zip(&rec.saved).enumerate() {
            if a.shape != b.shape || a.dtype != b.dtype {
                bad.push_str(&format!(
                    "tensor at position {i}:\nsaved metadata: {}\nrecomputed metadata: {}\n",
                    fmt_meta(a),
                    fmt_meta(b)
                ));
            }
        }
        if bad.is_empty() {
            return None;
        }
        format!("ferrograd.utils.checkpoint: Recomputed values for the following tensors have different metadata than during the forward pass.\n{bad}")
    };
    if debug {
        msg.push_str(&format!(
            "\nOperations executed during the original forward:\n{}\n\nOperations executed during recomputation:\n{}\n",
            fwd.names.join("\n"),
            rec.names.join("\n")
        ));
    } else {
        msg.push_str("\nTip: To see a more detailed error message, pass `debug=True` to `ferrograd.utils.checkpoint.checkpoint(...)`.\n");
    }
    Some(msg)
}

struct Info {
    node: NodeRef,
    deps: u32,
    buffer: Grads,
}

fn add_into(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(prev) => ops::add(&prev, &g)?,
    });
    Ok(())
}

/// Backpropagates each `(root, grad)` through the nodes recorded after
/// `mark` only, and returns the gradient that arrives at each boundary edge.
/// With `release`, each node's saved tensors are freed once it ran (the
/// recomputed region is only needed again under `create_graph`).
pub fn backward(
    roots: &[(Tensor, Tensor)],
    mark: u64,
    release: bool,
) -> Result<HashMap<Key, Tensor>> {
    let mut out: HashMap<Key, Tensor> = HashMap::new();
    let mut infos: HashMap<u32, Info> = HashMap::new();
    let mut stack: Vec<NodeRef> = Vec::new();
    let mut starts: Vec<(Edge, Tensor)> = Vec::with_capacity(roots.len());
    for (t, g) in roots {
        let e = super::try_gradient_edge(t)?;
        if let Edge::Node(n, _) = &e {
            if in_region(n, mark) && !infos.contains_key(&n.index()) {
                infos.insert(
                    n.index(),
                    Info {
                        node: n.clone(),
                        deps: 0,
                        buffer: SmallVec::from_elem(None, n.outputs.len()),
                    },
                );
                stack.push(n.clone());
            }
        }
        starts.push((e, g.clone()));
    }
    while let Some(n) = stack.pop() {
        for e in n.edges.iter() {
            if let Edge::Node(c, _) = e {
                if !in_region(c, mark) {
                    continue;
                }
                match infos.get_mut(&c.index()) {
                    Some(ci) => ci.deps += 1,
                    None => {
                        infos.insert(
                            c.index(),
                            Info {
                                node: c.clone(),
                                deps: 1,
                                buffer: SmallVec::from_elem(None, c.outputs.len()),
                            },
                        );
                        stack.push(c.clone());
                    }
                }
            }
        }
    }

    let mut send = |e: &Edge,
                    g: Tensor,
                    infos: &mut HashMap<u32, Info>,
                    ready: &mut BinaryHeap<(u64, u32)>,
                    counts: bool|
     -> Result<()> {
        match e {
            Edge::Node(c, nr) if in_region(c, mark) => {
                let ci = infos.get_mut(&c.index()).ok_or_else(|| {
                    Error::runtime("checkpoint: a region node was not discovered")
                })?;
                add_into(&mut ci.buffer[*nr as usize], g)?;
                if counts {
                    ci.deps -= 1;
                    if ci.deps == 0 {
                        ready.push((ci.node.seq, c.index()));
                    }
                }
            }
            Edge::None => {}
            _ => {
                let k = key_of(e).expect("edge has a key");
                match out.remove(&k) {
                    Some(prev) => {
                        out.insert(k, ops::add(&prev, &g)?);
                    }
                    None => {
                        out.insert(k, g);
                    }
                }
            }
        }
        Ok(())
    };

    let mut ready: BinaryHeap<(u64, u32)> = BinaryHeap::new();
    for (e, g) in starts {
        send(&e, g, &mut infos, &mut ready, false)?;
    }
    for (&idx, info) in &infos {
        if info.deps == 0 {
            ready.push((info.node.seq, idx));
        }
    }
    while let Some((_, idx)) = ready.pop() {
        let (node, mut grads) = match infos.get_mut(&idx) {
            Some(info) => (info.node.clone(), std::mem::take(&mut info.buffer)),
            None => continue,
        };
        if let Some(h) = node.hooks_snapshot() {
            run_node_hooks(&node, &h, &mut grads, true)?;
        }
        let input_grads = super::anomaly::run_node(&node, || call_node(&node, grads, None))?;
        if release {
            node.release_saved();
        }
        for (edge, g) in node.edges.iter().zip(input_grads) {
            match (edge, g) {
                (Edge::Node(c, _), None) if in_region(c, mark) => {
                    if let Some(ci) = infos.get_mut(&c.index()) {
                        ci.deps -= 1;
                        if ci.deps == 0 {
                            ready.push((ci.node.seq, c.index()));
                        }
                    }
                }
                (_, None) => {}
                (e, Some(g)) => send(e, g, &mut infos, &mut ready, true)?,
            }
        }
    }
    Ok(out)
}

thread_local! {
    static VALID: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Whether the backward running on this thread may accumulate into leaves
/// freely (PyTorch's `_is_checkpoint_valid`): not when it was given
/// `inputs`, which the reentrant checkpoint's inner `backward` would ignore.
pub fn is_valid() -> bool {
    VALID.with(|v| v.get())
}

/// Marks a backward with or without `inputs` for [`is_valid`] while it runs.
pub struct ValidGuard(bool);

impl ValidGuard {
    pub fn new(valid: bool) -> ValidGuard {
        ValidGuard(VALID.with(|v| v.replace(valid)))
    }
}

impl Drop for ValidGuard {
    fn drop(&mut self) {
        VALID.with(|v| v.set(self.0));
    }
}
