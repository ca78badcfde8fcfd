"""The ops of ``ferrograd.nn.functional``: activations, softmax and its
relatives, losses, normalization, linear layers, convolution, pooling,
resampling, embedding, dropout and attention."""

from __future__ import annotations

from . import _refs
from .elementwise import EW_WITH_NUMBER
from .schema import (
    AWAY0,
    CUSTOM,
    EW,
    F_FUNCTION,
    FP32,
    FUNCTION,
    LOWER_PRECISION_FP,
    METHOD,
    OPEN01,
    POSITIVE,
    REDUCTION,
    SELF_ADJOINT,
    STATIC_VJP,
    Domain,
    Op,
    Sample,
    T,
    away,
    fixed,
    ints,
    unary,
)

OPS: list[Op] = []


def _f(name, family, doc, ref, sample, *, surfaces=(F_FUNCTION,), nodes=None, batching=EW, **kw):
    OPS.append(
        Op(name, family, doc, surfaces=surfaces, impl=f"python:ferrograd.nn.functional:{name}",
           nodes=nodes or {}, batching=batching, sample=sample, ref=ref, **kw)
    )


# ----- activations ---------------------------------------------------------------------------

_f("relu6", "activation", "Applies min(max(x, 0), 6) elementwise.", _refs.relu6, unary(away(0.0, 6.0, lo=-2, hi=8)))
_f("leaky_relu", "activation", "Applies x where x > 0, else `negative_slope * x`, elementwise.",
   _refs.leaky_relu, Sample("ew", (T(domain=AWAY0),), {"negative_slope": 0.1}),
   nodes={"LeakyReluBackward0": EW_WITH_NUMBER, "LeakyReluBackward1": EW_WITH_NUMBER}, fusion="LeakyRelu")
_f("elu", "activation", "Applies the exponential linear unit: x where x > 0, else `alpha * (exp(x) - 1)`.",
   _refs.elu, unary(AWAY0), nodes={"EluBackward0": EW_WITH_NUMBER, "EluBackward1": EW_WITH_NUMBER})
_f("selu", "activation", "Applies the scaled exponential linear unit with its fixed `alpha` and `scale`.",
   _refs.selu, unary(AWAY0), surfaces=(F_FUNCTION, FUNCTION))
_f("celu", "activation", "Applies the continuously differentiable ELU: x where x > 0, else "
   "`alpha * (exp(x / alpha) - 1)`.", _refs.celu, unary(AWAY0), surfaces=(F_FUNCTION, FUNCTION))
_f("gelu", "activation", "Applies the Gaussian error linear unit x * Phi(x) (exact, or its tanh "
   "approximation with `approximate='tanh'`).", _refs.gelu, unary(),
   nodes={"GeluBackward0": EW_WITH_NUMBER}, fusion="Gelu")
_f("mish", "activation", "Applies x * tanh(softplus(x)) elementwise.", _refs.mish, unary(),
   nodes={"MishBackward0": EW_WITH_NUMBER})
_f("softplus", "activation", "Applies log(1 + exp(beta * x)) / beta elementwise (x itself above "
   "`threshold / beta`).", _refs.softplus, unary(), nodes={"SoftplusBackward0": EW_WITH_NUMBER})
_f("softsign", "activation", "Applies x / (1 + |x|) elementwise.", _refs.softsign, unary(AWAY0),
   nodes={"SoftsignBackward0": EW_WITH_NUMBER})
_f("logsigmoid", "activation", "Applies log(sigmoid(x)) elementwise, without overflow.", _refs.logsigmoid, unary(),
   nodes={"LogSigmoidBackward0": EW_WITH_NUMBER})
_f("hardswish", "activation", "Applies x * relu6(x + 3) / 6 elementwise.", _refs.hardswish,
   unary(away(-3.0, 3.0, lo=-4, hi=4)), nodes={"HardswishBackward0": EW_WITH_NUMBER})
_f("hardsigmoid", "activation", "Applies relu6(x + 3) / 6 elementwise.", _refs.hardsigmoid,
   unary(away(-3.0, 3.0, lo=-4, hi=4)), nodes={"HardsigmoidBackward0": EW_WITH_NUMBER})
_f("hardtanh", "activation", "Clamps each element into [min_val, max_val] (default [-1, 1]).",
   _refs.hardtanh, unary(away(-1.0, 1.0)), nodes={"HardtanhBackward0": EW_WITH_NUMBER})
_f("tanhshrink", "activation", "Applies x - tanh(x) elementwise.", _refs.tanhshrink, unary())
_f("softshrink", "activation", "Shrinks each element toward zero by `lambd`, zero inside [-lambd, lambd].",
   _refs.softshrink, unary(away(-0.5, 0.5)), nodes={"SoftshrinkBackward0": EW_WITH_NUMBER})
_f("hardshrink", "activation", "Keeps the elements outside [-lambd, lambd] and zeroes the others.",
   _refs.hardshrink, unary(away(-0.5, 0.5)), surfaces=(F_FUNCTION, FUNCTION),
   nodes={"HardshrinkBackward0": EW_WITH_NUMBER})
_f("threshold", "activation", "Keeps the elements above `threshold` and replaces the others with `value`.",
   _refs.threshold, Sample("ew", (T(domain=away(0.5)), 0.5, -1.0)), surfaces=(F_FUNCTION, FUNCTION),
   nodes={"ThresholdBackward0": EW_WITH_NUMBER})
_f("glu", "activation", "Gated linear unit: splits `input` in two halves along `dim` and returns "
   "a * sigmoid(b).", _refs.glu, fixed(T((2, 4))), batching=CUSTOM, batching_rule="glu",
   bench=fixed(T((512, 2048))))
_f("prelu", "activation", "Applies x where x > 0, else `weight * x`, with a learned slope per channel.",
   lambda x, w: _refs.leaky_relu(x, w.reshape(-1, *([1] * (x.ndim - 2))) if w.size > 1 else w),
   fixed(T((2, 3, 2), domain=AWAY0), T((3,), domain=OPEN01)), surfaces=(F_FUNCTION, FUNCTION),
   batching=CUSTOM, batching_rule="prelu", autocast=LOWER_PRECISION_FP,
   bench=fixed(T((16, 64, 32, 32), domain=AWAY0), T((64,), domain=OPEN01)))
_f("softmax", "softmax", "Softmax along `dim`: exp(x) normalised to sum to one.", _refs.softmax,
   Sample("reduce", (T(),), dim=True, keepdim=False), surfaces=(F_FUNCTION, FUNCTION, METHOD),
   nodes={"SoftmaxBackward0": (SELF_ADJOINT,)}, batching=REDUCTION)
_f("log_softmax", "softmax", "Log of softmax along `dim`, computed without overflow.", _refs.log_softmax,
   Sample("reduce", (T(),), dim=True, keepdim=False), surfaces=(F_FUNCTION, FUNCTION, METHOD),
   nodes={"LogSoftmaxBackward0": ()}, batching=REDUCTION)
_f("softmin", "softmax", "Softmax of `-input` along `dim`.", lambda x, dim: _refs.softmax(-x, dim),
   Sample("reduce", (T(),), dim=True, keepdim=False), batching=REDUCTION)

# ----- losses --------------------------------------------------------------------------------


def _loss(name, doc, ref, sample, nodes=None, **kw):
    _f(name, "loss", doc, ref, sample, nodes=nodes, batching=CUSTOM, batching_rule=name, **kw)


_PAIR = Sample("ew", (T(), T()), {"reduction": "mean"}, min_rank=1, empty=False, self_full=True)
_loss("mse_loss", "Mean squared error between `input` and `target`.", _refs.mse_loss,
      Sample("ew", (T(), T()), {"reduction": "mean"}, min_rank=1, empty=False, separate=0.0, self_full=True),
      {"MseLossBackward0": ()}, autocast=FP32)
_loss("l1_loss", "Mean absolute error between `input` and `target`.", _refs.l1_loss,
      Sample("ew", (T(), T()), {"reduction": "sum"}, min_rank=1, empty=False, separate=0.1, self_full=True), autocast=FP32)
_loss("smooth_l1_loss", "Huber-like loss: 0.5 d^2 / beta below `beta`, d - 0.5 beta above.",
      _refs.smooth_l1_loss,
      Sample("ew", (T(), T()), {"reduction": "mean"}, min_rank=1, empty=False, self_full=True,
             diff_kinks=(1.0,)),
      {"SmoothL1LossBackward0": ()})
_loss("huber_loss", "Huber loss: 0.5 d^2 below `delta`, delta (d - 0.5 delta) above.", _refs.huber_loss,
      Sample("ew", (T(), T()), {"reduction": "mean"}, min_rank=1, empty=False, self_full=True,
             diff_kinks=(1.0,)),
      {"HuberLossBackward0": ()}, autocast=FP32)
_loss("binary_cross_entropy", "Binary cross entropy between probabilities `input` and `target`.",
      _refs.binary_cross_entropy,
      # PyTorch refuses a target of another size: both are drawn at one fixed shape.
      Sample("fixed", (T((2, 3), domain=OPEN01), T((2, 3), domain=Domain(0.0, 1.0))),
             {"reduction": "mean"}),
      {"BinaryCrossEntropyBackward0": ()}, autocast=FP32,
      bench=Sample("fixed", (T((1024, 1024), domain=OPEN01), T((1024, 1024), domain=Domain(0.0, 1.0))),
                   {"reduction": "mean"}))
_loss("binary_cross_entropy_with_logits", "Binary cross entropy of sigmoid(`input`) against `target`, "
      "computed stably.", _refs.binary_cross_entropy_with_logits,
      Sample("fixed", (T((2, 3)), T((2, 3), domain=Domain(0.0, 1.0))), {"reduction": "mean"}),
      {"BinaryCrossEntropyWithLogitsBackward0": ()}, autocast=FP32,
      bench=Sample("fixed", (T((1024, 1024)), T((1024, 1024), domain=Domain(0.0, 1.0))),
                   {"reduction": "mean"}))
_loss("nll_loss", "Negative log likelihood of class indices `target` under log-probabilities `input`.",
      _refs.nll_loss, fixed(T((3, 4)), T((3,), domain=ints(0, 4), dtype="int64")),
      {"NllLossBackward0": (), "NllLoss2DBackward0": ()}, autocast=FP32,
      bench=fixed(T((1024, 1000)), T((1024,), domain=ints(0, 1000), dtype="int64")))
_loss("cross_entropy", "Cross entropy of class indices (or probabilities) `target` under logits `input`.",
      _refs.cross_entropy, fixed(T((3, 4)), T((3,), domain=ints(0, 4), dtype="int64")), autocast=FP32,
      bench=fixed(T((1024, 1000)), T((1024,), domain=ints(0, 1000), dtype="int64")))
_loss("kl_div", "Kullback-Leibler divergence of `target` from log-probabilities `input`.", _refs.kl_div,
      Sample("ew", (T(), T(domain=POSITIVE)), {"reduction": "sum"}, min_rank=1, empty=False, self_full=True), autocast=FP32)

# ----- normalization -------------------------------------------------------------------------

_f("layer_norm", "norm", "Normalizes the last dimensions of `input` to zero mean and unit variance, "
   "then scales and shifts.", _refs.layer_norm,
   fixed(T((2, 3)), (3,), T((3,)), T((3,))), surfaces=(F_FUNCTION, FUNCTION),
   nodes={"NativeLayerNormBackward0": ()}, batching=CUSTOM, batching_rule="layer_norm",
   bench=fixed(T((1024, 1024)), (1024,), T((1024,)), T((1024,))))
_f("batch_norm", "norm", "Normalizes each channel over the batch (training mode: batch statistics).",
   lambda x, rm, rv, w, b, training: _refs.batch_norm_train(x, w, b),
   fixed(T((4, 3)), None, None, T((3,)), T((3,)), True), surfaces=(F_FUNCTION, FUNCTION),
   nodes={"NativeBatchNormBackward0": ()}, batching=CUSTOM, batching_rule="batch_norm",
   bench=fixed(T((32, 64, 32, 32)), None, None, T((64,)), T((64,)), True))
_f("group_norm", "norm", "Normalizes `input` over groups of channels, then scales and shifts per channel.",
   _refs.group_norm, fixed(T((2, 4, 3)), 2, T((4,)), T((4,))), surfaces=(F_FUNCTION, FUNCTION),
   nodes={"NativeGroupNormBackward0": ()}, batching=CUSTOM, batching_rule="group_norm",
   bench=fixed(T((32, 64, 32, 32)), 8, T((64,)), T((64,))))
_f("normalize", "norm", "Divides `input` by its p-norm along `dim` (at least `eps`).", _refs.normalize,
   fixed(T((2, 3), domain=AWAY0)), batching=CUSTOM, batching_rule="normalize",
   bench=fixed(T((1024, 1024), domain=AWAY0)))

# ----- linear, convolution, pooling -----------------------------------------------------------

_f("linear", "linear", "Applies `input @ weight.T + bias`.", _refs.linear,
   fixed(T((2, 3)), T((4, 3)), T((4,))), nodes={"AddmmBackward0": (STATIC_VJP,), "MmBackward0": (STATIC_VJP,)},
   batching=CUSTOM, batching_rule="linear", autocast=LOWER_PRECISION_FP,
   bench=fixed(T((64, 1024)), T((1024, 1024)), T((1024,))))
_f("conv1d", "conv", "1-D cross-correlation of `input` (N, C, L) with `weight` (O, C/groups, K).",
   _refs.conv1d, fixed(T((1, 2, 5)), T((3, 2, 2)), T((3,))), surfaces=(F_FUNCTION, FUNCTION),
   batching=CUSTOM, batching_rule="conv", autocast=LOWER_PRECISION_FP,
   bench=Sample("fixed", (T((8, 64, 2048)), T((64, 64, 3)), T((64,))), {"padding": 1}))
_f("conv2d", "conv", "2-D cross-correlation of `input` (N, C, H, W) with `weight` (O, C/groups, kH, kW).",
   _refs.conv2d, Sample("fixed", (T((1, 2, 4, 4)), T((2, 2, 2, 2)), T((2,))), {"padding": 1}),
   surfaces=(F_FUNCTION, FUNCTION), nodes={"ConvolutionBackward0": ()},
   batching=CUSTOM, batching_rule="conv", autocast=LOWER_PRECISION_FP,
   bench=Sample("fixed", (T((8, 64, 56, 56)), T((64, 64, 3, 3)), T((64,))), {"padding": 1}))
_f("max_pool2d", "pool", "2-D max pooling over `kernel_size` windows.", _refs.max_pool2d,
   Sample("fixed", (T((1, 2, 4, 4)), 2), unique=0.01), surfaces=(F_FUNCTION, FUNCTION),
   nodes={"MaxPool2DWithIndicesBackward0": ()}, batching=CUSTOM, batching_rule="pool",
   bench=Sample("fixed", (T((8, 64, 64, 64)), 2), unique=0.01))
_f("avg_pool2d", "pool", "2-D average pooling over `kernel_size` windows.", _refs.avg_pool2d,
   Sample("fixed", (T((1, 2, 4, 4)), 2)), nodes={"AvgPool2DBackward0": ()},
   batching=CUSTOM, batching_rule="pool", bench=fixed(T((8, 64, 64, 64)), 2))
_f("adaptive_avg_pool2d", "pool", "2-D average pooling to a fixed `output_size`.",
   _refs.adaptive_avg_pool2d, Sample("fixed", (T((1, 2, 5, 5)), 2)),
   nodes={"AdaptiveAvgPool2DBackward0": ()}, batching=CUSTOM, batching_rule="pool",
   bench=fixed(T((8, 64, 64, 64)), 7))
_f("pad", "pool", "Pads the last dimensions of `input` (constant, reflect, replicate or circular).",
   _refs.pad, Sample("fixed", (T((2, 3)), (1, 2))), nodes={"ConstantPadNdBackward0": ()},
   batching=CUSTOM, batching_rule="pad", bench=Sample("fixed", (T((1024, 1024)), (1, 2, 3, 4))))
_f("embedding", "embedding", "Looks up rows of `weight` at the indices `input`.", _refs.embedding,
   fixed(T((2, 2), domain=ints(0, 3), dtype="int64"), T((3, 4))), surfaces=(F_FUNCTION, FUNCTION),
   nodes={"EmbeddingBackward0": ()}, batching=CUSTOM, batching_rule="embedding",
   bench=fixed(T((32, 128), domain=ints(0, 10000), dtype="int64"), T((10000, 256))))
_f("cosine_similarity", "distance", "Cosine of the angle between `x1` and `x2` along `dim`.",
   _refs.cosine_similarity, fixed(T((2, 3), domain=AWAY0), T((2, 3), domain=AWAY0)),
   surfaces=(F_FUNCTION, FUNCTION),
   bench=fixed(T((1024, 1024), domain=AWAY0), T((1024, 1024), domain=AWAY0)))
_f("scaled_dot_product_attention", "attention", "softmax(q @ k^T / sqrt(d)) @ v.", _refs.sdpa,
   fixed(T((1, 2, 3)), T((1, 4, 3)), T((1, 4, 2))), batching=CUSTOM, batching_rule="sdpa",
   tol=(1e-4, 1e-5), autocast=LOWER_PRECISION_FP,
   bench=fixed(T((8, 8, 256, 64)), T((8, 8, 256, 64)), T((8, 8, 256, 64))))
