//! Hooks on graph nodes (`Node.register_prehook`, `Node.register_hook`) and
//! saved-tensor hooks (`autograd.graph.saved_tensors_hooks`): the traits the
//! language binding implements and the per-thread stack of pack/unpack pairs.
//!
//! Tensor hooks and `retain_grad` live in `node.rs` (`NodeHooks`); the engine
//! calls all of them in PyTorch's documented order (see ARCHITECTURE.md,
//! "Hook order").

use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

use super::arena::NodeRef;
use super::node::{unpack_one, Grads, Node, NodeHooks, Saved, FREED_MSG};
use crate::error::{Error, Result};
use crate::tensor::{Shape, Storage, Tensor};

/// `Node.register_prehook`: sees the node's output gradients before the node
/// runs and may replace them (`None` keeps them).
pub trait NodePreHook: Send + Sync {
    fn call(&self, grad_outputs: &Grads) -> Result<Option<Grads>>;
    fn as_any(&self) -> &dyn Any;
}

/// `Node.register_hook`: sees the gradients the node computed for its inputs
/// and the output gradients it was given, and may replace the former.
pub trait NodePostHook: Send + Sync {
    fn call(&self, grad_inputs: &Grads, grad_outputs: &Grads) -> Result<Option<Grads>>;
    fn as_any(&self) -> &dyn Any;
}

/// What a pack hook returned for one saved tensor.
pub trait Packed: Send + Sync {
    /// Runs the unpack hook: the tensor backward reads.
    fn unpack(&self) -> Result<Tensor>;
    fn as_any(&self) -> &dyn Any;
}

/// One `saved_tensors_hooks(pack, unpack)` pair.
pub trait SavedHooks: Send + Sync {
    fn pack(&self, t: &Tensor) -> Result<Arc<dyn Packed>>;
}

/// A saved tensor that went through a pack hook: the packed object, plus the
/// saved tensor's version counter held weakly (so packing can free the
/// memory, as offloading hooks want) to refuse an in-place write made after
/// saving, as PyTorch does for the input of a pack hook.
pub struct PackedSaved {
    pub packed: Arc<dyn Packed>,
    /// The saved tensor's shape, for the in-place error message.
    pub shape: Shape,
    pub storage: Weak<Storage>,
    pub version: u64,
}

thread_local! {
    static STACK: RefCell<Vec<Arc<dyn SavedHooks>>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `flags::SAVED_HOOKS` equal to "the stack is not empty", so saving
/// a tensor with no hooks active costs one bit test.
fn sync_flag(stack: &[Arc<dyn SavedHooks>]) {
    crate::flags::set(crate::flags::SAVED_HOOKS, !stack.is_empty());
}

/// `saved_tensors_hooks.__enter__`: hooks are thread-local, the innermost wins.
pub fn push_saved_hooks(h: Arc<dyn SavedHooks>) {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        s.push(h);
        sync_flag(&s);
    });
}

/// `saved_tensors_hooks.__exit__`.
pub fn pop_saved_hooks() -> Option<Arc<dyn SavedHooks>> {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        let h = s.pop();
        sync_flag(&s);
        h
    })
}

/// Restores the stack taken by [`run_without_saved_hooks`] on drop, also when
/// the pack hook fails or panics.
struct Restore(Option<Vec<Arc<dyn SavedHooks>>>);

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            STACK.with(|s| {
                let mut cur = s.borrow_mut();
                // Pairs a hook pushed and forgot to pop stay above ours.
                let extra = std::mem::take(&mut *cur);
                *cur = v;
                cur.extend(extra);
                sync_flag(&cur);
            });
        }
    }
}

/// Runs the innermost pack hook on `t`, or returns `None` when no hooks are
/// active. The pack hook itself runs with no saved-tensor hooks, so tensors
/// saved by ops inside it are saved plainly rather than packed recursively.
#[inline]
pub fn pack_if_hooked(t: &Tensor) -> Option<Result<PackedSaved>> {
    if !crate::flags::any(crate::flags::SAVED_HOOKS) {
        return None;
    }
    pack_hooked(t)
}

#[cold]
fn pack_hooked(t: &Tensor) -> Option<Result<PackedSaved>> {
    let hook = STACK.with(|s| s.borrow().last().cloned())?;
    let _restore = Restore(Some(STACK.with(|s| {
        let mut s = s.borrow_mut();
        let taken = std::mem::take(&mut *s);
        sync_flag(&s);
        taken
    })));
    Some(hook.pack(t).map(|packed| PackedSaved {
        packed,
        shape: t.shape(),
        storage: Arc::downgrade(&t.storage()),
        version: t.version(),
    }))
}

/// The version a packed tensor's memory is at now, or `None` when that
/// memory is gone (then nobody can have written it).
pub fn packed_current_version(p: &PackedSaved) -> Option<u64> {
    p.storage.upgrade().map(|s| s.version())
}

impl Node {
    /// Registers `Node.register_prehook`'s hook under `id`.
    pub fn add_node_pre_hook(&self, id: u64, hook: Arc<dyn NodePreHook>) {
        self.with_hooks(|h| h.node_pre.push((id, hook)));
    }

    /// Registers `Node.register_hook`'s hook under `id`.
    pub fn add_node_post_hook(&self, id: u64, hook: Arc<dyn NodePostHook>) {
        self.with_hooks(|h| h.node_post.push((id, hook)));
    }

    /// Calls `f` on every node hook and the metadata, unless another thread
    /// holds the hook list. Never blocks: the garbage collector uses this.
    pub fn try_visit_node_hooks<E>(
        &self,
        mut f: impl FnMut(&dyn Any) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        if let Some(h) = self.hooks.try_lock() {
            if let Some(h) = h.as_ref() {
                for (_, hook) in &h.node_pre {
                    f(hook.as_any())?;
                }
                for (_, hook) in &h.node_post {
                    f(hook.as_any())?;
                }
                if let Some(m) = &h.metadata {
                    f(m.as_ref())?;
                }
            }
        }
        Ok(())
    }

    /// Takes the node hooks and metadata off this node (the garbage
    /// collector breaking a cycle); the caller drops them after the lock is
    /// released. Never blocks.
    pub fn try_take_node_hooks(&self) -> NodeHooks {
        let mut out = NodeHooks::default();
        if let Some(mut h) = self.hooks.try_lock() {
            if let Some(h) = h.as_mut() {
                out.node_pre = std::mem::take(&mut h.node_pre);
                out.node_post = std::mem::take(&mut h.node_post);
                out.metadata = h.metadata.take();
            }
        }
        out
    }

    /// The object behind `Node.metadata`, made by `make` on first use; it
    /// lives as long as the node.
    pub fn metadata_or_insert(
        &self,
        make: impl FnOnce() -> Arc<dyn Any + Send + Sync>,
    ) -> Arc<dyn Any + Send + Sync> {
        self.with_hooks(|h| h.metadata.get_or_insert_with(make).clone())
    }
}

/// One saved slot as introspection sees it (`Node._saved_*`).
pub struct SavedSlot {
    /// Saved as the node's own output (`_saved_result`).
    pub is_output: bool,
    /// The stored tensor, or `None` when a pack hook holds it.
    pub raw: Option<Tensor>,
}

impl Node {
    /// The node's saved slots in order (`None` for an optional tensor that
    /// was not saved), or `None` once they were freed.
    pub fn saved_slots(&self) -> Option<Vec<Option<SavedSlot>>> {
        match &*self.saved.lock() {
            Saved::Live(list) => Some(
                list.iter()
                    .map(|s| {
                        s.as_ref().map(|s| SavedSlot {
                            is_output: s.is_output(),
                            raw: (!s.is_packed()).then(|| s.data().clone()),
                        })
                    })
                    .collect(),
            ),
            Saved::Released => None,
        }
    }

    /// Slot `i` unpacked as backward would read it (version check, unpack hook).
    pub fn unpack_saved_at(this: &NodeRef, i: usize) -> Result<Option<Tensor>> {
        let s = match &*this.saved.lock() {
            Saved::Live(list) => list.get(i).cloned().flatten(),
            Saved::Released => return Err(Error::runtime(FREED_MSG)),
        };
        s.map(|s| unpack_one(this, &s)).transpose()
    }

    /// `SavedTensor.register_hooks`: packs slot `i` now with `hooks`.
    pub fn pack_saved_at(&self, i: usize, hooks: &dyn SavedHooks) -> Result<()> {
        let mut s = match &*self.saved.lock() {
            Saved::Live(list) => match list.get(i).cloned().flatten() {
                Some(s) => s,
                None => {
                    return Err(Error::runtime(
                        "Calling register_hooks on a saved tensor with value None is forbidden",
                    ))
                }
            },
            Saved::Released => return Err(Error::runtime(FREED_AFTER_MSG)),
        };
        if s.is_packed() {
            return Err(Error::runtime(
                "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of hooks is allowed at a time.",
            ));
        }
        // The pack hook runs without the lock (it is Python and may read
        // this node); the slot is replaced only if nothing changed meanwhile.
        s.pack_with(hooks)?;
        match &mut *self.saved.lock() {
            Saved::Live(list) => match list.get_mut(i) {
                Some(Some(cur)) if !cur.is_packed() => *cur = s,
                _ => {
                    return Err(Error::runtime(
                        "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of hooks is allowed at a time.",
                    ))
                }
            },
            Saved::Released => return Err(Error::runtime(FREED_AFTER_MSG)),
        }
        Ok(())
    }
}

const FREED_AFTER_MSG: &str = "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved values after calling backward.";
