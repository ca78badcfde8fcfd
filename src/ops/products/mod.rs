//! Matrix products: `mm`, `mv`, `dot`, `bmm`, `addmm` (and `linear`), and
//! `matmul` over every 1-D/2-D/batched combination with broadcast batch
//! dimensions, recorded along PyTorch's routes so the graph has its nodes.
//!
//! The GEMM plumbing they share is in `gemm` (bfloat16 and float16 in
//! `low_precision`); each op's forward and its recording sit together in
//! `mm` (with `addmm`), `vector` (`mv`, `dot`, `outer`), `matmul`, `bmm` and
//! `linear`.

mod bmm;
mod gemm;
mod linear;
mod low_precision;
mod matmul;
mod mm;
mod vector;

pub(crate) use bmm::bmm;
pub(crate) use linear::linear;
pub use matmul::matmul;
pub use mm::mm;
pub(crate) use mm::{addmm_scaled, mm_accumulate};
pub(crate) use vector::{batched_outer, dot, mv, outer};
