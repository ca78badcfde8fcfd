"""Misuse fuzzing: every public op, called with hostile arguments, either works or
raises an ordinary exception, never an internal error and never a crash.

``guard`` (src/py/errors.rs) turns a Rust panic into
``RuntimeError("internal error in ferrograd ...")``, so a panic does not kill the
process; but every such message is a bug (an unchecked index, a size that
overflows, an ``unwrap`` on user data). These tests call every function of
``ferrograd``, ``ferrograd.nn.functional`` and ``ferrograd.autograd`` and every
``Tensor`` method, enumerated from ``dir()`` so new ops are fuzzed without
being listed, with arguments drawn from a pool of nasty values, and run
``backward`` on whatever requires grad with gradients of random shapes and
dtypes.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import math
import resource
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ferrograd as fg
import ferrograd.nn.functional as F

ALLOWED = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError, OverflowError)
INTERNAL = "internal error in ferrograd"

# -- what is fuzzed -------------------------------------------------------------------

# Names in `dir(ferrograd)` that are not ops. Modules, dtypes and other
# non-callables are dropped automatically.
SKIP_FUNCTIONS = {
    # grad-mode context managers: they flip thread-local state, they compute nothing
    "no_grad",
    "enable_grad",
    "inference_mode",
    "set_grad_enabled",
    # anomaly mode is thread-local state too; fuzzing it would leave anomaly
    # detection on (and every op slower) for the tests that run after
    "set_anomaly_enabled",
    # resizes the global thread pool (covered by test_threads.py); fuzzing it
    # would change the thread count under every other test
    "set_num_threads",
    # classes that are not ops: the dtype type, and Size, a plain tuple subclass
    "dtype",
    "Size",
    # set the process-wide default dtype: a drawn float64 would change what
    # every later test creates (tests/test_default_dtype.py covers their misuse)
    "set_default_dtype",
    "set_default_tensor_type",
    # file I/O, not ops: a drawn string is a path, and fuzzing would write files
    # (tests/test_serialization.py covers their misuse)
    "save",
    "load",
    # tensor API additions: process-wide print options and the determinism flag
    # (tests/test_tensor_api_more.py covers their misuse)
    "set_printoptions",
    "use_deterministic_algorithms",
}

# `Tensor` attributes that are not ops (Python object protocol, pickling).
SKIP_METHODS = {
    "__class__",
    "__delattr__",
    "__dir__",
    "__doc__",
    "__format__",
    "__getattribute__",
    "__getstate__",
    "__init__",
    "__init_subclass__",
    "__module__",
    "__new__",
    "__reduce__",
    "__reduce_ex__",
    "__setattr__",
    "__sizeof__",
    "__subclasshook__",
    "__hash__",
    "__array_priority__",
}

# PyTorch's own Python code calls methods on the input first, so a non-tensor
# gives an AttributeError there too; ours match it.
TORCH_ATTRIBUTE_ERRORS = {"softmax", "log_softmax", "softmin", "normalize"}

SKIP_AUTOGRAD = {
    # classes and decorators for user-defined Functions (test_function.py)
    "Function",
    "FunctionCtx",
    "once_differentiable",
    "GradcheckError",
    # grad-mode context managers, as above
    "no_grad",
    "enable_grad",
    "inference_mode",
    "set_grad_enabled",
}


def _public_callables(namespace, skip):
    out = {}
    for name in dir(namespace):
        if name.startswith("_") or name in skip:
            continue
        obj = getattr(namespace, name)
        if isinstance(obj, (types.ModuleType, fg.dtype)) or not callable(obj):
            continue
        if inspect.isclass(obj) and obj is not fg.Tensor:
            continue
        out[name] = obj
    return out


FUNCTIONS = _public_callables(fg, SKIP_FUNCTIONS)
NN_FUNCTIONS = _public_callables(F, set())
AUTOGRAD_FUNCTIONS = _public_callables(fg.autograd, SKIP_AUTOGRAD)

METHODS = sorted(
    name
    for name in dir(fg.Tensor)
    if name not in SKIP_METHODS
    and not isinstance(inspect.getattr_static(fg.Tensor, name), (int, float, str))
)
# Properties are read; the writable ones are also assigned nasty values.
PROPERTIES = sorted(
    name
    for name in METHODS
    if inspect.isdatadescriptor(inspect.getattr_static(fg.Tensor, name))
)
SETTABLE = ["data", "grad", "requires_grad"]
METHODS = [name for name in METHODS if name not in PROPERTIES]

# -- the pool of nasty values ---------------------------------------------------------

NASTY_INTS = [
    0,
    1,
    2,
    3,
    -1,
    -2,
    -4,
    7,
    2**20,
    2**31,
    2**32 + 1,
    10**7,
    2**62,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64,
    10**30,
]
NASTY_FLOATS = [0.0, -0.0, 0.5, -1.5, 2.0, math.nan, math.inf, -math.inf, 1e308, 5e-324, 1e30]
NASTY_STRINGS = [
    "",
    "none",
    "mean",
    "sum",
    "tanh",
    "fro",
    "nuc",
    "float32",
    "ij->ji",
    "ii->i",
    "ii",
    "i,i->",
    "ij,jk->ik",
    "...ij->...ji",
    "i->ii",
    "...,...->...",
    "a...b,b...->a",
    "->",
    "i j",
    "ij,,->",
    "I",
    "\x00",
]
DTYPES = [fg.float32, fg.float64, fg.int64, fg.bool]
SHAPES = [
    (),
    (0,),
    (1,),
    (3,),
    (2, 3),
    (3, 2),
    (1, 3),
    (3, 1),
    (2, 0),
    (0, 3),
    (3, 3),
    (2, 1, 3),
    (2, 3, 3),
    (1, 1, 1, 1),
]
# Past the kernels' grain size (32,768), so the parallel paths run too.
BIG_SHAPES = [(70_000,), (2, 40_000)]
SPECIAL = {
    fg.float32: [0.0, -0.0, 1.0, -1.5, 3.0, math.nan, math.inf, -math.inf, 1e38],
    fg.float64: [0.0, -0.0, 1.0, -1.5, 3.0, math.nan, math.inf, -math.inf, 1e308],
    fg.int64: [0, 1, 2, -1, -3, 5, 2**62, -(2**63), 2**63 - 1],
    fg.bool: [False, True],
}

small_ints = st.sampled_from([-3, -2, -1, 0, 1, 2, 3])
nasty_ints = st.sampled_from(NASTY_INTS)
ints = st.one_of(small_ints, small_ints, nasty_ints)
floats = st.sampled_from(NASTY_FLOATS)
int_tuples = st.lists(ints, max_size=5).map(tuple)
int_lists = st.lists(ints, max_size=5)
strings = st.one_of(st.sampled_from(NASTY_STRINGS), st.text("ij.,->kI ", max_size=10))


@st.composite
def nasty_tensors(draw, dtype=None, shape=None, leaf=False):
    """A tensor of any dtype and shape, possibly a non-contiguous view (transposed,
    stepped, expanded), possibly requiring grad (as a leaf or as a view of one)."""
    dtype = dtype if dtype is not None else draw(st.sampled_from(DTYPES))
    if shape is None:
        big = draw(st.integers(0, 19)) == 0
        shape = draw(st.sampled_from(BIG_SHAPES if big else SHAPES))
    n = math.prod(shape)
    if n > 64:
        base = fg.full(shape, draw(st.sampled_from(SPECIAL[dtype])), dtype=dtype)
        if dtype is not fg.bool and draw(st.booleans()):
            base = fg.arange(n, dtype=dtype).reshape(shape) if dtype is not fg.bool else base
    else:
        vals = draw(st.lists(st.sampled_from(SPECIAL[dtype]), min_size=n, max_size=n))
        base = fg.tensor(vals, dtype=dtype).reshape(shape)
    floating = dtype in (fg.float32, fg.float64)
    requires_grad = floating and draw(st.booleans())
    kind = "plain" if leaf else draw(st.sampled_from(["plain", "t", "step", "expand", "slice"]))
    if kind == "t" and base.dim() >= 2:
        src = base.transpose(0, -1).contiguous().requires_grad_(requires_grad)
        return src.transpose(0, -1)
    if kind == "step" and base.dim() >= 1:
        src = fg.cat([base, base], 0).requires_grad_(requires_grad)
        return src[::2]
    if kind == "expand":
        src = base.unsqueeze(0).requires_grad_(False).clone().requires_grad_(requires_grad)
        return src.expand(2, *shape)
    if kind == "slice" and base.dim() >= 1:
        src = fg.cat([base[:1], base], 0).requires_grad_(requires_grad)
        return src[1:]
    return base.requires_grad_(requires_grad)


tensors = nasty_tensors()
index_tensors = st.one_of(
    nasty_tensors(dtype=fg.int64),
    st.lists(st.sampled_from([0, 1, 2, -1, -4, 3, 2**40]), max_size=4).map(
        lambda v: fg.tensor(v, dtype=fg.int64)
    ),
)
bool_tensors = nasty_tensors(dtype=fg.bool)
tensor_lists = st.lists(tensors, max_size=3)

numpy_arrays = st.sampled_from(
    [
        np.zeros((2, 3), np.float32),
        np.arange(6.0).reshape(2, 3)[:, ::-1],
        np.arange(6, dtype=np.int8).reshape(3, 2).T,
        np.broadcast_to(np.float64(1.0), (3, 4)),
        np.array([], dtype=np.float16),
        np.array([1 + 2j]),
        np.array(["a"]),
        np.array([None], dtype=object),
        np.zeros((2, 0, 3), np.int64),
        np.array(5.0),
        np.arange(4, dtype=">f8"),
        np.frombuffer(b"\x00" * 17, dtype=np.uint8)[1:].view(np.float64),
    ]
)

slices = st.builds(
    slice,
    st.one_of(st.none(), ints),
    st.one_of(st.none(), ints),
    st.one_of(st.none(), st.sampled_from([1, 2, -1, 0, 2**63 - 1])),
)
index_atoms = st.one_of(
    ints, slices, st.none(), st.just(Ellipsis), st.booleans(), index_tensors, bool_tensors, int_lists
)
index_keys = st.one_of(index_atoms, st.lists(index_atoms, max_size=4).map(tuple))

anything = st.deferred(
    lambda: st.one_of(
        tensors,
        tensors,
        ints,
        floats,
        st.none(),
        st.booleans(),
        int_tuples,
        int_lists,
        strings,
        st.sampled_from(DTYPES + [np.float32, "float64", fg.Size([2, 3])]),
        tensor_lists,
        numpy_arrays,
        st.lists(floats, max_size=3),
        st.just([[1, 2], [3]]),
        st.just(complex(1, 2)),
        st.just(object()),
        st.just(Ellipsis),
        slices,
    )
)

# Strategies by parameter name: plausible values more often than not, so the
# calls get past argument parsing and into the kernels.
BY_NAME = {
    "dim": st.one_of(ints, int_tuples, st.none()),
    "keepdim": st.booleans(),
    "dtype": st.one_of(st.sampled_from(DTYPES), st.none()),
    "index": st.one_of(index_tensors, ints),
    "mask": bool_tensors,
    "condition": bool_tensors,
    "key": index_keys,
    "equation": strings,
    "tensors": tensor_lists,
    "size": st.one_of(int_tuples, ints),
    "shape": int_tuples,
    "sizes": int_tuples,
    "reduction": st.sampled_from(["mean", "sum", "none", "bogus"]),
    "approximate": st.sampled_from(["none", "tanh", "bogus"]),
    "requires_grad": st.booleans(),
    "gradient": st.one_of(st.none(), tensors),
    "grad_tensors": st.one_of(st.none(), tensors, tensor_lists),
    "grad_outputs": st.one_of(st.none(), tensors, tensor_lists),
    "inputs": st.one_of(st.none(), tensors, tensor_lists),
    "outputs": st.one_of(tensors, tensor_lists),
    "p": st.one_of(floats, st.sampled_from([1, 2, "fro", 0.5])),
}
for _name in ["dim0", "dim1", "start_dim", "end_dim", "source", "destination", "axis0", "axis1",
              "offset", "chunks", "decimals", "start", "length", "diagonal", "n", "m", "steps",
              "split_size_or_sections", "ignore_index", "high", "low"]:
    BY_NAME[_name] = ints
for _name in ["input", "other", "target", "weight", "bias", "src", "self", "pos_weight",
              "exponent", "tensor", "value", "min", "max", "end", "fill_value", "data"]:
    BY_NAME[_name] = st.one_of(tensors, tensors, ints, floats)


def _value_for(name):
    named = BY_NAME.get(name)
    return anything if named is None else st.one_of(named, named, named, anything)


def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


@st.composite
def call_args(draw, fn, bound):
    """Positional and keyword arguments for `fn` (`bound`: whether `self` is
    already supplied)."""
    sig = _signature(fn)
    args, kwargs = [], {}
    params = [] if sig is None else list(sig.parameters.values())
    if bound and params and params[0].name == "self":
        params = params[1:]
    if sig is None:
        return draw(st.lists(anything, max_size=4)), {}
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            # Optional parameters are given sometimes; required ones nearly always.
            required = p.default is p.empty
            if not required and not draw(st.booleans()):
                break
            if required and draw(st.integers(0, 30)) == 0:
                break
            args.append(draw(_value_for(p.name)))
        elif p.kind == p.VAR_POSITIONAL:
            args.extend(draw(st.lists(st.one_of(ints, ints, int_tuples, anything), max_size=4)))
        elif p.kind == p.KEYWORD_ONLY:
            if draw(st.booleans()):
                kwargs[p.name] = draw(_value_for(p.name))
        elif p.kind == p.VAR_KEYWORD:
            for name in draw(st.lists(st.sampled_from(sorted(BY_NAME)), max_size=2)):
                kwargs[name] = draw(_value_for(name))
    if draw(st.integers(0, 20)) == 0:
        args.append(draw(anything))
    return args, kwargs


# -- the checks -----------------------------------------------------------------------


def _describe(value):
    if isinstance(value, fg.Tensor):
        try:
            return (
                f"Tensor(shape={tuple(value.shape)}, dtype={value.dtype}, "
                f"stride={value.stride()}, requires_grad={value.requires_grad})"
            )
        except Exception:  # noqa: BLE001 - description only
            return "Tensor(?)"
    if isinstance(value, (list, tuple)) and len(value) < 10:
        inner = ", ".join(_describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)[:200]


def check_call(what, fn, *args, also=(), **kwargs):
    """Calls `fn`; returns its result, or None when it raised an allowed error
    (`ALLOWED`, plus `also`). Anything else (an internal error, a
    PanicException, an unexpected exception class) fails with the call that
    caused it."""
    try:
        return fn(*args, **kwargs)
    except ALLOWED + tuple(also) as e:
        if INTERNAL in str(e):
            raise AssertionError(f"{what}{_describe(args)} {kwargs}: panic inside ferrograd: {e}") from e
        return None
    except BaseException as e:  # noqa: BLE001 - PanicException derives from BaseException
        if isinstance(e, (KeyboardInterrupt, AssertionError)):
            raise
        raise AssertionError(
            f"{what}{_describe(args)} {kwargs}: unexpected {type(e).__name__}: {e}"
        ) from e


def _tensors_in(result):
    if isinstance(result, fg.Tensor):
        yield result
    elif isinstance(result, (tuple, list)):
        for r in itertools.islice(result, 8):
            yield from _tensors_in(r)


def exercise_backward(data, result, what):
    """Runs `backward` (or `autograd.grad`) from each output that requires grad,
    with a gradient of the right shape, a random tensor, or none."""
    for out in _tensors_in(result):
        if not out.requires_grad:
            continue
        choice = data.draw(st.sampled_from(["none", "like", "random", "grad"]), label="backward")
        if choice == "like":
            grad = fg.ones_like(out) if out.numel() < 10**6 else None
        elif choice == "random":
            grad = data.draw(st.one_of(tensors, floats, st.none()), label="gradient")
        else:
            grad = None
        retain = data.draw(st.booleans(), label="retain_graph")
        create = data.draw(st.booleans(), label="create_graph")
        if choice == "grad":
            check_call(f"autograd.grad after {what}", fg.autograd.grad, out.sum(), out,
                       allow_unused=True, create_graph=create)
        else:
            check_call(f"backward after {what}", out.backward, grad,
                       retain_graph=retain, create_graph=create)


def _consume(result):
    # Iterators (`iter(t)`) are consumed, but only a few items: an expanded
    # tensor may have billions of rows.
    if isinstance(result, types.GeneratorType) or type(result).__name__.endswith("iterator"):
        return list(itertools.islice(result, 4))
    return result


@contextlib.contextmanager
def bounded_memory(headroom=3 << 30):
    """Caps the address space for the duration: a request for more than a few
    GB then fails at once instead of succeeding lazily (Linux overcommits) and
    eating the machine while a kernel fills it."""
    # The thread pool's stacks are mapped before the cap, not under it.
    (fg.ones(200_000) * 2).sum()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    limit = used + headroom
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture(scope="module", autouse=True)
def _memory_cap():
    with bounded_memory():
        yield


def _examples(factor):
    # Scales with the profile: a few seconds for `dev`, about a minute in all for `ci`.
    return max(40, settings().max_examples * factor)


FUZZ = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# -- the tests ------------------------------------------------------------------------


def test_everything_public_is_fuzzed_or_skipped_on_purpose():
    assert len(FUNCTIONS) > 120, sorted(FUNCTIONS)
    assert len(METHODS) > 150, METHODS
    assert len(NN_FUNCTIONS) > 20 and len(AUTOGRAD_FUNCTIONS) >= 4
    assert {"zeros", "einsum", "cat", "Tensor"} <= set(FUNCTIONS)
    assert {"view", "repeat", "__getitem__", "__setitem__", "backward", "add_"} <= set(METHODS)
    assert {"T", "mT", "grad", "data", "shape"} <= set(PROPERTIES)


@settings(max_examples=_examples(16), **FUZZ)
@given(name=st.sampled_from(sorted(FUNCTIONS)), data=st.data())
def test_functions_survive_misuse(name, data):
    fn = FUNCTIONS[name]
    args, kwargs = data.draw(call_args(fn, bound=False), label="args")
    result = _consume(check_call(f"ferrograd.{name}", fn, *args, **kwargs))
    exercise_backward(data, result, name)


@settings(max_examples=_examples(16), **FUZZ)
@given(name=st.sampled_from(METHODS), self=tensors, data=st.data())
def test_tensor_methods_survive_misuse(name, self, data):
    fn = getattr(self, name)
    args, kwargs = data.draw(call_args(getattr(fg.Tensor, name), bound=True), label="args")
    result = _consume(check_call(f"Tensor.{name}", fn, *args, **kwargs))
    exercise_backward(data, result, name)


@settings(max_examples=_examples(4), **FUZZ)
@given(name=st.sampled_from(PROPERTIES), self=tensors, value=anything)
def test_tensor_properties_survive_misuse(name, self, value):
    check_call(f"Tensor.{name}", getattr, self, name)
    if name in SETTABLE:
        check_call(f"Tensor.{name} = ", setattr, self, name, value)
        check_call(f"Tensor.{name}", getattr, self, name)
        check_call("repr after setting", repr, self)


@settings(max_examples=_examples(4), **FUZZ)
@given(name=st.sampled_from(sorted(NN_FUNCTIONS)), data=st.data())
def test_nn_functional_survives_misuse(name, data):
    fn = NN_FUNCTIONS[name]
    args, kwargs = data.draw(call_args(fn, bound=False), label="args")
    also = (AttributeError,) if name in TORCH_ATTRIBUTE_ERRORS else ()
    result = check_call(f"nn.functional.{name}", fn, *args, also=also, **kwargs)
    exercise_backward(data, result, name)


@settings(max_examples=_examples(2), **FUZZ)
@given(name=st.sampled_from(sorted(AUTOGRAD_FUNCTIONS)), data=st.data())
def test_autograd_survives_misuse(name, data):
    fn = AUTOGRAD_FUNCTIONS[name]
    args, kwargs = data.draw(call_args(fn, bound=False), label="args")
    check_call(f"autograd.{name}", fn, *args, **kwargs)


@settings(max_examples=_examples(4), **FUZZ)
@given(self=tensors, key=index_keys, value=st.one_of(tensors, ints, floats, st.booleans()),
       data=st.data())
def test_indexing_survives_misuse(self, key, value, data):
    result = check_call("Tensor.__getitem__", self.__getitem__, key)
    exercise_backward(data, result, "__getitem__")
    check_call("Tensor.__setitem__", self.__setitem__, key, value)
    exercise_backward(data, self, "__setitem__")


def _positional_params(fn, guess):
    """The positional parameters of `fn`; `guess` nameless ones for a native
    function, whose signature Python cannot read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return [inspect.Parameter(f"arg{k}", inspect.Parameter.POSITIONAL_ONLY) for k in range(guess)]
    return [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _non_tensor_failures(label, fn, params, also=()):
    """Calls `fn` with a ragged list or a string at each positional place in turn
    (tensors before it, defaults for the optional ones); returns the calls that
    raised anything but an ordinary error."""
    failures = []
    for shape, k, bad in itertools.product([(2, 3, 4, 4), (4,)], range(len(params)), [[[1, 2], [3]], "abc"]):
        args = [fg.randn(*shape) if p.default is p.empty else p.default for p in params[:k]]
        try:
            check_call(label, fn, *args, bad, also=also)
        except AssertionError as e:
            failures.append(str(e).splitlines()[0])
    return failures


@pytest.mark.parametrize("namespace", ["ferrograd", "nn.functional", "Tensor"])
def test_a_non_tensor_where_a_tensor_goes_is_an_ordinary_error(namespace):
    """Deterministic companion of the fuzzers: every public callable, with a
    non-tensor at every positional place, never reaches an AttributeError from
    inside a composite (PyTorch's own AttributeErrors excepted)."""
    failures = []
    if namespace == "Tensor":
        for name in METHODS:
            method = getattr(fg.randn(2, 3, 4, 4), name, None)
            if name.startswith("_") or not callable(method):
                continue
            failures += _non_tensor_failures(f"Tensor.{name}", method, _positional_params(method, 2))
    else:
        table = FUNCTIONS if namespace == "ferrograd" else NN_FUNCTIONS
        for name, fn in sorted(table.items()):
            if inspect.isclass(fn):
                continue
            also = (AttributeError,) if namespace != "ferrograd" and name in TORCH_ATTRIBUTE_ERRORS else ()
            failures += _non_tensor_failures(name, fn, _positional_params(fn, 3), also)
    assert not failures, "\n".join(failures)


def test_the_checker_reports_internal_errors():
    def panics():
        raise RuntimeError("internal error in ferrograd (please report it): index out of bounds")

    with pytest.raises(AssertionError, match="panic inside ferrograd"):
        check_call("f", panics)
    with pytest.raises(AssertionError, match="unexpected AttributeError"):
        check_call("f", lambda: None.shape)
    assert check_call("f", lambda: 1 / fg.tensor([1.0])) is not None
    assert check_call("f", lambda: fg.zeros(-1)) is None

