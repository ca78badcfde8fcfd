"""``Embedding`` and ``EmbeddingBag``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .._functional._args import PaddingIdxError
from .module import Module, Parameter

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import DType

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
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``: the input holds
    indices, the output the rows they pick (see :func:`~ferrograd.nn.functional.embedding`).

    :meth:`from_pretrained` builds one from an existing table.

    Args:
        num_embeddings (int): the number of rows.
        embedding_dim (int): the size of each row.
        padding_idx (int, optional): this row starts at zero and gets no gradient (a
            negative index counts from the end). Default: ``None``.
        max_norm (float, optional): each looked-up row whose ``norm_type``-norm
            exceeds it is rescaled, in place, to that norm. Default: ``None``.
        norm_type (float): the ``p`` of the ``max_norm`` norm. Default: ``2.0``.
        scale_grad_by_freq (bool): divide each row's gradient by how often its index
            occurs in the batch. Default: ``False``.
        sparse (bool): sparse gradients; not supported, must be ``False``.
            Default: ``False``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the table's dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(num_embeddings, embedding_dim)``, initialised from
            N(0, 1).

    Shape:
        - Input: ``(*)``, int64 indices.
        - Output: ``(*, embedding_dim)``.

    Note:
        ferrograd has no sparse tensors: ``sparse=True`` raises
        ``NotImplementedError`` in the forward.

    Example::

        >>> emb = nn.Embedding(10, 3, padding_idx=0)
        >>> emb(torch.tensor([[1, 2, 4], [4, 3, 0]])).shape
        ferrograd.Size([2, 3, 3])
        >>> emb.weight[0]
        tensor([0., 0., 0.], grad_fn=<SelectBackward0>)
        >>> table = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nn.Embedding.from_pretrained(table)(torch.tensor([1, 0, 1]))
        tensor([[3., 4.],
                [1., 2.],
                [3., 4.]])
    """

    num_embeddings: int
    embedding_dim: int
    padding_idx: int | None
    max_norm: float | None
    norm_type: float
    scale_grad_by_freq: bool
    weight: Tensor
    sparse: bool

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
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

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self) -> str:
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
    """Sums, averages or takes the maximum of bags of embeddings without materialising each
    bag's rows (see :func:`~ferrograd.nn.functional.embedding_bag`).

    Its ``forward(input, offsets=None, per_sample_weights=None)`` takes either a 2-d
    ``input`` (one bag per row) or a 1-d ``input`` cut into bags at ``offsets``.

    Args:
        num_embeddings (int): the number of rows.
        embedding_dim (int): the size of each row.
        max_norm (float, optional): as in :class:`Embedding`. Default: ``None``.
        norm_type (float): the ``p`` of the ``max_norm`` norm. Default: ``2.0``.
        scale_grad_by_freq (bool): as in :class:`Embedding`. Default: ``False``.
        mode (str): ``'sum'``, ``'mean'`` or ``'max'``. Default: ``'mean'``.
        sparse (bool): sparse gradients; not supported. Default: ``False``.
        include_last_offset (bool): ``offsets`` has one more entry, the end of the
            last bag. Default: ``False``.
        padding_idx (int, optional): entries of this index are left out of their bag.
            Default: ``None``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the table's dtype. Default: the default dtype.

    Attributes:
        weight (Parameter): ``(num_embeddings, embedding_dim)``, from N(0, 1).

    Shape:
        - Input: ``(B, n)``, or ``(n,)`` with ``offsets`` ``(B,)``.
        - Output: ``(B, embedding_dim)``.

    Example::

        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 4])).shape
        ferrograd.Size([2, 3])
        >>> table = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nn.EmbeddingBag.from_pretrained(table)(torch.tensor([[0, 1]]))
        tensor([[2., 3.]])
    """

    num_embeddings: int
    embedding_dim: int
    max_norm: float | None
    norm_type: float
    scale_grad_by_freq: bool
    weight: Tensor
    mode: str
    sparse: bool
    include_last_offset: bool
    padding_idx: int | None

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
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

    def forward(
        self,
        input: Tensor,
        offsets: Tensor | None = None,
        per_sample_weights: Tensor | None = None,
    ) -> Tensor:
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

    def extra_repr(self) -> str:
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
