//! Anomaly detection in the graph: the forward stack each node keeps, the
//! engine's NaN check and error report, and the note the "modified by an
//! inplace operation" error gets about the write that caused it.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

use super::node::Grads;
use super::NodeRef;
use crate::anomaly::{self, Trace};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Where a node was made: the forward stack and, for a node recorded while
/// another node's backward ran (`create_graph=True`, a checkpoint's
/// recomputation), that node, as PyTorch's "Previous calculation was
/// induced by" chain.
pub struct NodeTrace {
    trace: Option<Arc<dyn Trace>>,
    parent: Option<(Cow<'static, str>, Arc<NodeTrace>)>,
}

thread_local! {
    /// The node whose backward is running on this thread (anomaly mode only).
    static RUNNING: RefCell<Option<(Cow<'static, str>, Arc<NodeTrace>)>> = const { RefCell::new(None) };
    /// Nesting of `run_node` (a checkpoint runs nodes inside a node) and
    /// whether the innermost failure was already reported, so one error
    /// gives one warning.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static REPORTED: Cell<bool> = const { Cell::new(false) };
}

/// The trace a new node keeps: nothing (one thread-local read) unless
/// anomaly mode is on.
#[inline]
pub(crate) fn for_new_node() -> Option<Arc<NodeTrace>> {
    if !anomaly::is_enabled() {
        return None;
    }
    Some(Arc::new(NodeTrace {
        trace: anomaly::capture(),
        parent: RUNNING.with(|r| r.borrow().clone()),
    }))
}

/// Runs one node's backward (`f`) under anomaly mode's checks: its
/// gradients must be free of NaN, and any error it raises is preceded by a
/// warning showing where the node was made.
#[inline]
pub(crate) fn run_node(node: &NodeRef, f: impl FnOnce() -> Result<Grads>) -> Result<Grads> {
    if !anomaly::is_enabled() {
        return f();
    }
    run_node_checked(node, f)
}

fn run_node_checked(node: &NodeRef, f: impl FnOnce() -> Result<Grads>) -> Result<Grads> {
    let name = node.name();
    let own = node.anomaly.clone().unwrap_or_else(|| {
        Arc::new(NodeTrace {
            trace: None,
            parent: None,
        })
    });
    let prev = RUNNING.with(|r| r.replace(Some((name.clone(), own))));
    let depth = DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v
    });
    let r = f().and_then(|grads| {
        if anomaly::check_nan() {
            for (i, g) in grads.iter().enumerate() {
                if g.as_ref().is_some_and(has_nan) {
                    return Err(Error::runtime(format!(
                        "Function '{name}' returned nan values in its {i}th output."
                    )));
                }
            }
        }
        Ok(grads)
    });
    RUNNING.with(|r| *r.borrow_mut() = prev);
    DEPTH.with(|d| d.set(depth));
    if r.is_err() && !REPORTED.with(|x| x.replace(true)) {
        report(&name, node.anomaly.as_deref());
    }
    if depth == 0 {
        REPORTED.with(|x| x.set(false));
    }
    r
}

impl NodeTrace {
    /// The forward stack as `traceback.format_stack()`'s entries (what PyTorch
    /// puts in `grad_fn.metadata["traceback_"]`), if one was captured.
    pub(crate) fn frames(&self) -> Option<Vec<String>> {
        self.trace.as_ref().map(|t| t.frames())
    }
}

/// PyTorch's warning for a failed node: its forward stack, then each node
/// whose backward recorded it.
fn report(name: &str, trace: Option<&NodeTrace>) {
    let stack = |t: Option<&NodeTrace>| {
        t.and_then(|t| t.trace.as_ref())
            .map(|t| t.format())
            .unwrap_or_default()
    };
    match trace.and_then(|t| t.trace.as_ref()) {
        Some(t) => anomaly::warn(&format!(
            "Error detected in {name}. Traceback of forward call that caused the error:\n{}",
            t.format()
        )),
        None => anomaly::warn(&format!(
            "Error detected in {name}. No forward pass information available. Enable detect anomaly during forward pass for more information."
        )),
    }
    let mut cur = trace.and_then(|t| t.parent.clone());
    while let Some((pname, p)) = cur {
        anomaly::warn(&format!(
            "\n\nPrevious calculation was induced by {pname}. Traceback of forward call that induced the previous calculation:\n{}",
            stack(Some(&p))
        ));
        cur = p.parent.clone();
    }
}

fn has_nan(t: &Tensor) -> bool {
    if !t.dtype().is_float() {
        return false;
    }
    let c = crate::ops::compute_contig(t);
    let v = c.view();
    crate::dispatch_float!(v.dtype(), T => {
        v.as_slice::<T>().is_some_and(|s| s.iter().any(|x| x.is_nan()))
    })
}

/// What the "modified by an inplace operation" error adds after PyTorch's
/// sentence about `t` (saved at version `saved`, now at `now`): the op that
/// wrote it and, in anomaly mode, where each write since it was saved ran.
pub(crate) fn inplace_note(t: &Tensor, saved: u64, now: u64) -> String {
    let storage = t.storage();
    let log = storage.writes();
    let mut out = String::new();
    let traced: Vec<_> = log
        .traced
        .as_deref()
        .map(|l| {
            l.iter()
                .filter(|w| w.version > saved && w.version <= now)
                .collect()
        })
        .unwrap_or_default();
    if anomaly::is_enabled() && !traced.is_empty() {
        let all = traced.len() as u64 == now - saved;
        for (k, w) in traced.iter().enumerate() {
            let by = if k == 0 {
                if all {
                    "It was modified by"
                } else {
                    "Among the writes since it was saved, it was modified by"
                }
            } else {
                "\nThen by"
            };
            out.push_str(&format!(
                " {by} {} (version {} -> {}), at:\n{}",
                op_or_unnamed(w.op),
                w.version - 1,
                w.version,
                w.trace.format().trim_end()
            ));
        }
        out.push_str(
            "\nThe warning above shows the forward call that saved the value. Clone the tensor before writing it in place, or write a copy.",
        );
        return out;
    }
    let last = op_or_unnamed(log.last);
    let first = if now - saved == 1 {
        "It was modified by"
    } else {
        "It was last modified by"
    };
    out.push_str(&format!(" {first} {last} (version {} -> {now}).", now - 1));
    if anomaly::is_enabled() {
        out.push_str(" That write ran before anomaly detection was enabled, so where it ran was not recorded.");
    } else {
        out.push_str(" Hint: enable anomaly detection with ferrograd.autograd.set_detect_anomaly(True) to see where that write ran and which forward call saved the value.");
    }
    out
}

fn op_or_unnamed(op: &str) -> Cow<'_, str> {
    if op.is_empty() {
        Cow::Borrowed("an in-place operation")
    } else {
        Cow::Owned(op.to_string())
    }
}
