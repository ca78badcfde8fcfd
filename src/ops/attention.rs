//! Scaled dot-product attention (unmasked or causal) on plain tensors. Nothing is
//! recorded here: `nn._functional.attention` makes the pair one autograd
//! node, whose backward calls [`sdpa_backward`] or, when a graph of the
//! backward is wanted, differentiates the composite form.

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::kernels::attention::{self as kn, Dims, Heads};
use crate::tensor::{DType, Element, Float, Shape, Tensor, View};

/// The sizes of `q` (`[*, L, E]`), `k` (`[*, S, E]`) and `v` (`[*, S, Ev]`),
/// which must share their batch dimensions and a floating-point dtype.
fn dims(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Dims> {
    let (sq, sk, sv) = (q.shape(), k.shape(), v.shape());
    let nd = sq.len();
    let dt = q.dtype();
    if !dt.is_float() || k.dtype() != dt || v.dtype() != dt {
        return Err(Error::runtime(
            "attention: expected query, key and value of one floating-point dtype",
        ));
    }
    if nd < 2
        || sk.len() != nd
        || sv.len() != nd
        || sq[..nd - 2] != sk[..nd - 2]
        || sq[..nd - 2] != sv[..nd - 2]
        || sq[nd - 1] != sk[nd - 1]
        || sk[nd - 2] != sv[nd - 2]
    {
        return Err(Error::runtime(format!(
            "attention: shapes {:?}, {:?}, {:?} are not [*, L, E], [*, S, E], [*, S, Ev]",
            sq.as_slice(),
            sk.as_slice(),
            sv.as_slice()
        )));
    }
    Ok(Dims {
        count: sq[..nd - 2].iter().product(),
        l: sq[nd - 2],
        s: sk[nd - 2],
        e: sq[nd - 1],
        ev: sv[nd - 1],
    })
}

/// Each head's element offset in `v`, in row-major order of the batch dims.
fn head_offsets(v: &View) -> Vec<usize> {
    let nd = v.shape.len();
    let batch = &v.shape[..nd - 2];
    let strides: [SmallVec<[usize; 4]>; 1] = [v.strides[..nd - 2].iter().copied().collect()];
    let count = batch.iter().product();
    let mut offs = crate::error::alloc_vec(count);
    let step = strides[0].last().copied().unwrap_or(0);
    crate::kernels::for_each_row(batch, &strides, 0, count, |_, len, [o]| {
        offs.extend((0..len).map(|i| o + i * step));
    });
    offs
}

fn heads<'a, T: Float>(v: &View, offs: &'a [usize]) -> Heads<'a, T> {
    let nd = v.shape.len();
    Heads {
        ptr: v.ptr::<T>(),
        offs,
        rs: v.strides[nd - 2],
        cs: v.strides[nd - 1],
    }
}

fn shape_with(batch_of: &Tensor, rows: usize, cols: usize) -> Shape {
    let s = batch_of.shape();
    let mut out: Shape = s[..s.len() - 2].iter().copied().collect();
    out.extend([rows, cols]);
    out
}

/// `softmax(q @ k^T * scale) @ v` and the weights `softmax(...)`; with
/// `causal`, query `i` sees keys `0..=i` only.
pub fn sdpa_forward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: f64,
    causal: bool,
) -> Result<(Tensor, Tensor)> {
    let dt = q.dtype();
    if dt.is_low_precision() {
        // In float32, each result rounded once.
        let f = |t: &Tensor| super::cast_data(t, DType::F32);
        let (o, p) = sdpa_forward(&f(q), &f(k), &f(v), scale, causal)?;
        return Ok((super::back_to(o, dt), super::back_to(p, dt)));
    }
    let d = dims(q, k, v)?;
    let (out_shape, p_shape) = (shape_with(q, d.l, d.ev), shape_with(q, d.l, d.s));
    // Results that cannot exist (the weights of 2**62 queries and keys) are
    // refused before any work, as PyTorch's allocation of them is.
    crate::tensor::checked_storage_numel(&out_shape, dt.size())?;
    crate::tensor::checked_storage_numel(&p_shape, dt.size())?;
    if out_shape.contains(&0) && p_shape.contains(&0) {
        // Both results empty, however many (empty) heads: no loop over them.
        return Ok((Tensor::zeros(out_shape, dt), Tensor::zeros(p_shape, dt)));
    }
    let (vq, vk, vv) = (q.view(), k.view(), v.view());
    let (oq, ok, ov) = (head_offsets(&vq), head_offsets(&vk), head_offsets(&vv));
    Ok(crate::dispatch_float!(q.dtype(), T => {
        let (out, p) = kn::forward::<T>(
            d,
            &heads(&vq, &oq),
            &heads(&vk, &ok),
            &heads(&vv, &ov),
            <T as Element>::from_f64(scale),
            causal,
        );
        (
            Tensor::from_vec(out, shape_with(q, d.l, d.ev)),
            Tensor::from_vec(p, shape_with(q, d.l, d.s)),
        )
    }))
}

/// The gradients of `q`, `k`, `v` (those `needs` asks for) from the output's
/// gradient `g` and the weights `p` that [`sdpa_forward`] returned.
pub fn sdpa_backward(
    g: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    p: &Tensor,
    scale: f64,
    needs: [bool; 3],
) -> Result<[Option<Tensor>; 3]> {
    let dt = q.dtype();
    if dt.is_low_precision() {
        let f = |t: &Tensor| super::cast_data(t, DType::F32);
        let grads = sdpa_backward(&f(g), &f(q), &f(k), &f(v), &f(p), scale, needs)?;
        return Ok(grads.map(|t| t.map(|t| super::back_to(t, dt))));
    }
    let d = dims(q, k, v)?;
    let want_p = shape_with(q, d.l, d.s);
    let want_g = shape_with(q, d.l, d.ev);
    if g.shape() != want_g
        || p.shape() != want_p
        || g.dtype() != q.dtype()
        || p.dtype() != q.dtype()
    {
        return Err(Error::runtime(
            "attention backward: gradient or weights do not match the inputs",
        ));
    }
    if q.numel() == 0 && k.numel() == 0 && v.numel() == 0 {
        // Empty gradients, however many (empty) heads: no loop over them.
        let zeros = |t: &Tensor, need: bool| need.then(|| Tensor::zeros(t.shape(), dt));
        return Ok([zeros(q, needs[0]), zeros(k, needs[1]), zeros(v, needs[2])]);
    }
    let p = p.contiguous_data();
    let (vg, vq, vk, vv, vp) = (g.view(), q.view(), k.view(), v.view(), p.view());
    let (og, oq, ok, ov) = (
        head_offsets(&vg),
        head_offsets(&vq),
        head_offsets(&vk),
        head_offsets(&vv),
    );
    Ok(crate::dispatch_float!(q.dtype(), T => {
        let grads = kn::backward::<T>(
            d,
            &heads(&vg, &og),
            &heads(&vq, &oq),
            &heads(&vk, &ok),
            &heads(&vv, &ov),
            vp.as_slice::<T>().unwrap_or(&[]),
            <T as Element>::from_f64(scale),
            needs,
        );
        [
            grads.q.map(|x| Tensor::from_vec(x, q.shape())),
            grads.k.map(|x| Tensor::from_vec(x, k.shape())),
            grads.v.map(|x| Tensor::from_vec(x, v.shape())),
        ]
    }))
}
