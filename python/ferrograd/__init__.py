"""ferrograd: reverse-mode autograd for dense CPU tensors, with PyTorch's API.

Tensors, kernels, the graph and the backward engine live in the Rust
extension ``ferrograd._C``; this package re-exports them under the names a
PyTorch user expects and adds the pure-Python conveniences (grad-mode
context managers, ``nn``, ``autograd.grad``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _C
from ._C import (
    Generator,
    Tensor,
    add,
    allclose,
    amax,
    amin,
    arange,
    argmax,
    argmin,
    bernoulli,
    bfloat16,
    broadcast_tensors,
    broadcast_to,
    cat,
    chunk,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    cumsum,
    default_generator,
    diagonal,
    einsum,
    empty,
    eye,
    flip,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    gather,
    get_num_threads,
    get_rng_state,
    index_select,
    initial_seed,
    int8,
    int16,
    int32,
    int64,
    is_grad_enabled,
    is_inference_mode_enabled,
    isclose,
    linspace,
    log_softmax,
    logsumexp,
    masked_fill,
    masked_select,
    max,
    min,
    movedim,
    multinomial,
    nan_to_num,
    narrow,
    nonzero,
    normal,
    ones,
    permute,
    polygamma,
    pow,
    prod,
    rand,
    randint,
    randn,
    randperm,
    round,
    scatter,
    scatter_add,
    seed,
    set_num_threads,
    set_rng_state,
    softmax,
    split,
    stack,
    std,
    sub,
    swapaxes,
    tensor,
    uint8,
    unbind,
    unflatten,
    var,
    where,
    zeros,
)
from ._C import bool as bool  # noqa: A001 - the dtype, as torch.bool
from ._C import dtype as dtype
from ._size import Size
from .autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from .autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

if TYPE_CHECKING:
    from builtins import bool as _bool
    from builtins import float as _float
    from builtins import int as _int
    from collections.abc import Sequence

    from ._typing import Device, DTypeLike, IntOrInts, Number

float = float32  # noqa: A001 - PyTorch's alias
double = float64
long = int64
half = float16
short = int16
int = int32  # noqa: A001 - PyTorch's alias

# One version, Cargo.toml's: the extension carries it, and the wheel's metadata takes it too.
__version__: str = _C.__version__

# The op table's module functions (src/py/ops_table.rs), kept by tools/gen_stub.py.
# isort: split
# @generated-begin: op table imports
from ._C import (  # noqa: E402
    abs,
    absolute,
    acos,
    acosh,
    all,
    any,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    bmm,
    ceil,
    clone,
    copysign,
    cos,
    cosh,
    deg2rad,
    digamma,
    div,
    divide,
    dot,
    eq,
    erf,
    erfc,
    erfinv,
    exp,
    exp2,
    expm1,
    fix,
    float_power,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    frac,
    ge,
    greater,
    greater_equal,
    gt,
    heaviside,
    hypot,
    i0,
    igamma,
    igammac,
    isfinite,
    isinf,
    isnan,
    le,
    less,
    less_equal,
    lgamma,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logit,
    lt,
    matmul,
    maximum,
    minimum,
    mm,
    mul,
    multiply,
    mv,
    ne,
    neg,
    negative,
    not_equal,
    outer,
    positive,
    rad2deg,
    reciprocal,
    relu,
    remainder,
    rsqrt,
    sgn,
    sigmoid,
    sign,
    signbit,
    silu,
    sin,
    sinc,
    sinh,
    special_erfcx,
    special_i0e,
    special_i1,
    special_i1e,
    special_log_ndtr,
    special_ndtri,
    special_zeta,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    trace,
    true_divide,
    trunc,
    xlogy,
)

# @generated-end: op table imports
# isort: split

# Imported after the names above exist: these modules use them.
import builtins as _builtins  # noqa: E402
import functools as _functools  # noqa: E402
import math as _math  # noqa: E402

from . import (  # noqa: E402, F401  # noqa: E402
    _device,
    _dynamo,  # noqa: E402, F401
    _meta,
    autograd,
    backends,
    cuda,
    nn,
    optim,  # noqa: E402
    random,
    return_types,
    utils,  # noqa: E402
    viz,
)
from ._compile import compile  # noqa: E402
from ._device import device, get_default_device, set_default_device  # noqa: E402
from ._dtype_info import finfo, iinfo  # noqa: E402
from ._legacy import (  # noqa: E402
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    set_default_tensor_type,
)
from .random import manual_seed  # noqa: E402
from .serialization import load, save  # noqa: E402

# PyTorch's constants.
pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan


def is_floating_point(input: Tensor) -> _bool:
    """Whether ``input`` is a tensor of a floating dtype."""
    _check_tensor("is_floating_point", input)
    return input.is_floating_point()


def _rebuild_tensor(array, requires_grad):
    """Unpickles a tensor (see ``Tensor.__reduce__``)."""
    t = from_numpy(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


# Without it a wrapper below would fail with an AttributeError on a non-tensor.
from ._dispatch import check_tensor as _check_tensor  # noqa: E402


def zeros_like(
    input: Tensor,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: _bool = False,
    memory_format: object = None,
) -> Tensor:
    """A tensor of zeros with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    if _device._check_cpu("zeros_like", device) or _meta.is_meta(input):
        return _meta._like_factory("zeros_like", input, device, dtype, requires_grad, _C.zeros)
    return _C._like(input, "full", 0.0, dtype, requires_grad)


def ones_like(
    input: Tensor,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: _bool = False,
    memory_format: object = None,
) -> Tensor:
    """A tensor of ones with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    if _device._check_cpu("ones_like", device) or _meta.is_meta(input):
        return _meta._like_factory("ones_like", input, device, dtype, requires_grad, _C.ones)
    return _C._like(input, "full", 1.0, dtype, requires_grad)


def full_like(
    input: Tensor,
    fill_value: Number,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: _bool = False,
    memory_format: object = None,
) -> Tensor:
    """A tensor filled with ``fill_value``, with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    if _device._check_cpu("full_like", device) or _meta.is_meta(input):
        def make(*shape, dtype):
            return _C.full(shape, fill_value, dtype=dtype)

        return _meta._like_factory("full_like", input, device, dtype, requires_grad, make)
    return _C._like(input, "full", fill_value, dtype, requires_grad)


def empty_like(
    input: Tensor,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: _bool = False,
    memory_format: object = None,
) -> Tensor:
    """A new tensor with the shape (and, unless ``dtype`` is given, the dtype) of ``input``; ferrograd zeroes it."""
    if _device._check_cpu("empty_like", device) or _meta.is_meta(input):
        return _meta._like_factory("empty_like", input, device, dtype, requires_grad, _C.zeros)
    return _C._like(input, "full", 0.0, dtype, requires_grad)


def rand_like(
    input: Tensor,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: _bool = False,
    memory_format: object = None,
    generator: Generator | None = None,
) -> Tensor:
    """A tensor shaped like ``input`` of uniform samples in [0, 1), drawn as ``rand``."""
    if _device._check_cpu("rand_like", device) or _meta.is_meta(input):
        make = _functools.partial(_C.rand, generator=generator)
        return _meta._like_factory("rand_like", input, device, dtype, requires_grad, make)
    return _C._random_like(input, "rand", 0, 0, dtype, requires_grad, generator)


def randn_like(
    input: Tensor,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: _bool = False,
    memory_format: object = None,
    generator: Generator | None = None,
) -> Tensor:
    """A tensor shaped like ``input`` of standard normal samples, drawn as ``randn``."""
    if _device._check_cpu("randn_like", device) or _meta.is_meta(input):
        make = _functools.partial(_C.randn, generator=generator)
        return _meta._like_factory("randn_like", input, device, dtype, requires_grad, make)
    return _C._random_like(input, "randn", 0, 0, dtype, requires_grad, generator)


def randint_like(
    input: Tensor,
    low: _int = 0,
    high: _int | None = None,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
    requires_grad: _bool = False,
    generator: Generator | None = None,
    memory_format: object = None,
) -> Tensor:
    """A tensor shaped like ``input`` of integers in ``[low, high)`` (``randint_like(x, high)``
    means ``[0, high)``), drawn as ``randint``, of ``input``'s dtype unless ``dtype`` is given."""
    if high is None:
        low, high = 0, low
    if _device._check_cpu("randint_like", device) or _meta.is_meta(input):
        def make(*shape, dtype):
            return _C.randint(low, high, shape, dtype=dtype, generator=generator)

        return _meta._like_factory("randint_like", input, device, dtype, requires_grad, make)
    return _C._random_like(input, "randint", low, high, dtype, requires_grad, generator)


def sum(  # noqa: A001
    input: Tensor,
    dim: IntOrInts | None = None,
    keepdim: _bool = False,
    *,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The sum of the elements of ``input``, over all of them or over ``dim`` (see ``Tensor.sum``)."""
    _check_tensor("sum", input)
    return input.sum(dim, keepdim, dtype=dtype)


def mean(
    input: Tensor,
    dim: IntOrInts | None = None,
    keepdim: _bool = False,
    *,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The mean of the elements of ``input``, over all of them or over ``dim`` (see ``Tensor.mean``)."""
    _check_tensor("mean", input)
    return input.mean(dim, keepdim, dtype=dtype)


def norm(
    input: Tensor,
    p: _float | str | None = "fro",
    dim: IntOrInts | None = None,
    keepdim: _bool = False,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The vector p-norm of ``input`` (``"fro"``, the default, is 2), over all elements or over ``dim`` (see ``Tensor.norm``)."""
    _check_tensor("norm", input)
    return input.norm(p, dim, keepdim, dtype)


def concat(tensors: Sequence[Tensor], dim: _int = 0) -> Tensor:
    """Alias of ``cat``: joins ``tensors`` along the existing dimension ``dim``."""
    return cat(tensors, dim)


concatenate = concat


def broadcast_shapes(*shapes: IntOrInts) -> Size:
    """The shape ``shapes`` broadcast to (NumPy's rules), as a ``Size``."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, _builtins.int) else tuple(shape)
        out = [1] * (len(shape) - len(out)) + out
        lead = len(out) - len(shape)
        for i, n in enumerate(shape):
            have = out[lead + i]
            if have == 1:
                out[lead + i] = n
            elif n not in (1, have):
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape. "
                    f"Mismatch is at dim {lead + i}: {have} vs {n}"
                )
    return Size(out)


def reshape(input: Tensor, shape: IntOrInts) -> Tensor:
    """``input`` with a new shape (one size may be -1): a view when possible, else a copy."""
    _check_tensor("reshape", input)
    return input.reshape(shape)


def transpose(input: Tensor, dim0: _int, dim1: _int) -> Tensor:
    """A view of ``input`` with dimensions ``dim0`` and ``dim1`` swapped."""
    _check_tensor("transpose", input)
    return input.transpose(dim0, dim1)


def t(input: Tensor) -> Tensor:
    """The transpose of ``input`` (at most 2 dimensions), as a view."""
    _check_tensor("t", input)
    return input.t()


def squeeze(input: Tensor, dim: _int | None = None) -> Tensor:
    """A view of ``input`` without its dimensions of size 1 (or only ``dim``, if it has size 1)."""
    _check_tensor("squeeze", input)
    return input.squeeze(dim)


def unsqueeze(input: Tensor, dim: _int) -> Tensor:
    """A view of ``input`` with a dimension of size 1 inserted at ``dim``."""
    _check_tensor("unsqueeze", input)
    return input.unsqueeze(dim)


def flatten(input: Tensor, start_dim: _int = 0, end_dim: _int = -1) -> Tensor:
    """``input`` with dimensions ``start_dim`` to ``end_dim`` merged into one (a view when possible)."""
    _check_tensor("flatten", input)
    return input.flatten(start_dim, end_dim)


def numel(input: Tensor) -> _int:
    """The number of elements of ``input``."""
    _check_tensor("numel", input)
    return input.numel()


def is_tensor(obj: object) -> _bool:
    """True when ``obj`` is a ferrograd ``Tensor`` (or a subclass such as ``nn.Parameter``)
    or a tensor on the meta device."""
    return isinstance(obj, Tensor) or _meta.is_meta(obj)


def equal(input: Tensor, other: Tensor) -> _bool:
    """True when ``input`` and ``other`` have the same shape and the same values."""
    _check_tensor("equal", input)
    _check_tensor("equal", other, "other", 2)
    return input.equal(other)


__all__ = [
    "BoolTensor",
    "BFloat16Tensor",
    "ByteTensor",
    "CharTensor",
    "HalfTensor",
    "IntTensor",
    "ShortTensor",
    "DoubleTensor",
    "FloatTensor",
    "LongTensor",
    "backends",
    "cuda",
    "device",
    "e",
    "finfo",
    "iinfo",
    "inf",
    "is_floating_point",
    "nan",
    "pi",
    "random",
    "Size",
    "Tensor",
    "add",
    "allclose",
    "amax",
    "amin",
    "arange",
    "argmax",
    "argmin",
    "autograd",
    "bool",
    "broadcast_shapes",
    "broadcast_tensors",
    "broadcast_to",
    "cat",
    "chunk",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "concat",
    "concatenate",
    "cumsum",
    "diagonal",
    "double",
    "dtype",
    "einsum",
    "empty",
    "empty_like",
    "enable_grad",
    "equal",
    "eye",
    "flatten",
    "flip",
    "float",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "full",
    "full_like",
    "gather",
    "get_num_threads",
    "index_select",
    "inference_mode",
    "int64",
    "int8",
    "int16",
    "int32",
    "half",
    "short",
    "int",
    "bfloat16",
    "uint8",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_tensor",
    "isclose",
    "linspace",
    "load",
    "log_softmax",
    "logsumexp",
    "long",
    "manual_seed",
    "Generator",
    "bernoulli",
    "default_generator",
    "get_rng_state",
    "initial_seed",
    "multinomial",
    "normal",
    "randint_like",
    "randperm",
    "seed",
    "set_rng_state",
    "masked_fill",
    "masked_select",
    "max",
    "mean",
    "min",
    "movedim",
    "nan_to_num",
    "narrow",
    "nn",
    "no_grad",
    "nonzero",
    "norm",
    "numel",
    "ones",
    "optim",
    "ones_like",
    "permute",
    "polygamma",
    "pow",
    "prod",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "reshape",
    "return_types",
    "round",
    "save",
    "scatter",
    "scatter_add",
    "set_anomaly_enabled",
    "set_grad_enabled",
    "set_num_threads",
    "softmax",
    "split",
    "squeeze",
    "stack",
    "std",
    "sub",
    "sum",
    "swapaxes",
    "t",
    "tensor",
    "transpose",
    "unbind",
    "unflatten",
    "unsqueeze",
    "utils",
    "var",
    "where",
    "zeros",
    "zeros_like",
]
# @generated-begin: op table __all__
__all__ += [
    "abs",
    "absolute",
    "acos",
    "acosh",
    "all",
    "any",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "bmm",
    "ceil",
    "clone",
    "copysign",
    "cos",
    "cosh",
    "deg2rad",
    "digamma",
    "div",
    "divide",
    "dot",
    "eq",
    "erf",
    "erfc",
    "erfinv",
    "exp",
    "exp2",
    "expm1",
    "fix",
    "float_power",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "frac",
    "ge",
    "greater",
    "greater_equal",
    "gt",
    "heaviside",
    "hypot",
    "i0",
    "igamma",
    "igammac",
    "isfinite",
    "isinf",
    "isnan",
    "le",
    "less",
    "less_equal",
    "lgamma",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logit",
    "lt",
    "matmul",
    "maximum",
    "minimum",
    "mm",
    "mul",
    "multiply",
    "mv",
    "ne",
    "neg",
    "negative",
    "not_equal",
    "outer",
    "positive",
    "rad2deg",
    "reciprocal",
    "relu",
    "remainder",
    "rsqrt",
    "sgn",
    "sigmoid",
    "sign",
    "signbit",
    "silu",
    "sin",
    "sinc",
    "sinh",
    "special_erfcx",
    "special_i0e",
    "special_i1",
    "special_i1e",
    "special_log_ndtr",
    "special_ndtri",
    "special_zeta",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "trace",
    "true_divide",
    "trunc",
    "xlogy",
]
# @generated-end: op table __all__

# Sorting and selection (Rust kernels) and the ops composed from differentiable primitives.
from ._C import argsort, kthvalue, median, msort, nanmedian, sort, topk  # noqa: E402
from ._composite import *  # noqa: E402, F403
from ._composite import __all__ as _composite_all  # noqa: E402

__all__ += ["argsort", "kthvalue", "median", "msort", "nanmedian", "sort", "topk", *_composite_all]
# testing is torch.testing without an import; torch.det/svd/... are linalg's aliases.
from . import __config__, linalg, testing  # noqa: E402, F401
from .linalg._aliases import _cholesky_legacy as cholesky  # noqa: E402
from .linalg._aliases import _det as det  # noqa: E402
from .linalg._aliases import _geqrf as geqrf  # noqa: E402
from .linalg._aliases import _inverse as inverse  # noqa: E402
from .linalg._aliases import _logdet as logdet  # noqa: E402
from .linalg._aliases import _matrix_exp as matrix_exp  # noqa: E402
from .linalg._aliases import _matrix_power as matrix_power  # noqa: E402
from .linalg._aliases import _orgqr as orgqr  # noqa: E402
from .linalg._aliases import _pinverse as pinverse  # noqa: E402
from .linalg._aliases import _qr_legacy as qr  # noqa: E402
from .linalg._aliases import _slogdet_legacy as slogdet  # noqa: E402
from .linalg._aliases import _svd_legacy as svd  # noqa: E402

__all__ += ["cholesky", "det", "geqrf", "inverse", "linalg", "logdet", "matrix_exp"]
__all__ += ["matrix_power", "orgqr", "pinverse", "qr", "slogdet", "svd"]

# Function transforms; ``ferrograd.vmap`` is ``ferrograd.func.vmap``, as ``torch.vmap``.
# isort: split
from . import func  # noqa: E402
from .func import vmap  # noqa: E402

__all__ += ["func", "vmap"]
from ._C import can_cast, get_default_dtype, mode, promote_types, result_type, set_default_dtype  # noqa: E402

__all__ += [
    "can_cast",
    "get_default_dtype",
    "mode",
    "promote_types",
    "result_type",
    "set_default_dtype",
    "set_default_tensor_type",
]
__all__ += ["get_default_device", "set_default_device"]
# range, memory formats, matmul precision, interop threads (PyTorch's names); hub.
from . import hub  # noqa: E402, F401
from ._compat import *  # noqa: E402, F403
from ._compat import __all__ as _compat_all  # noqa: E402

__all__ += [*_compat_all, "hub"]
from . import jit  # noqa: E402, F401

__all__ += ["jit"]
__all__ += ["compile"]

# ----- mixed precision: autocast regions, GradScaler (amp/), the CPU device module -----
from . import amp, cpu  # noqa: E402
from .amp import autocast  # noqa: E402
from .amp._state import *  # noqa: E402, F403
from .amp._state import PUBLIC as _amp_all  # noqa: E402

__all__ += ["amp", "autocast", "cpu", *_amp_all]

# ----- tensor API additions (_tensor_api/): constructors, index/scatter family, scans,
# shape helpers, reductions, windows, settings, and nn.functional aliases -----
# isort: split
from ._tensor_api import *  # noqa: E402, F403
from ._tensor_api import __all__ as _tensor_api_all  # noqa: E402

__all__ += list(_tensor_api_all)

# nn.functional ops PyTorch also has at the top level (torch.conv2d, torch.dropout, ...).
from ._nn_aliases import *  # noqa: E402, F403
from ._nn_aliases import __all__ as _nn_aliases_all  # noqa: E402

__all__ += _nn_aliases_all
# ----- end of tensor API additions -----

# torch.special and torch.distributions; the samplers they draw from.
# isort: split
from . import (  # noqa: E402, F401
    _methods,  # noqa: E402
    distributions,
    profiler,
    special,
)
from ._C import (  # noqa: E402, F401
    _sample_dirichlet,
    _standard_gamma,
    _standard_gamma_grad,
    binomial,
    poisson,
)
from .special import mvlgamma  # noqa: E402


def _tensor_mvlgamma(self, p):
    """``mvlgamma(self, p)``: the multivariate log-gamma function of dimension ``p``."""
    return mvlgamma(self, p)


_methods.attach({"mvlgamma": _tensor_mvlgamma}, __name__, replace=True)
__all__ += ["binomial", "distributions", "mvlgamma", "poisson", "special"]
