"""``Parameter``: the tensor type a ``Module`` registers as trainable state."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from .. import _C

if TYPE_CHECKING:
    from typing_extensions import Self

    from .._C import Tensor
    from .._typing import DType

__all__ = ["Parameter"]


def _rebuild_parameter(data, requires_grad, state):
    param = Parameter(data, requires_grad)
    for name, value in state.items():
        setattr(param, name, value)
    return param


class _ParameterMeta(type(_C.Tensor)):
    # ``Parameter(meta_tensor)`` is a ``_meta.MetaParameter`` (a meta tensor is
    # no ``Tensor``); this makes ``isinstance(p, Parameter)`` hold for it, as
    # for PyTorch's parameters on the meta device.
    def __instancecheck__(cls, instance):
        if cls is Parameter and type(instance).__name__ == "MetaParameter":
            from .._meta import MetaParameter

            if isinstance(instance, MetaParameter):
                return True
        return super().__instancecheck__(instance)


class Parameter(_C.Tensor, metaclass=_ParameterMeta):
    """A tensor that a :class:`~ferrograd.nn.Module` registers as a parameter when assigned as
    one of its attributes, so ``parameters()`` (and hence optimizers) and ``state_dict()``
    see it.

    It shares ``data``'s memory, is a leaf of the autograd graph and requires
    gradients unless ``requires_grad=False``. Copies (``copy.deepcopy``, pickling)
    stay parameters. ``Parameter(t)`` of a meta tensor is a parameter on the meta device.

    Args:
        data (Tensor, optional): the values. Default: an empty tensor.
        requires_grad (bool): whether it requires gradients. Default: ``True``.

    Example::

        >>> class Scale(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.factor = nn.Parameter(torch.tensor([2.0]))
        ...     def forward(self, x):
        ...         return x * self.factor
        >>> m = Scale()
        >>> m.factor
        Parameter containing:
        tensor([2.], requires_grad=True)
        >>> [name for name, _ in m.named_parameters()]
        ['factor']
        >>> m(torch.tensor([1.0, 3.0])).sum().backward()
        >>> m.factor.grad
        tensor([4.])
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Self:
        if data is None:
            data = _C.empty(0)
        elif not isinstance(data, _C.Tensor):
            from .._meta import MetaParameter, MetaTensor

            if isinstance(data, MetaTensor):
                return MetaParameter(data.shape, data.dtype, requires_grad)
        return super().__new__(cls, data, requires_grad=requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        for name, value in self.__dict__.items():
            import copy

            setattr(result, name, copy.deepcopy(value, memo))
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (
            _rebuild_parameter,
            (self.data.detach(), self.requires_grad, OrderedDict(self.__dict__)),
        )

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


# ----- Buffer and UninitializedParameter ---------------------------------------------------------

__all__ += ["Buffer", "UninitializedParameter"]


class _BufferMeta(type(_C.Tensor)):
    # ``Buffer(t)`` returns a plain Tensor flagged ``_is_buffer``; this makes
    # ``isinstance(x, Buffer)`` recognise it, as PyTorch's metaclass does.
    def __instancecheck__(cls, instance):
        if cls is Buffer and (isinstance(instance, _C.Tensor) or _is_meta(instance)):
            if getattr(instance, "_is_buffer", False):
                return True
        return super().__instancecheck__(instance)


def _is_meta(x):
    return type(x).__name__ in ("MetaTensor", "MetaParameter") and getattr(x, "is_meta", False)


class Buffer(_C.Tensor, metaclass=_BufferMeta):
    """A tensor that a :class:`~ferrograd.nn.Module` registers as a buffer when assigned as one
    of its attributes (``self.x = nn.Buffer(t)``): state that is saved and moved with the
    module but not trained, such as running statistics.

    The result is ``data`` detached (keeping its ``requires_grad``), flagged so that
    ``isinstance(x, nn.Buffer)`` holds.

    Args:
        data (Tensor, optional): the values. Default: an empty tensor.
        persistent (bool): whether ``state_dict()`` includes it. Default: ``True``.

    Example::

        >>> m = nn.Module()
        >>> m.count = nn.Buffer(torch.zeros(1))
        >>> m.scratch = nn.Buffer(torch.zeros(2), persistent=False)
        >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
        (['count', 'scratch'], ['count'])
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Self:
        if data is None:
            data = _C.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


_UNINITIALIZED_SHAPE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
    "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
    "one. Call `forward` to initialize the parameters before accessing their attributes."
)


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet, as a lazy module's before its first forward:
    it holds no data and reading its ``shape`` raises.

    ``materialize(shape)`` gives it memory of that shape and turns the same object
    into a :class:`Parameter`, so an optimizer already holding it keeps working.

    Args:
        requires_grad (bool): whether it will require gradients. Default: ``True``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the dtype it will have. Default: the
            default dtype.

    Example::

        >>> p = nn.UninitializedParameter()
        >>> p
        <UninitializedParameter>
        >>> p.materialize((2, 3))
        >>> type(p).__name__, p.shape
        ('Parameter', ferrograd.Size([2, 3]))
    """

    cls_to_become = Parameter

    def __new__(
        cls, requires_grad: bool = True, device: object = None, dtype: DType | None = None
    ) -> Self:
        data = _C.empty(0, dtype=dtype) if dtype is not None else _C.empty(0)
        return super().__new__(cls, data, requires_grad)

    def materialize(self, shape, device=None, dtype=None):
        """Allocates ``shape`` (uninitialised values) and becomes a ``Parameter``."""
        if dtype is None:
            dtype = self.data.dtype
        if isinstance(shape, int):
            shape = (shape,)
        self.data = _C.empty(*shape, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED_SHAPE)

    def size(self, dim=None):
        """Raises: an uninitialized parameter has no shape yet."""
        raise RuntimeError(_UNINITIALIZED_SHAPE)

    def share_memory_(self):
        """Raises: there is no memory to share yet."""
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`."
        )

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.data.dtype)
        memo[id(self)] = result
        return result


def is_lazy(param):
    """Whether ``param`` is an uninitialized parameter (of a lazy module)."""
    return isinstance(param, UninitializedParameter)
