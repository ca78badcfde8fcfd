//! The profiler's event log: what `ferrograd.profiler.profile` reads.
//!
//! While a profile is open, every op that enters the core through the
//! bindings' recording entry point (`py::capture::run_op` and its siblings)
//! and every backward node the engine runs appends one [`Event`] here; user
//! ranges (`record_function`) come from Python with the same clock. Closed,
//! the only cost left in the hot path is one relaxed load of [`ACTIVE`] (a
//! plain static, not a thread-local: a `cdylib` pays a call for each of
//! those).
//!
//! Times are `CLOCK_MONOTONIC` nanoseconds, the clock behind Python's
//! `time.monotonic_ns()`, so ranges measured on either side nest correctly.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

/// What an event measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An op called from Python (`mul`, `conv2d`).
    Op = 0,
    /// A backward node run by the engine (`MulBackward0`).
    Backward = 1,
    /// A user range (`record_function`), recorded from Python.
    User = 2,
}

/// One timed interval.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: Cow<'static, str>,
    pub kind: Kind,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The OS thread that ran it (`gettid`).
    pub thread: u64,
    /// The shapes of the op's tensor operands when shapes are recorded.
    pub shapes: Vec<Vec<usize>>,
}

/// Whether a profile is open (in any thread).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether the open profile records operand shapes.
static SHAPES: AtomicBool = AtomicBool::new(false);
/// Which thread opened the profile: as PyTorch's, it records that thread only
/// (0: every thread).
static OWNER: AtomicU64 = AtomicU64::new(0);
static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());

/// Nanoseconds of `CLOCK_MONOTONIC`.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// The calling OS thread's id.
pub fn thread_id() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u64 }
}

/// Whether this call should be timed: a profile is open and, unless it
/// records every thread, this is the thread that opened it.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed) && owned_here()
}

#[cold]
fn owned_here() -> bool {
    let owner = OWNER.load(Ordering::Relaxed);
    owner == 0 || owner == thread_id()
}

/// Whether operand shapes are recorded.
pub fn record_shapes() -> bool {
    SHAPES.load(Ordering::Relaxed)
}

/// Opens a profile, dropping the events of any earlier one. `all_threads`
/// records every thread instead of the caller's only.
pub fn start(record_shapes: bool, all_threads: bool) {
    EVENTS.lock().clear();
    SHAPES.store(record_shapes, Ordering::Relaxed);
    OWNER.store(if all_threads { 0 } else { thread_id() }, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
}

/// Closes the profile and returns its events in the order they ended.
pub fn stop() -> Vec<Event> {
    ACTIVE.store(false, Ordering::Release);
    std::mem::take(&mut *EVENTS.lock())
}

/// Appends an event; dropped when no profile is open (a range that ends after
/// its profile closed).
pub fn push(event: Event) {
    if ACTIVE.load(Ordering::Acquire) {
        EVENTS.lock().push(event);
    }
}

/// Times `f` as one event of `kind` when a profile is open here; otherwise
/// just runs it.
#[inline(always)]
pub fn timed<T>(
    name: impl FnOnce() -> Cow<'static, str>,
    kind: Kind,
    shapes: impl FnOnce() -> Vec<Vec<usize>>,
    f: impl FnOnce() -> T,
) -> T {
    if !active() {
        return f();
    }
    timed_slow(name, kind, shapes, f)
}

#[cold]
#[inline(never)]
fn timed_slow<T>(
    name: impl FnOnce() -> Cow<'static, str>,
    kind: Kind,
    shapes: impl FnOnce() -> Vec<Vec<usize>>,
    f: impl FnOnce() -> T,
) -> T {
    let shapes = if record_shapes() {
        shapes()
    } else {
        Vec::new()
    };
    let start_ns = now_ns();
    let out = f();
    push(Event {
        name: name(),
        kind,
        start_ns,
        end_ns: now_ns(),
        thread: thread_id(),
        shapes,
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the log is process-wide, so parallel tests would see each other's events.
    #[test]
    fn records_only_while_open_and_only_the_owner_thread() {
        assert_eq!(timed(|| "a".into(), Kind::Op, Vec::new, || 1), 1);
        start(true, false);
        let v = timed(
            || "mul".into(),
            Kind::Op,
            || vec![vec![2, 3]],
            || {
                std::thread::sleep(std::time::Duration::from_millis(1));
                7
            },
        );
        assert_eq!(v, 7);
        std::thread::spawn(|| timed(|| "elsewhere".into(), Kind::Op, Vec::new, || ()))
            .join()
            .unwrap();
        let events = stop();
        assert_eq!(events.len(), 1);
        let e = &events[0];
        assert_eq!((e.name.as_ref(), e.kind), ("mul", Kind::Op));
        assert_eq!(e.shapes, vec![vec![2, 3]]);
        assert!(e.end_ns >= e.start_ns + 1_000_000);
        assert_eq!(e.thread, thread_id());
        // Closed again: nothing is recorded.
        timed(|| "late".into(), Kind::Op, Vec::new, || ());
        assert!(stop().is_empty());
    }
}
