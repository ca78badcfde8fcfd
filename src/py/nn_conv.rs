//! Bindings of convolution, pooling, padding, unfold/fold and resampling.
//! The Python layer (`nn/_functional/conv.py`, `pooling.py`, `padding.py`,
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
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
) -> PyResult<Py<PyAny>> {
    let (x, w) = (t_of(input), t_of(weight));
    let b = opt_tensor(bias)?;
    // The 2-d convolution's policy, on the operands it convolves (the bias
    // is added after it, as the composite added it).
    autocast!("conv2d", x, w);
    let (s, d) = (three(&stride, "stride")?, three(&dilation, "dilation")?);
    let p: [i64; 2] = <[i64; 2]>::try_from(padding.as_slice())
        .map_err(|_| pyo3::exceptions::PyValueError::new_err("padding must have two values"))?;
    let work = x.numel().saturating_mul(w.numel());
    let (ins, opt) = Opt::inputs(&[x, w], &[b.as_ref()]);
    run_op(py, work, "conv3d", &ins, &[], move |t, _| {
        ops::conv3d(t[0], t[1], opt.get(t, 0), s, p, d, groups)
    })
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
    let x = t_of(input);
    let (o, i) = run(py, x.numel(), "max_pool2d", &[x], &[], move |t, _| {
        ops::max_pool2d_with_indices(t[0], &kernel_size, &stride, &padding, &dilation, ceil_mode)
    })?;
    tensor_tuple(py, vec![o, i])
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_max_pool2d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let (o, i) = run(
        py,
        x.numel(),
        "adaptive_max_pool2d",
        &[x],
        &[],
        move |t, _| ops::adaptive_max_pool2d(t[0], &output_size),
    )?;
    tensor_tuple(py, vec![o, i])
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
    let x = t_of(input);
    run_op(py, x.numel(), "avg_pool2d", &[x], &[], move |t, _| {
        ops::avg_pool2d(
            t[0],
            &kernel_size,
            &stride,
            &padding,
            ceil_mode,
            count_include_pad,
            divisor_override,
        )
    })
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_avg_pool2d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    run_op(
        py,
        x.numel(),
        "adaptive_avg_pool2d",
        &[x],
        &[],
        move |t, _| ops::adaptive_avg_pool2d(t[0], &output_size),
    )
}

/// Three per-dimension values, as the Python layer passes them.
fn three(v: &[i64], name: &str) -> PyResult<[i64; 3]> {
    <[i64; 3]>::try_from(v).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!("{name} must have three values"))
    })
}

#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride, padding, dilation, ceil_mode))]
fn max_pool3d_with_indices(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    ceil_mode: bool,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let (k, s) = (
        three(&kernel_size, "kernel_size")?,
        three(&stride, "stride")?,
    );
    let (p, d) = (three(&padding, "padding")?, three(&dilation, "dilation")?);
    let (o, i) = run(py, x.numel(), "max_pool3d", &[x], &[], move |t, _| {
        ops::max_pool3d_with_indices(t[0], k, s, p, d, ceil_mode)
    })?;
    tensor_tuple(py, vec![o, i])
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_max_pool3d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let out = three(&output_size, "output_size")?;
    let (o, i) = run(
        py,
        x.numel(),
        "adaptive_max_pool3d",
        &[x],
        &[],
        move |t, _| ops::adaptive_max_pool3d(t[0], out),
    )?;
    tensor_tuple(py, vec![o, i])
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))]
fn avg_pool3d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let (k, s) = (
        three(&kernel_size, "kernel_size")?,
        three(&stride, "stride")?,
    );
    let p = three(&padding, "padding")?;
    run_op(py, x.numel(), "avg_pool3d", &[x], &[], move |t, _| {
        ops::avg_pool3d(
            t[0],
            k,
            s,
            p,
            ceil_mode,
            count_include_pad,
            divisor_override,
        )
    })
}

#[pyfunction]
#[pyo3(signature = (input, output_size))]
fn adaptive_avg_pool3d(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
) -> PyResult<Py<PyAny>> {
    let x = t_of(input);
    let out = three(&output_size, "output_size")?;
    run_op(
        py,
        x.numel(),
        "adaptive_avg_pool3d",
        &[x],
        &[],
        move |t, _| ops::adaptive_avg_pool3d(t[0], out),
    )
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
