"""``ferrograd.device``: PyTorch's device object, for the devices ferrograd has:
the CPU, and ``meta`` (tensors with a shape and a dtype but no data)."""

from __future__ import annotations

import threading

__all__ = ["device", "set_default_device", "get_default_device"]

_KNOWN = ("cpu", "cuda", "mps", "xpu", "xla", "meta", "hip", "ipu", "mtia", "privateuseone")


def _no_accelerator(kind):
    return RuntimeError(
        f"ferrograd has no CUDA support: it runs on the CPU only, so device '{kind}' "
        f"cannot be used (use 'cpu', or check ferrograd.cuda.is_available(), which is False)"
    )


class device(str):  # noqa: N801 - PyTorch's name
    """A device, ``device('cpu')``, ``device('cpu', 0)`` or ``device('meta')``,
    as ``torch.device``.

    The CPU holds every tensor's data; ``'meta'`` makes tensors with a shape
    and a dtype only (``ferrograd._meta``). ``'cuda'`` (and any other
    accelerator) raises a ``RuntimeError`` saying there is none. The object
    is a ``str`` subclass equal to its string form (``'cpu'``), so code that
    compares ``x.device == "cpu"`` keeps working; ``repr``, hashing, the
    ``type``/``index`` attributes and the context manager form (``with
    device("meta"):`` makes factory functions without a ``device`` argument
    create meta tensors) are PyTorch's.
    """

    def __new__(  # noqa: A002
        cls, type_or_str: str | int | device, index: int | None = None
    ) -> device:
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
        if kind not in ("cpu", "meta"):
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

    def __enter__(self):
        stack = _stack()
        stack.append(_set_default_meta(self._type == "meta"))
        return self

    def __exit__(self, *exc):
        _set_default_meta(_stack().pop())
        return False


_CPU = None  # set below, once the class exists
_local = threading.local()


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def _set_default_meta(on):
    from ._C import _default_device_meta

    return _default_device_meta(bool(on))


def set_default_device(device: str | device | None) -> None:
    """Sets the device factory functions use when given none, on this thread,
    as ``torch.set_default_device``: ``"cpu"`` (or ``None``) or ``"meta"``."""
    if device is None:
        _set_default_meta(False)
        return
    d = _device_cls(device)
    _set_default_meta(d.type == "meta")


def get_default_device() -> device:
    """The device factory functions use when given none (``device('cpu')``
    unless ``set_default_device('meta')`` or a ``with device('meta')`` block)."""
    from ._C import _default_device_meta

    return _META if _default_device_meta() else _CPU


_device_cls = device
_CPU = device("cpu")
_META = device("meta")


def _check_cpu(fn, dev):
    """Refuses any ``device=`` argument but the CPU and meta, naming the function;
    returns whether it asks for meta."""
    if dev is None:
        return False
    if not isinstance(dev, (str, int)) or isinstance(dev, bool):
        raise TypeError(
            f"{fn}(): argument 'device' must be torch.device, not {type(dev).__name__}"
        )
    return device(dev).type == "meta"


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
    from ._methods import attach

    _tensor_cuda.__name__ = _tensor_cuda.__qualname__ = "cuda"
    attach({"cuda": _tensor_cuda}, __name__, replace=True)


_install()
