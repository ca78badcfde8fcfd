//! Recording a tape for `ferrograd.compile` (the tape itself and its replay
//! are in `compile.rs`).
//!
//! While a thread captures, every op binding that has a replay rule runs
//! through [`run_op`] (or [`run_inplace`], [`run_multi`]): it computes the
//! result exactly as eagerly and appends an entry naming the op's input and
//! output slots and a rule that recomputes it from new slot values. Tensors
//! are told apart by identity: a tensor seen for the first time as an input
//! is a constant of the tape (a parameter, a module buffer) and the replay
//! uses that same tensor, so in-place updates land on it as they do eagerly.
//!
//! Every binding enters core code through `errors::guard`; a guarded call
//! during capture that no rule claimed is an op the tape could not replay,
//! so the capture fails with the op's name instead of silently dropping it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;

use crate::ops::Scalar;
use crate::py::errors;
use crate::tensor::{DType, Tensor};

// Whether this thread captures is `flags::CAPTURE`, a bit of the mode word
// every op binding reads anyway.
thread_local! {
    static CLAIMED: Cell<bool> = const { Cell::new(false) };
    pub(crate) static STATE: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// True while this thread records a tape (and is not inside a Python step
/// that the tape calls back).
#[inline(always)]
pub(crate) fn active() -> bool {
    crate::flags::any(crate::flags::CAPTURE)
}

pub(crate) fn set_active(on: bool) {
    crate::flags::set(crate::flags::CAPTURE, on);
    CLAIMED.with(|c| c.set(false));
}

/// Recomputes an op's outputs from its tensor and scalar inputs.
pub(crate) type Rule =
    Arc<dyn Fn(&[&Tensor], &[Scalar]) -> crate::Result<Vec<Tensor>> + Send + Sync>;

/// Where a slot's tensor comes from on each replay.
#[derive(Clone)]
pub(crate) enum Src {
    /// The `i`-th tensor argument of the call.
    Input(usize),
    /// The same tensor every call.
    Const(Tensor),
    /// Written by an entry.
    Produced,
    /// A 0-d tensor made from the `arg`-th number argument (a number passed
    /// where an op wants a tensor).
    Number { arg: usize, dtype: DType },
}

/// A scalar operand: a number argument of the call, or a constant.
#[derive(Clone, Copy)]
pub(crate) enum SIn {
    Arg(usize, Scalar),
    Const(Scalar),
}

impl SIn {
    #[inline]
    pub(crate) fn value(&self) -> Scalar {
        match *self {
            SIn::Arg(_, s) | SIn::Const(s) => s,
        }
    }
}

pub(crate) enum Step {
    Op {
        rule: Rule,
        ins: Vec<usize>,
        sins: Vec<SIn>,
        outs: Vec<usize>,
    },
    /// `root.backward(grad)`; afterwards each `(leaf, slot)` pair stores the
    /// leaf's `.grad` in `slot`.
    Backward {
        root: usize,
        grad: Option<usize>,
        retain_graph: bool,
        leaves: Vec<(usize, usize)>,
    },
    GradMode(bool),
    SetGrad {
        t: usize,
        g: Option<usize>,
    },
    /// A Python callable run with no arguments (an optimizer's `step`).
    PyCall(Py<PyAny>),
}

pub(crate) struct Entry {
    pub name: String,
    pub step: Step,
}

#[derive(Default)]
pub(crate) struct Capture {
    pub srcs: Vec<Src>,
    map: HashMap<usize, usize>,
    /// Every mapped tensor, kept alive so no id is reused during capture.
    keep: Vec<Tensor>,
    pub entries: Vec<Entry>,
    /// Python number arguments by object address -> argument index.
    pub number_args: HashMap<usize, usize>,
    /// Which number arguments an op took directly.
    pub number_seen: Vec<bool>,
    pub failure: Option<String>,
    pub grad_mode_at_end: bool,
}

impl Capture {
    pub(crate) fn new(inputs: &[Tensor], numbers: &[usize]) -> Capture {
        let mut c = Capture {
            number_seen: vec![false; numbers.len()],
            ..Default::default()
        };
        for (i, t) in inputs.iter().enumerate() {
            let s = c.push(t, Src::Input(i));
            // The same tensor passed twice is one slot; both positions read it.
            let _ = s;
        }
        for (i, &p) in numbers.iter().enumerate() {
            c.number_args.insert(p, i);
        }
        c
    }

    fn push(&mut self, t: &Tensor, src: Src) -> usize {
        let s = self.srcs.len();
        self.srcs.push(src);
        self.map.insert(t.id(), s);
        self.keep.push(t.clone());
        s
    }

    /// The slot holding `t`, or a new constant slot for it.
    pub(crate) fn slot_of(&mut self, t: &Tensor) -> usize {
        match self.map.get(&t.id()) {
            Some(&s) => s,
            None => self.push(t, Src::Const(t.clone())),
        }
    }

    pub(crate) fn produce(&mut self, t: &Tensor) -> usize {
        self.push(t, Src::Produced)
    }

    fn fail(&mut self, why: String) {
        match &mut self.failure {
            None => self.failure = Some(why),
            // Later reasons are listed too, so one run names every op to fix.
            Some(f) if !f.contains(&why) && f.len() < 2000 => {
                f.push_str("; also ");
                f.push_str(&why);
            }
            Some(_) => {}
        }
    }

    /// Tensors the tape has seen that may receive a `.grad` from backward.
    pub(crate) fn leaf_slots(&self) -> Vec<(usize, Tensor)> {
        let mut v: Vec<(usize, Tensor)> = self
            .map
            .iter()
            .filter_map(|(_, &s)| match &self.srcs[s] {
                Src::Input(_) | Src::Const(_) => Some(s),
                _ => None,
            })
            .map(|s| (s, self.keep[s].clone()))
            .collect();
        v.sort_by_key(|(s, _)| *s);
        v
    }

    pub(crate) fn tensor_at(&self, s: usize) -> &Tensor {
        &self.keep[s]
    }
}

pub(crate) fn with<R>(f: impl FnOnce(&mut Capture) -> R) -> Option<R> {
    STATE.with(|st| st.borrow_mut().as_mut().map(f))
}

/// Marks the capture as failed (the first reason wins).
pub(crate) fn fail(why: String) {
    with(|c| c.fail(why));
}

/// A readable op name from a closure's type name
/// (`ferrograd::py::tensor::operators::<impl ...>::zero_::{{closure}}` -> `zero_`).
fn op_name(type_name: &str) -> String {
    let mut s = type_name;
    while let Some(p) = s.strip_suffix("::{{closure}}") {
        s = p;
    }
    let s = s.rsplit("::").next().unwrap_or(s);
    s.trim_start_matches("__")
        .trim_end_matches("__")
        .to_string()
}

/// Called by `errors::guard` for every binding call while capturing: a call
/// no replay rule claimed fails the capture, naming the binding.
pub(crate) fn on_guard(closure: &'static str) {
    if CLAIMED.with(|c| c.replace(false)) {
        return;
    }
    let name = op_name(closure);
    fail(format!("`{name}` has no replay rule"));
}

/// Refuses a read of tensor data into Python (`.item()`, `bool(t)`, ...):
/// the value would be baked into the tape.
pub(crate) fn refuse_read(what: &str) {
    if active() {
        fail(format!(
            "`{what}` reads a tensor's value into Python inside the captured function; a replayed tape cannot re-run the Python code that uses it"
        ));
    }
}

/// The scalar operand `obj` (already converted to `s`): a number argument of
/// the captured call when it is one, else a constant.
#[inline]
pub(crate) fn scalar_in(obj: &Bound<'_, PyAny>, s: Scalar) -> SIn {
    if !active() {
        return SIn::Const(s);
    }
    let key = obj.as_ptr() as usize;
    with(|c| match c.number_args.get(&key).copied() {
        Some(i) => {
            c.number_seen[i] = true;
            SIn::Arg(i, s)
        }
        None => SIn::Const(s),
    })
    .unwrap_or(SIn::Const(s))
}

/// A number argument turned into the 0-d tensor `t` (by `to_tensor_like`)
/// becomes a slot refilled from the argument on each replay.
pub(crate) fn note_number_tensor(obj: &Bound<'_, PyAny>, t: &Tensor) {
    if !active() {
        return;
    }
    let key = obj.as_ptr() as usize;
    with(|c| {
        if let Some(i) = c.number_args.get(&key).copied() {
            c.number_seen[i] = true;
            c.push(
                t,
                Src::Number {
                    arg: i,
                    dtype: t.dtype(),
                },
            );
        }
    });
}

fn record(name: &str, ins: &[&Tensor], sins: &[SIn], outs: &[Tensor], rule: Rule) {
    with(|c| {
        let ins: Vec<usize> = ins.iter().map(|t| c.slot_of(t)).collect();
        let outs: Vec<usize> = outs.iter().map(|t| c.produce(t)).collect();
        c.entries.push(Entry {
            name: name.to_string(),
            step: Step::Op {
                rule,
                ins,
                sins: sins.to_vec(),
                outs,
            },
        });
    });
}

fn values(sins: &[SIn]) -> smallvec::SmallVec<[Scalar; 2]> {
    sins.iter().map(|s| s.value()).collect()
}

/// Runs `f` as `errors::enter` does (GIL released for big work, panics
/// caught), then reads the mode word once: with no capture and no deferred
/// recording error, which is every eager call, the result is returned
/// straight away. A capture is never switched on or off inside core code, so
/// reading its bit after the call is as good as before it, and the call needs
/// no claim for `errors::guard`'s replay-rule check, which it bypasses.
#[inline(always)]
fn call<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> (errors::Caught<T>, u32) {
    let r = if work >= crate::kernels::GRAIN {
        py.detach(|| errors::catch(f))
    } else {
        errors::catch(f)
    };
    (r, crate::flags::get())
}

const SLOW: u32 = crate::flags::CAPTURE | crate::flags::DEFERRED;

/// Runs a one-result op as `enter` does and wraps it; while capturing, also
/// records it with `f` as its replay rule.
#[inline]
pub(crate) fn run_op<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<Py<PyAny>>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<Tensor> + Send + Sync + 'static,
{
    let vals = values(sins);
    let (r, word) = call(py, work, || f(ins, &vals));
    if word & SLOW == 0 {
        return crate::py::tensor::wrap(py, errors::finish_clear(r)?);
    }
    let out = errors::finish(r)?;
    if word & crate::flags::CAPTURE != 0 {
        record(
            name,
            ins,
            sins,
            std::slice::from_ref(&out),
            Arc::new(move |t, s| f(t, s).map(|o| vec![o])),
        );
    }
    crate::py::tensor::wrap(py, out)
}

/// [`run_op`] for an op with several results, returned unwrapped.
pub(crate) fn run_multi<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<Vec<Tensor>>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<Vec<Tensor>> + Send + Sync + 'static,
{
    let vals = values(sins);
    let (r, word) = call(py, work, || f(ins, &vals));
    if word & SLOW == 0 {
        return errors::finish_clear(r);
    }
    let outs = errors::finish(r)?;
    if word & crate::flags::CAPTURE != 0 {
        record(name, ins, sins, &outs, Arc::new(f));
    }
    Ok(outs)
}

/// [`run_op`] for an in-place write into `ins[0]`.
pub(crate) fn run_inplace<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<()>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<()> + Send + Sync + 'static,
{
    let vals = values(sins);
    let (r, word) = call(py, work, || f(ins, &vals));
    if word & SLOW == 0 {
        return errors::finish_clear(r);
    }
    errors::finish(r)?;
    if word & crate::flags::CAPTURE != 0 {
        let dst = ins[0].clone();
        record(
            name,
            ins,
            sins,
            std::slice::from_ref(&dst),
            Arc::new(move |t, s| {
                f(t, s)?;
                Ok(vec![t[0].clone()])
            }),
        );
    }
    Ok(())
}

/// Claims the next guarded call for a binding that records itself.
pub(crate) fn claim() {
    CLAIMED.with(|c| c.set(true));
}
