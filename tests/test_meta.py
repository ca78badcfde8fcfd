"""The ``meta`` device: tensors with a shape and a dtype but no data, for sizing
models and for the model-ensembling recipe (``stack_module_state`` +
``functional_call`` + ``vmap`` over a meta copy of the model)."""

from __future__ import annotations

import copy
import resource
import time

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.func import functional_call, stack_module_state, vmap


def meta(*shape, dtype=None, requires_grad=False):
    return torch.empty(*shape, device="meta", dtype=dtype, requires_grad=requires_grad)


# ----- creation -------------------------------------------------------------------------------


def test_factories_make_meta_tensors():
    for t in (
        torch.empty(3, 4, device="meta"),
        torch.zeros(3, 4, device="meta"),
        torch.ones((3, 4), device=torch.device("meta")),
        torch.full((3, 4), 2.0, device="meta"),
        torch.randn(3, 4, device="meta"),
        torch.rand(3, 4, device="meta"),
        torch.eye(3, 4, device="meta"),
    ):
        assert t.is_meta and t.device == "meta" and t.device.type == "meta"
        assert t.shape == (3, 4) and t.dtype == torch.float32
        assert torch.is_tensor(t) and not isinstance(t, torch.Tensor)
    assert torch.arange(10, device="meta").shape == (10,)
    assert torch.arange(10, device="meta").dtype == torch.int64
    assert torch.linspace(0, 1, 7, device="meta").shape == (7,)
    assert torch.randint(0, 5, (2, 3), device="meta").dtype == torch.int64
    assert torch.randperm(6, device="meta").shape == (6,)
    assert torch.tensor([[1, 2], [3, 4]], device="meta").shape == (2, 2)
    assert torch.ones(2).to("meta").is_meta
    assert torch.ones(2).to(device="meta", dtype=torch.float64).dtype == torch.float64
    assert torch.zeros_like(torch.ones(5), device="meta").is_meta
    assert torch.empty_like(meta(2, 3)).is_meta
    real = torch.empty_like(meta(2, 3), device="cpu")
    assert not real.is_meta and real.shape == (2, 3)


def test_meta_tensors_allocate_nothing():
    t0 = time.perf_counter()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    big = torch.empty(100_000, 100_000, device="meta")
    lin = nn.Linear(100_000, 100_000, device="meta")
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # 40 GB each if they had memory; the peak resident size did not move by 100 MB.
    assert (rss1 - rss0) < 100_000  # kilobytes
    assert time.perf_counter() - t0 < 5
    assert big.numel() == 10**10 and big.nbytes == 4 * 10**10
    assert sum(p.numel() for p in lin.parameters()) == 10**10 + 10**5
    y = lin(torch.empty(8, 100_000, device="meta"))
    assert y.shape == (8, 100_000) and y.is_meta


def test_repr_and_metadata():
    t = meta(3, 4)
    assert repr(t) == "tensor(..., device='meta', size=(3, 4))"
    assert repr(meta(2, dtype=torch.int64)) == (
        "tensor(..., device='meta', size=(2,), dtype=ferrograd.int64)"
    )
    assert repr(meta(2, requires_grad=True)) == (
        "tensor(..., device='meta', size=(2,), requires_grad=True)"
    )
    p = nn.Parameter(meta(4, 3))
    assert isinstance(p, nn.Parameter)
    assert repr(p) == "Parameter containing:\ntensor(..., device='meta', size=(4, 3), requires_grad=True)"
    assert t.stride() == (4, 1) and t.is_contiguous() and t.dim() == 2 and t.size(-1) == 4
    assert t.element_size() == 4 and meta(2, dtype=torch.float64).itemsize == 8


def test_reading_values_raises_pytorch_errors():
    t = meta(2)
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta tensors"):
        meta(()).item()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        t.tolist()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        t.to("cpu")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        t.cpu()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        t.numpy()
    with pytest.raises(RuntimeError, match="cannot be called on meta tensors"):
        float(meta(()))
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta"):
        t + torch.ones(2)
    with pytest.raises(RuntimeError, match="record no graph"):
        meta(2, requires_grad=True).sum().backward()
    with pytest.raises(NotImplementedError, match="has no meta implementation"):
        torch.nonzero(t)
    with pytest.raises(NotImplementedError, match="boolean mask"):
        t[t > 0]


# ----- ops give shapes and dtypes -------------------------------------------------------------


def test_elementwise_and_promotion():
    a = meta(3, 1)
    b = meta(4, dtype=torch.float64)
    c = a + b
    assert c.shape == (3, 4) and c.dtype == torch.float64
    assert (meta(2, dtype=torch.int64) + 1.5).dtype == torch.float32
    assert (meta(2, dtype=torch.int64) * 2).dtype == torch.int64
    assert (a > 0).dtype == torch.bool
    assert torch.exp(meta(2, dtype=torch.int64)).dtype == torch.float32
    assert torch.where(meta(3, 1, dtype=torch.bool), a, 0.0).shape == (3, 1)
    assert (2 - a).shape == (3, 1) and (-a).shape == (3, 1) and abs(a).shape == (3, 1)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        meta(3) + meta(4)
    x = meta(5, requires_grad=True)
    y = x * 2
    assert y.requires_grad and not y.is_leaf and x.is_leaf
    with torch.no_grad():
        assert not (x * 2).requires_grad


def test_shape_ops():
    x = meta(2, 3, 4)
    assert x.view(6, -1).shape == (6, 4)
    assert x.reshape(-1).shape == (24,)
    assert x.permute(2, 0, 1).shape == (4, 2, 3)
    assert x.transpose(0, 2).shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)
    assert x.flatten(1).shape == (2, 12) and torch.flatten(x).shape == (24,)
    assert x.unsqueeze(1).shape == (2, 1, 3, 4) and meta(1, 3, 1).squeeze().shape == (3,)
    assert x[0].shape == (3, 4) and x[:, 1:, None, ::2].shape == (2, 2, 1, 2)
    assert x[..., 0].shape == (2, 3)
    assert x[meta(5, dtype=torch.int64)].shape == (5, 3, 4)
    assert [t.shape for t in x.split(2, dim=2)] == [(2, 3, 2), (2, 3, 2)]
    assert [t.shape for t in x.chunk(3, dim=1)] == [(2, 1, 4)] * 3
    assert len(x.unbind(1)) == 3
    assert torch.cat([x, x], 1).shape == (2, 6, 4) and torch.stack([x, x], -1).shape == (2, 3, 4, 2)
    assert x.expand(5, 2, 3, 4).shape == (5, 2, 3, 4) and x.repeat(1, 2, 1).shape == (2, 6, 4)
    assert x.unflatten(2, (2, 2)).shape == (2, 3, 2, 2)
    assert x.movedim(0, -1).shape == (3, 4, 2)
    with pytest.raises(RuntimeError, match="is invalid for input of size 24"):
        x.view(5, -1)


def test_reductions_and_products():
    x = meta(2, 3, 4)
    assert x.sum().shape == () and x.sum(1).shape == (2, 4) and x.mean((0, 2), keepdim=True).shape == (1, 3, 1)
    v, i = x.max(1)
    assert v.shape == (2, 4) and i.dtype == torch.int64
    assert x.argmax(-1).shape == (2, 3) and x.std(1).shape == (2, 4)
    assert torch.softmax(x, -1).shape == x.shape
    assert (x @ meta(4, 5)).shape == (2, 3, 5)
    assert torch.matmul(meta(4), meta(4, 5)).shape == (5,)
    assert torch.bmm(meta(2, 3, 4), meta(2, 4, 6)).shape == (2, 3, 6)
    assert F.linear(x, meta(7, 4), meta(7)).shape == (2, 3, 7)
    assert torch.einsum("bij,jk->bik", x, meta(4, 2)).shape == (2, 3, 2)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        meta(2, 3) @ meta(4, 5)


def test_layers_on_meta():
    x = meta(8, 3, 32, 32)
    conv = nn.Conv2d(3, 16, 5, stride=2, padding=2, device="meta")
    assert conv.weight.is_meta and isinstance(conv.weight, nn.Parameter)
    y = conv(x)
    assert y.shape == (8, 16, 16, 16)
    assert nn.BatchNorm2d(16, device="meta")(y).shape == y.shape
    assert F.max_pool2d(y, 2).shape == (8, 16, 8, 8)
    assert F.avg_pool2d(y, 3, stride=2, padding=1).shape == (8, 16, 8, 8)
    assert F.adaptive_avg_pool2d(y, (1, None)).shape == (8, 16, 1, 16)
    assert nn.ConvTranspose2d(16, 4, 2, stride=2, device="meta")(y).shape == (8, 4, 32, 32)
    assert nn.LayerNorm(16, device="meta")(meta(2, 16)).shape == (2, 16)
    emb = nn.Embedding(100, 12, device="meta")
    assert emb(meta(4, 9, dtype=torch.int64)).shape == (4, 9, 12)
    assert F.cross_entropy(meta(4, 10), meta(4, dtype=torch.int64)).shape == ()
    assert F.mse_loss(meta(4, 3), meta(4, 3), reduction="none").shape == (4, 3)
    q = meta(2, 4, 6, 8)
    assert F.scaled_dot_product_attention(q, q, q, is_causal=True).shape == (2, 4, 6, 8)
    assert F.pad(meta(1, 2, 3), (1, 2)).shape == (1, 2, 6)
    assert F.interpolate(meta(1, 2, 4, 4), scale_factor=2).shape == (1, 2, 8, 8)
    assert F.dropout(meta(3, 3), 0.5).shape == (3, 3)


def test_a_whole_transformer_on_meta():
    with torch.device("meta"):
        model = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2)
    assert all(p.is_meta for p in model.parameters())
    n = sum(p.numel() for p in model.parameters())
    ref = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2)
    assert n == sum(p.numel() for p in ref.parameters())
    out = model(meta(3, 10, 64))
    assert out.shape == (3, 10, 64) and out.is_meta


# ----- modules: to("meta"), to_empty, load_state_dict(assign=True) ----------------------------


def test_module_to_meta_and_back():
    m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    names = [n for n, _ in m.named_parameters()] + [n for n, _ in m.named_buffers()]
    m.to("meta")
    assert all(p.is_meta for p in m.parameters()) and all(b.is_meta for b in m.buffers())
    assert [n for n, _ in m.named_parameters()] + [n for n, _ in m.named_buffers()] == names
    assert m(meta(5, 4)).shape == (5, 2)
    with pytest.raises(NotImplementedError, match="Module.to_empty\\(\\) instead"):
        m.to("cpu")
    m.to_empty(device="cpu")
    assert not any(p.is_meta for p in m.parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    ref = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    m.load_state_dict(ref.state_dict())
    x = torch.randn(5, 4)
    np.testing.assert_array_equal(m(x).detach().numpy(), ref(x).detach().numpy())


def test_meta_init_then_assign_load():
    ref = nn.Linear(3, 2)
    with torch.device("meta"):
        m = nn.Linear(3, 2)
    assert m.weight.is_meta
    with pytest.warns(UserWarning, match="copying from a non-meta parameter in the checkpoint"):
        m.load_state_dict(ref.state_dict())
    assert m.weight.is_meta  # copying into meta is a no-op, as in PyTorch
    m.load_state_dict(ref.state_dict(), assign=True)
    assert not m.weight.is_meta and isinstance(m.weight, nn.Parameter)
    x = torch.randn(4, 3)
    np.testing.assert_array_equal(m(x).detach().numpy(), ref(x).detach().numpy())


def test_meta_state_dict_and_deepcopy():
    m = nn.Linear(3, 2, device="meta")
    sd = m.state_dict()
    assert all(v.is_meta for v in sd.values()) and list(sd) == ["weight", "bias"]
    c = copy.deepcopy(m)
    assert c.weight.is_meta and c.weight is not m.weight and isinstance(c.weight, nn.Parameter)
    nn.init.kaiming_uniform_(m.weight)  # nothing to fill: a no-op, as in PyTorch
    nn.init.trunc_normal_(m.weight)
    assert m.weight.is_meta


# ----- the ensembling tutorial ----------------------------------------------------------------


def test_model_ensembling_recipe():
    # pytorch.org/tutorials/intermediate/ensembling.html, on the CPU and shrunk.
    class SimpleMLP(nn.Module):
        def __init__(self):
            super(SimpleMLP, self).__init__()  # noqa: UP008 - as the tutorial writes it
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 128)
            self.fc3 = nn.Linear(128, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.fc2(x)
            x = F.relu(x)
            x = self.fc3(x)
            return x

    device = "cpu"
    num_models = 10
    data = torch.randn(100, 64, 1, 28, 28, device=device)
    targets = torch.randint(10, (6400,), device=device)
    models = [SimpleMLP().to(device) for _ in range(num_models)]
    minibatches = data[:num_models]
    predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]
    minibatch = data[0]
    predictions2 = [model(minibatch) for model in models]

    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0])
    base_model = base_model.to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    print([p.size(0) for p in params.values()])  # show the leading 'num_models' dimension
    assert minibatches.shape == (num_models, 64, 1, 28, 28)
    predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
    assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop),
                          atol=1e-3, rtol=1e-5)  # fmt: skip
    predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
    assert targets.shape == (6400,)
    # The base model holds no data; the stacked parameters are new leaves.
    assert all(p.is_meta for p in base_model.parameters())
    assert all(p.shape[0] == num_models and p.requires_grad and p.is_leaf for p in params.values())
    loss = predictions1_vmap.sum()
    loss.backward()
    assert params["fc1.weight"].grad.shape == (num_models, 128, 784)


def test_stack_module_state_errors_and_buffers():
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        stack_module_state([])
    a, b = nn.Linear(2, 2), nn.Linear(2, 2).eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state([a, b])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([nn.Linear(2, 2), nn.Bilinear(2, 2, 2)])
    c = nn.Linear(2, 2)
    c.weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match="Expected weight from each model to have the same "
                                           ".requires_grad"):  # fmt: skip
        stack_module_state([a, c])
    bns = [nn.BatchNorm1d(3) for _ in range(4)]
    params, buffers = stack_module_state(bns)
    assert buffers["running_mean"].shape == (4, 3) and not buffers["running_mean"].requires_grad
    assert buffers["num_batches_tracked"].shape == (4,)
    np.testing.assert_array_equal(params["weight"].detach().numpy(), np.ones((4, 3)))
