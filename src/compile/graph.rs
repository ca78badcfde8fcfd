//! The autograd nodes a recorded op made during capture, mapped onto the
//! entry's inputs and outputs, so the static backward can call each node's
//! rule on a replay's own tensors.

use smallvec::SmallVec;

use crate::autograd::{self, Edge, NodeRef};
use crate::tensor::Tensor;

/// Where a gradient leaving one of an entry's nodes goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum EdgeTo {
    /// Nowhere (the input needs no gradient).
    None,
    /// The entry's tensor input `i`.
    In(usize),
    /// Output `nr` of the entry's node `k` (a node made inside the op).
    Inner(usize, u32),
}

/// Where a node's saved tensor comes from on a replay.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SavedRef {
    In(usize),
    /// The entry's output `j`.
    Out(usize),
    /// `ins[i].t()`, made inside the op (`linear`'s transposed weight).
    TOf(usize),
}

/// One autograd node an entry's op made during capture: its rule is the
/// entry's VJP on replay, called on the replay's tensors.
#[derive(Clone)]
pub(crate) struct Link {
    pub node: NodeRef,
    pub edges: SmallVec<[EdgeTo; 2]>,
    pub saved: SmallVec<[Option<SavedRef>; 2]>,
}

/// The nodes an entry recorded during capture.
#[derive(Clone, Default)]
pub(crate) enum Graph {
    /// None (no input required grad, or grad mode was off).
    #[default]
    None,
    /// Newest first (the engine's order). `outs[j]` is where the entry's
    /// output `j` gets its gradient from: `(node, output_nr)`, or `None`
    /// when the output does not require grad.
    Nodes {
        links: Vec<Link>,
        outs: SmallVec<[Option<(usize, u32)>; 2]>,
    },
    /// Something the static backward cannot express (the reason).
    Unknown(String),
}

fn same_node(a: &(NodeRef, u32), n: &NodeRef, nr: u32) -> bool {
    a.0.ptr_eq(n) && a.1 == nr
}

/// Reads the nodes made by an op that started when the newest node had
/// sequence `seq0`.
pub(crate) fn link_graph(ins: &[&Tensor], outs: &[Tensor], seq0: u64) -> Graph {
    let seq1 = autograd::current_seq();
    let out_fns: Vec<Option<(NodeRef, u32)>> = outs.iter().map(|o| o.grad_fn()).collect();
    if seq1 == seq0 {
        return if outs.iter().any(|o| o.requires_grad()) {
            Graph::Unknown("returns a tensor that requires grad without recording a node".into())
        } else {
            Graph::None
        };
    }
    let fresh = |n: &NodeRef| n.seq > seq0 && n.seq <= seq1;
    let mut nodes: Vec<NodeRef> = Vec::new();
    let mut stack: Vec<NodeRef> = out_fns
        .iter()
        .flatten()
        .filter(|(n, _)| fresh(n))
        .map(|(n, _)| n.clone())
        .collect();
    while let Some(n) = stack.pop() {
        if nodes.iter().any(|m| m.ptr_eq(&n)) {
            continue;
        }
        for e in n.edges.iter() {
            if let Edge::Node(c, _) = e {
                if fresh(c) {
                    stack.push(c.clone());
                }
            }
        }
        nodes.push(n);
    }
    if nodes.len() as u64 != seq1 - seq0 {
        return Graph::Unknown("records nodes that are not on its outputs' graph".into());
    }
    nodes.sort_by_key(|n| std::cmp::Reverse(n.seq));
    let pos = |n: &NodeRef| nodes.iter().position(|m| m.ptr_eq(n));
    let in_fns: Vec<Option<(NodeRef, u32)>> = ins.iter().map(|t| t.grad_fn()).collect();
    let mut links = Vec::with_capacity(nodes.len());
    for n in &nodes {
        let mut edges = SmallVec::new();
        for e in n.edges.iter() {
            edges.push(match e {
                Edge::None => EdgeTo::None,
                Edge::Node(c, nr) => match pos(c) {
                    Some(k) => EdgeTo::Inner(k, *nr),
                    None => match in_fns
                        .iter()
                        .position(|f| f.as_ref().is_some_and(|f| same_node(f, c, *nr)))
                    {
                        Some(i) => EdgeTo::In(i),
                        None => return Graph::Unknown("sends a gradient past its inputs".into()),
                    },
                },
                Edge::Leaf(t) => match ins.iter().position(|i| i.id() == t.id()) {
                    Some(i) => EdgeTo::In(i),
                    None => {
                        return Graph::Unknown("sends a gradient to a leaf it was not given".into())
                    }
                },
            });
        }
        let Some(layout) = n.saved_layout() else {
            return Graph::Unknown(
                "a saved tensor is held by a saved_tensors_hooks pack hook".into(),
            );
        };
        let mut saved = SmallVec::new();
        for s in layout {
            saved.push(match s {
                None => None,
                Some((_, Some(nr))) => {
                    match out_fns
                        .iter()
                        .position(|f| f.as_ref().is_some_and(|f| same_node(f, n, nr)))
                    {
                        Some(j) => Some(SavedRef::Out(j)),
                        None => return Graph::Unknown("saves an intermediate output".into()),
                    }
                }
                Some((t, None)) => match ins.iter().position(|i| i.id() == t.id()) {
                    Some(i) => Some(SavedRef::In(i)),
                    None => {
                        // `linear` saves `w.t()`, the output of its own TBackward0 node.
                        let tof = t.grad_fn().and_then(|(m, _)| {
                            let k = pos(&m)?;
                            (m.name() == "TBackward0").then_some(k)
                        });
                        match tof.map(|k| (k, n.edges.len())) {
                            Some((k, _)) => match nodes[k].edges.first() {
                                Some(Edge::Leaf(w)) => {
                                    match ins.iter().position(|i| i.id() == w.id()) {
                                        Some(i) => Some(SavedRef::TOf(i)),
                                        None => {
                                            return Graph::Unknown(
                                                "saves an intermediate tensor".into(),
                                            )
                                        }
                                    }
                                }
                                Some(Edge::Node(c, nr)) => match in_fns
                                    .iter()
                                    .position(|f| f.as_ref().is_some_and(|f| same_node(f, c, *nr)))
                                {
                                    Some(i) => Some(SavedRef::TOf(i)),
                                    None => {
                                        return Graph::Unknown(
                                            "saves an intermediate tensor".into(),
                                        )
                                    }
                                },
                                _ => return Graph::Unknown("saves an intermediate tensor".into()),
                            },
                            None => return Graph::Unknown("saves an intermediate tensor".into()),
                        }
                    }
                },
            });
        }
        links.push(Link {
            node: n.clone(),
            edges,
            saved,
        });
    }
    let mut out_map = SmallVec::new();
    for (o, f) in outs.iter().zip(&out_fns) {
        out_map.push(match f {
            Some((n, nr)) => match pos(n) {
                Some(k) => Some((k, *nr)),
                None => {
                    return Graph::Unknown("returns a tensor whose node it did not make".into())
                }
            },
            None if o.requires_grad() => {
                return Graph::Unknown("returns a leaf that requires grad".into())
            }
            None => None,
        });
    }
    Graph::Nodes {
        links,
        outs: out_map,
    }
}
