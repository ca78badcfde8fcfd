"""An ordinary training script: mypy must accept it without an error."""

from __future__ import annotations

import io

import ferrograd as torch
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd import optim
from ferrograd.optim import lr_scheduler
from ferrograd.utils.data import DataLoader, TensorDataset, random_split


class Net(nn.Module):
    def __init__(self, n_classes: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.emb = nn.Embedding(10, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(4 * 4 * 4 + 16, n_classes)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn(self.conv(x)))
        h = F.max_pool2d(h, 2)
        h = torch.flatten(h, 1)
        seq, (h_n, c_n) = self.lstm(self.emb(tokens))
        h = torch.cat([h, seq[:, -1]], dim=1)
        return self.fc(self.drop(h))


def main() -> float:
    torch.manual_seed(0)
    x = torch.randn(32, 1, 8, 8)
    tokens = torch.randint(0, 10, (32, 5))
    y = torch.randint(0, 3, (32,))
    data = TensorDataset(x, tokens, y)
    train, val = random_split(data, [24, 8])
    loader = DataLoader(train, batch_size=8, shuffle=True)
    model = Net()
    opt = optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    sgd = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    total = 0.0
    model.train()
    for xb, tb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb, tb), yb)
        loss.backward()
        grad = model.fc.weight.grad
        if grad is not None:
            total += float(grad.abs().sum())
        opt.step()
        total += loss.item()
    sched.step()
    sgd.zero_grad(set_to_none=True)
    model.eval()
    with torch.no_grad():
        out = model(x[:4], tokens[:4])
        assert out.shape == (4, 3)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    model.load_state_dict(torch.load(buf))
    for name, p in model.named_parameters():
        assert p.requires_grad, name
    print(len(val), sched.get_last_lr())
    return total


if __name__ == "__main__":
    main()
