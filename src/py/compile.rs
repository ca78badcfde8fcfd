//! The Python side of `ferrograd.compile`: `_capture_begin`/`_capture_end`
//! bracket one eager call while the bindings record it (`crate::compile`),
//! and `_Tape.replay` runs the recorded tape in Rust, with the GIL released,
//! on new inputs.

use std::collections::HashSet;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::errors;
use super::tensor::{wrap, PyTensor};
use crate::autograd::{self, BackwardRequest};
use crate::compile::{self as capture, Capture, Entry, Src, Step, Tape};
use crate::tensor::Tensor;

/// A Python callable the tape runs with no arguments (an optimizer's `step`).
struct PyHostCall(Py<PyAny>);

impl capture::HostCall for PyHostCall {
    fn call(&self) -> crate::Result<()> {
        Python::attach(|py| self.0.call0(py).map(|_| ())).map_err(errors::external)
    }
}

/// A recorded call (`crate::compile::Tape`), as Python holds it.
#[pyclass(name = "_Tape", module = "ferrograd._C", frozen)]
pub struct PyTape(Tape);

#[pymethods]
impl PyTape {
    /// Runs the tape on new inputs (the call's tensor arguments in order, and
    /// its number arguments as floats) and returns fresh output tensors.
    fn replay(
        &self,
        py: Python<'_>,
        inputs: Vec<Bound<'_, PyTensor>>,
        numbers: Vec<f64>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let tape = &self.0;
        if inputs.len() != tape.n_inputs {
            return Err(PyRuntimeError::new_err(format!(
                "compiled tape expects {} tensor inputs, got {}",
                tape.n_inputs,
                inputs.len()
            )));
        }
        let ins: Vec<Tensor> = inputs.iter().map(|t| t.get().t.clone()).collect();
        // The tape's own call into core code, with nothing to record: a
        // compiled function called while capturing runs eagerly instead.
        let outs = errors::finish(errors::call(py, usize::MAX, || tape.run(&ins, &numbers)))?;
        outs.into_iter().map(|t| wrap(py, t)).collect()
    }

    /// The recorded entries' names, in order.
    #[getter]
    fn ops(&self) -> Vec<String> {
        self.0.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// The tensors the tape reads as they are (parameters, buffers): the same
    /// objects on every replay.
    #[getter]
    fn constants(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        self.0
            .srcs
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
        let st = self.0.stats();
        let d = pyo3::types::PyDict::new(py);
        d.set_item("entries", st.entries)?;
        d.set_item("static", st.static_reason.is_none())?;
        d.set_item("static_reason", st.static_reason)?;
        d.set_item("forward_entries", st.forward_entries)?;
        d.set_item("vjp_entries", st.vjp_entries)?;
        d.set_item("static_steps", st.static_steps)?;
        d.set_item("last_fast_forward", st.last_fast_forward)?;
        d.set_item("last_fast_vjp", st.last_fast_vjp)?;
        d.set_item("fused_groups", st.fused_groups)?;
        d.set_item("fused_entries", st.fused_entries)?;
        d.set_item("last_fused_groups", st.last_fused_groups)?;
        d.set_item("last_static", st.last_static)?;
        d.set_item("last_replay_nodes", st.last_replay_nodes)?;
        Ok(d.into_any().unbind())
    }

    fn __len__(&self) -> usize {
        self.0.entries.len()
    }
}

/// Starts recording this thread's calls into a tape. `inputs` are the call's
/// tensor arguments, `numbers` its number arguments (matched by identity).
#[pyfunction]
fn _capture_begin(
    inputs: Vec<Bound<'_, PyTensor>>,
    numbers: Vec<Bound<'_, PyAny>>,
) -> PyResult<()> {
    let ts: Vec<Tensor> = inputs.iter().map(|t| t.get().t.clone()).collect();
    let ns: Vec<usize> = numbers.iter().map(|n| n.as_ptr() as usize).collect();
    capture::begin(&ts, &ns).map_err(PyRuntimeError::new_err)
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
) -> PyResult<(Option<Py<PyTape>>, Option<String>, Vec<bool>)> {
    let Some(mut c) = capture::end() else {
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
    Ok((Some(Py::new(py, PyTape(tape))?), None, seen))
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
            Step::GradMode(_) | Step::Host(_) => {}
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
        c.entries.push(Entry::step(
            &name,
            Step::Host(std::sync::Arc::new(PyHostCall(f.clone().unbind()))),
        ))
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

/// `root.backward(grad)` while capturing: runs it (GIL released) and
/// records the step.
pub(crate) fn backward(py: Python<'_>, req: BackwardRequest, grad_given: bool) -> PyResult<()> {
    capture::record_backward(req, grad_given, |req| {
        errors::finish(errors::call(py, usize::MAX, || autograd::run_backward(req))).map(drop)
    })
}

pub(crate) use capture::{note_grad_mode, note_set_grad};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTape>()?;
    m.add_function(wrap_pyfunction!(_capture_begin, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_end, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_abort, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_active, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_pycall, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_pyop, m)?)?;
    m.add_function(wrap_pyfunction!(_capture_refuse, m)?)?;
    Ok(())
}
