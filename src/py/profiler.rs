//! `_C._profiler_*`: the bindings `ferrograd.profiler` builds its reports on.

use pyo3::prelude::*;

use crate::profiler::{self, Event, Kind};

/// Opens a profile (dropping any earlier one's events).
#[pyfunction]
#[pyo3(signature = (record_shapes=false, all_threads=false))]
fn _profiler_start(record_shapes: bool, all_threads: bool) {
    profiler::start(record_shapes, all_threads);
}

/// Closes the profile: its events as `(name, kind, start_ns, end_ns, thread,
/// shapes)`, kind 0 for an op, 1 for a backward node, 2 for a user range.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn _profiler_stop() -> Vec<(String, u8, u64, u64, u64, Vec<Vec<usize>>)> {
    profiler::stop()
        .into_iter()
        .map(|e| {
            (
                e.name.into_owned(),
                e.kind as u8,
                e.start_ns,
                e.end_ns,
                e.thread,
                e.shapes,
            )
        })
        .collect()
}

/// Whether a profile records calls made by this thread.
#[pyfunction]
fn _profiler_active() -> bool {
    profiler::active()
}

/// Records a user range (`record_function`) measured with `time.monotonic_ns()`.
#[pyfunction]
fn _profiler_record(name: String, start_ns: u64, end_ns: u64) {
    profiler::push(Event {
        name: name.into(),
        kind: Kind::User,
        start_ns,
        end_ns,
        thread: profiler::thread_id(),
        shapes: Vec::new(),
    });
}

/// The profiler's clock, `CLOCK_MONOTONIC` in nanoseconds.
#[pyfunction]
fn _profiler_now() -> u64 {
    profiler::now_ns()
}

/// The calling thread's OS id, as events name it.
#[pyfunction]
fn _profiler_thread() -> u64 {
    profiler::thread_id()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_profiler_start, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_active, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_record, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_now, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_thread, m)?)?;
    Ok(())
}
