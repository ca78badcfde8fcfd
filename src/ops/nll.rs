//! Classification losses: `nll_loss` as one node (`NllLossBackward0`, or
//! `NllLoss2DBackward0` for images), whose backward is itself recorded so
//! second-order gradients stay exact, and `cross_entropy` built on it as
//! PyTorch builds it (`LogSoftmaxBackward0` then the nll node).

use smallvec::smallvec;

use super::loss::{saved_opt, weights_need_grad, Reduction};
use super::{
    add, add_scalar, div, div_scalar1, mul, mul_f64, mul_scalar1, neg, reshape, sum, to_dtype,
    Scalar,
};
use crate::autograd::{needs_record, record, GradModeGuard};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{fmt_shape, DType, Element, Float, Shape, Tensor};

/// PyTorch's checks of `nll_loss`'s arguments. Returns the shape of the
/// unreduced loss: the target's.
fn check_nll(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
) -> Result<Shape> {
    if target.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "expected scalar type Long but found {}",
            target.dtype().scalar_name()
        )));
    }
    let (si, st) = (input.shape(), target.shape());
    let multi_target = || {
        Error::runtime(format!(
            "0D or 1D target tensor expected, multi-target not supported (target shape {})",
            fmt_shape(&st)
        ))
    };
    let (c, out_shape) = match si.len() {
        0 => {
            return Err(Error::index(
                "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
            ))
        }
        1 => {
            if !st.is_empty() {
                return Err(multi_target());
            }
            (si[0], Shape::new())
        }
        _ => {
            let mut expect: Shape = smallvec![si[0]];
            expect.extend_from_slice(&si[2..]);
            if st != expect {
                if si.len() == 2 && st.len() != 1 {
                    return Err(multi_target());
                }
                return Err(Error::runtime(format!(
                    "Expected input batch_size ({}) to match target batch_size ({}).",
                    si[0],
                    st.first().copied().unwrap_or(0)
                )));
            }
            (si[1], expect)
        }
    };
    if let Some(w) = weight {
        if w.shape().as_slice() != [c] {
            return Err(Error::runtime(format!(
                "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {}",
                fmt_shape(&w.shape())
            )));
        }
    }
    if !input.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"nll_loss_out_frame\" not implemented for '{}'",
            input.dtype().scalar_name()
        )));
    }
    if let Some(w) = weight {
        if w.dtype() != input.dtype() {
            return Err(Error::runtime(format!(
                "expected scalar type {} but found {}",
                input.dtype().scalar_name(),
                w.dtype().scalar_name()
            )));
        }
    }
    for k in target.to_vec::<i64>() {
        if k != ignore_index {
            class_index(k, c)?;
        }
    }
    Ok(out_shape)
}

fn class_index(k: i64, c: usize) -> Result<usize> {
    usize::try_from(k)
        .ok()
        .filter(|&k| k < c)
        .ok_or_else(|| Error::index(format!("Target {k} is out of bounds.")))
}

/// The weight of class `k` (checked to exist by [`check_nll`]); 1 without weights.
fn class_weight<T: Float>(weight: Option<&[T]>, k: usize) -> T {
    match weight {
        Some(w) => w.get(k).copied().unwrap_or(<T as Element>::zero()),
        None => <T as Element>::one(),
    }
}

/// Classes and elements per class and sample of a `[C]`, `[N, C]` or
/// `[N, C, d1, ...]` input: element `(n, k, d)` is at `(n C + k) inner + d`.
fn class_layout(shape: &[usize]) -> (usize, usize) {
    match shape {
        [c] => (*c, 1),
        [_, c, rest @ ..] => (*c, rest.iter().product()),
        [] => (1, 1),
    }
}

/// The elements of `t` in row-major order, borrowed when it is contiguous.
fn with_slice<T: Float, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> R {
    let v = t.view();
    match v.as_slice::<T>() {
        Some(s) => f(s),
        None => f(&crate::kernels::copy::gather::<T>(&v)),
    }
}

/// Per-element `-w[t] x[n, t, d]` and `w[t]` (both 0 where `t` is
/// `ignore_index`), flat, for a float `x` laid out as [`class_layout`] says.
fn nll_elements(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    let dt = x.dtype();
    if !dt.is_float() {
        return Err(Error::runtime(format!(
            "\"nll_loss_out_frame\" not implemented for '{}'",
            dt.scalar_name()
        )));
    }
    if dt.is_low_precision() {
        // In float32, each result rounded once.
        let f = |t: &Tensor| crate::ops::cast_data(t, DType::F32);
        let (l, w) = nll_elements(&f(x), target, weight.map(f).as_ref(), ignore_index)?;
        return Ok((crate::ops::back_to(l, dt), crate::ops::back_to(w, dt)));
    }
    let (c, inner) = class_layout(&x.shape());
    let tv = target.to_vec::<i64>();
    let m = tv.len();
    crate::dispatch_float!(dt, T => {
        let wv = weight.map(|w| w.to_vec::<T>());
        let mut l: Vec<T> = crate::error::alloc_vec(m);
        let mut wt: Vec<T> = crate::error::alloc_vec(m);
        with_slice::<T, Result<()>>(x, |xs| {
            for (i, &k) in tv.iter().enumerate() {
                if k == ignore_index {
                    l.push(T::zero());
                    wt.push(T::zero());
                    continue;
                }
                let k = class_index(k, c)?;
                let wk = class_weight(wv.as_deref(), k);
                let at = (i / inner * c + k) * inner + i % inner;
                let xk = *xs.get(at).ok_or_else(|| Error::runtime("nll_loss: target does not match input"))?;
                l.push(-(xk * wk));
                wt.push(wk);
            }
            Ok(())
        })?;
        Ok((Tensor::from_vec(l, smallvec![m]), Tensor::from_vec(wt, smallvec![m])))
    })
}

/// `d nll / d x` for the scaled output gradient `g` (one value, or one per
/// element with `reduction='none'`): `-w[t] g` at each target class, 0
/// elsewhere.
fn nll_grad_data(
    g: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    per_element: bool,
    shape: &Shape,
) -> Result<Tensor> {
    let dt = g.dtype();
    if dt.is_low_precision() {
        let f = |t: &Tensor| crate::ops::cast_data(t, DType::F32);
        let out = nll_grad_data(
            &f(g),
            target,
            weight.map(f).as_ref(),
            ignore_index,
            per_element,
            shape,
        )?;
        return Ok(crate::ops::back_to(out, dt));
    }
    let (c, inner) = class_layout(shape);
    let tv = target.to_vec::<i64>();
    crate::dispatch_float!(dt, T => {
        let gv = g.to_vec::<T>();
        let wv = weight.map(|w| w.to_vec::<T>());
        let mut out = crate::error::filled_vec(crate::tensor::numel(shape), T::zero());
        for (i, &k) in tv.iter().enumerate() {
            if k == ignore_index {
                continue;
            }
            let k = class_index(k, c)?;
            let wk = class_weight(wv.as_deref(), k);
            let gi = gv.get(if per_element { i } else { 0 }).copied().unwrap_or(T::zero());
            if let Some(slot) = out.get_mut((i / inner * c + k) * inner + i % inner) {
                *slot = gi * -wk;
            }
        }
        Ok(Tensor::from_vec(out, shape.clone()))
    })
}

/// Node names of one `nll_loss` variant and of its backward.
#[derive(Clone, Copy)]
struct NllNames {
    forward: &'static str,
    backward: &'static str,
}

const NLL: NllNames = NllNames {
    forward: "NllLossBackward0",
    backward: "NllLossBackwardBackward0",
};

const NLL_2D: NllNames = NllNames {
    forward: "NllLoss2DBackward0",
    backward: "NllLoss2DBackwardBackward0",
};

/// `nll_loss` of a `[C]`, `[N, C]` or `[N, C, H, W]` input as one node.
fn nll_node(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    names: NllNames,
) -> Result<Tensor> {
    let (out, total_weight) = {
        let _g = GradModeGuard::new(false);
        let (l, w) = nll_elements(x, target, weight, ignore_index)?;
        match reduction {
            Reduction::None => (reshape(&l, &target.shape())?, None),
            Reduction::Sum => (sum(&l, None, false)?, None),
            Reduction::Mean => {
                let total = sum(&w, None, false)?;
                (div(&sum(&l, None, false)?, &total)?, Some(total))
            }
        }
    };
    if needs_record(&[x]) {
        let (shape, dt) = (x.shape(), x.dtype());
        record(
            names.forward,
            &[x],
            &out,
            saved![target, weight, x],
            move |c| {
                let gx = nll_backward(
                    c.grad()?,
                    c.saved(2)?,
                    c.saved(0)?,
                    saved_opt(c, 1),
                    ignore_index,
                    reduction,
                    total_weight.as_ref(),
                    &shape,
                    dt,
                    names,
                )?;
                Ok(smallvec![Some(gx)])
            },
        );
    }
    Ok(out)
}

/// The backward of [`nll_node`] on input `x`, itself a node: linear in `g`,
/// so its gradient is `nll_loss` of the incoming gradient, and constant in
/// `x` (which PyTorch still lists as an input, with a zero gradient).
#[allow(clippy::too_many_arguments)]
fn nll_backward(
    g: &Tensor,
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    total_weight: Option<&Tensor>,
    shape: &Shape,
    dt: DType,
    names: NllNames,
) -> Result<Tensor> {
    let g = to_dtype(g, dt)?;
    let gx = {
        let _g = GradModeGuard::new(false);
        let g = match total_weight {
            Some(total) => div(&g, total)?,
            None => g.clone(),
        };
        let per_element = reduction == Reduction::None;
        nll_grad_data(&g, target, weight, ignore_index, per_element, shape)?
    };
    if needs_record(&[&g, x]) {
        let shape = shape.clone();
        record(
            names.backward,
            &[&g, x],
            &gx,
            saved![target, weight],
            move |c| {
                let gg = if c.needs(0) {
                    Some(nll_node(
                        c.grad()?,
                        c.saved(0)?,
                        saved_opt(c, 1),
                        ignore_index,
                        reduction,
                        names,
                    )?)
                } else {
                    None
                };
                let gx = c.needs(1).then(|| Tensor::zeros(shape.clone(), dt));
                Ok(smallvec![gg, gx])
            },
        );
    }
    Ok(gx)
}

/// Negative log likelihood of class indices under log-probabilities, with
/// class weights, `ignore_index` and PyTorch's weighted mean. One node, as
/// in PyTorch: `NllLossBackward0` for `[C]` and `[N, C]` inputs,
/// `NllLoss2DBackward0` for `[N, C, H, W]`, and other shapes viewed as
/// `[N, C, 1, -1]` (the unreduced loss viewed back).
pub(crate) fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    let out_shape = check_nll(input, target, weight, ignore_index)?;
    if weights_need_grad(&[weight]) {
        return nll_loss_composite(input, target, weight, ignore_index, reduction);
    }
    let si = input.shape();
    match si.len() {
        1 | 2 => nll_node(input, target, weight, ignore_index, reduction, NLL),
        4 => nll_node(input, target, weight, ignore_index, reduction, NLL_2D),
        _ => {
            let (n, c) = (si[0] as i64, si[1] as i64);
            let inner = si[2..].iter().product::<usize>() as i64;
            let x = super::view(&super::contiguous(input)?, &[n, c, 1, inner])?;
            let t = super::view(&super::contiguous(target)?, &[n, 1, inner])?;
            let out = nll_node(&x, &t, weight, ignore_index, reduction, NLL_2D)?;
            match reduction {
                Reduction::None => {
                    let s: Vec<i64> = out_shape.iter().map(|&d| d as i64).collect();
                    super::view(&out, &s)
                }
                _ => Ok(out),
            }
        }
    }
}

/// Moves the class dimension (1) of `[N, C, d1, ...]` last and flattens:
/// `[M, C]` plus the target flattened to `[M]`.
fn flatten_classes(input: &Tensor, target: &Tensor) -> Result<(Tensor, Tensor)> {
    let si = input.shape();
    if si.len() == 1 {
        return Ok((super::unsqueeze(input, 0)?, super::reshape(target, &[1])?));
    }
    let c = si[1];
    let m = target.numel();
    let moved = super::movedim(input, 1, -1)?;
    Ok((
        super::reshape(&moved, &[m, c])?,
        super::reshape(target, &[m])?,
    ))
}

/// `nll_loss` built of differentiable ops, for a `weight` that requires
/// grad (which PyTorch refuses).
fn nll_loss_composite(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    let out_shape = target.shape();
    let (x, t) = flatten_classes(input, target)?;
    let tv = t.to_vec::<i64>();
    let keep: Vec<bool> = tv.iter().map(|&k| k != ignore_index).collect();
    let m = tv.len();
    let safe: Vec<i64> = tv
        .iter()
        .map(|&k| if k == ignore_index { 0 } else { k })
        .collect();
    let safe = Tensor::from_vec(safe, smallvec![m, 1]);
    let picked = super::reshape(&super::gather(&x, 1, &safe)?, &[m])?;
    let keep_t = super::cast_data(&Tensor::from_vec(keep, smallvec![m]), x.dtype());
    let w = match weight {
        Some(w) => mul(
            &super::index_select(w, 0, &super::reshape(&safe, &[m])?)?,
            &keep_t,
        )?,
        None => keep_t,
    };
    let l = neg(&mul(&picked, &w)?)?;
    match reduction {
        Reduction::None => super::reshape(&l, &out_shape),
        Reduction::Sum => sum(&l, None, false),
        Reduction::Mean => div(&sum(&l, None, false)?, &sum(&w, None, false)?),
    }
}

/// `cross_entropy`: log_softmax over the class dimension, then `nll_loss`
/// (class indices) or a soft-target sum (class probabilities), with
/// PyTorch's label smoothing; the graph is PyTorch's.
pub(crate) fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::runtime(format!(
            "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
        )));
    }
    let class_dim = if input.ndim() == 1 { 0 } else { 1 };
    let logp = super::log_softmax(input, class_dim, None)?;
    let c = input.shape().get(class_dim as usize).copied().unwrap_or(1);
    // Weight shaped to broadcast along the class dimension.
    let wb = match weight {
        Some(w) => {
            let mut s: Shape = smallvec::SmallVec::from_elem(1, input.ndim());
            s[class_dim as usize] = c;
            Some(super::reshape(w, &s)?)
        }
        None => None,
    };
    if target.dtype().is_float() {
        if target.shape() != input.shape() {
            return Err(Error::runtime(format!(
                "Expected target size {}, got {}",
                fmt_shape(&input.shape()),
                fmt_shape(&target.shape())
            )));
        }
        let t = if label_smoothing > 0.0 {
            add_scalar(
                &mul_f64(target, 1.0 - label_smoothing)?,
                Scalar::Float(label_smoothing / c as f64),
            )?
        } else {
            target.clone()
        };
        let mut prod = mul(&logp, &t)?;
        if let Some(w) = &wb {
            prod = mul(&prod, w)?;
        }
        return match reduction {
            Reduction::None => neg(&sum(&prod, Some(&[class_dim]), false)?),
            Reduction::Sum => neg(&sum(&prod, None, false)?),
            Reduction::Mean => {
                // Over the samples; 0 / 0 = nan for an empty batch, as in PyTorch.
                let samples = input.numel().checked_div(c).unwrap_or(0);
                div_scalar1(&neg(&sum(&prod, None, false)?)?, samples as f64)
            }
        };
    }
    let nll = nll_loss(&logp, target, weight, ignore_index, reduction)?;
    if label_smoothing == 0.0 {
        return Ok(nll);
    }
    let ignored = super::eq(target, &Tensor::scalar(ignore_index))?;
    let weighted = match &wb {
        Some(w) => mul(&logp, w)?,
        None => logp.clone(),
    };
    let smooth = neg(&sum(&weighted, Some(&[class_dim]), false)?)?;
    let smooth = super::masked_fill_scalar(&smooth, &ignored, Scalar::Float(0.0))?;
    let ret = match reduction {
        Reduction::None => smooth,
        Reduction::Sum => sum(&smooth, None, false)?,
        Reduction::Mean => {
            let denom = match weight {
                Some(w) => {
                    let kept = super::logical_not(&ignored)?;
                    let safe = super::masked_fill_scalar(target, &ignored, Scalar::Int(0))?;
                    let flat = super::reshape(&safe, &[safe.numel()])?;
                    let tw = super::index_select(w, 0, &flat)?;
                    let kept_f = super::cast_data(&kept, tw.dtype());
                    sum(
                        &mul(&tw, &super::reshape(&kept_f, &[kept_f.numel()])?)?,
                        None,
                        false,
                    )?
                }
                None => {
                    let kept = super::logical_not(&ignored)?;
                    super::cast_data(&sum(&kept, None, false)?, logp.dtype())
                }
            };
            div(&sum(&smooth, None, false)?, &denom)?
        }
    };
    add(
        &mul_scalar1(&nll, 1.0 - label_smoothing)?,
        &mul_scalar1(&ret, label_smoothing / c as f64)?,
    )
}
