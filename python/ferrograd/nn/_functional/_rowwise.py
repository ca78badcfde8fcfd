"""The vmap rule of the pooling-like ops: a batched input runs as one call on
the samples' rows stacked, since these ops already treat every leading row
alike (``func._nn_rules.rowwise_rule``)."""

from __future__ import annotations

import functools

from ... import _dispatch


def _rowwise(fn, batched_rank):
    """``fn`` with its vmap rule: a batched input runs as one call on the
    samples' rows (``func._nn_rules.rowwise_rule``)."""

    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):
        if hasattr(type(input), "__ferrograd_function__"):
            if not _dispatch.is_batched(input):
                return _dispatch.dispatch(wrapper, (input, *args), kwargs)
            from ...func._nn_rules import rowwise_rule

            return rowwise_rule(wrapper, batched_rank, input, args, kwargs)
        return fn(input, *args, **kwargs)

    return wrapper
