//! The per-thread mode word: every thread-local switch an op consults on its
//! way through (grad mode, anomaly mode, capture, suspended forward AD, a
//! deferred recording error, active saved-tensor hooks) is one bit of one
//! `Cell<u32>`.
//!
//! Each feature sets and clears its own bit; the hot path of an op binding
//! reads the word once and goes on when no bit it cares about is set. In a
//! `cdylib` every distinct thread-local costs a `__tls_get_addr` call per
//! access, so one word instead of six separate flags is what keeps the
//! per-op price of these features near zero while they are off. All bits
//! are 0 in a new thread: grad mode on, everything else off.

use std::cell::Cell;

/// Grad mode is off (`no_grad`, `set_grad_enabled(False)`).
pub const NO_GRAD: u32 = 1 << 0;
/// Inference mode is on.
pub const INFERENCE: u32 = 1 << 1;
/// Anomaly detection is on.
pub const ANOMALY: u32 = 1 << 2;
/// This thread records a `ferrograd.compile` tape.
pub const CAPTURE: u32 = 1 << 3;
/// Tangent propagation is suspended (a tangent or a custom Function's
/// forward is being computed).
pub const FW_SUSPENDED: u32 = 1 << 4;
/// A recording error waits to be raised by the binding (`take_deferred_error`).
pub const DEFERRED: u32 = 1 << 5;
/// A saved-tensor pack hook is active.
pub const SAVED_HOOKS: u32 = 1 << 6;
/// Factory functions called without a `device` make meta tensors
/// (`set_default_device("meta")`, `with ferrograd.device("meta")`).
pub const DEFAULT_META: u32 = 1 << 7;
/// CPU autocast is on (`ferrograd.autocast("cpu")`; see `py/autocast.rs`).
pub const AUTOCAST: u32 = 1 << 8;

thread_local! {
    static WORD: Cell<u32> = const { Cell::new(0) };
}

/// The whole word, for a caller testing several bits at once.
#[inline(always)]
pub fn get() -> u32 {
    WORD.with(|w| w.get())
}

/// Whether any bit of `mask` is set.
#[inline(always)]
pub fn any(mask: u32) -> bool {
    get() & mask != 0
}

/// Sets (`on`) or clears the bits of `mask`.
#[inline]
pub fn set(mask: u32, on: bool) {
    WORD.with(|w| {
        let v = w.get();
        w.set(if on { v | mask } else { v & !mask });
    });
}

/// [`set`], returning whether the bits of `mask` were all set before.
#[inline]
pub fn replace(mask: u32, on: bool) -> bool {
    WORD.with(|w| {
        let v = w.get();
        w.set(if on { v | mask } else { v & !mask });
        v & mask == mask
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_independent_and_per_thread() {
        assert_eq!(get(), 0);
        set(ANOMALY | CAPTURE, true);
        assert!(any(ANOMALY) && any(CAPTURE) && !any(NO_GRAD));
        assert!(replace(ANOMALY, false));
        assert!(!any(ANOMALY) && any(CAPTURE));
        assert!(!replace(NO_GRAD, true));
        assert_eq!(get(), CAPTURE | NO_GRAD);
        std::thread::spawn(|| assert_eq!(get(), 0)).join().unwrap();
        set(CAPTURE | NO_GRAD, false);
        assert_eq!(get(), 0);
    }
}
