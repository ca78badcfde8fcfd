//! Graph nodes: the backward rule of one op call, its input edges and the
//! tensors it saved.

use std::any::Any;
use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::arena::NodeRef;
use super::hooks::{NodePostHook, NodePreHook, PackedSaved, SavedHooks};
use crate::error::{Error, Result};
use crate::tensor::{fmt_shape, DType, Shape, Tensor, WeakTensor};

/// Gradients flowing in or out of a node, one slot per output or input.
pub type Grads = SmallVec<[Option<Tensor>; 2]>;

/// Where the gradient for one input of a node goes.
#[derive(Clone)]
pub enum Edge {
    /// The input does not require grad.
    None,
    /// Output `nr` of another node.
    Node(NodeRef, u32),
    /// A leaf tensor that requires grad: the gradient accumulates into it.
    Leaf(Tensor),
}

/// Shape and dtype of a node input or output, so gradients can be checked,
/// reduced to the right shape and materialised without the tensors.
#[derive(Clone, Debug)]
pub struct Meta {
    pub shape: Shape,
    pub dtype: DType,
}

impl Meta {
    pub fn of(t: &Tensor) -> Meta {
        let v = t.view();
        Meta {
            shape: v.shape.clone(),
            dtype: v.dtype(),
        }
    }
}

/// A tensor saved for backward, with the version it had when saved.
#[derive(Clone)]
pub struct SavedTensor {
    data: Tensor,
    version: u64,
    /// Saved outputs are stored without their `grad_fn` (that would be a
    /// cycle through this node) and re-attached to it when unpacked.
    output_nr: Option<u32>,
    /// Set when a `saved_tensors_hooks` pack hook took the tensor: `data` is
    /// then an empty placeholder and backward reads the unpack hook's result.
    packed: Option<Arc<PackedSaved>>,
}

impl SavedTensor {
    pub fn input(t: &Tensor) -> SavedTensor {
        SavedTensor::packing(t, t.clone(), None)
    }

    pub fn output(t: &Tensor, nr: u32) -> SavedTensor {
        SavedTensor::packing(t, t.detach(), Some(nr))
    }

    /// Runs the active pack hook, if any; a failing hook is reported by the
    /// op's binding when the op returns (recording cannot fail).
    fn packing(t: &Tensor, data: Tensor, output_nr: Option<u32>) -> SavedTensor {
        let packed = match super::hooks::pack_if_hooked(t) {
            None => None,
            Some(Ok(p)) => Some(Arc::new(p)),
            Some(Err(e)) => {
                super::defer_error(e);
                None
            }
        };
        SavedTensor {
            version: t.version(),
            data: if packed.is_some() {
                Tensor::zeros(smallvec::smallvec![0], t.dtype())
            } else {
                data
            },
            output_nr,
            packed,
        }
    }

    /// Whether a pack hook holds this tensor.
    pub fn is_packed(&self) -> bool {
        self.packed.is_some()
    }

    /// Packs the stored tensor with `hooks` (`SavedTensor.register_hooks`).
    pub fn pack_with(&mut self, hooks: &dyn SavedHooks) -> Result<()> {
        let packed = hooks.pack(&self.data)?;
        self.packed = Some(Arc::new(PackedSaved {
            shape: self.data.shape(),
            packed,
            storage: Arc::downgrade(&self.data.storage()),
            version: self.version,
        }));
        self.data = Tensor::zeros(smallvec::smallvec![0], self.data.dtype());
        Ok(())
    }

    /// The saved tensor as stored (not checked against its version).
    pub fn data(&self) -> &Tensor {
        &self.data
    }

    pub fn is_output(&self) -> bool {
        self.output_nr.is_some()
    }

    /// Which output of its node a saved output is.
    pub fn output_nr(&self) -> Option<u32> {
        self.output_nr
    }

    /// Whether the saved tensor is still at the version it was saved at.
    pub fn is_current(&self) -> bool {
        self.data.version() == self.version
    }

    /// Saves `t` in place of the current tensor, at `t`'s current version.
    /// A saved output must stay detached (see `output_nr`).
    pub fn replace(&mut self, t: Tensor) {
        self.packed = None;
        self.version = t.version();
        self.data = if self.output_nr.is_some() {
            t.detach()
        } else {
            t
        };
    }
}

/// Context handed to a backward rule.
pub struct BackwardCtx<'a> {
    /// One gradient per output of the node.
    pub grads: &'a [Option<Tensor>],
    /// The saved tensors, unpacked and checked against their versions.
    pub saved: &'a [Option<Tensor>],
    /// Which inputs need a gradient; a rule may skip the others.
    pub needs: &'a [bool],
    pub node: &'a NodeRef,
}

impl BackwardCtx<'_> {
    /// The gradient of output 0 (always present for built-in single-output ops).
    pub fn grad(&self) -> Result<&Tensor> {
        self.grads
            .first()
            .and_then(|g| g.as_ref())
            .ok_or_else(|| Error::runtime("missing output gradient"))
    }

    pub fn saved(&self, i: usize) -> Result<&Tensor> {
        self.saved
            .get(i)
            .and_then(|g| g.as_ref())
            .ok_or_else(|| Error::runtime("internal error: a saved tensor was not recorded"))
    }

    pub fn needs(&self, i: usize) -> bool {
        self.needs.get(i).copied().unwrap_or(false)
    }
}

/// A backward rule. Built-in ops use closures (see [`FnBackward`]); the
/// Python layer implements this for custom `autograd.Function`s.
pub trait Backward: Send + Sync {
    /// The node's name as `grad_fn.name()` reports it (`MulBackward0`).
    fn name(&self) -> Cow<'static, str>;
    /// Gradients for each input given gradients for each output.
    fn apply(&self, ctx: &BackwardCtx<'_>) -> Result<Grads>;
    /// Whether undefined output gradients are replaced by zeros before `apply`.
    fn materialize_grads(&self) -> bool {
        true
    }
    /// Whether the engine should check the returned gradients' shapes and
    /// count (built-in rules are trusted; user code is not).
    fn validate_outputs(&self) -> bool {
        false
    }
    /// Called when the node's saved tensors are freed (after a backward
    /// without `retain_graph`), so rules holding state elsewhere can drop it.
    fn on_release(&self) {}
    fn as_any(&self) -> &dyn Any;
}

/// A built-in backward rule: a name and a closure.
pub struct FnBackward<F> {
    pub name: &'static str,
    pub f: F,
}

impl<F> Backward for FnBackward<F>
where
    F: Fn(&BackwardCtx<'_>) -> Result<Grads> + Send + Sync + 'static,
{
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.name)
    }
    fn apply(&self, ctx: &BackwardCtx<'_>) -> Result<Grads> {
        (self.f)(ctx)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A hook on a gradient: returns a replacement, or `None` to keep it.
pub trait GradHook: Send + Sync {
    fn call(&self, grad: &Tensor) -> Result<Option<Tensor>>;
    fn as_any(&self) -> &dyn Any;
    /// When a hook kept on a leaf runs; the engine runs the stages in this
    /// order, each in registration order.
    fn stage(&self) -> LeafHookStage {
        LeafHookStage::Tensor
    }
}

/// The moments of a leaf's gradient, in PyTorch's order: tensor hooks
/// (`register_hook`), then its `AccumulateGrad` node's pre-hooks (both may
/// replace the gradient), the write of `.grad`, the post-accumulate-grad
/// hooks (called with the leaf), then the node's post-hooks (called with the
/// gradient that was accumulated; they cannot replace anything).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafHookStage {
    Tensor,
    NodePre,
    PostAccumulate,
    NodePost,
}

impl LeafHookStage {
    /// Whether the stage needs `.grad` written as soon as the leaf's last
    /// gradient arrived rather than at the end of the backward pass.
    pub fn after_write(self) -> bool {
        matches!(
            self,
            LeafHookStage::PostAccumulate | LeafHookStage::NodePost
        )
    }
}

/// Per saved slot: the tensor as stored and, for a saved output, its number.
pub type SavedLayout = SmallVec<[Option<(Tensor, Option<u32>)>; 2]>;

pub(super) enum Saved {
    Live(SmallVec<[Option<SavedTensor>; 2]>),
    Released,
}

/// Hooks registered on a non-leaf tensor, kept on the node that produced it,
/// and the node's own hooks and metadata (`autograd/hooks.rs`).
#[derive(Default, Clone)]
pub struct NodeHooks {
    pub pre: Vec<(u64, u32, Arc<dyn GradHook>)>,
    pub retain: Vec<(u32, WeakTensor)>,
    pub node_pre: Vec<(u64, Arc<dyn NodePreHook>)>,
    pub node_post: Vec<(u64, Arc<dyn NodePostHook>)>,
    pub metadata: Option<Arc<dyn Any + Send + Sync>>,
}

pub struct Node {
    /// Creation order; among ready nodes the newest runs first.
    pub seq: u64,
    pub edges: SmallVec<[Edge; 2]>,
    pub inputs: SmallVec<[Meta; 2]>,
    pub outputs: SmallVec<[Meta; 1]>,
    pub(super) saved: Mutex<Saved>,
    /// Whether this node saved anything (backward twice is an error only then).
    has_saved: bool,
    pub backward: Box<dyn Backward>,
    pub(super) hooks: Mutex<Option<Box<NodeHooks>>>,
    /// Where the node was made, in anomaly mode only (`anomaly.rs`).
    pub(crate) anomaly: Option<Arc<super::anomaly::NodeTrace>>,
}

thread_local! {
    static SEQ: Cell<u64> = const { Cell::new(0) };
}

/// The creation sequence of the newest node recorded on this thread: nodes
/// recorded after this call have a larger `seq`.
pub fn current_seq() -> u64 {
    SEQ.with(|s| s.get())
}

fn next_seq() -> u64 {
    SEQ.with(|s| {
        let v = s.get() + 1;
        s.set(v);
        v
    })
}

pub(super) const FREED_MSG: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

impl Node {
    pub fn new(
        edges: SmallVec<[Edge; 2]>,
        inputs: SmallVec<[Meta; 2]>,
        outputs: SmallVec<[Meta; 1]>,
        saved: SmallVec<[Option<SavedTensor>; 2]>,
        backward: Box<dyn Backward>,
    ) -> Node {
        Node {
            seq: next_seq(),
            edges,
            inputs,
            outputs,
            has_saved: saved.iter().any(|s| s.is_some()),
            saved: Mutex::new(Saved::Live(saved)),
            backward,
            hooks: Mutex::new(None),
            anomaly: super::anomaly::for_new_node(),
        }
    }

    pub fn name(&self) -> Cow<'static, str> {
        self.backward.name()
    }

    /// Unpacks the saved tensors for `this` node, checking versions.
    pub fn unpack_saved(this: &NodeRef) -> Result<SmallVec<[Option<Tensor>; 2]>> {
        // Unpacked from a copy (handles only): an unpack hook runs Python and
        // may itself read this node's saved tensors.
        let list = match &*this.saved.lock() {
            Saved::Live(list) => list.clone(),
            Saved::Released => return Err(Error::runtime(FREED_MSG)),
        };
        let mut out = SmallVec::with_capacity(list.len());
        for s in list.iter() {
            out.push(match s {
                None => None,
                Some(s) => Some(unpack_one(this, s)?),
            });
        }
        Ok(out)
    }

    /// Frees the saved tensors (after backward without `retain_graph`).
    pub fn release_saved(&self) {
        let old = {
            let mut saved = self.saved.lock();
            if !self.has_saved {
                return;
            }
            std::mem::replace(&mut *saved, Saved::Released)
        };
        drop(old);
        self.backward.on_release();
    }

    /// Calls `f` on each saved tensor (nothing if they were released).
    pub fn for_each_saved_mut(
        &self,
        mut f: impl FnMut(&mut SavedTensor) -> Result<()>,
    ) -> Result<()> {
        if let Saved::Live(list) = &mut *self.saved.lock() {
            for s in list.iter_mut().flatten() {
                f(s)?;
            }
        }
        Ok(())
    }

    /// The saved tensors as stored (`None` once released), for introspection:
    /// graph pictures and memory summaries read them without unpacking.
    pub fn saved_tensors(&self) -> Option<Vec<Tensor>> {
        match &*self.saved.lock() {
            Saved::Live(list) => Some(
                list.iter()
                    .flatten()
                    .filter(|s| !s.is_packed())
                    .map(|s| s.data().clone())
                    .collect(),
            ),
            Saved::Released => None,
        }
    }

    /// Where each saved tensor came from, for `ferrograd.compile`'s static
    /// backward (`py/static_bwd.rs`), which calls this node's rule on the
    /// replay's own tensors: per slot the saved tensor as stored and, for a
    /// saved output, its output number. `None` once released or when a
    /// `saved_tensors_hooks` pack hook holds a tensor.
    pub fn saved_layout(&self) -> Option<SavedLayout> {
        match &*self.saved.lock() {
            Saved::Live(list) => list
                .iter()
                .map(|s| match s {
                    None => Some(None),
                    Some(s) if s.is_packed() => None,
                    Some(s) => Some(Some((s.data().clone(), s.output_nr()))),
                })
                .collect(),
            Saved::Released => None,
        }
    }

    pub fn is_released(&self) -> bool {
        matches!(*self.saved.lock(), Saved::Released)
    }

    pub fn add_pre_hook(&self, id: u64, output_nr: u32, hook: Arc<dyn GradHook>) {
        self.hooks
            .lock()
            .get_or_insert_with(Default::default)
            .pre
            .push((id, output_nr, hook));
    }

    pub fn remove_hook(&self, id: u64) -> bool {
        // The removed hook is dropped after the lock is released: dropping a
        // binding's hook may run arbitrary code that touches this node again.
        let mut removed: Vec<Box<dyn Any>> = Vec::new();
        {
            let mut h = self.hooks.lock();
            if let Some(h) = h.as_mut() {
                if let Some(pos) = h.pre.iter().position(|(i, _, _)| *i == id) {
                    removed.push(Box::new(h.pre.remove(pos).2));
                }
                if let Some(pos) = h.node_pre.iter().position(|(i, _)| *i == id) {
                    removed.push(Box::new(h.node_pre.remove(pos).1));
                }
                if let Some(pos) = h.node_post.iter().position(|(i, _)| *i == id) {
                    removed.push(Box::new(h.node_post.remove(pos).1));
                }
            }
        }
        !removed.is_empty()
    }

    /// Runs `f` on the hook list, creating it on first use.
    pub(super) fn with_hooks<R>(&self, f: impl FnOnce(&mut NodeHooks) -> R) -> R {
        f(self.hooks.lock().get_or_insert_with(Default::default))
    }

    /// Calls `f` on every pre-hook, unless another thread holds the hook
    /// list (then nothing is visited). Never blocks: the garbage collector
    /// uses this to find the objects the hooks keep alive.
    pub fn try_visit_pre_hooks<E>(
        &self,
        mut f: impl FnMut(&Arc<dyn GradHook>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        if let Some(h) = self.hooks.try_lock() {
            if let Some(h) = h.as_ref() {
                for (_, _, hook) in &h.pre {
                    f(hook)?;
                }
            }
        }
        Ok(())
    }

    /// Takes every pre-hook off this node (for the garbage collector breaking
    /// a cycle). The caller drops them after the lock is released. Never
    /// blocks: returns nothing if another thread holds the hook list.
    pub fn try_take_pre_hooks(&self) -> Vec<(u64, u32, Arc<dyn GradHook>)> {
        match self.hooks.try_lock() {
            Some(mut h) => h
                .as_mut()
                .map(|h| std::mem::take(&mut h.pre))
                .unwrap_or_default(),
            None => Vec::new(),
        }
    }

    pub fn add_retain(&self, output_nr: u32, t: WeakTensor) {
        self.hooks
            .lock()
            .get_or_insert_with(Default::default)
            .retain
            .push((output_nr, t));
    }

    /// Snapshot of the hooks so they can run without holding the lock
    /// (a hook may register further hooks).
    pub fn hooks_snapshot(&self) -> Option<NodeHooks> {
        self.hooks.lock().as_ref().map(|h| (**h).clone())
    }
}

pub(super) fn unpack_one(node: &NodeRef, s: &SavedTensor) -> Result<Tensor> {
    let (now, data) = match &s.packed {
        // Memory nobody holds any more cannot have been written since.
        Some(p) => (
            super::hooks::packed_current_version(p).unwrap_or(p.version),
            None,
        ),
        None => (s.data.version(), Some(&s.data)),
    };
    if now != s.version {
        let v = s.data.view();
        let (producer, nr) = match s.output_nr {
            Some(nr) => (node.name().into_owned(), nr),
            None => match data.and_then(|d| d.grad_fn()) {
                Some((n, nr)) => (n.name().into_owned(), nr),
                None => ("a leaf".to_string(), 0),
            },
        };
        let which = if producer == "a leaf" {
            "a leaf Variable".to_string()
        } else {
            format!("output {nr} of {producer}")
        };
        return Err(Error::runtime(format!(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [ferrograd.{}Tensor {}], which is {which}, is at version {now}; expected version {} instead.{}",
            v.dtype().scalar_name(),
            fmt_shape(s.packed.as_ref().map_or(&v.shape, |p| &p.shape)),
            s.version,
            super::anomaly::inplace_note(&s.data, s.version, now)
        )));
    }
    let unpacked;
    let data = match &s.packed {
        Some(p) => {
            unpacked = p.packed.unpack()?;
            &unpacked
        }
        None => &s.data,
    };
    Ok(match s.output_nr {
        // Re-attach a saved output to this node so a backward recorded with
        // `create_graph=True` differentiates through it.
        Some(nr) if super::is_grad_enabled() => {
            let t = data.detach();
            super::forward::carry_tangent(data, &t);
            t.set_grad_fn(node.clone(), nr);
            t
        }
        _ => data.clone(),
    })
}
