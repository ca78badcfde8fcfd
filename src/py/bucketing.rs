//! The counting and bucketing kernels behind `searchsorted`/`bucketize`,
//! `histc` and `bincount`: the Python functions check the arguments (with
//! PyTorch's words) and call these for the common dtypes, one native call
//! where NumPy took a dozen array calls on a few elements.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyFloat;

use super::capture::run_op;
use super::functions::t_of;
use super::tensor::PyTensor;
use crate::error::Error;
use crate::tensor::{DType, Shape, Tensor};

/// PyTorch's bisection: right while `!(row[mid] >= v)` (`!(row[mid] > v)` with
/// `right`). On a sorted row this is the insertion point; a NaN compares false
/// on either side, so it steers the search as in PyTorch.
fn bisect<T: Copy + PartialOrd>(row: &[T], v: T, right: bool) -> usize {
    let (mut lo, mut hi) = (0usize, row.len());
    while lo < hi {
        let mid = lo + ((hi - lo) >> 1);
        let stop = if right { row[mid] > v } else { row[mid] >= v };
        if stop {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The insertion points of `vals` in the last dimension of `seq` (the same
/// dtype): one row for every value when `seq` is 1-D, else row `r` for the
/// values of row `r` of `vals` (whose leading dimensions are `seq`'s).
fn search_rows<T: crate::tensor::Element + PartialOrd>(
    seq: &Tensor,
    vals: &Tensor,
    right: bool,
) -> Vec<i64> {
    let s = seq.to_vec::<T>();
    let v = vals.to_vec::<T>();
    let n = seq.shape().last().copied().unwrap_or(0);
    if n == 0 {
        return vec![0; v.len()];
    }
    if seq.ndim() == 1 {
        return v.iter().map(|&x| bisect(&s, x, right) as i64).collect();
    }
    let per_row = vals.shape().last().copied().unwrap_or(1).max(1);
    v.iter()
        .enumerate()
        .map(|(k, &x)| {
            let r = k / per_row;
            bisect(&s[r * n..(r + 1) * n], x, right) as i64
        })
        .collect()
}

/// `searchsorted(seq, vals)` for `seq` of at least one dimension and `vals` of
/// its dtype (int64 or int32 indices, `vals`' shape). Shapes are checked by the caller.
#[pyfunction]
fn _searchsorted(
    py: Python<'_>,
    seq: &Bound<'_, PyTensor>,
    vals: &Bound<'_, PyTensor>,
    right: bool,
    out_int32: bool,
) -> PyResult<Py<PyAny>> {
    let (s, v) = (t_of(seq), t_of(vals));
    if s.dtype() != v.dtype() || s.ndim() == 0 {
        return Err(PyRuntimeError::new_err(
            "_searchsorted: a sequence of at least one dimension and values of its dtype",
        ));
    }
    let work = v.numel().saturating_mul(usize::BITS as usize);
    run_op(py, work, "searchsorted", &[s, v], &[], move |t, _| {
        let (s, v) = (t[0], t[1]);
        let idx = match s.dtype() {
            DType::F32 => search_rows::<f32>(s, v, right),
            DType::F64 => search_rows::<f64>(s, v, right),
            DType::I64 => search_rows::<i64>(s, v, right),
            DType::I32 => search_rows::<i32>(s, v, right),
            DType::I16 => search_rows::<i16>(s, v, right),
            DType::I8 => search_rows::<i8>(s, v, right),
            DType::U8 => search_rows::<u8>(s, v, right),
            dt => {
                return Err(Error::runtime(format!(
                    "_searchsorted: no kernel for {dt:?}"
                )))
            }
        };
        let shape: Shape = v.shape();
        Ok(if out_int32 {
            Tensor::from_vec(
                idx.into_iter().map(|i| i as i32).collect::<Vec<i32>>(),
                shape,
            )
        } else {
            Tensor::from_vec(idx, shape)
        })
    })
}

/// NumPy's float-to-int64 cast on x86: out-of-range values and NaN give `i64::MIN`
/// (the clamp that follows sends them to bin 0, as the NumPy path did).
fn trunc_i64(x: f64) -> i64 {
    if x.is_nan() || !(-9.223_372_036_854_775e18..9.223_372_036_854_775e18).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// The bin counts of `x` between `lo` and `hi` in `T`'s arithmetic, as PyTorch
/// computes a bin: `(x - lo) / (hi - lo) * bins`, truncated, the top edge in the
/// last bin, NaN and values outside `[lo, hi]` not counted.
fn histogram<T>(x: &[T], bins: usize, lo: T, hi: T) -> Vec<T>
where
    T: crate::tensor::Element
        + PartialOrd
        + std::ops::Sub<Output = T>
        + std::ops::Div<Output = T>
        + std::ops::Mul<Output = T>,
{
    let mut counts = vec![0u64; bins];
    let width = hi - lo;
    let nb = T::from_f64(bins as f64);
    for &v in x {
        if v >= lo && v <= hi {
            let pos = trunc_i64(((v - lo) / width * nb).to_f64());
            let pos = pos.clamp(0, bins as i64 - 1) as usize;
            counts[pos] += 1;
        }
    }
    counts.into_iter().map(|c| T::from_f64(c as f64)).collect()
}

fn min_max<T: crate::tensor::Element>(x: &[T]) -> (f64, f64) {
    // NumPy's min and max: a NaN anywhere is the answer.
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &v in x {
        let v = v.to_f64();
        if v.is_nan() {
            return (f64::NAN, f64::NAN);
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo, hi)
}

fn repr(py: Python<'_>, x: f64) -> PyResult<String> {
    Ok(PyFloat::new(py, x).repr()?.to_string())
}

/// `histc` of a float32 or float64 tensor, `bins > 0` and `lo <= hi` checked by the
/// caller; `lo == hi` takes the data's range (widened by 1 each way when flat).
#[pyfunction]
fn _histc(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    bins: usize,
    lo: f64,
    hi: f64,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let (mut lo, mut hi) = (lo, hi);
    if lo == hi && x.numel() > 0 {
        (lo, hi) = match x.dtype() {
            DType::F32 => min_max(&x.to_vec::<f32>()),
            DType::F64 => min_max(&x.to_vec::<f64>()),
            _ => return Err(PyRuntimeError::new_err("_histc: float32 or float64 input")),
        };
    }
    if lo == hi {
        (lo, hi) = (lo - 1.0, hi + 1.0);
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(PyRuntimeError::new_err(format!(
            "torch.histc: range of [{}, {}] is not finite",
            repr(py, lo)?,
            repr(py, hi)?
        )));
    }
    run_op(py, x.numel(), "histc", &[x], &[], move |t, _| {
        let x = t[0];
        Ok(match x.dtype() {
            DType::F32 => Tensor::from_vec(
                histogram(&x.to_vec::<f32>(), bins, lo as f32, hi as f32),
                Shape::from_slice(&[bins]),
            ),
            DType::F64 => Tensor::from_vec(
                histogram(&x.to_vec::<f64>(), bins, lo, hi),
                Shape::from_slice(&[bins]),
            ),
            dt => return Err(Error::runtime(format!("_histc: no kernel for {dt:?}"))),
        })
    })
}

/// `bincount` of a 1-D int64 tensor without weights.
#[pyfunction]
fn _bincount(py: Python<'_>, input: &Bound<'_, PyTensor>, minlength: i64) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    if x.dtype() != DType::I64 || x.ndim() != 1 {
        return Err(PyRuntimeError::new_err("_bincount: a 1-D int64 tensor"));
    }
    let vals = x.to_vec::<i64>();
    if vals.iter().any(|&v| v < 0) {
        return Err(PyRuntimeError::new_err(
            "bincount only supports 1-d non-negative integral inputs.",
        ));
    }
    if minlength < 0 {
        return Err(PyRuntimeError::new_err("minlength should be >= 0"));
    }
    let top = vals.iter().copied().max().map_or(0, |m| m as u64 + 1);
    let nbins = top.max(minlength as u64);
    if nbins.saturating_mul(8) > 1 << 33 {
        return Err(PyRuntimeError::new_err(format!(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes. \
             Error code 12 (Cannot allocate memory)",
            nbins * 8
        )));
    }
    let nbins = nbins as usize;
    run_op(py, x.numel(), "bincount", &[x], &[], move |t, _| {
        let mut counts = vec![0i64; nbins];
        for v in t[0].to_vec::<i64>() {
            // A replay's input may reach past the bins counted for the first call.
            let slot = counts
                .get_mut(v as usize)
                .ok_or_else(|| Error::runtime("bincount: a value past the counted bins"))?;
            *slot += 1;
        }
        Ok(Tensor::from_vec(counts, Shape::from_slice(&[nbins])))
    })
}

/// Which of `a` occur in `b` (NaN matches nothing, -0.0 matches 0.0), every pair
/// compared for a short `b`, else a binary search of `b` sorted.
fn member<T: crate::tensor::Element + PartialOrd>(
    a: &Tensor,
    b: &Tensor,
    invert: bool,
) -> Vec<bool> {
    let a = a.to_vec::<T>();
    let mut b = b.to_vec::<T>();
    if b.len() <= 16 {
        return a
            .iter()
            .map(|x| b.iter().any(|y| x == y) != invert)
            .collect();
    }
    // NaN never matches, so it leaves the sorted set.
    b.retain(|y| y.partial_cmp(y).is_some());
    b.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
    a.iter()
        .map(|x| {
            let i = b.partition_point(|y| y < x);
            (i < b.len() && b[i] == *x) != invert
        })
        .collect()
}

/// `isin(elements, test_elements)` for two tensors of one dtype: a bool tensor of
/// `elements`' shape.
#[pyfunction]
fn _isin(
    py: Python<'_>,
    elements: &Bound<'_, PyTensor>,
    test_elements: &Bound<'_, PyTensor>,
    invert: bool,
) -> PyResult<Py<PyAny>> {
    let (a, b) = (t_of(elements), t_of(test_elements));
    if a.dtype() != b.dtype() {
        return Err(PyRuntimeError::new_err("_isin: two tensors of one dtype"));
    }
    let work = a.numel().saturating_add(b.numel());
    run_op(py, work, "isin", &[a, b], &[], move |t, _| {
        let (a, b) = (t[0], t[1]);
        let found = match a.dtype() {
            DType::F32 => member::<f32>(a, b, invert),
            DType::F64 => member::<f64>(a, b, invert),
            DType::I64 => member::<i64>(a, b, invert),
            DType::I32 => member::<i32>(a, b, invert),
            DType::I16 => member::<i16>(a, b, invert),
            DType::I8 => member::<i8>(a, b, invert),
            DType::U8 => member::<u8>(a, b, invert),
            DType::Bool => member::<bool>(a, b, invert),
            dt => return Err(Error::runtime(format!("_isin: no kernel for {dt:?}"))),
        };
        Ok(Tensor::from_vec(found, a.shape()))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_isin, m)?)?;
    m.add_function(wrap_pyfunction!(_searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(_histc, m)?)?;
    m.add_function(wrap_pyfunction!(_bincount, m)?)?;
    Ok(())
}
