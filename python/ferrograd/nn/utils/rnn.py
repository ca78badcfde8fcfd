"""Variable-length sequences: ``PackedSequence`` and padding/packing helpers, as in
``torch.nn.utils.rnn``."""

from __future__ import annotations

from collections import namedtuple

from ... import _C

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


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (a 1-D int64 tensor), or None."""
    if permutation is None:
        return None
    perm = [int(i) for i in permutation.tolist()]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _C.tensor(inverse, dtype=_C.int64)


class PackedSequence(_PackedSequenceBase):
    """A batch of sequences of different lengths stored time step by time step: ``data``
    holds the rows of step 0 for every sequence, then step 1 for those still running, and so
    on; ``batch_sizes[t]`` counts the rows of step ``t``. Sequences are ordered by decreasing
    length; ``sorted_indices`` maps that order back to the caller's batch (None when the input
    was already sorted). Build one with ``pack_padded_sequence`` or ``pack_sequence``."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        # PyTorch accepts (data, batch_sizes) as one tuple in the first argument.
        data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same packing with ``data`` converted (``to(dtype)``); indices unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def float(self):
        return self.to(_C.float32)

    def double(self):
        return self.to(_C.float64)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _lengths_list(lengths):
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(
                f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D"
            )
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch ``[T, B, *]`` (``[B, T, *]`` with ``batch_first``) whose sequence ``b`` has
    ``lengths[b]`` valid steps. With ``enforce_sorted`` the lengths must be non-increasing;
    otherwise the batch is sorted and the permutation kept in the result."""
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


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Unpacks a ``PackedSequence`` into a padded tensor ``[T, B, *]`` (``[B, T, *]`` with
    ``batch_first``) in the caller's batch order, padded with ``padding_value`` up to
    ``total_length`` steps if given; returns ``(padded, lengths)``."""
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


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors ``[L_i, *]`` into ``[max L, B, *]`` (``[B, max L, *]`` with ``batch_first``), each
    padded with ``padding_value`` on ``padding_side`` ('right' or 'left')."""
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


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Splits a padded batch back into a list of tensors of the given lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [
        seq.narrow(0, 0, n) for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))
    ]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of tensors ``[L_i, *]`` (sorted by decreasing length unless
    ``enforce_sorted=False``) into a ``PackedSequence``."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of tensors a ``PackedSequence`` was built from, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
