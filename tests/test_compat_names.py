"""Small PyTorch names copied training code touches: each does what PyTorch does
on a machine without a GPU, or what its name promises on the CPU."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ferrograd as torch
import ferrograd.nn as nn

# ----- backends and precision switches ------------------------------------------------------


def test_backends_tf32_switches_are_settable():
    # nanoGPT's train.py
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        assert torch.backends.cuda.matmul.allow_tf32 is True
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old
    # PyTorch's defaults: TF32 off for matmul, on for cuDNN.
    assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 is True
    assert torch.backends.cuda.is_built() is False
    with torch.backends.cuda.sdp_kernel(enable_flash=False):
        assert not torch.backends.cuda.flash_sdp_enabled()
    assert torch.backends.cuda.flash_sdp_enabled()


def test_float32_matmul_precision():
    assert torch.get_float32_matmul_precision() == "highest"
    a = torch.randn(64, 64)
    before = (a @ a).numpy()
    try:
        torch.set_float32_matmul_precision("high")
        assert torch.get_float32_matmul_precision() == "high"
        # Products stay full float32 whatever the setting.
        np.testing.assert_array_equal((a @ a).numpy(), before)
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            torch.set_float32_matmul_precision("bogus")
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")


def test_interop_threads():
    old = torch.get_num_interop_threads()
    assert old >= 1
    torch.set_num_interop_threads(3)
    assert torch.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="Expected positive number of threads"):
        torch.set_num_interop_threads(0)
    with pytest.raises(TypeError):
        torch.set_num_interop_threads(1.5)
    torch.set_num_interop_threads(old)


# ----- deprecated names -----------------------------------------------------------------------


def test_range_is_inclusive_and_deprecated():
    with pytest.warns(UserWarning, match="range is deprecated"):
        r = torch.range(1, 4)
    assert r.dtype == torch.get_default_dtype()
    assert r.tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.warns(UserWarning):
        r = torch.range(0, 1, 0.25)
    np.testing.assert_allclose(r.numpy(), np.arange(0, 1.0001, 0.25))
    with pytest.warns(UserWarning):
        r = torch.range(5, 1, -2, dtype=torch.int64)
    assert r.tolist() == [5, 3, 1] and r.dtype == torch.int64
    with pytest.warns(UserWarning):
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            torch.range(0, 3, 0)


def test_clip_grad_norm_deprecated_alias():
    p = nn.Parameter(torch.tensor([3.0, 4.0]))
    p.grad = torch.tensor([3.0, 4.0])
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = nn.utils.clip_grad_norm([p], 1.0)
    assert float(total) == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_variable():
    from ferrograd.autograd import Variable

    t = torch.ones(3)
    v = Variable(t, requires_grad=True)
    assert type(v) is torch.Tensor and v.requires_grad and v.is_leaf
    assert isinstance(t, Variable) and isinstance(nn.Parameter(t), Variable)
    assert not isinstance(3, Variable)
    (v * 2).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [2.0, 2.0, 2.0])
    # Shares memory (a detached alias), as PyTorch's.
    v.data[0] = 5.0
    assert float(t[0]) == 5.0
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(t, volatile=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])
    assert Variable().shape == (0,)


# ----- memory formats -------------------------------------------------------------------------


def test_memory_formats():
    x = torch.randn(2, 3, 4, 5)
    assert repr(torch.channels_last) == "ferrograd.channels_last"
    y = x.to(memory_format=torch.channels_last)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    z = x.contiguous(memory_format=torch.channels_last)
    np.testing.assert_array_equal(z.numpy(), x.numpy())
    assert x.is_contiguous() and x.is_contiguous(memory_format=torch.contiguous_format)
    assert not x.is_contiguous(memory_format=torch.channels_last)
    # A tensor whose memory is channels-last by construction is recognised.
    nhwc = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    assert nhwc.is_contiguous(memory_format=torch.channels_last)
    assert not nhwc.is_contiguous()
    assert not x.is_contiguous(memory_format=torch.channels_last_3d)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.ones(2, 3).to(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor"):
        torch.ones(2, 3).contiguous(memory_format=torch.channels_last)
    e = torch.empty(2, 3, 4, 5, memory_format=torch.channels_last)
    assert e.shape == (2, 3, 4, 5)
    assert torch.empty_like(x, memory_format=torch.preserve_format).shape == x.shape
    m = nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
    assert m(y).shape == (2, 4, 2, 3)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")


# ----- pinned memory and cuda memory queries --------------------------------------------------


def test_pin_memory_is_the_tensor():
    x = torch.ones(3)
    assert x.pin_memory() is x
    assert x.is_pinned() is False
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)),
                                         batch_size=2, pin_memory=True)  # fmt: skip
    assert [b[0].shape for b in loader] == [(2, 2), (2, 2)]


def test_cuda_queries_without_a_gpu():
    c = torch.cuda
    assert c.is_available() is False and c.device_count() == 0
    for fn in (c.memory_allocated, c.max_memory_allocated, c.memory_reserved,
               c.max_memory_reserved, c.memory_cached, c.max_memory_cached):  # fmt: skip
        assert fn() == 0 and fn(0) == 0
    assert c.memory_stats() == {}
    assert "no CUDA" in c.memory_summary()
    c.reset_peak_memory_stats()
    c.reset_max_memory_allocated()
    c.empty_cache()
    c.ipc_collect()
    assert c.is_bf16_supported() is False
    for fn in (c.get_device_name, c.get_device_properties, c.get_device_capability,
               c.mem_get_info, c.synchronize):  # fmt: skip
        with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
            fn()
    with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
        c.get_device_name(0)
    with pytest.raises(RuntimeError, match="ferrograd has no CUDA support"):
        c.set_device(0)


# ----- hub ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["load", "list", "help", "load_state_dict_from_url",
                                  "download_url_to_file", "get_dir", "set_dir"])  # fmt: skip
def test_hub_refuses_clearly(name):
    with pytest.raises(RuntimeError, match=rf"ferrograd\.hub\.{name}\(\) is not supported"):
        getattr(torch.hub, name)("pytorch/vision", "resnet18")


# ----- top-level names ------------------------------------------------------------------------


def test_names_exist_with_pytorch_spelling():
    for name in ("range", "set_float32_matmul_precision", "get_float32_matmul_precision",
                 "get_num_interop_threads", "set_num_interop_threads", "channels_last",
                 "contiguous_format", "preserve_format", "channels_last_3d", "memory_format",
                 "jit", "hub", "set_default_device", "get_default_device"):  # fmt: skip
        assert hasattr(torch, name), name
        assert name in torch.__all__, name
    assert callable(torch.autograd.Variable)
    assert callable(torch.nn.utils.clip_grad_norm)
    assert math.isclose(torch.tensor(0.5).__format__(".1f").__len__(), 3)


def test_tensor_copy_construct_warns():
    t = torch.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match=r"To copy construct from a tensor, it is recommended"):
        c = torch.tensor(t)
    assert not c.requires_grad
    np.testing.assert_array_equal(c.numpy(), [1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.tensor([1.0, 2.0])
        torch.as_tensor(t)
