"""`_C._batched_outer`, the untracked per-sample outer product behind the per-sample weight
gradients of `linear` under `vmap(grad)`: equal bit for bit to the broadcast multiply it
replaces, whether the result is small (ordinary stores) or large (stores that bypass the
caches), and refusing what it cannot take."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as torch
from ferrograd import _C


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(3, 2, 5), (1, 1, 1), (256, 128, 64), (9, 301, 257)])
def test_equals_the_broadcast_product(dtype, shape):
    b, m, n = shape
    r = np.random.default_rng(b * m + n)
    g = torch.tensor(r.standard_normal((b, m)), dtype=dtype)
    x = torch.tensor(r.standard_normal((b, n)), dtype=dtype)
    out = _C._batched_outer(g, x)
    assert out.dtype == dtype and tuple(out.shape) == shape
    np.testing.assert_array_equal(out.numpy(), (g.unsqueeze(-1) * x.unsqueeze(-2)).numpy())


def test_reads_strided_operands_and_records_no_graph():
    g = torch.randn(40, 30, requires_grad=True)
    x = torch.randn(70, 40).t()  # a transposed view: [40, 70]
    out = _C._batched_outer(g, x)
    assert out.grad_fn is None and not out.requires_grad
    want = g.detach().numpy()[:, :, None] * x.numpy()[:, None, :]
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("g,x,match", [
    (torch.zeros(3, 2), torch.zeros(4, 5), "same number of rows"),
    (torch.zeros(3), torch.zeros(3, 5), "same number of rows"),
    (torch.zeros(3, 2), torch.zeros(3, 5, dtype=torch.float64), "one dtype"),
    (torch.zeros(3, 2, dtype=torch.int64), torch.zeros(3, 5, dtype=torch.int64), "float"),
])
def test_refuses_bad_operands(g, x, match):
    with pytest.raises(RuntimeError, match=match):
        _C._batched_outer(g, x)
