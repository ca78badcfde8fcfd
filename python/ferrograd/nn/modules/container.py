"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``, with PyTorch's semantics and reprs."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import chain, islice
from typing import TYPE_CHECKING, overload

from ... import _C
from ..parameter import Parameter
from .module import Module, _addindent, typename

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from typing import Any

    from typing_extensions import Self

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


class Sequential(Module):
    """A chain of modules: ``forward`` calls each in order on the previous one's output and
    returns the last output.

    The modules are registered as children named ``"0"``, ``"1"``, ... (or by the keys
    of an ``OrderedDict``), so ``parameters()``, ``state_dict()`` and ``to()`` see
    them. It supports indexing and slicing (a slice is a new ``Sequential``),
    ``len``, iteration, ``append``, ``insert``, ``extend``, ``pop``, ``+`` and ``*``.

    Args:
        *args: the modules in order, or a single ``OrderedDict`` of named modules.

    Example::

        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> model(torch.ones(3, 4)).shape
        ferrograd.Size([3, 2])
        >>> model[0]
        Linear(in_features=4, out_features=8, bias=True)
        >>> len(model), [name for name, _ in model.named_children()]
        (3, ['0', '1', '2'])
        >>> from collections import OrderedDict
        >>> named = nn.Sequential(OrderedDict([("fc", nn.Linear(4, 2)), ("act", nn.Tanh())]))
        >>> named.fc
        Linear(in_features=4, out_features=2, bias=True)
    """

    def __init__(self, *args: Module | Mapping[str, Module]) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _get_item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        idx %= size
        return next(islice(iterator, idx, None))

    @overload
    def __getitem__(self, idx: slice) -> Self: ...
    @overload
    def __getitem__(self, idx: int) -> Module: ...
    def __getitem__(self, idx: int | slice) -> Module | Self:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx: int, module: Module) -> None:
        key = self._get_item_by_idx(self._modules.keys(), idx)
        return setattr(self, key, module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            key = self._get_item_by_idx(self._modules.keys(), idx)
            delattr(self, key)
        # Renumber so the keys stay "0".."n-1".
        str_indices = [str(i) for i in range(len(self._modules))]
        self._modules = OrderedDict(list(zip(str_indices, self._modules.values())))

    def __len__(self) -> int:
        return len(self._modules)

    def __add__(self, other: Sequential) -> Sequential:
        if isinstance(other, Sequential):
            ret = Sequential()
            for layer in self:
                ret.append(layer)
            for layer in other:
                ret.append(layer)
            return ret
        raise ValueError(
            "add operator supports only objects "
            f"of Sequential class, but {str(type(other))} is given."
        )

    def pop(self, key: int | slice) -> Module:
        """Removes and returns the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def __iadd__(self, other: Sequential) -> Self:
        if isinstance(other, Sequential):
            offset = len(self)
            for i, module in enumerate(other):
                self.add_module(str(i + offset), module)
            return self
        raise ValueError(
            "add operator supports only objects "
            f"of Sequential class, but {str(type(other))} is given."
        )

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        combined = Sequential()
        offset = 0
        for _ in range(other):
            for module in self:
                combined.add_module(str(offset), module)
                offset += 1
        return combined

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input

    def append(self, module: Module) -> Self:
        """Adds ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Self:
        """Inserts ``module`` before position ``index`` (negative counts from the end)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not (-n <= index <= n):
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential: Iterable[Module]) -> Self:
        """Appends every module of ``sequential`` (any iterable of modules)."""
        for layer in sequential:
            self.append(layer)
        return self


class ModuleList(Module):
    """A list of submodules, registered so ``parameters()``, ``state_dict()`` and ``to()`` see
    them (a plain Python list hides them from the parent module).

    It supports indexing, slicing, ``len``, iteration, ``append``, ``extend``,
    ``insert``, ``pop`` and ``+=``; it has no ``forward`` of its own.

    Args:
        modules (iterable, optional): the initial modules. Default: ``None``.

    Example::

        >>> class Stack(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        ...     def forward(self, x):
        ...         for layer in self.layers:
        ...             x = layer(x)
        ...         return x
        >>> model = Stack()
        >>> len(list(model.parameters())), model(torch.ones(2, 4)).shape
        (6, ferrograd.Size([2, 4]))
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self += modules

    def _get_abs_string_index(self, idx):
        idx = operator.index(idx)
        if not (-len(self) <= idx < len(self)):
            raise IndexError(f"index {idx} is out of range")
        if idx < 0:
            idx += len(self)
        return str(idx)

    @overload
    def __getitem__(self, idx: slice) -> Self: ...
    @overload
    def __getitem__(self, idx: int) -> Module: ...
    def __getitem__(self, idx: int | slice) -> Module | Self:
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._get_abs_string_index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        idx = self._get_abs_string_index(idx)
        return setattr(self, str(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._get_abs_string_index(idx))
        str_indices = [str(i) for i in range(len(self._modules))]
        self._modules = OrderedDict(list(zip(str_indices, self._modules.values())))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> Self:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __repr__(self):
        # Runs of identical modules print once: "(0-2): 3 x Linear(...)".
        list_of_reprs = [repr(item) for item in self]
        if len(list_of_reprs) == 0:
            return self._get_name() + "()"
        start_end_indices = [[0, 0]]
        repeated_blocks = [list_of_reprs[0]]
        for i, r in enumerate(list_of_reprs[1:], 1):
            if r == repeated_blocks[-1]:
                start_end_indices[-1][1] += 1
                continue
            start_end_indices.append([i, i])
            repeated_blocks.append(r)
        lines = []
        main_str = self._get_name() + "("
        for (start_id, end_id), b in zip(start_end_indices, repeated_blocks):
            local_repr = f"({start_id}): {b}"
            if start_id != end_id:
                n = end_id - start_id + 1
                local_repr = f"({start_id}-{end_id}): {n} x {b}"
            lines.append(_addindent(local_repr, 2))
        main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def insert(self, index: int, module: Module) -> None:
        """Inserts ``module`` before position ``index``."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> Self:
        """Adds ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int | slice) -> Module:
        """Removes and returns the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules: Iterable[Module]) -> Self:
        """Appends every module of the iterable ``modules``."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of submodules, registered so ``parameters()``, ``state_dict()`` and
    ``to()`` see them.

    It keeps insertion order and supports ``[]``, ``in``, ``len``, iteration over
    the keys, ``keys()``, ``values()``, ``items()``, ``update``, ``pop`` and
    ``clear``; it has no ``forward`` of its own.

    Args:
        modules (mapping or iterable of pairs, optional): the initial
            ``(name, module)`` entries. Default: ``None``.

    Example::

        >>> heads = nn.ModuleDict({"cls": nn.Linear(8, 3), "box": nn.Linear(8, 4)})
        >>> {name: head(torch.ones(1, 8)).shape[1] for name, head in heads.items()}
        {'cls': 3, 'box': 4}
        >>> sorted(name for name, _ in heads.named_parameters())
        ['box.bias', 'box.weight', 'cls.bias', 'cls.weight']
    """

    def __init__(
        self,
        modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None,
    ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Removes every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Removes and returns the module under ``key``."""
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Iterable[str]:
        """The names."""
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        """``(name, module)`` pairs."""
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        """The modules."""
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Adds the modules of a mapping or of an iterable of ``(name, module)`` pairs."""
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an "
                "iterable of key/value pairs, but got " + type(modules).__name__
            )
        if isinstance(modules, (OrderedDict, ModuleDict, container_abcs.Mapping)):
            for key, module in modules.items():
                self[key] = module
        else:
            for j, m in enumerate(modules):
                if not isinstance(m, container_abcs.Iterable):
                    raise TypeError(
                        "ModuleDict update sequence element "
                        "#" + str(j) + " should be Iterable; is" + type(m).__name__
                    )
                if not len(m) == 2:
                    raise ValueError(
                        "ModuleDict update sequence element "
                        "#" + str(j) + " has length " + str(len(m)) + "; 2 is required"
                    )
                self[m[0]] = m[1]


def _tensor_line(k, p, type_str):
    size_str = "x".join(str(size) for size in p.size())
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    return f"  ({k}): {kind} containing: [{type_str} of size {size_str}]"


class ParameterList(Module):
    """A list of parameters registered with the module holding it; a tensor added to it becomes
    a :class:`~ferrograd.nn.Parameter`.

    It supports indexing, ``len``, iteration, ``append``, ``extend`` and ``+=``.

    Args:
        values (iterable, optional): the initial tensors or parameters.
            Default: ``None``.

    Example::

        >>> params = nn.ParameterList([torch.ones(2), torch.zeros(3)])
        >>> [type(p).__name__ for p in params], [p.shape[0] for p in params]
        (['Parameter', 'Parameter'], [2, 3])
        >>> holder = nn.Module()
        >>> holder.params = params
        >>> [name for name, _ in holder.named_parameters()]
        ['params.0', 'params.1']
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx):
        idx = operator.index(idx)
        if not (-len(self) <= idx < len(self)):
            raise IndexError(f"index {idx} is out of range")
        if idx < 0:
            idx += len(self)
        return str(idx)

    def __getitem__(self, idx: int) -> Any:
        if isinstance(idx, slice):
            start, stop, step = idx.indices(len(self))
            out = self.__class__()
            for i in range(start, stop, step):
                out.append(self[i])
            return out
        idx = self._get_abs_string_index(idx)
        return getattr(self, str(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        # Every way of adding an entry ends here, so this is where tensors
        # are wrapped into Parameters.
        idx = self._get_abs_string_index(idx)
        if isinstance(param, _C.Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        return setattr(self, str(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> Self:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value: Any) -> Self:
        """Adds ``value`` (a tensor becomes a ``Parameter``) at the end."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> Self:
        """Appends every element of the iterable ``values``."""
        # A tensor is iterable, but is never unpacked here.
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, _C.Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                + type(values).__name__
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        child_lines = []
        for k, p in enumerate(self):
            if isinstance(p, _C.Tensor):
                child_lines.append(_tensor_line(k, p, p.dtype))
            else:
                child_lines.append("  (" + str(k) + "): Object of type: " + type(p).__name__)
        return "\n".join(child_lines)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters registered with the module holding it; a tensor added to
    it becomes a :class:`~ferrograd.nn.Parameter`.

    A plain ``dict`` is added in sorted key order, an ``OrderedDict`` (or a list of
    pairs) in its own order. It supports ``[]``, ``in``, ``len``, iteration over the
    keys, ``keys()``, ``values()``, ``items()``, ``update``, ``pop``, ``setdefault``,
    ``copy`` and ``clear``.

    Args:
        parameters (mapping or iterable of pairs, optional): the initial entries.
            Default: ``None``.

    Example::

        >>> pd = nn.ParameterDict({"scale": torch.ones(3), "shift": torch.zeros(3)})
        >>> list(pd.keys()), pd["scale"].requires_grad
        (['scale', 'shift'], True)
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key):
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is "
                f"not a string (type is '{type(key).__name__}'). Open an issue on "
                "github if you need non-string keys."
            )
        return key

    def __getitem__(self, key: str) -> Any:
        attr = self._key_to_attr(key)
        return getattr(self, attr)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, _C.Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        attr = self._key_to_attr(key)
        delattr(self, attr)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def setdefault(self, key: str, default: Any | None = None) -> Any:
        """``self[key]``, first set to ``default`` if absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Removes every entry."""
        for k in self._keys.copy():
            del self[k]

    def pop(self, key: str) -> Any:
        """Removes and returns the entry under ``key``."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Removes and returns the last ``(key, value)`` added."""
        k, _ = self._keys.popitem()
        self._keys[k] = None
        val = self[k]
        del self[k]
        return k, val

    def get(self, key: str, default: Any | None = None) -> Any | None:
        """``self[key]`` if present, else ``default``."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any | None = None) -> ParameterDict:
        """A new ParameterDict with ``keys`` all set to ``default``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> Iterable[str]:
        """The keys."""
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        """``(key, value)`` pairs."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        """The values."""
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Adds the entries of a mapping or of an iterable of ``(key, value)`` pairs."""
        if not isinstance(parameters, container_abcs.Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an "
                "iterable of key/value pairs, but got " + type(parameters).__name__
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, container_abcs.Mapping):
            for key, parameter in sorted(parameters.items()):
                self[key] = parameter
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, container_abcs.Iterable):
                    raise TypeError(
                        "ParameterDict update sequence element "
                        "#" + str(j) + " should be Iterable; is" + type(p).__name__
                    )
                if not len(p) == 2:
                    raise ValueError(
                        "ParameterDict update sequence element "
                        "#" + str(j) + " has length " + str(len(p)) + "; 2 is required"
                    )
                self[p[0]] = p[1]

    def extra_repr(self) -> str:
        child_lines = []
        for k, p in self.items():
            if isinstance(p, _C.Tensor):
                child_lines.append(_tensor_line(k, p, typename(p)))
            else:
                child_lines.append("  (" + str(k) + "): Object of type: " + type(p).__name__)
        return "\n".join(child_lines)

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other: ParameterDict) -> Self:
        self.update(other)
        return self
