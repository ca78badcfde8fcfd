"""Matrix products: their work is the size of the product, not of an operand,
which decides when a call releases the GIL."""

from __future__ import annotations

import numpy as np

from .schema import (
    CUSTOM,
    FUNCTION,
    LINALG,
    LOWER_PRECISION_FP,
    METHOD,
    NUMERIC,
    STATIC_VJP,
    Op,
    T,
    fixed,
)

OPS: list[Op] = []


def _p(name, doc, ref, nodes, sample, *, kind="product", arg="other", rule=None,
       autocast=None, bench=None):
    OPS.append(
        Op(
            name,
            "product",
            doc,
            surfaces=(FUNCTION, METHOD) + ((LINALG,) if name == "matmul" else ()),
            table=(FUNCTION, METHOD),
            impl=f"table:{kind}:ops::{name}",
            signature=f"(input: _TensorLike, {arg}: _TensorLike) -> Tensor",
            dtypes=NUMERIC,
            nodes=nodes,
            forward="rule",
            batching=CUSTOM,
            batching_rule=rule or name,
            sample=sample,
            ref=ref,
            tol=(1e-4, 1e-5),
            autocast=autocast,
            bench=bench,
        )
    )


_p("matmul", "Matrix product of two tensors, following PyTorch's rules: dot product, matrix-vector, "
   "matrix-matrix, or a broadcast batched product.", np.matmul,
   {"MmBackward0": (STATIC_VJP,), "BmmBackward0": (), "MvBackward0": (), "DotBackward0": (),
    "UnsafeViewBackward0": ()},
   fixed(T((2, 3)), T((3, 4))), autocast=LOWER_PRECISION_FP, bench=fixed(T((1024, 1024)), T((1024, 1024))))
_p("mm", "Matrix product of the 2-D tensors `input` (n x m) and `other` (m x p), an n x p tensor.",
   np.matmul, {}, fixed(T((2, 3)), T((3, 4))), autocast=LOWER_PRECISION_FP,
   bench=fixed(T((1024, 1024)), T((1024, 1024))))
_p("mv", "Product of the matrix `input` (n x m) and the vector `vec` (m), a vector of n elements.",
   np.matmul, {}, fixed(T((2, 3)), T((3,))), kind="binary", arg="vec",
   bench=fixed(T((1024, 1024)), T((1024,))))
_p("dot", "Dot product of two 1-D tensors of the same length, as a 0-d tensor.",
   lambda a, b: np.asarray(np.dot(a, b)), {}, fixed(T((3,)), T((3,))), kind="binary",
   bench=fixed(T((1 << 20,)), T((1 << 20,))))
_p("bmm", "Batched matrix product of the 3-D tensors `input` (b x n x m) and `other` (b x m x p).",
   np.matmul, {}, fixed(T((2, 2, 3)), T((2, 3, 4))), autocast=LOWER_PRECISION_FP,
   bench=fixed(T((16, 256, 256)), T((16, 256, 256))))
_p("outer", "Outer product of the 1-D tensors `input` (n) and `other` (m), an n x m tensor.",
   np.outer, {}, fixed(T((3,)), T((2,))), bench=fixed(T((1024,)), T((1024,))))
