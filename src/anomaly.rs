//! Anomaly detection's mode and the two hooks through which the Python layer
//! captures where something ran and reports it.
//!
//! The mode is a bit of the thread's mode word (`flags`), so an op pays one
//! thread-local read to learn that nothing is to be recorded. Both the tensor layer (in-place
//! writes) and autograd (node creation, the engine) read it, so it lives
//! below both. The core never formats a Python stack itself: it keeps the
//! opaque [`Trace`] the capture hook returned and asks it for text only when
//! an error is reported.

use std::cell::Cell;
use std::sync::{Arc, OnceLock};

thread_local! {
    static CHECK_NAN: Cell<bool> = const { Cell::new(true) };
}

/// Whether anomaly detection is on for this thread.
#[inline]
pub fn is_enabled() -> bool {
    crate::flags::any(crate::flags::ANOMALY)
}

/// Whether the engine checks each node's gradients for NaN in anomaly mode.
pub fn check_nan() -> bool {
    CHECK_NAN.with(|c| c.get())
}

pub fn set(enabled: bool, check_nan: bool) {
    crate::flags::set(crate::flags::ANOMALY, enabled);
    CHECK_NAN.with(|c| c.set(check_nan));
}

/// Where something ran (a Python stack), turned into text only on demand.
pub trait Trace: Send + Sync {
    /// The stack as `traceback.format_stack()`'s entries, outermost call first.
    fn frames(&self) -> Vec<String>;

    /// The stack in `traceback.format_stack()`'s layout, one string.
    fn format(&self) -> String {
        self.frames().concat()
    }
}

/// The Python layer's side: capturing the current stack and issuing a warning.
pub struct Hooks {
    pub capture: fn() -> Option<Arc<dyn Trace>>,
    pub warn: fn(&str),
}

static HOOKS: OnceLock<Hooks> = OnceLock::new();

/// Installs the hooks (once, when the extension module loads).
pub fn install(h: Hooks) {
    let _ = HOOKS.set(h);
}

/// The current stack, if a capture hook is installed (never in `cargo test`).
pub fn capture() -> Option<Arc<dyn Trace>> {
    HOOKS.get().and_then(|h| (h.capture)())
}

/// Issues a `UserWarning` (printed to stderr when no hook is installed).
pub fn warn(msg: &str) {
    match HOOKS.get() {
        Some(h) => (h.warn)(msg),
        None => eprintln!("warning: {msg}"),
    }
}
