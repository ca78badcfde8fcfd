"""Every layer class in ``ferrograd.nn``: a randomised layer's state dict loads
into a freshly built one (another seed) and reproduces its outputs exactly,
directly and through ``ferrograd.save``/``load``."""

from __future__ import annotations

import numpy as np
import pytest

import ferrograd as fg
from ferrograd import nn


def r(*shape):
    return fg.randn(*shape)


def pos(*shape):
    return fg.rand(*shape) + 0.1


def sign(*shape):
    return (fg.rand(*shape) > 0.5).to(fg.float32) * 2 - 1


class _Net(nn.Module):
    """A user-defined Module: a parameter, a submodule, persistent and
    non-persistent buffers."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(fg.randn(3))
        self.fc = nn.Linear(3, 2)
        self.register_buffer("shift", fg.randn(3))
        self.register_buffer("scratch", fg.zeros(3), persistent=False)

    def forward(self, x):
        return self.fc(x * self.scale + self.shift + self.scratch)


def _modulelist():
    return nn.ModuleList([nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 2)])


def _run_list(m, x):
    for layer in m:
        x = layer(x)
    return x


def _run_moduledict(m, x):
    return m["b"](m["a"](x))


def _run_params(m, x):
    ps = list(m.values()) if isinstance(m, nn.ParameterDict) else list(m)
    return x * ps[0] + ps[1]


# name -> (layer class, build, inputs, optional call(m, *inputs))
SPECS = {
    "AdaptiveAvgPool1d": (
        nn.AdaptiveAvgPool1d,
        lambda: nn.AdaptiveAvgPool1d(3),
        lambda: (r(2, 3, 7),),
    ),
    "AdaptiveAvgPool2d": (
        nn.AdaptiveAvgPool2d,
        lambda: nn.AdaptiveAvgPool2d((2, 3)),
        lambda: (r(2, 3, 5, 7),),
    ),
    "AdaptiveMaxPool1d": (
        nn.AdaptiveMaxPool1d,
        lambda: nn.AdaptiveMaxPool1d(3, return_indices=True),
        lambda: (r(2, 3, 7),),
    ),
    "AdaptiveMaxPool2d": (
        nn.AdaptiveMaxPool2d,
        lambda: nn.AdaptiveMaxPool2d(2),
        lambda: (r(2, 3, 5, 5),),
    ),
    "AvgPool1d": (nn.AvgPool1d, lambda: nn.AvgPool1d(2), lambda: (r(2, 3, 6),)),
    "AvgPool2d": (nn.AvgPool2d, lambda: nn.AvgPool2d(2, padding=1), lambda: (r(2, 3, 4, 4),)),
    "BCELoss": (
        nn.BCELoss,
        lambda: nn.BCELoss(weight=pos(3)),
        lambda: (fg.rand(4, 3) * 0.8 + 0.1, fg.rand(4, 3)),
    ),
    "BCEWithLogitsLoss": (
        nn.BCEWithLogitsLoss,
        lambda: nn.BCEWithLogitsLoss(weight=pos(3), pos_weight=pos(3)),
        lambda: (r(4, 3), fg.rand(4, 3)),
    ),
    "BatchNorm1d": (nn.BatchNorm1d, lambda: nn.BatchNorm1d(3), lambda: (r(4, 3),)),
    "BatchNorm2d": (nn.BatchNorm2d, lambda: nn.BatchNorm2d(3), lambda: (r(4, 3, 2, 2),)),
    "BatchNorm3d": (nn.BatchNorm3d, lambda: nn.BatchNorm3d(3), lambda: (r(2, 3, 2, 2, 2),)),
    "Bilinear": (nn.Bilinear, lambda: nn.Bilinear(3, 4, 5), lambda: (r(2, 3), r(2, 4))),
    "CELU": (nn.CELU, lambda: nn.CELU(0.7), lambda: (r(2, 3),)),
    "CircularPad1d": (nn.CircularPad1d, lambda: nn.CircularPad1d(1), lambda: (r(1, 2, 4),)),
    "CircularPad2d": (nn.CircularPad2d, lambda: nn.CircularPad2d(1), lambda: (r(1, 2, 3, 3),)),
    "ConstantPad1d": (nn.ConstantPad1d, lambda: nn.ConstantPad1d(2, 0.5), lambda: (r(1, 2, 4),)),
    "ConstantPad2d": (nn.ConstantPad2d, lambda: nn.ConstantPad2d(1, 0.5), lambda: (r(1, 2, 3, 3),)),
    "Conv1d": (nn.Conv1d, lambda: nn.Conv1d(2, 3, 3, padding="same"), lambda: (r(2, 2, 6),)),
    "Conv2d": (
        nn.Conv2d,
        lambda: nn.Conv2d(2, 4, 3, padding=1, groups=2),
        lambda: (r(2, 2, 5, 5),),
    ),
    "Conv2d(no bias)": (
        nn.Conv2d,
        lambda: nn.Conv2d(2, 3, 2, stride=2, bias=False),
        lambda: (r(1, 2, 4, 4),),
    ),
    "Conv3d": (
        nn.Conv3d,
        lambda: nn.Conv3d(2, 4, (2, 3, 3), padding=1, groups=2),
        lambda: (r(2, 2, 3, 4, 4),),
    ),
    "MaxPool3d": (
        nn.MaxPool3d,
        lambda: nn.MaxPool3d(2, return_indices=True),
        lambda: (r(2, 3, 4, 4, 4),),
    ),
    "AvgPool3d": (nn.AvgPool3d, lambda: nn.AvgPool3d(2, padding=1), lambda: (r(2, 3, 3, 4, 4),)),
    "ConvTranspose1d": (
        nn.ConvTranspose1d,
        lambda: nn.ConvTranspose1d(2, 3, 3, stride=2),
        lambda: (r(2, 2, 4),),
    ),
    "ConvTranspose2d": (
        nn.ConvTranspose2d,
        lambda: nn.ConvTranspose2d(2, 4, 3, stride=2, groups=2),
        lambda: (r(2, 2, 3, 3),),
    ),
    "CTCLoss": (
        nn.CTCLoss,
        lambda: nn.CTCLoss(blank=0),
        lambda: (fg.log_softmax(r(5, 2, 4), 2), fg.tensor([[1, 2], [3, 3]]), (5, 5), (2, 2)),
    ),
    "CosineEmbeddingLoss": (
        nn.CosineEmbeddingLoss,
        lambda: nn.CosineEmbeddingLoss(0.1),
        lambda: (r(4, 3), r(4, 3), sign(4)),
    ),
    "CosineSimilarity": (
        nn.CosineSimilarity,
        lambda: nn.CosineSimilarity(),
        lambda: (r(4, 3), r(4, 3)),
    ),
    "CrossEntropyLoss": (
        nn.CrossEntropyLoss,
        lambda: nn.CrossEntropyLoss(weight=pos(3), label_smoothing=0.1),
        lambda: (r(4, 3), fg.tensor([0, 2, 1, 0])),
    ),
    "Dropout": (nn.Dropout, lambda: nn.Dropout(0.3), lambda: (r(4, 3),)),
    "ELU": (nn.ELU, lambda: nn.ELU(), lambda: (r(2, 3),)),
    "Embedding": (
        nn.Embedding,
        lambda: nn.Embedding(6, 3, padding_idx=0),
        lambda: (fg.tensor([[0, 2, 5], [1, 1, 3]]),),
    ),
    "EmbeddingBag": (
        nn.EmbeddingBag,
        lambda: nn.EmbeddingBag(6, 3, mode="sum"),
        lambda: (fg.tensor([[0, 2, 5], [1, 1, 3]]),),
    ),
    "Flatten": (nn.Flatten, lambda: nn.Flatten(), lambda: (r(2, 3, 4),)),
    "Fold": (nn.Fold, lambda: nn.Fold((4, 4), 2), lambda: (r(1, 12, 9),)),
    "GELU": (nn.GELU, lambda: nn.GELU("tanh"), lambda: (r(2, 3),)),
    "GLU": (nn.GLU, lambda: nn.GLU(), lambda: (r(2, 4),)),
    "GRU": (nn.GRU, lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True), lambda: (r(5, 2, 3),)),
    "GRUCell": (nn.GRUCell, lambda: nn.GRUCell(3, 4), lambda: (r(2, 3), r(2, 4))),
    "GaussianNLLLoss": (
        nn.GaussianNLLLoss,
        lambda: nn.GaussianNLLLoss(),
        lambda: (r(4, 3), r(4, 3), pos(4, 3)),
    ),
    "GroupNorm": (nn.GroupNorm, lambda: nn.GroupNorm(2, 4), lambda: (r(2, 4, 3),)),
    "Hardshrink": (nn.Hardshrink, lambda: nn.Hardshrink(), lambda: (r(2, 3),)),
    "Hardsigmoid": (nn.Hardsigmoid, lambda: nn.Hardsigmoid(), lambda: (r(2, 3) * 4,)),
    "Hardswish": (nn.Hardswish, lambda: nn.Hardswish(), lambda: (r(2, 3) * 4,)),
    "HingeEmbeddingLoss": (
        nn.HingeEmbeddingLoss,
        lambda: nn.HingeEmbeddingLoss(),
        lambda: (r(4, 3), sign(4, 3)),
    ),
    "HuberLoss": (nn.HuberLoss, lambda: nn.HuberLoss(delta=0.5), lambda: (r(4, 3), r(4, 3))),
    "Identity": (nn.Identity, lambda: nn.Identity(3, unused=1), lambda: (r(2, 3),)),
    "InstanceNorm1d": (
        nn.InstanceNorm1d,
        lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
        lambda: (r(2, 3, 5),),
    ),
    "InstanceNorm2d": (
        nn.InstanceNorm2d,
        lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        lambda: (r(2, 3, 4, 4),),
    ),
    "InstanceNorm3d": (
        nn.InstanceNorm3d,
        lambda: nn.InstanceNorm3d(3, affine=True),
        lambda: (r(2, 3, 2, 2, 2),),
    ),
    "KLDivLoss": (
        nn.KLDivLoss,
        lambda: nn.KLDivLoss(reduction="batchmean"),
        lambda: (fg.log_softmax(r(4, 3), 1), fg.softmax(r(4, 3), 1)),
    ),
    "L1Loss": (nn.L1Loss, lambda: nn.L1Loss(), lambda: (r(4, 3), r(4, 3))),
    "LSTM": (
        nn.LSTM,
        lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
        lambda: (r(5, 2, 3),),
    ),
    "LSTM(proj_size)": (
        nn.LSTM,
        lambda: nn.LSTM(3, 4, proj_size=2, batch_first=True),
        lambda: (r(2, 5, 3),),
    ),
    "LSTMCell": (nn.LSTMCell, lambda: nn.LSTMCell(3, 4), lambda: (r(2, 3),)),
    "LayerNorm": (nn.LayerNorm, lambda: nn.LayerNorm(4), lambda: (r(2, 3, 4),)),
    "LayerNorm(no bias)": (
        nn.LayerNorm,
        lambda: nn.LayerNorm((3, 4), bias=False),
        lambda: (r(2, 3, 4),),
    ),
    "LeakyReLU": (nn.LeakyReLU, lambda: nn.LeakyReLU(0.2), lambda: (r(2, 3),)),
    "Linear": (nn.Linear, lambda: nn.Linear(3, 4), lambda: (r(2, 3),)),
    "LogSigmoid": (nn.LogSigmoid, lambda: nn.LogSigmoid(), lambda: (r(2, 3),)),
    "LogSoftmax": (nn.LogSoftmax, lambda: nn.LogSoftmax(dim=1), lambda: (r(2, 3),)),
    "MSELoss": (nn.MSELoss, lambda: nn.MSELoss(reduction="sum"), lambda: (r(4, 3), r(4, 3))),
    "MarginRankingLoss": (
        nn.MarginRankingLoss,
        lambda: nn.MarginRankingLoss(0.2),
        lambda: (r(4), r(4), sign(4)),
    ),
    "MaxPool1d": (
        nn.MaxPool1d,
        lambda: nn.MaxPool1d(2, return_indices=True),
        lambda: (r(2, 3, 6),),
    ),
    "MaxPool2d": (nn.MaxPool2d, lambda: nn.MaxPool2d(2, ceil_mode=True), lambda: (r(2, 3, 5, 5),)),
    "Mish": (nn.Mish, lambda: nn.Mish(), lambda: (r(2, 3),)),
    "Module": (nn.Module, _Net, lambda: (r(2, 3),)),
    "ModuleDict": (
        nn.ModuleDict,
        lambda: nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.Linear(3, 2)}),
        lambda: (r(2, 3),),
        _run_moduledict,
    ),
    "ModuleList": (nn.ModuleList, _modulelist, lambda: (r(2, 3),), _run_list),
    "MultiLabelSoftMarginLoss": (
        nn.MultiLabelSoftMarginLoss,
        lambda: nn.MultiLabelSoftMarginLoss(weight=pos(3)),
        lambda: (r(4, 3), (fg.rand(4, 3) > 0.5).to(fg.float32)),
    ),
    "MultiheadAttention": (
        nn.MultiheadAttention,
        lambda: nn.MultiheadAttention(4, 2),
        lambda: (r(3, 2, 4),) * 3,
    ),
    "MultiheadAttention(kdim, bias_kv)": (
        nn.MultiheadAttention,
        lambda: nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, batch_first=True),
        lambda: (r(2, 3, 4), r(2, 5, 3), r(2, 5, 5)),
    ),
    "NLLLoss": (
        nn.NLLLoss,
        lambda: nn.NLLLoss(weight=pos(3), ignore_index=1),
        lambda: (fg.log_softmax(r(4, 3), 1), fg.tensor([0, 2, 1, 0])),
    ),
    "PReLU": (nn.PReLU, lambda: nn.PReLU(3), lambda: (r(2, 3, 4),)),
    "PairwiseDistance": (
        nn.PairwiseDistance,
        lambda: nn.PairwiseDistance(p=3.0),
        lambda: (r(4, 3), r(4, 3)),
    ),
    "ParameterDict": (
        nn.ParameterDict,
        lambda: nn.ParameterDict({"w": nn.Parameter(r(3)), "b": nn.Parameter(r(3))}),
        lambda: (r(2, 3),),
        _run_params,
    ),
    "ParameterList": (
        nn.ParameterList,
        lambda: nn.ParameterList([nn.Parameter(r(3)), nn.Parameter(r(3))]),
        lambda: (r(2, 3),),
        _run_params,
    ),
    "PoissonNLLLoss": (
        nn.PoissonNLLLoss,
        lambda: nn.PoissonNLLLoss(full=True),
        lambda: (r(4, 3), pos(4, 3) * 3),
    ),
    "RNN": (
        nn.RNN,
        lambda: nn.RNN(3, 4, num_layers=2, nonlinearity="relu"),
        lambda: (r(5, 2, 3), r(2, 2, 4)),
    ),
    "RNNBase": (nn.RNNBase, lambda: nn.RNNBase("GRU", 3, 4, bias=False), lambda: (r(5, 2, 3),)),
    "RNNCell": (nn.RNNCell, lambda: nn.RNNCell(3, 4), lambda: (r(2, 3),)),
    "RNNCellBase": (
        nn.RNNCellBase,
        lambda: nn.RNNCellBase(3, 4, True, 3),
        lambda: (r(2, 3),),
        lambda m, x: x @ m.weight_ih.t() + m.bias_ih + m.bias_hh.sum() + m.weight_hh.sum(),
    ),
    "ReLU": (nn.ReLU, lambda: nn.ReLU(), lambda: (r(2, 3),)),
    "ReLU6": (nn.ReLU6, lambda: nn.ReLU6(), lambda: (r(2, 3) * 5,)),
    "ReflectionPad1d": (nn.ReflectionPad1d, lambda: nn.ReflectionPad1d(2), lambda: (r(1, 2, 5),)),
    "ReflectionPad2d": (
        nn.ReflectionPad2d,
        lambda: nn.ReflectionPad2d(1),
        lambda: (r(1, 2, 3, 3),),
    ),
    "ReplicationPad1d": (
        nn.ReplicationPad1d,
        lambda: nn.ReplicationPad1d(2),
        lambda: (r(1, 2, 5),),
    ),
    "ReplicationPad2d": (
        nn.ReplicationPad2d,
        lambda: nn.ReplicationPad2d(1),
        lambda: (r(1, 2, 3, 3),),
    ),
    "SELU": (nn.SELU, lambda: nn.SELU(), lambda: (r(2, 3),)),
    "Sequential": (
        nn.Sequential,
        lambda: nn.Sequential(
            nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(12, 2)
        ),
        lambda: (r(2, 2, 4, 4),),
    ),
    "SiLU": (nn.SiLU, lambda: nn.SiLU(), lambda: (r(2, 3),)),
    "Sigmoid": (nn.Sigmoid, lambda: nn.Sigmoid(), lambda: (r(2, 3),)),
    "SmoothL1Loss": (
        nn.SmoothL1Loss,
        lambda: nn.SmoothL1Loss(beta=0.5),
        lambda: (r(4, 3), r(4, 3)),
    ),
    "SoftMarginLoss": (
        nn.SoftMarginLoss,
        lambda: nn.SoftMarginLoss(),
        lambda: (r(4, 3), sign(4, 3)),
    ),
    "Softmax": (nn.Softmax, lambda: nn.Softmax(dim=1), lambda: (r(2, 3),)),
    "Softmax2d": (nn.Softmax2d, lambda: nn.Softmax2d(), lambda: (r(2, 3, 4, 4),)),
    "Softmin": (nn.Softmin, lambda: nn.Softmin(dim=1), lambda: (r(2, 3),)),
    "Softplus": (nn.Softplus, lambda: nn.Softplus(beta=2.0), lambda: (r(2, 3),)),
    "Softshrink": (nn.Softshrink, lambda: nn.Softshrink(), lambda: (r(2, 3),)),
    "Softsign": (nn.Softsign, lambda: nn.Softsign(), lambda: (r(2, 3),)),
    "Tanh": (nn.Tanh, lambda: nn.Tanh(), lambda: (r(2, 3),)),
    "Tanhshrink": (nn.Tanhshrink, lambda: nn.Tanhshrink(), lambda: (r(2, 3),)),
    "Threshold": (nn.Threshold, lambda: nn.Threshold(0.1, 20.0), lambda: (r(2, 3),)),
    "TransformerEncoder": (
        nn.TransformerEncoder,
        lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(4, 2, dim_feedforward=8), num_layers=2, norm=nn.LayerNorm(4)
        ),
        lambda: (r(5, 2, 4),),
    ),
    "TransformerEncoderLayer": (
        nn.TransformerEncoderLayer,
        lambda: nn.TransformerEncoderLayer(
            4, 2, dim_feedforward=8, norm_first=True, activation="gelu"
        ),
        lambda: (r(5, 2, 4),),
    ),
    "TripletMarginLoss": (
        nn.TripletMarginLoss,
        lambda: nn.TripletMarginLoss(swap=True),
        lambda: (r(4, 3), r(4, 3), r(4, 3)),
    ),
    "Unflatten": (nn.Unflatten, lambda: nn.Unflatten(1, (2, 3)), lambda: (r(2, 6),)),
    "Unfold": (nn.Unfold, lambda: nn.Unfold(2, stride=2), lambda: (r(1, 2, 4, 4),)),
    "Upsample": (
        nn.Upsample,
        lambda: nn.Upsample(scale_factor=2, mode="bilinear"),
        lambda: (r(1, 2, 3, 3),),
    ),
    "ZeroPad1d": (nn.ZeroPad1d, lambda: nn.ZeroPad1d(2), lambda: (r(1, 2, 4),)),
    "ZeroPad2d": (nn.ZeroPad2d, lambda: nn.ZeroPad2d((1, 0, 2, 1)), lambda: (r(1, 2, 3, 3),)),
}


def _materialized(layer, *shape):
    """A lazy layer after its first call (which gives its parameters shapes)."""
    layer(fg.zeros(*shape))
    return layer


# Layers added with the PyTorch-name gap list (dropout variants, shuffles, RMSNorm,
# the decoder and full Transformer, LP pooling, unpooling, 3-d padding, ...).
SPECS.update(
    {
        "AlphaDropout": (nn.AlphaDropout, lambda: nn.AlphaDropout(0.2), lambda: (r(4, 3),)),
        "Dropout1d": (nn.Dropout1d, lambda: nn.Dropout1d(0.3), lambda: (r(2, 3, 4),)),
        "Dropout2d": (nn.Dropout2d, lambda: nn.Dropout2d(0.3), lambda: (r(2, 3, 4, 4),)),
        "Dropout3d": (nn.Dropout3d, lambda: nn.Dropout3d(0.3), lambda: (r(2, 3, 2, 2, 2),)),
        "FeatureAlphaDropout": (
            nn.FeatureAlphaDropout,
            lambda: nn.FeatureAlphaDropout(0.2),
            lambda: (r(2, 3, 4),),
        ),
        "Hardtanh": (nn.Hardtanh, lambda: nn.Hardtanh(-0.5, 0.5), lambda: (r(2, 3),)),
        "RReLU": (nn.RReLU, lambda: nn.RReLU(0.1, 0.3), lambda: (r(2, 3),)),
        "LazyLinear": (
            nn.LazyLinear,
            lambda: _materialized(nn.LazyLinear(4), 2, 3),
            lambda: (r(2, 3),),
        ),
        "LazyConv1d": (
            nn.LazyConv1d,
            lambda: _materialized(nn.LazyConv1d(4, 3), 2, 2, 6),
            lambda: (r(2, 2, 6),),
        ),
        "LazyConv2d": (
            nn.LazyConv2d,
            lambda: _materialized(nn.LazyConv2d(4, 3, padding=1), 2, 2, 5, 5),
            lambda: (r(2, 2, 5, 5),),
        ),
        "LazyConv3d": (
            nn.LazyConv3d,
            lambda: _materialized(nn.LazyConv3d(2, 2), 1, 2, 3, 3, 3),
            lambda: (r(1, 2, 3, 3, 3),),
        ),
        "LazyConvTranspose1d": (
            nn.LazyConvTranspose1d,
            lambda: _materialized(nn.LazyConvTranspose1d(4, 3, stride=2), 2, 2, 5),
            lambda: (r(2, 2, 5),),
        ),
        "LazyConvTranspose2d": (
            nn.LazyConvTranspose2d,
            lambda: _materialized(nn.LazyConvTranspose2d(4, 3, groups=2), 1, 2, 3, 3),
            lambda: (r(1, 2, 3, 3),),
        ),
        "MultiMarginLoss": (
            nn.MultiMarginLoss,
            lambda: nn.MultiMarginLoss(p=2, weight=pos(3)),
            lambda: (r(4, 3), fg.tensor([0, 2, 1, 0])),
        ),
        "MultiLabelMarginLoss": (
            nn.MultiLabelMarginLoss,
            lambda: nn.MultiLabelMarginLoss(),
            lambda: (r(2, 3), fg.tensor([[0, 2, -1], [1, -1, 0]])),
        ),
        "TripletMarginWithDistanceLoss": (
            nn.TripletMarginWithDistanceLoss,
            lambda: nn.TripletMarginWithDistanceLoss(swap=True),
            lambda: (r(4, 3), r(4, 3), r(4, 3)),
        ),
        "DataParallel": (
            nn.DataParallel,
            lambda: nn.DataParallel(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))),
            lambda: (r(2, 3),),
        ),
        "SyncBatchNorm": (nn.SyncBatchNorm, lambda: nn.SyncBatchNorm(3), lambda: (r(4, 3, 2),)),
        "PixelShuffle": (nn.PixelShuffle, lambda: nn.PixelShuffle(2), lambda: (r(1, 8, 2, 3),)),
        "PixelUnshuffle": (
            nn.PixelUnshuffle,
            lambda: nn.PixelUnshuffle(2),
            lambda: (r(1, 2, 4, 6),),
        ),
        "ChannelShuffle": (nn.ChannelShuffle, lambda: nn.ChannelShuffle(2), lambda: (r(2, 4, 3),)),
        "RMSNorm": (nn.RMSNorm, lambda: nn.RMSNorm([3, 4]), lambda: (r(2, 3, 4),)),
        "RMSNorm(no affine)": (
            nn.RMSNorm,
            lambda: nn.RMSNorm(4, eps=1e-3, elementwise_affine=False),
            lambda: (r(2, 4),),
        ),
        "LocalResponseNorm": (
            nn.LocalResponseNorm,
            lambda: nn.LocalResponseNorm(3),
            lambda: (r(2, 5, 3, 3),),
        ),
        "CrossMapLRN2d": (nn.CrossMapLRN2d, lambda: nn.CrossMapLRN2d(3), lambda: (r(2, 5, 3, 3),)),
        "TransformerDecoderLayer": (
            nn.TransformerDecoderLayer,
            lambda: nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, norm_first=True),
            lambda: (r(3, 2, 4), r(5, 2, 4)),
        ),
        "TransformerDecoder": (
            nn.TransformerDecoder,
            lambda: nn.TransformerDecoder(
                nn.TransformerDecoderLayer(4, 2, dim_feedforward=8), 2, norm=nn.LayerNorm(4)
            ),
            lambda: (r(3, 2, 4), r(5, 2, 4)),
        ),
        "Transformer": (
            nn.Transformer,
            lambda: nn.Transformer(4, 2, 1, 2, 8, batch_first=True),
            lambda: (r(2, 5, 4), r(2, 3, 4)),
        ),
        "LPPool1d": (nn.LPPool1d, lambda: nn.LPPool1d(2, 2), lambda: (pos(2, 3, 6),)),
        "LPPool2d": (nn.LPPool2d, lambda: nn.LPPool2d(3, 2), lambda: (pos(2, 3, 4, 4),)),
        "LPPool3d": (nn.LPPool3d, lambda: nn.LPPool3d(2, 2), lambda: (pos(1, 2, 4, 4, 4),)),
        "MaxUnpool1d": (
            nn.MaxUnpool1d,
            lambda: nn.MaxUnpool1d(2),
            lambda: nn.functional.max_pool1d(r(2, 3, 6), 2, return_indices=True),
        ),
        "MaxUnpool2d": (
            nn.MaxUnpool2d,
            lambda: nn.MaxUnpool2d(2),
            lambda: nn.functional.max_pool2d(r(2, 3, 4, 4), 2, return_indices=True),
        ),
        "MaxUnpool3d": (
            nn.MaxUnpool3d,
            lambda: nn.MaxUnpool3d(2),
            lambda: nn.functional.max_pool3d(r(1, 2, 4, 4, 4), 2, return_indices=True),
        ),
        "AdaptiveAvgPool3d": (
            nn.AdaptiveAvgPool3d,
            lambda: nn.AdaptiveAvgPool3d((2, 1, 3)),
            lambda: (r(2, 3, 3, 4, 5),),
        ),
        "AdaptiveMaxPool3d": (
            nn.AdaptiveMaxPool3d,
            lambda: nn.AdaptiveMaxPool3d(2, return_indices=True),
            lambda: (r(2, 3, 3, 4, 5),),
        ),
        "UpsamplingNearest2d": (
            nn.UpsamplingNearest2d,
            lambda: nn.UpsamplingNearest2d(scale_factor=2),
            lambda: (r(1, 2, 3, 3),),
        ),
        "UpsamplingBilinear2d": (
            nn.UpsamplingBilinear2d,
            lambda: nn.UpsamplingBilinear2d(size=(4, 5)),
            lambda: (r(1, 2, 3, 3),),
        ),
        "ZeroPad3d": (nn.ZeroPad3d, lambda: nn.ZeroPad3d(1), lambda: (r(1, 2, 2, 2, 2),)),
        "ConstantPad3d": (
            nn.ConstantPad3d,
            lambda: nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 0.5),
            lambda: (r(1, 2, 2, 2, 2),),
        ),
        "ReflectionPad3d": (
            nn.ReflectionPad3d,
            lambda: nn.ReflectionPad3d(1),
            lambda: (r(1, 2, 3, 3, 3),),
        ),
        "ReplicationPad3d": (
            nn.ReplicationPad3d,
            lambda: nn.ReplicationPad3d(1),
            lambda: (r(1, 2, 3, 3, 3),),
        ),
        "CircularPad3d": (
            nn.CircularPad3d,
            lambda: nn.CircularPad3d(1),
            lambda: (r(1, 2, 3, 3, 3),),
        ),
    }
)


def _tensors(out):
    """The tensors of a layer's output, in order (tuples such as LSTM's
    ``(output, (h, c))`` flattened; ``None`` attention weights skipped)."""
    if isinstance(out, fg.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    assert out is None, type(out)
    return []


def _randomise(m, seed):
    """Every float parameter and buffer (running statistics too) gets values no
    initialisation would give, so a load that missed one shows."""
    g = fg.Generator().manual_seed(seed)
    saved = set(m.state_dict())
    with fg.no_grad():
        for name, t in list(m.named_parameters()) + list(m.named_buffers()):
            if name not in saved:  # a non-persistent buffer is not the state dict's business
                continue
            if t.is_floating_point():
                t.uniform_(0.2, 1.2, generator=g)
            elif name.endswith("num_batches_tracked"):
                t.fill_(7)


def _build(spec, seed):
    fg.manual_seed(seed)
    m = spec[1]()
    m.eval()
    return m


def _outputs(spec, m, xs):
    call = spec[3] if len(spec) > 3 else (lambda mod, *a: mod(*a))
    with fg.no_grad():
        return _tensors(call(m, *xs))


def _assert_same(got, want):
    assert len(got) == len(want) and want
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_state_dict_reproduces_outputs(name, tmp_path):
    spec = SPECS[name]
    m = _build(spec, 1)
    _randomise(m, 2)
    fg.manual_seed(3)
    xs = spec[2]()
    want = _outputs(spec, m, xs)
    sd = m.state_dict()
    # Every parameter and every persistent buffer, nothing else.
    persistent = [k for k, _ in m.named_buffers() if not k.endswith("scratch")]
    assert sorted(sd) == sorted([k for k, _ in m.named_parameters()] + persistent)

    fresh = _build(spec, 4)
    if sd:
        # A fresh layer of another seed must differ, or this test could not fail.
        before = _outputs(spec, fresh, xs)
        assert any(not np.array_equal(a.numpy(), b.numpy()) for a, b in zip(before, want)), name
    result = fresh.load_state_dict(sd)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    _assert_same(_outputs(spec, fresh, xs), want)
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())

    path = tmp_path / "layer.fg"
    fg.save(sd, path)
    loaded = fg.load(path)
    assert list(loaded) == list(sd)
    again = _build(spec, 5)
    again.load_state_dict(loaded)
    _assert_same(_outputs(spec, again, xs), want)
    # The whole module, saved and loaded, too.
    fg.save(m.state_dict(), path)
    third = _build(spec, 6)
    third.load_state_dict(fg.load(path, weights_only=True))
    _assert_same(_outputs(spec, third, xs), want)


def test_every_layer_class_is_covered():
    classes = {c for c in vars(nn).values() if isinstance(c, type) and issubclass(c, nn.Module)}
    covered = {spec[0] for spec in SPECS.values()}
    assert classes - covered == set()
