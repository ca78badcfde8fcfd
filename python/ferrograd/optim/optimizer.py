"""The ``Optimizer`` base class: parameter groups, per-parameter state,
state dicts and step hooks, with PyTorch's semantics and error texts."""

from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import TYPE_CHECKING, Any, Callable, overload

from .. import _C
from .._C import Tensor
from ..autograd.grad_mode import no_grad

if TYPE_CHECKING:
    from typing import TypeVar

    from .._typing import ParamsT

    _T = TypeVar("_T")

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton marking a hyper-parameter a group must specify."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_post_hooks: OrderedDict[int, Callable] = OrderedDict()
_hook_ids = iter(range(1 << 62))


class _RemovableHandle:
    """Removes a hook from the dict it was registered in (also as a context manager)."""

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = next(_hook_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> _RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_optimizer_step_pre_hook(hook: Callable) -> _RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)`` to run before every optimizer's step."""
    handle = _RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> _RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)`` to run after every optimizer's step."""
    handle = _RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def _typename(obj: Any) -> str:
    # torch.typename's spelling, which the error texts use.
    if isinstance(obj, Tensor):
        return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
                "int64": "torch.LongTensor", "bool": "torch.BoolTensor"}.get(
            str(obj.dtype).rsplit(".", 1)[-1], "torch.Tensor")
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def _wrap_step(step: Callable) -> Callable:
    """Runs the global and per-optimizer pre/post hooks around ``step``."""

    def hooked(self, args, kwargs):
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
        out = step(self, *args, **kwargs)
        self._opt_called = True
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if _C._capture_active():
            # Recorded as one Python call that each replay makes again; the call
            # runs the hooked step itself, not this wrapper (which would record again).
            from .._compile import _optimizer_step

            closure = args[0] if args else kwargs.get("closure")
            return _optimizer_step(self, lambda: hooked(self, args, kwargs), closure is not None)
        return hooked(self, args, kwargs)

    wrapper._wrapped_by_optimizer = True  # type: ignore[attr-defined]
    return wrapper


class Optimizer:
    """Base class of all optimizers: holds ``param_groups`` (each a dict with
    ``'params'`` and that group's hyper-parameters, missing ones filled from
    ``defaults``) and ``state`` (a dict of per-parameter state keyed by the
    parameter tensor). Subclasses implement ``step``; ``state_dict`` and
    ``load_state_dict`` use PyTorch's layout, so a reloaded optimizer
    continues exactly as the original would."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_wrapped_by_optimizer", False):
            cls.step = _wrap_step(step)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors "
                f"or dicts, but got {_typename(params)}"
            )
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ----- groups ------------------------------------------------------------

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters with its own hyper-parameters (those it
        leaves out take the optimizer's defaults), e.g. to unfreeze layers
        while training."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a "
                "list instead."
            )
        else:
            param_group["params"] = list(params)
        names = []
        tensors = []
        for p in param_group["params"]:
            if isinstance(p, tuple) and len(p) == 2:
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        if names:
            if len(names) != len(tensors):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param "
                    "names are missing"
                )
            param_group["param_names"] = names
        param_group["params"] = tensors
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + _typename(p)
                )
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            import warnings

            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in "
                "future, this will cause an error; see "
                "github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ----- hooks -------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)`` to run before ``step``; it
        may return ``(new_args, new_kwargs)`` to replace the arguments."""
        handle = _RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> _RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)`` to run after ``step``."""
        handle = _RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        """Registers ``hook(optimizer)`` to run before ``state_dict``."""
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        """Registers ``hook(optimizer, state_dict)`` to run after ``state_dict``; it may return a new dict."""
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        """Registers ``hook(optimizer, state_dict)`` to run before ``load_state_dict``; it may return a new dict."""
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _RemovableHandle:
        """Registers ``hook(optimizer)`` to run after ``load_state_dict``."""
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    @staticmethod
    def _add_hook(hooks: OrderedDict, hook: Callable, prepend: bool) -> _RemovableHandle:
        handle = _RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    # ----- gradients and steps -----------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets every parameter's gradient: to None (the default, which
        saves memory and lets ``step`` skip parameters that got none) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    @overload
    def step(self, closure: None = None) -> None: ...
    @overload
    def step(self, closure: Callable[[], _T]) -> _T: ...
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one optimization step (re-evaluating the loss with
        ``closure`` first when given)."""
        raise NotImplementedError

    # ----- state dicts -------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state as ``{'state': {index: {...}}, 'param_groups':
        [{..., 'params': [indices]}]}``: parameters are numbered in the order
        the groups list them. State tensors are the live ones (copy them to
        keep a snapshot), as in PyTorch."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {
            (mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        out = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, out)
            if result is not None:
                out = result
        return out

    @staticmethod
    def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
        if isinstance(value, Tensor):
            # 'step' keeps its own dtype; buffers take the parameter's.
            if key == "step" or not param.is_floating_point():
                return value.contiguous()
            return value.to(param.dtype).contiguous()
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast_state(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a ``state_dict()`` of an optimizer over parameters of the same
        shapes in the same group layout. State tensors are cast to their
        parameter's dtype; the groups' hyper-parameters are replaced by the
        saved ones. Nothing changes if the layout does not match."""
        state_dict = dict(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size "
                "of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast_state(param, v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
            return new

        self.__setstate__(
            {
                "state": state,
                "param_groups": [update_group(g, n) for g, n in zip(groups, saved_groups)],
            }
        )
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "defaults": self.defaults,
            "state": self.state,
            "param_groups": self.param_groups,
        }

    # Group keys a subclass added after older pickles were written, with the
    # value such a group gets when it is loaded.
    _group_defaults: dict[str, Any] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for group in self.__dict__.get("param_groups", ()):
            for key, value in self._group_defaults.items():
                group.setdefault(key, value)
        for name in (
            "_optimizer_step_pre_hooks",
            "_optimizer_step_post_hooks",
            "_optimizer_state_dict_pre_hooks",
            "_optimizer_state_dict_post_hooks",
            "_optimizer_load_state_dict_pre_hooks",
            "_optimizer_load_state_dict_post_hooks",
        ):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())

    def __repr__(self) -> str:
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        s += ")"
        return s

    # ----- helpers for subclasses --------------------------------------------

    @staticmethod
    def _check_unsupported(group: dict[str, Any]) -> None:
        if group.get("differentiable"):
            raise RuntimeError("ferrograd optimizers do not support differentiable=True")
        if group.get("capturable"):
            raise RuntimeError("capturable=True needs CUDA graphs, which ferrograd does not have")

    @staticmethod
    def _run(rule: str, rows: list[list[Tensor]], hyper: dict[str, Any],
             per: list[list[float]]) -> None:
        """One fused multi-tensor call into Rust for a group's parameters.

        The kernel needs contiguous memory that nothing else in the call shares;
        a non-contiguous parameter is updated through a contiguous copy, a
        non-contiguous gradient is read from one, and if memory is still shared
        (a gradient aliasing a parameter), each row runs alone on a cloned
        gradient, as PyTorch's per-tensor loop would see it."""
        if not rows:
            return
        writeback = []
        for i, row in enumerate(rows):
            if not row[1].is_contiguous():
                row[1] = row[1].contiguous()
            if not row[0].is_contiguous():
                writeback.append((i, row[0]))
                row[0] = row[0].detach().contiguous()
        try:
            _C._foreach_optim(rule, rows, hyper, per)
        except RuntimeError as e:
            if "share memory" not in str(e):
                raise
            for row, scalars in zip(rows, per):
                _C._foreach_optim(rule, [[row[0], row[1].clone(), *row[2:]]], hyper, [scalars])
        if writeback:
            with no_grad():
                for i, p in writeback:
                    p.copy_(rows[i][0])
