//! ferrograd: reverse-mode automatic differentiation for dense CPU tensors.
//!
//! The crate is layered so that everything below `py` builds and tests
//! without a Python interpreter:
//!
//! * [`tensor`]: storage, dtypes, shapes and strided views (it calls no op:
//!   refreshing a stale view goes through hooks `ops` installs);
//! * `kernels`: rayon-parallel loops and GEMM over raw buffers;
//! * [`autograd`]: the node arena, grad mode and the backward engine;
//! * [`ops`]: each differentiable op, forward and backward side by side
//!   (crate-private but for what `benches/kernels.rs` measures);
//! * `compile`: the tape `ferrograd.compile` records and its replay;
//! * `py` (feature `python`): the PyO3 bindings, the only code touching Python.

// Without the bindings, much of the crate is only reachable from them.
#![cfg_attr(not(feature = "python"), allow(dead_code, unused_imports))]

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod aligned_alloc;
mod alloc;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: aligned_alloc::Aligned = aligned_alloc::Aligned;
pub mod anomaly;
pub mod autograd;
pub mod error;
pub mod flags;
// Public for the criterion benches of the layer kernels (conv, norm); the rest is
// crate-private so rustc reports what nothing uses.
pub mod checksum;
// Capture and replay for `ferrograd.compile` (no Python in it; the bindings
// record into it and hold its tapes).
mod compile;
pub mod kernels;
pub mod ops;
pub mod profiler;
pub mod random;
pub mod serialize;
pub mod tensor;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};
pub use tensor::{DType, Tensor};
