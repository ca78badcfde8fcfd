//! Python values in and out: nested lists, NumPy arrays, scalars, sizes.

use numpy::{
    dtype, Element as NpElement, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyEllipsis, PyFloat, PyInt, PyList, PySequence, PySlice, PyString, PyTuple,
};

use super::tensor::PyTensor;
use crate::ops::{IndexItem, Scalar};
use crate::tensor::{numel, DType, Element, Shape, Storage, Tensor, View};

/// A Python scalar, if `obj` is one (bool before int: bool subclasses int).
pub fn as_scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return Some(match obj.extract::<i64>() {
            Ok(i) => Scalar::Int(i),
            Err(_) => Scalar::Float(obj.extract::<f64>().ok()?),
        });
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    // Lists, tuples and tensors are never scalars here; the failed `dtype` lookup
    // below would raise (and drop) an AttributeError, microseconds per nested list.
    if obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.cast::<PyTensor>().is_ok()
    {
        return None;
    }
    // NumPy scalars (np.float32(1), np.int64(2), np.bool_(True)).
    if let Ok(kind) = obj.getattr("dtype").and_then(|d| d.getattr("kind")) {
        if obj.hasattr("item").unwrap_or(false)
            && obj
                .getattr("shape")
                .map(|s| s.len().unwrap_or(1) == 0)
                .unwrap_or(false)
        {
            let kind: String = kind.extract().ok()?;
            let item = obj.call_method0("item").ok()?;
            return match kind.as_str() {
                "b" => item.extract::<bool>().ok().map(Scalar::Bool),
                "i" | "u" => item.extract::<i64>().ok().map(Scalar::Int),
                "f" => item.extract::<f64>().ok().map(Scalar::Float),
                _ => None,
            };
        }
    }
    None
}

/// The right-hand side of an op: a tensor or a Python number.
pub enum Operand {
    Tensor(Tensor),
    Scalar(Scalar),
}

pub fn operand(obj: &Bound<'_, PyAny>) -> Option<Operand> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Some(Operand::Tensor(t.get().t.clone()));
    }
    as_scalar(obj).map(Operand::Scalar)
}

/// Converts an op argument that must become a tensor (lists and arrays too).
pub fn to_tensor_like(obj: &Bound<'_, PyAny>, like: Option<&Tensor>) -> PyResult<Tensor> {
    match operand(obj) {
        Some(Operand::Tensor(t)) => Ok(t),
        Some(Operand::Scalar(s)) => {
            let t = match like {
                Some(l) => s.wrap_opmath(l),
                None => scalar_tensor(s, None)?,
            };
            super::capture::note_number_tensor(obj, &t);
            Ok(t)
        }
        None if super::dispatch::dispatchable(obj) => Err(super::dispatch::needed(obj)),
        None => tensor_from_data(obj, None),
    }
}

fn scalar_tensor(s: Scalar, dtype: Option<DType>) -> PyResult<Tensor> {
    Ok(match (s, dtype) {
        (Scalar::Int(i), None | Some(DType::I64)) => Tensor::scalar(i),
        (Scalar::Bool(b), None) => Tensor::scalar(b),
        (Scalar::Float(f), None) => Tensor::scalar_of(f, DType::default_float()),
        (s, Some(dt)) => {
            check_fits(s, dt)?;
            s.tensor_of(dt)
        }
    })
}

/// PyTorch's check that a number written into an integer tensor
/// (`tensor([300], dtype=uint8)`) fits: in the type's range (uint8 also
/// takes -255..-1, which wrap, as PyTorch allows), and no NaN or infinity.
pub fn check_fits(s: Scalar, dt: DType) -> PyResult<()> {
    if !dt.is_int() {
        return Ok(());
    }
    let bits = 8 * dt.size() as u32;
    let (lo, hi) = if dt == DType::U8 {
        (-255.0, 255.0)
    } else {
        (
            -(2f64.powi(bits as i32 - 1)),
            2f64.powi(bits as i32 - 1) - 1.0,
        )
    };
    let fits = match s {
        Scalar::Bool(_) => true,
        Scalar::Int(i) => dt == DType::I64 || (lo..=hi).contains(&(i as f64)),
        Scalar::Float(f) => {
            !f.is_nan() && f >= lo && (f <= hi || (dt == DType::I64 && f < -(i64::MIN as f64)))
        }
    };
    if fits {
        Ok(())
    } else {
        Err(PyRuntimeError::new_err(format!(
            "value cannot be converted to type {} without overflow",
            dt.name()
        )))
    }
}

/// Most dimensions a nested sequence may have (PyTorch's `MAX_DIMS`).
const MAX_DIMS: usize = 128;

/// Flat values gathered from nested Python sequences.
struct Gathered {
    shape: Shape,
    vals: Vec<Scalar>,
    saw_float: bool,
    saw_int: bool,
}

fn gather(obj: &Bound<'_, PyAny>, depth: usize, g: &mut Gathered) -> PyResult<()> {
    if let Some(s) = as_scalar(obj) {
        if depth != g.shape.len() {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {depth} (got a scalar)",
                g.shape.get(depth).copied().unwrap_or(0)
            )));
        }
        match s {
            Scalar::Float(_) => g.saw_float = true,
            Scalar::Int(_) => g.saw_int = true,
            Scalar::Bool(_) => {}
        }
        g.vals.push(s);
        return Ok(());
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.numel() == 1 && t.ndim() == 0 && depth == g.shape.len() {
            match t.dtype() {
                DType::Bool => g.vals.push(Scalar::Bool(t.to_vec::<bool>()[0])),
                DType::I64 => {
                    g.saw_int = true;
                    g.vals.push(Scalar::Int(t.to_vec::<i64>()[0]))
                }
                _ => {
                    g.saw_float = true;
                    g.vals.push(Scalar::Float(t.item()?))
                }
            }
            return Ok(());
        }
        let list = t_to_list(obj.py(), t)?;
        return gather(list.bind(obj.py()), depth, g);
    }
    if obj.cast::<PyUntypedArray>().is_ok() {
        let list = obj.call_method0("tolist")?;
        return gather(&list, depth, g);
    }
    // A str is a sequence of strs: without this check the walk below never ends.
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "new(): invalid data type '{}'",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        )));
    }
    // PyTorch's MAX_DIMS; also stops self-containing lists (`l.append(l)`).
    if depth >= MAX_DIMS {
        return Err(PyValueError::new_err(format!(
            "too many dimensions '{}'",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        )));
    }
    let seq = obj.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err(format!(
            "Could not infer dtype of {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let n = seq.len()?;
    if depth == g.shape.len() {
        if !g.vals.is_empty() {
            return Err(PyValueError::new_err(format!(
                "expected a scalar at dim {depth}, got a sequence"
            )));
        }
        g.shape.push(n);
    } else if g.shape[depth] != n {
        return Err(PyValueError::new_err(format!(
            "expected sequence of length {} at dim {depth} (got {n})",
            g.shape[depth]
        )));
    }
    for i in 0..n {
        gather(&seq.get_item(i)?, depth + 1, g)?;
    }
    Ok(())
}

fn t_to_list(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    Ok(super::tensor::tensor_to_py(py, t)?.unbind())
}

/// `ferrograd.tensor(data, dtype=...)`: always a copy.
pub fn tensor_from_data(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    super::errors::guard_py(|| tensor_from_data_unguarded(obj, dtype))
}

fn tensor_from_data_unguarded(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        let c = crate::ops::clone_data(t);
        return Ok(match dtype {
            Some(dt) => crate::ops::to_dtype(&c, dt)?,
            None => c,
        });
    }
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        let t = from_numpy_copy(arr)?;
        return Ok(match dtype {
            Some(dt) if dt != t.dtype() => crate::ops::to_dtype(&t, dt)?,
            _ => t,
        });
    }
    if let Some(s) = as_scalar(obj) {
        return scalar_tensor(s, dtype);
    }
    let mut g = Gathered {
        shape: Shape::new(),
        vals: Vec::new(),
        saw_float: false,
        saw_int: false,
    };
    gather(obj, 0, &mut g)?;
    if g.vals.len() != numel(&g.shape) {
        return Err(PyValueError::new_err("ragged nested sequence"));
    }
    let dt = dtype.unwrap_or(if g.saw_float {
        DType::default_float()
    } else if g.saw_int {
        DType::I64
    } else if g.vals.is_empty() {
        DType::default_float()
    } else {
        DType::Bool
    });
    Ok(match dt {
        DType::I64 => Tensor::from_vec(
            g.vals
                .iter()
                .map(|s| match s {
                    Scalar::Int(i) => *i,
                    other => other.to_f64() as i64,
                })
                .collect::<Vec<i64>>(),
            g.shape,
        ),
        dt => crate::dispatch!(dt, T => Tensor::from_vec({
            for &s in &g.vals {
                check_fits(s, dt)?;
            }
            g.vals
                .iter()
                .map(|s| match s {
                    Scalar::Int(i) => T::from_i64(*i),
                    other => T::from_f64(other.to_f64()),
                })
                .collect::<Vec<T>>()
            },
            g.shape,
        )),
    })
}

/// A tensor used as an index, as PyTorch takes it: int64 and bool as they
/// are, int32 widened, uint8 as a mask (PyTorch's deprecated byte masks);
/// other dtypes refused with PyTorch's words.
fn index_tensor(t: &Tensor) -> PyResult<Tensor> {
    match t.dtype() {
        DType::I64 | DType::Bool => Ok(t.clone()),
        DType::I32 => Ok(crate::ops::cast_data(t, DType::I64)),
        DType::U8 => Ok(crate::ops::cast_data(t, DType::Bool)),
        _ => Err(PyIndexError::new_err(
            "tensors used as indices must be long, int, byte or bool tensors",
        )),
    }
}

/// The NumPy types `from_numpy` shares, in the words of PyTorch's refusal.
const NUMPY_TYPES: &str = "float64, float32, float16, int64, int32, int16, int8, uint8, and bool";

fn np_dtype_of(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Option<DType>> {
    let py = arr.py();
    let d = arr.dtype();
    Ok(if d.is_equiv_to(&dtype::<f32>(py)) {
        Some(DType::F32)
    } else if d.is_equiv_to(&dtype::<f64>(py)) {
        Some(DType::F64)
    } else if d.is_equiv_to(&dtype::<i64>(py)) {
        Some(DType::I64)
    } else if d.is_equiv_to(&dtype::<bool>(py)) {
        Some(DType::Bool)
    } else if d.is_equiv_to(&dtype::<i32>(py)) {
        Some(DType::I32)
    } else if d.is_equiv_to(&dtype::<i16>(py)) {
        Some(DType::I16)
    } else if d.is_equiv_to(&dtype::<i8>(py)) {
        Some(DType::I8)
    } else if d.is_equiv_to(&dtype::<u8>(py)) {
        Some(DType::U8)
    } else if d.is_equiv_to(&dtype::<crate::tensor::f16>(py)) {
        Some(DType::F16)
    } else {
        None
    })
}

/// A copy of a NumPy array, keeping every dtype ferrograd has; other integer
/// and float kinds (uint16-64, longdouble) are widened to int64/float64.
fn from_numpy_copy(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Tensor> {
    // A copy may come from any layout: reversed (`a[::-1]`) or unaligned
    // arrays, which cannot be shared, are first copied by NumPy.
    let item = arr.dtype().itemsize() as isize;
    if arr
        .strides()
        .iter()
        .any(|&s| s < 0 || (item > 0 && s % item != 0))
    {
        let copied = arr.call_method0("copy")?;
        return from_numpy_copy(copied.cast::<PyUntypedArray>()?);
    }
    let shared = match np_dtype_of(arr)? {
        Some(_) => from_numpy_shared(arr.as_any())?,
        None => {
            let kind: String = arr.dtype().getattr("kind")?.extract()?;
            let target = match kind.as_str() {
                "f" => "float64",
                "i" | "u" => "int64",
                "b" => "bool",
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "can't convert np.ndarray of type {}. The only supported types are: {NUMPY_TYPES}.",
                        arr.dtype()
                    )))
                }
            };
            let conv = arr.call_method1("astype", (target,))?;
            from_numpy_shared(&conv)?
        }
    };
    Ok(crate::ops::clone_data(&shared))
}

/// `ferrograd.from_numpy`: shares the array's memory.
pub fn from_numpy_shared(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let dt = np_dtype_of(arr)?.ok_or_else(|| {
        PyTypeError::new_err(format!(
            "can't convert np.ndarray of type {}. The only supported types are: {NUMPY_TYPES}.",
            arr.dtype()
        ))
    })?;
    crate::dispatch!(dt, T => share_array::<T>(obj))
}

fn share_array<T: Element + NpElement>(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let arr = obj.cast::<PyArrayDyn<T>>()?;
    let shape: Shape = arr.shape().iter().copied().collect();
    let item = std::mem::size_of::<T>() as isize;
    let mut strides = crate::tensor::Strides::new();
    for (&s, &n) in arr.strides().iter().zip(arr.shape()) {
        if s < 0 {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
            ));
        }
        if s % item != 0 {
            return Err(PyValueError::new_err(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.",
            ));
        }
        strides.push(if n <= 1 { 0 } else { (s / item) as usize });
    }
    // The storage spans from the first element to the farthest one.
    let span = if numel(&shape) == 0 {
        0
    } else {
        1 + shape
            .iter()
            .zip(&strides)
            .map(|(&n, &s)| (n - 1) * s)
            .sum::<usize>()
    };
    let ptr = arr.data() as *mut u8;
    let owner: Py<PyAny> = obj.clone().unbind();
    // SAFETY: the array object is kept alive by the storage; its data pointer
    // is valid for `span` elements of T as described by its own strides.
    let storage = unsafe { Storage::from_external(ptr, span, T::DTYPE, Box::new(owner)) };
    Ok(Tensor::from_view(
        View {
            storage,
            shape,
            strides,
            offset: 0,
        },
        None,
    ))
}

/// Keeps a storage alive while NumPy views it.
#[pyclass(module = "ferrograd._C", frozen)]
pub struct StorageOwner {
    _storage: std::sync::Arc<Storage>,
}

/// NumPy's refusals of an array's layout, checked before one is made: the
/// constructor rust-numpy calls returns no array for them and the attaching
/// of the owner that follows would read through that null pointer. NumPy
/// multiplies the nonzero sizes by the item size (so `[2**61, 0]` of float32
/// is "too big" for it, as it is when PyTorch converts that tensor), and the
/// strides are given to it in bytes.
fn check_numpy_layout(py: Python<'_>, v: &View) -> PyResult<()> {
    let item = v.dtype().size();
    let too_big = || {
        PyValueError::new_err(
            "array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.",
        )
    };
    let mut bytes = item;
    for &d in v.shape.iter().filter(|&&d| d != 0) {
        bytes = bytes
            .checked_mul(d)
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(too_big)?;
    }
    for &s in &v.strides {
        s.checked_mul(item)
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(too_big)?;
    }
    // NumPy 1 allows 32 dimensions, NumPy 2 64: let NumPy say.
    if v.shape.len() > 32 {
        let zeros = PyTuple::new(py, std::iter::repeat_n(0usize, v.shape.len()))?;
        py.import("numpy")?.call_method1("empty", (zeros,))?;
    }
    Ok(())
}

/// A NumPy array viewing the tensor's memory (no copy).
pub fn to_numpy_shared<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let v = t.view().clone();
    if v.dtype() == DType::BF16 {
        // NumPy has no bfloat16; PyTorch refuses with these words.
        return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16"));
    }
    check_numpy_layout(py, &v)?;
    let owner = Bound::new(
        py,
        StorageOwner {
            _storage: v.storage.clone(),
        },
    )?;
    crate::dispatch!(v.dtype(), T => {
        let shape = ndarray::IxDyn(&v.shape);
        // SAFETY: the view lies inside the storage, which `owner` keeps alive
        // for as long as the array exists.
        let view = unsafe {
            ndarray::ArrayView::from_shape_ptr(
                ndarray::ShapeBuilder::strides(shape, ndarray::IxDyn(&v.strides)),
                v.ptr::<T>() as *const T,
            )
        };
        let arr = unsafe { PyArrayDyn::<T>::borrow_from_array(&view, owner.into_any()) };
        Ok(arr.into_any())
    })
}

/// Sizes given as `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(size=(2, 3))`.
pub fn parse_size(
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<i64>> {
    if let Some(s) = size {
        if !args.is_empty() {
            return Err(PyTypeError::new_err(
                "size given both positionally and as a keyword",
            ));
        }
        return seq_of_ints(s);
    }
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if !a.is_instance_of::<PyInt>() {
            return seq_of_ints(&a);
        }
    }
    args.iter().map(|a| int_arg(&a)).collect()
}

pub fn seq_of_ints(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if obj.is_instance_of::<PyInt>() {
        return Ok(vec![int_arg(obj)?]);
    }
    let seq = obj
        .cast::<PySequence>()
        .map_err(|_| PyTypeError::new_err(format!("expected a sequence of integers, got {obj}")))?;
    (0..seq.len()?)
        .map(|i| int_arg(&seq.get_item(i)?))
        .collect()
}

pub fn int_arg(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    let integral = !obj.is_instance_of::<PyBool>()
        && !obj.is_instance_of::<PyFloat>()
        && (obj.is_instance_of::<PyInt>() || obj.hasattr("__index__")?);
    if !integral {
        return Err(PyTypeError::new_err(format!(
            "expected an integer, got {}",
            obj.get_type().name()?
        )));
    }
    // Goes through `__index__` (NumPy integers, one-element integer tensors);
    // a value beyond int64 is an OverflowError, as in PyTorch.
    obj.extract::<i64>()
}

/// Non-negative sizes for a creation function.
pub fn to_shape(dims: &[i64]) -> PyResult<Shape> {
    dims.iter()
        .map(|&d| {
            if d < 0 {
                Err(PyRuntimeError::new_err(format!(
                    "Trying to create tensor with negative dimension {d}: {dims:?}"
                )))
            } else {
                Ok(d as usize)
            }
        })
        .collect()
}

// ----- argument parsers shared by the bindings -------------------------------

/// A number argument (`fill_`'s value, `add_`'s alpha).
pub fn scalar_from_any(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    as_scalar(v).ok_or_else(|| PyTypeError::new_err(format!("expected a number, got {v}")))
}

/// A reduction's `dim`: absent or None (every dimension), an int or a
/// sequence of ints.
pub fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match dim {
        None => Ok(None),
        Some(d) if d.is_none() => Ok(None),
        Some(d) => seq_of_ints(d).map(Some),
    }
}

/// The first operand of a functional op: a tensor, or a number when the
/// other one is a tensor (`torch.add(1, t)`).
pub fn lhs(input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    match operand(input) {
        Some(Operand::Tensor(t)) => Ok(t),
        Some(Operand::Scalar(s)) => match operand(other) {
            Some(Operand::Tensor(o)) => {
                let t = s.wrap(&o);
                super::capture::note_number_tensor(input, &t);
                Ok(t)
            }
            _ => to_tensor_like(input, None),
        },
        None => to_tensor_like(input, None),
    }
}

/// An optional tensor argument (`weight=None`).
pub fn opt_tensor(o: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    match o {
        Some(o) if !o.is_none() => Ok(Some(
            o.cast::<PyTensor>()
                .map_err(|_| {
                    if super::dispatch::dispatchable(o) {
                        super::dispatch::needed(o)
                    } else {
                        PyTypeError::new_err("expected a Tensor or None")
                    }
                })?
                .get()
                .t
                .clone(),
        )),
        _ => Ok(None),
    }
}

/// Every tensor in a tensor-or-sequence argument.
pub fn tensor_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(vec![t.get().t.clone()]);
    }
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let t = item.cast::<PyTensor>().map_err(|_| {
            if super::dispatch::dispatchable(&item) {
                super::dispatch::needed(&item)
            } else {
                PyTypeError::new_err("expected a Tensor or a sequence of Tensors")
            }
        })?;
        out.push(t.get().t.clone());
    }
    Ok(out)
}

/// Whether `clamp` got a bound as a tensor (PyTorch's tensor overload).
pub fn tensor_bounds(min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> bool {
    [min, max]
        .iter()
        .any(|b| b.is_some_and(|o| o.cast::<PyTensor>().is_ok()))
}

/// A `clamp` bound: absent, a number (in `like`'s dtype rules) or a tensor.
pub fn bound_arg(b: Option<&Bound<'_, PyAny>>, like: &Tensor) -> PyResult<Option<Tensor>> {
    match b {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match operand(o) {
            Some(Operand::Tensor(t)) => Ok(Some(t)),
            Some(Operand::Scalar(s)) => {
                let t = s.wrap(like);
                crate::py::capture::note_number_tensor(o, &t);
                Ok(Some(t))
            }
            None => Err(PyTypeError::new_err(format!(
                "clamp(): expected a number or a Tensor as a bound, got {o}"
            ))),
        },
    }
}

/// `(dims, correction)` from `var`/`std`'s overloads: `var(unbiased)` (a bool
/// first argument), `var(dim, unbiased, keepdim)` and `correction=`.
pub fn var_args(
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    correction: Option<f64>,
) -> PyResult<(Option<Vec<i64>>, f64)> {
    let (dim, unbiased) = match dim {
        Some(d) if d.is_instance_of::<PyBool>() => (None, Some(d.extract::<bool>()?)),
        other => (other, unbiased),
    };
    if correction.is_some() && unbiased.is_some() {
        return Err(PyRuntimeError::new_err(
            "Cannot specify both unbiased and correction",
        ));
    }
    let corr = correction.unwrap_or(if unbiased == Some(false) { 0.0 } else { 1.0 });
    Ok((dims_arg(dim)?, corr))
}
/// The `p` of `norm`: a number, `inf`, or `"fro"` (which is 2).
pub fn norm_ord(p: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    match p {
        None => Ok(2.0),
        Some(p) if p.is_none() => Ok(2.0),
        Some(p) => {
            if let Ok(s) = p.extract::<String>() {
                return match s.as_str() {
                    "fro" => Ok(2.0),
                    other => Err(PyRuntimeError::new_err(format!(
                        "norm(): the matrix norm '{other}' is not supported; use a vector norm order"
                    ))),
                };
            }
            p.extract::<f64>()
                .map_err(|_| PyTypeError::new_err(format!("norm(): invalid p {p}")))
        }
    }
}
/// A Python index key as index items: ints, slices, `None`, `...`, bools,
/// tensors, and sequences or arrays (which become index tensors).
pub fn index_items(key: &Bound<'_, PyAny>) -> PyResult<Vec<IndexItem>> {
    let parts: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(tup) => tup.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let mut out = Vec::with_capacity(parts.len());
    for it in &parts {
        out.push(if it.is_none() {
            IndexItem::NewAxis
        } else if it.is_instance_of::<PyEllipsis>() {
            IndexItem::Ellipsis
        } else if let Ok(sl) = it.cast::<PySlice>() {
            let get = |name: &str| -> PyResult<Option<i64>> {
                let v = sl.getattr(name)?;
                if v.is_none() {
                    Ok(None)
                } else {
                    int_arg(&v).map(Some)
                }
            };
            IndexItem::Slice(get("start")?, get("stop")?, get("step")?.unwrap_or(1))
        } else if it.is_instance_of::<PyBool>() {
            IndexItem::Tensor(Tensor::scalar(it.extract::<bool>()?))
        } else if let Some(Scalar::Int(i)) = as_scalar(it) {
            IndexItem::Int(i)
        } else if let Ok(ti) = it.cast::<PyTensor>() {
            let ti = &ti.get().t;
            if matches!(ti.dtype(), DType::I64 | DType::I32) && ti.ndim() == 0 {
                IndexItem::Int(ti.to_vec::<i64>()[0])
            } else {
                IndexItem::Tensor(index_tensor(ti)?)
            }
        } else if it.is_instance_of::<PyList>() || it.hasattr("__array__")? {
            let t = tensor_from_data(it, None)?;
            let t = if t.numel() == 0 {
                Tensor::zeros(t.shape(), DType::I64)
            } else {
                t
            };
            IndexItem::Tensor(index_tensor(&t)?)
        } else {
            return Err(PyIndexError::new_err(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got ".to_string()
                    + &it.get_type().name()?.to_string()
                    + ")",
            ));
        });
    }
    Ok(out)
}
