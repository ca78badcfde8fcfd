//! The bindings' recording entry points for `ferrograd.compile`: every
//! binding that runs an op enters core code through this family ([`run_op`],
//! [`run`], [`run_tuple`], [`run_inplace`]). It computes the result exactly
//! as eagerly (GIL released above the grain, panics caught, errors mapped)
//! and, while a thread captures, appends an entry to the tape
//! (`crate::compile`) naming the op's input and output slots and a rule that
//! recomputes it from new slot values (the closure the binding ran, with its
//! non-tensor arguments moved in).

use std::sync::Arc;

use pyo3::prelude::*;

use crate::autograd;
use crate::compile::{active, record, values, with, SIn, Src};
use crate::ops::Scalar;
use crate::profiler;
use crate::py::errors;
use crate::tensor::Tensor;

pub(crate) use crate::compile::Opt;

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

/// What an op binding's core call returns: one tensor, several, a pair, or
/// several of which some may be absent (gradients nobody asked for). The
/// entry records the present ones, in order, as its outputs; the replay rule
/// returns them in the same order.
pub(crate) trait Outs: Send + Sized + 'static {
    /// The tensors to record (a clone of each handle).
    fn tensors(&self) -> Vec<Tensor>;
    /// The tensors, consumed, for the replay rule.
    fn into_tensors(self) -> Vec<Tensor>;
}

impl Outs for Tensor {
    fn tensors(&self) -> Vec<Tensor> {
        vec![self.clone()]
    }
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self]
    }
}

impl Outs for Vec<Tensor> {
    fn tensors(&self) -> Vec<Tensor> {
        self.clone()
    }
    fn into_tensors(self) -> Vec<Tensor> {
        self
    }
}

impl Outs for (Tensor, Tensor) {
    fn tensors(&self) -> Vec<Tensor> {
        vec![self.0.clone(), self.1.clone()]
    }
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1]
    }
}

impl Outs for Vec<Option<Tensor>> {
    fn tensors(&self) -> Vec<Tensor> {
        self.iter().flatten().cloned().collect()
    }
    fn into_tensors(self) -> Vec<Tensor> {
        self.into_iter().flatten().collect()
    }
}

impl<const N: usize> Outs for [Option<Tensor>; N] {
    fn tensors(&self) -> Vec<Tensor> {
        self.iter().flatten().cloned().collect()
    }
    fn into_tensors(self) -> Vec<Tensor> {
        self.into_iter().flatten().collect()
    }
}

/// Runs `f` as `errors::enter` does (GIL released for big work, panics
/// caught), then reads the mode word once: with no capture and no deferred
/// recording error, which is every eager call, the result is returned
/// straight away. A capture is never switched on or off inside core code, so
/// reading its bit after the call is as good as before it. An open profile
/// (`ferrograd.profiler`) times the call as one op event.
#[inline(always)]
fn call<T: Send>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    f: impl FnOnce() -> crate::Result<T> + Send,
) -> (errors::Caught<T>, u32) {
    let r = profiler::timed(
        || name.into(),
        profiler::Kind::Op,
        || ins.iter().map(|t| t.shape().to_vec()).collect(),
        || errors::call(py, work, f),
    );
    (r, crate::flags::get())
}

const SLOW: u32 = crate::flags::CAPTURE | crate::flags::DEFERRED;

/// Runs an op (`f` on its tensor inputs `ins` and scalar operands `sins`) as
/// `errors::enter` does; while capturing, also records it with `f` as its
/// replay rule. `f` takes everything it reads through its arguments or moves
/// it in: a tensor captured by the closure would be read as the capture
/// call's value on every replay.
#[inline(always)]
pub(crate) fn run<R, F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<R>
where
    R: Outs,
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<R> + Send + Sync + 'static,
{
    let vals = values(sins);
    // The newest node before the op ran: what the op recorded is newer.
    let seq0 = autograd::current_seq();
    let (r, word) = call(py, work, name, ins, || f(ins, &vals));
    if word & SLOW == 0 {
        return errors::finish_clear(r);
    }
    record_result(name, ins, sins, r, word, seq0, f)
}

#[inline(never)]
fn record_result<R, F>(
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    r: errors::Caught<R>,
    word: u32,
    seq0: u64,
    f: F,
) -> PyResult<R>
where
    R: Outs,
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<R> + Send + Sync + 'static,
{
    let out = errors::finish(r)?;
    if word & crate::flags::CAPTURE != 0 {
        record(
            name,
            ins,
            sins,
            &out.tensors(),
            Arc::new(move |t, s| f(t, s).map(Outs::into_tensors)),
            Some(seq0),
        );
    }
    Ok(out)
}

/// [`run`] for an op with one result, wrapped for Python.
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
    crate::py::tensor::wrap(py, run(py, work, name, ins, sins, f)?)
}

/// [`run`] for an op with several results, returned as a Python tuple.
#[inline]
pub(crate) fn run_tuple<F>(
    py: Python<'_>,
    work: usize,
    name: &'static str,
    ins: &[&Tensor],
    sins: &[SIn],
    f: F,
) -> PyResult<Py<PyAny>>
where
    F: Fn(&[&Tensor], &[Scalar]) -> crate::Result<Vec<Tensor>> + Send + Sync + 'static,
{
    crate::py::tensor::tensor_tuple(py, run(py, work, name, ins, sins, f)?)
}

/// [`run`] for an op with several results, returned unwrapped.
#[inline]
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
    run(py, work, name, ins, sins, f)
}

/// [`run`] for an in-place write into `ins[0]`.
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
    let (r, word) = call(py, work, name, ins, || f(ins, &vals));
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
            None,
        );
    }
    Ok(())
}

/// Runs a call whose effect is outside any tensor (seeding a generator) as
/// [`run`] runs an op; while capturing, records it so each replay makes it
/// again at the same point.
pub(crate) fn run_effect<F>(py: Python<'_>, name: &'static str, f: F) -> PyResult<()>
where
    F: Fn() -> crate::Result<()> + Send + Sync + 'static,
{
    run::<Vec<Tensor>, _>(py, 0, name, &[], &[], move |_, _| {
        f()?;
        Ok(Vec::new())
    })
    .map(drop)
}
