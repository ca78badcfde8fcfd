"""Batching rules, by category. A rule gets ``call`` (the op applied to
physical values: a ``ferrograd._C`` function or a Tensor method), the
arguments as the user passed them and the keyword arguments; it unwraps the
highest level among the arguments, adjusts dimensions for the batch
dimension at 0 and calls ``call`` once. Values of lower levels pass through
unchanged, so the inner call dispatches again for them (nested ``vmap``).
"""

from __future__ import annotations

from .. import _C, _registry
from .._registry import schema as _schema
from ..autograd import Function
from ._batched import (
    batch_size_of,
    check_random,
    forward_ad_active,
    inplace_error,
    is_tensorlike,
    materialize,
    max_level,
    norm_dim,
    pad_to,
    unwrap_at,
    wrap,
)
from ._nn_rules import batch_norm_rule, group_norm_rule, layer_norm_rule

__all__ = ["function_rule", "has_rule", "refusal"]


def _ndim_at(x, lid):
    v = unwrap_at(x, lid)
    return v.dim() - 1 if v is not None else x.dim()


# ----- elementwise -------------------------------------------------------------------------


def elementwise(call, args, kwargs):
    """Unary, binary and ternary elementwise ops: batched operands get size-1
    dimensions after the batch dimension up to the largest logical rank, so
    unbatched operands broadcast from the right as they would per sample."""
    lid = max_level(args, kwargs)
    nd = 0
    for a in list(args) + list(kwargs.values()):
        if is_tensorlike(a):
            nd = max(nd, _ndim_at(a, lid))

    def conv(a):
        v = unwrap_at(a, lid)
        return pad_to(v, nd) if v is not None else a

    out = call(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
    return wrap(out, lid)


def inplace_elementwise(name):
    """``x.add_(y)`` and friends: ``x`` must be batched at the highest level."""

    def rule(call, args, kwargs):
        lid = max_level(args, kwargs)
        self = args[0]
        v = unwrap_at(self, lid)
        if v is None:
            raise inplace_error(name)
        nd = v.dim() - 1

        def conv(a):
            w = unwrap_at(a, lid)
            return pad_to(w, nd) if w is not None else a

        call(v, *[conv(a) for a in args[1:]], **{k: conv(x) for k, x in kwargs.items()})
        return self

    return rule


# ----- dimension-taking ops ----------------------------------------------------------------


def _get(args, kwargs, pos, kw, default):
    if len(args) > pos:
        return args[pos], "pos"
    if kw in kwargs:
        return kwargs[kw], "kw"
    return default, None


def _put(args, kwargs, pos, kw, val, where):
    if where == "pos":
        args = list(args)
        args[pos] = val
    else:
        kwargs = dict(kwargs)
        kwargs[kw] = val
    return args, kwargs


def _shift(d, nd):
    if isinstance(d, (tuple, list)):
        return type(d)(norm_dim(x, nd) for x in d)
    return norm_dim(d, nd)


def dim_op(pos, kw="dim", default="required"):
    """An op with a dimension argument at ``pos`` (or keyword ``kw``): a
    non-negative dimension moves past the batch dimension; ``dim=None`` (when
    ``default="all"``) reduces all logical dimensions, by flattening them into
    one; an int ``default`` is the op's own default dimension."""

    def rule(call, args, kwargs):
        lid = max_level(args, kwargs)
        v = unwrap_at(args[0], lid)
        if v is None:
            v = materialize(args[0], lid, batch_size_of(args, lid))
        nd = v.dim() - 1
        d, where = _get(args[1:], kwargs, pos - 1, kw, None)
        rest, kwargs = list(args[1:]), dict(kwargs)
        if d is None and default == "all":
            flat = v.reshape(v.shape[0], -1)
            if where is None:
                kwargs[kw] = 1
            else:
                rest, kwargs = _put(rest, kwargs, pos - 1, kw, 1, where)
            out = call(flat, *rest, **kwargs)
            if isinstance(out, tuple):
                # max()/min()/median() over everything return the values only.
                out = out[0]
            # keepdim follows dim, positionally or by keyword.
            kd, _ = _get(args[1:], kwargs, pos, "keepdim", False)
            if kd:
                out = _map(out, lambda o: o.reshape(o.shape[0], *([1] * nd)))
            return wrap(out, lid)
        if d is None:
            if default == "required" or default == "all":
                return wrap(call(v, *rest, **kwargs), lid)
            d = default
            where = "kw"
        if nd == 0:
            # A 0-d logical tensor takes dimension 0 or -1 as itself.
            v = v.unsqueeze(1)
            nd = 1
        rest, kwargs = _put(rest, kwargs, pos - 1, kw, _shift(d, nd), where)
        return wrap(call(v, *rest, **kwargs), lid)

    return rule


def _map(out, fn):
    if isinstance(out, tuple):
        vals = [fn(o) for o in out]
        return type(out)(*vals) if hasattr(type(out), "_fields") else tuple(vals)
    return fn(out)


def max_min(name):
    """``max``/``min``: with a tensor ``other`` elementwise, else a reduction."""
    reduce = dim_op(1, "dim", "all")

    def rule(call, args, kwargs):
        other = args[1] if len(args) > 1 else kwargs.get("other")
        if is_tensorlike(other):
            return elementwise(call, args, kwargs)
        return reduce(call, args, kwargs)

    return rule


def full_reduce(fn):
    """``all``/``any``/``trace`` module functions: a result per sample."""

    def rule(call, args, kwargs):
        lid = max_level(args, kwargs)
        v = unwrap_at(args[0], lid)
        return wrap(fn(v), lid)

    return rule


def index_op(dim_pos, index_pos, name):
    """``gather``/``index_select``/``scatter``-like ops with an index tensor."""

    def rule(call, args, kwargs):
        lid = max_level(args, kwargs)
        v = unwrap_at(args[0], lid)
        idx = args[index_pos] if len(args) > index_pos else kwargs.get("index")
        bidx = unwrap_at(idx, lid) if is_tensorlike(idx) else None
        if name == "index_select" and bidx is not None:
            raise RuntimeError(
                "vmap: there is no batching rule for index_select with a batched index; "
                "use gather or indexing instead"
            )
        size = batch_size_of(args, lid)
        if v is None:
            v = materialize(args[0], lid, size)
        nd = v.dim() - 1
        args = list(args)
        args[0] = v
        d, where = _get(args, kwargs, dim_pos, "dim", None)
        args, kwargs = _put(args, kwargs, dim_pos, "dim", norm_dim(d, nd), where)
        if name != "index_select":
            # gather/scatter: the index (and src) get the batch dimension too.
            for i in range(1, len(args)):
                if i != dim_pos and is_tensorlike(args[i]):
                    args[i] = materialize(args[i], lid, size)
            for k in ("index", "src"):
                if k in kwargs and is_tensorlike(kwargs[k]):
                    kwargs[k] = materialize(kwargs[k], lid, size)
        return wrap(call(*args, **kwargs), lid)

    return rule


# ----- joining -----------------------------------------------------------------------------


def join(kind):
    """``cat``/``stack``: unbatched tensors are expanded over the batch."""

    def rule(call, args, kwargs):
        tensors = args[0] if args else kwargs["tensors"]
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        lid = max_level(list(tensors))
        size = batch_size_of(list(tensors), lid)
        vals = [materialize(t, lid, size) for t in tensors]
        nd = max(v.dim() - 1 for v in vals)
        if kind == "cat":
            # cat skips 1-D empty tensors as PyTorch's legacy rule does.
            d = norm_dim(dim, nd)
        else:
            d = norm_dim(dim, nd + 1)
        return wrap(call(vals, d), lid)

    return rule


# ----- matrix products ---------------------------------------------------------------------


def batched_matmul(a, b, lid):
    """``matmul`` of two operands at least one of which is batched at ``lid``."""
    va, vb = unwrap_at(a, lid), unwrap_at(b, lid)
    la = va.dim() - 1 if va is not None else a.dim()
    lb = vb.dim() - 1 if vb is not None else b.dim()
    if la == 0 or lb == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {la}D and {lb}D"
        )
    if vb is None and lb <= 2:
        # x @ W with W shared: one product with the batch folded into rows.
        if la == 1 and lb == 1:
            return wrap(_C.mv(va, b), lid)
        return wrap(_C.matmul(va, b), lid)
    if va is None and la <= 2 and lb == 1:
        # A @ v with v batched: (v_b @ A^T).
        return wrap(_C.matmul(vb, a.transpose(-1, -2) if la == 2 else a), lid)
    if va is None:
        va = a.unsqueeze(0)
    if vb is None:
        vb = b.unsqueeze(0)
    if la == 1 and lb == 1:
        return wrap((va * vb).sum(-1), lid)
    squeeze = []
    if la == 1:
        va = va.unsqueeze(-2)
        squeeze.append(-2)
    if lb == 1:
        vb = vb.unsqueeze(-1)
        squeeze.append(-1)
    n = max(va.dim(), vb.dim()) - 1
    out = _C.matmul(pad_to(va, n), pad_to(vb, n))
    for d in squeeze:
        out = out.squeeze(d)
    return wrap(out, lid)


def matmul_rule(call, args, kwargs):
    """``matmul`` and the ``@`` operators."""
    a, b = args[0], args[1] if len(args) > 1 else kwargs["other"]
    return batched_matmul(a, b, max_level((a, b)))


def product(expect_a, expect_b, name):
    """``mm``/``mv``/``dot``/``bmm``: ``matmul`` after PyTorch's rank checks."""

    def rule(call, args, kwargs):
        a, b = args[0], args[1]
        lid = max_level((a, b))
        la, lb = _ndim_at(a, lid), _ndim_at(b, lid)
        if la != expect_a or lb != expect_b:
            raise RuntimeError(
                f"{name}: expected {expect_a}-D and {expect_b}-D tensors, got {la}-D and {lb}-D"
            )
        return batched_matmul(a, b, lid)

    return rule


def outer_rule(call, args, kwargs):
    """``outer(a, b)`` as ``a[:, None] * b[None, :]`` on logical values."""
    a, b = args[0], args[1]
    return a.unsqueeze(-1) * b.unsqueeze(-2)


class _ExpandedWeightLinear(Function):
    """``linear`` of per-sample inputs with a per-sample weight whose
    samples share memory (a stride-0 batch dimension: the leaf ``grad``
    makes of a parameter under ``vmap``). The forward is one product with the
    shared weight; the backward gives each sample its own weight gradient, an
    outer product, without a batched product. Under ``create_graph`` the
    backward is written with the per-sample weight, so higher derivatives see
    every sample's weight."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        return _C.linear(x, w[0], None if b is None else b[0])

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = gw = gb = None
        if _C.is_grad_enabled():
            if ctx.needs_input_grad[0]:
                gx = _C.matmul(g.unsqueeze(-2), w).squeeze(-2)
        elif ctx.needs_input_grad[0]:
            gx = _C.mm(g, w[0])
        if ctx.needs_input_grad[1]:
            if _C.is_grad_enabled():
                gw = g.unsqueeze(-1) * x.unsqueeze(-2)
            else:
                # The same products, written past the caches: the result is batch x out x
                # in and nothing reads it soon.
                gw = _C._batched_outer(g, x)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = g
        return gx, gw, gb


def _shared(v):
    return isinstance(v, _C.Tensor) and v.dim() > 0 and v.stride()[0] == 0


def linear_rule(call, args, kwargs):
    """``F.linear``: one product with the batch folded into rows when the
    weight is shared, a batched product when it is per sample (one product
    and per-sample outer products for the backward when the per-sample
    weight is an expanded one, as under ``vmap(grad)``)."""
    x = args[0]
    w = args[1] if len(args) > 1 else kwargs["weight"]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    lid = max_level((x, w, bias))
    vx, vw = unwrap_at(x, lid), unwrap_at(w, lid)
    vb = unwrap_at(bias, lid) if bias is not None else None
    if vw is None and (bias is None or vb is None):
        return wrap(_C.linear(vx, w, bias), lid)
    if (
        isinstance(vx, _C.Tensor)
        and vx.dim() == 2
        and _shared(vw)
        and (bias is None or _shared(vb))
        and not forward_ad_active()
    ):
        return wrap(_ExpandedWeightLinear.apply(vx, vw, vb), lid)
    out = batched_matmul(x, w.transpose(-1, -2), lid)
    return out + bias if bias is not None else out


# ----- nn.functional -----------------------------------------------------------------------


def dropout_rule(call, args, kwargs):
    """``dropout``: refused in 'error' mode; 'different' draws a mask per
    sample, 'same' one mask for the whole batch."""
    x = args[0]
    p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
    training = args[2] if len(args) > 2 else kwargs.get("training", True)
    lid = max_level(args, kwargs)
    v = unwrap_at(x, lid)
    if not training or p == 0:
        return x
    mode = check_random(lid)
    if mode == "different":
        return wrap(_C.dropout(v, p, training), lid)
    ones = _C.ones(*x.shape, dtype=x.dtype)
    mask = _C.dropout(ones, p, training)
    return x * mask


def _per_sample_losses(call_none, inp, target, lid):
    """Per-element losses (reduction 'none') of classification losses, with
    the samples' rows flattened into one call."""
    size = batch_size_of((inp, target), lid)
    vi = materialize(inp, lid, size)
    vt = materialize(target, lid, size)
    if vi.dim() - 1 == 1:
        vi, vt = vi.unsqueeze(1), vt.unsqueeze(1)
    if vi.dim() - 1 != 2:
        raise RuntimeError(
            "vmap: the batching rule of cross_entropy/nll_loss supports per-sample inputs of "
            "shape [C] or [N, C]"
        )
    b, n, c = vi.shape
    losses = call_none(vi.reshape(b * n, c), vt.reshape(b * n))
    return losses.reshape(b, n), vt


def class_loss(name):
    """``cross_entropy``/``nll_loss``, reduced per sample as PyTorch reduces
    one sample's loss (the mean divides by the weight of the counted targets)."""

    def rule(call, args, kwargs):
        names = ["input", "target", "weight", "ignore_index", "reduction"]
        if name == "cross_entropy":
            names.append("label_smoothing")
        vals = dict(zip(names, args))
        vals.update(kwargs)
        inp, target = vals["input"], vals["target"]
        weight = vals.get("weight")
        ignore = vals.get("ignore_index", -100)
        reduction = vals.get("reduction", "mean")
        lid = max_level((inp, target, weight))
        if weight is not None and unwrap_at(weight, lid) is not None:
            raise RuntimeError(f"vmap: {name} with a batched class weight is not supported")
        logical_1d = _ndim_at(inp, lid) == 1
        extra = [vals.get("label_smoothing", 0.0)] if name == "cross_entropy" else []

        def call_none(i, t):
            return call(i, t, weight, ignore, "none", *extra)

        losses, vt = _per_sample_losses(call_none, inp, target, lid)
        if reduction == "none":
            out = losses.squeeze(1) if logical_1d else losses
        elif reduction == "sum":
            out = losses.sum(1)
        else:
            keep = (vt != ignore).to(losses.dtype)
            if weight is not None:
                safe = vt.clamp(min=0) if ignore < 0 else vt
                keep = keep * weight.index_select(0, safe.reshape(-1)).reshape(vt.shape)
            out = losses.sum(1) / keep.sum(1)
        return wrap(out, lid)

    return rule


def pointwise_loss(name):
    """``mse_loss`` and the other elementwise losses: 'none' elementwise, then
    the reduction over each sample's logical elements."""

    def rule(call, args, kwargs):
        vals = dict(zip(["input", "target", "reduction"], args))
        vals.update(kwargs)
        extra = list(args[3:])
        reduction = vals.get("reduction", "mean")
        out = elementwise(
            lambda i, t: call(i, t, "none", *extra), (vals["input"], vals["target"]), {}
        )
        return _reduced(out, reduction)

    return rule


def weighted_loss(name):
    """``binary_cross_entropy`` (``input, target, weight, reduction``) and
    ``binary_cross_entropy_with_logits`` (``..., pos_weight``): 'none'
    elementwise over every tensor operand (a per-sample weight included),
    then the reduction over each sample's logical elements."""
    names = ["input", "target", "weight", "reduction"]
    if name.endswith("_with_logits"):
        names.append("pos_weight")

    def rule(call, args, kwargs):
        vals = dict(zip(names, args))
        vals.update(kwargs)
        reduction = vals.get("reduction", "mean")
        operands = [vals.get(n) for n in names if n != "reduction"]
        # The kernel wants input and target of one shape: both carry the batch.
        lid = max_level(operands)
        size = batch_size_of(operands, lid)
        operands[:2] = [wrap(materialize(v, lid, size), lid) for v in operands[:2]]

        def none(i, t, w, *pos_weight):
            return call(i, t, w, "none", *pos_weight)

        return _reduced(elementwise(none, operands, {}), reduction)

    return rule


def _reduced(out, reduction):
    # A loss's reduction over each sample's logical elements ('none' keeps them).
    if reduction == "sum":
        return out.sum()
    if reduction == "mean":
        return out.mean()
    return out


def like_rule(call, args, kwargs):
    """``zeros_like``/``ones_like``/``full_like``: the same tensor for every sample."""
    lid = max_level(args, kwargs)
    return wrap(call(unwrap_at(args[0], lid), *args[1:], **kwargs), lid)


def random_like_rule(call, args, kwargs):
    """``rand_like``/``randn_like``/``randint_like``: refused in 'error' mode;
    'different' draws per sample, 'same' once for the batch."""
    lid = max_level(args, kwargs)
    v = unwrap_at(args[0], lid)
    if check_random(lid) == "different":
        return wrap(call(v, *args[1:], **kwargs), lid)
    one = call(v.select(0, 0), *args[1:], **kwargs)
    return wrap(one.unsqueeze(0).expand(*v.shape), lid)


def bernoulli_rule(call, args, kwargs):
    """``bernoulli(input, p=None)``: refused in 'error' mode; 'different' draws
    for the whole batch at once; 'same' shares the randomness: one draw for a
    number ``p``, else one set of uniforms compared with each sample's
    probabilities."""
    lid = max_level(args, kwargs)
    v = unwrap_at(args[0], lid)
    p = args[1] if len(args) > 1 else kwargs.get("p")
    if check_random(lid) == "different":
        return wrap(call(v, *args[1:], **kwargs), lid)
    if p is not None:
        one = call(v.select(0, 0), *args[1:], **kwargs)
        return wrap(one.unsqueeze(0).expand(*v.shape), lid)
    u = _C.rand(*v.shape[1:], dtype=_C.float64, generator=kwargs.get("generator"))
    return wrap((u < v).to(v.dtype), lid)


# ----- searching and membership (NumPy-backed ops, batched on the physical values) --------


def searchsorted_rule(call, args, kwargs):
    """``searchsorted(sorted_sequence, values)``: values alone batched against a
    shared 1-D sequence is elementwise in the values; otherwise each sample's
    sequence gets its own row, which the N-D form of the op searches row by row."""
    lid = max_level(args, kwargs)
    seq, values = args[0], args[1]
    sorter = kwargs.get("sorter")
    own_rows = unwrap_at(seq, lid) is not None or unwrap_at(sorter, lid) is not None
    if not own_rows and seq.dim() == 1:
        return wrap(call(seq, unwrap_at(values, lid), *args[2:], **kwargs), lid)
    size = batch_size_of([seq, values, sorter], lid)
    s = materialize(seq, lid, size)
    kw = dict(kwargs)
    if sorter is not None:
        kw["sorter"] = materialize(sorter, lid, size)
    if not is_tensorlike(values):
        v = _C.full((size, 1), values, dtype=s.dtype)
        return wrap(call(s, v, **kw).reshape(size), lid)
    v = materialize(values, lid, size)
    if s.dim() == 2:
        # A 1-D sequence per sample: the sample's values are searched as one row.
        return wrap(call(s, v.reshape(size, -1), **kw).reshape(v.shape), lid)
    return wrap(call(s, v, **kw), lid)


def bucketize_rule(call, args, kwargs):
    """``bucketize(input, boundaries)``: elementwise in ``input`` for shared
    boundaries; batched boundaries search each sample's row."""
    lid = max_level(args, kwargs)
    inp, boundaries = args[0], args[1]
    if unwrap_at(boundaries, lid) is None:
        return wrap(call(unwrap_at(inp, lid), boundaries, **kwargs), lid)
    from .._composite import searchsorted

    return searchsorted_rule(searchsorted, (boundaries, inp), kwargs)


def isin_rule(call, args, kwargs):
    """``isin(elements, test_elements)``: elementwise in ``elements`` for shared
    test elements; batched test elements are compared sample by sample."""
    lid = max_level(args, kwargs)
    elements, test = args[0], args[1]
    if unwrap_at(test, lid) is None:
        return wrap(call(unwrap_at(elements, lid), test, **kwargs), lid)
    size = batch_size_of([elements, test], lid)
    t = materialize(test, lid, size).reshape(size, 1, -1)
    if is_tensorlike(elements):
        e = materialize(elements, lid, size)
    else:
        e = _C.full((size,), elements, dtype=t.dtype)
    hit = (e.reshape(size, -1, 1) == t).any(-1).reshape(e.shape)
    return wrap(hit.logical_not() if kwargs.get("invert", False) else hit, lid)


def unravel_index_rule(call, args, kwargs):
    """``unravel_index(indices, shape)``: elementwise in the indices."""
    lid = max_level(args, kwargs)
    return wrap(call(unwrap_at(args[0], lid), *args[1:], **kwargs), lid)


def one_hot_rule(call, args, kwargs):
    """``one_hot(tensor, num_classes)``: elementwise in the indices, with the
    classes' dimension last; the number of classes must be given, since
    inferring it would read every sample's values (PyTorch refuses too)."""
    lid = max_level(args, kwargs)
    num_classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
    if num_classes == -1:
        raise RuntimeError(
            "vmap: one_hot needs num_classes: inferring it would read the values of every "
            "sample (pass num_classes=...)"
        )
    return wrap(call(unwrap_at(args[0], lid), num_classes), lid)


# ----- the table of module-function rules --------------------------------------------------



def _all(v):
    return (v.reshape(v.shape[0], -1) == 0).sum(1) == 0


def _any(v):
    return (v.reshape(v.shape[0], -1) != 0).sum(1) > 0


def _trace(v):
    return v.diagonal(0, 1, 2).sum(-1)


def _msort(call, args, kwargs):
    """``msort``: a sort along the first logical dimension."""
    lid = max_level(args, kwargs)
    v = unwrap_at(args[0], lid)
    return wrap(_C.sort(v, 1 if v.dim() > 1 else 0)[0], lid)


def broadcast_tensors_rule(call, args, kwargs):
    """``broadcast_tensors``: every value expanded to the broadcast of the logical shapes
    (``expand`` on a batched value keeps its batch dimension)."""
    from .. import broadcast_shapes

    shape = broadcast_shapes(*(tuple(a.shape) for a in args))
    return tuple(a.expand(shape) for a in args)


def einsum_rule(call, args, kwargs):
    """``einsum``: each batched operand gets a subscript of its own for its
    batch dimension (a letter the equation does not use), which the output
    keeps first; an implicit output is made explicit first (the ellipsis,
    then the letters used once, sorted), so the new letter is not summed."""
    eq, ops = args[0], list(args[1:])
    while len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = list(ops[0])
    if not isinstance(eq, str):
        raise RuntimeError("vmap: einsum is batched only in its equation form (a string first)")
    lid = max_level(ops)
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    letters = [c for c in lhs if c.isalpha()]
    if not arrow:
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        rhs = ("..." if "..." in lhs else "") + "".join(once)
    free = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in eq)
    values = [unwrap_at(o, lid) for o in ops]
    if len(terms) == len(ops):
        terms = [free + t if v is not None else t for t, v in zip(terms, values)]
    values = [v if v is not None else o for v, o in zip(values, ops)]
    return wrap(call(",".join(terms) + "->" + free + rhs, *values, **kwargs), lid)


_FUNCTION_RULES = {
    "broadcast_tensors": broadcast_tensors_rule,
    "einsum": einsum_rule,
    "matmul": matmul_rule,
    "mm": product(2, 2, "mm"),
    "mv": product(2, 1, "mv"),
    "dot": product(1, 1, "dot"),
    "bmm": product(3, 3, "bmm"),
    "outer": outer_rule,
    "cat": join("cat"),
    "stack": join("stack"),
    "linear": linear_rule,
    "dropout": dropout_rule,
    "cross_entropy": class_loss("cross_entropy"),
    "nll_loss": class_loss("nll_loss"),
    "mse_loss": pointwise_loss("mse_loss"),
    "l1_loss": pointwise_loss("l1_loss"),
    "smooth_l1_loss": pointwise_loss("smooth_l1_loss"),
    "huber_loss": pointwise_loss("huber_loss"),
    "binary_cross_entropy": weighted_loss("binary_cross_entropy"),
    "binary_cross_entropy_with_logits": weighted_loss("binary_cross_entropy_with_logits"),
    "all": full_reduce(_all),
    "any": full_reduce(_any),
    "trace": full_reduce(_trace),
    "_like": like_rule,
    "_random_like": random_like_rule,
    "sort": dim_op(1, "dim", -1),
    "argsort": dim_op(1, "dim", -1),
    "topk": dim_op(2, "dim", -1),
    "kthvalue": dim_op(2, "dim", -1),
    "mode": dim_op(1, "dim", -1),
    "median": dim_op(1, "dim", "all"),
    "nanmedian": dim_op(1, "dim", "all"),
    "msort": _msort,
    "bernoulli": bernoulli_rule,
    "searchsorted": searchsorted_rule,
    "bucketize": bucketize_rule,
    "isin": isin_rule,
    "unravel_index": unravel_index_rule,
    "one_hot": one_hot_rule,
    "layer_norm": layer_norm_rule,
    "batch_norm": batch_norm_rule,
    "group_norm": group_norm_rule,
}
# Every elementwise op of the registry (and its aliases), by its declaration.
for _op in _registry.ops():
    if _op.batching == _schema.EW or _op.batching_rule == "elementwise":
        for _n in _op.names:
            _FUNCTION_RULES.setdefault(_n, elementwise)


def _no_rule(name):
    reason = refusal(name)

    def rule(call, args, kwargs):
        raise RuntimeError(
            f"vmap: there is no batching rule for ferrograd.{name}; it cannot be used inside "
            "vmap/jacrev/jacfwd (ferrograd never falls back to a slow per-sample loop)" + reason
        )

    return rule


# Keyword-only parameters that the dispatch protocol passes positionally.
_KEYWORD_ONLY = {"add": ("alpha",), "sub": ("alpha",), "sort": ("stable",), "argsort": ("stable",),
                 "bernoulli": ("generator",)}


def has_rule(name):
    """Whether ``name`` has a batching rule or a stated refusal: a function written
    in Python then hands a batched call to its rule rather than running on the
    batched values."""
    return name in _FUNCTION_RULES or bool(refusal(name))


def refusal(name):
    """The registry's stated reason why ``name`` has no batching rule, as a
    sentence to append to the error (empty when none is declared)."""
    try:
        why = _registry.op(name.rstrip("_")).refuse.get(_schema.VMAP)
    except KeyError:
        return ""
    return f": {why}" if why else ""


def function_rule(func):
    """The batching rule of the ``ferrograd._C`` function ``func``."""
    name = getattr(func, "__name__", repr(func))
    rule = _FUNCTION_RULES.get(name)
    if rule is None:
        return _no_rule(name)
    kwonly = _KEYWORD_ONLY.get(name)
    if kwonly is None:
        return rule

    def adapted(call, args, kwargs):
        npos = len(args) - len(kwonly)
        extra = {k: v for k, v in zip(kwonly, args[npos:]) if v is not None}
        return rule(call, args[:npos], {**kwargs, **extra})

    return adapted
