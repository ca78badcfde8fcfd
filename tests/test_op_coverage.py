"""The coverage matrix: every op of the registry through every feature.

For each declared op (``ferrograd._registry``) and each feature
(``schema.FEATURES``) one test draws the op's sample inputs with hypothesis
and checks the cell:

* ``forward``: float32 and float64 values against the declared NumPy reference;
* ``grad`` / ``gradgrad``: gradcheck and gradgradcheck in float64;
* ``jvp``: forward mode (``func.jvp``) against central finite differences;
* ``vmap``: ``vmap`` of the op over a batch of two against a loop;
* ``vmap_inplace``: the same for the in-place form (``x.op_()``);
* ``compile``: ``ferrograd.compile(fullgraph=True)`` of a step (the op, a
  weighted sum, ``backward()``) against eager, three calls with new values
  each, outputs and gradients bit for bit;
* ``jacobian``: ``jacobian(vectorize=True)`` against ``vectorize=False``.

A cell passes, or the op declares the feature refused with a reason
(``Op.refuse``); a refused cell checks that the user gets an error naming
the op. Cells that do not apply (the gradient of an op that is not
differentiable, the in-place form of an op without one) are not generated.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import Phase, assume, given, settings
from hypothesis import strategies as st

import ferrograd as fg
from ferrograd import _registry
from ferrograd._registry import schema
from ferrograd.testing import gradcheck, gradgradcheck
from ferrograd.testing._realize import entry_point as _entry_point
from ferrograd.testing._samples import calls, values_like

# Three draws per cell under every profile (seeded in CI): ~2,800 cells keep the suite short.
CELL = settings(max_examples=3, deadline=None)
# An open defect's cell is expected to fail: it is run to notice the fix (XPASS), and
# minimising its failing example (the shrink phase, up to ~30 s a cell) would tell nothing new.
DEFECT_CELL = settings(CELL, phases=[Phase.explicit, Phase.reuse, Phase.generate])


def entry_point(op, name=None, seed=True):
    """The callable users reach the op by (see ``_realize.entry_point``)."""
    return _entry_point(fg, op, name, seed)


def flat(out):
    """The tensors of an op's result (a tensor, or a tuple/list of them)."""
    if isinstance(out, fg.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat(o)]
    return []


def _np(a):
    return a if not isinstance(a, fg.Tensor) else a.detach().numpy()


def cells():
    out = []
    for op in _registry.ops():
        for feat in schema.FEATURES:
            if feat in (schema.GRAD, schema.GRADGRAD, schema.JVP, schema.JACOBIAN):
                if not op.differentiable and feat not in op.refuse:
                    continue
            if feat == schema.VMAP_INPLACE and not op.has(schema.INPLACE):
                continue
            if feat == schema.FORWARD and op.ref is None and feat not in op.refuse:
                # Every op needs a reference or a stated refusal: fail loudly.
                pass
            out.append(pytest.param(op.name, feat, id=f"{op.name}-{feat}"))
    return out


def _split(call):
    """``(differentiable arrays, rebuild)``: ``rebuild(tensors)`` gives the
    full positional args with those tensors in their places."""
    idx = [i for i, g in enumerate(call.grad) if g]

    def rebuild(ts, fixed):
        args = list(fixed)
        for i, t in zip(idx, ts):
            args[i] = t
        return args

    return idx, rebuild


def _as_fn(op, call, dtype=fg.float64):
    """``f(*diff_tensors) -> result`` with the other args fixed (as tensors)."""
    fn = entry_point(op)
    fixed, kwargs = call.tensors(fg, dtype)
    idx, rebuild = _split(call)

    def f(*ts):
        return fn(*rebuild(ts, fixed), **kwargs)

    leaves = [fg.tensor(call.args[i], dtype=dtype) for i in idx]
    return f, leaves


# ----- the cells ---------------------------------------------------------------------------


def check_forward(op, data):
    call = data.draw(calls(op.sample))
    fn = entry_point(op)
    for dtype, np_dtype, (rtol, atol) in (
        (fg.float32, np.float32, op.tol),
        (fg.float64, np.float64, (1e-10, 1e-12)),
    ):
        # The reference sees the inputs as the op does: rounded to the dtype.
        ref_args = [
            a.astype(np_dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
            for a in call.args
        ]
        expect = op.ref(*ref_args, **{k: _np(v) for k, v in call.kwargs.items()})
        expect = [np.asarray(e) for e in (expect if isinstance(expect, (tuple, list)) else [expect])]
        args, kwargs = call.tensors(fg, dtype)
        if (op.family == "creation" and "dtype" not in kwargs and len(expect) == 1
                and expect[0].dtype.kind == "f"
                and not any(isinstance(a, np.ndarray) for a in call.args)):
            # A factory takes the dtype under test as its argument (a window of
            # float64 is computed in float64).
            kwargs["dtype"] = dtype
        got = flat(fn(*args, **kwargs))
        assert len(got) == len(expect), f"{op.name}: {len(got)} outputs, reference {len(expect)}"
        for g, e in zip(got, expect):
            assert tuple(g.shape) == e.shape, f"{op.name}: shape {tuple(g.shape)} != {e.shape}"
            if e.dtype == np.bool_:
                assert g.dtype == fg.bool, f"{op.name}: dtype {g.dtype}, expected bool"
                np.testing.assert_array_equal(g.numpy(), e)
            else:
                np.testing.assert_allclose(
                    g.detach().numpy().astype(np.float64), e.astype(np.float64),
                    rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{op.name} in {dtype}",
                )


def check_grad(op, data, second=False):
    call = data.draw(calls(op.sample))
    f, leaves = _as_fn(op, call)
    if not leaves:
        return
    leaves = [t.requires_grad_() for t in leaves]
    (gradgradcheck if second else gradcheck)(f, tuple(leaves))


def check_jvp(op, data):
    call = data.draw(calls(op.sample))
    f, leaves = _as_fn(op, call)
    if not leaves:
        return
    tangents = [fg.tensor(data.draw(values_like(call, op.sample)).args[i], dtype=fg.float64)
                for i in _split(call)[0]]
    _, jv = fg.func.jvp(lambda *ts: tuple(flat(f(*ts))), tuple(leaves), tuple(tangents))
    eps = 1e-6
    plus = flat(f(*[x + eps * t for x, t in zip(leaves, tangents)]))
    minus = flat(f(*[x - eps * t for x, t in zip(leaves, tangents)]))
    for j, p, m in zip(jv, plus, minus):
        if not p.dtype.is_floating_point:
            continue
        fd = (p - m).numpy() / (2 * eps)
        np.testing.assert_allclose(j.numpy(), fd, rtol=1e-5, atol=1e-5, err_msg=op.name)


def _batch(op, data, n=2):
    call = data.draw(calls(op.sample))
    more = [data.draw(values_like(call, op.sample)) for _ in range(n - 1)]
    return [call, *more]


def check_vmap(op, data, inplace=False):
    batch = _batch(op, data)
    call = batch[0]
    idx, _ = _split(call)
    if not idx:
        # No differentiable input: vmap over the first array argument instead.
        idx = [i for i, a in enumerate(call.args) if isinstance(a, np.ndarray)][:1]

    def rebuild(ts, fixed):
        args = list(fixed)
        for i, t in zip(idx, ts):
            args[i] = t
        return args

    def as_tensor(a):
        # Floats in float64; integer and bool arguments keep their dtype.
        a = np.asarray(a)
        return fg.tensor(a, dtype=fg.float64) if a.dtype.kind == "f" else fg.from_numpy(a.copy())

    fn = entry_point(op)
    fixed, kwargs = call.tensors(fg, fg.float64)
    if inplace:
        method = op.name + "_"
        if op.sample.kind == "ew":
            # An elementwise op writes its result into its first argument, so that
            # argument must already have the broadcast shape (eager refuses otherwise);
            # the fixed samples of other ops are drawn with the result's shape there.
            shapes = [np.shape(a) for a in call.args if isinstance(a, np.ndarray)]
            assume(np.broadcast_shapes(*shapes) == np.shape(call.args[0]))

        def inplace_fn(x, *args, **kw):
            return getattr(x, method)(*args, **kw)

        def g(*ts):
            # The sample's ``call`` (distinct indices, say) wraps the in-place form too.
            if op.sample.call is not None:
                return op.sample.call(inplace_fn, *rebuild(ts, fixed), **kwargs)
            return inplace_fn(*rebuild(ts, fixed), **kwargs)
    else:

        def g(*ts):
            return fn(*rebuild(ts, fixed), **kwargs)

    stacked = [as_tensor(np.stack([c.args[i] for c in batch])) for i in idx]
    if op.sample.seeded:
        check_vmap_random(g, stacked, [as_tensor(call.args[i]) for i in idx])
        return
    loop = []
    for c in batch:
        loop.append([t.clone() for t in flat(g(*[as_tensor(c.args[i]) for i in idx]))])
    got = flat(fg.vmap(g)(*stacked))
    for k, out in enumerate(got):
        want = np.stack([row[k].numpy() for row in loop])
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=op.name)


def check_vmap_random(g, stacked, first):
    """vmap of a random op (seeded on each call) by its ``randomness`` mode, as
    ``torch.func.vmap`` defines them: 'error' (the default) refuses it;
    'different' draws for the whole batch at once, so it gives what the op
    gives on the stacked samples; 'same' draws once for every sample, so a
    batch of equal samples gets equal rows."""
    with pytest.raises(RuntimeError, match="randomness"):
        fg.vmap(g)(*stacked)
    got = flat(fg.vmap(g, randomness="different")(*stacked))
    want = flat(g(*stacked))
    assert len(got) == len(want)
    for out, w in zip(got, want):
        np.testing.assert_array_equal(out.numpy(), w.numpy())
    same = [t.unsqueeze(0).expand(3, *t.shape).contiguous() for t in first]
    for out in flat(fg.vmap(g, randomness="same")(*same)):
        rows = out.numpy()
        for row in rows[1:]:
            np.testing.assert_array_equal(row, rows[0])


def check_compile(op, data):
    batch = _batch(op, data, n=3)
    idx, rebuild = _split(batch[0])
    # A random op is seeded outside the compiled function: a replay draws from
    # the generator as eager does, but does not re-run Python code.
    fn = entry_point(op, seed=False)
    seeded = op.sample.seeded
    fixed, kwargs = batch[0].tensors(fg, fg.float32)

    def step(*ts):
        out = flat(fn(*rebuild(ts, fixed), **kwargs))
        loss = None
        for k, o in enumerate(out):
            if o.requires_grad:
                term = (o * (k + 1.5)).sum()
                loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        with fg.no_grad():
            return [o.clone() for o in out]

    compiled = fg.compile(step, fullgraph=True)
    for c in batch:
        leaves_e = [fg.tensor(c.args[i], dtype=fg.float32, requires_grad=op.differentiable) for i in idx]
        leaves_c = [fg.tensor(c.args[i], dtype=fg.float32, requires_grad=op.differentiable) for i in idx]
        if seeded:
            fg.manual_seed(0)
        want = step(*leaves_e)
        if seeded:
            fg.manual_seed(0)
        got = compiled(*leaves_c)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=f"{op.name} output")
        for le, lc in zip(leaves_e, leaves_c):
            if le.grad is None:
                assert lc.grad is None
            else:
                np.testing.assert_array_equal(lc.grad.numpy(), le.grad.numpy(), err_msg=f"{op.name} grad")


def check_jacobian(op, data):
    call = data.draw(calls(op.sample))
    f, leaves = _as_fn(op, call)
    if not leaves:
        return

    def g(*ts):
        return tuple(o for o in flat(f(*ts)) if o.dtype.is_floating_point)

    fast = fg.autograd.functional.jacobian(g, tuple(leaves), vectorize=True)
    slow = fg.autograd.functional.jacobian(g, tuple(leaves), vectorize=False)
    for a, b in zip(flat(fast), flat(slow)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12, err_msg=op.name)


CHECKS = {
    schema.FORWARD: check_forward,
    schema.GRAD: check_grad,
    schema.GRADGRAD: lambda op, data: check_grad(op, data, second=True),
    schema.JVP: check_jvp,
    schema.VMAP: check_vmap,
    schema.VMAP_INPLACE: lambda op, data: check_vmap(op, data, inplace=True),
    schema.COMPILE: check_compile,
    schema.JACOBIAN: check_jacobian,
}


@pytest.mark.parametrize(("name", "feature"), cells())
def test_cell(name, feature, request):
    op = _registry.op(name)
    if feature in op.refuse:
        pytest.skip(f"refused: {op.refuse[feature]}")
    known_defect = feature in op.defects
    if known_defect:
        # Runs, and reports XPASS once the defect is fixed (then drop it from _gaps.py);
        # not strict, because hypothesis may miss the failing draw in a given run.
        request.applymarker(pytest.mark.xfail(reason=f"open defect: {op.defects[feature]}",
                                              strict=False))
    assert op.sample is not None, f"{name} declares no sample inputs and no refusal for {feature}"
    if feature == schema.FORWARD:
        assert op.ref is not None, f"{name} declares no reference and no refusal for forward"

    @(DEFECT_CELL if known_defect else CELL)
    @given(st.data())
    def run(data):
        CHECKS[feature](op, data)

    run()
