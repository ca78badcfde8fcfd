"""Hostile-shape fuzzing of every public op, each call in a worker process.

Every function of ``ferrograd`` and ``ferrograd.nn.functional`` and every
``Tensor`` method (enumerated from ``dir()``, so a new op is fuzzed without
being listed) is called with tensors of hostile shapes (zero-size
dimensions, size one, large-but-empty like ``[2**40, 0]``, broadcast and
strided views) holding special values (NaN, +-inf, -0.0, subnormals, the
integer extremes), and with hostile sizes (negative, zero, ``2**31``,
``2**62``, ``2**63 - 1``, NaN and huge scale factors). Each call must return
or raise an ordinary Python exception: a ``PanicException``, the text of a
caught panic ("internal error in ferrograd"), a signal (segfault, abort on a
refused allocation) or a hang fails the test, naming the op and its
arguments.

The calls run in worker processes (this file run as a script), under an
address-space limit so that a request for terabytes fails at once instead of
being granted lazily, with ``faulthandler`` armed so that a call that runs for
too long is killed and reported. A worker that dies is restarted after the
op that killed it, so one crash does not hide the rest.

Every op of the registry (``ferrograd._registry``) is fuzzed a second way,
from its own declared samples (``reg.<name>``): a call drawn as the coverage
matrix draws it, then made hostile. Its floating inputs get NaN, +-inf, -0.0,
subnormals and the largest floats in random places, in a random dtype (the
four floating ones, and integer and bool ones too); its tensors may become
strided views, broadcast views past the grain size or of 2**32 elements (an
output the address-space limit refuses), or tensors with a zero-size
dimension beside a ``2**40`` one. So every op runs its kernels on special
values and on the shapes that overflow careless size arithmetic, not only on
arguments its checks refuse.

The number of examples per op follows the hypothesis profile of
``tests/conftest.py`` (``dev`` quick, ``ci`` thorough);
``FERROGRAD_FUZZ_EXAMPLES`` overrides it, and ``FERROGRAD_FUZZ_RANDOM=1``
draws new examples on each run instead of the same derandomized ones.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import types
import zlib

import pytest

# -- what is fuzzed -------------------------------------------------------------------

# Not ops, or ops whose effect is process-wide state, files or a long wait.
SKIP_FUNCTIONS = {
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "set_anomaly_enabled",
    "set_num_threads", "set_num_interop_threads", "dtype", "Size", "set_default_dtype",
    "set_default_tensor_type", "save", "load", "set_printoptions",
    "use_deterministic_algorithms", "manual_seed", "seed", "set_rng_state", "compile",
    "Generator", "device", "set_flush_denormal", "vmap", "autocast",
}
SKIP_METHODS = {
    "__class__", "__delattr__", "__dir__", "__doc__", "__format__", "__getattribute__",
    "__getstate__", "__init__", "__init_subclass__", "__module__", "__new__", "__reduce__",
    "__reduce_ex__", "__setattr__", "__sizeof__", "__subclasshook__", "__hash__",
    "__array_priority__", "__setstate__", "__weakref__", "__dict__", "__slots__",
    "register_hook", "register_post_accumulate_grad_hook", "share_memory_",
}
SKIP_NN = {"_Reduction", "Tensor"}


def _public_callables(namespace, names, skip):
    out = {}
    for name in names:
        if name.startswith("_") or name in skip:
            continue
        obj = getattr(namespace, name, None)
        if obj is None or isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        if inspect.isclass(obj):
            continue
        out[name] = obj
    return out


def ops():
    """Every fuzzed op: ``{"fg.name" | "F.name" | "Tensor.name": callable-or-name}``."""
    import ferrograd as fg
    import ferrograd.nn.functional as F

    out = {}
    for name, fn in _public_callables(fg, getattr(fg, "__all__", dir(fg)), SKIP_FUNCTIONS).items():
        out["fg." + name] = fn
    for name, fn in _public_callables(F, dir(F), SKIP_NN).items():
        out["F." + name] = fn
    for name in dir(fg.Tensor):
        if name in SKIP_METHODS or (name.startswith("_") and not name.startswith("__")):
            continue
        attr = inspect.getattr_static(fg.Tensor, name)
        if isinstance(attr, (int, float, str, type(None))):
            continue
        out["Tensor." + name] = name
    from ferrograd import _registry

    for op in _registry.ops():
        if op.sample is not None:
            out["reg." + op.name] = op.name
    return out


# -- hostile inputs -------------------------------------------------------------------

HUGE = [2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1]
SIZES = [0, 1, 2, 3, -1, -2, -(2**63)] + HUGE
FLOATS = [0.0, -0.0, 0.5, 1.0, -1.5, 2.0, math.nan, math.inf, -math.inf, 1e8, 1e300, 5e-324,
          1e-40]
SHAPES = [(), (0,), (1,), (3,), (2, 3), (0, 3), (3, 0), (1, 1, 1), (2, 0, 3), (2, 3, 4),
          (1, 2, 3, 3), (2**40, 0), (0, 2**40), (2**62, 0), (1, 2**31, 0, 3), (2, 1, 4, 4, 4)]


def special_values(fg, dtype):
    if dtype.is_floating_point:
        finfo = fg.finfo(dtype)
        return [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, math.nan, math.inf, -math.inf, finfo.max,
                -finfo.max, finfo.tiny, finfo.tiny / 4]
    if dtype == fg.bool:
        return [False, True]
    info = fg.iinfo(dtype)
    return [0, 1, -1, 2, 7, info.max, info.min] if info.min < 0 else [0, 1, 2, 7, info.max]


@functools.cache
def strategies():
    """The hypothesis strategies, built lazily (the worker imports them, pytest needs none)."""
    from hypothesis import strategies as st

    import ferrograd as fg

    dtypes = [d for d in (fg.float32, fg.float64, fg.int64, fg.bool, getattr(fg, "float16", None),
                          getattr(fg, "bfloat16", None), getattr(fg, "int32", None),
                          getattr(fg, "uint8", None)) if d is not None]

    @st.composite
    def tensors(draw, shape=None):
        dtype = draw(st.sampled_from(dtypes[:2] * 3 + dtypes))
        shape = draw(st.sampled_from(SHAPES)) if shape is None else shape
        n = math.prod(shape)
        vals = special_values(fg, dtype)
        if n == 0:
            t = fg.empty(shape, dtype=dtype)
        else:
            t = fg.tensor(draw(st.lists(st.sampled_from(vals), min_size=n, max_size=n)),
                          dtype=dtype).reshape(shape)
        kind = draw(st.sampled_from(["plain", "plain", "t", "expand", "step"]))
        if kind == "t" and t.dim() >= 2:
            t = t.transpose(0, -1).contiguous().transpose(0, -1)
        elif kind == "expand" and t.dim() >= 1 and 0 < n <= 4:
            # Past the grain size (parallel paths), or a view of 2**30 elements in
            # one: any op that materialises it asks for gigabytes.
            big = draw(st.sampled_from([5, 40_000, 40_000, 2**30]))
            t = t.reshape(-1)[:1].expand(big)
        elif kind == "step" and t.dim() >= 1 and 0 < n:
            t = fg.cat([t, t], 0)[::2]
        if dtype.is_floating_point and draw(st.booleans()):
            t = t.detach().requires_grad_(True)
        return t

    ints = st.sampled_from(SIZES)
    small = st.integers(-3, 4)
    int_seq = st.lists(st.one_of(small, ints), min_size=0, max_size=4)
    floats = st.sampled_from(FLOATS)
    scalar = st.one_of(floats, small, ints, st.booleans())
    tensor = tensors()
    tensor_or_scalar = st.one_of(tensor, tensor, scalar)
    size_like = st.one_of(ints, small, int_seq.map(tuple), int_seq)
    by_name = {
        "dim": st.one_of(small, ints, st.none(), int_seq.map(tuple)),
        "dims": int_seq.map(tuple),
        "keepdim": st.booleans(),
        "dtype": st.one_of(st.none(), st.sampled_from(dtypes)),
        "size": size_like, "sizes": size_like, "shape": size_like, "output_size": size_like,
        "kernel_size": size_like, "stride": size_like, "padding": st.one_of(size_like,
                                                                            st.just("same")),
        "dilation": size_like, "output_padding": size_like, "pad": int_seq.map(tuple),
        "scale_factor": st.one_of(floats, st.none()), "num_samples": ints, "n": ints,
        "k": st.one_of(small, ints), "groups": st.one_of(small, ints), "repeats": st.one_of(
            small, ints, tensor), "bins": ints, "minlength": ints, "num_classes": ints,
        "steps": ints, "end": scalar, "start": scalar, "step": scalar, "window_length": ints,
        "diagonal": st.one_of(small, ints), "offset": st.one_of(small, ints),
        "chunks": st.one_of(small, ints), "split_size_or_sections": st.one_of(small, ints,
                                                                               int_seq),
        "indices_or_sections": st.one_of(small, ints, int_seq), "upscale_factor": ints,
        "downscale_factor": ints, "num_groups": ints, "normalized_shape": size_like,
        "reduction": st.sampled_from(["mean", "sum", "none"]), "p": st.one_of(floats, small),
        "mode": st.sampled_from(["nearest", "bilinear", "linear", "constant", "reflect",
                                 "replicate", "circular", "bicubic", "area"]),
        "requires_grad": st.booleans(), "inplace": st.booleans(), "training": st.booleans(),
        "ceil_mode": st.booleans(), "return_indices": st.booleans(),
        "tensors": st.lists(tensor, min_size=0, max_size=3),
        "index": st.one_of(tensor, small, ints), "indices": st.one_of(tensor, small, ints),
        "generator": st.none(), "device": st.none(), "out": st.none(),
        "layout": st.none(), "pin_memory": st.just(False), "memory_format": st.none(),
        "equation": st.sampled_from(["ij->ji", "i,i->", "ij,jk->ik", "...->...", "ii->i"]),
    }
    for name in ("input", "self", "other", "weight", "bias", "target", "src", "source",
                 "tensor", "tensor1", "tensor2", "mat1", "mat2", "mat", "vec", "vec1", "vec2",
                 "batch1", "batch2", "x", "y", "x1", "x2", "input1", "input2", "values",
                 "mask", "condition", "running_mean", "running_var", "query", "key", "value",
                 "boundaries", "sorted_sequence", "exponent", "min", "max", "a", "b",
                 "weights", "elements", "test_elements", "end", "fill_value", "data"):
        by_name.setdefault(name, tensor_or_scalar)
    anything = st.one_of(tensor, tensor, scalar, size_like, st.none())
    return st, by_name, anything, tensor


# -- shape-aware arguments for the ops whose inputs must fit together -----------------
#
# A convolution called with random tensors almost always fails its shape checks
# and never reaches a kernel. For these families the arguments are drawn to fit
# (ranks, channels, classes), with the spatial sizes, batch and hyper-parameters
# still hostile: zero and one, huge paddings, strides, dilations, kernel and
# output sizes, scale factors.


def _family_args(st, data, name, fg):
    """(args, kwargs) for `name` when it belongs to a family below, else None."""
    import re

    dt = data.draw(st.sampled_from([fg.float32, fg.float64]), label="dtype")
    vals = special_values(fg, dt)

    def t(*shape, dtype=dt, grad=True):
        n = math.prod(shape)
        if n == 0:
            x = fg.empty(shape, dtype=dtype)
        elif dtype.is_floating_point:
            picks = data.draw(st.lists(st.sampled_from(vals), min_size=min(n, 64),
                                       max_size=min(n, 64)), label="values")
            x = fg.tensor((picks * (n // len(picks) + 1))[:n], dtype=dtype).reshape(shape)
        else:
            x = fg.randint(0, max(1, shape[-1] if shape else 2), shape)
        if grad and dtype.is_floating_point and data.draw(st.booleans(), label="grad"):
            x.requires_grad_(True)
        return x

    small = st.integers(0, 3)
    hostile = st.sampled_from([0, 1, 2, 3, 5, -1, 2**31, 2**40, 2**62, 2**63 - 1])
    size = st.one_of(small, small, hostile)

    def hyper():
        return data.draw(st.one_of(st.integers(1, 3), st.integers(1, 3), hostile), label="hyper")

    m = re.fullmatch(r"F\.(conv|conv_transpose)([123])d", name)
    if m:
        sd = int(m.group(2))
        groups = data.draw(st.sampled_from([1, 1, 2]), label="groups")
        c_in, c_out = groups * data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))
        n = data.draw(size, label="batch") if data.draw(st.booleans()) else 1
        spatial = [data.draw(st.integers(0, 5), label="spatial") for _ in range(sd)]
        ks = [data.draw(st.integers(1, 3), label="k") for _ in range(sd)]
        if n > 4:
            n = 1
        x = t(n, c_in, *spatial)
        if m.group(1) == "conv":
            w = t(c_out, c_in // groups, *ks)
        else:
            w = t(c_in, c_out // groups, *ks)
        b = t(c_out) if data.draw(st.booleans()) else None
        kw = {"stride": hyper(), "padding": data.draw(size, label="padding"),
              "dilation": hyper(), "groups": groups}
        if m.group(1) == "conv_transpose":
            kw["output_padding"] = data.draw(st.sampled_from([0, 0, 1, 2**40]))
        return [x, w, b], kw
    m = re.fullmatch(r"F\.(max|avg|lp)_pool([123])d(_with_indices)?", name)
    if m:
        sd = int(m.group(2))
        x = t(data.draw(st.integers(0, 2)), 2, *[data.draw(st.integers(0, 6)) for _ in range(sd)])
        args = [x] if m.group(1) != "lp" else [x, data.draw(st.sampled_from([1, 2, 0.5, math.inf,
                                                                           math.nan]))]
        kw = {"kernel_size": hyper(), "stride": data.draw(st.one_of(st.none(), size)),
              "ceil_mode": data.draw(st.booleans())}
        if m.group(1) != "lp":
            kw["padding"] = data.draw(st.sampled_from([0, 0, 1, 2**40]))
        if m.group(1) == "max":
            kw["dilation"] = hyper()
        return args, kw
    m = re.fullmatch(r"F\.adaptive_(max|avg)_pool([123])d(_with_indices)?", name)
    if m:
        sd = int(m.group(2))
        x = t(data.draw(st.integers(0, 2)), 2, *[data.draw(st.integers(0, 6)) for _ in range(sd)])
        return [x, data.draw(size, label="output_size")], {}
    m = re.fullmatch(r"F\.(interpolate|upsample|upsample_nearest|upsample_bilinear)", name)
    if m:
        sd = data.draw(st.sampled_from([1, 2]))
        x = t(data.draw(st.integers(0, 2)), 2, *[data.draw(st.integers(0, 5)) for _ in range(sd)])
        if data.draw(st.booleans()):
            kw = {"scale_factor": data.draw(st.sampled_from(
                [0.5, 1.0, 2.0, 3.7, 1e8, 1e300, math.inf, math.nan, 0.0, -1.0]))}
        else:
            kw = {"size": data.draw(size, label="size")}
        if name == "F.interpolate":
            kw["mode"] = data.draw(st.sampled_from(["nearest", "linear", "bilinear"]))
        return [x], kw
    if name in ("F.fold", "F.unfold"):
        if name == "F.unfold":
            x = t(data.draw(st.integers(0, 2)), 2, data.draw(st.integers(0, 5)),
                  data.draw(st.integers(0, 5)))
            return [x, hyper()], {"dilation": hyper(), "padding": data.draw(size),
                                  "stride": hyper()}
        k = data.draw(st.integers(1, 3))
        x = t(data.draw(st.integers(0, 2)), 2 * k * k, data.draw(st.integers(0, 9)))
        return [x, data.draw(size, label="output_size"), k], {
            "dilation": hyper(), "padding": data.draw(size), "stride": hyper()}
    if name == "F.pad":
        x = t(*[data.draw(st.integers(0, 4)) for _ in range(data.draw(st.integers(1, 4)))])
        pads = data.draw(st.lists(st.one_of(st.integers(-3, 3), hostile), min_size=2,
                                  max_size=4), label="pad")
        if len(pads) % 2:
            pads.append(0)
        return [x, tuple(pads)], {
            "mode": data.draw(st.sampled_from(["constant", "reflect", "replicate", "circular"])),
            "value": data.draw(st.sampled_from([None, 0.0, math.nan, -math.inf]))}
    if name in ("F.batch_norm", "F.instance_norm", "F.group_norm", "F.layer_norm", "F.rms_norm",
                "F.local_response_norm"):
        c = data.draw(st.integers(1, 3))
        x = t(data.draw(st.integers(0, 3)), c, *[data.draw(st.integers(0, 3))
                                              for _ in range(data.draw(st.integers(0, 2)))])
        if name == "F.batch_norm":
            return [x, t(c, grad=False), t(c, grad=False).abs()], {
                "weight": t(c), "bias": t(c), "training": data.draw(st.booleans())}
        if name == "F.instance_norm":
            return [x], {"weight": t(c), "bias": t(c)}
        if name == "F.group_norm":
            return [x, data.draw(st.sampled_from([1, c, 2**40, 0]))], {}
        if name == "F.local_response_norm":
            return [x, data.draw(size)], {}
        return [x, tuple(x.shape[-1:]) if x.dim() else ()], {}
    if name in ("F.embedding", "F.embedding_bag"):
        v = data.draw(st.integers(0, 4))
        idx = fg.tensor(data.draw(st.lists(st.sampled_from([0, 1, 2, 3, -1, 2**40]), max_size=6)),
                        dtype=fg.int64)
        return [idx if name == "F.embedding" else idx.reshape(1, -1), t(v, 3)], (
            {"padding_idx": data.draw(st.sampled_from([None, 0, -1, 2**40]))}
            if name == "F.embedding" else {})
    if name == "F.one_hot":
        idx = fg.tensor(data.draw(st.lists(st.sampled_from([0, 1, 3, -1, 2**40]), max_size=5)),
                        dtype=fg.int64)
        return [idx, data.draw(st.sampled_from([-1, 0, 4, 2**31, 2**40, 2**62]))], {}
    if name in ("F.linear", "F.bilinear"):
        i, o = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
        x = t(data.draw(st.integers(0, 3)), i)
        if name == "F.linear":
            return [x, t(o, i), t(o) if data.draw(st.booleans()) else None], {}
        return [x, t(x.shape[0], i), t(o, i, i), t(o)], {}
    if name in ("F.pixel_shuffle", "F.pixel_unshuffle", "F.channel_shuffle",
                "F.native_channel_shuffle"):
        x = t(1, data.draw(st.sampled_from([0, 1, 4, 8])), data.draw(st.integers(0, 4)),
              data.draw(st.integers(0, 4)))
        return [x, data.draw(size)], {}
    if name in ("F.cross_entropy", "F.nll_loss", "F.multi_margin_loss",
                "F.multilabel_margin_loss"):
        n, c = data.draw(st.integers(0, 3)), data.draw(st.integers(1, 4))
        x = t(n, c)
        target = fg.tensor(data.draw(st.lists(st.sampled_from([0, 1, c - 1, -100, c, 2**40]),
                                              min_size=n, max_size=n)), dtype=fg.int64)
        if name == "F.multilabel_margin_loss":
            target = fg.zeros(n, c, dtype=fg.int64)
        kw = {"reduction": data.draw(st.sampled_from(["mean", "sum", "none"]))}
        if name == "F.cross_entropy":
            kw["label_smoothing"] = data.draw(st.sampled_from([0.0, 0.1, 1.0]))
        return [x, target], kw
    if name == "F.scaled_dot_product_attention":
        b, lq, lk, e = (data.draw(st.integers(0, 2)) for _ in range(4))
        return [t(b, lq, e), t(b, lk, e), t(b, lk, e)], {
            "is_causal": data.draw(st.booleans()),
            "scale": data.draw(st.sampled_from([None, 0.0, math.inf, math.nan]))}
    if name in ("F.glu", "F.pdist", "F.cosine_similarity", "F.pairwise_distance"):
        x = t(data.draw(st.integers(0, 3)), data.draw(st.sampled_from([0, 1, 2, 4])))
        if name == "F.glu":
            return [x], {"dim": data.draw(st.sampled_from([-1, 0, 1]))}
        if name == "F.pdist":
            return [x], {"p": data.draw(st.sampled_from([0, 1, 2, math.inf, 0.5]))}
        return [x, t(*x.shape)], {}
    return None


# -- the registry's ops, from their declared samples ----------------------------------

REG_SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, -1e-310, 1e-40, 1.7e308,
                -1.7e308, 65504.0, 1.0]
REG_LAYOUTS = ["plain", "plain", "strided", "transposed", "expand", "huge_empty", "zero_batch"]


def _hostile_tensor(fg, t, layout, big):
    """`t` as a tensor of the same values in `layout` (see REG_LAYOUTS); views
    of a tensor that requires grad stay in its graph."""
    if layout == "strided" and t.dim() >= 1 and t.numel():
        return fg.cat([t, t], 0)[::2]
    if layout == "transposed" and t.dim() >= 2:
        return t.transpose(0, -1).contiguous().transpose(0, -1)
    if layout == "expand" and t.numel():
        return t.reshape(-1)[:1].expand(big)
    if layout == "huge_empty":
        # A zero-size dimension beside a huge one, broadcasting with the others.
        shape = (2**40, 0) + tuple(t.shape)
    elif layout == "zero_batch" and t.dim() >= 1:
        shape = (0,) + tuple(t.shape[1:])
    else:
        return t
    return fg.empty(shape, dtype=t.dtype).requires_grad_(t.requires_grad)


def _registry_call(st, data, op_name, fg):
    """`(fn, args, kwargs, what)` for the registry op `op_name`: one of its
    declared sample calls, made hostile (special values, dtype, layout)."""
    import numpy as np

    from ferrograd import _registry
    from ferrograd.testing._realize import entry_point
    from ferrograd.testing._samples import calls

    op = _registry.op(op_name)
    call = data.draw(calls(op.sample), label="sample")
    dtypes = [fg.float32, fg.float64, fg.float16, fg.bfloat16]
    dtype = data.draw(st.sampled_from(dtypes * 3 + [fg.int64, fg.int32, fg.uint8, fg.bool]),
                      label="dtype")
    layout = data.draw(st.sampled_from(REG_LAYOUTS), label="layout")
    # 2**32 elements only where the op makes an output of that size first (an
    # elementwise one), which the address-space limit refuses at once; a
    # reduction would read them all.
    bigs = [5, 40_000, 2**32] if op.sample.kind == "ew" else [5, 40_000]
    big = data.draw(st.sampled_from(bigs), label="expand to")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    share = data.draw(st.sampled_from([0.0, 0.3, 1.0]), label="special share")
    requires_grad = dtype.is_floating_point and data.draw(st.booleans(), label="grad")

    def poison(a):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            a = a.copy()
            hit = rng.random(a.shape) < share
            a[hit] = rng.choice(REG_SPECIALS, size=int(hit.sum()))
        return a

    call.args = [poison(a) for a in call.args]
    fn = entry_point(fg, op)
    what = (f"reg.{op_name}[{layout}, {dtype}, specials {share}] on "
            f"{[getattr(a, 'shape', a) for a in call.args]!r:.300} {call.kwargs!r:.200}")

    def build_and_call():
        args, kwargs = call.tensors(fg, dtype, requires_grad=requires_grad)
        if layout != "plain":
            args = [_hostile_tensor(fg, a, layout, big) if isinstance(a, fg.Tensor) else a
                    for a in args]
        return fn(*args, **kwargs)

    return build_and_call, [], {}, what


def draw_args(st, by_name, anything, fn, bound, data):
    try:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is None:
        return data.draw(st.lists(anything, max_size=4), label="args"), {}
    if bound and params and params[0].name == "self":
        params = params[1:]
    args, kwargs = [], {}
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            required = p.default is p.empty
            if not required and not data.draw(st.booleans(), label=f"give {p.name}"):
                break
            args.append(data.draw(by_name.get(p.name, anything), label=p.name))
        elif p.kind == p.VAR_POSITIONAL:
            args.extend(data.draw(st.lists(by_name["size"] if bound else anything, max_size=4),
                                  label="*args"))
        elif p.kind == p.KEYWORD_ONLY:
            if p.default is p.empty or data.draw(st.booleans(), label=f"give {p.name}"):
                kwargs[p.name] = data.draw(by_name.get(p.name, anything), label=p.name)
    return args, kwargs


def describe(value):
    import ferrograd as fg

    if isinstance(value, fg.Tensor):
        try:
            return (f"Tensor(shape={tuple(value.shape)}, dtype={value.dtype}, "
                    f"stride={value.stride()}, requires_grad={value.requires_grad})")
        except Exception:  # noqa: BLE001 - a description only
            return "Tensor(?)"
    if isinstance(value, (list, tuple)) and len(value) < 8:
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)[:120]


INTERNAL = "internal error in ferrograd"


def is_panic(exc):
    return type(exc).__name__ == "PanicException" or INTERNAL in str(exc)


# -- the worker (this file run as a script) -------------------------------------------


def _cap_address_space(headroom):
    import ferrograd as fg

    (fg.ones(200_000) * 2).sum()  # the thread pool's stacks are mapped before the cap
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = used + headroom if hard == resource.RLIM_INFINITY else min(used + headroom, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _inplace(target):
    return target.endswith("_") or target in ("__setitem__", "__delitem__") or (
        target.startswith("__i") and target != "__index__")


def fuzz_op(name, target, examples, note, call_timeout):
    """Runs `examples` hypothesis examples of the op `name` (`target`: the
    callable, or a `Tensor` attribute's name), noting each call before it is
    made and each panic."""
    import faulthandler

    from hypothesis import HealthCheck, Phase, given, seed, settings

    import ferrograd as fg

    st, by_name, anything, tensor = strategies()
    bound = name.startswith("Tensor.")

    def call(data):
        if name.startswith("reg."):
            return _registry_call(st, data, target, fg)
        if not bound:
            family = _family_args(st, data, name, fg) if data.draw(
                st.integers(0, 4), label="family") else None
            if family is None:
                family = draw_args(st, by_name, anything, target, False, data)
            return target, family[0], family[1], f"{name}({describe(family[0])}, " \
                                                 f"{describe(family[1])})"
        self = data.draw(tensor, label="self")
        if _inplace(target):
            # An in-place op on a leaf that requires grad is refused at once.
            self = self.detach()
        if inspect.isdatadescriptor(inspect.getattr_static(fg.Tensor, target)):
            # A property: reading it is the call.
            def fn():
                return getattr(self, target)

            args, kwargs = [], {}
        else:
            fn = getattr(self, target, None)
            if fn is None:
                return None
            args, kwargs = draw_args(st, by_name, anything, getattr(fg.Tensor, target), True,
                                     data)
        return fn, args, kwargs, f"{name}({describe(self)}; {describe(args)}, {describe(kwargs)})"

    # Generation only: a call that fails is noted, not raised, so there is
    # nothing to shrink or replay.
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        drawn = call(data)
        if drawn is None:
            return
        fn, args, kwargs, what = drawn
        note("call", name, what)
        faulthandler.dump_traceback_later(call_timeout, exit=True)
        try:
            result = fn(*args, **kwargs)
            if isinstance(result, types.GeneratorType):
                list(itertools.islice(result, 3))
            for out in (result if isinstance(result, (tuple, list)) else [result])[:4]:
                if isinstance(out, fg.Tensor):
                    repr(out)
                    if out.requires_grad and out.numel() < 10_000:
                        out.sum().backward(retain_graph=True)
        except BaseException as e:  # noqa: BLE001 - PanicException is a BaseException
            if is_panic(e) or isinstance(e, (KeyboardInterrupt, SystemExit)):
                note("fail", name, f"{what}: {type(e).__name__}: {e}")
        finally:
            faulthandler.cancel_dump_traceback_later()

    if not os.environ.get("FERROGRAD_FUZZ_RANDOM"):
        # A seed per op (derandomize would digest this function's source for
        # each op, a third of the run's time).
        run = seed(zlib.crc32(name.encode()))(run)
    try:
        run()
    except BaseException as e:  # noqa: BLE001 - a drawing error is not the op's fault
        if is_panic(e):
            note("fail", name, f"{type(e).__name__}: {e}")


def worker(names, examples, log_path, call_timeout):
    table = ops()
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND)

    def note(kind, name, text=""):
        os.write(log, (json.dumps([kind, name, text]) + "\n").encode())

    _cap_address_space(2 << 30)
    for name in names:
        # An attribute the test process's earlier tests set on the Tensor class
        # (`nn.Buffer`'s `persistent`) is listed there but is no op here.
        if name in table:
            fuzz_op(name, table[name], examples, note, call_timeout)
        note("done", name)


# -- the test -------------------------------------------------------------------------


def _examples():
    override = os.environ.get("FERROGRAD_FUZZ_EXAMPLES")
    if override:
        return int(override)
    from hypothesis import settings

    # dev (25 examples a property): 3 calls per op; ci (200): 20.
    return max(3, settings().max_examples // 10)


def run_shard(names, examples, call_timeout=30.0, shard_timeout=900.0):
    """Runs the worker over `names`, restarting it after any op that kills it;
    returns the failures as text."""
    failures = []
    todo = list(names)
    while todo:
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            log_path = f.name
        cmd = [sys.executable, __file__, log_path, str(examples), str(call_timeout), *todo]
        env = dict(os.environ, RUST_BACKTRACE="0")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=shard_timeout,
                                  env=env)
            rc, err = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = "timeout", (e.stderr or b"").decode(errors="replace")
        with open(log_path) as f:
            events = [(json.loads(line) + [""])[:3] for line in f if line.strip()]
        os.unlink(log_path)
        done = {name for kind, name, _ in events if kind == "done"}
        failures += [text for kind, _, text in events if kind == "fail"]
        if rc == 0:
            break
        calls = [(name, text) for kind, name, text in events if kind == "call"]
        if not calls:
            failures.append(f"worker failed before any call (rc={rc}): {err[-2000:]}")
            break
        name, text = calls[-1]
        if rc == "timeout" or "Timeout" in err:
            how = "hang (no result within the time limit)"
        elif isinstance(rc, int) and rc < 0:
            how = f"killed by {signal.Signals(-rc).name}"
        else:
            how = f"worker exited with {rc}"
        failures.append(f"{how} in {text}\n{err[-1500:]}")
        todo = [n for n in todo if n not in done and n != name]
    return failures


def _shards(count):
    names = sorted(ops())
    return [names[i::count] for i in range(count)]


# Shards run side by side, one worker process each, as many at a time as
# there are cores.
SHARDS = 6


def test_every_op_is_fuzzed():
    names = ops()
    assert sum(n.startswith("fg.") for n in names) > 250
    assert sum(n.startswith("Tensor.") for n in names) > 300
    assert sum(n.startswith("F.") for n in names) > 80
    assert {"fg.empty", "fg.multinomial", "F.conv2d", "F.interpolate", "Tensor.tolist",
            "Tensor.numpy", "Tensor.__repr__"} <= set(names)


def test_every_registry_op_is_fuzzed_from_its_samples():
    from ferrograd import _registry

    declared = {op.name for op in _registry.ops() if op.sample is not None}
    assert len(declared) > 300
    assert {n[4:] for n in ops() if n.startswith("reg.")} == declared
    # Ops without samples are the registry's own business (test_registry checks
    # each says why); none may hide from the dir()-based fuzz either.
    assert {"relu", "softmax", "clamp", "conv2d", "max_pool2d"} <= declared


@pytest.mark.slow
def test_ops_survive_hostile_shapes_and_values():
    from concurrent.futures import ThreadPoolExecutor

    examples = _examples()
    with ThreadPoolExecutor(max_workers=max(1, min(os.cpu_count() or 1, SHARDS))) as pool:
        results = list(pool.map(lambda names: run_shard(names, examples), _shards(SHARDS)))
    failures = [f for shard in results for f in shard]
    assert not failures, "\n\n".join(failures)


def test_the_runner_reports_crashes_hangs_and_panics(monkeypatch, tmp_path):
    """The runner itself: a segfault, a hang and a panic text each come back as a
    failure naming the op, and the ops after a crash still run."""
    script = tmp_path / "fake_worker.py"
    script.write_text(
        "import json, os, sys, time, ctypes\n"
        "log, names = sys.argv[1], sys.argv[4:]\n"
        "def note(*e):\n"
        "    with open(log, 'a') as f: f.write(json.dumps(list(e)) + '\\n')\n"
        "for n in names:\n"
        "    note('call', n, n + '(x)')\n"
        "    if n == 'segv': ctypes.string_at(0)\n"
        "    if n == 'hang': time.sleep(60)\n"
        "    if n == 'panic': note('fail', n, 'internal error in ferrograd: boom')\n"
        "    note('done', n)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "__file__", str(script))
    failures = run_shard(["ok", "segv", "panic", "hang", "after"], 1, shard_timeout=5)
    assert len(failures) == 3, failures
    assert "SIGSEGV in segv(x)" in failures[0]
    assert "internal error" in failures[1]
    assert "hang" in failures[2] and "hang(x)" in failures[2]


if __name__ == "__main__":
    _log, _examples_arg, _timeout, *_names = sys.argv[1:]
    worker(_names, int(_examples_arg), _log, float(_timeout))
