//! `grid_sample`'s native forward and first-order backward side by side
//! (`kernels::grid_sample`). Neither makes an autograd node:
//! `ferrograd.nn._functional.grid_sample` makes one, whose backward runs the
//! composite sampler instead when a graph of the backward is wanted, so
//! higher derivatives stay exact.

use crate::error::{Error, Result};
use crate::kernels::grid_sample::{self as kernel, Mode, Padding, Spec};
use crate::tensor::{DType, Shape, Tensor};

fn parse(mode: &str, padding: &str) -> Result<(Mode, Padding)> {
    let mode = match mode {
        "bilinear" => Mode::Bilinear,
        "nearest" => Mode::Nearest,
        "bicubic" => Mode::Bicubic,
        other => return Err(Error::value(format!("grid_sample: unknown mode '{other}'"))),
    };
    let padding = match padding {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => {
            return Err(Error::value(format!(
                "grid_sample: unknown padding_mode '{other}'"
            )))
        }
    };
    Ok((mode, padding))
}

/// The checked sampling of `input` `(N, C, *sizes)` at `grid` `(N, *out, d)`.
fn spec_of(
    input: &Tensor,
    grid: &Tensor,
    mode: &str,
    padding: &str,
    align_corners: bool,
) -> Result<Spec> {
    let (mode, padding) = parse(mode, padding)?;
    let (si, sg) = (input.shape(), grid.shape());
    let d = si.len().saturating_sub(2);
    let ok = matches!(d, 2 | 3)
        && sg.len() == si.len()
        && sg[0] == si[0]
        && sg[sg.len() - 1] == d
        && si[2..].iter().all(|&s| s > 0)
        && input.dtype().is_float()
        && grid.dtype() == input.dtype()
        && (mode != Mode::Bicubic || d == 2);
    if !ok {
        return Err(Error::runtime(format!(
            "grid_sampler(): unsupported input {:?} and grid {:?}",
            &si[..],
            &sg[..]
        )));
    }
    Ok(Spec {
        mode,
        padding,
        align_corners,
        batch: si[0],
        channels: si[1],
        sizes: si[2..].to_vec(),
        points: sg[1..sg.len() - 1].iter().product(),
    })
}

/// A contiguous view's elements (its dtype is `T`: cast before).
fn slice<T: crate::tensor::Element>(v: &crate::tensor::View) -> Result<&[T]> {
    v.as_slice::<T>()
        .ok_or_else(|| Error::runtime("grid_sample: an operand is not contiguous"))
}

fn compute_dtype(dt: DType) -> DType {
    if dt.is_low_precision() {
        DType::F32
    } else {
        dt
    }
}

/// The values of `input` at the points of `grid`: `(N, C, *out)`.
pub fn grid_sample_forward(
    input: &Tensor,
    grid: &Tensor,
    mode: &str,
    padding: &str,
    align_corners: bool,
) -> Result<Tensor> {
    let spec = spec_of(input, grid, mode, padding, align_corners)?;
    let dt = input.dtype();
    let cd = compute_dtype(dt);
    let (x, g) = (super::cast_data(input, cd), super::cast_data(grid, cd));
    let sg = grid.shape();
    let mut shape = Shape::from_slice(&[spec.batch, spec.channels]);
    shape.extend_from_slice(&sg[1..sg.len() - 1]);
    // Contiguous operands are read in place (no copy of the image).
    let (x, g) = (x.contiguous_data(), g.contiguous_data());
    let (xv, gv) = (x.view(), g.view());
    let out = crate::dispatch_float!(cd, T => {
        let (xs, gs) = (slice::<T>(&xv)?, slice::<T>(&gv)?);
        Tensor::from_vec(kernel::forward::<T>(&spec, xs, gs), shape)
    });
    Ok(super::back_to(out, dt))
}

/// The gradients of `sum(g * grid_sample(input, grid))` with respect to
/// `input` and `grid`, each only when asked for.
#[allow(clippy::too_many_arguments)]
pub fn grid_sample_backward(
    g: &Tensor,
    input: &Tensor,
    grid: &Tensor,
    mode: &str,
    padding: &str,
    align_corners: bool,
    need_input: bool,
    need_grid: bool,
) -> Result<Vec<Option<Tensor>>> {
    let spec = spec_of(input, grid, mode, padding, align_corners)?;
    if g.numel() != spec.batch * spec.channels * spec.points {
        return Err(Error::runtime(
            "grid_sample backward: the gradient's size does not match",
        ));
    }
    let dt = input.dtype();
    let cd = compute_dtype(dt);
    let (x, gr, gg) = (
        super::cast_data(input, cd),
        super::cast_data(grid, cd),
        super::cast_data(g, cd),
    );
    let (x, gr, gg) = (
        x.contiguous_data(),
        gr.contiguous_data(),
        gg.contiguous_data(),
    );
    let (xv, grv, ggv) = (x.view(), gr.view(), gg.view());
    let (gi, ggrid) = crate::dispatch_float!(cd, T => {
        let (a, b) = kernel::backward::<T>(
            &spec,
            slice::<T>(&xv)?,
            slice::<T>(&grv)?,
            slice::<T>(&ggv)?,
            need_input,
            need_grid,
        );
        (
            a.map(|v| Tensor::from_vec(v, input.shape())),
            b.map(|v| Tensor::from_vec(v, grid.shape())),
        )
    });
    Ok(vec![
        gi.map(|t| super::back_to(t, dt)),
        ggrid.map(|t| super::back_to(t, dt)),
    ])
}
