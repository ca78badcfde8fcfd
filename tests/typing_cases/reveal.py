# ruff: noqa: F821  (reveal_type is known to mypy only)
"""Each ``reveal_type`` line's expected type is in its comment (tests/test_typing.py)."""

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd import optim
from ferrograd.optim import lr_scheduler
from ferrograd.utils.data import DataLoader, TensorDataset, random_split

x = torch.randn(2, 3)
lin = nn.Linear(3, 4)
conv = nn.Conv2d(1, 2, 3)
bn = nn.BatchNorm1d(4)
emb = nn.Embedding(5, 2)
lstm = nn.LSTM(3, 4)
reveal_type(lin.weight)  # ferrograd._C.Tensor
reveal_type(lin.bias)  # ferrograd._C.Tensor | None
reveal_type(lin.weight.grad)  # ferrograd._C.Tensor | None
reveal_type(lin.in_features)  # int
reveal_type(conv.weight)  # ferrograd._C.Tensor
reveal_type(conv.kernel_size)  # tuple[int, ...]
reveal_type(bn.running_mean)  # ferrograd._C.Tensor | None
reveal_type(emb.weight)  # ferrograd._C.Tensor
reveal_type(lstm.hidden_size)  # int
reveal_type(lin.forward(x))  # ferrograd._C.Tensor
reveal_type(lstm.forward(x))  # tuple[ferrograd._C.Tensor, ferrograd._C.Tensor | tuple[ferrograd._C.Tensor, ferrograd._C.Tensor]]
reveal_type(lin.parameters())  # typing.Iterator[ferrograd.nn.parameter.Parameter]
reveal_type(lin.named_parameters())  # typing.Iterator[tuple[str, ferrograd.nn.parameter.Parameter]]
reveal_type(lin.train())  # ferrograd.nn.modules.linear.Linear
reveal_type(lin.eval())  # ferrograd.nn.modules.linear.Linear
reveal_type(lin.to(torch.float64))  # ferrograd.nn.modules.linear.Linear
reveal_type(lin.state_dict())  # dict[str, Any]
reveal_type(lin.undeclared)  # ferrograd._C.Tensor | ferrograd.nn.modules.module.Module
reveal_type(F.relu(x))  # ferrograd._C.Tensor
reveal_type(F.cross_entropy(x, torch.tensor([0, 1])))  # ferrograd._C.Tensor
reveal_type(F.max_pool2d(x, 2))  # ferrograd._C.Tensor
reveal_type(F.max_pool2d(x, 2, return_indices=True))  # tuple[ferrograd._C.Tensor, ferrograd._C.Tensor]
reveal_type(F.conv2d(x, conv.weight))  # ferrograd._C.Tensor
reveal_type(x.lerp_(x, 0.5))  # ferrograd._C.Tensor
reveal_type(x.tril_(1))  # ferrograd._C.Tensor
reveal_type(x.to(torch.float64))  # ferrograd._C.Tensor
reveal_type(x.cummax(0))  # tuple[ferrograd._C.Tensor, ferrograd._C.Tensor]
reveal_type(x.element_size())  # int
opt = optim.Adam(lin.parameters(), lr=1e-3)
reveal_type(opt.param_groups)  # list[dict[str, Any]]
sched = lr_scheduler.StepLR(opt, step_size=2)
reveal_type(sched.get_last_lr())  # list[float | ferrograd._C.Tensor]
ds = TensorDataset(x, x)
reveal_type(ds[0])  # tuple[ferrograd._C.Tensor, ...]
reveal_type(len(DataLoader(ds, batch_size=2)))  # int
seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
reveal_type(seq[0])  # ferrograd.nn.modules.module.Module
reveal_type(seq[1:])  # ferrograd.nn.modules.container.Sequential
reveal_type(nn.ModuleList([lin]).append(conv))  # ferrograd.nn.modules.container.ModuleList
reveal_type(random_split(ds, [1, 1]))  # list[ferrograd.utils.data.dataset.Subset[tuple[ferrograd._C.Tensor, ...]]]
reveal_type(opt.step())  # None


def closure() -> torch.Tensor:
    return lin(x).sum()


reveal_type(opt.step(closure))  # ferrograd._C.Tensor
reveal_type(nn.init.kaiming_uniform_(lin.weight, a=5**0.5))  # ferrograd._C.Tensor
reveal_type(nn.utils.clip_grad_norm_(lin.parameters(), 1.0))  # ferrograd._C.Tensor
reveal_type(nn.Parameter(x))  # ferrograd.nn.parameter.Parameter
reveal_type(nn.MaxPool2d(2).forward(x))  # ferrograd._C.Tensor | tuple[ferrograd._C.Tensor, ferrograd._C.Tensor]
reveal_type(torch.tril(x))  # ferrograd._C.Tensor
reveal_type(torch.unique(x))  # ferrograd._C.Tensor
reveal_type(torch.unique(x, return_counts=True))  # ferrograd._C.Tensor | tuple[ferrograd._C.Tensor, ...]
reveal_type(torch.addmm(x, x, x, beta=0.5))  # ferrograd._C.Tensor
reveal_type(torch.manual_seed(0))  # ferrograd._C.Generator
reveal_type(torch.flatten(x, 1))  # ferrograd._C.Tensor
reveal_type(torch.zeros_like(x, dtype=torch.float64))  # ferrograd._C.Tensor
reveal_type(torch.sum(x, dim=(0, 1)))  # ferrograd._C.Tensor
reveal_type(torch.save(lin.state_dict(), "w.pt"))  # None
reveal_type(torch.conv2d(x, x, padding=1))  # ferrograd._C.Tensor
reveal_type(torch.dropout(x, 0.5, True))  # ferrograd._C.Tensor
reveal_type(torch.layer_norm(x, [2]))  # ferrograd._C.Tensor
reveal_type(torch.relu_(x))  # ferrograd._C.Tensor
reveal_type(torch.embedding(x, x))  # ferrograd._C.Tensor
reveal_type(torch.adaptive_max_pool1d(x, 2))  # tuple[ferrograd._C.Tensor, ferrograd._C.Tensor]
reveal_type(torch.det(x))  # ferrograd._C.Tensor
reveal_type(torch.svd(x))  # tuple[ferrograd._C.Tensor, ferrograd._C.Tensor, ferrograd._C.Tensor]
reveal_type(torch.qr(x, some=False))  # tuple[ferrograd._C.Tensor, ferrograd._C.Tensor]
reveal_type(torch.is_autocast_enabled("cpu"))  # bool
reveal_type(torch.get_autocast_dtype("cpu"))  # ferrograd._C.dtype
reveal_type(torch.get_default_device())  # ferrograd._device.device
reveal_type(torch.are_deterministic_algorithms_enabled())  # bool
reveal_type(torch.set_printoptions(precision=3))  # None
reveal_type(torch.vmap(torch.sum))  # def (*Any, **Any) -> Any
reveal_type(torch.get_num_interop_threads())  # int
