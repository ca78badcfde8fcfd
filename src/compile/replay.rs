//! A recorded tape and its replay: the entries run back to back on new
//! inputs, each slot dropped after its last use; when the tape has a static
//! backward (`static_backward.rs`) and the inputs suit it, that path runs
//! instead of the entries' eager rules.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use smallvec::SmallVec;

use super::static_backward::{self as statik, Static};
use super::tape::{Capture, Entry, SIn, Src, Step};
use crate::autograd::{self, BackwardRequest};
use crate::ops::Scalar;
use crate::tensor::Tensor;

/// A recorded call: slots (inputs, constants, produced values), the entries
/// that fill them, and which slots are the outputs.
pub(crate) struct Tape {
    pub(crate) srcs: Vec<Src>,
    pub(crate) entries: Vec<Entry>,
    /// Slots to drop after each entry (their last use), so intermediates are
    /// freed as early as the eager call frees them.
    release: Vec<Vec<usize>>,
    pub(crate) outs: Vec<usize>,
    pub(crate) n_inputs: usize,
    grad_mode: bool,
    /// The static backward (`static_backward.rs`), or why the tape has none.
    fast: Result<Static, String>,
    /// Autograd nodes the last replay created (`stats()`).
    last_nodes: AtomicU64,
    /// Whether the last replay took the static path.
    last_static: AtomicBool,
}

pub(crate) fn slot(slots: &[Option<Tensor>], s: usize) -> crate::Result<&Tensor> {
    slots[s]
        .as_ref()
        .ok_or_else(|| crate::Error::Runtime(format!("compiled tape: slot {s} is empty")))
}

impl Tape {
    pub(crate) fn build(c: Capture, outs: Vec<usize>, grad_mode: bool, n_inputs: usize) -> Tape {
        // Last entry reading or writing each produced slot; outputs are kept.
        let keep: HashSet<usize> = outs.iter().copied().collect();
        let mut last = vec![usize::MAX; c.srcs.len()];
        for (i, e) in c.entries.iter().enumerate() {
            touched(e, &mut |s| last[s] = i);
        }
        let mut release = vec![Vec::new(); c.entries.len()];
        for (s, &l) in last.iter().enumerate() {
            if l != usize::MAX && !keep.contains(&s) && !matches!(c.srcs[s], Src::Const(_)) {
                release[l].push(s);
            }
        }
        let fast = statik::build(&statik::BuildIn {
            srcs: &c.srcs,
            entries: &c.entries,
            requires_grad: &c.requires_grad,
            is_leaf: &|s| c.tensor_at(s).is_leaf(),
            outs: &outs,
            grad_mode,
            meta: &|s| {
                let t = c.tensor_at(s);
                (t.shape(), t.dtype())
            },
        });
        Tape {
            srcs: c.srcs,
            entries: c.entries,
            release,
            outs,
            n_inputs,
            grad_mode,
            fast,
            last_nodes: AtomicU64::new(0),
            last_static: AtomicBool::new(false),
        }
    }

    pub(crate) fn run(&self, inputs: &[Tensor], numbers: &[f64]) -> crate::Result<Vec<Tensor>> {
        // A failing replay leaves grad mode as the call found it, as the
        // eager function's `with no_grad()` blocks would on an exception.
        let prev = autograd::is_grad_enabled();
        let seq0 = autograd::current_seq();
        let r = match &self.fast {
            Ok(st) => {
                let slots = self.initial_slots(inputs, numbers, st.n_grads);
                if st.usable(&self.srcs, &slots) {
                    self.last_static.store(true, Ordering::Relaxed);
                    st.run(&self.entries, slots, numbers, &self.outs)
                } else {
                    drop(slots);
                    self.last_static.store(false, Ordering::Relaxed);
                    self.run_entries(inputs, numbers)
                }
            }
            Err(_) => {
                self.last_static.store(false, Ordering::Relaxed);
                self.run_entries(inputs, numbers)
            }
        };
        self.last_nodes
            .store(autograd::current_seq() - seq0, Ordering::Relaxed);
        if r.is_err() {
            autograd::set_grad_enabled(prev);
        }
        r
    }

    fn run_entries(&self, inputs: &[Tensor], numbers: &[f64]) -> crate::Result<Vec<Tensor>> {
        let mut slots = self.initial_slots(inputs, numbers, 0);
        autograd::set_grad_enabled(self.grad_mode);
        for (e, rel) in self.entries.iter().zip(&self.release) {
            exec_step(e, &mut slots, numbers)?;
            for &s in rel {
                slots[s] = None;
            }
        }
        self.outs
            .iter()
            .map(|&s| slot(&slots, s).cloned())
            .collect()
    }

    /// The slot vector at the start of a replay: inputs, constants and
    /// numbers filled, produced slots (and `extra` gradient slots) empty.
    pub(crate) fn initial_slots(
        &self,
        inputs: &[Tensor],
        numbers: &[f64],
        extra: usize,
    ) -> Vec<Option<Tensor>> {
        let mut slots: Vec<Option<Tensor>> = Vec::with_capacity(self.srcs.len() + extra);
        slots.extend(self.srcs.iter().map(|s| match s {
            Src::Input(i) => Some(inputs[*i].clone()),
            Src::Const(t) => Some(t.clone()),
            Src::Produced => None,
            Src::Number { arg, dtype } => Some(Tensor::scalar_of(numbers[*arg], *dtype)),
        }));
        slots.resize(self.srcs.len() + extra, None);
        slots
    }
}

/// Counts describing a tape (`_Tape.stats()` in Python).
#[derive(Debug, Default)]
pub(crate) struct TapeStats {
    pub entries: usize,
    /// Why the tape has no static backward, or `None` when it has one.
    pub static_reason: Option<String>,
    pub forward_entries: usize,
    pub vjp_entries: usize,
    pub static_steps: usize,
    pub last_fast_forward: usize,
    pub last_fast_vjp: usize,
    pub fused_groups: usize,
    pub fused_entries: usize,
    pub last_fused_groups: usize,
    /// Whether the last replay took the static path.
    pub last_static: bool,
    /// Autograd nodes the last replay created.
    pub last_replay_nodes: u64,
}

impl Tape {
    pub(crate) fn stats(&self) -> TapeStats {
        let mut s = TapeStats {
            entries: self.entries.len(),
            last_static: self.last_static.load(Ordering::Relaxed),
            last_replay_nodes: self.last_nodes.load(Ordering::Relaxed),
            ..Default::default()
        };
        match &self.fast {
            Ok(st) => {
                s.forward_entries = st.n_fwd;
                s.vjp_entries = st.n_vjp;
                s.static_steps = st.steps.len();
                s.last_fast_forward = st.fast_fwd.load(Ordering::Relaxed);
                s.last_fast_vjp = st.fast_vjp.load(Ordering::Relaxed);
                s.fused_groups = st.groups.len();
                s.fused_entries = st.groups.iter().map(|g| g.members.len()).sum();
                s.last_fused_groups = st.fused_last.load(Ordering::Relaxed);
            }
            Err(why) => s.static_reason = Some(why.clone()),
        }
        s
    }
}

/// A scalar operand's value on this replay.
#[inline]
pub(crate) fn resolve(s: &SIn, numbers: &[f64]) -> Scalar {
    match *s {
        SIn::Arg(i, Scalar::Int(_)) => Scalar::Int(numbers[i] as i64),
        SIn::Arg(i, Scalar::Bool(_)) => Scalar::Bool(numbers[i] != 0.0),
        SIn::Arg(i, Scalar::Float(_)) => Scalar::Float(numbers[i]),
        SIn::Const(c) => c,
    }
}

/// Calls `touch` on every slot a step reads or writes.
pub(crate) fn touched(e: &Entry, touch: &mut dyn FnMut(usize)) {
    match &e.step {
        Step::Op { ins, outs, .. } => {
            ins.iter().for_each(|&s| touch(s));
            outs.iter().for_each(|&s| touch(s));
        }
        Step::Backward {
            root, grad, leaves, ..
        } => {
            touch(*root);
            if let Some(g) = grad {
                touch(*g);
            }
            leaves.iter().for_each(|&(l, g)| {
                touch(l);
                touch(g);
            });
        }
        Step::SetGrad { t, g } => {
            touch(*t);
            if let Some(g) = g {
                touch(*g);
            }
        }
        Step::GradMode(_) | Step::Host(_) => {}
    }
}

/// Runs one recorded step on the replay's slots.
pub(crate) fn exec_step(
    e: &Entry,
    slots: &mut [Option<Tensor>],
    numbers: &[f64],
) -> crate::Result<()> {
    match &e.step {
        Step::Op {
            rule,
            ins,
            sins,
            outs,
        } => {
            let res = {
                let ts: SmallVec<[&Tensor; 4]> = ins
                    .iter()
                    .map(|&s| slot(slots, s))
                    .collect::<crate::Result<_>>()?;
                let ss: SmallVec<[Scalar; 2]> = sins.iter().map(|s| resolve(s, numbers)).collect();
                rule(&ts, &ss)?
            };
            for (&o, t) in outs.iter().zip(res) {
                slots[o] = Some(t);
            }
        }
        Step::Backward {
            root,
            grad,
            retain_graph,
            leaves,
        } => {
            let r = slot(slots, *root)?.clone();
            let g = match grad {
                Some(g) => slot(slots, *g)?.clone(),
                None => Tensor::full(r.shape(), 1.0, r.dtype()),
            };
            autograd::run_backward(BackwardRequest {
                roots: vec![r],
                grads: vec![g],
                inputs: None,
                retain_graph: *retain_graph,
                create_graph: false,
                accumulate: true,
            })?;
            for &(leaf, gs) in leaves {
                let g = slot(slots, leaf)?.grad().ok_or_else(|| {
                    crate::Error::Runtime(
                        "compiled tape: backward left a captured gradient unset".into(),
                    )
                })?;
                slots[gs] = Some(g);
            }
        }
        Step::GradMode(on) => autograd::set_grad_enabled(*on),
        Step::SetGrad { t, g } => {
            let g = match g {
                Some(g) => Some(slot(slots, *g)?.clone()),
                None => None,
            };
            slot(slots, *t)?.set_grad(g);
        }
        Step::Host(f) => f.call()?,
    }
    Ok(())
}
