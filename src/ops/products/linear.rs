//! `linear(x, w, b) = x @ w.T + b` along PyTorch's routes (`addmm`, or
//! `matmul` and an in-place add).

use super::matmul::matmul;
use super::mm::addmm;
use crate::error::{Error, Result};
use crate::tensor::{Shape, Tensor};

/// `linear(x, w, b) = x @ w.T + b`, by PyTorch's routes: a matrix input with
/// a bias is one `addmm` (`AddmmBackward0`); a contiguous input of other
/// rank with a bias that is contiguous and one-dimensional once squeezed is
/// flattened to a matrix for `addmm` and reshaped back; anything else is
/// `matmul` followed by an in-place add of the bias.
pub(crate) fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let (xd, wd) = (x.ndim(), w.ndim());
    if xd == 0 || wd == 0 {
        return Err(Error::runtime(format!(
            "both arguments to linear need to be at least 1D, but they are {xd}D and {wd}D"
        )));
    }
    let Some(b) = b else {
        return matmul(x, &crate::ops::t(w)?);
    };
    if xd == 2 {
        return addmm(b, x, &crate::ops::t(w)?);
    }
    let squeezed_dims = b.shape().iter().filter(|&&s| s != 1).count();
    let bias_fusable = (b.ndim() == 1 || squeezed_dims == 1) && b.is_contiguous();
    if bias_fusable && x.is_contiguous() {
        // `_flatten_nd_linear`: the leading dimensions become rows.
        let xs = x.shape();
        let cols = xs[xs.len() - 1];
        let rows: usize = xs[..xs.len() - 1].iter().product();
        let x2 = crate::ops::view(x, &[rows as i64, cols as i64])?;
        let r = addmm(b, &x2, &crate::ops::t(w)?)?;
        let mut shape: Shape = xs[..xs.len() - 1].iter().copied().collect();
        shape.push(r.shape()[1]);
        return Ok(crate::ops::unsafe_view(&r, shape));
    }
    let out = matmul(x, &crate::ops::t(w)?)?;
    crate::ops::apply_inplace(&out, || crate::ops::add(&out, b))?;
    Ok(out)
}
