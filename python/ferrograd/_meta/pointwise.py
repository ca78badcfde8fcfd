"""Shape rules of elementwise ops: one operand keeps its shape (as do the
normalisations), several broadcast; and the dtype conversions (``float()``,
``long()``, ...)."""

from __future__ import annotations

from .. import _C
from . import (
    _RULES,
    MetaTensor,
    _any_requires_grad,
    _broadcast,
    _check_devices,
    _is_tensorish,
    _real_fn,
    _run,
)


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

# ----- dtype conversions -------------------------------------------------------------------

def _cast(dtype):
    def rule(x, *args, **kwargs):
        return x._derive(x._shape, getattr(_C, dtype))

    return rule


for _n, _d in (("float", "float32"), ("double", "float64"), ("long", "int64"), ("int", "int64"),
               ("bool", "bool"), ("half", "float32"), ("short", "int64"), ("byte", "int64"),
               ("char", "int64")):  # fmt: skip
    _RULES[_n] = _cast(_d)
