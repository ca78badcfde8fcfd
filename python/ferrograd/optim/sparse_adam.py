"""SparseAdam (``optim.SparseAdam``): its arguments and errors.

ferrograd has no sparse tensors, so no gradient is ever sparse and
``step`` refuses every gradient with PyTorch's message for a dense one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, overload

from .. import _C
from ._common import _closure, _to_scalar
from .optimizer import Optimizer

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """PyTorch's masked Adam for sparse gradients (as from
    ``nn.Embedding(..., sparse=True)``). ferrograd's gradients are always
    dense, so this class checks its arguments and parameters as PyTorch does
    and ``step`` raises ``RuntimeError: SparseAdam does not support dense
    gradients, please consider Adam instead`` for any parameter with a
    gradient; use ``Adam`` (with ``nn.Embedding(..., sparse=False)``).

    Args:
        params: the parameters (or dicts defining parameter groups).
        lr: the learning rate, > 0 (default 1e-3).
        betas: the decays of the moment estimates (default (0.9, 0.999)).
        eps: added to the denominator, > 0 (default 1e-8).
        maximize: ascend the objective instead (default False).
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [
            [i, j]
            for i, group in enumerate(self.param_groups)
            for j, p in enumerate(group["params"])
            if p.is_complex()
        ]
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support "
                "complex parameters"
            )

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Raises for the first parameter with a gradient: every ferrograd gradient is dense."""
        loss = _closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError(
                        "SparseAdam does not support dense gradients, please consider Adam instead"
                    )
        return loss
