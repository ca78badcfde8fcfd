//! The node arena: graph nodes live in fixed slots that are recycled through
//! a free list, and are reference-counted by the tensors and nodes pointing at
//! them. A training loop that builds and frees the same graph every step
//! reuses the same slots instead of going to the allocator for each op.
//!
//! Freeing is iterative: when a node's count reaches zero its contents are
//! queued and dropped by a loop on the outermost frame, so releasing a chain of
//! a million nodes (node -> saved tensor -> node -> ...) never recurses deeply.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{fence, AtomicPtr, AtomicU32, Ordering};

use parking_lot::Mutex;

use super::node::Node;

const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = 1 << 18;

struct Slot {
    rc: AtomicU32,
    node: UnsafeCell<MaybeUninit<Node>>,
}

// A slot's node is written once while its count goes 0 -> 1 under the free-list
// lock, read while the count is positive, and moved out when it returns to 0.
unsafe impl Sync for Slot {}

/// Chunk pointers never move once published, so a slot's address is stable
/// and reading a live node takes no lock.
static CHUNKS: [AtomicPtr<Slot>; MAX_CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CHUNKS];

struct FreeList {
    free: Vec<u32>,
    next: u32,
}

static FREE: Mutex<FreeList> = Mutex::new(FreeList {
    free: Vec::new(),
    next: 0,
});

fn slot(idx: u32) -> &'static Slot {
    let chunk = CHUNKS[(idx >> CHUNK_BITS) as usize].load(Ordering::Acquire);
    // SAFETY: `idx` came from `alloc`, which published the chunk before
    // handing out any index in it; chunks are never freed.
    unsafe { &*chunk.add(idx as usize & (CHUNK - 1)) }
}

fn alloc_index() -> u32 {
    let mut fl = FREE.lock();
    if let Some(i) = fl.free.pop() {
        return i;
    }
    let i = fl.next;
    let c = (i >> CHUNK_BITS) as usize;
    if i as usize & (CHUNK - 1) == 0 {
        assert!(c < MAX_CHUNKS, "autograd node arena exhausted");
        let chunk: Box<[Slot]> = (0..CHUNK)
            .map(|_| Slot {
                rc: AtomicU32::new(0),
                node: UnsafeCell::new(MaybeUninit::uninit()),
            })
            .collect();
        CHUNKS[c].store(Box::leak(chunk).as_mut_ptr(), Ordering::Release);
    }
    fl.next += 1;
    i
}

/// A counted reference to a graph node.
pub struct NodeRef(u32);

impl NodeRef {
    pub fn new(node: Node) -> NodeRef {
        let idx = alloc_index();
        let s = slot(idx);
        // SAFETY: a free slot is owned exclusively by whoever popped it.
        unsafe { (*s.node.get()).write(node) };
        s.rc.store(1, Ordering::Release);
        NodeRef(idx)
    }

    /// The slot index: unique among live nodes, reused after a node is freed.
    pub fn index(&self) -> u32 {
        self.0
    }

    pub fn ptr_eq(&self, other: &NodeRef) -> bool {
        self.0 == other.0
    }

    pub fn strong_count(&self) -> u32 {
        slot(self.0).rc.load(Ordering::Acquire)
    }
}

impl std::ops::Deref for NodeRef {
    type Target = Node;
    fn deref(&self) -> &Node {
        // SAFETY: this reference keeps the count positive, so the node is live.
        unsafe { (*slot(self.0).node.get()).assume_init_ref() }
    }
}

impl Clone for NodeRef {
    fn clone(&self) -> NodeRef {
        slot(self.0).rc.fetch_add(1, Ordering::Relaxed);
        NodeRef(self.0)
    }
}

impl Drop for NodeRef {
    fn drop(&mut self) {
        let s = slot(self.0);
        if s.rc.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: the count hit zero, so nobody else can reach this node.
        let node = unsafe { (*s.node.get()).assume_init_read() };
        FREE.lock().free.push(self.0);
        release(node);
    }
}

thread_local! {
    static DRAINING: Cell<bool> = const { Cell::new(false) };
    static PENDING: RefCell<Vec<Node>> = const { RefCell::new(Vec::new()) };
}

/// Drops `node` without recursing into the nodes it keeps alive.
fn release(node: Node) {
    let mut node = Some(node);
    match DRAINING.try_with(|d| d.replace(true)) {
        Ok(true) => {
            // Someone up the stack is draining: hand the node over. If the
            // queue is gone (thread exit), it is dropped here instead.
            let _ = PENDING.try_with(|p| {
                if let Some(n) = node.take() {
                    p.borrow_mut().push(n);
                }
            });
        }
        Ok(false) => {
            drop(node.take());
            while let Some(n) = PENDING.with(|p| p.borrow_mut().pop()) {
                drop(n);
            }
            DRAINING.with(|d| d.set(false));
        }
        Err(_) => {}
    }
}

/// Live node count, for leak tests.
pub fn live_nodes() -> usize {
    let fl = FREE.lock();
    fl.next as usize - fl.free.len()
}
