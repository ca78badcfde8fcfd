//! Attributes: `t.name = "w"` as on PyTorch's tensors, at no cost to tensors
//! that have none.
//!
//! The base class has no `__dict__` slot (see `PyTensor`), and a
//! `__getattr__` hook would make every method lookup (`x.sum()`) leave
//! CPython's generic path and allocate a bound method (measured: about 50 ns
//! per method call). Instead the first write of a name the class does not
//! define installs a data descriptor of that name on `Tensor`
//! ([`TensorAttribute`]); from then on CPython's generic lookup finds it, and
//! it reads and writes the object's own dict: the Rust-held `attrs` of a
//! plain tensor (created on its first attribute), or the `__dict__` of a
//! Python subclass instance (`nn.Parameter`). A tensor without the attribute
//! raises the usual `AttributeError`, and `Tensor.name` itself is an
//! `AttributeError` too, as in PyTorch. The collector sees `attrs` through
//! `__traverse__` and `__clear__` empties it, so `t.me = t` is collected.

use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::PyTensor;

impl PyTensor {
    /// The attribute dict, created on first use.
    fn attr_dict<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        if let Some(d) = self.attrs.get() {
            return d.bind(py).clone();
        }
        // Allocated before being published: a collection that runs inside
        // `PyDict::new` sees no dict yet. The GIL serialises writers.
        let d = PyDict::new(py);
        let _ = self.attrs.set(d.clone().unbind());
        d
    }
}

/// `'ferrograd.Tensor' object`, or the subclass's own name, as CPython's
/// messages spell the type.
fn type_label(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let ty = obj.get_type();
    if ty.is(obj.py().get_type::<PyTensor>()) {
        Ok("ferrograd.Tensor".to_string())
    } else {
        Ok(ty.name()?.to_string())
    }
}

/// Where `obj`'s attributes live: the instance `__dict__` of a Python
/// subclass that has one, else the tensor's `attrs` (created when `create`).
fn dict_of<'py>(obj: &Bound<'py, PyTensor>, create: bool) -> PyResult<Option<Bound<'py, PyDict>>> {
    let py = obj.py();
    let ty = obj.get_type();
    if !ty.is(py.get_type::<PyTensor>())
        && ty
            .getattr(pyo3::intern!(py, "__dictoffset__"))?
            .extract::<isize>()?
            != 0
    {
        return Ok(Some(
            obj.getattr(pyo3::intern!(py, "__dict__"))?.cast_into()?,
        ));
    }
    let t = obj.get();
    Ok(match t.attrs.get() {
        Some(d) => Some(d.bind(py).clone()),
        None if create => Some(t.attr_dict(py)),
        None => None,
    })
}

/// The descriptor `Tensor.<name>` installed by the first `t.<name> = value`
/// on any tensor: reads and writes the object's own attribute dict.
#[pyclass(module = "ferrograd", frozen)]
pub(crate) struct TensorAttribute {
    name: Py<PyString>,
}

#[pymethods]
impl TensorAttribute {
    fn __get__(
        &self,
        py: Python<'_>,
        obj: Option<&Bound<'_, PyAny>>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let name = self.name.bind(py);
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Err(PyAttributeError::new_err(format!(
                "type object 'Tensor' has no attribute '{name}'"
            )));
        };
        let t = obj.cast::<PyTensor>()?;
        if let Some(d) = dict_of(t, false)? {
            if let Some(v) = d.get_item(name)? {
                return Ok(v.unbind());
            }
        }
        Err(PyAttributeError::new_err(format!(
            "'{}' object has no attribute '{name}'",
            type_label(obj)?
        )))
    }

    fn __set__(&self, obj: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let d = dict_of(obj.cast::<PyTensor>()?, true)?.expect("created");
        d.set_item(self.name.bind(obj.py()), value)
    }

    fn __delete__(&self, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let name = self.name.bind(obj.py());
        if let Some(d) = dict_of(obj.cast::<PyTensor>()?, false)? {
            if d.contains(name)? {
                return d.del_item(name);
            }
        }
        Err(PyAttributeError::new_err(format!(
            "'{}' object has no attribute '{name}'",
            type_label(obj)?
        )))
    }
}

#[pymethods]
impl PyTensor {
    /// The tensor's attributes (`t.name = ...`) as a dict.
    #[getter(__dict__)]
    fn dict_getter<'py>(slf: &Bound<'py, Self>) -> Bound<'py, PyDict> {
        slf.get().attr_dict(slf.py())
    }

    fn __setattr__(
        slf: &Bound<'_, Self>,
        name: &Bound<'_, PyString>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let py = slf.py();
        // Properties, installed attribute descriptors and subclass dicts.
        // SAFETY: valid object, name and value pointers; the GIL is held.
        let rc = unsafe {
            pyo3::ffi::PyObject_GenericSetAttr(slf.as_ptr(), name.as_ptr(), value.as_ptr())
        };
        if rc == 0 {
            return Ok(());
        }
        let err = PyErr::fetch(py);
        let base = py.get_type::<PyTensor>();
        if !err.is_instance_of::<PyAttributeError>(py) || slf.get_type().hasattr(name)? {
            // Another error, or a name the class defines (a read-only
            // property, a method): CPython's own answer stands.
            return Err(err);
        }
        let descr = Bound::new(
            py,
            TensorAttribute {
                name: name.clone().unbind(),
            },
        )?;
        base.setattr(name, &descr)?;
        descr.get().__set__(slf.as_any(), value)
    }

    fn __delattr__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<()> {
        // SAFETY: as above; a null value asks for deletion.
        let rc = unsafe {
            pyo3::ffi::PyObject_GenericSetAttr(slf.as_ptr(), name.as_ptr(), std::ptr::null_mut())
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(PyErr::fetch(slf.py()))
        }
    }
}
