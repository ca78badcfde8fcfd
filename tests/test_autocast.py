"""Autocast: PyTorch's CPU op lists (against the registry and a table written
from PyTorch's documentation), output and gradient dtypes, nesting, the
decorator, per-thread state, the weight cast cache, and the CUDA no-op."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F
from autocast_lists import POLICY
from ferrograd import _C, _registry

BF, HALF, F32, F64 = fg.bfloat16, fg.float16, fg.float32, fg.float64
LOW = [BF, HALF]


def _t(*shape, dtype=F32, grad=False, seed=0, lo=-1.0, hi=1.0):
    rng = np.random.default_rng(seed + len(shape))
    x = fg.tensor(rng.uniform(lo, hi, shape).astype(np.float32)).to(dtype)
    return x.requires_grad_(grad) if grad else x


def _spd(n=3, dtype=F32):
    a = np.random.default_rng(1).uniform(-1, 1, (n, n))
    return fg.tensor((a @ a.T + n * np.eye(n)).astype(np.float32)).to(dtype)


def _declared():
    return {o.name: o.autocast for o in _registry.ops() if o.autocast}


# ----- the lists -------------------------------------------------------------------------------


def test_registry_policies_are_pytorchs():
    """Every op the registry declares is in PyTorch's list with that policy."""
    from autocast_lists import PUBLIC

    by_name = {}
    for aten, pol in POLICY.items():
        for _, name in PUBLIC.get(aten, [(None, aten)]):
            by_name.setdefault(name, set()).add(pol)
    for name, pol in _declared().items():
        assert name in by_name, f"{name} declares autocast={pol!r} but PyTorch does not list it"
        assert by_name[name] == {pol}, (name, pol, by_name[name])


def test_core_table_is_the_registrys():
    """The generated table the core reads says what the registry declares."""
    for o in _registry.ops():
        for n in o.names:
            assert _C._autocast_policy(n) == o.autocast, n


# One call per declared op: (make inputs, call). The check below runs each
# inside a region with float32 (or, for fp32 ops, low-precision) inputs.
def _conv_w(*s):
    return _t(*s, seed=3)


LOWER_CALLS = {
    "mm": lambda: fg.mm(_t(2, 3), _t(3, 4)),
    "matmul": lambda: fg.matmul(_t(2, 3), _t(3, 4)),
    "bmm": lambda: fg.bmm(_t(2, 2, 3), _t(2, 3, 4)),
    "addmm": lambda: fg.addmm(_t(2, 4), _t(2, 3), _t(3, 4)),
    "addbmm": lambda: fg.addbmm(_t(2, 4), _t(2, 2, 3), _t(2, 3, 4)),
    "baddbmm": lambda: fg.baddbmm(_t(2, 2, 4), _t(2, 2, 3), _t(2, 3, 4)),
    "linear": lambda: F.linear(_t(2, 3), _t(4, 3), _t(4)),
    "vecdot": lambda: fg.linalg.vecdot(_t(2, 3), _t(2, 3)),
    "conv1d": lambda: F.conv1d(_t(1, 2, 5), _conv_w(3, 2, 2), _t(3)),
    "conv2d": lambda: F.conv2d(_t(1, 2, 4, 4), _conv_w(3, 2, 2, 2), _t(3)),
    "conv3d": lambda: F.conv3d(_t(1, 2, 3, 3, 3), _conv_w(3, 2, 2, 2, 2)),
    "conv_transpose1d": lambda: F.conv_transpose1d(_t(1, 2, 5), _conv_w(2, 3, 2)),
    "conv_transpose2d": lambda: F.conv_transpose2d(_t(1, 2, 4, 4), _conv_w(2, 3, 2, 2)),
    "prelu": lambda: F.prelu(_t(2, 3), _t(3)),
    "scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(
        _t(1, 2, 3, 4), _t(1, 2, 3, 4), _t(1, 2, 3, 4)
    ),
    "multi_head_attention_forward": lambda: F.multi_head_attention_forward(
        _t(3, 1, 4), _t(3, 1, 4), _t(3, 1, 4), 4, 2, _t(12, 4), _t(12), None, None, False,
        0.0, _t(4, 4), _t(4), training=False, need_weights=False,
    )[0],
}


def _fp32_calls(d, ref=False):
    """fp32-list ops called on ``d`` (a low-precision dtype) inputs; with
    ``ref``, on the same values in float32 (the computation the region must do)."""

    def t(*s, **k):
        x = _t(*s, dtype=d, **k)
        return x.float() if ref else x

    def spd(dtype):
        x = _spd(dtype=dtype)
        return x.float() if ref else x

    tgt = fg.tensor([0, 2])
    return {
        "prod": lambda: fg.prod(t(2, 3)),
        "trace": lambda: fg.trace(t(3, 3)),
        "quantile": lambda: fg.quantile(t(5), 0.5),
        "nanquantile": lambda: fg.nanquantile(t(5), 0.5),
        "cdist": lambda: fg.cdist(t(2, 3), t(4, 3)),
        "inverse": lambda: fg.inverse(spd(d)),
        "pinverse": lambda: fg.pinverse(t(3, 2)),
        "inv": lambda: fg.linalg.inv(spd(d)),
        "inv_ex": lambda: fg.linalg.inv_ex(spd(d))[0],
        "solve": lambda: fg.linalg.solve(spd(d), t(3, 2)),
        "cholesky": lambda: fg.linalg.cholesky(spd(d)),
        "cholesky_ex": lambda: fg.linalg.cholesky_ex(spd(d))[0],
        "svdvals": lambda: fg.linalg.svdvals(t(3, 2)),
        "eigvalsh": lambda: fg.linalg.eigvalsh(spd(d)),
        "eigh": lambda: fg.linalg.eigh(spd(d))[0],
        "qr": lambda: fg.linalg.qr(t(3, 2))[0],
        "svd": lambda: fg.linalg.svd(t(3, 2))[1],
        "lstsq": lambda: fg.linalg.lstsq(t(3, 2), t(3, 1))[0],
        "matrix_rank": lambda: fg.linalg.matrix_rank(t(3, 3)),
        "mse_loss": lambda: F.mse_loss(t(2, 3), t(2, 3, seed=1)),
        "l1_loss": lambda: F.l1_loss(t(2, 3), t(2, 3, seed=1)),
        "huber_loss": lambda: F.huber_loss(t(2, 3), t(2, 3, seed=1)),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(
            t(2, 3, lo=0.1, hi=0.9), t(2, 3, lo=0.0, hi=1.0, seed=1)
        ),
        "binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(
            t(2, 3), t(2, 3, lo=0.0, hi=1.0, seed=1)
        ),
        "nll_loss": lambda: F.nll_loss(t(2, 3), tgt),
        "cross_entropy": lambda: F.cross_entropy(t(2, 3), tgt),
        "kl_div": lambda: F.kl_div(t(2, 3), t(2, 3, lo=0.1, hi=1.0), reduction="batchmean"),
        "cosine_embedding_loss": lambda: F.cosine_embedding_loss(
            t(2, 3), t(2, 3, seed=1), fg.tensor([1.0, -1.0])
        ),
        "hinge_embedding_loss": lambda: F.hinge_embedding_loss(t(2, 3), fg.ones(2, 3)),
        "poisson_nll_loss": lambda: F.poisson_nll_loss(t(2, 3), t(2, 3, lo=0.0, hi=2.0)),
        "margin_ranking_loss": lambda: F.margin_ranking_loss(
            t(3), t(3, seed=1), fg.tensor([1.0, -1.0, 1.0])
        ),
        "soft_margin_loss": lambda: F.soft_margin_loss(t(2, 3), fg.ones(2, 3)),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(t(2, 3), t(2, 3, seed=1), t(2, 3, seed=2)),
        "multi_margin_loss": lambda: F.multi_margin_loss(t(2, 3), tgt),
        "multilabel_margin_loss": lambda: F.multilabel_margin_loss(
            t(2, 3), fg.tensor([[0, 2, -1], [1, -1, 0]])
        ),
        "ctc_loss": lambda: F.ctc_loss(
            t(4, 1, 3, lo=-3.0, hi=-0.1), fg.tensor([[1, 2]]), fg.tensor([4]), fg.tensor([2])
        ),
        "avg_pool3d": lambda: F.avg_pool3d(t(1, 1, 2, 2, 2), 2),
        "max_pool3d": lambda: F.max_pool3d(t(1, 1, 2, 2, 2), 2),
        "adaptive_avg_pool3d": lambda: F.adaptive_avg_pool3d(t(1, 1, 2, 2, 2), 1),
        "adaptive_max_pool3d": lambda: F.adaptive_max_pool3d(t(1, 1, 2, 2, 2), 1),
        "adaptive_max_pool3d_with_indices": lambda: F.adaptive_max_pool3d_with_indices(
            t(1, 1, 2, 2, 2), 1
        )[0],
        "max_unpool2d": lambda: F.max_unpool2d(t(1, 1, 1, 1), fg.tensor([[[[3]]]]), 2),
        "max_unpool3d": lambda: F.max_unpool3d(t(1, 1, 1, 1, 1), fg.tensor([[[[[7]]]]]), 2),
        "grid_sample": lambda: F.grid_sample(t(1, 1, 3, 3), t(1, 2, 2, 2, lo=-0.9, hi=0.9),
                                             align_corners=False),
        "geqrf": lambda: fg.geqrf(t(3, 2))[0],
        "orgqr": lambda: fg.linalg.householder_product(t(3, 2), t(2, seed=5)),
    }


PROMOTE_CALLS = {
    "cat": lambda a, b: fg.cat([a, b]),
    "stack": lambda a, b: fg.stack([a, b]),
    "index_copy": lambda a, b: a.index_copy(0, fg.tensor([1, 0]), b),
}


def test_every_declared_op_has_a_check():
    declared = _declared()
    checked = set(LOWER_CALLS) | set(_fp32_calls(BF)) | set(PROMOTE_CALLS)
    assert set(declared) == checked, (set(declared) ^ checked)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", sorted(LOWER_CALLS))
def test_lower_precision_ops_run_in_the_region_dtype(name, dtype):
    assert LOWER_CALLS[name]().dtype == F32  # outside a region: float32
    with fg.autocast("cpu", dtype=dtype):
        assert LOWER_CALLS[name]().dtype == dtype


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name", sorted(_fp32_calls(BF)))
def test_fp32_ops_run_in_float32(name, dtype):
    with fg.autocast("cpu", dtype=dtype):
        out = _fp32_calls(dtype)[name]()
    ref = _fp32_calls(dtype, ref=True)[name]()
    if name == "matrix_rank":
        assert out.dtype == fg.int64  # a count
    else:
        assert out.dtype == F32
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(PROMOTE_CALLS))
def test_promote_ops_take_the_widest_input_type(name):
    call = PROMOTE_CALLS[name]
    with fg.autocast("cpu"):
        assert call(_t(2, 3, dtype=BF), _t(2, 3)).dtype == F32
        assert call(_t(2, 3, dtype=BF), _t(2, 3, dtype=BF)).dtype == BF
        assert call(_t(2, 3, dtype=HALF), _t(2, 3, dtype=BF)).dtype == F32
        assert call(_t(2, 3, dtype=F64), _t(2, 3, dtype=BF)).dtype == F64
        out = call(_t(2, 3), _t(2, 3, dtype=BF, seed=1))
    ref = call(_t(2, 3), _t(2, 3, dtype=BF, seed=1).float())
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_method_and_operator_forms_autocast():
    a, b = _t(2, 3), _t(3, 4)
    with fg.autocast("cpu"):
        assert (a @ b).dtype == BF
        assert a.mm(b).dtype == BF
        assert a.matmul(b).dtype == BF
        assert _t(2, 3, dtype=BF).prod().dtype == F32
        assert fg.addmm(_t(2, 4), a, b).dtype == BF
        assert _t(2, 4).addmm(a, b).dtype == BF


def test_unlisted_and_ineligible_ops_are_left_alone():
    with fg.autocast("cpu"):
        assert fg.mm(_t(2, 3, dtype=F64), _t(3, 4, dtype=F64)).dtype == F64
        assert fg.mm(fg.ones(2, 3, dtype=fg.int64), fg.ones(3, 2, dtype=fg.int64)).dtype == fg.int64
        assert (_t(2, 3) + _t(2, 3)).dtype == F32
        assert fg.relu(_t(2, 3, dtype=BF)).dtype == BF
        assert (_t(2, 3, dtype=BF) + _t(2, 3)).dtype == F32  # ordinary promotion
        assert fg.exp(_t(2, 3, dtype=BF)).dtype == BF  # exp is on CUDA's fp32 list only


def test_lower_precision_values_are_the_cast_computation():
    a, b = _t(4, 5), _t(5, 3, seed=1)
    with fg.autocast("cpu"):
        out = fg.mm(a, b)
    ref = fg.mm(a.to(BF), b.to(BF))
    assert out.dtype == BF
    np.testing.assert_array_equal(out.float().numpy(), ref.float().numpy())


# ----- gradients -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_backward_runs_in_the_forward_dtype_and_leaves_get_float32(dtype):
    x, w = _t(4, 5, grad=True), _t(3, 5, grad=True, seed=2)
    with fg.autocast("cpu", dtype=dtype):
        y = F.linear(x, w)
        loss = F.mse_loss(y, fg.zeros(4, 3))
    assert y.dtype == dtype and loss.dtype == F32
    assert y.grad_fn.name() in ("AddmmBackward0", "MmBackward0")
    assert len(_cast_nodes(y)) == 2  # x and w were cast
    loss.backward()
    assert x.grad.dtype == F32 and w.grad.dtype == F32
    # The same computation written with explicit casts gives the same gradients.
    x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
    y2 = fg.mm(x2.to(dtype), w2.to(dtype).t())
    F.mse_loss(y2.float(), fg.zeros(4, 3)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), x2.grad.numpy())
    np.testing.assert_array_equal(w.grad.numpy(), w2.grad.numpy())


def test_fp32_op_gradient_returns_to_the_low_precision_input():
    x = _t(3, 4, dtype=BF).requires_grad_()
    with fg.autocast("cpu"):
        loss = F.mse_loss(x, fg.zeros(3, 4, dtype=BF))
    assert loss.dtype == F32
    loss.backward()
    assert x.grad.dtype == BF


def test_conv_module_trains_under_autocast():
    m = fg.nn.Conv2d(2, 3, 3, padding=1)
    x = _t(2, 2, 5, 5)
    with fg.autocast("cpu"):
        out = m(x)
        loss = out.float().pow(2).mean()
    assert out.dtype == BF
    loss.backward()
    assert m.weight.grad.dtype == F32 and m.bias.grad.dtype == F32


# ----- regions -----------------------------------------------------------------------------------


def test_state_functions():
    assert not fg.is_autocast_enabled("cpu")
    assert not fg.is_autocast_enabled()  # no argument: CUDA, as PyTorch
    assert fg.get_autocast_dtype("cpu") == BF
    assert fg.get_autocast_dtype("cuda") == HALF
    with fg.autocast("cpu", dtype=HALF):
        assert fg.is_autocast_enabled("cpu")
        assert fg.get_autocast_dtype("cpu") == HALF
        assert not fg.is_autocast_enabled("cuda")
    assert not fg.is_autocast_enabled("cpu")
    assert fg.get_autocast_dtype("cpu") == BF
    assert fg.amp.is_autocast_available("cpu") and fg.amp.is_autocast_available("cuda")


def test_aliases_are_one_class():
    assert fg.autocast is fg.amp.autocast
    with pytest.warns(FutureWarning, match="deprecated"):
        with fg.cpu.amp.autocast():
            assert fg.is_autocast_enabled("cpu") and fg.get_autocast_dtype("cpu") == BF
    with fg.amp.autocast(device_type="cpu", dtype=BF, enabled=True, cache_enabled=True):
        assert fg.mm(_t(2, 2), _t(2, 2)).dtype == BF


def test_nesting_and_enabled_false():
    a, b = _t(2, 3), _t(3, 4)
    with fg.autocast("cpu"):
        with fg.autocast("cpu", enabled=False):
            assert not fg.is_autocast_enabled("cpu")
            assert fg.mm(a, b).dtype == F32
            with fg.autocast("cpu", dtype=HALF):
                assert fg.mm(a, b).dtype == HALF
            assert fg.mm(a, b).dtype == F32
        assert fg.mm(a, b).dtype == BF
    assert fg.mm(a, b).dtype == F32


def test_state_is_restored_when_the_region_raises():
    with pytest.raises(ZeroDivisionError):
        with fg.autocast("cpu"):
            raise ZeroDivisionError
    assert not fg.is_autocast_enabled("cpu")
    assert _C._autocast_cache_size() == 0


def test_decorator():
    @fg.autocast("cpu")
    def f(a, b):
        """doc"""
        return fg.mm(a, b)

    assert f(_t(2, 3), _t(3, 4)).dtype == BF
    assert f.__doc__ == "doc" and f.__name__ == "f"
    assert not fg.is_autocast_enabled("cpu")

    @fg.autocast("cpu", enabled=False)
    def g(a, b):
        return fg.mm(a, b)

    with fg.autocast("cpu"):
        assert g(_t(2, 3), _t(3, 4)).dtype == F32
    with pytest.raises(TypeError, match="requires a callable"):
        fg.autocast("cpu")(3)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        fg.autocast(3)
    with pytest.raises(RuntimeError, match="device type at start of device string: xyz"):
        fg.autocast("xyz")
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling"):
        ctx = fg.autocast("cpu", dtype=F32)
    with ctx:
        assert not fg.is_autocast_enabled("cpu")
        assert fg.mm(_t(2, 2), _t(2, 2)).dtype == F32


def test_cuda_regions_do_nothing():
    a, b = _t(2, 3), _t(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with fg.autocast("cuda", enabled=False):
            assert fg.mm(a, b).dtype == F32
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with fg.autocast("cuda"):
            assert not fg.is_autocast_enabled("cuda")
            assert fg.mm(a, b).dtype == F32
    with pytest.warns(FutureWarning, match="torch.amp.autocast\\('cuda'"):
        with fg.cuda.amp.autocast(enabled=False):
            assert fg.mm(a, b).dtype == F32


def test_state_is_per_thread():
    seen = {}

    def other():
        seen["enabled"] = fg.is_autocast_enabled("cpu")
        seen["dtype"] = fg.mm(_t(2, 3), _t(3, 4)).dtype
        with fg.autocast("cpu", dtype=HALF):
            seen["inner"] = fg.mm(_t(2, 3), _t(3, 4)).dtype

    with fg.autocast("cpu"):
        th = threading.Thread(target=other)
        th.start()
        th.join()
        assert fg.mm(_t(2, 3), _t(3, 4)).dtype == BF
        assert fg.get_autocast_dtype("cpu") == BF
    assert seen == {"enabled": False, "dtype": F32, "inner": HALF}


# ----- the cast cache --------------------------------------------------------------------------


def _cast_nodes(y):
    """The ToCopyBackward0 nodes of ``y``'s graph."""
    seen, out, todo = set(), [], [y.grad_fn]
    while todo:
        n = todo.pop()
        if n is None or n in seen:  # nodes compare and hash by the node they wrap
            continue
        seen.add(n)
        if n.name() == "ToCopyBackward0":
            out.append(n)
        todo.extend(m for m, _ in n.next_functions)
    return out


def test_weights_are_cast_once_per_region():
    w = _t(4, 3, grad=True)
    x = _t(2, 3)
    with fg.autocast("cpu"):
        y1, y2 = F.linear(x, w), F.linear(x, w)
        assert _C._autocast_cache_size() == 1
        (c1,), (c2,) = _cast_nodes(y1), _cast_nodes(y2)
        assert c1 == c2  # the same recorded cast
        with fg.autocast("cpu"):  # nested: the same cache
            assert _cast_nodes(F.linear(x, w))[0] == c1
        assert _C._autocast_cache_size() == 1
    assert _C._autocast_cache_size() == 0  # dropped when the outermost region exits
    (y1.float().sum() + y2.float().sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.tile(x.to(BF).float().numpy().sum(0), (4, 1)),
                               rtol=1e-2)


def test_cache_holds_only_leaves_that_require_grad():
    with fg.autocast("cpu"):
        fg.mm(_t(2, 3), _t(3, 4))  # no grad
        h = _t(3, 4, grad=True) * 2  # not a leaf
        fg.mm(_t(2, 3), h)
        fg.mm(_t(2, 3), _t(3, 4, dtype=BF, grad=True))  # already low precision
        with fg.no_grad():
            fg.mm(_t(2, 3), _t(3, 4, grad=True))
        assert _C._autocast_cache_size() == 0


def test_cache_enabled_false():
    w = _t(4, 3, grad=True)
    with fg.autocast("cpu", cache_enabled=False):
        y1, y2 = F.linear(_t(2, 3), w), F.linear(_t(2, 3), w)
        assert _C._autocast_cache_size() == 0
        assert _cast_nodes(y1)[0] != _cast_nodes(y2)[0]
        assert not fg.is_autocast_cache_enabled()
    assert fg.is_autocast_cache_enabled()
