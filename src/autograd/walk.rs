//! The graph walk both backward engines share (`engine.rs` for one
//! gradient per root, `batched.rs` for a batch of them): the roots' edges,
//! the requested inputs, discovery of every node reachable from the roots
//! (iterative post-order, so graph depth is bounded only by memory), which
//! nodes must run, dependency counts, and a ready queue ordered by creation
//! (newest first) that sums each node's incoming gradients in arrival order
//! before it runs. The engines differ only in how a node runs (hooks or
//! none, one gradient or a batch) and where a leaf's gradient goes, which
//! they pass in, so both visit nodes, and add gradients, in the same order.

use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use smallvec::SmallVec;

use super::node::{Edge, Grads};
use super::NodeRef;
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::Tensor;

/// Node indices are small dense integers: a multiplicative hash is enough.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9E3779B97F4A7C15);
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (i as u64).wrapping_mul(0x9E3779B97F4A7C15);
    }
}

pub(super) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A reachable node while backward runs.
pub(super) struct Info {
    pub node: NodeRef,
    /// Edges from nodes that run and have not delivered yet.
    pub deps: u32,
    /// Runs its backward (some input below it needs a gradient).
    pub exec: bool,
    /// With requested inputs, which of its inputs lead to one (`None`:
    /// every input that requires a gradient).
    pub needs: Option<SmallVec<[bool; 4]>>,
    /// The gradients of its outputs received so far.
    pub buffer: Grads,
}

fn new_info(n: &NodeRef) -> Info {
    Info {
        node: n.clone(),
        deps: 0,
        exec: true,
        needs: None,
        buffer: SmallVec::from_elem(None, n.outputs.len()),
    }
}

/// Sums a gradient into a slot (the first arrival is kept as it is).
pub(super) fn add_into(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(prev) => ops::add(&prev, &g)?,
    });
    Ok(())
}

/// The roots' gradient edges, each with its gradient cast to the root's
/// dtype. `check` runs first for each root (the engine compares shapes), so
/// errors come in root order.
pub(super) fn root_edges(
    roots: &[Tensor],
    grads: Vec<Tensor>,
    mut check: impl FnMut(usize, &Tensor, &Tensor) -> Result<()>,
) -> Result<Vec<(Edge, Tensor)>> {
    let mut out = Vec::with_capacity(roots.len());
    for (i, (t, g)) in roots.iter().zip(grads).enumerate() {
        check(i, t, &g)?;
        let g = if g.dtype() != t.dtype() {
            ops::to_dtype(&g, t.dtype())?
        } else {
            g
        };
        let edge = super::try_gradient_edge(t)?;
        if matches!(edge, Edge::None) {
            return Err(Error::runtime(format!(
                "element {i} of tensors does not require grad and does not have a grad_fn"
            )));
        }
        out.push((edge, g));
    }
    Ok(out)
}

/// The tensors `autograd.grad` (or `backward(inputs=...)`) asks for: leaves
/// by tensor id, others by `(node, output)`, each mapped to its position.
#[derive(Default)]
pub(super) struct Targets {
    pub leaves: IdMap<usize, usize>,
    pub nodes: IdMap<(u32, u32), usize>,
}

impl Targets {
    /// `None` when `refuse_leaf` turns a leaf down (the batched engine
    /// leaves leaves with hooks to the per-row loop).
    pub(super) fn of(
        inputs: &[Tensor],
        refuse_leaf: impl Fn(&Tensor) -> bool,
    ) -> Result<Option<Targets>> {
        let mut t = Targets::default();
        for (k, x) in inputs.iter().enumerate() {
            if !x.requires_grad() {
                return Err(Error::runtime(
                    "One of the differentiated Tensors does not require grad",
                ));
            }
            match x.try_grad_fn()? {
                Some((n, nr)) => {
                    t.nodes.insert((n.index(), nr), k);
                }
                None => {
                    if refuse_leaf(x) {
                        return Ok(None);
                    }
                    t.leaves.insert(x.id(), k);
                }
            }
        }
        Ok(Some(t))
    }
}

/// The nodes reachable from the roots and their post-order (children
/// first). `None` when `refuse` turns a node down.
pub(super) struct Graph {
    pub infos: IdMap<u32, Info>,
    pub order: Vec<u32>,
}

impl Graph {
    pub(super) fn discover(
        roots: &[(Edge, Tensor)],
        refuse: impl Fn(&NodeRef) -> bool,
    ) -> Option<Graph> {
        let mut infos: IdMap<u32, Info> = IdMap::default();
        let mut order: Vec<u32> = Vec::new();
        let mut stack: Vec<(NodeRef, usize)> = Vec::new();
        for (e, _) in roots {
            if let Edge::Node(n, _) = e {
                if let std::collections::hash_map::Entry::Vacant(v) = infos.entry(n.index()) {
                    v.insert(new_info(n));
                    stack.push((n.clone(), 0));
                }
            }
        }
        while let Some((n, i)) = stack.pop() {
            if i == 0 && refuse(&n) {
                return None;
            }
            if i < n.edges.len() {
                let child = match &n.edges[i] {
                    Edge::Node(c, _) => Some(c.clone()),
                    _ => None,
                };
                stack.push((n, i + 1));
                if let Some(c) = child {
                    if let std::collections::hash_map::Entry::Vacant(v) = infos.entry(c.index()) {
                        v.insert(new_info(&c));
                        stack.push((c, 0));
                    }
                }
            } else {
                order.push(n.index());
            }
        }
        Some(Graph { infos, order })
    }

    /// With requested inputs, only nodes with a path to one run, and a
    /// node that runs computes only the input gradients on such a path: as
    /// in PyTorch's engine, `autograd.grad(loss, x)` skips the weights'
    /// products, which halves the work of every linear layer's backward.
    pub(super) fn mark_exec(&mut self, targets: &Targets) {
        for &idx in &self.order {
            let node = self.infos[&idx].node.clone();
            let needs: SmallVec<[bool; 4]> = node
                .edges
                .iter()
                .map(|e| match e {
                    Edge::Node(c, nr) => {
                        targets.nodes.contains_key(&(c.index(), *nr))
                            || self.infos.get(&c.index()).is_some_and(|ci| ci.exec)
                    }
                    Edge::Leaf(t) => targets.leaves.contains_key(&t.id()),
                    Edge::None => false,
                })
                .collect();
            if let Some(info) = self.infos.get_mut(&idx) {
                info.exec = needs.iter().any(|&n| n);
                info.needs = Some(needs);
            }
        }
    }

    /// Counts each node's dependencies (edges from nodes that run); every
    /// leaf edge of a node that runs is shown to `leaf`.
    pub(super) fn count_deps(&mut self, mut leaf: impl FnMut(&Tensor)) {
        for &idx in &self.order {
            if !self.infos[&idx].exec {
                continue;
            }
            let node = self.infos[&idx].node.clone();
            for e in node.edges.iter() {
                match e {
                    Edge::Node(c, _) => {
                        if let Some(ci) = self.infos.get_mut(&c.index()) {
                            ci.deps += 1;
                        }
                    }
                    Edge::Leaf(t) => leaf(t),
                    Edge::None => {}
                }
            }
        }
    }

    /// Adds a root's gradient to the node its edge enters (a leaf edge is
    /// the caller's).
    pub(super) fn seed(&mut self, e: &Edge, g: Tensor) -> Result<()> {
        if let Edge::Node(n, nr) = e {
            if let Some(info) = self.infos.get_mut(&n.index()) {
                add_into(&mut info.buffer[*nr as usize], g)?;
            }
        }
        Ok(())
    }

    /// Runs the nodes newest first, each once every node that feeds it has
    /// run. `visit(idx, node, grads, exec, needs)` runs one node on its
    /// summed output gradients and returns its input gradients (`None`: it
    /// does not run, and sends nothing); each is added to the node its edge
    /// enters, or given to `leaf`. `needs` is [`Info::needs`].
    pub(super) fn run(
        mut self,
        mut visit: impl FnMut(u32, &NodeRef, Grads, bool, Option<&[bool]>) -> Result<Option<Grads>>,
        mut leaf: impl FnMut(&Tensor, Option<Tensor>) -> Result<()>,
    ) -> Result<()> {
        let mut ready: BinaryHeap<(u64, u32)> = self
            .infos
            .iter()
            .filter(|(_, info)| info.deps == 0)
            .map(|(&idx, info)| (info.node.seq, idx))
            .collect();
        while let Some((_, idx)) = ready.pop() {
            let (node, grads, exec, needs) = match self.infos.get_mut(&idx) {
                Some(info) => (
                    info.node.clone(),
                    std::mem::take(&mut info.buffer),
                    info.exec,
                    info.needs.take(),
                ),
                None => continue,
            };
            let Some(input_grads) = visit(idx, &node, grads, exec, needs.as_deref())? else {
                continue;
            };
            for (edge, g) in node.edges.iter().zip(input_grads) {
                match edge {
                    Edge::Node(c, nr) => {
                        let Some(ci) = self.infos.get_mut(&c.index()) else {
                            continue;
                        };
                        if let Some(g) = g {
                            add_into(&mut ci.buffer[*nr as usize], g)?;
                        }
                        ci.deps -= 1;
                        if ci.deps == 0 {
                            ready.push((ci.node.seq, c.index()));
                        }
                    }
                    Edge::Leaf(t) => leaf(t, g)?,
                    Edge::None => {}
                }
            }
        }
        Ok(())
    }
}
