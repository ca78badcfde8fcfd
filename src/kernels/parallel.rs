//! ferrograd's own rayon pool. Kernels go parallel only inside it (through
//! [`run`]), so the size set by `set_num_threads` is honoured, rayon's global pool
//! is never started, and a forked child (whose copy of the pool has no
//! threads) simply builds a fresh pool on first use.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::error::{Error, Result};

static POOL: RwLock<Option<Arc<ThreadPool>>> = RwLock::new(None);
static FORKED: AtomicBool = AtomicBool::new(false);

fn default_threads() -> usize {
    for var in ["FERROGRAD_NUM_THREADS", "OMP_NUM_THREADS"] {
        if let Some(n) = std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
        {
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn build(n: usize) -> Result<Arc<ThreadPool>> {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("ferrograd-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| Error::runtime(format!("could not start {n} worker threads: {e}")))
}

fn pool() -> Option<Arc<ThreadPool>> {
    if FORKED.swap(false, Ordering::AcqRel) {
        // The inherited pool's threads do not exist in this process; leak it
        // rather than ask its (absent) workers to shut down.
        if let Some(old) = POOL.write().take() {
            std::mem::forget(old);
        }
    }
    if let Some(p) = POOL.read().as_ref() {
        return Some(p.clone());
    }
    let mut w = POOL.write();
    if w.is_none() {
        *w = build(default_threads()).ok();
    }
    w.clone()
}

/// Number of threads parallel kernels use.
pub fn get_num_threads() -> usize {
    pool().map_or(1, |p| p.current_num_threads())
}

pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::runtime("set_num_threads expects a positive integer"));
    }
    let new = build(n)?;
    *POOL.write() = Some(new);
    Ok(())
}

/// Runs a parallel section of `work` elements: on the pool when it is big
/// enough to pay for the hop and the pool has more than one thread, else
/// inline with `threads == 1`. `f` receives the thread count to split for.
#[inline]
pub fn run<R: Send>(work: usize, f: impl FnOnce(usize) -> R + Send) -> R {
    if work < super::GRAIN {
        return f(1);
    }
    if rayon::current_thread_index().is_some() {
        return f(rayon::current_num_threads());
    }
    match pool() {
        Some(p) if p.current_num_threads() > 1 => p.install(|| f(rayon::current_num_threads())),
        _ => f(1),
    }
}

/// Called in a forked child (registered with `pthread_atfork`).
pub fn mark_forked() {
    FORKED.store(true, Ordering::Release);
}
