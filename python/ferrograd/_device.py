"""``ferrograd.device``: PyTorch's device object, for the one device ferrograd has."""

from __future__ import annotations

__all__ = ["device"]

_KNOWN = ("cpu", "cuda", "mps", "xpu", "xla", "meta", "hip", "ipu", "mtia", "privateuseone")


def _no_accelerator(kind):
    return RuntimeError(
        f"ferrograd has no CUDA support: it runs on the CPU only, so device '{kind}' "
        f"cannot be used (use 'cpu', or check ferrograd.cuda.is_available(), which is False)"
    )


class device(str):  # noqa: N801 - PyTorch's name
    """A device, ``device('cpu')`` or ``device('cpu', 0)``, as ``torch.device``.

    Only the CPU exists: ``'cuda'`` (and any other accelerator) raises a
    ``RuntimeError`` saying so. The object is a ``str`` subclass equal to its
    string form (``'cpu'``), because ``Tensor.device`` and ``Tensor.to``
    speak strings; ``repr`` and the ``type``/``index`` attributes are
    PyTorch's.
    """

    def __new__(cls, type_or_str, index=None):  # noqa: A002
        if isinstance(type_or_str, device):
            if index is not None:
                raise TypeError("device(): a device object takes no index")
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            # A bare ordinal means an accelerator in PyTorch.
            raise _no_accelerator(f"cuda:{type_or_str}")
        if not isinstance(type_or_str, str):
            raise TypeError(
                f"device() received an invalid combination of arguments - got "
                f"({type(type_or_str).__name__})"
            )
        kind, _, ordinal = type_or_str.partition(":")
        if kind not in _KNOWN:
            raise RuntimeError(
                "Expected one of cpu, cuda, mps, xpu, xla, meta, hip device type at start "
                f"of device string: {type_or_str}"
            )
        if ordinal:
            if index is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed "
                    f"explicitly: {type_or_str}"
                )
            if not ordinal.isdigit():
                raise RuntimeError(f"Invalid device string: '{type_or_str}'")
            index = int(ordinal)
        if kind != "cpu":
            raise _no_accelerator(type_or_str)
        if index is not None:
            index = int(index)
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        text = kind if index is None else f"{kind}:{index}"
        self = super().__new__(cls, text)
        self._type = kind
        self._index = index
        return self

    @property
    def type(self):  # noqa: A003
        return self._type

    @property
    def index(self):
        return self._index

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __reduce__(self):
        return (device, (self._type, self._index))

    __hash__ = str.__hash__
    __eq__ = str.__eq__


def _check_cpu(fn, dev):
    """Refuses any ``device=`` argument but the CPU, naming the function."""
    if dev is None:
        return
    if not isinstance(dev, (str, int)) or isinstance(dev, bool):
        raise TypeError(
            f"{fn}(): argument 'device' must be torch.device, not {type(dev).__name__}"
        )
    device(dev)


def _tensor_cuda(self, device=None, non_blocking=False, memory_format=None):
    """Refused: ferrograd runs on the CPU only, so there is no CUDA copy to make.

    Raises the ``RuntimeError`` that ``device('cuda')`` raises, instead of the
    ``AttributeError`` a missing method would give code written for GPUs.
    """
    if device is None:
        kind = "cuda"
    elif isinstance(device, int) and not isinstance(device, bool):
        kind = f"cuda:{device}"
    else:
        kind = str(device)
    raise _no_accelerator(kind)


def _install():
    from ._C import Tensor

    _tensor_cuda.__name__ = _tensor_cuda.__qualname__ = "cuda"
    Tensor.cuda = _tensor_cuda


_install()
