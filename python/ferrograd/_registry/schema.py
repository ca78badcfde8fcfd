"""What one declaration of an op says, and the vocabulary it is written in.

An :class:`Op` is the single place that describes a public op: the names
and surfaces users call it by, what it computes (its native core function or
its Python composition), its dtypes, its docstring, the autograd nodes it
records and what the engine, the batched engine and compile may assume of
them, how ``vmap`` batches it, whether ``ferrograd.compile`` replays it,
which fused instruction it is, and the sample inputs every feature's test
and the per-op benchmark draw from. ``tools/gen_registry.py`` writes the
bindings of the regular native ops, the node-trait table the Rust core
reads, the stub and ``__all__`` from these declarations; at import,
``ferrograd.func`` registers the batching rules from them;
``tests/test_op_coverage.py`` walks every op through every feature and
``benches/ops.py`` times every op.

Nothing here imports NumPy's test helpers or hypothesis: sample inputs are
described as data (:class:`Sample`), and ``ferrograd.testing._samples``
turns them into hypothesis strategies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

# ----- dtypes ------------------------------------------------------------------------------

#: The dtype sets an op accepts, by PyTorch's kernel families. The names are
#: the ones a ``not implemented for 'Long'`` error reads from.
FLOATING = "floating"  # float16, bfloat16, float32, float64
FLOATING_PROMOTES = "floating_promotes"  # integers and bool promote to the default float
NUMERIC = "numeric"  # every dtype but bool
ALL = "all"  # every dtype
INTEGRAL = "integral"  # integers and bool (bitwise)
DTYPE_SETS = (FLOATING, FLOATING_PROMOTES, NUMERIC, ALL, INTEGRAL)

# ----- node traits -------------------------------------------------------------------------

#: The node's rule is elementwise and linear in the gradient: at ones it gives
#: f'(x) at the output's shape (the batched engine's diagonal fast path).
DIAGONAL = "diagonal"
#: The node's backward closure, given a tangent, returns J t unreduced (its
#: Jacobian is diagonal, or symmetric as softmax's): forward mode reuses it.
SELF_ADJOINT = "self_adjoint"
#: The node's rule reads only its context and non-tensor values, so a
#: compiled tape may run it as a static VJP step.
STATIC_VJP = "static_vjp"
#: The rule reshapes the gradient to the input's shape (views, reshapes).
RESHAPE = "reshape"
NODE_TRAITS = (DIAGONAL, SELF_ADJOINT, STATIC_VJP, RESHAPE)

#: The traits an elementwise node has unless its declaration says otherwise.
ELEMENTWISE_NODE = (DIAGONAL, SELF_ADJOINT, STATIC_VJP)

# ----- batching kinds ----------------------------------------------------------------------

#: How ``vmap`` runs the op: the rules live in ``ferrograd.func._rules``.
EW = "elementwise"  # operands padded to a common logical rank, one call
EW_INPLACE = "elementwise_inplace"  # ``x.op_(...)`` with ``x`` batched
REDUCTION = "reduction"  # dim arguments shifted past the batch dimension
VIEW = "view"  # a rule written against the physical value
CUSTOM = "custom"  # a named rule in ``func._rules`` (``Op.batching_rule``)
NONE = "none"  # no batching rule: the op is refused under vmap (Op.refuse)

# ----- features ----------------------------------------------------------------------------

#: The cells of the coverage matrix (``tests/test_op_coverage.py``).
FORWARD = "forward"  # values against the reference
GRAD = "grad"  # gradcheck in float64
GRADGRAD = "gradgrad"  # gradgradcheck in float64
JVP = "jvp"  # forward-mode AD against reverse mode
VMAP = "vmap"  # vmap of the out-of-place form against a loop
VMAP_INPLACE = "vmap_inplace"  # vmap of the in-place form against a loop
COMPILE = "compile"  # ferrograd.compile(fullgraph=True) against eager, bit for bit
JACOBIAN = "jacobian"  # jacobian(vectorize=True) against the loop
FEATURES = (FORWARD, GRAD, GRADGRAD, JVP, VMAP, VMAP_INPLACE, COMPILE, JACOBIAN)

# ----- autocast policies -------------------------------------------------------------------

#: What an op does to its float32/float16/bfloat16 inputs inside an autocast
#: region (PyTorch's CPU lists and its cast-policy names): cast them to the
#: region's dtype, cast them to float32, or cast them to the widest of them.
LOWER_PRECISION_FP = "lower_precision_fp"
FP32 = "fp32"
PROMOTE = "promote"
AUTOCAST_POLICIES = (LOWER_PRECISION_FP, FP32, PROMOTE)

# ----- sample inputs -----------------------------------------------------------------------


@dataclass(frozen=True)
class Domain:
    """Where an input's elements are drawn: ``[lo, hi]``, at least ``away``
    from each point of ``kinks`` (where the op is not differentiable), or
    integers in ``[lo, hi)`` when ``integer``."""

    lo: float = -2.0
    hi: float = 2.0
    kinks: tuple = ()
    away: float = 0.0
    integer: bool = False


REAL = Domain()
POSITIVE = Domain(0.5, 2.0)
UNIT = Domain(-0.9, 0.9)  # inside (-1, 1)
OPEN01 = Domain(0.1, 0.9)
ABOVE1 = Domain(1.2, 3.0)
AWAY0 = Domain(-2.0, 2.0, kinks=(0.0,), away=0.2)


def away(*kinks: float, by: float = 0.2, lo: float = -2.0, hi: float = 2.0) -> Domain:
    """A real domain kept ``by`` away from each kink."""
    return Domain(lo, hi, kinks=tuple(kinks), away=by)


def ints(lo: int, hi: int) -> Domain:
    """Integers in ``[lo, hi)`` (index, class and count arguments)."""
    return Domain(lo, hi, integer=True)


@dataclass(frozen=True)
class T:
    """A tensor argument: a fixed ``shape`` (a tuple), or ``None`` for a shape
    the sample draws (the same for every ``None`` of a call unless the sample
    broadcasts). ``grad`` marks inputs the checks differentiate; ``dtype``
    is ``None`` for the floating dtype under test, else a dtype name
    (``"int64"``, ``"bool"``)."""

    shape: tuple | None = None
    domain: Domain = REAL
    grad: bool = True
    dtype: str | None = None


@dataclass(frozen=True)
class Sample:
    """How to call an op on drawn inputs.

    ``kind`` picks the shape logic: ``"ew"`` (elementwise: the tensor args
    broadcast together, shapes drawn with size-0 and size-1 dims, ranks
    0-3), ``"reduce"`` (one drawn tensor, plus a ``dim`` drawn from its
    rank when ``dim`` is set, and ``keepdim`` drawn when set), ``"fixed"``
    (the args as given). ``args`` are :class:`T` specs or plain values;
    ``kwargs`` plain values. ``call`` overrides how the op is called: a
    function ``(op_callable, *args, **kwargs)`` (say, to unpack a tuple
    result), so the op's own entry point is still the one exercised.
    """

    kind: str = "ew"
    args: tuple = (T(),)
    kwargs: dict = field(default_factory=dict)
    dim: bool = False
    keepdim: bool = False
    min_rank: int = 0
    max_rank: int = 3
    empty: bool = True  # may draw size-0 dims
    #: The smallest size a drawn dimension takes (None: 0 when ``empty``, else 1).
    min_side: int | None = None
    #: The first two tensor args differ by at least this much everywhere
    #: (after broadcasting): ties are kinks of max/min/clamp-like ops.
    separate: float = 0.0
    #: Values of ``|args[0] - args[1]|`` where the op has a kink (Huber's ``delta``):
    #: draws within 0.05 of one are rejected.
    diff_kinks: tuple = ()
    #: The first tensor arg has the broadcast shape of all of them (ops that
    #: write into, or keep the shape of, their first argument).
    self_full: bool = False
    #: The elements of the first tensor arg are at least this far apart
    #: (ties are kinks of max, sort, median, ...).
    unique: float = 0.0
    #: The op draws random numbers: each call reseeds the generator first, so
    #: the checks see one deterministic function (dropout's mask stays put
    #: under finite differences).
    seeded: bool = False
    call: Callable[..., Any] | None = None


def unary(domain: Domain = REAL, **kw) -> Sample:
    return Sample("ew", (T(domain=domain),), **kw)


def binary(a: Domain = REAL, b: Domain = REAL, **kw) -> Sample:
    """Two broadcasting tensors (``separate=`` keeps them apart at ties)."""
    return Sample("ew", (T(domain=a), T(domain=b)), **kw)


def fixed(*args, **kwargs) -> Sample:
    return Sample("fixed", tuple(args), dict(kwargs))


def reduce(domain: Domain = REAL, *, dim: bool = True, keepdim: bool = True, **kw) -> Sample:
    return Sample("reduce", (T(domain=domain),), dim=dim, keepdim=keepdim, **kw)


# ----- the declaration ---------------------------------------------------------------------

#: Surfaces an op may have.
FUNCTION = "function"  # ferrograd.<name>
METHOD = "method"  # Tensor.<name>
INPLACE = "inplace"  # Tensor.<name>_
F_FUNCTION = "F"  # ferrograd.nn.functional.<name>
LINALG = "linalg"  # ferrograd.linalg.<name>
SURFACES = (FUNCTION, METHOD, INPLACE, F_FUNCTION, LINALG)

#: How the op's binding is made.
TABLE_KINDS = ("unary", "binary", "binary_like", "product")


@dataclass(frozen=True)
class Op:
    """One public op. See the module docstring; every field but ``name``,
    ``family`` and ``doc`` has a default that says "nothing special"."""

    name: str
    family: str
    doc: str
    surfaces: tuple = (FUNCTION, METHOD)
    #: Other names for the same op (``arcsin`` for ``asin``), sharing its
    #: facts: a name gets the op's surfaces (its in-place form too), a
    #: ``(name, surfaces)`` pair the surfaces it lists.
    aliases: tuple = ()
    #: The surfaces the generator writes for a ``table:`` op (``None``: all of
    #: ``surfaces``); the others are bound by hand (``Tensor.eq`` in
    #: ``py/tensor/operators.rs`` beside the generated ``ferrograd.eq``).
    table: tuple | None = None
    #: ``"table:<kind>:<core path>"`` for a binding written by the generator
    #: (``table:unary:ops::exp``), ``"native"`` for a hand-written binding in
    #: ``src/py/``, ``"python:<module>:<function>"`` for a composition.
    impl: str = "native"
    #: The Python signature after the name, as the stub prints it (without
    #: ``self``): ``"(input: Tensor, dim: int | None = None) -> Tensor"``.
    signature: str | None = None
    dtypes: str = FLOATING_PROMOTES
    #: Autograd nodes the op records, with their traits: ``{"ExpBackward0": (...)}``.
    nodes: dict = field(default_factory=dict)
    differentiable: bool = True
    #: Forward mode: ``"rule"`` (the node's own JVP or a self-adjoint rule),
    #: ``"derived"`` (the generic rule through the backward), ``"none"``.
    forward: str = "derived"
    batching: str = EW
    #: The ``func._rules`` rule for ``batching == CUSTOM`` (a name there).
    batching_rule: str | None = None
    #: The fused-program instruction (``kernels::fused::EwOp``) when the op is one.
    fusion: str | None = None
    #: Sample inputs (``None``: the op is not exercised by the coverage matrix,
    #: which needs a reason in ``refuse``).
    sample: Sample | None = None
    #: The NumPy reference of the forward (same arguments, arrays for tensors).
    ref: Callable[..., Any] | None = None
    #: Features the op is refused for, each with the reason users read.
    refuse: dict = field(default_factory=dict)
    #: Cells the coverage matrix has caught failing and that are not fixed yet,
    #: each with what is known: the cell still runs (an expected failure that
    #: reports when it starts passing) and docs/coverage.md lists it as open.
    defects: dict = field(default_factory=dict)
    #: Tolerances for the float32 forward check (rtol, atol).
    tol: tuple = (1e-5, 1e-6)
    #: The benchmark's large case for an op whose sample is ``fixed`` (the
    #: elementwise and reduction samples scale by themselves).
    bench: Sample | None = None
    #: The op's autocast policy (one of ``AUTOCAST_POLICIES``) when PyTorch's
    #: CPU autocast lists name it; the core's table is generated from it.
    autocast: str | None = None

    @property
    def kind(self) -> str:
        """The table kind (``unary``, ...) for ``table:`` ops, else ``""``."""
        return self.impl.split(":")[1] if self.impl.startswith("table:") else ""

    @property
    def core(self) -> str:
        """The core function a ``table:`` op calls (``ops::exp``)."""
        return self.impl.split(":", 2)[2] if self.impl.startswith("table:") else ""

    @property
    def names(self) -> tuple:
        """The op's name and its aliases' names."""
        return (self.name, *(a if isinstance(a, str) else a[0] for a in self.aliases))

    def alias_surfaces(self) -> list:
        """``(name, surfaces)`` for the op and each alias."""
        out = [(self.name, tuple(self.surfaces))]
        for a in self.aliases:
            out.append((a, tuple(self.surfaces)) if isinstance(a, str) else (a[0], tuple(a[1])))
        return out

    def table_surfaces(self, name: str) -> tuple:
        """The surfaces the generator writes for ``name`` (the op or an alias)."""
        if not self.impl.startswith("table:"):
            return ()
        surf = dict(self.alias_surfaces())[name]
        if name == self.name and self.table is not None:
            return tuple(self.table)
        return surf

    def has(self, surface: str) -> bool:
        return surface in self.surfaces
