//! Fused elementwise programs: a straight-line list of elementwise
//! instructions over same-length inputs, evaluated block by block so no
//! intermediate ever takes a full-length buffer, forward and (in the same
//! pass) reverse mode.
//!
//! Each instruction computes exactly what ferrograd's eager op computes
//! (same expression, same float32 kernels such as [`math::exp_f32`]), so a
//! fused forward equals the eager ops bit for bit. The reverse pass uses the
//! eager backward rules' expressions as the engine runs them without
//! `create_graph` (`relu`, `tanh` and `sigmoid` take their one-pass forms),
//! and accumulates a value's gradient contributions in the order the engine
//! does: the seed first, then one contribution per use, newest use first
//! (operand `a` before `b` within an instruction). What can differ from
//! eager is listed on [`Program::forward_vjp`].
//!
//! The code is split by topic:
//! - [`program`]: the instruction set ([`Src`], [`EwOp`], [`Instr`],
//!   [`Program`]), validation and the entry points;
//! - `float`: the [`FusedFloat`] element types and the scalar helpers the
//!   instructions share;
//! - `eval`: block-by-block evaluation over the pool, and each op's forward;
//! - `reverse`: the reverse schedule, [`Plan`], and each op's gradient rule.

mod eval;
mod float;
pub mod program;
mod reverse;

pub use float::FusedFloat;
pub use program::{EwOp, Instr, Program, Src};
pub use reverse::Plan;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_wide;
