"""In-place forms against their out-of-place twins, for every in-place method and
every in-place activation: the value written (bit for bit), the tensor returned,
the version counter and a base seeing the write through its views.

With nothing to record, one elementwise op of ``self`` maps ``self``'s memory
directly, and the index writes (``scatter_``, ``index_add_``, ``put_``, ...) go
straight to the picked elements; a composed op that read ``self`` again after
such a map would write wrong values here, whichever op it is."""

import inspect

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F

# Random fills, memory and shape changes: no out-of-place twin to compare with.
NOT_A_TWIN = {
    "bernoulli_", "cauchy_", "exponential_", "geometric_", "log_normal_", "normal_",
    "random_", "uniform_", "set_", "resize_", "resize_as_", "requires_grad_",
    "share_memory_", "copy_", "fill_", "zero_", "fill_diagonal_", "detach_",
    "as_strided_", "squeeze_", "unsqueeze_", "t_", "transpose_", "swapaxes_",
    "swapdims_", "retain_grad", "put_", "index_put_", "index_add_", "index_copy_",
    "index_fill_", "scatter_", "scatter_add_", "scatter_reduce_", "masked_scatter_",
    "masked_fill_", "map_", "apply_", "record_stream", "addmm_", "addmv_", "addbmm_",
    "baddbmm_", "addr_", "lerp_", "addcmul_", "addcdiv_", "clamp_", "clip_",
}  # fmt: skip


def _values(dtype, shape=(24, 17), seed=0):
    rng = np.random.default_rng(seed)
    v = rng.uniform(-0.9, 0.9, size=shape)
    v[np.abs(v) < 0.05] = 0.3
    return v.astype(dtype)


def _layouts(a):
    """The same values as a contiguous tensor, a transpose and a strided slice,
    each with the base it lives in."""
    c = fg.from_numpy(a.copy())
    t_base = fg.from_numpy(np.ascontiguousarray(a.T).copy())
    s_base = fg.from_numpy(np.repeat(a, 2, axis=1).copy())
    return [("contiguous", c, c), ("transposed", t_base, t_base.t()),
            ("strided", s_base, s_base[:, ::2])]  # fmt: skip


def _same(got, want, what):
    np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=what)
    assert got.dtype == want.dtype, what


def _arg_sets(other):
    return [(), (0.5,), (1,), (other,)]


def _inplace_methods():
    names = []
    for n in sorted(dir(fg.Tensor)):
        if n.startswith("_") or not n.endswith("_") or n in NOT_A_TWIN:
            continue
        if callable(getattr(fg.Tensor, n[:-1], None)):
            names.append(n)
    return names


def test_every_inplace_method_writes_its_out_of_place_value():
    checked = set()
    for dtype in (np.float32, np.float64):
        a = _values(dtype)
        other = fg.from_numpy(_values(dtype, seed=1))
        for name in _inplace_methods():
            for args in _arg_sets(other):
                try:
                    want = getattr(fg.from_numpy(a.copy()), name[:-1])(*args)
                except (TypeError, RuntimeError, ValueError, IndexError):
                    continue
                if not isinstance(want, fg.Tensor) or tuple(want.shape) != a.shape:
                    continue
                for layout, base, x in _layouts(a):
                    v0 = base._version
                    try:
                        got = getattr(x, name)(*args)
                    except RuntimeError:
                        # A result type the tensor cannot hold (PyTorch refuses too).
                        continue
                    what = f"{name}{args!r:.20} on {layout} {np.dtype(dtype).name}"
                    assert got is x, what
                    _same(x, want.to(x.dtype), what)
                    assert base._version > v0, what
                    if layout == "transposed":
                        _same(base.t(), want.to(x.dtype), what + " (base)")
                    checked.add(name)
    # The family as a whole, and the ops users write most, were all exercised.
    assert len(checked) >= 60, sorted(checked)
    for n in ("relu_", "neg_", "sqrt_", "sigmoid_", "tanh_", "clamp_min_", "round_",
              "floor_", "frac_", "sgn_", "nan_to_num_", "exp_", "abs_"):  # fmt: skip
        assert n in checked, n


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_clamp_in_place_matches_out_of_place(dtype):
    a = (_values(np.float64) * 10).astype(dtype)
    for kwargs in ({"min": -3, "max": 4}, {"min": 0}, {"max": -1}, {"min": float("nan")}):
        if dtype == np.int64 and any(v != v for v in kwargs.values()):
            continue
        want = fg.from_numpy(a.copy()).clamp(**kwargs)
        for layout, base, x in _layouts(a):
            v0 = base._version
            assert x.clamp_(**kwargs) is x
            _same(x, want, f"clamp_{kwargs} on {layout}")
            assert base._version == v0 + 1


def _inplace_activations():
    out = []
    for name in sorted(dir(F)):
        fn = getattr(F, name)
        if name.startswith("_") or not callable(fn) or "dropout" in name or name == "rrelu":
            continue
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if "inplace" in params:
            out.append(name)
    return out


@pytest.mark.parametrize("name", _inplace_activations())
def test_inplace_activation_writes_its_out_of_place_value(name):
    fn = getattr(F, name)
    extra = {"threshold": (0.1, -2.0)}.get(name, ())
    for dtype in (np.float32, np.float64):
        a = _values(dtype)
        want = fn(fg.from_numpy(a.copy()), *extra)
        for layout, base, x in _layouts(a):
            v0 = base._version
            got = fn(x, *extra, inplace=True)
            assert got is x
            _same(x, want, f"{name} on {layout}")
            assert base._version == v0 + 1


def test_inplace_map_of_a_tensor_that_requires_grad_still_records():
    w = fg.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    y = w * 1.0
    y.sigmoid_()
    y.sum().backward()
    s = 1.0 / (1.0 + np.exp(-np.array([-1.0, 0.5, 2.0])))
    np.testing.assert_allclose(w.grad.numpy(), s * (1.0 - s), rtol=1e-6)
    # Under no_grad a leaf that requires grad is mapped in place (an optimizer's step).
    with fg.no_grad():
        assert w.clamp_(min=0.0) is w
    assert w.tolist() == [0.0, 0.5, 2.0] and w.requires_grad and w.is_leaf


# ----- index writes ------------------------------------------------------------------


def _dest(layout, a):
    if layout == "transposed":
        base = fg.from_numpy(np.ascontiguousarray(a.T).copy())
        return base, base.t()
    t = fg.from_numpy(a.copy())
    return t, t


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_scatter_and_scatter_add_in_place(layout):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    idx = rng.integers(0, 6, (4, 5))
    src = rng.standard_normal((4, 5)).astype(np.float32)
    for accumulate in (False, True):
        want = a.copy()
        for i in range(4):
            for j in range(5):
                if accumulate:
                    want[idx[i, j], j] += src[i, j]
                else:
                    want[idx[i, j], j] = src[i, j]
        base, x = _dest(layout, a)
        v0 = base._version
        op = x.scatter_add_ if accumulate else x.scatter_
        assert op(0, fg.tensor(idx), fg.from_numpy(src)) is x
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
        assert base._version == v0 + 1
    base, x = _dest(layout, a)
    i1 = idx[:, :2] % 5
    x.scatter_(1, fg.tensor(i1), 7.5)
    want = a.copy()
    for i in range(4):
        for j in range(2):
            want[i, i1[i, j]] = 7.5
    np.testing.assert_array_equal(x.numpy(), want)


def test_index_add_copy_fill_in_place():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 4)).astype(np.float64)
    idx = np.array([5, 0, 5, -1 + 7])
    src = rng.standard_normal((4, 4))
    x = fg.from_numpy(a.copy())
    v0 = x._version
    assert x.index_add_(0, fg.tensor(idx), fg.from_numpy(src), alpha=2.0) is x
    want = a.copy()
    np.add.at(want, idx, 2.0 * src)
    np.testing.assert_allclose(x.numpy(), want)
    assert x._version == v0 + 1
    x = fg.from_numpy(a.copy())
    x.index_copy_(0, fg.tensor([6, 1, 3, 2]), fg.from_numpy(src))
    want = a.copy()
    want[[6, 1, 3, 2]] = src
    np.testing.assert_array_equal(x.numpy(), want)
    x = fg.from_numpy(a.copy())
    x.index_fill_(1, fg.tensor([-1, 0]), -4.0)
    want = a.copy()
    want[:, [3, 0]] = -4.0
    np.testing.assert_array_equal(x.numpy(), want)
    x.index_fill_(0, fg.tensor([2]), fg.tensor(9.0))
    want[2] = 9.0
    np.testing.assert_array_equal(x.numpy(), want)


def test_masked_scatter_and_put_in_place():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 6)).astype(np.float32)
    mask = rng.random((5, 6)) < 0.4
    src = rng.standard_normal(40).astype(np.float32)
    x = fg.from_numpy(a.copy())
    assert x.masked_scatter_(fg.from_numpy(mask), fg.from_numpy(src)) is x
    want = a.copy()
    want[mask] = src[: mask.sum()]
    np.testing.assert_array_equal(x.numpy(), want)
    idx = np.array([0, 29, -1, 7, 7])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)
    for accumulate in (False, True):
        x = fg.from_numpy(a.copy())
        x.put_(fg.tensor(idx), fg.from_numpy(vals), accumulate=accumulate)
        want = a.copy().reshape(-1)
        if accumulate:
            np.add.at(want, idx, vals)
        else:
            want[idx] = vals
        np.testing.assert_allclose(x.numpy().reshape(-1), want, rtol=1e-6)


@pytest.mark.parametrize(
    "write",
    [
        lambda x, i, s: x.scatter_(0, i.reshape(1, -1), s.reshape(1, -1)),
        lambda x, i, s: x.scatter_add_(0, i.reshape(1, -1), s.reshape(1, -1)),
        lambda x, i, s: x.index_add_(1, i, s.expand(4, 3)),
        lambda x, i, s: x.index_copy_(1, i, s.expand(4, 3)),
        lambda x, i, s: x.put_(i, s),
    ],
)
def test_an_index_out_of_range_leaves_the_tensor_as_it_was(write):
    a = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    x = fg.from_numpy(a.copy())
    bad = fg.tensor([0, 1, 99])
    with pytest.raises((IndexError, RuntimeError)):
        write(x, bad, fg.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.numpy(), a)


def test_index_writes_into_a_non_leaf_keep_their_gradients():
    w = fg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=fg.float64, requires_grad=True)
    s = fg.tensor([[10.0, 20.0]], dtype=fg.float64, requires_grad=True)
    y = w * 2.0
    y.index_add_(0, fg.tensor([1]), s)
    y.scatter_(0, fg.tensor([[2, 0]]), s * 3.0)
    (y * fg.arange(6.0, dtype=fg.float64).reshape(3, 2)).sum().backward()
    weights = np.arange(6.0).reshape(3, 2)
    gw = 2.0 * weights
    gw[2, 0] = 0.0
    gw[0, 1] = 0.0
    np.testing.assert_allclose(w.grad.numpy(), gw)
    np.testing.assert_allclose(s.grad.numpy(), [[weights[1, 0] + 3 * weights[2, 0],
                                                 weights[1, 1] + 3 * weights[0, 1]]])


def test_a_source_that_shares_the_destination_is_read_before_it_is_written():
    x = fg.tensor([1.0, 2.0, 3.0, 4.0])
    x.index_add_(0, fg.tensor([1, 2]), x[:2])
    assert x.tolist() == [1.0, 3.0, 5.0, 4.0]
    y = fg.tensor([1.0, 2.0, 3.0, 4.0])
    y.scatter_(0, fg.tensor([3, 2]), y[:2])
    assert y.tolist() == [1.0, 2.0, 2.0, 1.0]


def _np_reduce(a, idx, src, reduce, include_self):
    """``scatter_reduce`` along dim 0 of 2-D arrays, by a loop in index order."""
    out = a.copy()
    seen = np.zeros(a.shape, dtype=bool)
    op = {"sum": np.add, "prod": np.multiply, "amax": np.fmax, "amin": np.fmin}[reduce]
    for i in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            t = (idx[i, j], j)
            if not include_self and not seen[t]:
                out[t], seen[t] = src[i, j], True
            else:
                v = op(out[t], src[i, j])
                # NaN wins an extremum, as in PyTorch.
                out[t] = np.nan if reduce in ("amax", "amin") and (
                    np.isnan(out[t]) or np.isnan(src[i, j])) else v  # fmt: skip
    return out


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_scatter_reduce_values_without_a_gradient(reduce, dtype):
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, (5, 7)).astype(dtype)
    src = rng.integers(-4, 5, (9, 7)).astype(dtype)
    idx = rng.integers(0, 5, (9, 7))
    if dtype == np.float32:
        a[0, 0], src[3, 2] = np.nan, np.nan
    for include_self in (True, False):
        want = _np_reduce(a, idx, src, reduce, include_self)
        got = fg.from_numpy(a.copy()).scatter_reduce(
            0, fg.tensor(idx), fg.from_numpy(src), reduce, include_self=include_self)
        np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{reduce} {include_self}")
        x = fg.from_numpy(a.copy())
        v0 = x._version
        assert x.scatter_reduce_(0, fg.tensor(idx), fg.from_numpy(src), reduce,
                                 include_self=include_self) is x  # fmt: skip
        np.testing.assert_array_equal(x.numpy(), want, err_msg=f"{reduce}_ {include_self}")
        assert x._version == v0 + 1


def _three_operand_calls(y, z, w):
    return {
        "lerp_": [((y, 0.3), {}), ((y, 0.7), {}), ((y, w), {})],
        "addcmul_": [((y, z), {}), ((y, z), {"value": 0.5})],
        "addcdiv_": [((y, z), {}), ((y, z), {"value": -2.0})],
    }


@pytest.mark.parametrize("name", ["lerp_", "addcmul_", "addcdiv_"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_three_operand_inplace_forms(name, dtype):
    a, b, c = (_values(dtype, seed=s) for s in (6, 7, 8))
    c = np.where(np.abs(c) < 0.2, 0.5, c).astype(dtype)  # away from zero: a divisor

    def operands(transposed):
        ts = [fg.from_numpy(np.ascontiguousarray(v.T).copy()) for v in (a, b, c)]
        ts = [t.t() for t in ts] if transposed else [fg.from_numpy(v.copy()) for v in (a, b, c)]
        return ts

    for transposed in (False, True):
        x0, y, z = operands(transposed)
        for args, kwargs in _three_operand_calls(y, z, z)[name]:
            want = getattr(x0, name[:-1])(*args, **kwargs)
            x = x0.clone() if not transposed else operands(True)[0]
            v0 = x._version
            assert getattr(x, name)(*args, **kwargs) is x
            _same(x, want, f"{name} {kwargs} transposed={transposed}")
            assert x._version == v0 + 1
    # Operands in other layouts, and the destination itself as an operand.
    x, y, z = operands(True)
    want = x.addcmul(fg.from_numpy(b.copy()), z)
    x.addcmul_(fg.from_numpy(b.copy()), z)
    _same(x, want, "addcmul_ of mixed layouts")
    x = fg.from_numpy(a.copy())
    want = x.lerp(x, 0.25)
    x.lerp_(x, 0.25)
    _same(x, want, "lerp_ toward itself")


def test_three_operand_inplace_form_keeps_the_gradient_of_its_operands():
    rng = np.random.default_rng(9)
    base, end, wv = (rng.standard_normal(5) for _ in range(3))
    w = fg.tensor(wv, requires_grad=True)
    x = fg.tensor(base) * 1.0
    x.lerp_(fg.tensor(end), w)
    x.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), end - base)
