//! Capture and replay for `ferrograd.compile`, with no Python in it: the
//! tape a captured call records ([`tape`]), what each recorded op is
//! ([`desc`]) and which autograd nodes it made ([`graph`]), in-place ops
//! folded from several recorded ones ([`fold`]), and the replay
//! ([`replay`]): the entries back to back, or the static backward
//! ([`static_backward`]) with its elementwise fast path and buffer pool
//! ([`ew`]), per-entry VJPs ([`vjp`]) and fused elementwise runs
//! ([`fuse`]).
//!
//! The bindings record through `py::capture` and hold tapes through
//! `py::compile`; a Python callable the tape must call (an optimizer's
//! `step`) reaches it as a [`HostCall`].

pub(crate) mod desc;
pub(crate) mod ew;
pub(crate) mod fold;
pub(crate) mod fuse;
pub(crate) mod graph;
pub(crate) mod replay;
pub(crate) mod static_backward;
pub(crate) mod tape;
pub(crate) mod vjp;

pub(crate) use desc::{Desc, Ew};
pub(crate) use fold::fold_inplace;
pub(crate) use graph::{EdgeTo, Graph, Link, SavedRef};
pub(crate) use replay::Tape;
pub(crate) use tape::{
    active, begin, end, entry_count, fail, mark_dynamic, no_rule, note_grad_mode, note_set_grad,
    record, record_backward, record_cast, record_op, refuse_read, set_active, values, with,
    Capture, Entry, HostCall, Opt, Rule, SIn, Src, Step, STATE,
};

#[cfg(test)]
mod tests;
