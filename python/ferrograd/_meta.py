"""The ``meta`` device: tensors with a shape and a dtype but no data.

``ferrograd.empty(3, 4, device="meta")``, ``nn.Linear(..., device="meta")``,
``module.to("meta")`` and factory calls under ``with ferrograd.device("meta")``
make ``MetaTensor`` objects: a shape, a dtype and ``requires_grad``, no
memory. Ops on them compute only the shape and dtype of their result, so a
model far too large for memory can be built, sized and run through to its
output shape (``Linear(100_000, 100_000, device="meta")`` takes no time).

Design (see ARCHITECTURE.md, "The meta device"): ``MetaTensor`` is a Python
class, not a ``Tensor`` subclass, so the Rust bindings never mistake it for
data. A ``ferrograd`` function given one fails to convert it and hands the
call to ``MetaTensor.__ferrograd_function__`` (the dispatch protocol vmap's
``BatchedTensor`` uses); methods and operators are the class's own. Each
reaches a *shape rule* here, looked up by the op's name. A rule computes the
result's shape from the input shapes; its dtype (and its structure: a tensor,
a tuple, a ``return_types`` pair) comes from running the real op on
one-element stand-ins of the inputs' dtypes, so promotion and argument
errors are the real op's. Ordinary tensors never reach this module.
"""

from __future__ import annotations

import builtins
import math

from . import _C
from ._device import _META
from ._size import Size

__all__ = ["MetaTensor", "MetaParameter", "is_meta"]

_COPY_OUT = "Cannot copy out of meta tensor; no data!"


def is_meta(x):
    """Whether ``x`` is a meta tensor."""
    return isinstance(x, MetaTensor)


def _norm_dim(dim, nd, wrap_scalar=True):
    n = builtins.max(nd, 1) if wrap_scalar else nd
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n if n else 0


def _broadcast(*shapes):
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        s = (1,) * (nd - len(s)) + tuple(s)
        for i, d in enumerate(s):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
            else:
                # PyTorch names the two operands "a" and "b" from the right.
                raise RuntimeError(
                    f"The size of tensor a ({out[i]}) must match the size of tensor b ({d}) at "
                    f"non-singleton dimension {i}"
                )
    return tuple(out)


def _is_tensorish(x):
    return isinstance(x, (MetaTensor, _C.Tensor))


def _stand_in(x):
    """A one-element real tensor of ``x``'s dtype and rank (0-d stays 0-d)."""
    if isinstance(x, MetaTensor):
        nd = len(x._shape)
        return _C.zeros(*([1] * nd), dtype=x._dtype) if nd else _C.zeros((), dtype=x._dtype)
    if isinstance(x, _C.Tensor):
        nd = x.dim()
        return _C.zeros(*([1] * nd), dtype=x.dtype) if nd else _C.zeros((), dtype=x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_stand_in(v) for v in x)
    return x


def _any_requires_grad(args, kwargs=None):
    if not _C.is_grad_enabled():
        return False
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, (list, tuple)):
            if _any_requires_grad(a):
                return True
        elif _is_tensorish(a) and a.requires_grad:
            return True
    return False


def _check_devices(args, kwargs=None):
    """Refuses a real tensor of more than 0 dimensions mixed with meta ones, as PyTorch."""
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, (list, tuple)):
            _check_devices(a)
        elif isinstance(a, _C.Tensor) and a.dim() > 0:
            raise RuntimeError("Tensor on device cpu is not on the expected device meta!")


def _like_result(real, shape, requires_grad):
    """A meta result shaped ``shape`` (a shape, or a structure of shapes matching
    ``real``) with the dtypes of the stand-in result ``real``."""
    if isinstance(real, _C.Tensor):
        rg = requires_grad and real.is_floating_point()
        return MetaTensor(shape, real.dtype, rg, leaf=not rg)
    if isinstance(real, tuple):
        shapes = shape if _is_shape_list(shape, len(real)) else [shape] * len(real)
        items = [_like_result(r, s, requires_grad) for r, s in zip(real, shapes)]
        if hasattr(real, "_fields"):
            return type(real)(*items)
        return tuple(items)
    if isinstance(real, list):
        return [_like_result(r, s, requires_grad) for r, s in zip(real, shape)]
    return real


def _is_shape_list(shape, n):
    return (
        isinstance(shape, list)
        and len(shape) == n
        and all(isinstance(s, (tuple, list)) for s in shape)
    )


def _run(op, args, kwargs, shape):
    """The meta result of ``op``: ``shape`` and the dtypes of ``op`` run on stand-ins."""
    _check_devices(args, kwargs)
    real = op(*[_stand_in(a) for a in args], **{k: _stand_in(v) for k, v in kwargs.items()})
    return _like_result(real, shape, _any_requires_grad(args, kwargs))


def _real_fn(name):
    """The real ferrograd function or Tensor method called ``name``."""
    for ns in (_C, _ferrograd(), _functional()):
        f = getattr(ns, name, None)
        if callable(f):
            return f
    m = getattr(_C.Tensor, name, None)
    if m is not None:
        return m
    raise NotImplementedError(f"ferrograd: '{name}' has no meta implementation")


def _ferrograd():
    import ferrograd

    return ferrograd


def _functional():
    from .nn import functional

    return functional


# ----- rules -------------------------------------------------------------------------------

_RULES = {}


def _rule(*names):
    def deco(fn):
        for n in names:
            _RULES[n] = fn
        return fn

    return deco


def _method_or_fn(name):
    m = getattr(_C.Tensor, name, None)
    if m is not None:
        return m
    return _real_fn(name)


# Elementwise ops of one tensor (and options): the input's shape.
_SAME_SHAPE = """
abs absolute neg negative positive relu relu6 sign sgn signbit floor ceil round trunc fix frac
clone contiguous square exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan
sinh cosh tanh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh sigmoid logit erf
erfc erfinv lgamma digamma reciprocal deg2rad rad2deg sinc isnan isinf isfinite isposinf
isneginf isreal logical_not bitwise_not nan_to_num hardtanh leaky_relu elu selu celu gelu silu
mish softplus softsign softshrink hardshrink tanhshrink hardswish hardsigmoid threshold rrelu
glu_no log_sigmoid logsigmoid prelu_no dropout dropout1d dropout2d dropout3d alpha_dropout
feature_alpha_dropout clamp clamp_min clamp_max clip cumsum cumprod cummax cummin logcumsumexp
softmax log_softmax softmin flip fliplr flipud roll tril triu conj resolve_conj resolve_neg
""".split()


def _same_shape(name):
    def rule(x, *args, _op=None, **kwargs):
        return _run(_op or _method_or_fn(name), (x, *args), kwargs, tuple(x.shape))

    rule.takes_op = True
    return rule


for _n in _SAME_SHAPE:
    if not _n.endswith("_no"):
        _RULES[_n] = _same_shape(_n)


def _shape_of_input(x, *args, **kwargs):
    # Normalisations: the input's shape and dtype (their statistics' shapes
    # need no stand-in, and a one-element batch would fail training checks).
    tensors = [a for a in list(args) + list(kwargs.values()) if _is_tensorish(a)]
    _check_devices(tensors)
    rg = _any_requires_grad((x, *tensors))
    return MetaTensor(tuple(x.shape), x.dtype, rg and x.is_floating_point(), leaf=not rg)


for _n in ("batch_norm instance_norm layer_norm group_norm rms_norm local_response_norm "
           "normalize prelu").split():  # fmt: skip
    _RULES[_n] = _shape_of_input


# Elementwise ops of several operands: the broadcast shape.
_BROADCAST = """
add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow
float_power atan2 arctan2 hypot copysign maximum minimum fmax fmin logaddexp logaddexp2 xlogy
eq ne lt le gt ge equal_no greater greater_equal less less_equal not_equal logical_and logical_or
logical_xor bitwise_and bitwise_or bitwise_xor heaviside nextafter lerp addcmul addcdiv where
isclose rsub masked_fill
""".split()


def _broadcast_rule(name):
    def rule(*args, _op=None, **kwargs):
        shapes = [tuple(a.shape) for a in list(args) + list(kwargs.values()) if _is_tensorish(a)]
        return _run(_op or _method_or_fn(name), args, kwargs, _broadcast(*shapes))

    rule.takes_op = True
    return rule


for _n in _BROADCAST:
    if not _n.endswith("_no"):
        _RULES[_n] = _broadcast_rule(_n)


def _masked_fill(x, mask, value):
    # The result has the input's shape (the mask broadcasts to it).
    shape = tuple(x.shape)
    if _broadcast(shape, tuple(mask.shape)) != shape:
        raise RuntimeError(
            f"The size of tensor a ({shape}) must match the size of tensor b ({tuple(mask.shape)})"
        )
    return _run(_method_or_fn("masked_fill"), (x, mask, value), {}, shape)


_RULES["masked_fill"] = _masked_fill


# ----- reductions --------------------------------------------------------------------------

def _dims_arg(args, kwargs, pos=0):
    if "dim" in kwargs:
        return kwargs["dim"]
    if len(args) > pos:
        return args[pos]
    return None


def _reduced_shape(shape, dim, keepdim):
    nd = len(shape)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return (1,) * nd if keepdim else ()
    dims = [dim] if isinstance(dim, int) else list(dim)
    ds = {_norm_dim(d, nd) for d in dims}
    if keepdim:
        return tuple(1 if i in ds else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in ds)


def _reduction(name, dim_pos=0, keepdim_pos=1):
    def rule(x, *args, **kwargs):
        if args and _is_tensorish(args[0]) or _is_tensorish(kwargs.get("other")):
            # max(a, b) / min(a, b): elementwise.
            return _broadcast_rule("maximum" if name == "max" else "minimum")(x, *args, **kwargs)
        dim = _dims_arg(args, kwargs, dim_pos)
        if isinstance(dim, str):
            dim = None
        keepdim = kwargs.get("keepdim", args[keepdim_pos] if len(args) > keepdim_pos else False)
        if not isinstance(keepdim, bool):
            keepdim = False
        return _run(_method_or_fn(name), (x, *args), kwargs, _reduced_shape(x.shape, dim, keepdim))

    return rule


for _n in ("sum mean nansum nanmean prod amax amin argmax argmin all any logsumexp "
           "count_nonzero max min median nanmedian mode").split():  # fmt: skip
    _RULES[_n] = _reduction(_n)


def _std_var(name):
    def rule(x, *args, **kwargs):
        # std(dim, unbiased, keepdim) or std(dim, correction=..., keepdim=...)
        dim = _dims_arg(args, kwargs)
        if isinstance(dim, bool):
            dim = None
        keepdim = kwargs.get("keepdim", False)
        if len(args) >= 3 and isinstance(args[2], bool):
            keepdim = args[2]
        return _run(_method_or_fn(name), (x, *args), kwargs, _reduced_shape(x.shape, dim, keepdim))

    return rule


for _n in ("std var std_mean var_mean").split():
    _RULES[_n] = _std_var(_n)


def _norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    real = _stand_in(x).norm(p, dim, keepdim, dtype=dtype) if dtype else _stand_in(x).norm(
        p, dim, keepdim
    )
    return _like_result(real, _reduced_shape(x.shape, dim, keepdim), _any_requires_grad((x,)))


_RULES["norm"] = _norm


def _topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    d = _norm_dim(dim, x.dim())
    if k > (x.shape[d] if x.dim() else 1):
        raise RuntimeError("selected index k out of range")
    shape = list(x.shape)
    if shape:
        shape[d] = k
    real = _stand_in(x).topk(builtins.min(k, 1), dim, largest, sorted)
    return _like_result(real, tuple(shape), _any_requires_grad((x,)))


_RULES["topk"] = _topk


def _sort(name):
    def rule(x, *args, **kwargs):
        real = getattr(_stand_in(x), name)(*args, **kwargs)
        return _like_result(real, tuple(x.shape), _any_requires_grad((x,)))

    return rule


for _n in ("sort", "argsort", "msort"):
    _RULES[_n] = _sort(_n)


# ----- shapes ------------------------------------------------------------------------------

def _size_args(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _infer(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _view(x, *shape, **kwargs):
    if not shape and "size" in kwargs:
        shape = (kwargs["size"],)
    if len(shape) == 1 and isinstance(shape[0], _C.dtype):
        return x._derive(x._shape, shape[0])
    return x._derive(_infer(_size_args(shape), x.numel()))


_RULES["view"] = _RULES["reshape"] = _view
_RULES["_unsafe_view"] = _view


def _view_as(x, other):
    return x._derive(_infer(tuple(other.shape), x.numel()))


_RULES["view_as"] = _RULES["reshape_as"] = _view_as


def _flatten(x, start_dim=0, end_dim=-1):
    nd = x.dim()
    if nd == 0:
        return x._derive((1,))
    s, e = _norm_dim(start_dim, nd), _norm_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = list(x.shape)
    return x._derive(tuple(shape[:s]) + (math.prod(shape[s : e + 1]),) + tuple(shape[e + 1 :]))


_RULES["flatten"] = _flatten


def _unflatten(x, dim, sizes):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    sizes = _infer(tuple(sizes), shape[d])
    return x._derive(tuple(shape[:d]) + sizes + tuple(shape[d + 1 :]))


_RULES["unflatten"] = _unflatten


def _permute(x, *dims):
    dims = _size_args(dims)
    nd = x.dim()
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
            f"to len(dims) = {len(dims)}"
        )
    ds = [_norm_dim(d, nd) for d in dims]
    if len(set(ds)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return x._derive(tuple(x.shape[d] for d in ds))


_RULES["permute"] = _permute


def _transpose(x, dim0, dim1):
    nd = x.dim()
    shape = list(x.shape)
    if nd == 0:
        return x._derive(())
    a, b = _norm_dim(dim0, nd), _norm_dim(dim1, nd)
    shape[a], shape[b] = shape[b], shape[a]
    return x._derive(tuple(shape))


_RULES["transpose"] = _RULES["swapaxes"] = _RULES["swapdims"] = _transpose


def _t(x):
    if x.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.dim()}D")
    return x._derive(tuple(reversed(x.shape)))


_RULES["t"] = _t


def _movedim(x, source, destination):
    nd = x.dim()
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_norm_dim(d, nd) for d in src]
    dst = [_norm_dim(d, nd) for d in dst]
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return x._derive(tuple(x.shape[o] for o in order))


_RULES["movedim"] = _RULES["moveaxis"] = _movedim


def _unsqueeze(x, dim):
    nd = x.dim()
    d = _norm_dim(dim, nd + 1, wrap_scalar=False)
    shape = list(x.shape)
    shape.insert(d, 1)
    return x._derive(tuple(shape))


_RULES["unsqueeze"] = _unsqueeze


def _squeeze(x, dim=None):
    shape = list(x.shape)
    if dim is None:
        return x._derive(tuple(s for s in shape if s != 1))
    dims = [dim] if isinstance(dim, int) else list(dim)
    ds = {_norm_dim(d, len(shape)) for d in dims} if shape else set()
    return x._derive(tuple(s for i, s in enumerate(shape) if not (i in ds and s == 1)))


_RULES["squeeze"] = _squeeze


def _expand(x, *sizes):
    sizes = _size_args(sizes)
    nd = x.dim()
    if len(sizes) < nd:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(x.shape)}}}, size=[{', '.join(map(str, sizes))}]): "
            "the number of sizes provided must be greater or equal to the number of dimensions "
            "in the tensor"
        )
    shape = (None,) * (len(sizes) - nd) + tuple(x.shape)
    out = []
    for i, (s, n) in enumerate(zip(shape, sizes)):
        if n == -1:
            if s is None:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            out.append(s)
        elif s is None or s == n or s == 1:
            out.append(n)
        else:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({s}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(x.shape)}"
            )
    return x._derive(tuple(out))


_RULES["expand"] = _expand
_RULES["broadcast_to"] = lambda x, size: _expand(x, *size)
_RULES["expand_as"] = lambda x, other: _expand(x, *other.shape)


def _repeat(x, *sizes):
    sizes = _size_args(sizes)
    if len(sizes) < x.dim():
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            "tensor"
        )
    shape = (1,) * (len(sizes) - x.dim()) + tuple(x.shape)
    return x._derive(tuple(s * n for s, n in zip(shape, sizes)))


_RULES["repeat"] = _repeat


def _narrow(x, dim, start, length):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    if start < 0:
        start += shape[d]
    if start < 0 or start + length > shape[d]:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({shape[d]}).")
    shape[d] = length
    return x._derive(tuple(shape))


_RULES["narrow"] = _narrow


def _select(x, dim, index):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    if not -shape[d] <= index < shape[d]:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(x.shape)} at "
            f"dimension {d}"
        )
    del shape[d]
    return x._derive(tuple(shape))


_RULES["select"] = _select


def _index_select(x, dim, index):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    if shape:
        shape[d] = index.numel()
    return x._derive(tuple(shape))


_RULES["index_select"] = _index_select


def _gather(x, dim, index, **kwargs):
    return x._derive(tuple(index.shape))


_RULES["gather"] = _gather


def _split(x, split_size_or_sections, dim=0):
    d = _norm_dim(dim, x.dim())
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if step else [n]
        if not sizes:
            sizes = [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {d}), but got split_sizes={sizes}"
            )
    out = []
    for s in sizes:
        shape = list(x.shape)
        shape[d] = s
        out.append(x._derive(tuple(shape)))
    return tuple(out)


_RULES["split"] = _split


def _chunk(x, chunks, dim=0):
    d = _norm_dim(dim, x.dim())
    n = x.shape[d]
    step = -(-n // chunks) if chunks else n
    return _split(x, step if step else 1, dim) if n else (x._derive(tuple(x.shape)),)


_RULES["chunk"] = _chunk


def _unbind(x, dim=0):
    d = _norm_dim(dim, x.dim())
    shape = list(x.shape)
    n = shape.pop(d)
    return tuple(x._derive(tuple(shape)) for _ in range(n))


_RULES["unbind"] = _unbind


def _cat(tensors, dim=0, **kwargs):
    tensors = list(tensors)
    _check_devices(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    full = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    ref = full[0] if full else tensors[0]
    d = _norm_dim(dim, ref.dim())
    shape = list(ref.shape)
    total = 0
    for i, t in enumerate(full):
        if t.dim() != ref.dim():
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref.dim()} and {t.dim()}"
            )
        for j, (a, b) in enumerate(zip(ref.shape, t.shape)):
            if j != d and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {a} but "
                    f"got size {b} for tensor number {i} in the list."
                )
        total += t.shape[d]
    if shape:
        shape[d] = total
    real = _C.cat([_stand_in(t) for t in tensors], 0)
    return _like_result(real, tuple(shape), _any_requires_grad(tensors))


_RULES["cat"] = _RULES["concat"] = _RULES["concatenate"] = _cat


def _stack(tensors, dim=0, **kwargs):
    tensors = list(tensors)
    _check_devices(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tuple(tensors[0].shape)
    for i, t in enumerate(tensors):
        if tuple(t.shape) != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                f"{list(t.shape)} at entry {i}"
            )
    d = _norm_dim(dim, len(ref) + 1, wrap_scalar=False)
    shape = list(ref)
    shape.insert(d, len(tensors))
    real = _C.stack([_stand_in(t) for t in tensors], 0)
    return _like_result(real, tuple(shape), _any_requires_grad(tensors))


_RULES["stack"] = _stack


def _diagonal(x, offset=0, dim1=0, dim2=1):
    nd = x.dim()
    a, b = _norm_dim(dim1, nd), _norm_dim(dim2, nd)
    n, m = x.shape[a], x.shape[b]
    k = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else builtins.min(n + offset, m))
    shape = [s for i, s in enumerate(x.shape) if i not in (a, b)] + [k]
    return x._derive(tuple(shape))


_RULES["diagonal"] = _diagonal


def _getitem(x, index):
    if not isinstance(index, tuple):
        index = (index,)
    shape = list(x.shape)
    out = []
    pos = 0
    n_real = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    for item in index:
        if item is None:
            out.append(1)
        elif item is Ellipsis:
            k = len(shape) - n_real
            out.extend(shape[pos : pos + k])
            pos += k
        elif isinstance(item, bool):
            out.append(1 if item else 0)
        elif isinstance(item, int):
            if pos >= len(shape):
                raise IndexError(
                    f"too many indices for tensor of dimension {len(shape)}"
                )
            if not -shape[pos] <= item < shape[pos]:
                raise IndexError(
                    f"index {item} is out of bounds for dimension {pos} with size {shape[pos]}"
                )
            pos += 1
        elif isinstance(item, slice):
            if pos >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            start, stop, step = item.indices(shape[pos])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            out.append(builtins.max(0, -(-(stop - start) // step)))
            pos += 1
        elif _is_tensorish(item) and not item.dtype.is_floating_point and str(item.dtype) != (
            "ferrograd.bool"
        ):
            out.extend(item.shape)
            pos += 1
        else:
            raise NotImplementedError(
                "ferrograd: indexing a meta tensor with a boolean mask has no meta "
                "implementation (the result's size depends on the data)"
            )
    out.extend(shape[pos:])
    return x._derive(tuple(out))


_RULES["__getitem__"] = _getitem


# ----- products ----------------------------------------------------------------------------

def _matmul_shape(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {len(sa)}D and "
            f"{len(sb)}D"
        )
    if len(sa) == 1 and len(sb) == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have the same "
                f"number of elements, but got {sa[0]} and {sb[0]} elements respectively"
            )
        return ()
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({math.prod(a2[:-1])}x{a2[-1]} and "
            f"{b2[-2]}x{b2[-1]})"
        )
    batch = _broadcast(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(sa) == 1:
        out = out[:-2] + out[-1:]
    if len(sb) == 1:
        out = out[:-1]
    return out


def _product(name):
    def rule(a, b, **kwargs):
        _check_devices((a, b))
        if name == "mm" and (a.dim() != 2 or b.dim() != 2):
            raise RuntimeError("self must be a matrix")
        if name == "bmm" and (a.dim() != 3 or b.dim() != 3):
            raise RuntimeError("batch1 must be a 3D tensor")
        if name == "mv" and (a.dim() != 2 or b.dim() != 1):
            raise RuntimeError("vector + matrix @ vector expected, got 1, 2, 2")
        if name == "dot" and (a.dim() != 1 or b.dim() != 1):
            raise RuntimeError(
                f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors"
            )
        if name == "bmm" and a.shape[0] != b.shape[0]:
            raise RuntimeError("batch1 and batch2 must have same number of batches")
        shape = _matmul_shape(a, b)
        real = _C.matmul(_stand_in(a), _stand_in(b))
        return _like_result(real, shape, _any_requires_grad((a, b)))

    return rule


for _n in ("matmul", "mm", "bmm", "mv", "dot", "__matmul__", "inner_no"):
    if not _n.endswith("_no"):
        _RULES[_n] = _product(_n)
_RULES["__rmatmul__"] = lambda b, a: _RULES["matmul"](a, b)


def _outer(a, b):
    real = _C.outer(_stand_in(a).reshape(1), _stand_in(b).reshape(1))
    return _like_result(real, (a.numel(), b.numel()), _any_requires_grad((a, b)))


_RULES["outer"] = _RULES["ger"] = _outer


def _linear(x, weight, bias=None):
    _check_devices((x, weight, bias) if bias is not None else (x, weight))
    in_f = weight.shape[-1] if weight.dim() else 1
    if x.dim() == 0 or x.shape[-1] != in_f:
        xs = tuple(x.shape)
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({math.prod(xs[:-1]) if xs else 1}x"
            f"{xs[-1] if xs else 1} and {in_f}x{weight.shape[0] if weight.dim() == 2 else 1})"
        )
    out = tuple(x.shape[:-1]) + ((weight.shape[0],) if weight.dim() == 2 else ())
    if bias is not None:
        _broadcast(out, tuple(bias.shape))
    args = (x, weight, bias)
    real = _C.linear(
        _C.zeros(1, 1, dtype=x.dtype), _C.zeros(1, 1, dtype=weight.dtype),
        None if bias is None else _C.zeros(1, dtype=bias.dtype),
    )  # fmt: skip
    return _like_result(real, out, _any_requires_grad(args))


_RULES["linear"] = _linear


def _addmm(inp, a, b, *, beta=1, alpha=1):
    shape = _matmul_shape(a, b)
    _broadcast(shape, tuple(inp.shape))
    return _run(_C.Tensor.add, (_stand_in_of(shape, a), inp), {}, shape)


def _stand_in_of(shape, like):
    return MetaTensor(shape, like.dtype, like.requires_grad)


_RULES["addmm"] = _RULES["addbmm_no"] = _RULES["baddbmm"] = _addmm
_RULES["addmv"] = _addmm


def _bilinear(x1, x2, weight, bias=None):
    return MetaTensor(
        tuple(x1.shape[:-1]) + (weight.shape[0],), x1.dtype,
        _any_requires_grad((x1, x2, weight, bias) if bias is not None else (x1, x2, weight)),
    )  # fmt: skip


_RULES["bilinear"] = _bilinear


def _einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands) or "..." in equation:
        raise NotImplementedError("ferrograd: this einsum has no meta implementation")
    sizes = {}
    for term, op in zip(terms, operands):
        if len(term) != op.dim():
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                f"the number of dimensions ({op.dim()}) for operand {terms.index(term)}"
            )
        for c, s in zip(term, op.shape):
            if sizes.setdefault(c, s) != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(
                    "einsum(): operands do not broadcast with remapped shapes (original->remapped)"
                )
            sizes[c] = builtins.max(sizes[c], s)
    if not _:
        counts = {}
        for c in lhs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        rhs = "".join(sorted(c for c, k in counts.items() if k == 1))
    dtype = operands[0].dtype
    return MetaTensor(tuple(sizes[c] for c in rhs), dtype, _any_requires_grad(operands))


_RULES["einsum"] = _einsum


# ----- convolution and pooling -------------------------------------------------------------

def _tuple(v, n):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(v) * n
        return tuple(v)
    return (v,) * n


def _conv_shape(x, weight, stride, padding, dilation, groups, sd, transposed=False,
                output_padding=0):  # fmt: skip
    name = f"conv{'_transpose' if transposed else ''}{sd}d"
    if x.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"Expected {sd + 1}D (unbatched) or {sd + 2}D (batched) input to {name}, but got "
            f"input of size: {list(x.shape)}"
        )
    unbatched = x.dim() == sd + 1
    xs = ((1,) if unbatched else ()) + tuple(x.shape)
    n, c, spatial = xs[0], xs[1], xs[2:]
    k = tuple(weight.shape[2:])
    stride, dilation = _tuple(stride, sd), _tuple(dilation, sd)
    if transposed:
        if c != weight.shape[0]:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                f"{list(xs)} to have {weight.shape[0]} channels, but got {c} channels instead"
            )
        pad, opad = _tuple(padding, sd), _tuple(output_padding, sd)
        out = tuple(
            (spatial[i] - 1) * stride[i] - 2 * pad[i] + dilation[i] * (k[i] - 1) + opad[i] + 1
            for i in range(sd)
        )
        oc = weight.shape[1] * groups
    else:
        if c != weight.shape[1] * groups:
            raise RuntimeError(
                f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                f"{list(xs)} to have {weight.shape[1] * groups} channels, but got {c} channels "
                "instead"
            )
        if padding == "same":
            out = tuple(spatial)
        else:
            pad = (0,) * sd if padding == "valid" else _tuple(padding, sd)
            out = tuple(
                (spatial[i] + 2 * pad[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1
                for i in range(sd)
            )
            if any(o <= 0 for o in out):
                raise RuntimeError(
                    f"Calculated padded input size per channel: "
                    f"({' x '.join(str(spatial[i] + 2 * pad[i]) for i in range(sd))}). Kernel "
                    f"size: ({' x '.join(str(dilation[i] * (k[i] - 1) + 1) for i in range(sd))}). "
                    "Kernel size can't be greater than actual input size"
                )
        oc = weight.shape[0]
    shape = (n, oc) + out
    return shape[1:] if unbatched else shape


def conv(x, weight, bias, stride, padding, dilation, groups, sd, transposed=False,
         output_padding=0):  # fmt: skip
    """The meta result of a convolution (called by ``nn.functional``)."""
    args = (x, weight) if bias is None else (x, weight, bias)
    _check_devices(args)
    shape = _conv_shape(x, weight, stride, padding, dilation, groups, sd, transposed,
                        output_padding)  # fmt: skip
    if x.dtype != weight.dtype:
        raise RuntimeError(
            f"Input type ({x.dtype}) and weight type ({weight.dtype}) should be the same"
        )
    rg = _any_requires_grad(args)
    return MetaTensor(shape, x.dtype, rg, leaf=not rg)


def _pool_out(size, k, s, p, d, ceil_mode):
    out = (size + 2 * p - d * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def pool(name, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
         return_indices=False, sd=2, **kwargs):  # fmt: skip
    """The meta result of a max or average pool (called by ``nn.functional``)."""
    if x.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"{name}: Expected {sd + 1}D or {sd + 2}D input, but got input of size: "
            f"{list(x.shape)}"
        )
    k = _tuple(kernel_size, sd)
    s = _tuple(stride if stride not in (None, [], ()) else kernel_size, sd)
    p = _tuple(padding, sd)
    d = _tuple(dilation, sd)
    lead = tuple(x.shape[: x.dim() - sd])
    spatial = tuple(x.shape[x.dim() - sd :])
    out = tuple(_pool_out(spatial[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(sd))
    if any(o <= 0 for o in out):
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, x.shape))}). Calculated output size: "
            f"({'x'.join(map(str, lead[-1:] + out))}). Output size is too small"
        )
    res = MetaTensor(lead + out, x.dtype, _any_requires_grad((x,)))
    if return_indices:
        return res, MetaTensor(lead + out, _C.int64, False)
    return res


def adaptive_pool(x, output_size, sd, return_indices=False):
    """The meta result of an adaptive pool (called by ``nn.functional``)."""
    if x.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"adaptive_pool{sd}d(): Expected {sd + 1}D or {sd + 2}D tensor, but got "
            f"{list(x.shape)}"
        )
    os = _tuple(output_size, sd)
    spatial = tuple(x.shape[x.dim() - sd :])
    out = tuple(spatial[i] if os[i] is None else os[i] for i in range(sd))
    res = MetaTensor(tuple(x.shape[: x.dim() - sd]) + out, x.dtype, _any_requires_grad((x,)))
    if return_indices:
        return res, MetaTensor(res._shape, _C.int64, False)
    return res


def pad(x, pads, mode="constant", value=None):
    """The meta result of ``F.pad``."""
    pads = list(pads)
    if len(pads) % 2 or len(pads) // 2 > x.dim():
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the rank")
    shape = list(x.shape)
    for i in range(len(pads) // 2):
        d = len(shape) - 1 - i
        shape[d] += pads[2 * i] + pads[2 * i + 1]
    return x._derive(tuple(shape))


def interpolate(x, size=None, scale_factor=None, **kwargs):
    """The meta result of ``F.interpolate``."""
    sd = x.dim() - 2
    if size is not None:
        out = _tuple(size, sd)
    elif scale_factor is not None:
        sf = _tuple(scale_factor, sd)
        out = tuple(int(math.floor(x.shape[2 + i] * sf[i])) for i in range(sd))
    else:
        raise ValueError("either size or scale_factor should be defined")
    return x._derive(tuple(x.shape[:2]) + tuple(out))


def _conv_rule(sd, transposed):
    def rule(input, weight, bias=None, stride=1, padding=0, *rest, **kwargs):
        if transposed:
            # (output_padding, groups, dilation)
            names = ("output_padding", "groups", "dilation")
        else:
            names = ("dilation", "groups")
        opts = dict(zip(names, rest))
        opts.update(kwargs)
        return conv(input, weight, bias, stride, padding, opts.get("dilation", 1),
                    opts.get("groups", 1), sd, transposed, opts.get("output_padding", 0))  # fmt: skip

    return rule


for _sd in (1, 2, 3):
    _RULES[f"conv{_sd}d"] = _conv_rule(_sd, False)
    _RULES[f"conv_transpose{_sd}d"] = _conv_rule(_sd, True)


def _max_pool_rule(sd, indices):
    def rule(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=indices):  # fmt: skip
        return pool(f"max_pool{sd}d", input, kernel_size, stride, padding, dilation, ceil_mode,
                    return_indices, sd=sd)  # fmt: skip

    return rule


def _avg_pool_rule(sd):
    def rule(input, kernel_size, stride=None, padding=0, ceil_mode=False, *rest, **kwargs):
        return pool(f"avg_pool{sd}d", input, kernel_size, stride, padding, 1, ceil_mode,
                    False, sd=sd)  # fmt: skip

    return rule


def _adaptive_rule(sd, indices):
    def rule(input, output_size, return_indices=indices):
        return adaptive_pool(input, output_size, sd, return_indices)

    return rule


for _sd in (1, 2, 3):
    _RULES[f"max_pool{_sd}d"] = _max_pool_rule(_sd, False)
    _RULES[f"max_pool{_sd}d_with_indices"] = _max_pool_rule(_sd, True)
    _RULES[f"avg_pool{_sd}d"] = _avg_pool_rule(_sd)
    _RULES[f"adaptive_avg_pool{_sd}d"] = _adaptive_rule(_sd, False)
    _RULES[f"adaptive_max_pool{_sd}d"] = _adaptive_rule(_sd, False)
    _RULES[f"adaptive_max_pool{_sd}d_with_indices"] = _adaptive_rule(_sd, True)
_RULES["pad"] = pad
_RULES["interpolate"] = _RULES["upsample"] = interpolate


def _mha(query, key, value, embed_dim_to_check, num_heads, *args, **kwargs):
    import inspect

    from .nn._functional.attention import multi_head_attention_forward

    bound = inspect.signature(multi_head_attention_forward).bind(
        query, key, value, embed_dim_to_check, num_heads, *args, **kwargs
    )
    bound.apply_defaults()
    a = bound.arguments
    batched = query.dim() == 3
    L = query.shape[0]
    S = key.shape[0] + (1 if a["bias_k"] is not None else 0) + (1 if a["add_zero_attn"] else 0)
    tensors = [t for t in a.values() if _is_tensorish(t)]
    rg = _any_requires_grad(tensors)
    out = MetaTensor(tuple(query.shape[:-1]) + (embed_dim_to_check,), query.dtype, rg,
                     leaf=not rg)  # fmt: skip
    if not a["need_weights"]:
        return out, None
    heads = () if a["average_attn_weights"] else (num_heads,)
    lead = (query.shape[1],) if batched else ()
    return out, MetaTensor(lead + heads + (L, S), query.dtype, rg, leaf=not rg)


_RULES["multi_head_attention_forward"] = _mha


def _embedding(input, weight, *args, **kwargs):
    if input.dtype.is_floating_point:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {input.dtype} instead (while checking arguments for embedding)"
        )
    return MetaTensor(
        tuple(input.shape) + tuple(weight.shape[1:]), weight.dtype,
        _any_requires_grad((weight,)), leaf=not _any_requires_grad((weight,)),
    )  # fmt: skip


_RULES["embedding"] = _embedding


def _sdpa(q, k, v, *args, **kwargs):
    shape = _broadcast(tuple(q.shape[:-2]), tuple(v.shape[:-2])) + (q.shape[-2], v.shape[-1])
    return MetaTensor(shape, q.dtype, _any_requires_grad((q, k, v)))


_RULES["scaled_dot_product_attention"] = _sdpa


def _loss(name, target_shape=False):
    def rule(input, target, *args, reduction=None, **kwargs):
        _check_devices((input, target))
        if reduction is None:
            # The native losses take it positionally, as the only string argument.
            reduction = next((a for a in args if isinstance(a, str)), "mean")
        if reduction == "none":
            shape = tuple(target.shape) if target_shape else _broadcast(
                tuple(input.shape), tuple(target.shape)
            )
        elif reduction in ("mean", "sum"):
            shape = ()
        else:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        return MetaTensor(shape, input.dtype, _any_requires_grad((input, target)))

    return rule


for _n in ("mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
           "binary_cross_entropy_with_logits kl_div soft_margin_loss poisson_nll_loss").split():  # fmt: skip
    _RULES[_n] = _loss(_n)
for _n in ("cross_entropy", "nll_loss", "multi_margin_loss", "multilabel_margin_loss"):
    _RULES[_n] = _loss(_n, target_shape=True)


def _one_hot(x, num_classes=-1):
    if num_classes < 0:
        raise NotImplementedError(
            "ferrograd: one_hot of a meta tensor needs num_classes (the default depends on the "
            "data)"
        )
    return MetaTensor(tuple(x.shape) + (num_classes,), _C.int64, False)


_RULES["one_hot"] = _one_hot


# ----- creation from meta tensors ----------------------------------------------------------

def _like(input, kind, fill=0.0, dtype=None, requires_grad=False):
    return MetaTensor(tuple(input.shape), dtype or input.dtype, requires_grad)


_RULES["_like"] = _like


def _random_like(input, kind, low, high, dtype=None, requires_grad=False, generator=None):
    return MetaTensor(tuple(input.shape), dtype or input.dtype, requires_grad)


_RULES["_random_like"] = _random_like


def _new_factory(name):
    def rule(x, *args, dtype=None, device=None, requires_grad=False, **kwargs):
        from ._device import _check_cpu

        if name == "new_tensor":
            data = _C.tensor(args[0])
            shape, dt = tuple(data.shape), dtype or data.dtype
        elif name == "new_full":
            shape, dt = tuple(args[0]), dtype or x.dtype
        else:
            shape, dt = _size_args(args), dtype or x.dtype
        if device is not None and not _check_cpu(name, device):
            if name == "new_tensor":
                out = _C.tensor(args[0], dtype=dt)
            elif name == "new_full":
                out = _C.full(shape, args[1], dtype=dt)
            else:
                out = (_C.ones if name == "new_ones" else _C.zeros)(*shape, dtype=dt)
            return out.requires_grad_(requires_grad) if requires_grad else out
        return MetaTensor(shape, dt, requires_grad)

    return rule


for _n in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
    _RULES[_n] = _new_factory(_n)


# ----- dtype conversions -------------------------------------------------------------------

def _cast(dtype):
    def rule(x, *args, **kwargs):
        return x._derive(x._shape, getattr(_C, dtype))

    return rule


for _n, _d in (("float", "float32"), ("double", "float64"), ("long", "int64"), ("int", "int64"),
               ("bool", "bool"), ("half", "float32"), ("short", "int64"), ("byte", "int64"),
               ("char", "int64")):  # fmt: skip
    _RULES[_n] = _cast(_d)


# ----- the tensor class --------------------------------------------------------------------

def _contiguous_strides(shape):
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= builtins.max(s, 1)
    return tuple(reversed(strides))


class MetaTensor:
    """A tensor on the ``meta`` device: a shape, a dtype and ``requires_grad``,
    no data. Ops give the shape and dtype of their result; reading values
    (``item()``, ``tolist()``, ``numpy()``, ``.to("cpu")``) raises PyTorch's
    errors, and in-place initialisers (``uniform_``, ``zero_``, ``copy_``, the
    ``nn.init`` functions) do nothing. It is not a ``ferrograd.Tensor``
    subclass (``isinstance(x, ferrograd.Tensor)`` is False; use
    ``ferrograd.is_tensor`` or ``x.is_meta``)."""

    __slots__ = ("_shape", "_dtype", "_rg", "_leaf", "_grad", "__dict__", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, shape, dtype=None, requires_grad=False, leaf=True):
        shape = tuple(int(s) for s in shape)
        for s in shape:
            if s < 0:
                raise RuntimeError(
                    f"Trying to create tensor with negative dimension {s}: {list(shape)}"
                )
        self._shape = shape
        self._dtype = dtype if dtype is not None else _C.get_default_dtype()
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point dtype can require gradients")
        self._rg = bool(requires_grad)
        self._leaf = leaf or not requires_grad
        self._grad = None

    @classmethod
    def __ferrograd_function__(cls, func, types, args, kwargs=None):
        """Runs ``func`` (a ``ferrograd`` function) through its shape rule."""
        name = getattr(func, "__name__", repr(func))
        owner = getattr(func, "__self__", None)
        if name == "apply" and isinstance(owner, type):
            return _function_apply(owner, args, kwargs or {})
        rule = _RULES.get(name)
        if rule is None:
            raise NotImplementedError(
                f"ferrograd.{name} has no meta implementation (meta tensors carry a shape and a "
                "dtype only)"
            )
        if getattr(rule, "takes_op", False):
            # The function itself runs on the stand-ins (its argument order can differ
            # from the method's: ``where(cond, x, y)`` against ``x.where(cond, y)``).
            return rule(*args, _op=func, **(kwargs or {}))
        return rule(*args, **(kwargs or {}))

    def _derive(self, shape, dtype=None):
        rg = self._rg and _C.is_grad_enabled()
        return MetaTensor(shape, dtype if dtype is not None else self._dtype,
                          rg and (dtype is None or dtype.is_floating_point), leaf=not rg)  # fmt: skip

    # ----- metadata -----
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_norm_dim(dim, len(self._shape))] if self._shape else 1

    def dim(self):
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._shape)

    def numel(self):
        return math.prod(self._shape)

    nelement = numel

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return _META

    is_meta = True
    is_cuda = False
    is_cpu = False
    is_sparse = False
    is_quantized = False
    is_mkldnn = False
    is_nested = False

    def get_device(self):
        return -1

    def element_size(self):
        return {"bool": 1, "int64": 8, "float32": 4, "float64": 8}[str(self._dtype).split(".")[-1]]

    @property
    def itemsize(self):
        return self.element_size()

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return False

    def is_signed(self):
        return str(self._dtype) != "ferrograd.bool"

    def stride(self, dim=None):
        st = _contiguous_strides(self._shape)
        return st if dim is None else st[_norm_dim(dim, len(self._shape))]

    def is_contiguous(self, memory_format=None):
        return True

    def storage_offset(self):
        return 0

    def data_ptr(self):
        return 0

    # ----- autograd state -----
    @property
    def requires_grad(self):
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        if value and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if not self._leaf and not value:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        self._rg = bool(value)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self):
        return self._leaf

    @property
    def grad_fn(self):
        return None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    def retain_grad(self):
        pass

    @property
    def data(self):
        return MetaTensor(self._shape, self._dtype)

    @data.setter
    def data(self, value):
        if not isinstance(value, MetaTensor):
            raise RuntimeError(
                "ferrograd: cannot give a meta tensor real data through .data; use "
                "Module.to_empty() or load_state_dict(..., assign=True)"
            )
        self._shape, self._dtype = value._shape, value._dtype

    def detach(self):
        return MetaTensor(self._shape, self._dtype)

    def detach_(self):
        self._rg = False
        self._leaf = True
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        raise RuntimeError(
            "ferrograd: meta tensors record no graph, so backward() cannot run on them (they "
            "carry a shape and a dtype only)"
        )

    # ----- conversions -----
    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, (MetaTensor, _C.Tensor)):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str):
                device = a
        if device is not None and str(device) != "meta":
            from . import _device

            _device.device(device)
            raise NotImplementedError(_COPY_OUT)
        if dtype is None or dtype == self._dtype:
            return self
        return self._derive(self._shape, dtype)

    def cpu(self, *args, **kwargs):
        raise NotImplementedError(_COPY_OUT)

    def cuda(self, *args, **kwargs):
        from ._device import _tensor_cuda

        _tensor_cuda(self, *args, **kwargs)

    def type_as(self, other):
        return self.to(other.dtype)

    def type(self, dtype=None, **kwargs):
        if dtype is None:
            return "ferrograd.meta." + {"float32": "FloatTensor", "float64": "DoubleTensor",
                                        "int64": "LongTensor", "bool": "BoolTensor"}[
                str(self._dtype).split(".")[-1]]  # fmt: skip
        return self.to(dtype)

    def item(self):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def tolist(self):
        raise NotImplementedError(_COPY_OUT)

    def numpy(self, *, force=False):
        raise TypeError(
            "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
            "to host memory first."
        )

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __float__(self):
        return self.item()

    __int__ = __index__ = __bool__ = __complex__ = __float__

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_unbind(self, 0))

    def __hash__(self):
        return id(self)

    def __repr__(self):
        parts = [f"size={tuple(self._shape)}"]
        if self._dtype != _C.get_default_dtype():
            parts.append(f"dtype={self._dtype}")
        if self._rg and self._leaf:
            parts.append("requires_grad=True")
        return f"tensor(..., device='meta', {', '.join(parts)})"

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self._shape, self._dtype, self._rg)
        import copy

        for k, v in self.__dict__.items():
            setattr(out, k, copy.deepcopy(v, memo))
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, proto):
        return (_rebuild, (type(self), self._shape, str(self._dtype).split(".")[-1], self._rg))

    # ----- in place: the shape is checked, nothing is written -----
    def _inplace(self, *args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            if _is_tensorish(a) and _broadcast(self._shape, tuple(a.shape)) != self._shape:
                raise RuntimeError(
                    f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                    f"{list(_broadcast(self._shape, tuple(a.shape)))}"
                )
        return self

    def __setitem__(self, index, value):
        out = _getitem(self, index)
        if _is_tensorish(value):
            _broadcast(tuple(out.shape), tuple(value.shape))

    def copy_(self, src, non_blocking=False):
        return self._inplace(src)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        rule = _RULES.get(name)
        if rule is not None:
            return lambda *args, **kwargs: rule(self, *args, **kwargs)
        if name.endswith("_") and not name.endswith("__"):
            base = name[:-1]
            if base in _RULES or name in _INIT_METHODS:
                return lambda *args, **kwargs: self._inplace(*args, **kwargs)
        if hasattr(_C.Tensor, name):
            raise NotImplementedError(
                f"Tensor.{name} has no meta implementation (meta tensors carry a shape and a "
                "dtype only)"
            )
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def T(self):  # noqa: N802
        return self._derive(tuple(reversed(self._shape)))

    @property
    def mT(self):  # noqa: N802
        return _transpose(self, -2, -1)


_INIT_METHODS = {
    "uniform_", "normal_", "zero_", "fill_", "bernoulli_", "exponential_", "random_",
    "geometric_", "cauchy_", "log_normal_", "fill_diagonal_", "clamp_", "index_fill_",
    "masked_fill_", "scatter_", "scatter_add_", "index_add_", "index_copy_", "put_",
}  # fmt: skip


def _binary_dunder(name, reflected=False):
    rule_name = {
        "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
        "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or",
        "xor": "bitwise_xor", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
        "ge": "ge",
    }[name]  # fmt: skip

    def method(self, other):
        if not (_is_tensorish(other) or isinstance(other, (int, float, bool))):
            return NotImplemented
        if reflected:
            if name == "sub":
                return _RULES["sub"](_scalar_like(other, self), self)
            if name in ("truediv", "floordiv", "mod", "pow"):
                return _RULES[rule_name](_scalar_like(other, self), self)
            return _RULES[rule_name](self, other)
        return _RULES[rule_name](self, other)

    return method


def _scalar_like(value, like):
    """A Python number as a 0-d meta operand (its dtype as PyTorch wraps numbers)."""
    if isinstance(value, MetaTensor) or isinstance(value, _C.Tensor):
        return value
    t = _C.tensor(value)
    return MetaTensor((), t.dtype)


for _op in ("add sub mul truediv floordiv mod pow and or xor eq ne lt le gt ge").split():
    setattr(MetaTensor, f"__{_op}__", _binary_dunder(_op))
    if _op not in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(MetaTensor, f"__r{_op}__", _binary_dunder(_op, reflected=True))
        setattr(MetaTensor, f"__i{_op}__", lambda self, other: self._inplace(other))

MetaTensor.__matmul__ = lambda self, other: _RULES["matmul"](self, other)
MetaTensor.__rmatmul__ = lambda self, other: _RULES["matmul"](other, self)
MetaTensor.__imatmul__ = lambda self, other: _RULES["matmul"](self, other)
MetaTensor.__neg__ = lambda self: _RULES["neg"](self)
MetaTensor.__pos__ = lambda self: self
MetaTensor.__abs__ = lambda self: _RULES["abs"](self)
MetaTensor.__invert__ = lambda self: self._derive(self._shape)
MetaTensor.__getitem__ = _getitem
MetaTensor.__format__ = lambda self, spec: object.__format__(self, spec)


class MetaParameter(MetaTensor):
    """A ``Parameter`` on the meta device (``nn.Parameter(meta_tensor)``):
    ``isinstance(p, nn.Parameter)`` holds, so modules register it as one."""

    __slots__ = ()

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = MetaParameter(self._shape, self._dtype, self._rg)
        memo[id(self)] = out
        return out


def _function_apply(cls, args, kwargs):
    """A custom ``autograd.Function`` on meta tensors: its forward runs on them
    (so its ops' shape rules give the result); no graph is recorded."""
    from .autograd.function import Function, FunctionCtx
    from .autograd.grad_mode import no_grad

    if not issubclass(cls, Function):
        raise NotImplementedError(f"{cls.__name__}.apply has no meta implementation")
    rg = _any_requires_grad(args, kwargs)
    try:
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                out = cls.forward(*args, **kwargs)
            else:
                out = cls.forward(FunctionCtx(), *args, **kwargs)
    except TypeError as e:
        # Its forward calls a kernel that takes real tensors only.
        raise NotImplementedError(
            f"{cls.__name__} has no meta implementation (its forward needs data: {e})"
        ) from None

    def mark(o):
        if isinstance(o, MetaTensor) and rg and o.is_floating_point():
            return MetaTensor(o._shape, o._dtype, True, leaf=False)
        return o

    return tuple(mark(o) for o in out) if isinstance(out, tuple) else mark(out)


def _rebuild(cls, shape, dtype, requires_grad):
    return cls(shape, getattr(_C, dtype), requires_grad)


def _factory(shape, dtype, requires_grad):
    """A new meta tensor (called by the Rust factory functions for ``device="meta"``)."""
    return MetaTensor(shape, dtype, requires_grad)


def _like_factory(fn, input, device, dtype, requires_grad, make):
    """``*_like`` with a meta input or ``device="meta"``; ``make(*shape, dtype=...)``
    builds a real tensor when a meta input asks for a CPU result."""
    from ._device import _check_cpu

    to_meta = _check_cpu(fn, device)
    if device is None:
        to_meta = isinstance(input, MetaTensor)
    if not _is_tensorish(input):
        raise TypeError(
            f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    dt = dtype if dtype is not None else input.dtype
    if to_meta:
        return MetaTensor(tuple(input.shape), dt, requires_grad)
    out = make(*tuple(input.shape), dtype=dt)
    if requires_grad:
        out.requires_grad_(True)
    return out

