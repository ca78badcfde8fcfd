"""Docstrings and signatures of the in-place ``Tensor`` methods made in Python
(``x.scatter_``, ``x.addmm_``, ``x.ge_``, ``x.unsqueeze_``, ...).

Each is its out-of-place form written into ``self``; :func:`document` gives it that
form's arguments as its signature (what ``help`` and ``inspect.signature`` show, in
place of the wrapper's ``*args, **kwargs``), a docstring saying so with the form's
description and arguments, and an example of the in-place call (run by
``tests/test_docstrings_nn.py``).
"""

from __future__ import annotations

import inspect
import textwrap

# What each argument of the out-of-place forms means; (method, argument) entries
# override the plain argument name where one name means different things.
_ARGS = {
    "other": "the second operand: a tensor broadcastable to ``self``'s shape, or a number.",
    "decimals": "the number of decimal places to keep. Default: ``0``.",
    "dim": "the dimension along which ``index`` picks positions.",
    "index": "int64 positions along ``dim``: the same number of dimensions as ``self``.",
    "src": "the values to write, indexed like ``index``; or a number (as ``value``).",
    "value": "a number to write everywhere ``index`` points (instead of ``src``).",
    "reduce": "how to combine ``src`` with the values already there.",
    "include_self": "whether the values already in ``self`` take part in the reduction. "
    "Default: ``True``.",
    "source": "the values to write or add, with ``index``'s length along ``dim``.",
    "alpha": "the multiplier of the product (or of ``source``). Default: ``1``.",
    "beta": "the multiplier of ``self``. Default: ``1``.",
    "mask": "a bool tensor broadcastable to ``self``'s shape.",
    "accumulate": "add to the values already there instead of replacing them "
    "(repeated positions add up). Default: ``False``.",
    "indices": "a tuple of int64 index tensors, one per leading dimension of ``self``.",
    "values": "the values to write, broadcastable to the indexed shape.",
    "dtype": "if given, the dtype the computation runs in (then cast back to "
    "``self``'s). Default: ``None``.",
    "diagonal": "which diagonal bounds the kept triangle: 0 the main one, positive above "
    "it, negative below. Default: ``0``.",
    "end": "the tensor to move towards, broadcastable to ``self``'s shape.",
    "weight": "the interpolation weight, a number or a tensor.",
    "tensor1": "the numerator (or first factor), broadcastable to ``self``'s shape.",
    "tensor2": "the denominator (or second factor), broadcastable to ``self``'s shape.",
    "mat1": "the first matrix, ``(n, m)``.",
    "mat2": "the second matrix, ``(m, p)``; ``self`` is ``(n, p)``.",
    "mat": "the matrix, ``(n, m)``.",
    "vec": "the vector, ``(m,)``; ``self`` is ``(n,)``.",
    "vec1": "the first vector, ``(n,)``.",
    "vec2": "the second vector, ``(m,)``; ``self`` is ``(n, m)``.",
    "batch1": "the first batch of matrices, ``(b, n, m)``.",
    "batch2": "the second batch of matrices, ``(b, m, p)``.",
    "min": "the lower bound, a number or a tensor.",
    "max": "the upper bound, a number or a tensor.",
    "exponent": "the exponent, a number or a tensor.",
    "dim0": "the first dimension to swap.",
    "dim1": "the second dimension to swap.",
    ("scatter_", "reduce"): "``'add'`` or ``'multiply'`` to combine with the values already "
    "there instead of replacing them. Default: ``None``.",
    ("scatter_reduce_", "reduce"): "``'sum'``, ``'prod'``, ``'mean'``, ``'amax'`` or "
    "``'amin'``.",
    ("scatter_reduce_", "src"): "the values to reduce in, indexed like ``index``.",
    ("scatter_add_", "src"): "the values to add, indexed like ``index``.",
    ("index_fill_", "value"): "the number to write.",
    ("index_fill_", "index"): "int64 1-d positions along ``dim``.",
    ("index_add_", "index"): "int64 1-d positions along ``dim``.",
    ("index_copy_", "index"): "int64 1-d positions along ``dim``.",
    ("masked_scatter_", "source"): "the values, taken in order, one per True of ``mask``.",
    ("put_", "index"): "int64 flat positions in ``self`` (as if it were 1-d).",
    ("put_", "source"): "the values, one per position.",
    ("cumprod_", "dim"): "the dimension of the running product.",
    ("cumsum_", "dim"): "the dimension of the running sum.",
    ("addbmm_", "batch2"): "the second batch of matrices, ``(b, m, p)``; ``self`` is "
    "``(n, p)`` and receives the sum over the batch.",
    ("baddbmm_", "batch2"): "the second batch of matrices, ``(b, m, p)``; ``self`` is "
    "``(b, n, p)``.",
    ("addcmul_", "value"): "the multiplier of the product. Default: ``1``.",
    ("addcdiv_", "value"): "the multiplier of the quotient. Default: ``1``.",
    ("addcmul_", "tensor1"): "the first factor, broadcastable to ``self``'s shape.",
    ("addcmul_", "tensor2"): "the second factor, broadcastable to ``self``'s shape.",
    ("unsqueeze_", "dim"): "where the new dimension of size 1 goes.",
    ("squeeze_", "dim"): "the dimension (or tuple of them) to remove if its size is 1; "
    "``None`` removes every dimension of size 1. Default: ``None``.",
}

_EXAMPLES = {
    "scatter_": """
        >>> x = torch.zeros(2, 4)
        >>> x.scatter_(1, torch.tensor([[0, 3], [1, 2]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[1., 0., 0., 2.],
                [0., 3., 4., 0.]])
        >>> torch.zeros(4).scatter_(0, torch.tensor([1, 3]), 5.0)
        tensor([0., 5., 0., 5.])
    """,
    "scatter_add_": """
        >>> x = torch.zeros(4)
        >>> x.scatter_add_(0, torch.tensor([0, 1, 1, 3]), torch.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([1., 5., 0., 4.])
    """,
    "scatter_reduce_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> x.scatter_reduce_(0, torch.tensor([0, 0, 2]), torch.tensor([5.0, 7.0, 1.0]), "amax")
        tensor([7., 2., 3.])
    """,
    "index_add_": """
        >>> x = torch.zeros(3, 2)
        >>> x.index_add_(0, torch.tensor([0, 2, 0]), torch.ones(3, 2), alpha=2)
        tensor([[4., 4.],
                [0., 0.],
                [2., 2.]])
    """,
    "index_copy_": """
        >>> x = torch.zeros(3, 2)
        >>> x.index_copy_(0, torch.tensor([2, 0]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([[3., 4.],
                [0., 0.],
                [1., 2.]])
    """,
    "index_fill_": """
        >>> x = torch.zeros(2, 3)
        >>> x.index_fill_(1, torch.tensor([0, 2]), -1.0)
        tensor([[-1.,  0., -1.],
                [-1.,  0., -1.]])
    """,
    "masked_scatter_": """
        >>> x = torch.zeros(2, 2)
        >>> x.masked_scatter_(torch.tensor([[True, False], [False, True]]), torch.tensor([7.0, 8.0, 9.0]))
        tensor([[7., 0.],
                [0., 8.]])
    """,
    "put_": """
        >>> x = torch.zeros(2, 2)
        >>> x.put_(torch.tensor([0, 3]), torch.tensor([5.0, 6.0]))
        tensor([[5., 0.],
                [0., 6.]])
    """,
    "index_put_": """
        >>> x = torch.zeros(3)
        >>> x.index_put_((torch.tensor([0, 0, 2]),), torch.tensor([1.0, 2.0, 3.0]), accumulate=True)
        tensor([3., 0., 3.])
    """,
    "cumprod_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0, 4.0])
        >>> x.cumprod_(0)
        tensor([ 1.,  2.,  6., 24.])
    """,
    "cumsum_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0, 4.0])
        >>> x.cumsum_(0)
        tensor([ 1.,  3.,  6., 10.])
    """,
    "round_": """
        >>> x = torch.tensor([0.5, 1.5, 2.345])
        >>> x.round_()
        tensor([0., 2., 2.])
        >>> torch.tensor([2.345]).round_(decimals=2)
        tensor([2.3400])
    """,
    "ge_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> x.ge_(2.0)
        tensor([0., 1., 1.])
    """,
    "gt_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> x.gt_(2.0)
        tensor([0., 0., 1.])
    """,
    "le_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> x.le_(torch.tensor([0.0, 2.0, 5.0]))
        tensor([0., 1., 1.])
    """,
    "lt_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> x.lt_(2.0)
        tensor([1., 0., 0.])
    """,
    "ne_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> x.ne_(2.0)
        tensor([1., 0., 1.])
    """,
    "eq_": """
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> x.eq_(2.0)
        tensor([0., 1., 0.])
    """,
    "logical_and_": """
        >>> x = torch.tensor([0.0, 1.0, 2.0])
        >>> x.logical_and_(torch.tensor([1.0, 1.0, 0.0]))
        tensor([0., 1., 0.])
    """,
    "logical_or_": """
        >>> x = torch.tensor([0.0, 1.0, 0.0])
        >>> x.logical_or_(torch.tensor([1.0, 0.0, 0.0]))
        tensor([1., 1., 0.])
    """,
    "logical_xor_": """
        >>> x = torch.tensor([0.0, 1.0, 1.0])
        >>> x.logical_xor_(torch.tensor([1.0, 1.0, 0.0]))
        tensor([1., 0., 1.])
    """,
    "remainder_": """
        >>> x = torch.tensor([-3.0, -1.0, 4.0])
        >>> x.remainder_(3)
        tensor([-0., 2., 1.])
    """,
    "fmod_": """
        >>> x = torch.tensor([-3.0, -1.0, 4.0])
        >>> x.fmod_(3)
        tensor([-0., -1.,  1.])
    """,
    "floor_divide_": """
        >>> x = torch.tensor([-3.0, -1.0, 4.0])
        >>> x.floor_divide_(2)
        tensor([-2., -1.,  2.])
    """,
    "atan2_": """
        >>> x = torch.tensor([1.0, -1.0])
        >>> x.atan2_(torch.tensor([-1.0, -1.0]))
        tensor([ 2.3562, -2.3562])
    """,
    "hypot_": """
        >>> x = torch.tensor([3.0, 5.0])
        >>> x.hypot_(torch.tensor([4.0, 12.0]))
        tensor([ 5., 13.])
    """,
    "copysign_": """
        >>> x = torch.tensor([1.0, -2.0, 3.0])
        >>> x.copysign_(-1.0)
        tensor([-1., -2., -3.])
    """,
    "logaddexp_": """
        >>> x = torch.tensor([0.0, 1000.0])
        >>> x.logaddexp_(torch.tensor([0.0, 1000.0]))
        tensor([6.9315e-01, 1.0007e+03])
    """,
    "xlogy_": """
        >>> x = torch.tensor([0.0, 2.0])
        >>> x.xlogy_(torch.tensor([0.0, 4.0]))
        tensor([0.0000, 2.7726])
    """,
    "clamp_min_": """
        >>> x = torch.tensor([-1.0, 0.5, 2.0])
        >>> x.clamp_min_(0.0)
        tensor([0.0000, 0.5000, 2.0000])
    """,
    "clamp_max_": """
        >>> x = torch.tensor([-1.0, 0.5, 2.0])
        >>> x.clamp_max_(1.0)
        tensor([-1.0000,  0.5000,  1.0000])
    """,
    "float_power_": """
        >>> x = torch.tensor([2.0, 3.0], dtype=torch.float64)
        >>> x.float_power_(2)
        tensor([4., 9.], dtype=ferrograd.float64)
    """,
    "tril_": """
        >>> x = torch.ones(3, 3)
        >>> x.tril_()
        tensor([[1., 0., 0.],
                [1., 1., 0.],
                [1., 1., 1.]])
    """,
    "triu_": """
        >>> x = torch.ones(3, 3)
        >>> x.triu_(diagonal=1)
        tensor([[0., 1., 1.],
                [0., 0., 1.],
                [0., 0., 0.]])
    """,
    "lerp_": """
        >>> x = torch.tensor([0.0, 10.0])
        >>> x.lerp_(torch.tensor([10.0, 20.0]), 0.25)
        tensor([ 2.5000, 12.5000])
    """,
    "addcmul_": """
        >>> x = torch.ones(2)
        >>> x.addcmul_(torch.tensor([2.0, 3.0]), torch.tensor([4.0, 5.0]), value=0.5)
        tensor([5.0000, 8.5000])
    """,
    "addcdiv_": """
        >>> x = torch.ones(2)
        >>> x.addcdiv_(torch.tensor([2.0, 3.0]), torch.tensor([4.0, 5.0]), value=2)
        tensor([2.0000, 2.2000])
    """,
    "addmm_": """
        >>> x = torch.ones(2, 2)
        >>> x.addmm_(torch.eye(2), torch.tensor([[1.0, 2.0], [3.0, 4.0]]), beta=0.5)
        tensor([[1.5000, 2.5000],
                [3.5000, 4.5000]])
    """,
    "addmv_": """
        >>> x = torch.ones(2)
        >>> x.addmv_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([1.0, 1.0]), alpha=2)
        tensor([ 7., 15.])
    """,
    "addr_": """
        >>> x = torch.zeros(2, 3)
        >>> x.addr_(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0, -1.0]))
        tensor([[ 1.,  0., -1.],
                [ 2.,  0., -2.]])
    """,
    "baddbmm_": """
        >>> x = torch.zeros(2, 1, 1)
        >>> x.baddbmm_(torch.ones(2, 1, 3), torch.ones(2, 3, 1))
        tensor([[[3.]],
        <BLANKLINE>
                [[3.]]])
    """,
    "addbmm_": """
        >>> x = torch.zeros(1, 1)
        >>> x.addbmm_(torch.ones(2, 1, 3), torch.ones(2, 3, 1))
        tensor([[6.]])
    """,
    "unsqueeze_": """
        >>> x = torch.zeros(2, 3)
        >>> x.unsqueeze_(0).shape
        ferrograd.Size([1, 2, 3])
    """,
    "squeeze_": """
        >>> x = torch.zeros(1, 2, 1)
        >>> x.squeeze_().shape
        ferrograd.Size([2])
    """,
    "t_": """
        >>> x = torch.zeros(2, 3)
        >>> x.t_().shape
        ferrograd.Size([3, 2])
    """,
    "transpose_": """
        >>> x = torch.zeros(2, 3, 4)
        >>> x.transpose_(0, 2).shape
        ferrograd.Size([4, 3, 2])
    """,
    "swapaxes_": """
        >>> x = torch.zeros(2, 3)
        >>> x.swapaxes_(0, 1).shape
        ferrograd.Size([3, 2])
    """,
    "swapdims_": """
        >>> x = torch.zeros(2, 3)
        >>> x.swapdims_(0, 1).shape
        ferrograd.Size([3, 2])
    """,
}


_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}


def _describe(method, name):
    return _ARGS.get((method, name)) or _ARGS.get(name) or f"as in ``{method[:-1]}``."


def _signature(compute):
    """``compute``'s signature with its first parameter (the tensor) named ``self``."""
    params = list(inspect.signature(compute).parameters.values())
    first = params[0].replace(name="self", kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return inspect.Signature([first, *params[1:]])


def _summary(doc):
    """The first paragraph of ``doc``, on one line."""
    doc = inspect.cleandoc(doc or "")
    return " ".join(doc.split("\n\n")[0].split()) if doc else ""


def _doc(name, base_doc, sig, view):
    base = name[:-1]
    head = (
        f"In-place version of ``Tensor.{base}``: computes ``self.{base}(...)`` with the same "
        "arguments and writes the result into ``self``, which it returns."
    )
    if not view:
        head += " The result must keep ``self``'s shape and be castable to its dtype"
        head += " (a comparison writes 1 or 0)." if base in _COMPARISONS else "."
    parts = [textwrap.fill(head, 88, break_on_hyphens=False)]
    summary = _summary(base_doc)
    if summary:
        parts.append(textwrap.fill(f"``{base}``: {summary}", 88, break_on_hyphens=False))
    args = [p for p in list(sig.parameters.values())[1:]]
    if args:
        lines = ["Args:"]
        for p in args:
            text = f"{p.name}: {_describe(name, p.name)}"
            lines.append(textwrap.fill(text, 88, initial_indent="    ",
                                       subsequent_indent="        ", break_on_hyphens=False))
        parts.append("\n".join(lines))
    parts.append("Returns:\n    Tensor: ``self``.")
    if view:
        parts.append(
            "Note:\n    ``self`` takes the new shape. ferrograd does this only for a tensor "
            "that does\n    not require grad (or under ``no_grad()``), where PyTorch also "
            "allows it inside\n    an autograd graph; otherwise it raises ``RuntimeError``: "
            f"use ``{base}()``."
        )
    example = _EXAMPLES.get(name)
    if example:
        parts.append("Example::\n\n" + textwrap.indent(inspect.cleandoc(example), "    "))
    return "\n\n".join(parts)


def document(method, name, compute, base_doc, view=False):
    """Gives the in-place ``method`` (made by wrapping ``compute``, whose first argument
    is the tensor) its signature and docstring; returns it."""
    sig = _signature(compute)
    method.__signature__ = sig
    method.__doc__ = _doc(name, base_doc, sig, view)
    return method
