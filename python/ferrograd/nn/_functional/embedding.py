"""Embedding functional forms (``embedding``, ``embedding_bag``) over the
Rust ops, and ``one_hot``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._replay import replayed
from ...autograd.grad_mode import no_grad
from ._args import PaddingIdxError, tensor_args

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _padding_idx(padding_idx, num):
    if padding_idx is None:
        return None
    if not -num <= padding_idx < num:
        raise PaddingIdxError("Padding_idx must be within num_embeddings")
    return padding_idx + num if padding_idx < 0 else padding_idx


@tensor_args("input", "weight")
def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Looks up rows of an embedding table: ``weight[input]``.

    Args:
        input (Tensor): int64 indices into the rows of ``weight``, of any shape.
        weight (Tensor): ``(num_embeddings, embedding_dim)``, the table.
        padding_idx (int, optional): the row of this index gets no gradient (a
            negative value counts from the end). Default: ``None``.
        max_norm (float, optional): before the lookup, every referenced row whose
            ``norm_type``-norm exceeds ``max_norm`` is rescaled in place to that norm.
            Default: ``None``.
        norm_type (float): the ``p`` of the ``max_norm`` norm. Default: ``2.0``.
        scale_grad_by_freq (bool): divide each row's gradient by how often its index
            occurs in ``input``. Default: ``False``.
        sparse (bool): sparse gradients; not supported, must be ``False``.
            Default: ``False``.

    Shape:
        - Input: ``(*)``, int64.
        - Output: ``(*, embedding_dim)``.

    Returns:
        Tensor: the rows picked.

    Note:
        ferrograd has no sparse tensors: ``sparse=True`` raises
        ``NotImplementedError``.

    Example::

        >>> table = torch.arange(6.0).reshape(3, 2)
        >>> F.embedding(torch.tensor([[0, 2], [1, 1]]), table)
        tensor([[[0., 1.],
                 [4., 5.]],
        <BLANKLINE>
                [[2., 3.],
                 [2., 3.]]])
    """
    if hasattr(type(input), "__ferrograd_function__") or hasattr(type(weight), "__ferrograd_function__"):
        if not _dispatch.is_batched(input, weight):
            args = (input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
            return _dispatch.dispatch(embedding, args)
        from ...func._nn_rules import embedding_rule

        return embedding_rule(
            embedding, input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse
        )
    if sparse:
        raise NotImplementedError("sparse gradients are not supported; use sparse=False")
    padding_idx = _padding_idx(padding_idx, weight.size(0))
    if max_norm is not None:
        with no_grad():
            _C.embedding_renorm_(weight, input.contiguous(), float(max_norm), float(norm_type))
    return _C.embedding(weight, input, padding_idx, scale_grad_by_freq)


def _embedding_bag_batched(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode,
                           sparse, per_sample_weights, include_last_offset, padding_idx):
    """``embedding_bag`` under vmap, for 2-D (bags, length) inputs: the samples' bags are
    one call; with a per-sample weight each sample's indices are offset to its own rows of
    one table of batch x rows (as ``embedding``'s batching rule does)."""
    from ...func import _batched as b

    lid = b.max_level((input, weight, offsets, per_sample_weights))
    size = b.batch_size_of((input, weight, offsets, per_sample_weights), lid)
    vw = b.unwrap_at(weight, lid)
    if offsets is not None or padding_idx is not None or max_norm is not None or (
        vw is not None and scale_grad_by_freq
    ):
        raise RuntimeError(
            "vmap: embedding_bag supports 2-D (bags, length) inputs without offsets, "
            "padding_idx or max_norm (and scale_grad_by_freq only with a shared weight)"
        )
    idx = b.materialize(input, lid, size)
    if idx.dim() != 3:
        raise RuntimeError("vmap: embedding_bag supports per-sample inputs of 2 dimensions")
    bags = idx.shape[1]
    table = weight
    if vw is not None:
        rows = vw.shape[1]
        idx = idx + _C.arange(size, dtype=idx.dtype).mul(rows).reshape(size, 1, 1)
        table = vw.reshape(size * rows, vw.shape[2])
    psw = per_sample_weights
    if psw is not None:
        psw = b.materialize(psw, lid, size).reshape(size * bags, -1)
    out = embedding_bag(idx.reshape(size * bags, -1), table, None, None, norm_type,
                        scale_grad_by_freq, mode, sparse, psw, include_last_offset, None)
    return b.wrap(out.reshape(size, bags, out.shape[-1]), lid)


@tensor_args(
    "input",
    "weight",
    optional=(
        "offsets",
        "per_sample_weights",
    ),
)
@replayed("embedding_bag")
def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, averages or takes the maximum of bags of embeddings, without materialising the
    rows of each bag.

    A 2-d ``input`` is one bag per row; a 1-d ``input`` is cut into bags at
    ``offsets``.

    Args:
        input (Tensor): int64 indices, ``(B, n)`` (``B`` bags of ``n``) or ``(n,)``
            with ``offsets``.
        weight (Tensor): ``(num_embeddings, embedding_dim)``, the table.
        offsets (Tensor, optional): int64 ``(B,)`` start of each bag in a 1-d
            ``input``. Default: ``None``.
        max_norm (float, optional): as in :func:`embedding`. Default: ``None``.
        norm_type (float): the ``p`` of the ``max_norm`` norm. Default: ``2``.
        scale_grad_by_freq (bool): as in :func:`embedding`. Default: ``False``.
        mode (str): ``'sum'``, ``'mean'`` or ``'max'``. Default: ``'mean'``.
        sparse (bool): sparse gradients; not supported. Default: ``False``.
        per_sample_weights (Tensor, optional): ``input``'s shape; scales each row
            before summing (``mode='sum'`` only). Default: ``None``.
        include_last_offset (bool): ``offsets`` has one more entry, the end of the
            last bag. Default: ``False``.
        padding_idx (int, optional): entries of this index are left out of their bag
            (and of a mean's count). Default: ``None``.

    Shape:
        - Output: ``(B, embedding_dim)``; an empty bag gives zeros.

    Returns:
        Tensor: one row per bag.

    Example::

        >>> table = torch.arange(6.0).reshape(3, 2)
        >>> F.embedding_bag(torch.tensor([0, 2, 1]), table, torch.tensor([0, 2]), mode="sum")
        tensor([[4., 6.],
                [2., 3.]])
        >>> F.embedding_bag(torch.tensor([[0, 1], [2, 2]]), table)
        tensor([[1., 2.],
                [4., 5.]])
    """
    import numpy as np

    if _dispatch.is_batched(input, weight, offsets, per_sample_weights):
        return _embedding_bag_batched(input, weight, offsets, max_norm, norm_type,
                                      scale_grad_by_freq, mode, sparse, per_sample_weights,
                                      include_last_offset, padding_idx)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not "
            f"None, then it must have the same shape as the input ({tuple(input.shape)})"
        )
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        b, length = input.shape
        if b and length and padding_idx is None and (per_sample_weights is None or mode == "sum"):
            # Every bag is a full row of the (B, n, d) embeddings: one reduction over
            # the rows, no bag bookkeeping. The sum adds each bag's rows in order, as
            # the scatter below does, so the values are the same.
            if (mode != "max" and per_sample_weights is None and not scale_grad_by_freq
                    and input.dtype == _C.int64 and weight.is_floating_point()
                    and not (input.is_meta or weight.is_meta)):
                # Gathered and summed in one pass, no (B, n, d) tensor between.
                if max_norm is not None:
                    with no_grad():
                        _C.embedding_renorm_(
                            weight, input.contiguous(), float(max_norm), float(norm_type)
                        )
                out = _C._embedding_bag_sum(weight, input)
                return out / length if mode == "mean" else out
            rows = embedding(input, weight, None, max_norm, norm_type, scale_grad_by_freq)
            if mode == "max":
                return _C.amax(rows, 1)
            if per_sample_weights is not None:
                rows = rows * per_sample_weights.unsqueeze(2)
            out = rows.sum(1)
            return out / length if mode == "mean" else out
        starts = (
            np.arange(0, b * length, length, dtype=np.int64) if length else np.zeros(b, np.int64)
        )
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = offsets.numpy().astype(np.int64)
        if include_last_offset:
            starts = starts[:-1]
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
            "on GitHub."
        )
    n = input.numel()
    nbags = len(starts)
    if nbags and (starts[0] != 0 or np.any(np.diff(starts) < 0) or starts[-1] > n):
        raise ValueError("offsets must start at 0 and be non-decreasing within the input")
    padding_idx = _padding_idx(padding_idx, weight.size(0))
    rows = embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    idx = input.numpy()
    bag = (np.searchsorted(starts, np.arange(n), side="right") - 1).astype(np.int64)
    keep = np.ones(n, bool) if padding_idx is None else idx != padding_idx
    d = weight.size(1)
    if mode == "max":
        parts = []
        ends = list(starts[1:]) + [n]
        for s, e in zip(starts, ends):
            sel = np.nonzero(keep[s:e])[0] + s
            if len(sel) == 0:
                parts.append(_C.zeros(d, dtype=weight.dtype))
            else:
                picked = rows.index_select(0, _C.tensor(sel.astype(np.int64)))
                parts.append(_C.amax(picked, 0))
        return _C.stack(parts) if parts else _C.zeros(0, d, dtype=weight.dtype)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    if padding_idx is not None:
        rows = rows * _C.tensor(keep.astype(np.float64), dtype=weight.dtype).unsqueeze(1)
    index = _C.tensor(bag).unsqueeze(1).expand(n, d)
    out = _C.scatter_add(_C.zeros(nbags, d, dtype=weight.dtype), 0, index, rows)
    if mode == "mean":
        count = np.bincount(bag[keep], minlength=nbags).astype(np.float64)
        out = out / _C.tensor(np.maximum(count, 1.0), dtype=weight.dtype).unsqueeze(1)
    return out


@replayed("one_hot", data_dependent_if=lambda tensor, num_classes=-1: num_classes == -1)
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """One-hot encoding: an int64 tensor with a 1 at each class index and 0 elsewhere.

    Args:
        tensor (Tensor): int64 class indices, of any shape, non-negative.
        num_classes (int): the number of classes; ``-1`` uses one more than the
            largest value. Default: ``-1``.

    Shape:
        - Input: ``(*)``.
        - Output: ``(*, num_classes)``.

    Returns:
        Tensor: the int64 encoding.

    Example::

        >>> F.one_hot(torch.tensor([0, 2, 1]))
        tensor([[1, 0, 0],
                [0, 0, 1],
                [0, 1, 0]])
        >>> F.one_hot(torch.tensor([1]), num_classes=4)
        tensor([[0, 1, 0, 0]])
    """
    if not isinstance(tensor, _C.Tensor) or tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    shape = tuple(tensor.shape)
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _C.zeros(*shape, num_classes, dtype=_C.int64)
    if int(tensor.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(tensor.max()) + 1
    elif int(tensor.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    # The ones written in place at (row, class) pairs: a scatter would copy
    # the whole table of zeros twice.
    n = tensor.numel()
    out = _C.zeros(n, num_classes, dtype=_C.int64)
    out.index_put_((_C.arange(n), tensor.reshape(-1)), _C.tensor(1))
    return out.view(*shape, num_classes)
