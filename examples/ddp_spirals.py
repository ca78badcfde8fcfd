"""examples/train_spirals.py, data-parallel: every process trains on its share of the
points and DistributedDataParallel averages the gradients, so all ranks keep one model.

    pip install mpi4py mpich
    python -m ferrograd.distributed.run -n 2 examples/ddp_spirals.py
"""

import numpy as np
from train_spirals import spirals

import ferrograd as fg
import ferrograd.distributed as dist
from ferrograd import nn
from ferrograd.distributed import DistributedSampler
from ferrograd.nn import functional as F
from ferrograd.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("mpi")
    fg.manual_seed(0)
    x_np, y_np = spirals()
    mine = np.array(list(DistributedSampler(x_np, shuffle=False)))
    x, y = fg.from_numpy(x_np[mine]), fg.from_numpy(y_np[mine])
    net = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))
    model = DDP(net)
    lr = 0.5
    for step in range(601):
        loss = F.cross_entropy(model(x), y)
        model.zero_grad()
        loss.backward()
        with fg.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        if step % 100 == 0 and dist.get_rank() == 0:
            with fg.no_grad():
                xa, ya = fg.from_numpy(x_np), fg.from_numpy(y_np)
                acc = (net(xa).argmax(dim=1) == ya).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
