"""Removable hook handles and the module backward hooks (PyTorch's
``torch.utils.hooks``), kept private to ``nn``."""

from __future__ import annotations

import weakref
from collections import OrderedDict

from ... import _C
from ...autograd.function import Function

__all__ = ["BackwardHook", "RemovableHandle"]


class RemovableHandle:
    """Returned by every ``register_*_hook``: ``remove()`` unregisters the hook
    (also on leaving a ``with`` block). It holds its dicts weakly, so a handle
    kept by the user does not keep a deleted module alive."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        from .module import _STATE_EPOCH

        # A hook added or removed changes what a compiled module computes.
        _STATE_EPOCH[0] += 1
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        else:
            self.extra_dict_ref = ()

    def remove(self):
        from .module import _STATE_EPOCH

        _STATE_EPOCH[0] += 1
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        # Pickled with the dicts themselves (as PyTorch does), so a module that
        # keeps its handles, such as a lazy layer, can be saved whole.
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        hooks = state[0]
        # A dict that no longer existed leaves a dead reference behind.
        self.hooks_dict_ref = weakref.ref(hooks if hooks is not None else OrderedDict())
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra if d is not None)

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


class BackwardHookFunction(Function):
    """Identity on the module's input (or output) tensors: its backward node is
    where the module's full backward hooks see and may replace the gradients.
    ``on_backward`` receives the gradients and returns them (or replacements)."""

    @staticmethod
    def forward(ctx, on_backward, *args):
        ctx.on_backward = on_backward
        return args

    @staticmethod
    def backward(ctx, *grads):
        out = ctx.on_backward(grads)
        return (None, *(grads if out is None else out))


class BackwardHook:
    """Wires ``register_full_backward_pre_hook`` / ``register_full_backward_hook``
    hooks of one module call: identity nodes on the inputs and the outputs.
    The output node's backward runs the pre-hooks on ``grad_output``; the input
    node's backward runs the hooks on ``(grad_input, grad_output)``."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[idx] for idx in indices)

    def _input_hook(self, grad_input):
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through this
            # call's outputs (double backward): PyTorch skips the hooks too.
            return None
        res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, "
                    f"got {len(out)}, but expected {len(res)}"
                )
            res = out
        self.grad_outputs = None
        return self._unpack_none(self.input_tensors_index, res)

    def _output_hook(self, grad_output):
        self.grad_outputs = self._pack_with_none(
            self.output_tensors_index, grad_output, self.n_outputs
        )
        if self.user_pre_hooks:
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                if hook_grad_outputs is None:
                    continue
                actual_len = len(hook_grad_outputs)
                if actual_len != expected_len:
                    raise RuntimeError(
                        "Backward pre hook returned an invalid number of grad_output, "
                        f"got {actual_len}, but expected {expected_len}"
                    )
                self.grad_outputs = hook_grad_outputs
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            # No input needs a gradient, so no input node will run: call the
            # hooks here with all-None grad_input.
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (
                    isinstance(res, tuple) and all(el is None for el in res)
                ):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires "
                        "gradient should always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

    def _apply_on_tensors(self, on_backward, args):
        tensors_idx = [i for i, arg in enumerate(args) if isinstance(arg, _C.Tensor)]
        diff_idx = [i for i in tensors_idx if args[i].requires_grad]
        if not (diff_idx and _C.is_grad_enabled()):
            return args, None
        # Only tensors that require grad go through the node; the hooks see
        # None in the other tensors' places, as PyTorch's non-differentiable
        # outputs of the node give them.
        slot = {i: k for k, i in enumerate(tensors_idx)}

        def backward(grads):
            full = [None] * len(tensors_idx)
            for i, g in zip(diff_idx, grads):
                full[slot[i]] = g
            out = on_backward(tuple(full))
            if out is None:
                return None
            return tuple(out[slot[i]] for i in diff_idx)

        new_tensors = BackwardHookFunction.apply(backward, *[args[i] for i in diff_idx])
        arg_list = list(args)
        for idx, val in zip(diff_idx, new_tensors):
            arg_list[idx] = val
        return tuple(arg_list), tensors_idx

    def setup_input_hook(self, args):
        res, input_idx = self._apply_on_tensors(self._input_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(self._output_hook, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]

