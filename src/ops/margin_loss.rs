//! The multi-class hinge losses, `multi_margin_loss` and
//! `multilabel_margin_loss`, one recorded node each as in PyTorch.
//!
//! Both take `nframe` rows of `dim` scores (the input's memory, whatever its
//! 0-, 1- or 2-d shape) and int64 targets. A hinge term counts where its
//! argument is positive, so a NaN score adds nothing (PyTorch's `z > 0`
//! test). The per-row losses are reduced with the `mean`/`sum` ops.
//!
//! The gradient of a row is `g_n` times coefficients fixed by which hinges
//! are active: constants for the multi-label loss and `p = 1`, so the rule
//! `g * coef` is exact at every order. For `p = 2` the coefficients are
//! `2 z` on the active hinges; when the backward itself is recorded they
//! are built from `input` in differentiable ops, so the second order is
//! exact too.

use smallvec::smallvec;

use super::loss::saved_opt;
use super::{
    add_scalar, expand, gather, mean, mul, mul_f64, neg, reshape, scatter_add, sub, sum, unsqueeze,
    where_, Reduction, Scalar,
};
use crate::autograd::{is_grad_enabled, needs_record, record, BackwardCtx};
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::{DType, Element, Float, Tensor};

/// `per` (one loss per row) reduced: the rows, the rows as a 0-d tensor
/// (`keep_rows` false: a single unbatched sample), their mean or sum.
fn reduce_rows(per: Tensor, reduction: Reduction, keep_rows: bool) -> Result<Tensor> {
    match reduction {
        Reduction::None if keep_rows => Ok(per),
        Reduction::None => reshape(&per, &[]),
        Reduction::Mean => mean(&per, None, false),
        Reduction::Sum => sum(&per, None, false),
    }
}

/// The gradient of each row's loss, `(nframe, 1)`, from the output's `g`.
fn row_grads(g: &Tensor, reduction: Reduction, nframe: usize) -> Result<Tensor> {
    let g = match reduction {
        Reduction::None => reshape(g, &[nframe])?,
        Reduction::Sum => expand(g, &[nframe])?,
        Reduction::Mean => expand(&mul_f64(g, 1.0 / nframe.max(1) as f64)?, &[nframe])?,
    };
    unsqueeze(&g, 1)
}

fn int64_targets(target: &Tensor, op: &str) -> Result<Vec<i64>> {
    if target.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "{op}: expected an int64 target, but got {}",
            target.dtype().scalar_name()
        )));
    }
    let t = target.contiguous_data();
    let v = t.view();
    Ok(v.as_slice::<i64>().unwrap_or(&[]).to_vec())
}

fn float_input(input: &Tensor, op: &str) -> Result<()> {
    match input.dtype() {
        DType::F32 | DType::F64 => Ok(()),
        dt => Err(Error::runtime(format!(
            "\"{op}\" not implemented for '{}'",
            dt.scalar_name()
        ))),
    }
}

// ----- multi_margin_loss ---------------------------------------------------------------------

/// `multi_margin_loss` of `nframe` rows of `dim` scores, `target` the class
/// of each row (`MultiMarginLossBackward0`): per row with class `y`, the sum
/// over the other classes `j` of `w[y] * max(0, margin - x[y] + x[j]) ** p`,
/// divided by `dim`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn multi_margin_loss(
    input: &Tensor,
    target: &Tensor,
    p: i64,
    margin: f64,
    weight: Option<&Tensor>,
    reduction: Reduction,
    nframe: usize,
    dim: usize,
    keep_rows: bool,
) -> Result<Tensor> {
    float_input(input, "multi_margin_loss")?;
    if p != 1 && p != 2 {
        return Err(Error::value("only p == 1 and p == 2 supported"));
    }
    if input.numel() != nframe * dim || target.numel() != nframe {
        return Err(Error::runtime(
            "multi_margin_loss: the input and target sizes do not match",
        ));
    }
    if let Some(w) = weight {
        if w.numel() != dim || w.dtype() != input.dtype() {
            return Err(Error::runtime(format!(
                "inconsistent weight size, expected {dim} but got {}",
                crate::tensor::fmt_shape(&w.shape())
            )));
        }
    }
    let ys = int64_targets(target, "multi_margin_loss")?;
    if ys.iter().any(|&y| y < 0 || y >= dim as i64) {
        return Err(Error::runtime("target out of range"));
    }
    let dt = input.dtype();
    let per = {
        let xc = input.contiguous_data();
        let wc = weight.map(|w| w.contiguous_data());
        let (xv, wv) = (xc.view(), wc.as_ref().map(|w| w.view()));
        crate::dispatch_float!(dt, T => {
            let xs = xv.as_slice::<T>().unwrap_or(&[]);
            let ws = wv.as_ref().map(|w| w.as_slice::<T>().unwrap_or(&[]));
            let per = multi_margin_rows::<T>(xs, &ys, ws, p, margin, dim);
            Tensor::from_vec(per, smallvec![nframe])
        })
    };
    let out = reduce_rows(per, reduction, keep_rows)?;
    if needs_record(&[input]) {
        record(
            "MultiMarginLossBackward0",
            &[input],
            &out,
            saved![input, target, weight],
            move |c| {
                let (x, y) = (c.saved(0)?, c.saved(1)?);
                let gn = row_grads(c.grad()?, reduction, nframe)?;
                let coef = if p == 2 && is_grad_enabled() {
                    multi_margin_coef_recorded(c, margin, nframe, dim)?
                } else {
                    multi_margin_coef(x, y, saved_opt(c, 2), p, margin, nframe, dim)?
                };
                Ok(smallvec![Some(reshape(&mul(&gn, &coef)?, &x.shape())?)])
            },
        );
    }
    Ok(out)
}

fn multi_margin_rows<T: Float>(
    x: &[T],
    ys: &[i64],
    w: Option<&[T]>,
    p: i64,
    margin: f64,
    dim: usize,
) -> Vec<T> {
    let (m, d) = (T::from_f64(margin), T::from_f64(dim as f64));
    let mut per = crate::error::alloc_vec(ys.len());
    for (n, &y) in ys.iter().enumerate() {
        let (row, y) = (&x[n * dim..(n + 1) * dim], y as usize);
        let xy = row[y];
        let mut s = <T as crate::tensor::Element>::zero();
        for (j, &v) in row.iter().enumerate() {
            // `(x[j] - x[y]) + margin`, as the composite rounded it.
            let z = (v - xy) + m;
            if j != y && z > <T as crate::tensor::Element>::zero() {
                s += if p == 1 { z } else { z * z };
            }
        }
        let mut l = s / d;
        if let Some(w) = w {
            l = l * w[y];
        }
        per.push(l);
    }
    per
}

/// `d loss_n / d x[n, j]` per unit of `g_n`, as a constant `(nframe, dim)`
/// tensor: `w[y] / dim * (1 or 2 z)` on the active hinges, minus their sum
/// at the target class.
fn multi_margin_coef(
    x: &Tensor,
    y: &Tensor,
    w: Option<&Tensor>,
    p: i64,
    margin: f64,
    nframe: usize,
    dim: usize,
) -> Result<Tensor> {
    let ys = int64_targets(y, "multi_margin_loss")?;
    let xc = x.contiguous_data();
    let wc = w.map(|w| w.contiguous_data());
    let (xv, wv) = (xc.view(), wc.as_ref().map(|w| w.view()));
    let dt = x.dtype();
    Ok(crate::dispatch_float!(dt, T => {
        let xs = xv.as_slice::<T>().unwrap_or(&[]);
        let ws = wv.as_ref().map(|w| w.as_slice::<T>().unwrap_or(&[]));
        let (m, d) = (T::from_f64(margin), T::from_f64(dim as f64));
        let zero = <T as crate::tensor::Element>::zero();
        let mut coef = crate::error::filled_vec(nframe * dim, zero);
        for (n, &y) in ys.iter().enumerate() {
            let (row, y) = (&xs[n * dim..(n + 1) * dim], y as usize);
            let scale = ws.map_or(<T as crate::tensor::Element>::one(), |w| w[y]) / d;
            let out = &mut coef[n * dim..(n + 1) * dim];
            let mut total = zero;
            for (j, &v) in row.iter().enumerate() {
                let z = (v - row[y]) + m;
                if j != y && z > zero {
                    let c = if p == 1 { scale } else { scale * (z + z) };
                    out[j] = c;
                    total += c;
                }
            }
            out[y] = -total;
        }
        Tensor::from_vec(coef, smallvec![nframe, dim])
    }))
}

/// [`multi_margin_coef`] for `p = 2` in recorded ops of `input`: the active
/// hinges are fixed, `2 z w[y] / dim` on them follows `input`.
fn multi_margin_coef_recorded(
    c: &BackwardCtx<'_>,
    margin: f64,
    nframe: usize,
    dim: usize,
) -> Result<Tensor> {
    let (x, y, w) = (c.saved(0)?, c.saved(1)?, saved_opt(c, 2));
    let ys = int64_targets(y, "multi_margin_loss")?;
    let (active, scale) = {
        let xc = x.contiguous_data();
        let wc = w.map(|w| w.contiguous_data());
        let (xv, wv) = (xc.view(), wc.as_ref().map(|w| w.view()));
        let dt = x.dtype();
        crate::dispatch_float!(dt, T => {
            let xs = xv.as_slice::<T>().unwrap_or(&[]);
            let ws = wv.as_ref().map(|w| w.as_slice::<T>().unwrap_or(&[]));
            let (m, d) = (T::from_f64(margin), T::from_f64(dim as f64));
            let zero = <T as crate::tensor::Element>::zero();
            let mut active = crate::error::alloc_vec::<bool>(nframe * dim);
            let mut scale = crate::error::alloc_vec::<T>(nframe);
            for (n, &y) in ys.iter().enumerate() {
                let (row, y) = (&xs[n * dim..(n + 1) * dim], y as usize);
                scale.push(ws.map_or(<T as crate::tensor::Element>::one(), |w| w[y]) / d);
                active.extend(row.iter().enumerate().map(|(j, &v)| j != y && (v - row[y]) + m > zero));
            }
            (
                Tensor::from_vec(active, smallvec![nframe, dim]),
                Tensor::from_vec(scale, smallvec![nframe, 1]),
            )
        })
    };
    let x2 = reshape(x, &[nframe, dim])?;
    let y1 = reshape(y, &[nframe, 1])?;
    let z = add_scalar(&sub(&x2, &gather(&x2, 1, &y1)?)?, Scalar::Float(margin))?;
    let zero = Tensor::scalar_of(0.0, x.dtype());
    let terms = where_(&active, &mul(&mul_f64(&z, 2.0)?, &scale)?, &zero)?;
    let total = sum(&terms, Some(&[1]), true)?;
    scatter_add(&terms, 1, &y1, &neg(&total)?)
}

// ----- multilabel_margin_loss ----------------------------------------------------------------

/// `multilabel_margin_loss` of `nframe` rows of `dim` scores
/// (`MultilabelMarginLossBackward0`): each row's target classes are its
/// `target` entries before the first negative one (a class listed twice
/// counts twice); the loss is the sum over target classes `j` and
/// non-target classes `k` of `max(0, 1 - (x[j] - x[k]))`, divided by `dim`.
pub(crate) fn multilabel_margin_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    nframe: usize,
    dim: usize,
    keep_rows: bool,
) -> Result<Tensor> {
    float_input(input, "multilabel_margin_loss")?;
    if input.numel() != nframe * dim || target.numel() != nframe * dim {
        return Err(Error::runtime(
            "multilabel_margin_loss: the input and target sizes do not match",
        ));
    }
    let counts = target_counts(
        &int64_targets(target, "multilabel_margin_loss")?,
        nframe,
        dim,
    )?;
    let dt = input.dtype();
    let per = {
        let xc = input.contiguous_data();
        let xv = xc.view();
        crate::dispatch_float!(dt, T => {
            let xs = xv.as_slice::<T>().unwrap_or(&[]);
            let per = multilabel_rows::<T>(xs, &counts, nframe, dim, None);
            Tensor::from_vec(per, smallvec![nframe])
        })
    };
    let out = reduce_rows(per, reduction, keep_rows)?;
    if needs_record(&[input]) {
        record(
            "MultilabelMarginLossBackward0",
            &[input],
            &out,
            saved![input],
            move |c| {
                let x = c.saved(0)?;
                let gn = row_grads(c.grad()?, reduction, nframe)?;
                let xc = x.contiguous_data();
                let xv = xc.view();
                let dt = x.dtype();
                let coef = crate::dispatch_float!(dt, T => {
                    let xs = xv.as_slice::<T>().unwrap_or(&[]);
                    let zero = <T as crate::tensor::Element>::zero();
                    let mut coef = crate::error::filled_vec(nframe * dim, zero);
                    multilabel_rows::<T>(xs, &counts, nframe, dim, Some(&mut coef));
                    Tensor::from_vec(coef, smallvec![nframe, dim])
                });
                Ok(smallvec![Some(reshape(&mul(&gn, &coef)?, &x.shape())?)])
            },
        );
    }
    Ok(out)
}

/// `counts[n * dim + j]`: how often row `n` lists class `j` among its targets.
fn target_counts(t: &[i64], nframe: usize, dim: usize) -> Result<Vec<u32>> {
    let mut counts = crate::error::filled_vec(nframe * dim, 0u32);
    for n in 0..nframe {
        for &v in &t[n * dim..(n + 1) * dim] {
            if v < 0 {
                break;
            }
            if v >= dim as i64 {
                return Err(Error::runtime("argument #2 'target' is out of range"));
            }
            counts[n * dim + v as usize] += 1;
        }
    }
    Ok(counts)
}

/// Each row's loss; with `coef`, also `d loss_n / d x[n, i]` per unit of
/// `g_n` added into it: `count[j] / dim` at `k` and its negation at `j` for
/// every active hinge `(j, k)`.
fn multilabel_rows<T: Float>(
    x: &[T],
    counts: &[u32],
    nframe: usize,
    dim: usize,
    mut coef: Option<&mut [T]>,
) -> Vec<T> {
    let zero = <T as crate::tensor::Element>::zero();
    let (one, d) = (
        <T as crate::tensor::Element>::one(),
        T::from_f64(dim as f64),
    );
    let mut per = crate::error::alloc_vec(nframe);
    for n in 0..nframe {
        let (row, cnt) = (&x[n * dim..(n + 1) * dim], &counts[n * dim..(n + 1) * dim]);
        let mut s = zero;
        for (j, &cj) in cnt.iter().enumerate() {
            if cj == 0 {
                continue;
            }
            let c = T::from_f64(cj as f64);
            for (k, &ck) in cnt.iter().enumerate() {
                if ck != 0 {
                    continue;
                }
                // `(1 - x[j]) + x[k]`, as the composite rounded it.
                let z = (one - row[j]) + row[k];
                if z > zero {
                    s += z * c;
                    if let Some(coef) = coef.as_deref_mut() {
                        let share = c / d;
                        coef[n * dim + k] += share;
                        coef[n * dim + j] = coef[n * dim + j] - share;
                    }
                }
            }
        }
        per.push(s / d);
    }
    per
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Shape;

    fn t(v: &[f64], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), Shape::from_slice(shape))
    }

    fn values(x: &Tensor) -> Vec<f64> {
        let c = x.contiguous_data();
        let v = c.view();
        v.as_slice::<f64>().unwrap().to_vec()
    }

    #[test]
    fn multi_margin_follows_its_definition() {
        // Row 0: class 1, hinges 1 - 0.5 + 0.1 = 0.6 and 1 - 0.5 + 2 = 2.5.
        let x = t(&[0.1, 0.5, 2.0, 1.0, -3.0, 0.0], &[2, 3]);
        let y = Tensor::from_vec(vec![1i64, 0], Shape::from_slice(&[2]));
        let out = multi_margin_loss(&x, &y, 1, 1.0, None, Reduction::None, 2, 3, true).unwrap();
        let row1 = ((0.0 - 1.0 + 1.0f64).max(0.0) + (-3.0 - 1.0 + 1.0f64).max(0.0)) / 3.0;
        assert_eq!(values(&out), vec![(0.6 + 2.5) / 3.0, row1]);
        let w = t(&[2.0, 3.0, 4.0], &[3]);
        let sq = multi_margin_loss(&x, &y, 2, 1.0, Some(&w), Reduction::Sum, 2, 3, true).unwrap();
        let want = (0.6f64 * 0.6 + 2.5 * 2.5) / 3.0 * 3.0;
        assert!((values(&sq)[0] - want).abs() < 1e-12);
    }

    #[test]
    fn a_nan_score_adds_no_hinge() {
        let x = t(&[f64::NAN, 0.5, 2.0], &[1, 3]);
        let y = Tensor::from_vec(vec![0i64], Shape::from_slice(&[1]));
        let out = multi_margin_loss(&x, &y, 1, 1.0, None, Reduction::Mean, 1, 3, true).unwrap();
        assert_eq!(values(&out), vec![0.0]);
        let y = Tensor::from_vec(vec![0i64, -1, 0], Shape::from_slice(&[1, 3]));
        let out = multilabel_margin_loss(&x, &y, Reduction::Sum, 1, 3, true).unwrap();
        assert_eq!(values(&out), vec![0.0]);
    }

    #[test]
    fn multilabel_counts_repeated_targets_and_stops_at_minus_one() {
        // Targets 0, 0 (twice), then -1: class 2 after it is ignored.
        let x = t(&[0.2, 0.5, 0.1], &[1, 3]);
        let y = Tensor::from_vec(vec![0i64, 0, -1], Shape::from_slice(&[1, 3]));
        let out = multilabel_margin_loss(&x, &y, Reduction::None, 1, 3, false).unwrap();
        let per = 2.0 * ((1.0 - 0.2 + 0.5) + (1.0 - 0.2 + 0.1)) / 3.0;
        assert!((values(&out)[0] - per).abs() < 1e-12);
        assert!(out.shape().is_empty());
        let bad = Tensor::from_vec(vec![3i64, -1, 0], Shape::from_slice(&[1, 3]));
        assert!(multilabel_margin_loss(&x, &bad, Reduction::Sum, 1, 3, true).is_err());
    }
}
