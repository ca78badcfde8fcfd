//! Bindings of convolution, pooling, padding, unfold/fold and resampling.
//! The Python layer (`nn/_functional/conv.py`, `max_pooling.py`,
//! `avg_pooling.py`, `adaptive_pooling.py`, `pooling3d.py`, `padding.py`,
//! `fold.py`, `interpolation.py`) normalises PyTorch's
//! arguments (ints or tuples, `'same'` padding, unbatched inputs) into the
//! explicit lists these take.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::capture::{run, run_op, Opt};
use super::tensor::{tensor_tuple, PyTensor};
use crate::ops;
use crate::tensor::Tensor;

fn t_of<'a>(obj: &'a Bound<'_, PyTensor>) -> &'a Tensor {
    &obj.get().t
}

fn opt_tensor(o: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    match o {
        Some(o) if !o.is_none() => Ok(Some(
            o.cast::<PyTensor>()
                .map_err(|_| PyTypeError::new_err("expected a Tensor or None"))?
                .get()
                .t
                .clone(),
        )),
        _ => Ok(None),
    }
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups))]
fn convolution(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyAny>>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
) -> PyResult<Py<PyAny>> {
    let (x, w) = (t_of(input), t_of(weight));
    let b = opt_tensor(bias)?;
    autocast!("conv2d", x, w, b); // every convolution has conv2d's policy
    let work = x.numel().saturating_mul(w.numel());
    let (ins, opt) = Opt::inputs(&[x, w], &[b.as_ref()]);
    run_op(py, work, "convolution", &ins, &[], move |t, _| {
        ops::convolution(
            t[0],
            t[1],
            opt.get(t, 0),
            &stride,
            &padding,
            &dilation,
            transposed,
            &output_padding,
            groups,
        )
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (input, weight, bias, stride, padding, dilation, groups))]
fn conv3d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyAny>>,
    stride: [i64; 3],
    padding: [i64; 2],
    dilation: [i64; 3],
    groups: i64,
) -> PyResult<Py<PyAny>> {
    let (x, w) = (t_of(input), t_of(weight));
    let b = opt_tensor(bias)?;
    // The 2-d convolution's policy, on the operands it convolves (the bias
    // is added after it, as the composite added it).
    autocast!("conv2d", x, w);
    let (s, p, d) = (stride, padding, dilation);
    let work = x.numel().saturating_mul(w.numel());
    let (ins, opt) = Opt::inputs(&[x, w], &[b.as_ref()]);
    run_op(py, work, "conv3d", &ins, &[], move |t, _| {
        ops::conv3d(t[0], t[1], opt.get(t, 0), s, p, d, groups)
    })
}

/// A pooling op of one input: its result, the input's size the work.
fn pooled(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    name: &'static str,
    f: impl Fn(&Tensor) -> crate::Result<Tensor> + Send + Sync + 'static,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(py, x.numel(), name, &[x], &[], move |t, _| f(t[0]))
}

/// A max pooling of one input: its values and indices, as a tuple.
fn pooled_with_indices(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    name: &'static str,
    f: impl Fn(&Tensor) -> crate::Result<(Tensor, Tensor)> + Send + Sync + 'static,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let (o, i) = run(py, x.numel(), name, &[x], &[], move |t, _| f(t[0]))?;
    tensor_tuple(py, vec![o, i])
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride, padding, dilation, ceil_mode))]
fn max_pool2d_with_indices(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    ceil_mode: bool,
) -> PyResult<Py<PyAny>> {
    pooled_with_indices(py, input, "max_pool2d", move |x| {
        ops::max_pool2d_with_indices(x, &kernel_size, &stride, &padding, &dilation, ceil_mode)
    })
}

/// `max_pool2d`'s values alone (the indices only when the backward needs them).
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride, padding, dilation, ceil_mode))]
fn max_pool2d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    ceil_mode: bool,
) -> PyResult<Py<PyAny>> {
    pooled(py, input, "max_pool2d", move |x| {
        ops::max_pool2d(x, &kernel_size, &stride, &padding, &dilation, ceil_mode)
    })
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_max_pool2d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    pooled_with_indices(py, input, "adaptive_max_pool2d", move |x| {
        ops::adaptive_max_pool2d(x, &output_size)
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))]
fn avg_pool2d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<Py<PyAny>> {
    pooled(py, input, "avg_pool2d", move |x| {
        let (k, s, p) = (&kernel_size, &stride, &padding);
        ops::avg_pool2d(x, k, s, p, ceil_mode, count_include_pad, divisor_override)
    })
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_avg_pool2d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    pooled(py, input, "adaptive_avg_pool2d", move |x| {
        ops::adaptive_avg_pool2d(x, &output_size)
    })
}

// The 3-d pools take exactly three values per argument (the Python layer
// expands ints); another count is a TypeError from the conversion.

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride, padding, dilation, ceil_mode))]
fn max_pool3d_with_indices(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: [i64; 3],
    stride: [i64; 3],
    padding: [i64; 3],
    dilation: [i64; 3],
    ceil_mode: bool,
) -> PyResult<Py<PyAny>> {
    pooled_with_indices(py, input, "max_pool3d", move |x| {
        ops::max_pool3d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode)
    })
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_max_pool3d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: [i64; 3],
) -> PyResult<Py<PyAny>> {
    pooled_with_indices(py, input, "adaptive_max_pool3d", move |x| {
        ops::adaptive_max_pool3d(x, output_size)
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))]
fn avg_pool3d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: [i64; 3],
    stride: [i64; 3],
    padding: [i64; 3],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<Py<PyAny>> {
    pooled(py, input, "avg_pool3d", move |x| {
        let (k, s, p) = (kernel_size, stride, padding);
        ops::avg_pool3d(x, k, s, p, ceil_mode, count_include_pad, divisor_override)
    })
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_avg_pool3d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: [i64; 3],
) -> PyResult<Py<PyAny>> {
    pooled(py, input, "adaptive_avg_pool3d", move |x| {
        ops::adaptive_avg_pool3d(x, output_size)
    })
}

#[pyfunction]
#[pyo3(signature = (input, size, scales, mode, align_corners))]
fn upsample(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    size: Vec<usize>,
    scales: Vec<Option<f64>>,
    mode: &str,
    align_corners: bool,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let work = x.numel().max(size.iter().product());
    let mode = mode.to_string();
    run_op(py, work, "upsample", &[x], &[], move |t, _| {
        ops::upsample(t[0], &size, &scales, &mode, align_corners)
    })
}

#[pyfunction]
#[pyo3(signature = (input, pad, value=0.0))]
fn constant_pad_nd(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    pad: Vec<i64>,
    value: f64,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(py, x.numel(), "constant_pad_nd", &[x], &[], move |t, _| {
        ops::constant_pad_nd(t[0], &pad, value)
    })
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, dilation, padding, stride))]
fn im2col(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(py, x.numel(), "im2col", &[x], &[], move |t, _| {
        ops::unfold(t[0], &kernel_size, &dilation, &padding, &stride)
    })
}

#[pyfunction]
#[pyo3(signature = (input, output_size, kernel_size, dilation, padding, stride))]
fn col2im(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(py, x.numel(), "col2im", &[x], &[], move |t, _| {
        ops::fold(
            t[0],
            &output_size,
            &kernel_size,
            &dilation,
            &padding,
            &stride,
        )
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(convolution, m)?)?;
    m.add_function(wrap_pyfunction!(conv3d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d_with_indices, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool3d_with_indices, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_max_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(upsample, m)?)?;
    m.add_function(wrap_pyfunction!(constant_pad_nd, m)?)?;
    m.add_function(wrap_pyfunction!(im2col, m)?)?;
    m.add_function(wrap_pyfunction!(col2im, m)?)?;
    Ok(())
}
