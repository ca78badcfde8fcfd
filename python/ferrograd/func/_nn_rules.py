"""Batching rules of the neural-network functions: normalisation,
convolution (plain and transposed), pooling-like row-wise functions,
embedding, attention and grid sampling. Most fold the vmap batch into the
function's own leading batch dimension N, so one call serves every sample;
a per-sample weight becomes grouped channels or an offset table."""

from __future__ import annotations

from .. import _C
from ._batched import (
    batch_size_of,
    materialize,
    max_level,
    pad_to,
    unwrap_at,
    wrap,
)

__all__ = [
    "affine_grid_rule",
    "batch_norm_rule",
    "conv_rule",
    "embedding_rule",
    "grid_sample_rule",
    "group_norm_rule",
    "layer_norm_rule",
    "rowwise_rule",
    "sdpa_rule",
]


def _map(out, fn):
    if isinstance(out, tuple):
        vals = [fn(o) for o in out]
        return type(out)(*vals) if hasattr(type(out), "_fields") else tuple(vals)
    return fn(out)


def _norm_args(args, kwargs, names, defaults):
    vals = list(args) + [kwargs.get(n, d) for n, d in zip(names[len(args):], defaults[len(args):])]
    return vals


def _affine_after(y, w, b, shape):
    """A per-sample weight or bias applied to an unweighted normalisation."""
    if w is not None:
        y = y * (w.reshape(*shape) if shape is not None else w)
    if b is not None:
        y = y + (b.reshape(*shape) if shape is not None else b)
    return y


def layer_norm_rule(call, args, kwargs):
    """``layer_norm`` normalises trailing dimensions, so a batched input runs
    as one call; a per-sample weight or bias is applied after the unweighted
    normalisation."""
    x, shape, w, b, eps = _norm_args(
        args, kwargs, ("input", "normalized_shape", "weight", "bias", "eps"), (None, None, None, None, 1e-5)
    )
    lid = max_level(args, kwargs)
    v = materialize(x, lid, batch_size_of([x, w, b], lid))
    if all(unwrap_at(t, lid) is None for t in (w, b)):
        return wrap(call(v, shape, w, b, eps), lid)
    return _affine_after(wrap(call(v, shape, None, None, eps), lid), w, b, None)


def group_norm_rule(call, args, kwargs):
    """``group_norm`` of per-sample (N, C, *) inputs: the samples' rows are
    one call of N*batch rows; a per-sample weight or bias is applied after."""
    x, groups, w, b, eps = _norm_args(
        args, kwargs, ("input", "num_groups", "weight", "bias", "eps"), (None, None, None, None, 1e-5)
    )
    lid = max_level(args, kwargs)
    v = materialize(x, lid, batch_size_of([x, w, b], lid))
    if v.dim() < 3:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {v.dim() - 1}"
        )
    flat = v.reshape(v.shape[0] * v.shape[1], *v.shape[2:])
    if all(unwrap_at(t, lid) is None for t in (w, b)):
        return wrap(call(flat, groups, w, b, eps).reshape(*v.shape), lid)
    y = wrap(call(flat, groups, None, None, eps).reshape(*v.shape), lid)
    return _affine_after(y, w, b, (v.shape[2],) + (1,) * (v.dim() - 3))


def conv_rule(conv, x, w, b, stride, padding, dilation, groups, sd, name=None):
    """``conv1d``/``conv2d``/``conv3d`` under ``vmap``, with one convolution:
    per-sample inputs and a shared weight fold the batch into the samples'
    rows; a per-sample weight becomes a grouped convolution (batch x groups
    groups) over the samples' channels stacked; a per-sample bias is added
    to the result. ``conv`` is the unbatched functional form; a transposed
    convolution (``name`` says which) stacks its per-sample weights along
    their input channels the same way, so the same two paths serve it."""
    name = name or f"conv{sd}d"
    lid = max_level((x, w, b))
    size = batch_size_of((x, w, b), lid)
    vx, vw, vb = unwrap_at(x, lid), unwrap_at(w, lid), unwrap_at(b, lid)
    logical = (vx.dim() - 1) if vx is not None else x.dim()
    if logical not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"Expected {sd + 1}D (unbatched) or {sd + 2}D (batched) input to {name}, "
            f"but got input of size: {list(x.shape)}"
        )
    unbatched_sample = logical == sd + 1
    shared_b = None if vb is not None else b
    if vw is None and vx is None:
        # Only the bias is per sample: one convolution, each sample's bias added after.
        out = conv(x, w, None, stride, padding, dilation, groups, sd)
        out = out.unsqueeze(0)
        if unbatched_sample:
            out = out.unsqueeze(1)
    elif vw is None:
        # One convolution over every sample's rows.
        v = vx.unsqueeze(1) if unbatched_sample else vx
        rows = v.reshape(size * v.shape[1], *v.shape[2:])
        out = conv(rows, w, shared_b, stride, padding, dilation, groups, sd)
        out = out.reshape(size, v.shape[1], *out.shape[1:])
    else:
        v = materialize(x, lid, size)
        v = v.unsqueeze(1) if unbatched_sample else v
        n, c = v.shape[1], v.shape[2]
        # (B, N, C, *) -> (N, B*C, *): each sample's channels are its own groups.
        stacked = v.movedim(0, 1).reshape(n, size * c, *v.shape[3:])
        kernel = vw.reshape(size * vw.shape[1], *vw.shape[2:])
        bias = None
        if shared_b is not None:
            bias = shared_b.unsqueeze(0).expand(size, *shared_b.shape).reshape(-1)
        out = conv(stacked, kernel, bias, stride, padding, dilation, groups * size, sd)
        out = out.reshape(n, size, out.shape[1] // size, *out.shape[2:]).movedim(1, 0)
    if vb is not None:
        out = out + vb.reshape(size, 1, vb.shape[1], *([1] * sd))
    if unbatched_sample:
        out = out.squeeze(1)
    return wrap(out, lid)


def rowwise_rule(fn, batched_rank, x, args, kwargs):
    """Functions of one (N, C, *) input whose rows are independent (pooling,
    ``unfold``/``fold``, ``interpolate``, ``pad``): per-sample batched inputs
    run as one call on the samples' rows stacked, per-sample unbatched
    inputs as one call with the vmap batch as N. ``batched_rank`` is the
    function's batched input rank (None: only batched inputs exist; "pad":
    ``F.pad``, whose padded dimensions must stay out of the fold)."""
    lid = max_level((x,))
    v = unwrap_at(x, lid)
    nd = v.dim() - 1
    if batched_rank == "pad":
        pads = args[0] if args else kwargs.get("pad")
        fold = nd > len(pads) // 2
    elif batched_rank is None:
        fold = True
    elif nd == batched_rank:
        fold = True
    elif nd == batched_rank - 1:
        fold = False
    else:
        # The function's own error for a sample of this rank.
        fn(v[0], *args, **kwargs)
        raise RuntimeError(f"vmap: unexpected input of {nd} dimensions")
    if not fold:
        return _map(fn(v, *args, **kwargs), lambda o: wrap(o, lid))
    b, n = v.shape[0], v.shape[1]
    out = fn(v.reshape(b * n, *v.shape[2:]), *args, **kwargs)
    return _map(out, lambda o: wrap(o.reshape(b, n, *o.shape[1:]), lid))


def embedding_rule(embedding, input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse):
    """``embedding`` under vmap: per-sample indices into a shared table are
    one lookup; a per-sample table is looked up as one table of batch x rows,
    each sample's indices offset to its own rows."""
    lid = max_level((input, weight))
    vi, vw = unwrap_at(input, lid), unwrap_at(weight, lid)
    if vw is None:
        out = embedding(vi, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
        return wrap(out, lid)
    if padding_idx is not None or max_norm is not None or scale_grad_by_freq:
        raise RuntimeError(
            "vmap: embedding with a per-sample weight supports neither padding_idx, max_norm nor "
            "scale_grad_by_freq"
        )
    size, rows = vw.shape[0], vw.shape[1]
    idx = materialize(input, lid, size)
    offsets = _C.arange(size, dtype=idx.dtype).mul(rows).reshape(size, *([1] * (idx.dim() - 1)))
    table = vw.reshape(size * rows, *vw.shape[2:])
    return wrap(embedding(idx + offsets, table, None, None, norm_type, False, sparse), lid)


def batch_norm_rule(call, args, kwargs):
    """``batch_norm`` of per-sample (N, C, *) inputs. With running
    statistics (eval) the samples' rows are one call; in training without
    them each sample's channels become channels of their own, (N, B*C, *),
    so every sample is normalised by its own statistics. Training with
    running statistics would update them in place from every sample at
    once, which is refused as PyTorch refuses it."""
    x, rm, rv, w, b, training, momentum, eps = _norm_args(
        args,
        kwargs,
        ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"),
        (None, None, None, None, None, False, 0.1, 1e-5),
    )
    lid = max_level(args, kwargs)
    if unwrap_at(rm, lid) is not None or unwrap_at(rv, lid) is not None or (
        training and (rm is not None or rv is not None)
    ):
        raise RuntimeError(
            "Batch norm got a batched tensor as input while the running_mean or running_var, "
            "which will be updated in place, were not batched.\nIf you are using a module and "
            "do not need eval mode, please set `track_running_stats` to be False."
        )
    size = batch_size_of([x, w, b], lid)
    v = materialize(x, lid, size)
    if v.dim() < 3:
        raise ValueError(f"expected at least 2D input (got {v.dim() - 1}D input)")
    per_sample_affine = unwrap_at(w, lid) is not None or unwrap_at(b, lid) is not None
    cw, cb = (None, None) if per_sample_affine else (w, b)
    n, c = v.shape[1], v.shape[2]
    if not training:
        out = call(v.reshape(size * n, *v.shape[2:]), rm, rv, cw, cb, False, momentum, eps)
        out = out.reshape(*v.shape)
    else:
        chans = v.movedim(0, 1).reshape(n, size * c, *v.shape[3:])
        rw = cw.repeat(size) if cw is not None else None
        rb = cb.repeat(size) if cb is not None else None
        out = call(chans, None, None, rw, rb, True, momentum, eps)
        out = out.reshape(n, size, c, *v.shape[3:]).movedim(1, 0)
    y = wrap(out, lid)
    if per_sample_affine:
        y = _affine_after(y, w, b, (c,) + (1,) * (v.dim() - 3))
    return y


def _leading(v, nd):
    """Physical ``v`` (batch first) with size-1 dimensions after the batch so
    that it has ``nd`` dimensions in all: the leading dimensions of an
    attention operand broadcast from the right."""
    return pad_to(v, nd - 1)


def sdpa_rule(call, args, kwargs):
    """``scaled_dot_product_attention`` works on any leading dimensions, so
    the vmap batch is one more of them: every operand (and the mask) gets
    the batch in front, unbatched ones broadcast to it, and the call runs
    once. Dropout inside draws for the whole batch at once, which is
    ``randomness='different'``; the other modes are refused."""
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
             "enable_gqa")
    defaults = (None, None, None, None, 0.0, False, None, False)
    vals = dict(zip(names, defaults))
    vals.update(zip(names, args))
    vals.update(kwargs)
    q, k, v, mask = vals["query"], vals["key"], vals["value"], vals["attn_mask"]
    lid = max_level((q, k, v, mask))
    size = batch_size_of([q, k, v, mask], lid)
    if vals["dropout_p"] > 0.0:
        from ._batched import check_random

        if check_random(lid) != "different":
            raise RuntimeError(
                "vmap: scaled_dot_product_attention with dropout_p > 0 draws one mask for the "
                "whole batch; use vmap(..., randomness='different') or dropout_p=0"
            )
    ops = [materialize(t, lid, size) for t in (q, k, v)]
    nd = max(t.dim() for t in ops)
    if vals["enable_gqa"]:
        # Head counts are read at dim -3 of each operand, so ranks must already agree.
        nd = max(nd, 4)
    ops = [_leading(t, nd) for t in ops]
    if mask is not None:
        m = materialize(mask, lid, size)
        mask = _leading(m, max(nd, m.dim()))
    out = call(*ops, attn_mask=mask, dropout_p=vals["dropout_p"], is_causal=vals["is_causal"],
               scale=vals["scale"], enable_gqa=vals["enable_gqa"])
    return wrap(out, lid)


def grid_sample_rule(call, input, grid, kwargs):
    """``grid_sample``: the input (N, C, *) and its grid (N, *, d) share N,
    so the vmap batch folds into it (an unbatched one is broadcast to the
    batch first)."""
    lid = max_level((input, grid))
    size = batch_size_of([input, grid], lid)
    vi, vg = materialize(input, lid, size), materialize(grid, lid, size)
    n = vi.shape[1]
    out = call(vi.reshape(size * n, *vi.shape[2:]), vg.reshape(size * vg.shape[1], *vg.shape[2:]),
               **kwargs)
    return wrap(out.reshape(size, n, *out.shape[1:]), lid)


def affine_grid_rule(call, theta, size, align_corners):
    """``affine_grid``: per-sample affine maps (N, d, d+1) are one call over
    batch x N maps of size (batch x N, *size[1:])."""
    lid = max_level((theta,))
    vt = unwrap_at(theta, lid)
    b, n = vt.shape[0], vt.shape[1]
    size = list(size)
    out = call(vt.reshape(b * n, *vt.shape[2:]), [b * size[0], *size[1:]],
               align_corners=align_corners)
    return wrap(out.reshape(b, n, *out.shape[1:]), lid)
