"""The argument handling the 1-, 2- and 3-d pools share: the default stride,
PyTorch's checks of a window's sizes in its words, the 1-d input check and the
adaptive pools' output size."""

from __future__ import annotations

from ._args import _check_tensor, _tuple


def _stride(stride, kernel_size, n):
    if stride is None or (not isinstance(stride, int) and len(stride) == 0):
        return _tuple(kernel_size, n, "kernel_size")
    return _tuple(stride, n, "stride")


def _check_pool(kernel, stride, padding, dilation, letters):
    """PyTorch's checks of a 2-d or 3-d pooling's arguments, in its order (each
    dimension's output size first, then the shape check) and words."""
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        # The common valid case in one pass; any failure re-checks in PyTorch's order.
        if not (0 < k < 2**31 and 0 < s < 2**31 and 0 < d < 2**31 and 0 <= p < 2**31
                and p <= ((k - 1) * d + 1) // 2):  # fmt: skip
            break
    else:
        return
    # Its kernels take the sizes as C ints (a kernel of 2**62 would otherwise be
    # honoured, window by window).
    if any(not -(2**31) <= v < 2**31 for v in (*kernel, *stride, *padding, *dilation)):
        raise RuntimeError("value cannot be converted to type int without overflow")
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )

    def got(prefix, values):
        return " ".join(f"{prefix}{a}: {v}" for a, v in zip(letters, values))

    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got {got('k', kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got {got('d', stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            f"dilation should be greater than zero, but got {got('dilation', dilation)}"
        )


def _check_1d(input, name):
    _check_tensor(input)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got: {list(input.shape)}"
        )


def _adaptive_size(input, output_size, n):
    if isinstance(output_size, int):
        return [int(output_size)] * n
    if output_size is None:
        output_size = [output_size] * n
    output_size = list(output_size)
    if len(output_size) != n:
        raise RuntimeError(f"output_size must be {n}, but got {len(output_size)}")
    if all(s is not None for s in output_size):
        return [int(s) for s in output_size]
    # None keeps that dimension's input size, as in PyTorch.
    shape = input.shape[-n:]
    return [shape[i] if s is None else int(s) for i, s in enumerate(output_size)]
