"""Forward and backward hooks of ``Module`` (registration and the dispatch in
``__call__``) and the global hooks every module runs."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING

from ... import _C
from ._hooks import BackwardHook, RemovableHandle

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["register_module_forward_hook", "register_module_forward_pre_hook"]


# Hooks every module runs (``register_module_forward_hook``), before its own.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook):
    """Registers ``hook(module, args)`` to run before every module's ``forward``."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, always_call=False):
    """Registers ``hook(module, args, output)`` to run after every module's ``forward``."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=_global_forward_hooks_always_called)
    _global_forward_hooks[handle.id] = hook
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


class _ModuleHooksMixin:
    """The hook half of ``Module``: ``register_*_hook`` and ``__call__``."""

    # ----- hooks and __call__ ------------------------------------------------------------

    def register_forward_pre_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
    ) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with
        ``with_kwargs``) runs before ``forward``; a non-None result replaces the
        arguments. ``prepend`` runs it before the hooks already registered."""
        handle = RemovableHandle(
            self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs
        )
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
        with ``with_kwargs``) runs after ``forward``; a non-None result replaces
        the output. ``always_call`` runs it even when ``forward`` raises."""
        handle = RemovableHandle(
            self._forward_hooks,
            extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(
        self,
        hook: Callable[..., Any],
        prepend: bool = False,
    ) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients with respect to
        the module's outputs are known; a non-None result replaces them."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(
        self,
        hook: Callable[..., Any],
        prepend: bool = False,
    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients with
        respect to the module's inputs are computed; a non-None result replaces
        ``grad_input``. Tuples hold ``None`` for non-tensor arguments."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a "
                "single Module. Please use only one of them."
            )
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """PyTorch's deprecated non-full backward hook, not supported: use
        ``register_full_backward_hook``."""
        raise NotImplementedError(
            "register_backward_hook is deprecated in PyTorch and not supported; "
            "use register_full_backward_hook"
        )

    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (
            self._backward_hooks
            or self._backward_pre_hooks
            or self._forward_hooks
            or self._forward_pre_hooks
            or _global_forward_hooks
            or _global_forward_pre_hooks
        ):
            return forward_call(*args, **kwargs)

        result = None
        called_always_called_hooks = set()
        try:
            full_backward_hooks = list(self._backward_hooks.values())
            backward_pre_hooks = list(self._backward_pre_hooks.values())

            for hook_id, hook in (
                *_global_forward_pre_hooks.items(),
                *self._forward_pre_hooks.items(),
            ):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    args_kwargs_result = hook(self, args, kwargs)
                    if args_kwargs_result is not None:
                        if isinstance(args_kwargs_result, tuple) and len(args_kwargs_result) == 2:
                            args, kwargs = args_kwargs_result
                        else:
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple "
                                f"of (new_args, new_kwargs), but got {args_kwargs_result}."
                            )
                else:
                    args_result = hook(self, args)
                    if args_result is not None:
                        if not isinstance(args_result, tuple):
                            args_result = (args_result,)
                        args = args_result

            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)

            result = forward_call(*args, **kwargs)
            for hook_id, hook in (
                *_global_forward_hooks.items(),
                *self._forward_hooks.items(),
            ):
                if (
                    hook_id in self._forward_hooks_always_called
                    or hook_id in _global_forward_hooks_always_called
                ):
                    called_always_called_hooks.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    hook_result = hook(self, args, kwargs, result)
                else:
                    hook_result = hook(self, args, result)
                if hook_result is not None:
                    result = hook_result

            if bw_hook:
                if not isinstance(result, (_C.Tensor, tuple)):
                    warnings.warn(
                        "For backward hooks to be called,"
                        " module output should be a Tensor or a tuple of Tensors"
                        f" but received {type(result)}",
                        stacklevel=2,
                    )
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            for hook_id, hook in _global_forward_hooks.items():
                if (
                    hook_id in _global_forward_hooks_always_called
                    and hook_id not in called_always_called_hooks
                ):
                    try:
                        hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn(
                            "global module forward hook with ``always_call=True`` raised an "
                            f"exception that was silenced as another error was raised in "
                            f"forward: {e}",
                            stacklevel=2,
                        )
            for hook_id, hook in self._forward_hooks.items():
                if (
                    hook_id in self._forward_hooks_always_called
                    and hook_id not in called_always_called_hooks
                ):
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook_result = hook(self, args, kwargs, result)
                        else:
                            hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn(
                            "module forward hook with ``always_call=True`` raised an exception "
                            f"that was silenced as another error was raised in forward: {e}",
                            stacklevel=2,
                        )
            raise

    __call__ = _call_impl
