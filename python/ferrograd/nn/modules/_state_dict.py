"""``state_dict`` and ``load_state_dict`` of ``Module``, with their hooks and the
load plan that leaves a module untouched when a load fails."""

from __future__ import annotations

import functools
import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ... import _C
from ..._size import Size
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, is_lazy
from ._hooks import RemovableHandle

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__: list[str] = []

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _LoadPlan:
    """The copies ``load_state_dict`` will make once every key has been checked,
    so a failing load leaves the module as it was."""

    def __init__(self):
        self.actions = []

    # Pickling and deepcopy keep the Parameter type and requires_grad; as in
    # PyTorch, neither carries .grad or hooks, and deepcopy's memo keeps one
    # Parameter shared by two modules shared in the copy.
    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _StateDictMixin:
    """The state-dict half of ``Module``."""

    def get_extra_state(self) -> Any:
        """Override with ``set_extra_state`` to save non-tensor state in ``state_dict``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug."
        )

    def set_extra_state(self, state: Any) -> None:
        """Receives what ``get_extra_state`` returned, on ``load_state_dict``."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug."
        )

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).get_extra_state is not _StateDictMixin.get_extra_state:
            destination[extra_state_key] = self.get_extra_state()

    def state_dict(
        self,
        *args: Any,
        destination: dict[str, Any] | None = None,
        prefix: str = "",
        keep_vars: bool = False,
    ) -> dict[str, Any]:
        """An ``OrderedDict`` of every parameter and persistent buffer under its
        dotted name, detached unless ``keep_vars`` (tied weights appear under
        every name)."""
        if args:
            # PyTorch's deprecated positional form state_dict(destination, prefix, keep_vars).
            if len(args) > 3:
                raise TypeError(
                    f"state_dict() takes from 1 to 4 positional arguments but {len(args) + 1} "
                    "were given"
                )
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if hook_result is not None:
                destination = hook_result
        return destination

    def _load_from_state_dict(
        self,
        state_dict,
        prefix,
        local_metadata,
        strict,
        missing_keys,
        unexpected_keys,
        error_msgs,
    ):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(
                state_dict,
                prefix,
                local_metadata,
                strict,
                missing_keys,
                unexpected_keys,
                error_msgs,
            )
        persistent_buffers = {
            k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set
        }
        local_name_params = itertools.chain(self._parameters.items(), persistent_buffers.items())
        local_state = {k: v for k, v in local_name_params if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        plan = local_metadata.get("_ferrograd_load_plan")

        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, _C.Tensor) and not getattr(
                    input_param, "is_meta", False
                ):
                    error_msgs.append(
                        f'While copying the parameter named "{key}", '
                        "expected ferrograd.Tensor or Tensor-like object from checkpoint but "
                        f"received {type(input_param)}"
                    )
                    continue
                # An uninitialized (lazy) parameter has no shape to compare yet.
                is_param_lazy = is_lazy(param)
                # Checkpoints of PyTorch 0.3 stored scalars as one-element vectors.
                if not is_param_lazy and len(param.shape) == 0 and len(input_param.shape) == 1:
                    input_param = input_param[0]
                if not is_param_lazy and input_param.shape != param.shape:
                    error_msgs.append(
                        f"size mismatch for {key}: copying a param with shape "
                        f"{_torch_size(input_param.shape)} from checkpoint, "
                        f"the shape in current model is {_torch_size(param.shape)}."
                    )
                    continue
                action = _LoadAction(self, name, key, param, input_param, assign)
                if plan is not None:
                    plan.actions.append(action)
                else:
                    try:
                        action.apply()
                    except Exception as ex:
                        error_msgs.append(_copy_error(key, param, input_param, ex))
            elif strict:
                missing_keys.append(key)

        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not _StateDictMixin.set_extra_state:
            if extra_state_key in state_dict:
                value = state_dict[extra_state_key]
                if plan is not None:
                    plan.actions.append(_ExtraStateAction(self, value))
                else:
                    self.set_extra_state(value)
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and (extra_state_key in state_dict):
            unexpected_keys.append(extra_state_key)

        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix) :].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def _raise_load_errors(self, strict, missing_keys, unexpected_keys, error_msgs):
        error_msgs = list(error_msgs)
        if strict:
            if len(unexpected_keys) > 0:
                error_msgs.insert(
                    0,
                    "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected_keys)
                    ),
                )
            if len(missing_keys) > 0:
                error_msgs.insert(
                    0,
                    "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing_keys)
                    ),
                )
        raise RuntimeError(
            "Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)
            )
        )

    def load_state_dict(
        self,
        state_dict: Mapping[str, Any],
        strict: bool = True,
        assign: bool = False,
    ) -> _IncompatibleKeys:
        """Copies ``state_dict``'s tensors into the parameters and buffers, in
        place under ``no_grad`` (optimizers holding the parameters keep working),
        or assigns them with ``assign=True``. Returns ``(missing_keys,
        unexpected_keys)``; with ``strict`` a missing or unexpected key raises,
        and a wrong shape always does. Every key is checked before anything is
        copied, so a load that raises leaves the module unchanged."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys = []
        unexpected_keys = []
        error_msgs = []
        plan = _LoadPlan()
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        post_hooks = []

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            local_metadata["_ferrograd_load_plan"] = plan
            module._load_from_state_dict(
                local_state_dict,
                prefix,
                local_metadata,
                True,
                missing_keys,
                unexpected_keys,
                error_msgs,
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {
                        k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)
                    }
                    load(child, child_state_dict, child_prefix)
            post_hooks.append(module)

        load(self, state_dict)
        # `load` calls itself through its closure, a reference cycle that would keep the
        # state dict's tensors alive until the cyclic collector runs.
        load = None
        _check_castable(plan, error_msgs)
        if error_msgs:
            # Shape, type or conversion errors: raised whatever ``strict`` is
            # (with the key errors first, as PyTorch orders them).
            self._raise_load_errors(strict, missing_keys, unexpected_keys, error_msgs)

        hooked = [m for m in post_hooks if m._load_state_dict_post_hooks]
        if not hooked:
            if strict and (missing_keys or unexpected_keys):
                self._raise_load_errors(strict, missing_keys, unexpected_keys, error_msgs)
            for action in plan.actions:
                action.apply()
            return _IncompatibleKeys(missing_keys, unexpected_keys)

        # Post-hooks run on the loaded module and may clear or add keys in
        # place, which decides a strict load's errors; a load they leave
        # failing is rolled back.
        undo = [action.snapshot() for action in plan.actions]
        for action in plan.actions:
            action.apply()
        incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
        try:
            for module in hooked:
                for hook in module._load_state_dict_post_hooks.values():
                    out = hook(module, incompatible_keys)
                    if out is not None:
                        raise AssertionError(
                            "Hooks registered with ``register_load_state_dict_post_hook`` are "
                            "not expected to return new values, if incompatible_keys need to be "
                            "modified, it should be done inplace."
                        )
            if strict and (missing_keys or unexpected_keys):
                self._raise_load_errors(strict, missing_keys, unexpected_keys, error_msgs)
        except BaseException:
            for restore in reversed(undo):
                restore()
            raise
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def register_state_dict_pre_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this
        module is saved; it may edit ``state_dict`` in place."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads; it may
        rename keys of ``state_dict`` in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (
            functools.partial(hook, self) if with_module else hook
        )
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict``;
        it may clear entries of the key lists in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle


def _torch_size(shape):
    # PyTorch prints ``torch.Size([3, 4])`` in these messages; ours names ferrograd's Size.
    return repr(Size(shape))


class _LoadAction:
    """One tensor of a ``load_state_dict``: checked first, applied later."""

    def __init__(self, module, name, key, param, input_param, assign):
        self.module, self.name, self.key = module, name, key
        self.param, self.input_param, self.assign = param, input_param, assign

    def apply(self):
        param, input_param = self.param, self.input_param
        with no_grad():
            if self.assign:
                if isinstance(param, Parameter):
                    if not isinstance(input_param, Parameter):
                        input_param = Parameter(input_param, requires_grad=param.requires_grad)
                    else:
                        input_param.requires_grad_(param.requires_grad)
                setattr(self.module, self.name, input_param)
            else:
                if getattr(param, "is_meta", False) and not getattr(input_param, "is_meta", False):
                    import warnings

                    warnings.warn(
                        f"for {self.key}: copying from a non-meta parameter in the checkpoint to a "
                        "meta parameter in the current model, which is a no-op. (Did you mean to "
                        "pass `assign=True` to assign items in the state dictionary to their "
                        "corresponding key in the module instead of copying them in place?)",
                        UserWarning,
                        stacklevel=4,
                    )
                param.copy_(input_param)

    def snapshot(self):
        if self.assign:
            module, name, old = self.module, self.name, self.param
            return lambda: setattr(module, name, old)
        saved = self.param.detach().clone()
        param = self.param

        def restore():
            with no_grad():
                param.copy_(saved)

        return restore


class _ExtraStateAction:
    key = None

    def __init__(self, module, value):
        self.module, self.value = module, value

    def apply(self):
        self.module.set_extra_state(self.value)

    def snapshot(self):
        old = self.module.get_extra_state()
        return lambda: self.module.set_extra_state(old)


def _copy_error(key, param, input_param, ex):
    return (
        f'While copying the parameter named "{key}", '
        f"whose dimensions in the model are {_torch_size(param.shape)} and "
        f"whose dimensions in the checkpoint are {_torch_size(input_param.shape)}, "
        f"an exception occurred : {ex.args}."
    )


def _check_castable(plan, error_msgs):
    # The copies themselves can only fail on a dtype that will not convert;
    # try each conversion on one element before any real copy happens.
    for action in plan.actions:
        if action.key is None:
            continue
        key, param, input_param = action.key, action.param, action.input_param
        try:
            with no_grad():
                _C.empty(0, dtype=param.dtype).copy_(_C.empty(0, dtype=input_param.dtype))
        except Exception as ex:
            error_msgs.append(_copy_error(key, param, input_param, ex))
