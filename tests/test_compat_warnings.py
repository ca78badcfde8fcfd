"""Where PyTorch warns or raises about a likely bug, ferrograd does the same,
with PyTorch's texts (names spelled ``ferrograd``); and reprs of the
normalisation layers and ``slogdet``'s outputs as current PyTorch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F

# ----- target sizes that broadcast ------------------------------------------------------------

POINTWISE = [F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss]


@pytest.mark.parametrize("loss", POINTWISE, ids=lambda f: f.__name__)
def test_target_size_warning(loss):
    x = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    y = torch.tensor([1.0, 2.0, 3.0, 5.0])
    with pytest.warns(UserWarning) as rec:
        out = loss(x, y)
    msg = str(rec[0].message)
    assert msg == (
        "Using a target size (ferrograd.Size([4])) that is different to the input size "
        "(ferrograd.Size([4, 1])). This will likely lead to incorrect results due to "
        "broadcasting. Please ensure they have the same size."
    )
    # The warning points at the caller's line.
    assert rec[0].filename == __file__
    # The value is still the broadcast one, as in PyTorch (a 4x4 difference).
    diff = x.numpy() - y.numpy()[None, :]
    if loss is F.mse_loss:
        assert float(out) == pytest.approx(float(np.mean(diff**2)))


def test_mse_broadcast_is_the_classic_silent_bug():
    # The value a user meant is 1.75 for (4, 1) vs (4,) ... and gets 1.5, with the warning.
    pred = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
    target = torch.tensor([2.0, 3.0, 4.0, 6.0])
    with pytest.warns(UserWarning, match="Using a target size"):
        wrong = F.mse_loss(pred, target)
    right = F.mse_loss(pred.squeeze(1), target)
    assert float(right) == pytest.approx(1.75)
    assert float(wrong) == pytest.approx(np.mean((np.array([1, 2, 3, 4.0])[:, None]
                                                  - np.array([2, 3, 4, 6.0])) ** 2))  # fmt: skip
    assert float(wrong) != pytest.approx(1.75)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(pred.squeeze(1), target)
        nn.MSELoss()(pred.squeeze(1), target)


def test_module_losses_warn_too():
    with pytest.warns(UserWarning, match="Using a target size"):
        nn.MSELoss()(torch.zeros(3, 1), torch.zeros(3))
    with pytest.warns(UserWarning, match="Using a target size"):
        nn.L1Loss()(torch.zeros(3, 1), torch.zeros(3))


def test_bce_sizes_raise():
    with pytest.raises(ValueError) as e:
        F.binary_cross_entropy(torch.rand(4, 1), torch.rand(4))
    assert str(e.value) == (
        "Using a target size (ferrograd.Size([4])) that is different to the input size "
        "(ferrograd.Size([4, 1])) is deprecated. Please ensure they have the same size."
    )
    with pytest.raises(ValueError) as e:
        F.binary_cross_entropy_with_logits(torch.rand(4, 1), torch.rand(4))
    assert str(e.value) == (
        "Target size (ferrograd.Size([4])) must be the same as input size "
        "(ferrograd.Size([4, 1]))"
    )
    with pytest.raises(ValueError, match="Target size"):
        nn.BCEWithLogitsLoss()(torch.rand(4, 1), torch.rand(4))


# ----- integer targets ------------------------------------------------------------------------


def test_integer_targets():
    x = torch.tensor([0.5, -1.0, 2.0, 0.0], requires_grad=True)
    ti = torch.tensor([1, 0, 1, 0])
    # As PyTorch: the logits loss cannot hold its float result in an int64 target ...
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):  # fmt: skip
        F.binary_cross_entropy_with_logits(x, ti)
    # ... binary_cross_entropy's kernel refuses a target of another dtype ...
    with pytest.raises(RuntimeError, match="Found dtype Long but expected Float"):
        F.binary_cross_entropy(torch.sigmoid(x), ti)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        F.binary_cross_entropy(torch.sigmoid(x), ti.double())
    # ... and mse_loss promotes it (PyTorch 2.x computes these in float): same values.
    out = F.mse_loss(x, ti)
    assert float(out) == pytest.approx(float(F.mse_loss(x, ti.float())))
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (x.detach().numpy() - ti.numpy()) / 4)


def test_float_class_index_target():
    logits = torch.randn(4, 3)
    with pytest.raises(RuntimeError) as e:
        F.cross_entropy(logits, torch.tensor([0.0, 1.0, 2.0, 0.0]))
    assert str(e.value) == "expected target dtype to be Long or Byte, but got Float"
    with pytest.raises(RuntimeError, match="but got Double"):
        F.nll_loss(F.log_softmax(logits, 1), torch.tensor([0.0, 1.0, 2.0, 0.0]).double())
    with pytest.raises(RuntimeError, match="but got Float"):
        nn.CrossEntropyLoss()(logits, torch.tensor([0.0, 1.0, 2.0, 0.0]))
    # A float target of the input's shape is class probabilities, still allowed.
    probs = torch.softmax(torch.randn(4, 3), 1)
    expected = -(probs.numpy() * np.log(np.exp(logits.numpy())
                                        / np.exp(logits.numpy()).sum(1, keepdims=True))).sum(1)
    assert float(F.cross_entropy(logits, probs)) == pytest.approx(float(expected.mean()), rel=1e-5)


# ----- softmax without dim --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_implicit_softmax_dim_warns(name):
    x = torch.randn(2, 3)
    with pytest.warns(UserWarning) as rec:
        out = getattr(F, name)(x)
    assert str(rec[0].message) == (
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument."
    )
    assert rec[0].filename == __file__
    # The legacy choice: dim 1 for a 2-d input.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(out.numpy(), getattr(F, name)(x, dim=1).numpy())


@pytest.mark.parametrize("cls", [nn.Softmax, nn.LogSoftmax, nn.Softmin])
def test_softmax_modules_without_dim_warn(cls):
    with pytest.warns(UserWarning, match="Implicit dimension choice") as rec:
        cls()(torch.randn(2, 3))
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls(dim=1)(torch.randn(2, 3))


# ----- reprs ----------------------------------------------------------------------------------


def test_norm_reprs_as_pytorch():
    # Recorded from PyTorch 2.15.
    assert repr(nn.BatchNorm2d(3)) == (
        "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
        "track_running_stats=True)"
    )
    assert repr(nn.BatchNorm1d(3, affine=False)) == (
        "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
        "track_running_stats=True)"
    )
    assert repr(nn.InstanceNorm2d(3)) == (
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
        "track_running_stats=False)"
    )
    assert repr(nn.LayerNorm(10)) == "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.LayerNorm(10, bias=False)) == (
        "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=False)"
    )
    assert repr(nn.LayerNorm(10, elementwise_affine=False)) == (
        "LayerNorm((10,), eps=1e-05, elementwise_affine=False, bias=False)"
    )
    assert repr(nn.GroupNorm(2, 4)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.GroupNorm(2, 4, affine=False)) == (
        "GroupNorm(2, 4, eps=1e-05, affine=False, bias=False)"
    )


def test_norm_bias_false():
    bn = nn.BatchNorm2d(3, bias=False)
    assert bn.bias is None and bn.weight is not None
    assert [n for n, _ in bn.named_parameters()] == ["weight"]
    x = torch.randn(4, 3, 2, 2)
    y = bn(x).detach().numpy()
    xn = x.numpy()
    mean = xn.mean((0, 2, 3), keepdims=True)
    var = xn.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (xn - mean) / np.sqrt(var + 1e-5), atol=1e-5)
    gn = nn.GroupNorm(1, 3, bias=False)
    assert gn.bias is None
    assert gn(x).shape == x.shape
    bn.reset_parameters()
    gn.reset_parameters()


def test_slogdet_sign_carries_the_graph():
    a = torch.tensor([[2.0, 1.0], [1.0, -3.0]], dtype=torch.float64, requires_grad=True)
    sign, logabs = torch.linalg.slogdet(a)
    assert sign.requires_grad and sign.grad_fn is not None
    assert sign.grad_fn.name() == logabs.grad_fn.name() == "LinalgSlogdetBackward0"
    assert float(sign) == -1.0 and float(logabs) == pytest.approx(np.log(7.0))
    # sign's gradient is zero; logabsdet's is A^{-T}.
    (sign * 3 + logabs).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.linalg.inv(a.detach().numpy()).T)
    s2, _ = torch.slogdet(a)
    assert s2.grad_fn is not None
    with torch.no_grad():
        assert not torch.linalg.slogdet(a).sign.requires_grad
