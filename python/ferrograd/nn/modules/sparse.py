"""``Embedding`` and ``EmbeddingBag``."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .._functional._args import PaddingIdxError
from .module import Module, Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _check_padding(padding_idx, num_embeddings, word="Padding_idx"):
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        # Embedding's and EmbeddingBag's messages differ in case, as in PyTorch.
        raise PaddingIdxError(f"{word} must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _init_weight(self, num_embeddings, embedding_dim, _weight, _freeze, dtype):
    if _weight is None:
        self.weight = Parameter(
            _C.empty(num_embeddings, embedding_dim, dtype=dtype or _C.get_default_dtype()),
            requires_grad=not _freeze,
        )
        self.reset_parameters()
    else:
        assert list(_weight.shape) == [num_embeddings, embedding_dim], (
            "Shape of weight does not match num_embeddings and embedding_dim"
        )
        self.weight = Parameter(_weight, requires_grad=not _freeze)


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``,
    initialised from N(0, 1) with the ``padding_idx`` row zeroed."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        _weight=None,
        _freeze=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _check_padding(padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        _init_weight(self, num_embeddings, embedding_dim, _weight, _freeze, dtype)

    def reset_parameters(self):
        """Weight from N(0, 1), the padding row zero."""
        with no_grad():
            self.weight.normal_(0.0, 1.0)
            if self.padding_idx is not None:
                self.weight[self.padding_idx].fill_(0.0)

    def forward(self, input):
        return F.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        if self.sparse:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
    ):
        """An ``Embedding`` whose weight is ``embeddings`` (frozen by default)."""
        assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        return cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            _freeze=freeze,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
        )


class EmbeddingBag(Module):
    """Sums, averages or maxes bags of embeddings (see ``F.embedding_bag``)."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        # An unknown mode is refused by forward (F.embedding_bag), as in PyTorch.
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = _check_padding(padding_idx, num_embeddings, "padding_idx")
        _init_weight(self, num_embeddings, embedding_dim, _weight, False, dtype)

    def reset_parameters(self):
        """Weight from N(0, 1), the padding row zero."""
        Embedding.reset_parameters(self)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        include_last_offset=False,
        padding_idx=None,
    ):
        """An ``EmbeddingBag`` whose weight is ``embeddings`` (frozen by default)."""
        assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        bag = cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
        bag.weight.requires_grad_(not freeze)
        return bag
