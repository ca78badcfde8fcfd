"""Connectionist temporal classification loss (``F.ctc_loss``).

The loss and its gradient come from a native kernel (``_C._ctc_loss_forward``
and ``_backward``: the alpha and beta recursions in float64 log space, one
sample at a time). Where a graph of the backward is wanted (``create_graph``,
forward mode), the backward runs PyTorch's forward algorithm written in
differentiable ops instead (``_composite``), and differentiates it.

That recursion runs over the extended label sequence (a blank before, between
and after the labels) in log space, one step per time frame, vectorised over
the batch and the label positions: ``alpha_t(s) = logsumexp(alpha_{t-1}(s),
alpha_{t-1}(s-1), alpha_{t-1}(s-2)) + log_probs[t, l'_s]``, the last term
only where ``l'_s`` is a label different from ``l'_{s-2}``. The loss is
``-logsumexp`` of the last two positions at each sample's last frame.
Impossible positions hold a large negative finite number rather than
``-inf``, so ``logsumexp`` and its gradient stay finite; a loss that large
means no alignment exists and becomes ``inf`` (or 0 with ``zero_infinity``),
as in PyTorch.

Both give the exact derivative with respect to ``log_probs``
(finite-difference checked, second order too).
PyTorch's own CTC backward returns ``exp(log_probs) * grad`` more than that
derivative: the gradient with respect to the logits when ``log_probs`` is a
``log_softmax`` output. Through ``log_softmax`` both give the same logits
gradient, which is how CTC is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from ..._dispatch import check_tensor as _check_tensor
from ..._replay import replayed
from ..._tensor_api._common import _vmap_level
from ...autograd import Function
from ...autograd import grad as _autograd_grad

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor

__all__ = ["ctc_loss"]

# Below any real log-probability sum, far above float32's lowest value.
_IMPOSSIBLE = -1e30


def _lengths(x, what, n):
    if isinstance(x, _C.Tensor):
        if x.is_floating_point():
            raise RuntimeError(f"{what} must be integral")
        vals = x.reshape(-1).tolist()
    elif isinstance(x, int):
        vals = [x]
    else:
        vals = [int(v) for v in x]
    if len(vals) != n:
        raise RuntimeError(f"{what} must be of size batch_size")
    return vals


def _ctc_batched(b, lid, log_probs, targets, input_lengths, target_lengths, blank, reduction,
                 zero_infinity):
    """``ctc_loss`` under vmap: the samples' (T, N, C) batches side by side as one
    (T, B * N, C) batch, each sample's losses then reduced as one call reduces them."""
    args = (log_probs, targets, input_lengths, target_lengths)
    size = b.batch_size_of([a for a in args if not isinstance(a, (list, tuple, int))], lid)

    def rows(x):
        if isinstance(x, (int, list, tuple)):
            x = _C.tensor([x] if isinstance(x, int) else list(x), dtype=_C.int64)
        return b.materialize(x, lid, size)

    lp = b.materialize(log_probs, lid, size)
    tg = rows(targets)
    if lp.dim() != 4 or tg.dim() != 3:
        raise RuntimeError("vmap: ctc_loss supports per-sample log_probs of shape (T, N, C) with "
                           "padded (N, S) targets")
    size, t, n, c = lp.shape
    il, tl = rows(input_lengths), rows(target_lengths)
    losses = ctc_loss(lp.movedim(0, 1).reshape(t, size * n, c), tg.reshape(size * n, -1),
                      il.reshape(-1), tl.reshape(-1), blank, "none", zero_infinity)
    losses = losses.reshape(size, n)
    if reduction == "sum":
        losses = losses.sum(1)
    elif reduction == "mean":
        losses = (losses / tl.to(losses.dtype).clamp(min=1)).mean(1)
    elif reduction != "none":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return b.wrap(losses, lid)


def _composite(log_probs, seqs, il, tl, blank, zero_infinity):
    """Each sample's loss ``(N,)`` from ``log_probs`` ``(T, N, C)``, written in differentiable
    ops (a graph of the backward differentiates this)."""
    T, N = log_probs.shape[0], log_probs.shape[1]
    dtype = log_probs.dtype
    L = 2 * max(tl, default=0) + 1
    ext = [[blank] * L for _ in range(N)]
    for n, seq in enumerate(seqs):
        ext[n][1 : 2 * len(seq) : 2] = seq
    # A skip from s-2 is allowed onto a label that differs from the one two back.
    skip = [[s >= 2 and row[s] != blank and row[s] != row[s - 2] for s in range(L)] for row in ext]
    # The tables go in through NumPy arrays (a tensor built from nested lists costs
    # several microseconds more each); (N, L) even for an empty batch.
    ext_t = _C.from_numpy(np.array(ext, dtype=np.int64).reshape(N, L))
    skip_t = _C.from_numpy(np.array(skip, dtype=bool).reshape(N, L))
    il_flat = _C.from_numpy(np.array(il, dtype=np.int64))
    tl_flat = _C.from_numpy(np.array(tl, dtype=np.int64))
    pos = _C.arange(L).unsqueeze(0)
    impossible = _C.full((N, L), _IMPOSSIBLE, dtype=dtype)

    emit = log_probs.gather(2, ext_t.unsqueeze(0).expand(T, N, L))  # (T, N, L)
    # Frame 0 may start on the first blank or the first label.
    alpha = _C.where(pos < 2, emit[0], impossible)
    il_t = il_flat.unsqueeze(1)
    # Frames past every input's length change nothing: the loop stops at the
    # longest input (none for an empty batch, however many frames it declares).
    for t in range(1, max(il, default=0)):
        a1 = _C.cat([impossible[:, :1], alpha[:, : L - 1]], 1)
        a2 = _C.cat([impossible[:, : min(2, L)], alpha[:, : max(L - 2, 0)]], 1)
        a2 = _C.where(skip_t, a2, impossible)
        step = _C.logsumexp(_C.stack([alpha, a1, a2]), 0) + emit[t]
        # Samples whose input has ended keep their last frame's values.
        alpha = _C.where(il_t > t, step, alpha)

    tl_t = tl_flat.unsqueeze(1)
    last = alpha.gather(1, 2 * tl_t).squeeze(1)
    before = alpha.gather(1, (2 * tl_t - 1).clamp(min=0)).squeeze(1)
    before = _C.where(tl_t.squeeze(1) > 0, before, impossible[:, 0])
    nll = -_C.logsumexp(_C.stack([last, before]), 0)
    # No frames, or no alignment: PyTorch's infinite loss.
    dead = (nll > -_IMPOSSIBLE / 2) | (il_flat == 0)
    if zero_infinity:
        nll = _C.where(dead, _C.zeros((), dtype=dtype), nll)
    else:
        nll = _C.where(dead, _C.full((), float("inf"), dtype=dtype), nll)
    return nll


class _CTCLoss(Function):
    """``ctc_loss``'s per-sample losses as one node: the native forward and backward, or
    the composite's derivative when a graph of the backward is being built."""

    @staticmethod
    def forward(ctx, log_probs, seqs, il, tl, blank, zero_infinity):
        nll, alpha, logp = _C._ctc_loss_forward(log_probs, seqs, il, blank, zero_infinity)
        ctx.save_for_backward(log_probs, alpha, logp)
        ctx.args = (seqs, il, tl, blank, zero_infinity)
        return nll

    @staticmethod
    def backward(ctx, g):
        log_probs, alpha, logp = ctx.saved_tensors
        seqs, il, tl, blank, zero_infinity = ctx.args
        if _C.is_grad_enabled():
            # Forward mode asks for the gradient of an input that has a tangent but does
            # not require grad: differentiate through a leaf standing in for it.
            lp = log_probs if log_probs.requires_grad else log_probs.detach().requires_grad_()
            (d,) = _autograd_grad(_composite(lp, seqs, il, tl, blank, zero_infinity), lp, g,
                                  create_graph=True)
        else:
            d = _C._ctc_loss_backward(log_probs, g, alpha, logp, seqs, il, blank)
        return d, None, None, None, None, None


@_autocast_op("ctc_loss")
@replayed("ctc_loss")
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss: the negative log-probability of ``targets``
    summed over all its alignments to the input frames.

    Args:
        log_probs (Tensor): ``(T, N, C)`` or unbatched ``(T, C)``, log-probabilities
            over ``C`` classes per frame (the output of :func:`log_softmax`).
        targets (Tensor): integer labels (not ``blank``): ``(N, S)`` padded, or the
            target sequences concatenated in 1-d.
        input_lengths (Tensor or list of int): ``(N,)``, the number of valid frames
            of each sample, at most ``T``.
        target_lengths (Tensor or list of int): ``(N,)``, the number of labels of
            each sample.
        blank (int): the blank class. Default: ``0``.
        reduction (str): ``'none'`` (one loss per sample), ``'sum'``, or ``'mean'``
            (each loss divided by its target length, then averaged over the batch).
            Default: ``'mean'``.
        zero_infinity (bool): turn the infinite losses of impossible alignments (and
            their gradients) into zeros. Default: ``False``.

    Shape:
        - Log_probs: ``(T, N, C)`` or ``(T, C)``.
        - Output: a scalar; ``(N,)`` (or ``()`` unbatched) with ``reduction='none'``.

    Returns:
        Tensor: the loss.

    Note:
        The gradient is the exact derivative with respect to ``log_probs``.
        PyTorch's own CTC backward returns the gradient with respect to the logits
        of a ``log_softmax`` instead; through ``log_softmax`` both give the same
        gradient for the logits, which is how CTC is used.

    Example::

        >>> log_probs = F.log_softmax(torch.zeros(4, 1, 3), dim=2)
        >>> F.ctc_loss(log_probs, torch.tensor([[1, 2]]), [4], [2], reduction="sum")
        tensor(1.6864)
    """
    lid, b = _vmap_level(log_probs, targets, input_lengths, target_lengths)
    if lid:
        return _ctc_batched(b, lid, log_probs, targets, input_lengths, target_lengths, blank,
                            reduction, zero_infinity)
    for arg, what in ((log_probs, "log_probs"), (targets, "targets")):
        _check_tensor("ctc_loss", arg, what, None, passes=None)
    if targets.is_floating_point() or targets.dim() not in (1, 2):
        raise RuntimeError("ctc_loss expects integer targets of 1 or 2 dimensions")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1:
            targets = targets.unsqueeze(0)
    if log_probs.dim() != 3:
        raise RuntimeError(
            f"ctc_loss expects log_probs to be a 2-D or 3-D tensor, got {log_probs.dim()}-D"
        )
    if not log_probs.is_floating_point():
        raise RuntimeError("ctc_loss expects floating-point log_probs")
    T, N, C = log_probs.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, "input_lengths", N)
    tl = _lengths(target_lengths, "target_lengths", N)
    for v in il:
        if not 0 <= v <= T:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {T}, but got value {v}"
            )
    if targets.dim() == 2:
        rows = targets.tolist()
        for n, v in enumerate(tl):
            if not 0 <= v <= len(rows[n]):
                raise RuntimeError(
                    f"Expected tensor to have size at least {v} at dimension 1, but got size "
                    f"{len(rows[n])} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)"
                )
        seqs = [rows[n][: tl[n]] for n in range(N)]
    else:
        flat = targets.reshape(-1).tolist()
        if sum(tl) > len(flat):
            raise RuntimeError("targets are shorter than the sum of target_lengths")
        seqs, start = [], 0
        for v in tl:
            seqs.append(flat[start : start + v])
            start += v
    for seq in seqs:
        for lab in seq:
            if not 0 <= lab < C or lab == blank:
                raise RuntimeError(f"target label {lab} is out of range or is the blank")

    if (log_probs.requires_grad and _C.is_grad_enabled()) or _C._fw_tangent(log_probs) is not None:
        nll = _CTCLoss.apply(log_probs, seqs, il, tl, blank, zero_infinity)
    else:
        nll = _C._ctc_loss_forward(log_probs, seqs, il, blank, zero_infinity)[0]
    dtype = log_probs.dtype
    tl_flat = _C.from_numpy(np.array(tl, dtype=np.int64))

    if reduction == "none":
        return nll.squeeze(0) if unbatched else nll
    if reduction == "sum":
        return nll.sum()
    return (nll / tl_flat.to(dtype).clamp(min=1)).mean()
