//! ferrograd: reverse-mode automatic differentiation for dense CPU tensors.
//!
//! The crate is layered so that everything below [`py`] builds and tests
//! without a Python interpreter:
//!
//! * [`tensor`]: storage, dtypes, shapes and strided views;
//! * [`kernels`]: rayon-parallel loops and GEMM over raw buffers;
//! * [`autograd`]: the node arena, grad mode and the backward engine;
//! * [`ops`]: each differentiable op, forward and backward side by side;
//! * `py` (feature `python`): the PyO3 bindings, the only code touching Python.

pub mod autograd;
pub mod error;
pub mod kernels;
pub mod ops;
pub mod random;
pub mod serialize;
pub mod tensor;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};
pub use tensor::{DType, Tensor};
