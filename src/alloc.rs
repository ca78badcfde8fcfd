//! Process-wide tuning of glibc's malloc for tensor-sized buffers.
//!
//! glibc serves a request above its mmap threshold (128 KiB at start) with a fresh
//! `mmap` and gives the pages back on `free`; freeing such a block raises the threshold
//! to its size and the heap's trim threshold to twice that, so later blocks of that size
//! come from the heap. But whatever sits free above the top of the heap beyond the trim
//! threshold is returned to the kernel on every `free`. A training step allocates and
//! frees the same few buffers of 1-16 MB each time, so with the moving thresholds each
//! step maps (or trims) them again and touches every page anew: 1,000+ page faults per
//! LSTM or LeNet step, up to half of its time on this 2-core EPYC.
//!
//! So the thresholds are set once, when the extension loads, to the values glibc's own
//! rule ends up at after freeing a 32 MiB block (the largest mmap threshold glibc
//! accepts on 64-bit): blocks up to 32 MiB come from the heap. The trim threshold is
//! 128 MiB, twice what glibc's rule would give, because a step that frees several such
//! blocks together leaves more than 64 MiB free at the top of a heap (per-sample
//! gradients of a small MLP: 2,100 page faults and 2.2 ms per call at 64 MiB, none and
//! 0.45 ms at 128 MiB); that much free memory stays mapped for the next step. Setting them also stops
//! glibc from moving them. Nothing leaks: freed blocks are reused by later requests, and
//! free memory beyond 128 MiB is still returned. The cost is that a process keeps up to
//! 128 MiB per malloc arena mapped after its tensors are gone; blocks above 32 MiB still
//! get their own mapping (and their page faults) every time.
//!
//! A user who chose malloc settings keeps them: nothing is changed when any of glibc's
//! `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, `MALLOC_TOP_PAD_` or
//! `GLIBC_TUNABLES` is set, or when `FERROGRAD_MALLOC_TUNING=0`.

use std::sync::OnceLock;

/// Largest mmap threshold glibc accepts on 64-bit (`DEFAULT_MMAP_THRESHOLD_MAX`).
pub(crate) const MMAP_THRESHOLD: usize = 32 << 20;
/// Four times the mmap threshold: at twice (glibc's own ratio) a step that frees
/// several such blocks at once, as `vmap(grad)`'s per-sample gradients do, still left
/// more than the threshold free at the top and faulted it all in again next step.
pub(crate) const TRIM_THRESHOLD: usize = 128 << 20;

/// What `tune_malloc` did: the two thresholds it set, or why it left malloc alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tuning {
    Applied {
        mmap_threshold: usize,
        trim_threshold: usize,
    },
    Skipped(&'static str),
}

static TUNING: OnceLock<Tuning> = OnceLock::new();

/// Environment variables through which a user already configures glibc's malloc.
const USER_SETTINGS: [&str; 4] = [
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "GLIBC_TUNABLES",
];

fn decide(var: impl Fn(&str) -> Option<String>) -> Option<&'static str> {
    if var("FERROGRAD_MALLOC_TUNING").is_some_and(|v| v.trim() == "0") {
        return Some("FERROGRAD_MALLOC_TUNING=0");
    }
    USER_SETTINGS.into_iter().find(|name| var(name).is_some())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn apply() -> Tuning {
    // SAFETY: mallopt only updates malloc's parameters under its own lock; it is safe to
    // call at any time from any thread.
    let ok = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
    };
    if ok {
        Tuning::Applied {
            mmap_threshold: MMAP_THRESHOLD,
            trim_threshold: TRIM_THRESHOLD,
        }
    } else {
        Tuning::Skipped("mallopt refused the thresholds")
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> Tuning {
    Tuning::Skipped("not glibc")
}

/// Sets glibc's mmap and trim thresholds once per process (see the module comment);
/// later calls return what the first one did.
pub(crate) fn tune_malloc() -> Tuning {
    TUNING
        .get_or_init(|| match decide(|k| std::env::var(k).ok()) {
            Some(reason) => Tuning::Skipped(reason),
            None => apply(),
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::decide;

    #[test]
    fn user_settings_win() {
        assert_eq!(decide(|_| None), None);
        let only = |name: &'static str, value: &'static str| {
            move |k: &str| (k == name).then(|| value.to_string())
        };
        assert_eq!(
            decide(only("MALLOC_TRIM_THRESHOLD_", "0")),
            Some("MALLOC_TRIM_THRESHOLD_")
        );
        assert_eq!(
            decide(only("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")),
            Some("GLIBC_TUNABLES")
        );
        assert_eq!(
            decide(only("FERROGRAD_MALLOC_TUNING", "0")),
            Some("FERROGRAD_MALLOC_TUNING=0")
        );
        assert_eq!(decide(only("FERROGRAD_MALLOC_TUNING", "1")), None);
    }
}
