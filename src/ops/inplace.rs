//! In-place ops: the result is computed (and recorded) out of place, written
//! into the destination's memory, the shared version counter is bumped, and
//! the destination takes over the result's place in the graph.

use super::{cast_data, category_of};
use crate::autograd::is_grad_enabled;
use crate::error::{Error, Result};
use crate::kernels::copy::scatter;
use crate::tensor::{fmt_shape, Element, Tensor};

const LEAF_MSG: &str = "a leaf Variable that requires grad is being used in an in-place operation.";
const LEAF_VIEW_MSG: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

/// PyTorch's refusals: in grad mode, a leaf that requires grad (or a view of
/// one) may not be written in place. Under `no_grad()` it may (optimizers).
pub fn check_inplace(t: &Tensor) -> Result<()> {
    if !is_grad_enabled() {
        return Ok(());
    }
    if t.requires_grad() && t.is_leaf() && !t.is_view() {
        return Err(Error::runtime(LEAF_MSG));
    }
    if let Some(base) = t.base() {
        if base.requires_grad() && base.is_leaf() {
            return Err(Error::runtime(LEAF_VIEW_MSG));
        }
    }
    Ok(())
}

/// Writes `result` into `t` and moves `t` onto `result`'s node.
pub fn commit_inplace(t: &Tensor, result: &Tensor) -> Result<()> {
    check_inplace(t)?;
    let (ts, rs) = (t.shape(), result.shape());
    if ts != rs {
        return Err(Error::runtime(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_shape(&ts),
            fmt_shape(&rs)
        )));
    }
    let (td, rd) = (t.dtype(), result.dtype());
    if category_of(rd) > category_of(td) {
        return Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            rd.scalar_name(),
            td.scalar_name()
        )));
    }
    let tracked = result.requires_grad() && is_grad_enabled();
    if tracked && t.is_view() {
        return Err(Error::runtime(
            "in-place operations on views of tensors that require grad are not supported yet; use an out-of-place op",
        ));
    }
    write_values(t, result);
    if tracked {
        if let Some((node, nr)) = result.grad_fn() {
            t.set_grad_fn(node, nr);
        }
    }
    Ok(())
}

/// Copies `src`'s values (cast to `dst`'s dtype) into `dst` and bumps the version.
fn write_values(dst: &Tensor, src: &Tensor) {
    let src = cast_data(src, dst.dtype()).contiguous_data();
    let sv = src.view();
    let dv = dst.view();
    crate::dispatch!(dv.dtype(), T => {
        if let Some(s) = sv.as_slice::<T>() {
            // A result that aliases `dst` itself needs no copy.
            if !(std::ptr::eq(s.as_ptr(), dv.ptr::<T>()) && dv.is_contiguous()) {
                scatter::<T>(&dv, s);
            }
        }
    });
    dv.storage.bump_version();
}

/// `dst += src` outside the graph (gradient accumulation into `.grad`).
pub fn add_in_place_untracked(dst: &Tensor, src: &Tensor) -> Result<()> {
    let _g = crate::autograd::GradModeGuard::new(false);
    let sum = super::add(dst, src)?;
    write_values(dst, &sum);
    Ok(())
}

/// `t.fill_(v)`.
pub fn fill_(t: &Tensor, v: f64) -> Result<()> {
    check_inplace(t)?;
    let dv = t.view();
    crate::dispatch!(dv.dtype(), T => scatter::<T>(&dv, &[T::from_f64(v)]));
    dv.storage.bump_version();
    drop(dv);
    if is_grad_enabled() && t.requires_grad() && !t.is_leaf() {
        // The values no longer depend on the old history.
        t.detach_in_place();
    }
    Ok(())
}

/// `t.zero_()`.
pub fn zero_(t: &Tensor) -> Result<()> {
    fill_(t, 0.0)
}

/// Writes `value` (broadcast to `dst`'s shape, cast to its dtype) into
/// `dst`'s memory, outside the graph: `t[basic key] = value` when nothing
/// needs recording.
pub fn assign(dst: &Tensor, value: &Tensor) -> Result<()> {
    let shape = dst.shape();
    let vs = value.shape();
    let fits = crate::tensor::broadcast_shapes(&vs, &shape)
        .map(|b| b == shape)
        .unwrap_or(false);
    if !fits {
        return Err(Error::runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(&vs),
            fmt_shape(&shape)
        )));
    }
    let _g = crate::autograd::GradModeGuard::new(false);
    let v = super::expand(&value.detach(), &shape)?;
    write_values(dst, &v);
    Ok(())
}
