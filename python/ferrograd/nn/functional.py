"""Functional forms of the losses and activations (``ferrograd.nn.functional``)."""

from __future__ import annotations

from .. import _C


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _C.mse_loss(input, target, reduction)


def relu(input, inplace=False):
    if inplace:
        raise NotImplementedError("relu(inplace=True) is not available yet")
    return _C.relu(input)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def _legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"
