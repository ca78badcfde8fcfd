"""grad_fn names as PyTorch reports them (checked against PyTorch by hand;
the strings are written here so a rename shows up as a failure)."""

import pytest

import ferrograd as fg

F = fg.nn.functional


def X():
    return fg.tensor([[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]], dtype=fg.float64, requires_grad=True)


def Y():
    return fg.tensor([[1.1, 0.4, -0.3], [0.2, 2.2, 1.3]], dtype=fg.float64, requires_grad=True)


def V():
    return fg.tensor([0.5, -1.2, 2.0], dtype=fg.float64, requires_grad=True)


def M():
    return X().t()


def gradient(loss):
    """The gradient of ``loss(X())``, recorded (``create_graph=True``)."""
    x = X()
    return fg.autograd.grad(loss(x), x, create_graph=True)[0]


def inplace(write):
    def run():
        b = X() * 1
        write(b)
        return b

    return run


OPS = {
    "AddBackward0": lambda: X() + Y(),
    "SubBackward0": lambda: X() - Y(),
    "RsubBackward1": lambda: 2 - X(),
    "MulBackward0": lambda: X() * Y(),
    "DivBackward0": lambda: X() / Y(),
    "PowBackward0": lambda: X() ** 2,
    "PowBackward1": lambda: X().abs() ** Y(),
    "PowBackward2": lambda: 2 ** X(),
    "NegBackward0": lambda: -X(),
    "ExpBackward0": lambda: X().exp(),
    "TanhBackward0": lambda: X().tanh(),
    "SigmoidBackward0": lambda: X().sigmoid(),
    "ReluBackward0": lambda: X().relu(),
    "RoundBackward1": lambda: fg.round(X(), decimals=1),
    "MaximumBackward0": lambda: fg.maximum(X(), Y()),
    "ClampBackward1": lambda: X().clamp(0, 1),
    "ClampBackward1 (min only)": lambda: X().clamp(min=0),
    "ClampBackward1 (clip)": lambda: X().clip(max=1),
    "ClampBackward0": lambda: X().clamp(Y() * 0 - 0.5, Y() * 0 + 0.5),
    "ClampBackward0 (min only)": lambda: X().clamp(min=Y()),
    "SumBackward1": lambda: X().sum(0),
    "MeanBackward0": lambda: X().mean(),
    "ProdBackward1": lambda: X().prod(1),
    "MaxBackward1": lambda: X().max(),
    "AmaxBackward0": lambda: X().amax(1),
    "CumsumBackward0": lambda: X().cumsum(1),
    "SoftmaxBackward0": lambda: X().softmax(1),
    "LogSoftmaxBackward0": lambda: X().log_softmax(1),
    "VarBackward0": lambda: X().var(1),
    "StdBackward0": lambda: X().std(),
    "MaxBackward0": lambda: X().max(1)[0],
    "MinBackward0": lambda: X().min(0)[0],
    "MinBackward1": lambda: X().min(),
    "AminBackward0": lambda: X().amin(1),
    "LogsumexpBackward0": lambda: X().logsumexp(1),
    "LinalgVectorNormBackward0": lambda: X().norm(dim=1),
    "StackBackward0": lambda: fg.stack([X(), Y()]),
    "RepeatBackward0": lambda: X().repeat(2, 1),
    "RepeatBackward0 (new leading dims)": lambda: X().repeat(2, 2, 1),
    "IndexSelectBackward0": lambda: X().index_select(1, fg.tensor([0, 2])),
    "TakeBackward0": lambda: fg.take(X(), fg.tensor([[0, -1], [4, 4]])),
    "IndexBackward0": lambda: X()[fg.tensor([0, 1, 1])],
    "IndexBackward0 (mask)": lambda: (lambda x: x[x > 0])(X()),
    "DiagonalBackward0": lambda: X().diagonal(),
    "GeluBackward0": lambda: F.gelu(X()),
    "SoftplusBackward0": lambda: F.softplus(X()),
    "AbsBackward0": lambda: X().abs(),
    "ReciprocalBackward0": lambda: X().reciprocal(),
    "RsqrtBackward0": lambda: X().rsqrt(),
    "SignBackward0": lambda: X().sign(),
    "FloorBackward0": lambda: X().floor(),
    # elementwise math functions and aliases (mathops)
    "AcosBackward0": lambda: (X() / 3).acos(),
    "AcosBackward0 (arccos)": lambda: fg.arccos(X() / 3),
    "AsinBackward0": lambda: (X() / 3).asin(),
    "AtanBackward0": lambda: fg.arctan(X()),
    "SinhBackward0": lambda: X().sinh(),
    "CoshBackward0": lambda: X().cosh(),
    "AsinhBackward0": lambda: X().asinh(),
    "AcoshBackward0": lambda: (X().abs() + 1).acosh(),
    "AtanhBackward0": lambda: (X() / 3).atanh(),
    "Log10Backward0": lambda: X().abs().log10(),
    "Exp2Backward0": lambda: X().exp2(),
    "ErfcBackward0": lambda: X().erfc(),
    "ErfinvBackward0": lambda: (X() / 3).erfinv(),
    "LgammaBackward0": lambda: X().lgamma(),
    "DigammaBackward0": lambda: X().digamma(),
    "PolygammaBackward0": lambda: X().polygamma(1),
    "I0Backward0": lambda: X().i0(),
    "SpecialI0EBackward0": lambda: fg.special.i0e(X()),
    "SpecialI1Backward0": lambda: fg.special.i1(X()),
    "SpecialI1EBackward0": lambda: fg.special.i1e(X()),
    "SpecialNdtriBackward0": lambda: fg.special.ndtri(X().sigmoid()),
    "SpecialErfcxBackward0": lambda: fg.special.erfcx(X()),
    "SpecialLogNdtrBackward0": lambda: fg.special.log_ndtr(X()),
    "SpecialZetaBackward0": lambda: fg.special.zeta(fg.tensor(2.0, dtype=fg.float64), X().abs()),
    "StandardGammaBackward0": lambda: fg._standard_gamma(X().abs()),
    "IgammaBackward0": lambda: fg.igamma(fg.tensor(2.0, dtype=fg.float64), X().abs()),
    "IgammacBackward0": lambda: fg.tensor(2.0, dtype=fg.float64).igammac(X().abs()),
    "Deg2RadBackward0": lambda: X().deg2rad(),
    "Rad2DegBackward0": lambda: X().rad2deg(),
    "SincBackward0": lambda: X().sinc(),
    "FracBackward0": lambda: X().frac(),
    "TruncBackward0 (fix)": lambda: X().fix(),
    "SgnBackward0": lambda: X().sgn(),
    "LogitBackward0": lambda: (X().sigmoid()).logit(),
    "NegBackward0 (negative)": lambda: X().negative(),
    "AbsBackward0 (absolute)": lambda: fg.absolute(X()),
    "NanToNumBackward0": lambda: X().nan_to_num(),
    "Atan2Backward0": lambda: X().atan2(Y()),
    "HypotBackward0": lambda: fg.hypot(X(), Y()),
    "LogaddexpBackward0": lambda: fg.logaddexp(X(), Y()),
    "Logaddexp2Backward0": lambda: fg.logaddexp2(X(), Y()),
    "XlogyBackward0": lambda: fg.xlogy(X(), Y().abs()),
    "CopysignBackward0": lambda: X().copysign(Y()),
    "FmaxBackward0": lambda: fg.fmax(X(), Y()),
    "FminBackward0": lambda: fg.fmin(X(), Y()),
    "RemainderBackward1": lambda: X().remainder(Y()),
    "FmodBackward1": lambda: fg.fmod(X(), Y()),
    "PowBackward1 (float_power)": lambda: fg.float_power(X().abs(), Y()),
    "DivBackward0 (divide)": lambda: fg.divide(X(), Y()),
    "DivBackward0 (true_divide)": lambda: X().true_divide(Y()),
    "MulBackward0 (multiply)": lambda: X().multiply(Y()),
    "SubBackward0 (subtract)": lambda: fg.subtract(X(), Y()),
    "ClampMinBackward1": lambda: X().clamp_min(Y()),
    "ClampMaxBackward1": lambda: fg.clamp_max(X(), Y()),
    "ViewBackward0": lambda: X().view(3, 2),
    "UnsafeViewBackward0": lambda: X().t().reshape(6),
    "ReshapeAliasBackward0": lambda: X().t().reshape(3, 2),
    "ReshapeAliasBackward0 (flatten)": lambda: X()[:, :1].flatten(),
    "ExpandBackward0": lambda: V().expand(2, 3),
    "TransposeBackward0": lambda: X().transpose(0, 1),
    "TBackward0": lambda: X().t(),
    "PermuteBackward0": lambda: X().permute(1, 0),
    "UnsqueezeBackward0": lambda: X().unsqueeze(0),
    "SqueezeBackward0": lambda: X().unsqueeze(0).squeeze(),
    "SqueezeBackward1": lambda: X().unsqueeze(0).squeeze(0),
    "CloneBackward0": lambda: X().t().contiguous(),
    "FlipBackward0": lambda: X().flip(0),
    "SliceBackward0": lambda: X()[:, ::2],
    "SelectBackward0": lambda: X()[0],
    "CatBackward0": lambda: fg.cat([X(), Y()]),
    "SplitBackward0": lambda: X().split(1)[1],
    "SplitBackward0 (split along a dim)": lambda: fg.split(X(), 2, 1)[0],
    "SplitBackward0 (chunk)": lambda: X().chunk(2, 1)[1],
    "SplitWithSizesBackward0": lambda: X().split([1, 2], 1)[1],
    "SplitWithSizesBackward0 (chunk of an empty dim)": lambda: X()[:0].chunk(2)[1],
    "UnbindBackward0": lambda: X().unbind(1)[2],
    "UnbindBackward0 (iteration)": lambda: list(X())[1],
    "GatherBackward0": lambda: X().gather(1, fg.tensor([[0, 1], [2, 0]])),
    "ScatterAddBackward0": lambda: X().scatter_add(1, fg.tensor([[0, 1], [2, 0]]), Y()[:, :2]),
    "MaskedFillBackward0": lambda: X().masked_fill(fg.tensor([[True, False, True], [False, True, True]]), 0.0),
    "WhereBackward0": lambda: fg.where(fg.tensor([[True, False, True], [False, True, True]]), X(), Y()),
    "MmBackward0": lambda: X() @ M(),
    "MvBackward0": lambda: X() @ V(),
    "MvBackward0 (mv)": lambda: fg.mv(X(), V()),
    "SqueezeBackward4": lambda: V() @ M(),
    "UnsafeViewBackward0 (3-D @ 2-D, folded)": lambda: X().expand(2, 2, 3) @ M(),
    "UnsafeViewBackward0 (batched)": lambda: X().expand(2, 2, 3) @ M().expand(2, 3, 2),
    "CloneBackward0 (2-D @ 3-D)": lambda: X() @ M().expand(2, 3, 2),
    "TransposeBackward0 (2-D @ 3-D, one column)": lambda: X() @ V().view(3, 1).expand(2, 3, 1),
    "AddmmBackward0": lambda: F.linear(X(), Y(), V()[:2]),
    "AddmmBackward0 (0-d bias)": lambda: F.linear(X(), Y(), V()[0]),
    "UnsafeViewBackward0 (linear, 3-D)": lambda: F.linear(X().expand(2, 2, 3).contiguous(), Y(), V()[:2]),
    "UnsafeViewBackward0 (linear, 1-D)": lambda: F.linear(V(), Y(), V()[:2]),
    "AddBackward0 (linear, non-contiguous)": lambda: F.linear(X().expand(2, 2, 3), Y(), V()[:2]),
    "MmBackward0 (linear without bias)": lambda: F.linear(X(), Y()),
    "DotBackward0": lambda: fg.dot(V(), V()),
    "BmmBackward0": lambda: fg.bmm(X().unsqueeze(0), M().unsqueeze(0)),
    "SiluBackward0": lambda: F.silu(X()),
    "LeakyReluBackward0": lambda: F.leaky_relu(X(), 0.1),
    "EluBackward0": lambda: F.elu(X()),
    "HardtanhBackward0": lambda: F.hardtanh(X()),
    "HardtanhBackward0 (relu6)": lambda: F.relu6(X()),
    "MseLossBackward0": lambda: F.mse_loss(X(), Y()),
    # Losses: PyTorch's one node per loss, whatever the reduction.
    "MeanBackward0 (l1_loss)": lambda: F.l1_loss(X(), Y()),
    "SumBackward0 (l1_loss, sum)": lambda: F.l1_loss(X(), Y(), reduction="sum"),
    "AbsBackward0 (l1_loss, none)": lambda: F.l1_loss(X(), Y(), reduction="none"),
    "SmoothL1LossBackward0": lambda: F.smooth_l1_loss(X(), Y()),
    "SmoothL1LossBackward0 (none)": lambda: F.smooth_l1_loss(X(), Y(), reduction="none", beta=0.5),
    "MeanBackward0 (smooth_l1_loss, beta=0 is l1_loss)": lambda: F.smooth_l1_loss(X(), Y(), beta=0.0),
    "HuberLossBackward0": lambda: F.huber_loss(X(), Y()),
    "HuberLossBackward0 (sum)": lambda: F.huber_loss(X(), Y(), reduction="sum", delta=0.5),
    "BinaryCrossEntropyBackward0": lambda: F.binary_cross_entropy(X().sigmoid(), Y().sigmoid()),
    "BinaryCrossEntropyBackward0 (none, weight)": lambda: F.binary_cross_entropy(
        X().sigmoid(), Y().sigmoid().detach(), Y().detach().abs(), reduction="none"
    ),
    "BinaryCrossEntropyWithLogitsBackward0": lambda: F.binary_cross_entropy_with_logits(X(), Y().sigmoid()),
    "BinaryCrossEntropyWithLogitsBackward0 (none, pos_weight)": lambda: F.binary_cross_entropy_with_logits(
        X(), Y().sigmoid(), pos_weight=V().detach().abs(), reduction="none"
    ),
    "NllLossBackward0": lambda: F.nll_loss(X().log_softmax(1), fg.tensor([0, 2])),
    "NllLossBackward0 (none)": lambda: F.nll_loss(X(), fg.tensor([0, -100]), reduction="none"),
    "NllLossBackward0 (1-D input)": lambda: F.nll_loss(V(), fg.tensor(1), reduction="sum"),
    "NllLoss2DBackward0 (4-D input)": lambda: F.nll_loss(X().view(1, 2, 3, 1), fg.tensor([[[1], [0], [1]]])),
    "NllLoss2DBackward0 (3-D input, viewed)": lambda: F.nll_loss(X().unsqueeze(0), fg.tensor([[1, 0, 1]])),
    "ViewBackward0 (nll_loss, 3-D input, none)": lambda: F.nll_loss(
        X().unsqueeze(0), fg.tensor([[1, 0, 1]]), reduction="none"
    ),
    "NllLossBackwardBackward0 (gradient of nll_loss, create_graph)": lambda: gradient(
        lambda x: F.nll_loss(x, fg.tensor([0, 2]))
    ),
    "NllLossBackward0 (cross_entropy)": lambda: F.cross_entropy(X(), fg.tensor([0, 2])),
    "NllLossBackward0 (cross_entropy, sum, weight)": lambda: F.cross_entropy(
        X(), fg.tensor([0, 2]), V().detach().abs(), reduction="sum"
    ),
    "AddBackward0 (cross_entropy, label_smoothing)": lambda: F.cross_entropy(X(), fg.tensor([0, 2]), label_smoothing=0.1),
    "DivBackward1 (cross_entropy, probabilities)": lambda: F.cross_entropy(X(), Y().softmax(1).detach()),
    "NegBackward0 (cross_entropy, probabilities, sum)": lambda: F.cross_entropy(
        X(), Y().softmax(1).detach(), reduction="sum"
    ),
    "ToCopyBackward0": lambda: X().to(fg.float32),
    # In place: the node of the op that computed the written value.
    "AddBackward0 (add_)": inplace(lambda b: b.add_(Y())),
    "MulBackward0 (mul_)": inplace(lambda b: b.mul_(Y())),
    "PowBackward0 (pow_ by a number)": inplace(lambda b: b.pow_(2)),
    "CopyBackwards": inplace(lambda b: b.copy_(Y())),
    "ExpBackward0 (exp_)": inplace(lambda b: b.exp_()),
    "SigmoidBackward0 (sigmoid_)": inplace(lambda b: b.sigmoid_()),
    "ClampBackward1 (clamp_)": inplace(lambda b: b.clamp_(0, 1)),
    "MaskedFillBackward0 (masked_fill_)": inplace(lambda b: b.masked_fill_(b > 0, 0.0)),
    "ZeroBackward0 (zero_)": inplace(lambda b: b.zero_()),
    "FillBackward2 (fill_)": inplace(lambda b: b.fill_(2.0)),
    "LeakyReluBackward1 (F.leaky_relu inplace)": inplace(lambda b: F.leaky_relu(b, 0.1, inplace=True)),
    "EluBackward1 (F.elu inplace)": inplace(lambda b: F.elu(b, inplace=True)),
    "CopySlices": inplace(lambda b: b[0].mul_(2)),
    "CopySlices (setitem)": inplace(lambda b: b.__setitem__(0, Y()[1])),
    "HardtanhBackward0 (F.hardtanh inplace)": inplace(lambda b: F.hardtanh(b, inplace=True)),
    "SiluBackward0 (F.silu inplace)": inplace(lambda b: F.silu(b, inplace=True)),
}


@pytest.mark.parametrize("label", sorted(OPS))
def test_grad_fn_name(label):
    expected = label.split(" ")[0]
    assert OPS[label]().grad_fn.name() == expected


# `a @ b` by shapes, for (both, only a, only b) requiring grad: PyTorch's
# `matmul` takes different routes (fold the batch into one `mm`/`mv`, or a
# batched product) depending on the shapes and on which operand requires grad.
MATMUL = [
    ((3,), (3,), ("DotBackward0", "DotBackward0", "DotBackward0")),
    ((3,), (3, 2), ("SqueezeBackward4", "SqueezeBackward4", "SqueezeBackward4")),
    ((3,), (1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((3,), (4, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((3,), (2, 1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((3,), (3, 1), ("SqueezeBackward4", "SqueezeBackward4", "SqueezeBackward4")),
    ((2, 3), (3,), ("MvBackward0", "MvBackward0", "MvBackward0")),
    ((2, 3), (3, 2), ("MmBackward0", "MmBackward0", "MmBackward0")),
    ((2, 3), (1, 3, 2), ("CloneBackward0", "CloneBackward0", "UnsafeViewBackward0")),
    ((2, 3), (4, 3, 2), ("CloneBackward0", "CloneBackward0", "UnsafeViewBackward0")),
    ((2, 3), (2, 1, 3, 2), ("CloneBackward0", "CloneBackward0", "UnsafeViewBackward0")),
    ((2, 3), (3, 1), ("MmBackward0", "MmBackward0", "MmBackward0")),
    ((1, 2, 3), (3,), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((1, 2, 3), (3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((1, 2, 3), (1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((1, 2, 3), (4, 3, 2), ("CloneBackward0", "CloneBackward0", "UnsafeViewBackward0")),
    ((1, 2, 3), (2, 1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((1, 2, 3), (3, 1), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((4, 2, 3), (3,), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((4, 2, 3), (3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((4, 2, 3), (1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((4, 2, 3), (4, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((4, 2, 3), (2, 1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((4, 2, 3), (3, 1), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((2, 1, 2, 3), (3,), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((2, 1, 2, 3), (3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((2, 1, 2, 3), (1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((2, 1, 2, 3), (4, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((2, 1, 2, 3), (2, 1, 3, 2), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    ((2, 1, 2, 3), (3, 1), ("UnsafeViewBackward0", "UnsafeViewBackward0", "UnsafeViewBackward0")),
    # The transposed result of a folded 2-D @ 3-D is already contiguous: no copy.
    ((1, 3), (4, 3, 2), ("TransposeBackward0", "TransposeBackward0", "UnsafeViewBackward0")),
    ((2, 3), (4, 3, 1), ("TransposeBackward0", "TransposeBackward0", "UnsafeViewBackward0")),
    ((2, 3), (0, 3, 2), ("TransposeBackward0", "TransposeBackward0", "UnsafeViewBackward0")),
    ((0, 3), (4, 3, 2), ("TransposeBackward0", "TransposeBackward0", "UnsafeViewBackward0")),
]


@pytest.mark.parametrize(("sa", "sb", "names"), MATMUL, ids=[f"{a}@{b}" for a, b, _ in MATMUL])
def test_matmul_grad_fn_name(sa, sb, names):
    for (ra, rb), name in zip([(True, True), (True, False), (False, True)], names):
        a = fg.ones(sa, dtype=fg.float64, requires_grad=ra)
        b = fg.ones(sb, dtype=fg.float64, requires_grad=rb)
        out = a @ b
        assert out.grad_fn.name() == name, (ra, rb)
        # None of the routes leaves a view of an intermediate, except a
        # transposed result that needed no copy.
        assert (out._base is not None) == (name == "TransposeBackward0")
