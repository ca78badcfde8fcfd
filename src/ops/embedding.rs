//! `embedding`: rows of a weight matrix picked by an index tensor, recorded
//! as PyTorch's `EmbeddingBackward0`. Its gradient is a scatter-add of the
//! incoming rows (`EmbeddingDenseBackward0`), skipping `padding_idx` and
//! optionally divided by each index's frequency in the batch. The lookup and
//! the scatter-add are each other's adjoints, so every order differentiates.

use smallvec::smallvec;

use super::cast_data;
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::embedding as ke;
use crate::saved;
use crate::tensor::{DType, Element, Shape, Tensor};

/// `1 / count(idx[i])` for each position, or `None` when not scaling.
fn freq_scale<T: Element>(idx: &[i64], v: usize, freq: bool) -> Option<Vec<T>> {
    if !freq {
        return None;
    }
    let mut count = crate::error::zeroed_vec::<u32>(v);
    for &k in idx {
        count[k as usize] += 1;
    }
    Some(
        idx.iter()
            .map(|&k| T::from_f64(1.0 / count[k as usize] as f64))
            .collect(),
    )
}

/// Rows of `w` (`[v, d]`) at `idx`; `adjoint` marks the lookup that is the
/// scatter's adjoint (scaled by frequency, padding rows zero).
fn rows_lookup(
    w: &Tensor,
    idx: &Tensor,
    pad: Option<i64>,
    freq: bool,
    adjoint: bool,
) -> Result<Tensor> {
    let ws = w.shape();
    let (v, d) = (ws[0], ws[1]);
    let wd = crate::ops::compute_contig(w);
    let iv = idx.contiguous_data().to_vec::<i64>();
    let mut shape: Shape = idx.shape();
    shape.push(d);
    let out = crate::dispatch_float_compute!(w.dtype(), T => {
        let view = wd.view();
        let data = view.as_slice::<T>().unwrap_or(&[]);
        let scale = freq_scale::<T>(&iv, v, freq && adjoint);
        let zero = if adjoint { pad } else { None };
        Tensor::from_vec(ke::lookup(data, d, &iv, scale.as_deref(), zero), shape)
    });
    if needs_record(&[w]) {
        record("EmbeddingBackward0", &[w], &out, saved![idx], move |c| {
            let g = c.grad()?;
            Ok(smallvec![Some(rows_scatter(
                g,
                c.saved(0)?,
                v,
                d,
                pad,
                freq
            )?)])
        });
    }
    Ok(out)
}

/// `[v, d]` zeros with each row of `g` (shape `idx.shape + [d]`) added at
/// its index.
fn rows_scatter(
    g: &Tensor,
    idx: &Tensor,
    v: usize,
    d: usize,
    pad: Option<i64>,
    freq: bool,
) -> Result<Tensor> {
    let gd = crate::ops::compute_contig(g);
    let iv = idx.contiguous_data().to_vec::<i64>();
    let out = crate::dispatch_float_compute!(g.dtype(), T => {
        let view = gd.view();
        let data = view.as_slice::<T>().unwrap_or(&[]);
        let scale = freq_scale::<T>(&iv, v, freq);
        Tensor::from_vec(ke::scatter_rows(data, d, &iv, v, scale.as_deref(), pad), smallvec![v, d])
    });
    if needs_record(&[g]) {
        record(
            "EmbeddingDenseBackward0",
            &[g],
            &out,
            saved![idx],
            move |c| {
                let gg = c.grad()?;
                Ok(smallvec![Some(rows_lookup(
                    gg,
                    c.saved(0)?,
                    pad,
                    freq,
                    true
                )?)])
            },
        );
    }
    Ok(out)
}

/// `F.embedding(indices, weight, padding_idx, scale_grad_by_freq)` with
/// `padding_idx` already made non-negative.
pub fn embedding(
    weight: &Tensor,
    indices: &Tensor,
    padding_idx: Option<i64>,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    if weight.ndim() != 2 {
        return Err(Error::runtime("'weight' must be 2-D"));
    }
    if !weight.dtype().is_float() {
        return Err(Error::runtime(format!(
            "\"embedding\" not implemented for '{}'",
            weight.dtype().scalar_name()
        )));
    }
    if indices.dtype() == DType::I32 {
        // PyTorch takes Long and Int indices.
        let wide = crate::ops::cast_data(indices, DType::I64);
        return embedding(weight, &wide, padding_idx, scale_grad_by_freq);
    }
    if indices.dtype() != DType::I64 {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding)",
            indices.dtype().scalar_name()
        )));
    }
    let v = weight.shape()[0];
    let idx = indices.detach();
    if idx
        .to_vec::<i64>()
        .iter()
        .any(|&k| k < 0 || k as usize >= v)
    {
        return Err(Error::index("index out of range in self"));
    }
    rows_lookup(weight, &idx, padding_idx, scale_grad_by_freq, false)
}

/// `embedding_renorm_`: rescales, in place and outside the graph, each row
/// of `weight` picked by `indices` whose `norm_type`-norm exceeds `max_norm`
/// to norm `max_norm` (as PyTorch, dividing by `norm + 1e-7`).
pub fn embedding_renorm_(
    weight: &Tensor,
    indices: &Tensor,
    max_norm: f64,
    norm_type: f64,
) -> Result<()> {
    if weight.ndim() != 2 || !weight.dtype().is_float() {
        return Err(Error::runtime("'weight' must be 2-D"));
    }
    let v = weight.shape()[0];
    let d = weight.shape()[1];
    let mut rows: Vec<i64> = indices.contiguous_data().to_vec::<i64>();
    if rows.iter().any(|&k| k < 0 || k as usize >= v) {
        return Err(Error::index("index out of range in self"));
    }
    rows.sort_unstable();
    rows.dedup();
    let data = cast_data(&weight.contiguous_data(), DType::F64).to_vec::<f64>();
    let mut changed = Vec::new();
    for &k in &rows {
        let row = &data[k as usize * d..(k as usize + 1) * d];
        let norm = if norm_type == f64::INFINITY {
            row.iter().fold(0f64, |a, &x| a.max(x.abs()))
        } else if norm_type == 1.0 {
            row.iter().map(|x| x.abs()).sum()
        } else if norm_type == 2.0 {
            row.iter().map(|x| x * x).sum::<f64>().sqrt()
        } else {
            row.iter()
                .map(|x| x.abs().powf(norm_type))
                .sum::<f64>()
                .powf(1.0 / norm_type)
        };
        if norm > max_norm {
            changed.push((k as usize, max_norm / (norm + 1e-7)));
        }
    }
    if changed.is_empty() {
        return Ok(());
    }
    let mut new = data;
    for (k, s) in changed {
        for x in &mut new[k * d..(k + 1) * d] {
            *x *= s;
        }
    }
    let values = cast_data(&Tensor::from_vec(new, smallvec![v, d]), weight.dtype());
    super::assign(weight, &values)
}

/// `embedding_bag(input, weight, mode="sum")` of a 2-d `input` (`[bags,
/// len]`, every bag full): the sum of each bag's rows, gathered and added in
/// one pass (`EmbeddingBagBackward0`). The gradient sends each bag's
/// gradient to each of its rows: the lookup's scatter-add of the gradient
/// repeated over the bag, which differentiates again as the lookup does.
pub fn embedding_bag_sum(weight: &Tensor, indices: &Tensor) -> Result<Tensor> {
    let ws = weight.shape();
    let is = indices.shape();
    if ws.len() != 2 || is.len() != 2 || indices.dtype() != DType::I64 || !weight.dtype().is_float()
    {
        return Err(Error::runtime(
            "embedding_bag_sum: expected a 2-D int64 input and a 2-D floating-point weight",
        ));
    }
    let (v, d) = (ws[0], ws[1]);
    let (bags, len) = (is[0], is[1]);
    let idx = indices.detach();
    let iv = idx.contiguous_data().to_vec::<i64>();
    if iv.iter().any(|&k| k < 0 || k as usize >= v) {
        return Err(Error::index("index out of range in self"));
    }
    let wd = crate::ops::compute_contig(weight);
    let dt = weight.dtype();
    let out = crate::dispatch_float_compute!(dt, T => {
        let view = wd.view();
        let data = view.as_slice::<T>().unwrap_or(&[]);
        Tensor::from_vec(ke::bag_sums(data, d, &iv, len), smallvec![bags, d])
    });
    if needs_record(&[weight]) {
        record(
            "EmbeddingBagBackward0",
            &[weight],
            &out,
            saved![&idx],
            move |c| {
                let g = super::expand(&super::unsqueeze(c.grad()?, 1)?, &[bags, len, d])?;
                Ok(smallvec![Some(rows_scatter(
                    &g,
                    c.saved(0)?,
                    v,
                    d,
                    None,
                    false
                )?)])
            },
        );
    }
    Ok(out)
}
