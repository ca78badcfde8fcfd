//! The `ferrograd._C` extension module: the only code that touches Python.

#[macro_use]
mod dispatch;
#[macro_use]
mod table;
#[macro_use]
mod autocast;
mod autocast_table;

mod alloc;
mod anomaly;
mod autograd;
mod autograd_batched;
mod bucketing;
mod capture;
pub(crate) mod checkpoint;
mod compat;
mod compile;
mod config;
mod convert;
mod creation;
mod data_ops;
mod device;
mod dtype;
mod errors;
mod forward_ad;
mod function;
mod functional;
mod functions;
mod linalg;
mod mathops;
mod nn;
mod nn_attention;
mod nn_conv;
mod nn_ctc;
mod nn_grid;
mod nn_norm;
mod nn_rnn;
mod node;
pub(crate) mod node_hooks;
mod node_saved;
mod ops_table;
mod optim;
mod profiler;
mod random;
mod serialize;
mod sorting;
mod tensor;

use pyo3::prelude::*;

/// In a forked child the pool's threads are gone; the next kernel builds a new pool.
extern "C" fn after_fork_child() {
    crate::kernels::parallel::mark_forked();
}

#[pymodule]
#[pyo3(name = "_C")]
fn ferrograd_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // Before any tensor exists, so every buffer is served under the same thresholds.
    crate::alloc::tune_malloc();
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<dtype::PyDType>()?;
    m.add_class::<node::PyNode>()?;
    m.add_class::<node::PyAccumulateGrad>()?;
    m.add_class::<node::RemovableHandle>()?;
    for dt in crate::tensor::ALL_DTYPES {
        m.add(dt.name(), dtype::dtype_object(py, dt))?;
    }
    ops_table::register(m)?;
    autocast::register(m)?;
    mathops::register(m)?;
    creation::register(m)?;
    device::register(m)?;
    sorting::register(m)?;
    bucketing::register(m)?;
    data_ops::register(m)?;
    optim::register(m)?;
    serialize::register(m)?;
    linalg::register(m)?;
    nn_conv::register(m)?;
    nn_ctc::register(m)?;
    nn_grid::register(m)?;
    nn_norm::register(m)?;
    nn_rnn::register(m)?;
    nn_attention::register(m)?;
    random::register(m)?;
    functional::register(m)?;
    nn::register(m)?;
    autograd::register(m)?;
    autograd_batched::register(m)?;
    m.add("_DispatchNeeded", py.get_type::<dispatch::DispatchNeeded>())?;
    forward_ad::register(m)?;
    compat::register(m)?;
    node_hooks::register(m)?;
    anomaly::register(m)?;
    checkpoint::register(m)?;
    alloc::register(m)?;
    compile::register(m)?;
    config::register(m)?;
    profiler::register(m)?;
    m.add_function(wrap_pyfunction!(function::_function_node, m)?)?;
    // SAFETY: registering a plain extern "C" callback that only stores an atomic.
    unsafe {
        libc::pthread_atfork(None, None, Some(after_fork_child));
    }
    Ok(())
}
