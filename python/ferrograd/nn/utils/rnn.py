"""Variable-length sequences: ``PackedSequence`` and padding/packing helpers, as in
``torch.nn.utils.rnn``."""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

from ... import _C

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from typing_extensions import Self

    from ..._C import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]

_PackedSequenceBase = namedtuple(
    "PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"]
)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation``: ``inv[permutation[i]] = i``.

    Args:
        permutation (Tensor or None): a 1-d int64 permutation of ``0..n-1``.

    Returns:
        Tensor or None: the inverse (``None`` for ``None``).

    Example::

        >>> nn.utils.rnn.invert_permutation(torch.tensor([2, 0, 1]))
        tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    perm = [int(i) for i in permutation.tolist()]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _C.tensor(inverse, dtype=_C.int64)


class PackedSequence(_PackedSequenceBase):
    """A batch of sequences of different lengths, stored time step by time step, that the
    recurrent layers (:class:`~ferrograd.nn.RNN`, :class:`~ferrograd.nn.LSTM`,
    :class:`~ferrograd.nn.GRU`) run without computing the padding.

    ``data`` holds the rows of step 0 of every sequence, then those of step 1 of the
    sequences still running, and so on; ``batch_sizes[t]`` counts the rows of step
    ``t``. The sequences are ordered by decreasing length; ``sorted_indices`` maps that
    order to the caller's batch and ``unsorted_indices`` back (``None`` when the input
    was already sorted). Build one with :func:`pack_padded_sequence` or
    :func:`pack_sequence` rather than by hand; it is a named tuple of these four
    fields.

    Args:
        data (Tensor): ``(sum of lengths, *)``, the packed rows (or a
            ``(data, batch_sizes)`` pair, as PyTorch accepts).
        batch_sizes (Tensor, optional): int64 ``(max length,)``. Default: ``None``.
        sorted_indices (Tensor, optional): int64 ``(B,)``. Default: ``None``.
        unsorted_indices (Tensor, optional): its inverse, computed when ``None``.
            Default: ``None``.

    Example::

        >>> seqs = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 5.0])]
        >>> packed = nn.utils.rnn.pack_sequence(seqs)
        >>> packed.data, packed.batch_sizes
        (tensor([1., 4., 2., 5., 3.]), tensor([2, 2, 1]))
        >>> steps = nn.utils.rnn.pack_sequence([torch.ones(3, 1), torch.ones(2, 1)])
        >>> out, h = nn.RNN(1, 4)(steps)
        >>> out.data.shape, out.batch_sizes, h.shape
        (ferrograd.Size([5, 4]), tensor([2, 2, 1]), ferrograd.Size([1, 2, 4]))
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        # PyTorch accepts (data, batch_sizes) as one tuple in the first argument.
        data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """The same packing with ``data`` converted (``to(dtype)``); indices unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def float(self) -> Self:
        return self.to(_C.float32)

    def double(self) -> Self:
        return self.to(_C.float64)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self) -> bool:
        return False


def _lengths_list(lengths):
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(
                f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D"
            )
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(
    input: Tensor,
    lengths: Tensor | Sequence[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Packs a padded batch of sequences into a :class:`PackedSequence`.

    Args:
        input (Tensor): ``(T, B, *)``, or ``(B, T, *)`` with ``batch_first``; sequence
            ``b`` has ``lengths[b]`` valid steps, the rest is padding.
        lengths (Tensor or list of int): ``(B,)``, each sequence's length, positive
            and at most ``T``.
        batch_first (bool): ``input`` is ``(B, T, *)``. Default: ``False``.
        enforce_sorted (bool): require non-increasing ``lengths``; with ``False`` the
            batch is sorted and the permutation kept in the result. Default: ``True``.

    Returns:
        PackedSequence: the packed batch.

    Raises:
        RuntimeError: for unsorted lengths with ``enforce_sorted``, a non-positive
            length or one longer than ``T``.

    Example::

        >>> padded = torch.tensor([[1.0, 4.0], [2.0, 5.0], [3.0, 0.0]])
        >>> packed = nn.utils.rnn.pack_padded_sequence(padded, [3, 2])
        >>> packed.data, packed.batch_sizes
        (tensor([1., 4., 2., 5., 3.]), tensor([2, 2, 1]))
        >>> nn.utils.rnn.pack_padded_sequence(padded.T, [2, 3], batch_first=True,
        ...                                   enforce_sorted=False).sorted_indices
        tensor([1, 0])
    """
    lens = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        sorted_indices = None
        order = list(range(len(lens)))
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
        sorted_indices = _C.tensor(order, dtype=_C.int64)
    if input.dim() < 2:
        raise RuntimeError(f"input must have at least 2 dimensions, got {input.dim()}")
    batch = input.shape[batch_dim]
    if len(lens) != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
            f"(batch_size={batch})"
        )
    lens = [lens[i] for i in order]
    if batch == 0 or lens[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    steps = input.shape[1 - batch_dim]
    if lens[0] > steps:
        raise RuntimeError(
            f"Expected all lengths to be at most the sequence length {steps}, but got {lens[0]}"
        )
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    # Row t * batch + b of the time-major flattening, for each (t, b) still running, with b
    # counted in the caller's order.
    rows = [t * batch + order[b] for t, bs in enumerate(batch_sizes) for b in range(bs)]
    time_major = input.transpose(0, 1) if batch_first else input
    flat = time_major.reshape(steps * batch, *time_major.shape[2:])
    data = flat.index_select(0, _C.tensor(rows, dtype=_C.int64))
    return PackedSequence(data, _C.tensor(batch_sizes, dtype=_C.int64), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Unpacks a :class:`PackedSequence` into a padded batch, in the caller's batch order: the
    inverse of :func:`pack_padded_sequence`.

    Args:
        sequence (PackedSequence): the packed batch.
        batch_first (bool): return ``(B, T, *)`` instead of ``(T, B, *)``.
            Default: ``False``.
        padding_value (float): the value of the padding. Default: ``0.0``.
        total_length (int, optional): pad to this many steps (at least the longest
            length), e.g. to restore the original ``T``. Default: ``None``.

    Returns:
        tuple: ``(padded, lengths)``, ``lengths`` an int64 ``(B,)`` tensor.

    Example::

        >>> seqs = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 5.0])]
        >>> packed = nn.utils.rnn.pack_sequence(seqs)
        >>> nn.utils.rnn.pad_packed_sequence(packed, batch_first=True, padding_value=-1.0)
        (tensor([[ 1.,  2.,  3.],
                [ 4.,  5., -1.]]), tensor([3, 2]))
    """
    data, batch_sizes_t, sorted_indices, unsorted_indices = sequence
    batch_sizes = [int(b) for b in batch_sizes_t.tolist()]
    steps, batch = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
    else:
        total_length = steps
    tail = tuple(data.shape[1:])
    pad_row = _C.full((1, *tail), padding_value, dtype=data.dtype)
    extended = _C.cat([data, pad_row], 0)
    pad_index = data.shape[0]
    rows, offset = [], 0
    for t in range(total_length):
        bs = batch_sizes[t] if t < steps else 0
        rows.extend(offset + b if b < bs else pad_index for b in range(batch))
        offset += bs
    padded = extended.index_select(0, _C.tensor(rows, dtype=_C.int64))
    padded = padded.reshape(total_length, batch, *tail)
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(batch)]
    if unsorted_indices is not None:
        padded = padded.index_select(1, unsorted_indices)
        lengths = [lengths[int(i)] for i in unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _C.tensor(lengths, dtype=_C.int64)


def pad_sequence(
    sequences: Tensor | Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stacks tensors of different lengths into one padded batch.

    Args:
        sequences (list of Tensors): ``(L_i, *)`` each, the same trailing shape.
        batch_first (bool): return ``(B, max L, *)`` instead of ``(max L, B, *)``.
            Default: ``False``.
        padding_value (float): the value of the padding. Default: ``0.0``.
        padding_side (str): ``'right'`` (pad after) or ``'left'``. Default: ``'right'``.

    Returns:
        Tensor: ``(max L, B, *)`` or ``(B, max L, *)``.

    Example::

        >>> seqs = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0])]
        >>> nn.utils.rnn.pad_sequence(seqs, batch_first=True)
        tensor([[1., 2., 3.],
                [4., 0., 0.]])
        >>> nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_side="left")
        tensor([[1., 2., 3.],
                [0., 0., 4.]])
    """
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    tail = tuple(sequences[0].shape[1:])
    padded = []
    for s in sequences:
        if tuple(s.shape[1:]) != tail:
            raise RuntimeError(
                "The size of tensor a must match the size of tensor b at non-singleton "
                f"dimension: got trailing sizes {list(tail)} and {list(s.shape[1:])}"
            )
        extra = longest - s.shape[0]
        if extra:
            pad = _C.full((extra, *tail), padding_value, dtype=s.dtype)
            s = _C.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return _C.stack(padded, 0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor,
    lengths: Tensor,
    batch_first: bool = False,
) -> list[Tensor]:
    """Splits a padded batch back into a list of tensors of the given lengths, the inverse of
    :func:`pad_sequence`.

    Args:
        padded_sequences (Tensor): ``(T, B, *)``, or ``(B, T, *)`` with
            ``batch_first``.
        lengths (Tensor or list of int): ``(B,)``, each sequence's length.
        batch_first (bool): the batch dimension comes first. Default: ``False``.

    Returns:
        list of Tensors: ``(lengths[b], *)`` each.

    Example::

        >>> padded = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
        >>> nn.utils.rnn.unpad_sequence(padded, torch.tensor([3, 1]), batch_first=True)
        [tensor([1., 2., 3.]), tensor([4.])]
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [
        seq.narrow(0, 0, n) for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))
    ]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of tensors of different lengths into a :class:`PackedSequence`
    (:func:`pad_sequence` then :func:`pack_padded_sequence`).

    Args:
        sequences (list of Tensors): ``(L_i, *)`` each.
        enforce_sorted (bool): require decreasing lengths; with ``False`` any order
            is accepted. Default: ``True``.

    Returns:
        PackedSequence: the packed batch.

    Example::

        >>> seqs = [torch.tensor([1.0]), torch.tensor([2.0, 3.0])]
        >>> nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False).data
        tensor([2., 1., 3.])
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of tensors a :class:`PackedSequence` was built from, in the caller's order: the
    inverse of :func:`pack_sequence`.

    Args:
        packed_sequences (PackedSequence): the packed batch.

    Returns:
        list of Tensors: ``(L_i, *)`` each.

    Example::

        >>> seqs = [torch.tensor([1.0]), torch.tensor([2.0, 3.0])]
        >>> packed = nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
        >>> nn.utils.rnn.unpack_sequence(packed)
        [tensor([1.]), tensor([2., 3.])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
