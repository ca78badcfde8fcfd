"""Views and shape ops: their results share memory with `input` where
PyTorch's do (views), and their backward rules move gradients back into the
input's shape."""

from __future__ import annotations

import numpy as np

from .schema import (
    ALL,
    CUSTOM,
    FUNCTION,
    INPLACE,
    LINALG,
    METHOD,
    PROMOTE,
    STATIC_VJP,
    VIEW,
    Op,
    Sample,
    T,
    fixed,
)

OPS: list[Op] = []


def _seq(fn, *ts, **kw):
    """Calls an op that takes a sequence of tensors."""
    return fn(list(ts), **kw)


RESHAPE_NODE = ("reshape", STATIC_VJP)
# The benchmark's large operand (ops that copy; views cost nothing to time).
M = T((1024, 1024))
HALF = T((512, 1024))


def _v(name, doc, ref, nodes, sample, *, surfaces=(FUNCTION, METHOD), batching=VIEW, **kw):
    OPS.append(Op(name, "view", doc, surfaces=surfaces, dtypes=ALL, nodes=nodes, batching=batching,
                  forward="derived", sample=sample, ref=ref, **kw))


def _m(name, doc, ref, nodes, sample, **kw):
    """A view that is only a method (``x.view(...)``)."""
    _v(name, doc, ref, nodes, sample, surfaces=(METHOD,), **kw)


_m("view", "A view of `input` with another shape of the same number of elements.",
   lambda x, *s: x.reshape(s), {"ViewBackward0": RESHAPE_NODE, "AliasBackward0": RESHAPE_NODE},
   fixed(T((2, 3)), 3, 2), bench=fixed(M, 1024, 16, 64))
_v("reshape", "`input` with another shape: a view when the strides allow it, else a copy.",
   lambda x, s: x.reshape(s),
   {"ReshapeAliasBackward0": ("reshape",), "UnsafeViewBackward0": ("reshape",)}, fixed(T((2, 3)), (3, 2)),
   # Splitting the features into 16 heads of 64 (a copy when read through a transpose).
   bench=fixed(M, (1024, 16, 64)))
_v("flatten", "`input` with the dimensions `start_dim..end_dim` merged into one.",
   lambda x, start_dim=0, end_dim=-1: x.reshape(-1) if x.ndim else x.reshape(1), {},
   fixed(T((2, 3, 2))),
   # A CNN's feature maps flattened for its classifier.
   bench=fixed(T((64, 64, 16, 16)), 1))
_v("t", "The transpose of a matrix (a vector or scalar is returned as is).", lambda x: x.T,
   {"TBackward0": (STATIC_VJP,)}, fixed(T((2, 3))),
   surfaces=(FUNCTION, METHOD, INPLACE), bench=fixed(M))
_v("transpose", "A view of `input` with dimensions `dim0` and `dim1` swapped.",
   lambda x, a, b: np.swapaxes(x, a, b), {"TransposeBackward0": (STATIC_VJP,)},
   fixed(T((2, 3, 4)), 0, 2), aliases=("swapaxes", "swapdims"), surfaces=(FUNCTION, METHOD, INPLACE),
   bench=fixed(M, 0, 1))
_v("permute", "A view of `input` with its dimensions reordered as `dims`.",
   lambda x, d: np.transpose(x, d), {"PermuteBackward0": (STATIC_VJP,)}, fixed(T((2, 3, 4)), (2, 0, 1)),
   # Attention's (batch, tokens, heads, dims) -> (batch, heads, tokens, dims).
   bench=fixed(T((8, 256, 8, 64)), (0, 2, 1, 3)))
_m("expand", "A view of `input` broadcast to `sizes` (-1 keeps a size), without copying.",
   lambda x, *s: np.broadcast_to(x, s), {"ExpandBackward0": (STATIC_VJP,)}, fixed(T((3,)), 2, 3),
   bench=fixed(T((1024,)), 1024, 1024))
_v("unsqueeze", "A view of `input` with a size-1 dimension inserted at `dim`.",
   lambda x, d: np.expand_dims(x, d), {"UnsqueezeBackward0": (STATIC_VJP,)}, fixed(T((2, 3)), 1),
   surfaces=(FUNCTION, METHOD, INPLACE), bench=fixed(M, 1))
_v("squeeze", "A view of `input` without its size-1 dimensions (or only those in `dim`).",
   lambda x, d=None: np.squeeze(x, d), {"SqueezeBackward0": (), "SqueezeBackward1": ()},
   fixed(T((2, 1, 3)), 1), surfaces=(FUNCTION, METHOD, INPLACE), bench=fixed(T((1024, 1, 1024)), 1))
_m("select", "A view of the slice of `input` at `index` along `dim` (one dimension fewer).",
   lambda x, d, i: np.take(x, i, axis=d), {"SelectBackward0": (STATIC_VJP,)}, fixed(T((2, 3)), 1, 2),
   bench=fixed(M, 1, 512))
_v("narrow", "A view of `length` elements of `input` from `start` along `dim`.",
   lambda x, d, s, n: np.take(x, range(s, s + n), axis=d), {"SliceBackward0": (STATIC_VJP,)},
   fixed(T((2, 4)), 1, 1, 2), bench=fixed(M, 1, 256, 512))
_v("diagonal", "A view of a diagonal of `input` (over dimensions `dim1`, `dim2`).",
   lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2).copy(),
   {"DiagonalBackward0": ()}, fixed(T((3, 4))), surfaces=(FUNCTION, METHOD, LINALG), bench=fixed(M))
_v("flip", "`input` with the order of elements reversed along `dims` (a copy).",
   lambda x, dims: np.flip(x, dims), {"FlipBackward0": ()}, fixed(T((2, 3)), (0,)),
   bench=fixed(M, (0, 1)))
_v("roll", "`input` with elements shifted by `shifts` along `dims`, wrapping around.",
   lambda x, s, d: np.roll(x, s, d), {}, fixed(T((2, 3)), 1, 1), bench=fixed(M, 3, 1))
_v("tril", "The lower triangle of the matrices of `input` (others zero).", np.tril, {},
   fixed(T((3, 4))), surfaces=(FUNCTION, METHOD, INPLACE), bench=fixed(M))
_v("triu", "The upper triangle of the matrices of `input` (others zero).", np.triu, {},
   fixed(T((3, 4))), surfaces=(FUNCTION, METHOD, INPLACE), bench=fixed(M))
_v("cat", "Concatenates `tensors` along `dim`.", lambda *ts, dim=0: np.concatenate(ts, dim),
   {"CatBackward0": (STATIC_VJP,)}, Sample("fixed", (T((2, 3)), T((1, 3))), call=_seq),
   surfaces=(FUNCTION,), aliases=("concat", "concatenate"),
   batching=CUSTOM, batching_rule="cat", autocast=PROMOTE, bench=Sample("fixed", (HALF, HALF), {"dim": 1}))
_v("stack", "Stacks `tensors` along a new dimension `dim`.", lambda *ts, dim=0: np.stack(ts, dim),
   {"StackBackward0": (STATIC_VJP,)}, Sample("fixed", (T((2, 3)), T((2, 3))), call=_seq),
   surfaces=(FUNCTION,),
   batching=CUSTOM, batching_rule="stack", autocast=PROMOTE, bench=Sample("fixed", (HALF, HALF), {"dim": 1}))
_v("split", "Splits `input` into pieces of `split_size_or_sections` along `dim` (views).",
   lambda x, s, dim=0: np.split(x, range(s, x.shape[dim], s), dim),
   {"SplitBackward0": (STATIC_VJP,), "SplitWithSizesBackward0": (STATIC_VJP,)}, fixed(T((4, 3)), 2),
   bench=fixed(M, 256))
_v("chunk", "Splits `input` into `chunks` nearly equal views along `dim`.",
   lambda x, c, dim=0: np.array_split(x, c, dim), {}, fixed(T((4, 3)), 2), bench=fixed(M, 4))
_v("unbind", "The slices of `input` along `dim`, as views.", lambda x, dim=0: list(np.moveaxis(x, dim, 0)),
   {"UnbindBackward0": (STATIC_VJP,)}, fixed(T((2, 3))),
   # A packed (4, tokens, width) projection unpacked.
   bench=fixed(T((4, 256, 1024))))
_m("repeat", "`input` tiled `sizes` times along each dimension (a copy).", lambda x, *r: np.tile(x, r),
   {"RepeatBackward0": ()}, fixed(T((2, 3)), 2, 1), bench=fixed(T((512, 512)), 2, 2))
_v("movedim", "A view of `input` with dimension `source` moved to `destination`.",
   lambda x, s, d: np.moveaxis(x, s, d), {}, fixed(T((2, 3, 4)), 0, 2), aliases=("moveaxis",),
   # Channels first to channels last.
   bench=fixed(T((8, 64, 32, 64)), 1, 3))
_m("contiguous", "`input` itself when its memory is contiguous, else a contiguous copy.",
   lambda x: x.copy(), {}, fixed(T((2, 3))), bench=fixed(M))
