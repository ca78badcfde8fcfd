"""``optim.swap_in_optimizer_params_and_state``: run an optimizer on other
parameters and state for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, Iterator

from .._C import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_state(state: Any) -> dict[Any, Any]:
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed "
            f"parameter ids to per-param state dicts, got {type(state).__name__}."
        )
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids."
        )
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(
            f"{_NAME} requires per-parameter optimizer state entries to be dictionaries."
        )
    return state


def _check_groups(optimizer: Any, groups: Any) -> list[dict[str, Any]]:
    if not isinstance(groups, list):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of "
            f"param-group dicts, got {type(groups).__name__}."
        )
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError(
            "swapin_optim_state has a different number of parameter groups than the live "
            "optimizer."
        )
    return groups


def _group_ids(index: int, live: dict[str, Any], saved: Any) -> list[int]:
    """The packed ids of a saved group, once it is known to fit the live group."""
    if not isinstance(saved, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = saved.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries "
            "keyed by packed parameter ids."
        )
    if len(ids) != len(live["params"]):
        raise RuntimeError(
            f"swapin_optim_state param group {index} has a different number of params than "
            "the live optimizer param group."
        )
    only_saved = [k for k in saved if k not in live]
    only_live = [k for k in live if k not in saved]
    if only_saved or only_live:
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match "
            f"the live optimizer group keys for group {index}. Keys only in swap-in: "
            f"{only_saved}. Keys only in live: {only_live}."
        )
    return ids


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(
    optimizer: Any, swapin_parameters: dict[str, Tensor], swapin_optim_state: dict[str, Any]
) -> Iterator[None]:
    """Inside the ``with`` block, ``optimizer`` works on ``swapin_parameters``
    (tensors in the order of its parameter groups, e.g. a dict like
    ``model.named_parameters()``) with the state and hyper-parameters of
    ``swapin_optim_state`` (an ``optimizer.state_dict()``-shaped dict);
    on exit its own parameters, groups and state are back. ``step()`` in
    the block updates the swapped-in parameters and, in place, the state
    tensors of ``swapin_optim_state``; other changes to the state (new
    entries) stay inside the block. The optimizer must have state already
    (have stepped once), as in PyTorch.

    Example::

        params = {n: p.detach().clone() for n, p in model.named_parameters()}
        osd = copy.deepcopy(opt.state_dict())
        with torch.optim.swap_in_optimizer_params_and_state(opt, params, osd):
            opt.step()  # moves ``params`` and ``osd``'s tensors, not the model
    """
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    saved_state = _check_state(swapin_optim_state.get("state"))
    saved_groups = _check_groups(optimizer, swapin_optim_state.get("param_groups"))
    tensors = list(swapin_parameters.values())
    plan = []
    used: set[int] = set()
    start = 0
    for index, (live, saved) in enumerate(zip(optimizer.param_groups, saved_groups)):
        ids = _group_ids(index, live, saved)
        used.update(ids)
        if start + len(ids) > len(tensors):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match "
                "optimizer.param_groups ordering."
            )
        plan.append((live, saved, tensors[start:start + len(ids)]))
        start += len(ids)
    extra = [k for k in saved_state if k not in used]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter "
            f"ids from param_groups[*]['params']; got extra keys {extra!r}."
        )

    own_state = optimizer.state
    # Shallow copies: the restored groups keep their own ``params`` lists.
    own_groups = [dict(g) for g in optimizer.param_groups]
    try:
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for live, saved, params in plan:
            live.update({k: v for k, v in saved.items() if k != "params"})
            live["params"] = params
            for p, i in zip(params, saved["params"]):
                # A new dict over the same tensors: in-place updates reach the
                # caller's state dict, new keys do not.
                state[p] = dict(saved_state.get(i, {}))
        optimizer.state = state
        yield
    finally:
        for group, own in zip(optimizer.param_groups, own_groups):
            group.clear()
            group.update(own)
        optimizer.state = own_state
