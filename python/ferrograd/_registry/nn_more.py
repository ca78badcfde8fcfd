"""The rest of ``nn.functional``: 1-D and 3-D convolution and pooling,
transposed convolution, resampling, unfold/fold, shuffles, the other
normalizations and losses, dropout, and the in-place forms of activations."""

from __future__ import annotations

import numpy as np

from . import _refs
from .nn_ops import _f
from .schema import (
    AWAY0,
    CUSTOM,
    F_FUNCTION,
    FORWARD,
    FP32,
    FUNCTION,
    LOWER_PRECISION_FP,
    POSITIVE,
    Domain,
    Sample,
    T,
    fixed,
    ints,
)

OPS = []  # collected through nn_ops._f into nn_ops.OPS
FF = (F_FUNCTION, FUNCTION)


def _rule(name):
    return {"batching": CUSTOM, "batching_rule": name}


# ----- the benchmark's large cases (``Op.bench``): the layer shapes of real models -----------

#: About a million elements: a 1024 x 1024 matrix, or a batch of feature maps.
M = T((1024, 1024))
SEQ = T((8, 128, 1024))  # N, C, L
MAPS = T((8, 64, 64, 64))  # N, C, H, W
VOL = T((4, 16, 16, 32, 32))  # N, C, D, H, W
#: Labels of +-1: ``_fill`` pushes every draw in [-1, 1] a distance 1 away from 0.
SIGNS = Domain(-1.0, 1.0, kinks=(0.0,), away=1.0)
#: Labels of 0 or 1, the same way.
BITS = Domain(0.0, 1.0, kinks=(0.5,), away=0.5)


def _as_is(fn, *a, **k):
    """The bench's call where the small sample splits one tensor into the operands."""
    return fn(*a, **k)


# ----- convolution ---------------------------------------------------------------------------

_f("conv3d", "conv", "3-D cross-correlation of `input` (N, C, D, H, W) with `weight` (O, C/groups, kD, kH, kW).",
   _refs.conv3d, fixed(T((1, 2, 3, 3, 3)), T((2, 2, 2, 2, 2)), T((2,))), surfaces=FF, **_rule("conv"), autocast=LOWER_PRECISION_FP,
   # A 3x3x3 layer of a video / volume network, 8 -> 16 channels, 16 frames of 32 x 32.
   bench=fixed(T((4, 8, 16, 32, 32)), T((16, 8, 3, 3, 3)), T((16,)), padding=1))
_f("conv_transpose1d", "conv", "1-D transposed convolution (the gradient of conv1d with respect to its input).",
   lambda x, w, b=None, stride=1: _refs.conv_transpose2d(x[:, :, None], w[:, :, None], b, stride)[:, :, 0],
   fixed(T((1, 2, 3)), T((2, 3, 2)), T((3,))), surfaces=FF, **_rule("conv"), autocast=LOWER_PRECISION_FP,
   # An audio decoder's 2x upsampling layer, 64 -> 32 channels.
   bench=fixed(T((8, 64, 2048)), T((64, 32, 4)), T((32,)), stride=2, padding=1))
_f("conv_transpose2d", "conv", "2-D transposed convolution (the gradient of conv2d with respect to its input).",
   _refs.conv_transpose2d, fixed(T((1, 2, 3, 3)), T((2, 3, 2, 2)), T((3,))), surfaces=FF, **_rule("conv"), autocast=LOWER_PRECISION_FP,
   # A DCGAN generator layer: 4x4 kernel, stride 2, 32 x 32 -> 64 x 64, 64 -> 32 channels.
   bench=fixed(T((8, 64, 32, 32)), T((64, 32, 4, 4)), T((32,)), stride=2, padding=1))

# ----- pooling -------------------------------------------------------------------------------

_UNIQ = {"unique": 0.01}
_f("max_pool1d", "pool", "1-D max pooling over `kernel_size` windows.",
   lambda x, k: _refs.pool1d(x, k, np.max), Sample("fixed", (T((1, 2, 6)), 2), **_UNIQ), surfaces=FF,
   **_rule("pool"), bench=Sample("fixed", (SEQ, 2), **_UNIQ))
_f("avg_pool1d", "pool", "1-D average pooling over `kernel_size` windows.",
   lambda x, k: _refs.pool1d(x, k, np.mean), fixed(T((1, 2, 6)), 2), surfaces=FF, **_rule("pool"),
   bench=fixed(SEQ, 2))
_f("max_pool3d", "pool", "3-D max pooling over `kernel_size` windows.",
   lambda x, k: _refs.pool3d(x, k, np.max), Sample("fixed", (T((1, 1, 4, 4, 4)), 2), **_UNIQ), surfaces=FF,
   **_rule("pool"), autocast=FP32, bench=Sample("fixed", (VOL, 2), **_UNIQ))
_f("avg_pool3d", "pool", "3-D average pooling over `kernel_size` windows.",
   lambda x, k: _refs.pool3d(x, k, np.mean), fixed(T((1, 1, 4, 4, 4)), 2), **_rule("pool"), autocast=FP32,
   bench=fixed(VOL, 2))
_f("adaptive_avg_pool1d", "pool", "1-D average pooling to a fixed `output_size`.",
   lambda x, s: _refs.adaptive_pool1d(x, s, np.mean), fixed(T((1, 2, 7)), 3), surfaces=FF, **_rule("pool"),
   bench=fixed(SEQ, 100))
_f("adaptive_max_pool1d", "pool", "1-D max pooling to a fixed `output_size`.",
   lambda x, s: _refs.adaptive_pool1d(x, s, np.max), Sample("fixed", (T((1, 2, 7)), 3), **_UNIQ),
   surfaces=FF, **_rule("pool"), bench=Sample("fixed", (SEQ, 100), **_UNIQ))
_f("adaptive_max_pool2d", "pool", "2-D max pooling to a fixed `output_size`.",
   lambda x, s: _refs.adaptive_pool1d(_refs.adaptive_pool1d(x, s, np.max).swapaxes(-1, -2), s, np.max)
   .swapaxes(-1, -2), Sample("fixed", (T((1, 2, 5, 5)), 2), **_UNIQ),
   nodes={"AdaptiveMaxPool2DBackward0": ()}, **_rule("pool"),
   # To a 7 x 7 map, as torchvision's classifiers end (windows of 10 or 11).
   bench=Sample("fixed", (MAPS, 7), **_UNIQ))
_f("adaptive_avg_pool3d", "pool", "3-D average pooling to a fixed `output_size`.",
   lambda x, s: _refs.pool3d(x, x.shape[-1] // s, np.mean), fixed(T((1, 1, 4, 4, 4)), 2), **_rule("pool"), autocast=FP32,
   bench=fixed(VOL, 4))
_f("adaptive_max_pool3d", "pool", "3-D max pooling to a fixed `output_size`.",
   lambda x, s: _refs.pool3d(x, x.shape[-1] // s, np.max), Sample("fixed", (T((1, 1, 4, 4, 4)), 2), **_UNIQ),
   **_rule("pool"), autocast=FP32, bench=Sample("fixed", (VOL, 4), **_UNIQ))
_f("lp_pool1d", "pool", "1-D power-average pooling: (sum of x^p over each window)^(1/p).",
   lambda x, p, k: _refs.pool1d(x ** p, k, np.sum) ** (1 / p),
   fixed(T((1, 2, 6), domain=POSITIVE), 2.0, 2), **_rule("pool"),
   bench=fixed(T((8, 128, 1024), domain=POSITIVE), 2.0, 2))
_f("lp_pool2d", "pool", "2-D power-average pooling: (sum of x^p over each window)^(1/p).",
   lambda x, p, k: (_refs.avg_pool2d(x ** p, k) * k * k) ** (1 / p),
   fixed(T((1, 2, 4, 4), domain=POSITIVE), 2.0, 2), **_rule("pool"),
   bench=fixed(T((8, 64, 64, 64), domain=POSITIVE), 2.0, 2))
_f("interpolate", "resample", "Resizes `input` to `size` or by `scale_factor` (nearest, linear, bilinear, "
   "bicubic, trilinear, area).", lambda x, scale_factor: _refs.interpolate_nearest(x, scale_factor),
   Sample("fixed", (T((1, 2, 2, 3)),), {"scale_factor": 2}), **_rule("interpolate"),
   bench=Sample("fixed", (MAPS,), {"scale_factor": 2}))
_f("unfold", "resample", "Extracts sliding `kernel_size` blocks of a batched image as columns (im2col).",
   _refs.unfold, fixed(T((1, 2, 3, 3)), 2), **_rule("unfold"),
   # im2col of a 3x3 layer: 16 channels of 32 x 32, padded (columns of 144 x 1024).
   bench=fixed(T((8, 16, 32, 32)), 3, padding=1))
_f("fold", "resample", "Sums columns of sliding blocks back into an image (col2im), the adjoint of unfold.",
   _refs.fold, fixed(T((1, 8, 4)), (3, 3), 2), **_rule("unfold"),
   bench=fixed(T((8, 144, 1024)), (32, 32), 3, padding=1))
_f("affine_grid", "resample", "The sampling grid of the affine maps `theta` (N, 2, 3) over an output of "
   "`size` (N, C, H, W), for `grid_sample`.", _refs.affine_grid,
   fixed(T((1, 2, 3)), (1, 1, 3, 4), align_corners=False), **_rule("affine_grid"),
   bench=fixed(T((8, 2, 3)), (8, 16, 256, 256), align_corners=False))
_f("grid_sample", "resample", "Samples `input` at the normalised points of `grid` (bilinear, nearest or "
   "bicubic; zeros, border or reflection padding).", None,
   fixed(T((1, 1, 3, 4)), T((1, 2, 3, 2), domain=Domain(-0.9, 0.9), grad=False),
         align_corners=False),
   **_rule("grid_sample"),
   # A spatial transformer's read: 8 images of 16 channels, 64 x 64, every point sampled.
   bench=fixed(T((8, 16, 64, 64)), T((8, 64, 64, 2), domain=Domain(-1.1, 1.1)),
               align_corners=False),
   refuse={FORWARD: "checked against the NumPy reference in tests/test_nn_grid_sample.py"},
   autocast=FP32)
_f("pixel_shuffle", "resample", "Rearranges (N, C*r^2, H, W) into (N, C, H*r, W*r).", _refs.pixel_shuffle,
   fixed(T((1, 8, 2, 3)), 2), surfaces=FF, **_rule("view"),
   bench=fixed(T((4, 256, 32, 32)), 2))
_f("pixel_unshuffle", "resample", "Rearranges (N, C, H*r, W*r) into (N, C*r^2, H, W).", _refs.pixel_unshuffle,
   fixed(T((1, 2, 4, 6)), 2), surfaces=FF, **_rule("view"),
   bench=fixed(T((4, 64, 64, 64)), 2))

# ----- normalization, distances, linear ------------------------------------------------------

_f("instance_norm", "norm", "Normalizes each channel of each sample over its spatial dimensions.",
   _refs.instance_norm, fixed(T((2, 3, 4))), surfaces=FF, **_rule("instance_norm"),
   bench=fixed(T((4, 64, 64, 64))))
_f("local_response_norm", "norm", "Normalizes each channel by the squares of its `size` neighbours.",
   _refs.local_response_norm, fixed(T((2, 4, 3)), 3), **_rule("local_response_norm"),
   # AlexNet's: 96 channels, size 5.
   bench=fixed(T((8, 96, 32, 32)), 5))
_f("rms_norm", "norm", "Divides by the root mean square over the last dimensions, then scales.",
   # Entries away from 0: at a zero row the normalisation is eps-dominated (ill-conditioned).
   _refs.rms_norm, fixed(T((2, 3), domain=AWAY0), (3,), T((3,))), **_rule("rms_norm"),
   # A transformer's: 1024 tokens of width 1024.
   bench=fixed(M, (1024,), T((1024,))))
# Both inputs are halves of one tensor of distinct values: no distance is near 0 (its kink).
_f("pairwise_distance", "distance", "The p-norm of `x1 - x2 + eps` over the last dimension.",
   lambda x: _refs.pairwise_distance(x[:2], x[2:]),
   Sample("fixed", (T((4, 3)),), call=lambda fn, x, **k: fn(x[:2], x[2:], **k), **_UNIQ), surfaces=FF,
   bench=Sample("fixed", (M, M), call=_as_is))
_f("pdist", "distance", "Euclidean distances between every pair of rows of `input`.", _refs.pdist,
   Sample("fixed", (T((4, 3)),), **_UNIQ), surfaces=FF, **_rule("pdist"),
   nodes={"_PdistForwardBackward0": ()},
   bench=fixed(T((1024, 64))))
_f("bilinear", "linear", "x1^T A x2 + b for each output feature.", _refs.bilinear,
   fixed(T((2, 3)), T((2, 4)), T((5, 3, 4)), T((5,))), surfaces=FF, **_rule("bilinear"),
   bench=fixed(T((1024, 64)), T((1024, 64)), T((16, 64, 64)), T((16,))))
_f("one_hot", "embedding", "A one-hot encoding of the integer tensor `tensor` (int64).", _refs.one_hot,
   fixed(T((2, 3), domain=ints(0, 4), dtype="int64"), 4), differentiable=False, **_rule("one_hot"),
   # A batch of 1024 labels of 1000 classes.
   bench=fixed(T((1024,), domain=ints(0, 1000), dtype="int64"), 1000))

# ----- more losses ---------------------------------------------------------------------------

_f("margin_ranking_loss", "loss", "max(0, -y (x1 - x2) + margin), averaged.",
   # x1 and x2 are halves of one tensor of distinct values 0.5 apart: with a margin of 0.25
   # no hinge sits at its kink, and y = +-1 puts both sides in play.
   lambda x, y, margin: _refs.margin_ranking_loss(x[:4], x[4:], y, margin),
   Sample("fixed", (T((8,)), np.array([1.0, -1.0, 1.0, -1.0])), {"margin": 0.25}, **_UNIQ,
          call=lambda fn, x, y, **k: fn(x[:4], x[4:], y, **k)),
   **_rule("loss"), autocast=FP32,
   bench=Sample("fixed", (M, M, T((1024, 1024), domain=SIGNS, grad=False)), {"margin": 0.25}, call=_as_is))
_f("hinge_embedding_loss", "loss", "x where y = 1, max(0, margin - x) where y = -1, averaged.",
   _refs.hinge_embedding_loss, fixed(T((4,)), T((4,), domain=Domain(1.0, 1.0), grad=False)),
   **_rule("loss"), autocast=FP32, bench=fixed(M, T((1024, 1024), domain=SIGNS, grad=False)))
_f("soft_margin_loss", "loss", "log(1 + exp(-y x)), averaged.", _refs.soft_margin_loss,
   fixed(T((4,)), T((4,), domain=Domain(1.0, 1.0), grad=False)), **_rule("loss"), autocast=FP32,
   bench=fixed(M, T((1024, 1024), domain=SIGNS, grad=False)))
_f("poisson_nll_loss", "loss", "exp(input) - target * input, averaged (log_input=True).",
   _refs.poisson_nll_loss, fixed(T((4,)), T((4,), domain=POSITIVE, grad=False)), **_rule("loss"), autocast=FP32,
   bench=fixed(M, T((1024, 1024), domain=POSITIVE, grad=False)))
_f("gaussian_nll_loss", "loss", "0.5 (log var + (input - target)^2 / var), averaged.",
   _refs.gaussian_nll_loss, fixed(T((4,)), T((4,)), T((4,), domain=POSITIVE)), **_rule("loss"),
   bench=fixed(M, M, T((1024, 1024), domain=POSITIVE)))
_f("multilabel_soft_margin_loss", "loss", "Binary cross entropy with logits over each label, averaged.",
   _refs.multilabel_soft_margin_loss, fixed(T((2, 3)), T((2, 3), domain=Domain(0.0, 1.0), grad=False)),
   **_rule("loss"),
   # 1024 samples of 1000 labels, each on or off.
   bench=fixed(T((1024, 1000)), T((1024, 1000), domain=BITS, grad=False)))
_f("cosine_embedding_loss", "loss", "1 - cos(x1, x2) where y = 1, max(0, cos - margin) where y = -1.",
   _refs.cosine_embedding_loss,
   fixed(T((2, 3), domain=AWAY0), T((2, 3), domain=AWAY0), T((2,), domain=Domain(1.0, 1.0), grad=False)),
   **_rule("loss"), autocast=FP32,
   # 4096 pairs of 256-wide embeddings.
   bench=fixed(T((4096, 256)), T((4096, 256)), T((4096,), domain=SIGNS, grad=False)))
def triplet_ref(a, near, far):
    return _refs.triplet_margin_loss(a, near, far), _refs.triplet_margin_loss(a, far, near)


#: An anchor near 0, points near it and far away, passed both ways round (the hinge off,
#: then on): no distance and no hinge is near its kink.
TRIPLET = Sample("fixed", (T((2, 3), domain=Domain(-0.1, 0.1)), T((2, 3), domain=Domain(0.3, 0.5)),
                           T((2, 3), domain=Domain(2.0, 3.0))),
                 call=lambda fn, a, near, far, **k: (fn(a, near, far, **k), fn(a, far, near, **k)))
_f("triplet_margin_loss", "loss", "max(d(a, p) - d(a, n) + margin, 0), averaged.", triplet_ref, TRIPLET,
   **_rule("loss"), autocast=FP32,
   # 4096 triplets of 256-wide embeddings, called once: some hinges on, some off.
   bench=Sample("fixed", (T((4096, 256)), T((4096, 256)), T((4096, 256))), call=_as_is))

# ----- dropout (random) ----------------------------------------------------------------------

RANDOM = "random: the mask is PyTorch's mt19937 stream, checked in tests/test_random_compat.py"
_DROPOUT_BENCH = {"dropout": (1024, 1024), "alpha_dropout": (1024, 1024), "feature_alpha_dropout": (16, 64, 32, 32),
                  "dropout1d": (8, 128, 1024), "dropout2d": (16, 64, 32, 32), "dropout3d": (4, 16, 16, 32, 32)}
for _name, _shape in (("dropout", (2, 3)), ("alpha_dropout", (2, 3)), ("feature_alpha_dropout", (2, 3, 2)),
                      ("dropout1d", (2, 3, 4)), ("dropout2d", (2, 3, 2, 2)), ("dropout3d", (2, 3, 2, 2, 2))):
    _f(_name, "dropout", f"Zeroes elements (or channels) at random with probability `p` while training "
       f"({_name}).", None, Sample("fixed", (T(_shape), 0.5, True), seeded=True),
       surfaces=FF if _name in ("dropout", "alpha_dropout", "feature_alpha_dropout") else (F_FUNCTION,),
       refuse={FORWARD: RANDOM},
       bench=Sample("fixed", (T(_DROPOUT_BENCH[_name]), 0.5, True), seeded=True),
       **_rule("dropout"))
_f("gumbel_softmax", "dropout", "Samples from the Gumbel-softmax distribution of logits (random).", None,
   Sample("fixed", (T((2, 3)),), seeded=True), refuse={FORWARD: RANDOM},
   bench=Sample("fixed", (T((1024, 1000)),), seeded=True))
