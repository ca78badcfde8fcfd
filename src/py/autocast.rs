//! Autocast: the per-thread mixed-precision state and the casts an op's
//! binding applies to its inputs when a region is active.
//!
//! Each affected binding starts with one `autocast!("op", a, b, ...)` line
//! naming its tensor arguments; the op's policy comes from the generated
//! table (`autocast_table.rs`, written from the op registry's `autocast`
//! field). With no region active the line costs one read of the mode word
//! ([`flags::AUTOCAST`]) and a handle clone per argument.
//!
//! The cast is `ops::to_dtype`, a recorded op (`ToCopyBackward0`), so each
//! op's backward runs in the dtype its forward used and a float32 leaf gets
//! a float32 gradient. Inside a region, the lower-precision copy of a
//! float32 leaf that requires grad (a weight) is made once and reused until
//! the outermost region exits, as PyTorch's cast cache does.

use std::cell::RefCell;
use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::dtype::{dtype_object, parse_dtype};
use super::tensor::PyTensor;
use crate::flags;
use crate::ops;
use crate::tensor::{DType, Tensor};

/// What an op does to its floating inputs inside a region (PyTorch's cast policies).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Policy {
    /// Cast to the region's dtype (matrix products, convolutions).
    Lower,
    /// Cast float16/bfloat16 inputs to float32 (losses, linear algebra, ...).
    Fp32,
    /// Cast to the widest floating input dtype (`cat`, `stack`, `index_copy`).
    Promote,
}

impl Policy {
    fn name(self) -> &'static str {
        match self {
            Policy::Lower => "lower_precision_fp",
            Policy::Fp32 => "fp32",
            Policy::Promote => "promote",
        }
    }
}

struct State {
    dtype: DType,
    cache_enabled: bool,
    nesting: i64,
    /// Source tensor id -> (source, its lower-precision copy). The source is
    /// held so its id cannot be reused by another tensor while cached.
    cache: HashMap<usize, (Tensor, Tensor)>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State {
        dtype: DType::BF16,
        cache_enabled: true,
        nesting: 0,
        cache: HashMap::new(),
    });
}

/// Autocast casts only floating tensors below float64.
fn eligible(dt: DType) -> bool {
    matches!(dt, DType::F16 | DType::BF16 | DType::F32)
}

/// The dtype `name`'s inputs are cast to, given the dtypes `visit` reports
/// (`None`: no region, an op without a policy, or nothing to cast).
#[inline]
pub(crate) fn target(name: &str, visit: impl FnOnce(&mut dyn FnMut(DType))) -> Option<DType> {
    if !flags::any(flags::AUTOCAST) {
        return None;
    }
    target_slow(name, visit)
}

#[cold]
fn target_slow(name: &str, visit: impl FnOnce(&mut dyn FnMut(DType))) -> Option<DType> {
    match super::autocast_table::policy(name)? {
        Policy::Lower => Some(STATE.with(|s| s.borrow().dtype)),
        Policy::Fp32 => Some(DType::F32),
        Policy::Promote => {
            let mut widest: Option<DType> = None;
            visit(&mut |dt| {
                if eligible(dt) {
                    widest = Some(match widest {
                        None => dt,
                        Some(w) if w == dt => w,
                        // bfloat16 with float16, or either with float32: float32.
                        Some(_) => DType::F32,
                    });
                }
            });
            widest
        }
    }
}

/// `t` in dtype `to` when autocast casts it (an eligible floating tensor of
/// another dtype), through the region's cache for weights.
pub(crate) fn cast_tensor(t: &Tensor, to: Option<DType>) -> crate::Result<Tensor> {
    let Some(to) = to else {
        return Ok(t.clone());
    };
    let from = t.dtype();
    if from == to || !eligible(from) {
        return Ok(t.clone());
    }
    // While `ferrograd.compile` captures, each cast is recorded (and never
    // cached), so a replay casts the values it is given.
    if flags::any(flags::CAPTURE) {
        let seq0 = crate::autograd::current_seq();
        let out = ops::to_dtype(t, to)?;
        crate::compile::record_cast(t, &out, to, seq0);
        return Ok(out);
    }
    let cacheable = to.is_low_precision()
        && from == DType::F32
        && t.requires_grad()
        && t.is_leaf()
        && !t.is_view()
        && crate::autograd::is_grad_enabled();
    if !cacheable || !STATE.with(|s| s.borrow().cache_enabled) {
        return ops::to_dtype(t, to);
    }
    let hit = STATE.with(|s| {
        s.borrow()
            .cache
            .get(&t.id())
            .filter(|(_, c)| c.dtype() == to)
            .map(|(_, c)| c.clone())
    });
    if let Some(c) = hit {
        return Ok(c);
    }
    let c = ops::to_dtype(t, to)?;
    STATE.with(|s| s.borrow_mut().cache.insert(t.id(), (t.clone(), c.clone())));
    Ok(c)
}

/// A binding argument autocast may replace: the cast copy is held by the
/// binding (`Held`) and lent back in the argument's own type.
pub(crate) trait Arg: Sized {
    type Owned;
    type Ref<'b>
    where
        Self::Owned: 'b;
    fn dtypes(&self, f: &mut dyn FnMut(DType));
    fn cast(self, to: Option<DType>) -> crate::Result<Self::Owned>;
    fn lend(o: &Self::Owned) -> Self::Ref<'_>;
}

impl Arg for &Tensor {
    type Owned = Tensor;
    type Ref<'b> = &'b Tensor;
    fn dtypes(&self, f: &mut dyn FnMut(DType)) {
        f(self.dtype())
    }
    fn cast(self, to: Option<DType>) -> crate::Result<Tensor> {
        cast_tensor(self, to)
    }
    fn lend(o: &Tensor) -> &Tensor {
        o
    }
}

impl Arg for Tensor {
    type Owned = Tensor;
    type Ref<'b> = Tensor;
    fn dtypes(&self, f: &mut dyn FnMut(DType)) {
        f(self.dtype())
    }
    fn cast(self, to: Option<DType>) -> crate::Result<Tensor> {
        cast_tensor(&self, to)
    }
    fn lend(o: &Tensor) -> Tensor {
        o.clone()
    }
}

impl Arg for Option<Tensor> {
    type Owned = Option<Tensor>;
    type Ref<'b> = Option<Tensor>;
    fn dtypes(&self, f: &mut dyn FnMut(DType)) {
        if let Some(t) = self {
            f(t.dtype())
        }
    }
    fn cast(self, to: Option<DType>) -> crate::Result<Option<Tensor>> {
        self.map(|t| cast_tensor(&t, to)).transpose()
    }
    fn lend(o: &Option<Tensor>) -> Option<Tensor> {
        o.clone()
    }
}

impl Arg for Option<&Tensor> {
    type Owned = Option<Tensor>;
    type Ref<'b> = Option<&'b Tensor>;
    fn dtypes(&self, f: &mut dyn FnMut(DType)) {
        if let Some(t) = self {
            f(t.dtype())
        }
    }
    fn cast(self, to: Option<DType>) -> crate::Result<Option<Tensor>> {
        self.map(|t| cast_tensor(t, to)).transpose()
    }
    fn lend(o: &Option<Tensor>) -> Option<&Tensor> {
        o.as_ref()
    }
}

impl Arg for Vec<Tensor> {
    type Owned = Vec<Tensor>;
    type Ref<'b> = Vec<Tensor>;
    fn dtypes(&self, f: &mut dyn FnMut(DType)) {
        self.iter().for_each(|t| f(t.dtype()))
    }
    fn cast(self, to: Option<DType>) -> crate::Result<Vec<Tensor>> {
        match to {
            None => Ok(self),
            Some(_) => self.iter().map(|t| cast_tensor(t, to)).collect(),
        }
    }
    fn lend(o: &Vec<Tensor>) -> Vec<Tensor> {
        o.clone()
    }
}

/// Holds an argument's cast copy for the rest of the binding.
pub(crate) struct Held<A: Arg>(pub A::Owned);

impl<A: Arg> Held<A> {
    #[inline]
    pub(crate) fn new(a: A, to: Option<DType>) -> crate::Result<Self> {
        a.cast(to).map(Held)
    }
    #[inline]
    pub(crate) fn lend(&self) -> A::Ref<'_> {
        A::lend(&self.0)
    }
}

/// `autocast!("op", a, b, ...)`: replaces the named tensor arguments (`&Tensor`,
/// `Tensor`, `Option<Tensor>`, `Option<&Tensor>`, `Vec<Tensor>`) with their
/// autocast copies for the rest of the binding, by the policy of `op`.
macro_rules! autocast {
    ($name:expr, $($a:ident),+ $(,)?) => {
        let __to = $crate::py::autocast::target($name, |__f| {
            $( $crate::py::autocast::Arg::dtypes(&$a, __f); )+
        });
        $(
            let $a = $crate::py::autocast::Held::new($a, __to)?;
            let $a = $a.lend();
        )+
    };
}

// ----- the Python surface (ferrograd.amp reads and sets the state through these) -----

fn set_enabled(on: bool) {
    flags::set(flags::AUTOCAST, on);
}

/// Whether CPU autocast is on in this thread.
#[pyfunction]
fn _autocast_cpu_enabled() -> bool {
    flags::any(flags::AUTOCAST)
}

/// Switches CPU autocast on or off in this thread.
#[pyfunction]
fn _set_autocast_cpu_enabled(enabled: bool) {
    set_enabled(enabled)
}

/// This thread's CPU autocast dtype.
#[pyfunction]
fn _autocast_cpu_dtype(py: Python<'_>) -> Py<super::dtype::PyDType> {
    dtype_object(py, STATE.with(|s| s.borrow().dtype))
}

/// Sets this thread's CPU autocast dtype (`autocast` accepts only float16 and
/// bfloat16 for an enabled region; a disabled one may carry any floating dtype).
#[pyfunction]
fn _set_autocast_cpu_dtype(dtype: &Bound<'_, PyAny>) -> PyResult<()> {
    let dt = parse_dtype(dtype)?;
    if !dt.is_float() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "autocast dtype must be a floating dtype, got {}",
            dt.name()
        )));
    }
    STATE.with(|s| s.borrow_mut().dtype = dt);
    Ok(())
}

#[pyfunction]
fn _autocast_cache_enabled() -> bool {
    STATE.with(|s| s.borrow().cache_enabled)
}

#[pyfunction]
fn _set_autocast_cache_enabled(enabled: bool) {
    STATE.with(|s| s.borrow_mut().cache_enabled = enabled)
}

#[pyfunction]
fn _autocast_increment_nesting() -> i64 {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.nesting += 1;
        s.nesting
    })
}

#[pyfunction]
fn _autocast_decrement_nesting() -> i64 {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.nesting -= 1;
        s.nesting
    })
}

/// Drops this thread's cached casts.
#[pyfunction]
fn _clear_autocast_cache() {
    let old = STATE.with(|s| std::mem::take(&mut s.borrow_mut().cache));
    drop(old);
}

/// How many casts the cache holds (for tests).
#[pyfunction]
fn _autocast_cache_size() -> usize {
    STATE.with(|s| s.borrow().cache.len())
}

/// The op's autocast policy as the core reads it (`None`: not listed).
#[pyfunction]
fn _autocast_policy(name: &str) -> Option<&'static str> {
    super::autocast_table::policy(name).map(Policy::name)
}

fn cast_obj<'py>(obj: &Bound<'py, PyAny>, to: Option<DType>) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    if let Ok(t) = obj.cast::<PyTensor>() {
        let src = &t.get().t;
        let out = cast_tensor(src, to)?;
        if out.same(src) {
            return Ok(obj.clone());
        }
        return Ok(crate::py::tensor::wrap(py, out)?.into_bound(py));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        let v: PyResult<Vec<_>> = l.iter().map(|x| cast_obj(&x, to)).collect();
        return Ok(PyList::new(py, v?)?.into_any());
    }
    if let Ok(tp) = obj.cast::<PyTuple>() {
        let v: PyResult<Vec<_>> = tp.iter().map(|x| cast_obj(&x, to)).collect();
        return Ok(PyTuple::new(py, v?)?.into_any());
    }
    Ok(obj.clone())
}

fn visit_obj(obj: &Bound<'_, PyAny>, f: &mut dyn FnMut(DType)) {
    if let Ok(t) = obj.cast::<PyTensor>() {
        f(t.get().t.dtype());
    } else if let Ok(l) = obj.cast::<PyList>() {
        l.iter().for_each(|x| visit_obj(&x, f));
    } else if let Ok(tp) = obj.cast::<PyTuple>() {
        tp.iter().for_each(|x| visit_obj(&x, f));
    }
}

/// The autocast copies of `args` (tensors, and tensors inside lists and
/// tuples) by the policy of `name`: the hook of ops written in Python.
#[pyfunction]
fn _autocast_args<'py>(name: &str, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
    let to = target(name, |f| visit_obj(args.as_any(), f));
    cast_obj(args.as_any(), to)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_autocast_cpu_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_autocast_cpu_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_cpu_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_set_autocast_cpu_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_cache_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_autocast_cache_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_increment_nesting, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_decrement_nesting, m)?)?;
    m.add_function(wrap_pyfunction!(_clear_autocast_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_cache_size, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_policy, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_args, m)?)?;
    Ok(())
}
