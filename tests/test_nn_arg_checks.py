"""The layers' argument checks are PyTorch's: what its constructors refuse (with its
words), what they accept, and what a layer PyTorch builds refuses at its first forward
(a kernel of size 0, an output size below 1). Every expected outcome below was recorded
from PyTorch 2.x's behaviour on the same call."""

import warnings

import pytest

import ferrograd as torch
from ferrograd import nn
from ferrograd.nn import functional as F

# (constructor, exception class, message) recorded from PyTorch.
REFUSED = [
    ("nn.Bilinear(0, 2, 3)", ValueError, "in1_features must be > 0, but got (in1_features=0)"),
    ("nn.RNN(0, 8)", ValueError, "input_size must be greater than zero"),
    ("nn.LSTM(0, 8)", ValueError, "input_size must be greater than zero"),
    ("nn.LSTM(-1, 8)", ValueError, "input_size must be greater than zero"),
    ("nn.GRU(0, 8)", ValueError, "input_size must be greater than zero"),
    ("nn.LSTM(4, 0)", ValueError, "hidden_size must be greater than zero"),
    ("nn.RNN(4, 8, num_layers=0)", ValueError, "num_layers must be greater than zero"),
    ("nn.LSTM(4.0, 8)", TypeError, "input_size should be of type int, got: float"),
    ("nn.LSTM(4, 8.0)", TypeError, "hidden_size should be of type int, got: float"),
    ("nn.LSTM(4, 8, bias=1)", TypeError, "bias should be of type bool, got: int"),
    ("nn.GRU(4, 8, batch_first=None)", TypeError, "batch_first should be of type bool, got: NoneType"),
    ("nn.LSTM(4, 8, proj_size=8)", ValueError, "proj_size has to be smaller than hidden_size"),
    ("nn.LSTM(4, 8, proj_size=-1)", ValueError,
     "proj_size should be a positive integer or zero to disable projections"),
    ("nn.GRU(4, 8, proj_size=2)", ValueError,
     "proj_size argument is only supported for LSTM, not RNN or GRU"),
    ("nn.RNN(4, 8, proj_size=0)", ValueError,
     "proj_size argument is only supported for LSTM, not RNN or GRU"),
    ("nn.LSTM(4, 8, dropout=1.5)", ValueError, "dropout should be a number in range [0, 1]"),
    ("nn.RNN(4, 8, nonlinearity='gelu')", ValueError,
     "Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."),
    ("nn.GroupNorm(3, 8)", ValueError, "num_channels (8) must be divisible by num_groups (3)"),
    ("nn.GroupNorm(4, 2)", ValueError, "num_channels (2) must be divisible by num_groups (4)"),
    ("nn.Dropout(1.5)", ValueError, "dropout probability has to be between 0 and 1, but got 1.5"),
    ("nn.Dropout2d(-1)", ValueError, "dropout probability has to be between 0 and 1, but got -1"),
    ("nn.MultiheadAttention(8, 3)", AssertionError, "embed_dim must be divisible by num_heads"),
    ("nn.TransformerEncoderLayer(8, 3)", AssertionError, "embed_dim must be divisible by num_heads"),
    ("nn.MultiheadAttention(0, 1)", ValueError,
     "embed_dim and num_heads must be greater than 0, got embed_dim=0 and num_heads=1 instead"),
    ("nn.Embedding(4, 3, padding_idx=4)", AssertionError, "Padding_idx must be within num_embeddings"),
    ("nn.EmbeddingBag(4, 3, padding_idx=-5)", AssertionError,
     "padding_idx must be within num_embeddings"),
    ("nn.LPPool2d(0, 2)", ValueError, "norm_type must be a non-zero value, but got 0"),
    ("nn.Conv2d(3, 8, 3, groups=0)", ValueError, "groups must be a positive integer"),
    ("nn.Conv2d(3, 8, 3, groups=2)", ValueError, "in_channels must be divisible by groups"),
    ("nn.Conv2d(4, 6, 3, groups=4)", ValueError, "out_channels must be divisible by groups"),
    ("nn.Conv2d(3, 8, 3, padding='same', stride=2)", ValueError,
     "padding='same' is not supported for strided convolutions"),
    ("nn.Hardtanh(2, 1)", AssertionError, "max_val (1) must be greater than min_val (2)"),
    ("nn.Linear(-1, 3)", RuntimeError, "Trying to create tensor with negative dimension -1"),
]

# Accepted by PyTorch's constructors (some fail at forward, below).
ACCEPTED = [
    "nn.Conv2d(3, 8, 0)", "nn.Conv1d(3, 8, 0)", "nn.Conv3d(3, 8, 0)", "nn.Conv2d(3, 0, 3)",
    "nn.ConvTranspose2d(3, 8, 0)", "nn.BatchNorm1d(0)", "nn.BatchNorm2d(0)",
    "nn.InstanceNorm1d(0)", "nn.LayerNorm(0)", "nn.Linear(0, 3)", "nn.Embedding(0, 3)",
    "nn.RNNCell(4, 8, nonlinearity='gelu')", "nn.EmbeddingBag(4, 3, mode='bad')",
    "nn.MaxPool2d(0)", "nn.AvgPool2d(0)", "nn.Upsample(scale_factor=-1)", "nn.Upsample()",
    "nn.ConstantPad1d((1, 2, 3), 0)", "nn.ReflectionPad2d(-1)", "nn.Bilinear(2, 0, 3)",
    "nn.PixelShuffle(0)", "nn.Unfold(0)", "nn.Dropout(1)", "nn.LSTM(4, 8, dropout=0.5)",
]  # fmt: skip

# (layer, input, exception class, message) at the first forward, recorded from PyTorch.
AT_FORWARD = [
    ("nn.Conv2d(3, 8, 0)", "torch.ones(1, 3, 5, 5)", RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    ("nn.Conv1d(3, 8, 0)", "torch.ones(1, 3, 5)", RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 1 kernel_width: 0"),
    ("nn.Conv3d(3, 8, (0, 3, 3))", "torch.ones(1, 3, 5, 5, 5)", RuntimeError,
     "kernel size should be greater than zero, but got: 0 x 3 x 3 (TxHxW)"),
    ("nn.ConvTranspose2d(3, 8, 0)", "torch.ones(1, 3, 5, 5)", RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    ("nn.Conv2d(3, 0, 3)", "torch.ones(1, 3, 5, 5)", RuntimeError,
     "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size "
     "[0, 3, 3, 3] instead"),
    ("nn.Conv2d(3, 8, 3, stride=0)", "torch.ones(1, 3, 5, 5)", RuntimeError,
     "non-positive stride is not supported"),
    ("nn.Conv2d(3, 8, 3, dilation=0)", "torch.ones(1, 3, 5, 5)", RuntimeError,
     "dilation should be greater than zero, but got [0, 0]"),
    ("nn.Conv2d(3, 8, 3, padding=-1)", "torch.ones(1, 3, 5, 5)", RuntimeError,
     "negative padding is not supported"),
    ("nn.ConvTranspose2d(3, 8, 3, output_padding=2, stride=1)", "torch.ones(1, 3, 5, 5)",
     RuntimeError, "output padding must be smaller than either stride or dilation, but got "
     "output_padding_height: 2 output_padding_width: 2 stride_height: 1 stride_width: 1 "
     "dilation_height: 1 dilation_width: 1"),
    ("nn.RNNCell(4, 8, nonlinearity='gelu')", "torch.ones(2, 4)", RuntimeError,
     "Unknown nonlinearity: gelu"),
    ("nn.EmbeddingBag(4, 3, mode='bad')", "torch.zeros(2, 2, dtype=torch.int64)", ValueError,
     "mode has to be one of sum, mean or max"),
    ("nn.Upsample(scale_factor=-1)", "torch.ones(1, 1, 4, 4)", RuntimeError,
     "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output "
     "(H: -4, W: -4)"),
    ("nn.Upsample(mode='bad')", "torch.ones(1, 1, 4, 4)", ValueError,
     "either size or scale_factor should be defined"),
    ("nn.ConstantPad1d((1, 2, 3), 0)", "torch.ones(1, 2, 4)", RuntimeError,
     "Padding length must be divisible by 2"),
    ("nn.ReplicationPad1d((1,))", "torch.ones(1, 2, 4)", RuntimeError,
     "Padding length must be divisible by 2"),
    # Its affine parameters have no element to read (affine=False runs, below).
    ("nn.BatchNorm1d(0)", "torch.ones(2, 0)", IndexError,
     "select(): index 0 out of range for tensor of size [0] at dimension 0"),
    ("nn.BatchNorm2d(0).eval()", "torch.ones(2, 0, 3, 3)", IndexError,
     "select(): index 0 out of range for tensor of size [0] at dimension 0"),
    ("nn.InstanceNorm1d(0, affine=True)", "torch.ones(2, 0, 3)", IndexError,
     "select(): index 0 out of range for tensor of size [0] at dimension 0"),
]


@pytest.mark.parametrize(("expr", "cls", "msg"), REFUSED, ids=[r[0] for r in REFUSED])
def test_constructor_refuses_as_pytorch(expr, cls, msg):
    with pytest.raises(cls) as info:
        eval(expr)
    assert msg in str(info.value)


@pytest.mark.parametrize("expr", ACCEPTED)
def test_constructor_accepts_as_pytorch(expr):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(eval(expr), nn.Module)


@pytest.mark.parametrize(("expr", "arg", "cls", "msg"), AT_FORWARD, ids=[r[0] for r in AT_FORWARD])
def test_forward_refuses_as_pytorch(expr, arg, cls, msg):
    m = eval(expr)
    with pytest.raises(cls) as info:
        m(eval(arg))
    assert msg in str(info.value)


def test_normalisation_without_channels_runs_without_affine_parameters():
    # PyTorch: an empty result of the input's shape, as F.batch_norm without weights gives.
    assert tuple(nn.BatchNorm1d(0, affine=False)(torch.ones(2, 0)).shape) == (2, 0)
    assert tuple(nn.InstanceNorm1d(0)(torch.ones(2, 0, 3)).shape) == (2, 0, 3)
    assert tuple(F.batch_norm(torch.ones(2, 0), None, None, training=True).shape) == (2, 0)


def test_negative_reflect_and_replicate_padding_crop_as_pytorch():
    # Values recorded from PyTorch: the positions are read from the whole input.
    x = torch.arange(4.0).reshape(1, 1, 4)
    want = {
        ("reflect", (-1, 2)): [1.0, 2.0, 3.0, 2.0, 1.0],
        ("reflect", (-2, 3)): [2.0, 3.0, 2.0, 1.0, 0.0],
        ("reflect", (2, -3)): [2.0, 1.0, 0.0],
        ("reflect", (-5, 2)): [1.0],
        ("replicate", (-2, 3)): [2.0, 3.0, 3.0, 3.0, 3.0],
        ("replicate", (2, -3)): [0.0, 0.0, 0.0],
        ("replicate", (-5, 2)): [3.0],
    }
    for (mode, p), values in want.items():
        assert F.pad(x, p, mode=mode).flatten().tolist() == values, (mode, p)
    with pytest.raises(RuntimeError, match=r"input \(W: 4\) is too small. Calculated output W: 0"):
        F.pad(x, (-2, -2), mode="reflect")
    y = torch.zeros(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match=r"Calculated output H: 4 W: 0 must be >= 1 in every "
                                           r"dimension \(input H: 4, W: 4\)"):  # fmt: skip
        F.pad(y, (-2, -2, 0, 0), mode="replicate")
    assert tuple(nn.ReflectionPad2d(-1)(y).shape) == (1, 1, 2, 2)


# (call on x = ones(1, 1, 4, 4), message) recorded from PyTorch: pooling, unfold/fold
# and group_norm check their arguments in PyTorch's order and words.
FUNCTIONAL = [
    # The pooling kernels take their sizes as C ints (a kernel of 2**62 over a 3-d
    # input used to run a Python loop over its 2**62 depth taps).
    ("F.max_pool2d(x, 2**62, ceil_mode=True)", "value cannot be converted to type int without "
     "overflow"),
    ("F.avg_pool2d(x, 2, 2**31)", "value cannot be converted to type int without overflow"),
    ("F.max_pool3d(x[None], 2**62, ceil_mode=True)", "value cannot be converted to type int "
     "without overflow"),
    ("F.lp_pool3d(x[None], float('inf'), 2**62, ceil_mode=True)", "value cannot be converted "
     "to type int without overflow"),
    ("F.avg_pool3d(x[None], 2, 1, 2**31)", "value cannot be converted to type int without "
     "overflow"),
    ("F.max_pool2d(x, 0)", "stride should not be zero"),
    ("F.max_pool2d(x, (2, 0), stride=1)",
     "kernel size should be greater than zero, but got kH: 2 kW: 0"),
    ("F.max_pool2d(x, 2, stride=0)", "stride should not be zero"),
    ("F.max_pool2d(x, 2, stride=-1)", "stride should be greater than zero, but got dH: -1 dW: -1"),
    ("F.max_pool2d(x, 2, padding=-1)", "pad must be non-negative, but got pad: -1"),
    ("F.max_pool2d(x, 2, padding=(0, 2))", "pad should be at most half of effective kernel size, "
     "but got pad=2, kernel_size=2 and dilation=1"),
    ("F.max_pool2d(x, 2, dilation=0)",
     "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    ("F.max_pool1d(x[0], 0)", "max_pool1d() kernel_size must be greater than zero, but got 0"),
    ("F.max_pool1d(x[0], 2, padding=2)", "max_pool1d() padding should be at most half of kernel "
     "size, but got padding=2 and kernel_size=2"),
    ("F.max_pool1d(x[0], 2, stride=0)", "max_pool1d() stride must be greater than zero, but got 0"),
    ("F.avg_pool2d(x, 0)", "stride should not be zero"),
    ("F.avg_pool2d(x, 0, stride=1)", "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    ("F.avg_pool2d(x, 2, padding=2)", "pad should be at most half of effective kernel size, but "
     "got pad=2, kernel_size=2 and dilation=1"),
    ("F.avg_pool1d(x[0], 0)", "stride should not be zero"),
    ("F.lp_pool2d(x, 2, 0)", "stride should not be zero"),
    ("F.max_pool3d(torch.ones(1, 1, 4, 4, 4), 0)", "stride should not be zero"),
    ("F.avg_pool3d(torch.ones(1, 1, 4, 4, 4), 2, padding=2)", "pad should be at most half of "
     "effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    ("F.max_pool3d(torch.ones(1, 1, 4, 4, 4), (1, 0, 1), stride=1)",
     "kernel size should be greater than zero, but got kT: 1 kH: 0 kW: 1"),
    ("F.unfold(x, 0)",
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    ("F.unfold(x, 2, stride=0)",
     "stride should be greater than zero, but got stride_height: 0 stride_width: 0"),
    ("F.unfold(x, 2, dilation=0)",
     "dilation should be greater than zero, but got dilation_height: 0 dilation_width: 0"),
    ("F.unfold(x, 2, padding=-1)",
     "padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    ("F.fold(torch.ones(1, 4, 9), 4, 0)",
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    ("F.group_norm(torch.ones(2, 0, 4), 1)", "Expected number of channels to be greater than 0, got 0"),
]  # fmt: skip


@pytest.mark.parametrize(("expr", "msg"), FUNCTIONAL, ids=[r[0] for r in FUNCTIONAL])
def test_functional_checks_as_pytorch(expr, msg):
    x = torch.ones(1, 1, 4, 4)  # noqa: F841 - used by expr
    with pytest.raises(RuntimeError) as info:
        eval(expr)
    assert msg in str(info.value)


def test_max_pool3d_reads_only_the_depth_taps_inside_the_input():
    # Values recorded from PyTorch 2.15: a kernel deeper than the input, with
    # padding and dilation, and the first maximum's index.
    x = torch.arange(150.0, dtype=torch.float64).reshape(1, 2, 5, 3, 5)
    v, i = F.max_pool3d(x, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True)
    assert v.flatten()[:6].tolist() == [53.0, 53.0, 53.0, 53.0, 128.0, 128.0]
    big = F.max_pool3d(x, (2**31 - 1, 1, 1), ceil_mode=True)
    assert big.shape == (1, 2, 1, 3, 5) and big.flatten()[:3].tolist() == [60.0, 61.0, 62.0]
