"""Misuses mypy must reject: each line marked ``# E: <code>`` is an error of that code."""

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd import optim
from ferrograd.utils.data import DataLoader, TensorDataset

x = torch.randn(2, 3)
F.relu("a")  # E: arg-type
nn.Linear("a", 3)  # E: arg-type
F.conv2d(x, x, padding=1.5)  # E: arg-type
F.cross_entropy(x, [0, 1])  # E: arg-type
F.max_pool2d(x, 2).missing_method()  # E: attr-defined
y: int = F.softmax(x, dim=1)  # E: assignment
x.tril_("1")  # E: arg-type
x.lerp_(x, "half")  # E: arg-type
w: torch.Tensor = nn.Linear(2, 2).bias  # E: assignment
nn.Conv2d(1, 2, 3, bias="yes")  # E: arg-type
optim.SGD(nn.Linear(2, 2).parameters(), lr="fast")  # E: arg-type
DataLoader(TensorDataset(x), batch_size="two")  # E: arg-type
nn.Linear(2, 2).train(mode="yes")  # E: arg-type
nn.init.zeros_([1.0, 2.0])  # E: arg-type
optim.Adam(nn.Linear(2, 2).parameters()).step(closure=3)  # E: call-overload
nn.LSTM(3, 4).forward(x, hx="h")  # E: call-overload
torch.tril(x, diagonal="0")  # E: arg-type
torch.manual_seed("seed")  # E: arg-type
torch.save(nn.Linear(2, 2).state_dict(), 3)  # E: arg-type
torch.flatten(x, start_dim="1")  # E: arg-type
