//! Reverse-mode autograd: grad mode, graph recording and the engine.

mod anomaly;
mod arena;
mod batched;
pub mod checkpoint;
pub mod engine;
pub mod forward;
pub mod hooks;
mod node;
pub mod node_traits;
mod walk;

use std::cell::RefCell;

use smallvec::SmallVec;

pub use arena::{live_nodes, NodeRef};
pub use batched::run_backward_batched;
pub(crate) use engine::accumulate_grad;
pub use engine::{run_backward, BackwardRequest};
pub use node::{
    current_seq, Backward, BackwardCtx, Edge, FnBackward, GradHook, Grads, LeafHookStage, Meta,
    Node, NodeHooks, SavedTensor,
};

use crate::error::{Error, Result};
use crate::tensor::{DType, Shape, Tensor};

use crate::flags;

/// Whether ops record graph nodes on this thread.
#[inline]
pub fn is_grad_enabled() -> bool {
    !flags::any(flags::NO_GRAD)
}

pub fn set_grad_enabled(on: bool) {
    flags::set(flags::NO_GRAD, !on);
}

pub fn is_inference_mode() -> bool {
    flags::any(flags::INFERENCE)
}

pub fn set_inference_mode(on: bool) {
    flags::set(flags::INFERENCE, on);
}

/// Sets grad mode for a scope and restores the previous mode on drop,
/// including when the scope unwinds with an error.
pub struct GradModeGuard(bool);

impl GradModeGuard {
    pub fn new(on: bool) -> GradModeGuard {
        let prev = is_grad_enabled();
        set_grad_enabled(on);
        GradModeGuard(prev)
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.0);
    }
}

/// Whether an op on `inputs` must record a node: grad mode is on and some
/// input requires grad. Checked before anything is saved, so an untracked op
/// pays one thread-local read and one atomic load per input.
#[inline]
pub fn needs_record(inputs: &[&Tensor]) -> bool {
    (inputs.iter().any(|t| t.requires_grad()) && is_grad_enabled()) || forward::any_tangent(inputs)
}

/// Whether `t` is tracked by either mode: it requires grad, or it carries a
/// forward-mode tangent. Ops that save an operand only for the other's
/// gradient ask this, since a tangent rule may need it too.
#[inline]
pub fn tracked(t: &Tensor) -> bool {
    t.requires_grad() || forward::any_tangent(&[t])
}

/// The edge a gradient for `t` should follow, or PyTorch's refusal of a
/// tensor that may not be used in the graph any more.
pub fn try_gradient_edge(t: &Tensor) -> Result<Edge> {
    if !t.requires_grad() {
        return Ok(Edge::None);
    }
    Ok(match t.try_grad_fn()? {
        Some((n, nr)) => Edge::Node(n, nr),
        None if t.requires_grad_flag() => Edge::Leaf(t.clone()),
        // A view taken under `no_grad()`: it requires grad through its base
        // but is outside the base's graph, so its gradient goes nowhere.
        None => Edge::None,
    })
}

/// `try_gradient_edge` for `record`, which cannot fail: a refusal is kept
/// for the binding to raise when the op returns (`take_deferred_error`).
pub fn gradient_edge(t: &Tensor) -> Edge {
    try_gradient_edge(t).unwrap_or_else(|e| {
        defer_error(e);
        Edge::None
    })
}

thread_local! {
    static DEFERRED: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// Records an error found while recording a node (the first one wins).
fn defer_error(e: Error) {
    DEFERRED.with(|d| {
        d.borrow_mut().get_or_insert(e);
    });
    flags::set(flags::DEFERRED, true);
}

/// The error deferred by the last recording on this thread, if any. The
/// binding checks it after every op call, so an op that used a tensor PyTorch
/// refuses raises at that call, as in PyTorch, although ops themselves record
/// infallibly after computing their result.
#[inline]
pub fn take_deferred_error() -> Option<Error> {
    if !flags::any(flags::DEFERRED) {
        return None;
    }
    take_deferred_slow()
}

#[cold]
fn take_deferred_slow() -> Option<Error> {
    flags::set(flags::DEFERRED, false);
    DEFERRED.with(|d| d.borrow_mut().take())
}

/// Records one node with `inputs` and a single output `out`, and attaches it.
pub fn record<F>(
    name: &'static str,
    inputs: &[&Tensor],
    out: &Tensor,
    saved: SmallVec<[Option<SavedTensor>; 2]>,
    f: F,
) where
    F: Fn(&BackwardCtx<'_>) -> Result<Grads> + Send + Sync + 'static,
{
    record_multi(name, inputs, std::slice::from_ref(out), saved, f)
}

/// Records one node with several outputs.
pub fn record_multi<F>(
    name: &'static str,
    inputs: &[&Tensor],
    outs: &[Tensor],
    saved: SmallVec<[Option<SavedTensor>; 2]>,
    f: F,
) where
    F: Fn(&BackwardCtx<'_>) -> Result<Grads> + Send + Sync + 'static,
{
    record_inner(name, inputs, outs, saved, f, None)
}

/// `record` for an op that knows its forward-mode rule (`jvp`: the output's
/// tangent from the inputs' tangents, in differentiable ops), used instead
/// of the rule derived from the backward closure.
pub fn record_jvp<F, J>(
    name: &'static str,
    inputs: &[&Tensor],
    out: &Tensor,
    saved: SmallVec<[Option<SavedTensor>; 2]>,
    f: F,
    jvp: J,
) where
    F: Fn(&BackwardCtx<'_>) -> Result<Grads> + Send + Sync + 'static,
    J: FnOnce(&[Option<Tensor>]) -> Result<Tensor>,
{
    let j: forward::Jvp<'_> = Box::new(move |t| Ok(vec![Some(jvp(t)?)]));
    record_inner(name, inputs, std::slice::from_ref(out), saved, f, Some(j))
}

fn record_inner<F>(
    name: &'static str,
    inputs: &[&Tensor],
    outs: &[Tensor],
    saved: SmallVec<[Option<SavedTensor>; 2]>,
    f: F,
    jvp: Option<forward::Jvp<'_>>,
) where
    F: Fn(&BackwardCtx<'_>) -> Result<Grads> + Send + Sync + 'static,
{
    let dual = forward::any_tangent(inputs);
    // Under forward AD an op may run only for its tangent: then the node is
    // built (its rule gives the tangent) but attached to nothing.
    let attach = !dual || (is_grad_enabled() && inputs.iter().any(|t| t.requires_grad()));
    let edges = inputs
        .iter()
        .map(|t| if attach { gradient_edge(t) } else { Edge::None })
        .collect();
    let metas = inputs.iter().map(|t| Meta::of(t)).collect();
    let out_meta = outs.iter().map(Meta::of).collect();
    let node = NodeRef::new(Node::new(
        edges,
        metas,
        out_meta,
        saved,
        Box::new(FnBackward { name, f }),
    ));
    if attach {
        for (i, o) in outs.iter().enumerate() {
            o.set_grad_fn(node.clone(), i as u32);
        }
    }
    if dual {
        let ins: SmallVec<[Option<&Tensor>; 4]> = inputs.iter().map(|t| Some(*t)).collect();
        if let Err(e) = forward::propagate(&node, &ins, outs, attach, jvp) {
            defer_error(e);
        }
    }
}

/// Records a node for `a <op> number`: the number is the node's second input,
/// a constant with no edge (as PyTorch shows it in `next_functions`), and no
/// tensor is made for it.
pub fn record_with_scalar<F>(name: &'static str, a: &Tensor, scalar: DType, out: &Tensor, f: F)
where
    F: Fn(&BackwardCtx<'_>) -> Result<Grads> + Send + Sync + 'static,
{
    let dual = forward::any_tangent(&[a]);
    let attach = !dual || (is_grad_enabled() && a.requires_grad());
    let node = NodeRef::new(Node::new(
        smallvec::smallvec![
            if attach { gradient_edge(a) } else { Edge::None },
            Edge::None
        ],
        smallvec::smallvec![
            Meta::of(a),
            Meta {
                shape: Shape::new(),
                dtype: scalar,
            }
        ],
        smallvec::smallvec![Meta::of(out)],
        SmallVec::new(),
        Box::new(FnBackward { name, f }),
    ));
    if attach {
        out.set_grad_fn(node.clone(), 0);
    }
    if dual {
        if let Err(e) = forward::propagate(
            &node,
            &[Some(a), None],
            std::slice::from_ref(out),
            attach,
            None,
        ) {
            defer_error(e);
        }
    }
}

/// `saved![a, b]`: save inputs; each argument is an `Option<&Tensor>` or `&Tensor`.
#[macro_export]
macro_rules! saved {
    ($($t:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut v: smallvec::SmallVec<[Option<$crate::autograd::SavedTensor>; 2]> = smallvec::SmallVec::new();
        $( v.push($crate::autograd::SaveArg::save($t)); )*
        v
    }};
}

/// What `saved!` accepts.
pub trait SaveArg {
    fn save(self) -> Option<SavedTensor>;
}

impl SaveArg for &Tensor {
    fn save(self) -> Option<SavedTensor> {
        Some(SavedTensor::input(self))
    }
}

impl SaveArg for Option<&Tensor> {
    fn save(self) -> Option<SavedTensor> {
        self.map(SavedTensor::input)
    }
}

impl SaveArg for Option<SavedTensor> {
    fn save(self) -> Option<SavedTensor> {
        self
    }
}
