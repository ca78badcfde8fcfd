//! The tape behind `ferrograd.compile`: `_capture_begin`/`_capture_end`
//! bracket one eager call while `capture.rs` records it, and `_Tape.replay`
//! runs the recorded entries back to back in Rust, with the GIL released,
//! on new inputs.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use smallvec::SmallVec;

use super::capture::{self, Capture, Entry, SIn, Src, Step};
use super::compile_static::{self as statik, Static};
use super::errors;
use super::tensor::{wrap, PyTensor};
use crate::autograd::{self, BackwardRequest};
use crate::ops::Scalar;
use crate::tensor::Tensor;

/// A recorded call: slots (inputs, constants, produced values), the entries
/// that fill them, and which slots are the outputs.
#[pyclass(name = "_Tape", module = "ferrograd._C", frozen)]
pub struct Tape {
    srcs: Vec<Src>,
    entries: Vec<Entry>,
    /// Slots to drop after each entry (their last use), so intermediates are
    /// freed as early as the eager call frees them.
    release: Vec<Vec<usize>>,
    outs: Vec<usize>,
    n_inputs: usize,
    grad_mode: bool,
    /// The static backward (`compile_static.rs`), or why the tape has none.
    fast: Result<Static, String>,
    /// Autograd nodes the last replay created (`stats()`).
    last_nodes: AtomicU64,
    /// Whether the last replay took the static path.
    last_static: AtomicBool,
}

pub(super) fn slot(slots: &[Option<Tensor>], s: usize) -> crate::Result<&Tensor> {
    slots[s]
        .as_ref()
        .ok_or_else(|| crate::Error::Runtime(format!("compiled tape: slot {s} is empty")))
}

impl Tape {
    fn build(c: Capture, outs: Vec<usize>, grad_mode: bool, n_inputs: usize) -> Tape {
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

    fn run(&self, inputs: &[Tensor], numbers: &[f64]) -> crate::Result<Vec<Tensor>> {
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
    pub(super) fn initial_slots(
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

/// A scalar operand's value on this replay.
#[inline]
pub(super) fn resolve(s: &SIn, numbers: &[f64]) -> Scalar {
    match *s {
        SIn::Arg(i, Scalar::Int(_)) => Scalar::Int(numbers[i] as i64),
        SIn::Arg(i, Scalar::Bool(_)) => Scalar::Bool(numbers[i] != 0.0),
        SIn::Arg(i, Scalar::Float(_)) => Scalar::Float(numbers[i]),
        SIn::Const(c) => c,
    }
}

/// Calls `touch` on every slot a step reads or writes.
pub(super) fn touched(e: &Entry, touch: &mut dyn FnMut(usize)) {
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
        Step::GradMode(_) | Step::PyCall(_) => {}
    }
}

/// Runs one recorded step on the replay's slots.
pub(super) fn exec_step(
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
        Step::PyCall(f) => {
            Python::attach(|py| f.call0(py).map(|_| ())).map_err(super::errors::external)?
        }
    }
    Ok(())
}

#[pymethods]
impl Tape {
    /// Runs the tape on new inputs (the call's tensor arguments in order, and
    /// its number arguments as floats) and returns fresh output tensors.
    fn replay(
        &self,
        py: Python<'_>,
        inputs: Vec<Bound<'_, PyTensor>>,
        numbers: Vec<f64>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        if inputs.len() != self.n_inputs {
            return Err(PyRuntimeError::new_err(format!(
                "compiled tape expects {} tensor inputs, got {}",
                self.n_inputs,
                inputs.len()
            )));
        }
        let ins: Vec<Tensor> = inputs.iter().map(|t| t.get().t.clone()).collect();
        // The tape's own call into core code, with nothing to record: a
        // compiled function called while capturing runs eagerly instead.
        let outs = errors::finish(errors::call(py, usize::MAX, || self.run(&ins, &numbers)))?;
        outs.into_iter().map(|t| wrap(py, t)).collect()
    }

    /// The recorded entries' names, in order.
    #[getter]
    fn ops(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// The tensors the tape reads as they are (parameters, buffers): the same
    /// objects on every replay.
    #[getter]
    fn constants(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        self.srcs
            .iter()
            .filter_map(|s| match s {
                Src::Const(t) => Some(wrap(py, t.clone())),
                _ => None,
            })
            .collect()
    }

    /// Counts describing the tape: `entries`, whether it has a static
    /// backward (`static`, and `static_reason` when not), its forward and
    /// VJP entries, and what the last replay did (`last_static`,
    /// `last_replay_nodes`: autograd nodes it created).
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let d = pyo3::types::PyDict::new(py);
        d.set_item("entries", self.entries.len())?;
        d.set_item("static", self.fast.is_ok())?;
        match &self.fast {
            Ok(st) => {
                d.set_item("static_reason", py.None())?;
                d.set_item("forward_entries", st.n_fwd)?;
                d.set_item("vjp_entries", st.n_vjp)?;
                d.set_item("static_steps", st.steps.len())?;
                d.set_item("last_fast_forward", st.fast_fwd.load(Ordering::Relaxed))?;
                d.set_item("last_fast_vjp", st.fast_vjp.load(Ordering::Relaxed))?;
                d.set_item("fused_groups", st.groups.len())?;
                d.set_item(
                    "fused_entries",
                    st.groups.iter().map(|g| g.members.len()).sum::<usize>(),
                )?;
                d.set_item("last_fused_groups", st.fused_last.load(Ordering::Relaxed))?;
            }
            Err(why) => {
                d.set_item("static_reason", why)?;
                d.set_item("forward_entries", 0)?;
                d.set_item("vjp_entries", 0)?;
                d.set_item("static_steps", 0)?;
                d.set_item("last_fast_forward", 0)?;
                d.set_item("last_fast_vjp", 0)?;
                d.set_item("fused_groups", 0)?;
                d.set_item("fused_entries", 0)?;
                d.set_item("last_fused_groups", 0)?;
            }
        }
        d.set_item("last_static", self.last_static.load(Ordering::Relaxed))?;
        d.set_item("last_replay_nodes", self.last_nodes.load(Ordering::Relaxed))?;
        Ok(d.into_any().unbind())
    }

    fn __len__(&self) -> usize {
        self.entries.len()
    }
}

/// Starts recording this thread's calls into a tape. `inputs` are the call's
/// tensor arguments, `numbers` its number arguments (matched by identity).
#[pyfunction]
fn _capture_begin(
    inputs: Vec<Bound<'_, PyTensor>>,
    numbers: Vec<Bound<'_, PyAny>>,
) -> PyResult<()> {
    if capture::with(|_| ()).is_some() {
        return Err(PyRuntimeError::new_err(
            "ferrograd.compile: a capture is already running on this thread (nested compiled functions are not captured)",
        ));
    }
    let ts: Vec<Tensor> = inputs.iter().map(|t| t.get().t.clone()).collect();
    let ns: Vec<usize> = numbers.iter().map(|n| n.as_ptr() as usize).collect();
    let mut c = Capture::new(&ts, &ns);
    c.grad_mode_at_end = autograd::is_grad_enabled();
    capture::STATE.with(|s| *s.borrow_mut() = Some(c));
    capture::set_active(true);
    Ok(())
}

/// Ends the recording. Returns `(tape, None, seen)` or `(None, reason, seen)`
/// when something in the call could not be captured; `seen[i]` tells whether
/// number argument `i` reached an op directly.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn _capture_end(
    py: Python<'_>,
    outputs: Vec<Bound<'_, PyTensor>>,
    grad_mode: bool,
    n_inputs: usize,
) -> PyResult<(Option<Py<Tape>>, Option<String>, Vec<bool>)> {
    capture::set_active(false);
    let Some(mut c) = capture::STATE.with(|s| s.borrow_mut().take()) else {
        return Err(PyRuntimeError::new_err(
            "ferrograd.compile: no capture is running",
        ));
    };
    let seen = c.number_seen.clone();
    if let Some(why) = c.failure.take() {
        return Ok((None, Some(why), seen));
    }
    if let Some(name) = read_after_backward(&c, &outputs) {
        return Ok((
            None,
            Some(format!(
                "the result of `{name}`, made while backward ran (in a custom Function's backward or a hook), is used after it; a replay makes it again inside backward and could not give it to the code that follows"
            )),
            seen,
        ));
    }
    let out_ids: HashSet<usize> = outputs.iter().map(|o| o.as_ptr() as usize).collect();
    // A value computed inside and still held by Python elsewhere (a module
    // attribute, a list) would keep the capture call's tensor on replay.
    let grads: HashSet<usize> = c
        .entries
        .iter()
        .flat_map(|e| match &e.step {
            Step::Backward { leaves, .. } => leaves.iter().map(|&(_, g)| g).collect(),
            _ => Vec::new(),
        })
        .collect();
    // In-place writes give an input or constant a new slot; those are not
    // values made inside.
    let held: HashSet<usize> = (0..c.srcs.len())
        .filter(|&s| matches!(c.srcs[s], Src::Input(_) | Src::Const(_)))
        .map(|s| c.tensor_at(s).id())
        .collect();
    for s in 0..c.srcs.len() {
        if !matches!(c.srcs[s], Src::Produced)
            || grads.contains(&s)
            || c.inside_backward.contains_key(&s)
            || held.contains(&c.tensor_at(s).id())
        {
            continue;
        }
        if let Some(o) = super::tensor::registered_object(py, c.tensor_at(s)) {
            if !out_ids.contains(&(o.as_ptr() as usize)) {
                let name = producer(&c, s);
                return Ok((
                    None,
                    Some(format!(
                        "the result of `{name}` is still referenced from Python after the function returned (stored in an attribute, a global or a container?); a replay would leave that reference pointing at the capture call's value"
                    )),
                    seen,
                ));
            }
        }
    }
    // An output the tape never saw that shares memory with a value computed
    // inside was made by a call that records nothing (`detach()`): the
    // replay would return the capture call's tensor every time.
    for o in &outputs {
        let t = &o.get().t;
        if c.lookup(t).is_some() {
            continue;
        }
        let st = t.storage();
        let aliased = (0..c.srcs.len()).any(|s| {
            matches!(c.srcs[s], Src::Produced)
                && std::sync::Arc::ptr_eq(&c.tensor_at(s).storage(), &st)
        });
        if aliased {
            return Ok((
                None,
                Some("an output shares memory with a value computed inside but was made by a call the tape does not record (such as `detach()`); a replay would return the capture call's tensor".into()),
                seen,
            ));
        }
    }
    let outs: Vec<usize> = outputs.iter().map(|o| c.slot_of(&o.get().t)).collect();
    let tape = Tape::build(c, outs, grad_mode, n_inputs);
    Ok((Some(Py::new(py, tape)?), None, seen))
}

/// The op that made a tensor inside a captured backward which a later entry
/// or an output reads, if any.
fn read_after_backward(c: &Capture, outputs: &[Bound<'_, PyTensor>]) -> Option<String> {
    if c.inside_backward.is_empty() {
        return None;
    }
    let mut read = Vec::new();
    for e in &c.entries {
        match &e.step {
            Step::Op { ins, .. } => read.extend(ins.iter().copied()),
            Step::Backward {
                root, grad, leaves, ..
            } => {
                read.push(*root);
                read.extend(*grad);
                read.extend(leaves.iter().map(|&(l, _)| l));
            }
            Step::SetGrad { t, g } => {
                read.push(*t);
                read.extend(*g);
            }
            Step::GradMode(_) | Step::PyCall(_) => {}
        }
    }
    read.extend(outputs.iter().filter_map(|o| c.lookup(&o.get().t)));
    read.into_iter()
        .find_map(|s| c.inside_backward.get(&s).cloned())
}

fn producer(c: &Capture, s: usize) -> String {
    for e in &c.entries {
        let hit = match &e.step {
            Step::Op { outs, .. } => outs.contains(&s),
            _ => false,
        };
        if hit {
            return e.name.clone();
        }
    }
    "an op".into()
}

/// Drops a capture after the captured call raised.
#[pyfunction]
fn _capture_abort() {
    capture::set_active(false);
    capture::STATE.with(|s| s.borrow_mut().take());
}

/// True while this thread records a tape.
#[pyfunction]
fn _capture_active() -> bool {
    capture::active()
}

/// Calls `f()` with recording paused and, while capturing, records the call
/// so each replay calls `f()` at the same point (an optimizer's `step`).
#[pyfunction]
fn _capture_pycall(py: Python<'_>, name: String, f: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if !capture::active() {
        return Ok(f.call0()?.unbind());
    }
    capture::set_active(false);
    let r = f.call0();
    capture::set_active(true);
    let r = r?;
    capture::with(|c| {
        c.entries
            .push(Entry::step(&name, Step::PyCall(f.clone().unbind())))
    });
    let _ = py;
    Ok(r.unbind())
}

/// Where a Python op's tensor argument sits in its call.
enum ArgAt {
    Pos(usize),
    Kw(Py<PyAny>),
}

/// The shape of a Python op's result: one tensor, or a tuple or list whose
/// items are tensors (`true`) or None.
#[derive(Clone)]
enum OutShape {
    One,
    Seq { tuple: bool, items: Vec<bool> },
}

fn out_shape(r: &Bound<'_, PyAny>) -> Option<(OutShape, Vec<Tensor>)> {
    if let Ok(t) = r.cast::<PyTensor>() {
        return Some((OutShape::One, vec![t.get().t.clone()]));
    }
    let tuple = r.is_instance_of::<pyo3::types::PyTuple>();
    if !tuple && !r.is_instance_of::<pyo3::types::PyList>() {
        return None;
    }
    let mut items = Vec::new();
    let mut ts = Vec::new();
    for x in r.try_iter().ok()? {
        let x = x.ok()?;
        if let Ok(t) = x.cast::<PyTensor>() {
            items.push(true);
            ts.push(t.get().t.clone());
        } else if x.is_none() {
            items.push(false);
        } else {
            return None;
        }
    }
    Some((OutShape::Seq { tuple, items }, ts))
}

fn holds_tensor(x: &Bound<'_, PyAny>) -> bool {
    if x.cast::<PyTensor>().is_ok() {
        return true;
    }
    if x.is_instance_of::<pyo3::types::PyTuple>() || x.is_instance_of::<pyo3::types::PyList>() {
        if let Ok(it) = x.try_iter() {
            return it.flatten().any(|i| holds_tensor(&i));
        }
    }
    false
}

/// Calls `f(*args, **kwargs)` with recording paused and, while capturing,
/// records the call as one op: its tensor arguments are the entry's inputs,
/// the tensors it returns its outputs, and the rule calls `f` again (taking
/// the GIL) with each replay's tensors in their places. A custom
/// `autograd.Function` is applied this way, so its forward runs and its node
/// is made again on every replay, as eagerly.
#[pyfunction]
#[pyo3(signature = (name, f, args, kwargs=None))]
fn _capture_pyop(
    py: Python<'_>,
    name: String,
    f: Bound<'_, PyAny>,
    args: Bound<'_, pyo3::types::PyTuple>,
    kwargs: Option<Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<Py<PyAny>> {
    if !capture::active() {
        return Ok(f.call(args, kwargs.as_ref())?.unbind());
    }
    let mut at = Vec::new();
    let mut ins = Vec::new();
    let mut nested = false;
    for (i, a) in args.iter().enumerate() {
        match a.cast::<PyTensor>() {
            Ok(t) => {
                at.push(ArgAt::Pos(i));
                ins.push(t.get().t.clone());
            }
            Err(_) => nested |= holds_tensor(&a),
        }
    }
    if let Some(kw) = &kwargs {
        for (k, v) in kw.iter() {
            match v.cast::<PyTensor>() {
                Ok(t) => {
                    at.push(ArgAt::Kw(k.unbind()));
                    ins.push(t.get().t.clone());
                }
                Err(_) => nested |= holds_tensor(&v),
            }
        }
    }
    let seq0 = autograd::current_seq();
    capture::set_active(false);
    let r = f.call(args.clone(), kwargs.as_ref());
    capture::set_active(true);
    let r = r?;
    if nested {
        capture::fail(format!(
            "`{name}` is given tensors inside a list or tuple; a replay could not pass it new ones"
        ));
        return Ok(r.unbind());
    }
    let Some((shape, outs)) = out_shape(&r) else {
        capture::fail(format!(
            "`{name}` returns something other than tensors, which a replay could not give back"
        ));
        return Ok(r.unbind());
    };
    // The rule keeps the call's other arguments, with None where a tensor
    // was: it must not hold the capture call's tensors.
    let template: Vec<Bound<'_, PyAny>> = args
        .iter()
        .map(|a| {
            if a.cast::<PyTensor>().is_ok() {
                py.None().into_bound(py)
            } else {
                a
            }
        })
        .collect();
    let args = pyo3::types::PyTuple::new(py, template)?.unbind();
    let kwargs = match kwargs {
        Some(kw) => {
            let k = kw.copy()?;
            for (key, v) in kw.iter() {
                if v.cast::<PyTensor>().is_ok() {
                    k.set_item(key, py.None())?;
                }
            }
            Some(k.unbind())
        }
        None => None,
    };
    let fun = f.unbind();
    let rule_name = name.clone();
    let rule: capture::Rule = std::sync::Arc::new(move |t, _| {
        Python::attach(|py| -> PyResult<Vec<Tensor>> {
            let mut a: Vec<Py<PyAny>> = args.bind(py).iter().map(|x| x.unbind()).collect();
            let kw = match &kwargs {
                Some(k) => Some(k.bind(py).copy()?),
                None => None,
            };
            for (where_, x) in at.iter().zip(t) {
                let obj = wrap(py, (*x).clone())?;
                match where_ {
                    ArgAt::Pos(i) => a[*i] = obj,
                    ArgAt::Kw(k) => {
                        if let Some(kw) = &kw {
                            kw.set_item(k.bind(py), obj)?;
                        }
                    }
                }
            }
            let a = pyo3::types::PyTuple::new(py, a)?;
            let r = fun.bind(py).call(a, kw.as_ref())?;
            match (out_shape(&r), &shape) {
                (Some((OutShape::One, ts)), OutShape::One) => Ok(ts),
                (
                    Some((OutShape::Seq { tuple, items }, ts)),
                    OutShape::Seq {
                        tuple: t0,
                        items: i0,
                    },
                ) if tuple == *t0 && items == *i0 => Ok(ts),
                _ => Err(PyRuntimeError::new_err(format!(
                    "compiled tape: `{rule_name}` returned a different kind of result on replay"
                ))),
            }
        })
        .map_err(errors::external)
    });
    let refs: Vec<&Tensor> = ins.iter().collect();
    capture::record_op(&name, &refs, &outs, rule, seq0);
    Ok(r.unbind())
}

/// Marks the running capture as failed with `reason` (used by Python code
/// that finds something the tape cannot replay).
#[pyfunction]
fn _capture_refuse(reason: String) {
    if capture::active() {
        capture::fail(reason);
    }
}

/// `root.backward(grad)` while capturing: runs it and records the step.
pub(crate) fn backward(py: Python<'_>, req: BackwardRequest, grad_given: bool) -> PyResult<()> {
    if req.inputs.is_some() || req.create_graph || req.roots.len() != 1 {
        capture::fail("`backward` with inputs= or create_graph=True has no replay rule".into());
        return errors::finish(errors::call(py, usize::MAX, || autograd::run_backward(req)))
            .map(|_| ());
    }
    let (root, grad) = capture::with(|c| {
        (
            c.slot_of(&req.roots[0]),
            grad_given.then(|| c.slot_of(&req.grads[0])),
        )
    })
    .unwrap_or((0, None));
    let retain_graph = req.retain_graph;
    let start = capture::entry_count();
    errors::finish(errors::call(py, usize::MAX, || autograd::run_backward(req)))?;
    capture::with(|c| {
        // Whatever the engine called that records (a custom Function's
        // backward, a hook) it calls again on every replay: entries kept for
        // it would compute it twice, the first time from the capture call's
        // incoming gradients.
        for e in c.entries.drain(start..).collect::<Vec<_>>() {
            if let Step::Op { outs, .. } = &e.step {
                c.inside_backward
                    .extend(outs.iter().map(|&s| (s, e.name.clone())));
            }
        }
        let mut leaves = Vec::new();
        for (s, t) in c.leaf_slots() {
            if t.is_leaf() && t.requires_grad() {
                if let Some(g) = t.grad() {
                    leaves.push((s, c.produce(&g)));
                }
            }
        }
        c.entries.push(Entry::step(
            "backward",
            Step::Backward {
                root,
                grad,
                retain_graph,
                leaves,
            },
        ));
    });
    Ok(())
}

/// `_set_grad_enabled(on)` while capturing.
pub(crate) fn note_grad_mode(on: bool) {
    capture::with(|c| {
        c.entries
            .push(Entry::step("set_grad_enabled", Step::GradMode(on)))
    });
}

/// `t.grad = g` while capturing.
pub(crate) fn note_set_grad(t: &Tensor, g: Option<&Tensor>) {
    capture::with(|c| {
        let t = c.slot_of(t);
        let g = g.map(|g| c.slot_of(g));
        c.entries
            .push(Entry::step("set_grad", Step::SetGrad { t, g }))
    });
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tape>()?;
    m.add_function(wrap_pyfunction!(_capture_begin, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_end, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_abort, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_active, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_pycall, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_pyop, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_refuse, m)?)?;
    Ok(())
}
