"""``ferrograd.hub``: PyTorch Hub is not available.

Hub entries are repositories of PyTorch code (``hubconf.py``) and pickled
PyTorch weights; ferrograd can run neither (it never executes code from a
download, and its own checkpoints are safetensors files). Every function
raises a ``RuntimeError`` that says so, instead of an ``AttributeError``.
Models can be rebuilt with ``ferrograd.nn`` and their weights loaded from a
safetensors file with ``ferrograd.load``.
"""

from __future__ import annotations

__all__ = [
    "download_url_to_file",
    "get_dir",
    "help",
    "list",
    "load",
    "load_state_dict_from_url",
    "set_dir",
]

_WHY = (
    "ferrograd.hub.{name}() is not supported: PyTorch Hub serves PyTorch code (hubconf.py) and "
    "pickled PyTorch weights, which ferrograd does not download or run. Build the model with "
    "ferrograd.nn and load its weights from a safetensors file (ferrograd.load), or convert a "
    "PyTorch checkpoint with safetensors.torch.save_file first."
)


def _refuse(name):
    def fn(*args, **kwargs):
        raise RuntimeError(_WHY.format(name=name))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Raises ``RuntimeError``: ``hub.{name}`` is not supported (see the module)."
    return fn


load = _refuse("load")
list = _refuse("list")  # noqa: A001 - PyTorch's name
help = _refuse("help")  # noqa: A001 - PyTorch's name
load_state_dict_from_url = _refuse("load_state_dict_from_url")
download_url_to_file = _refuse("download_url_to_file")
get_dir = _refuse("get_dir")
set_dir = _refuse("set_dir")
