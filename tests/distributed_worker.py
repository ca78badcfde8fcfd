"""Run by tests/test_distributed.py under ``mpiexec -n N``; one mode per launch.

Every rank checks its own results against NumPy references built from data that each
rank can recompute for every other rank; a failed check raises, which (through the
excepthook init_process_group installs) aborts the job with a non-zero status.
"""

from __future__ import annotations

import sys
import time
from datetime import timedelta

import numpy as np

import ferrograd as torch
import ferrograd.distributed as dist
from ferrograd import nn
from ferrograd.nn.parallel import DistributedDataParallel as DDP


def data(r, shape=(3, 4), dtype=np.float64):
    n = int(np.prod(shape))
    return ((np.arange(n).reshape(shape) % 7) * (r + 1) + r - 2).astype(dtype)


def check_collectives(rank, world):
    all_data = {dt: [data(r, dtype=dt) for r in range(world)] for dt in (np.float32, np.float64, np.int64)}
    refs = {
        dist.ReduceOp.SUM: lambda xs: np.sum(xs, axis=0),
        dist.ReduceOp.PRODUCT: lambda xs: np.prod(xs, axis=0),
        dist.ReduceOp.MAX: lambda xs: np.max(xs, axis=0),
        dist.ReduceOp.MIN: lambda xs: np.min(xs, axis=0),
        dist.ReduceOp.AVG: lambda xs: np.sum(xs, axis=0) / world,
    }
    for dt, xs in all_data.items():
        for op, ref in refs.items():
            if op == dist.ReduceOp.AVG and dt == np.int64:
                continue
            t = torch.from_numpy(xs[rank].copy())
            v = t._version
            dist.all_reduce(t, op=op)
            np.testing.assert_allclose(t.numpy(), ref(np.stack(xs)).astype(dt), rtol=1e-6)
            assert t._version > v, "all_reduce must bump the version counter"

    # The narrow integers go as their own MPI types (wrapping as NumPy's); float16 and
    # bfloat16 as float32, summed there and rounded once.
    for dt, npdt in ((torch.int32, np.int32), (torch.int16, np.int16), (torch.int8, np.int8),
                     (torch.uint8, np.uint8)):  # fmt: skip
        xs = [data(r, dtype=np.int64) for r in range(world)]
        t = torch.from_numpy(xs[rank].astype(npdt))
        dist.all_reduce(t)
        with np.errstate(over="ignore"):
            want = np.sum(np.stack(xs), axis=0).astype(npdt)
        assert t.dtype == dt
        np.testing.assert_array_equal(t.numpy(), want)
    for dt in (torch.float16, torch.bfloat16):
        xs = [data(r, dtype=np.float32) / 8 for r in range(world)]
        t = torch.from_numpy(xs[rank].copy()).to(dt)
        v = t._version
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        want = torch.from_numpy(np.sum(np.stack([x.astype(np.float32) for x in xs]), 0) / world)
        assert t.dtype == dt and t._version > v
        np.testing.assert_array_equal(t.float().numpy(), want.to(dt).float().numpy())
        b = torch.full((3,), float(rank), dtype=dt)
        dist.broadcast(b, src=0)
        assert b.tolist() == [0.0, 0.0, 0.0]

    # Bools reduce as logical or (SUM, MAX) and logical and (PRODUCT, MIN).
    bools = [np.array([r == 0, True, False, r % 2 == 1]) for r in range(world)]
    for op, ref in ((dist.ReduceOp.SUM, np.any), (dist.ReduceOp.MIN, np.all),
                    (dist.ReduceOp.PRODUCT, np.all), (dist.ReduceOp.MAX, np.any)):
        t = torch.from_numpy(bools[rank].copy())
        dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(t.numpy(), ref(np.stack(bools), axis=0))
    t = torch.tensor(float(rank + 1))
    dist.all_reduce(t)
    assert t.item() == world * (world + 1) / 2

    # The sampler reads the rank and world size from the process group.
    s = dist.DistributedSampler(range(10), shuffle=False)
    assert (s.num_replicas, s.rank) == (world, rank)
    assert list(s) == [i % 10 for i in range(rank, s.total_size, world)]

    # A non-contiguous tensor is reduced through a staging copy and written back.
    base = torch.from_numpy(all_data[np.float64][rank].copy())
    tt = base.t()
    assert not tt.is_contiguous()
    dist.all_reduce(tt)
    np.testing.assert_allclose(base.numpy(), np.sum(all_data[np.float64], axis=0))

    # async_op: a Work handle whose wait() leaves the result in place.
    t = torch.from_numpy(all_data[np.float32][rank].copy())
    work = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
    work.wait()
    assert work.is_completed()
    np.testing.assert_array_equal(t.numpy(), np.max(all_data[np.float32], axis=0))

    # A tensor saved for backward and then overwritten by a collective is caught.
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    dist.all_reduce(w)
    np.testing.assert_array_equal(w.detach().numpy(), [world * 1.0, world * 2.0])
    try:
        y.backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), str(e)
    else:
        raise AssertionError("backward through a tensor overwritten by all_reduce must fail")

    src = world - 1
    t = torch.from_numpy(data(rank))
    dist.broadcast(t, src=src)
    np.testing.assert_array_equal(t.numpy(), data(src))

    outs = [torch.zeros(3, 4, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(outs, torch.from_numpy(data(rank)))
    for r in range(world):
        np.testing.assert_array_equal(outs[r].numpy(), data(r))

    out = torch.zeros(world * 3, 4, dtype=torch.float64)
    dist.all_gather_into_tensor(out, torch.from_numpy(data(rank)))
    np.testing.assert_array_equal(out.numpy(), np.concatenate([data(r) for r in range(world)]))

    # reduce_scatter: rank r ends with sum over ranks q of input_list_q[r].
    def inputs(q):
        return [data(q * world + r, shape=(2, 3)) for r in range(world)]

    o = torch.zeros(2, 3, dtype=torch.float64)
    dist.reduce_scatter(o, [torch.from_numpy(a) for a in inputs(rank)])
    np.testing.assert_array_equal(o.numpy(), sum(inputs(q)[rank] for q in range(world)))
    o = torch.zeros(2, 3, dtype=torch.float64)
    dist.reduce_scatter_tensor(
        o, torch.from_numpy(np.concatenate(inputs(rank))), op=dist.ReduceOp.AVG
    )
    np.testing.assert_allclose(o.numpy(), sum(inputs(q)[rank] for q in range(world)) / world)

    gl = [torch.zeros(3, 4, dtype=torch.float64) for _ in range(world)] if rank == 0 else None
    dist.gather(torch.from_numpy(data(rank)), gl, dst=0)
    if rank == 0:
        for r in range(world):
            np.testing.assert_array_equal(gl[r].numpy(), data(r))
    t = torch.zeros(3, 4, dtype=torch.float64)
    sl = [torch.from_numpy(data(10 + r)) for r in range(world)] if rank == 1 else None
    dist.scatter(t, sl, src=1)
    np.testing.assert_array_equal(t.numpy(), data(10 + rank))
    dist.barrier()
    dist.barrier(async_op=True).wait()
    check_async(rank, world)


def check_async(rank, world):
    # Every collective with async_op=True returns a Work whose wait() leaves the result
    # in the output tensors, the same as the blocking call.
    t = torch.from_numpy(data(rank))
    work = dist.broadcast(t, src=0, async_op=True)
    assert work.wait() is True and work.is_completed()
    np.testing.assert_array_equal(t.numpy(), data(0))

    outs = [torch.zeros(3, 4, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(outs, torch.from_numpy(data(rank)), async_op=True).wait()
    for r in range(world):
        np.testing.assert_array_equal(outs[r].numpy(), data(r))

    out = torch.zeros(world * 3, 4, dtype=torch.float64)
    dist.all_gather_into_tensor(out, torch.from_numpy(data(rank)), async_op=True).wait()
    np.testing.assert_array_equal(out.numpy(), np.concatenate([data(r) for r in range(world)]))

    def inputs(q):
        return [data(q * world + r, shape=(2, 3)) for r in range(world)]

    o = torch.zeros(2, 3, dtype=torch.float64)
    dist.reduce_scatter(
        o, [torch.from_numpy(a) for a in inputs(rank)], op=dist.ReduceOp.MIN, async_op=True
    ).wait()
    np.testing.assert_array_equal(o.numpy(), np.min([inputs(q)[rank] for q in range(world)], axis=0))
    o = torch.zeros(2, 3, dtype=torch.float64)
    dist.reduce_scatter_tensor(
        o, torch.from_numpy(np.concatenate(inputs(rank))), async_op=True
    ).wait()
    np.testing.assert_array_equal(o.numpy(), sum(inputs(q)[rank] for q in range(world)))

    gl = [torch.zeros(3, 4, dtype=torch.float64) for _ in range(world)] if rank == 0 else None
    dist.gather(torch.from_numpy(data(rank)), gl, dst=0, async_op=True).wait()
    if rank == 0:
        for r in range(world):
            np.testing.assert_array_equal(gl[r].numpy(), data(r))
    t = torch.zeros(3, 4, dtype=torch.float64)
    sl = [torch.from_numpy(data(20 + r)) for r in range(world)] if rank == 0 else None
    dist.scatter(t, sl, src=0, async_op=True).wait()
    np.testing.assert_array_equal(t.numpy(), data(20 + rank))

    # Several in flight at once, finished in reverse order.
    a = torch.from_numpy(data(rank))
    b = torch.from_numpy(data(rank, dtype=np.float32))
    wa = dist.all_reduce(a, async_op=True)
    wb = dist.all_reduce(b, op=dist.ReduceOp.AVG, async_op=True)
    wb.wait()
    wa.wait()
    np.testing.assert_array_equal(a.numpy(), np.sum([data(r) for r in range(world)], axis=0))
    np.testing.assert_allclose(
        b.numpy(), np.sum([data(r, dtype=np.float32) for r in range(world)], axis=0) / world,
        rtol=1e-6,
    )


def check_gil_released(rank, world):
    # The tensor's own memory is what MPI is handed (no copy through Python objects).
    from ferrograd.distributed._buffers import _Buf

    t = torch.zeros(1000)
    assert np.shares_memory(_Buf(t).arr, t.numpy())
    # Rank 0 enters all_reduce while the last rank sleeps; a Python thread on rank 0 can
    # only count meanwhile if the GIL is released during the communication.
    import threading

    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    th = threading.Thread(target=spin)
    rate = None
    if rank == 0:
        th.start()
        time.sleep(0.05)
        # The thread's pace while the main thread sleeps (GIL free).
        c0, t0 = count[0], time.perf_counter()
        time.sleep(0.1)
        rate = (count[0] - c0) / (time.perf_counter() - t0)
    if rank == world - 1:
        time.sleep(0.8)
    before = count[0]
    t0 = time.perf_counter()
    x = torch.full((100_000,), float(rank + 1))
    dist.all_reduce(x)
    waited = time.perf_counter() - t0
    during = count[0] - before
    stop.set()
    if rank == 0:
        th.join()
        assert waited > 0.4, waited
        # Held GIL: the thread could run one switch interval (5 ms) at most; require a
        # tenth of the wait's worth of its pace, leaving room for a loaded machine.
        assert during > 0.1 * rate * waited, (during, rate, waited)
    np.testing.assert_array_equal(x.numpy(), np.full(100_000, world * (world + 1) / 2, np.float32))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3))
        self.register_buffer("stat", torch.zeros(3))

    def forward(self, x):
        return self.net(x)


def batch(step, n=12):
    rng = np.random.default_rng(step)
    return (
        torch.from_numpy(rng.standard_normal((n, 5)).astype(np.float32)),
        torch.from_numpy(rng.standard_normal((n, 3)).astype(np.float32)),
    )


def loss_fn(model, x, y):
    return ((model(x) - y) ** 2).mean()


def sgd(model, lr=0.1):
    with torch.no_grad():
        for p in model.parameters():
            p.sub_(p.grad * lr)
            p.grad = None


def fresh(seed=0):
    torch.manual_seed(seed)
    return MLP()


def params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def check_ddp(rank, world, deterministic, bucket_cap_mb, steps=20):
    model = fresh()
    if rank != 0:
        # Construction must overwrite these with rank 0's values.
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
        model.stat.fill_(float(rank))
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb, deterministic=deterministic)
    assert ddp.module is model
    np.testing.assert_array_equal(model.stat.numpy(), np.zeros(3, np.float32))
    ref = fresh()
    full = fresh()
    n = 12 // world
    for step in range(steps):
        x, y = batch(step)
        loss_fn(ddp, x[rank * n : (rank + 1) * n], y[rank * n : (rank + 1) * n]).backward()
        # The reference: one process, every rank's shard in rank order, gradients summed
        # in that order and divided by the world size.
        acc = None
        for r in range(world):
            loss_fn(ref, x[r * n : (r + 1) * n], y[r * n : (r + 1) * n]).backward()
            g = [p.grad.numpy().copy() for p in ref.parameters()]
            acc = g if acc is None else [a + b for a, b in zip(acc, g)]
            ref.zero_grad()
        for p, a in zip(ref.parameters(), acc):
            p.grad = torch.from_numpy(a / np.float32(world))
        loss_fn(full, x, y).backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            if deterministic:
                assert np.array_equal(p.grad.numpy(), q.grad.numpy()), f"step {step}"
            else:
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
        sgd(model)
        sgd(ref)
        sgd(full)
    for a, b, c in zip(params(model), params(ref), params(full)):
        if deterministic:
            assert a.tobytes() == b.tobytes(), "deterministic DDP must match bit for bit"
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        # One process on the whole global batch (a mean over all 12 samples).
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


def check_overlap(rank, world):
    # Buckets start from post-accumulate hooks while backward runs: when the first
    # layer's node is about to run, the last layer's bucket is already in flight.
    model = fresh()
    ddp = DDP(model, bucket_cap_mb=0.0002)
    assert len(ddp._buckets) >= 2
    seen = []

    def on_first_layer(m, inputs, out):
        out.grad_fn.register_prehook(
            lambda go: seen.append((ddp._next_launch, ddp._buckets[0].request is not None))
        )

    h = model.net[0].register_forward_hook(on_first_layer)
    x, y = batch(0)
    loss_fn(ddp, x, y).backward()
    h.remove()
    assert seen and seen[0][0] >= 1 and seen[0][1], seen
    assert ddp._next_launch == len(ddp._buckets)
    assert all(b.request is None for b in ddp._buckets)
    for p in model.parameters():
        assert p.grad is not None


def check_no_sync(rank, world):
    model = fresh()
    ddp = DDP(model, deterministic=True, bucket_cap_mb=0.0002)
    ref = fresh()
    x, y = batch(99, n=4 * world)
    shard = [slice((2 * r) * 2, (2 * r + 1) * 2) for r in range(world)]
    shard2 = [slice((2 * r + 1) * 2, (2 * r + 2) * 2) for r in range(world)]
    with ddp.no_sync():
        loss_fn(ddp, x[shard[rank]], y[shard[rank]]).backward()
    local = [p.grad.numpy().copy() for p in model.parameters()]
    loss_fn(ref, x[shard[rank]], y[shard[rank]]).backward()
    for a, p in zip(local, ref.parameters()):
        assert np.array_equal(a, p.grad.numpy()), "no_sync must not communicate"
    ref.zero_grad()
    kept = [p.grad for p in model.parameters()]
    loss_fn(ddp, x[shard2[rank]], y[shard2[rank]]).backward()
    # The accumulated .grad tensors are written in place, as the engine's accumulation does.
    assert all(p.grad is k for p, k in zip(model.parameters(), kept))
    acc = None
    for r in range(world):
        loss_fn(ref, x[shard[r]], y[shard[r]]).backward()
        loss_fn(ref, x[shard2[r]], y[shard2[r]]).backward()
        g = [p.grad.numpy().copy() for p in ref.parameters()]
        acc = g if acc is None else [a + b for a, b in zip(acc, g)]
        ref.zero_grad()
    for p, a in zip(model.parameters(), acc):
        assert np.array_equal(p.grad.numpy(), a / np.float32(world))


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 2)
        self.b = nn.Linear(4, 2)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0.0)


def check_unused(rank, world):
    torch.manual_seed(1)
    m = Branchy()
    ddp = DDP(m, find_unused_parameters=True, bucket_cap_mb=0.00001)
    x = torch.ones(2, 4) * (rank + 1)
    # b is used on rank 0 only: its gradient is rank 0's divided by the world size.
    ddp(x, use_b=(rank == 0)).sum().backward()
    ga = np.full((2, 4), 2.0 * sum(r + 1 for r in range(world)) / world, np.float32)
    np.testing.assert_allclose(m.a.weight.grad.numpy(), ga, rtol=1e-6)
    np.testing.assert_allclose(m.b.weight.grad.numpy(), np.full((2, 4), 2.0 / world), rtol=1e-6)
    m.zero_grad()
    # Unused everywhere: the gradient stays None, as PyTorch leaves it.
    ddp(x, use_b=False).sum().backward()
    assert m.b.weight.grad is None and m.a.weight.grad is not None

    # A second backward through the same forward would desynchronise the ranks.
    m.zero_grad()
    out = ddp(x, use_b=True).sum()
    out.backward(retain_graph=True)
    kept = m.a.weight.grad.numpy().copy()
    try:
        out.backward()
    except RuntimeError as e:
        assert "Expected to mark a variable ready only once" in str(e)
    else:
        raise AssertionError("a second backward must be refused")
    assert np.array_equal(m.a.weight.grad.numpy(), kept)

    # A forward that never goes through backward (evaluating with grad mode on) is fine.
    ddp(x, use_b=True)
    ddp(x, use_b=True).sum().backward()
    assert m.b.weight.grad is not None

    torch.manual_seed(1)
    strict = DDP(Branchy())
    strict(x, use_b=True)
    strict(x, use_b=False).sum().backward()
    try:
        strict(x, use_b=False)
    except RuntimeError as e:
        assert "Expected to have finished reduction" in str(e)
    else:
        raise AssertionError("an unfinished reduction must be reported at the next forward")


def check_bucket_view(rank, world):
    # gradient_as_bucket_view=True must give the default mode's gradients and parameters
    # bit for bit, whether .grad is set to None between steps (copied into the bucket,
    # then a view again), zeroed in place (backward accumulates into the bucket), or
    # accumulated over a no_sync() backward.
    n = 12 // world

    def run(view, deterministic, regime, steps=6):
        model = fresh()
        ddp = DDP(
            model, bucket_cap_mb=0.0005, deterministic=deterministic, gradient_as_bucket_view=view
        )
        grads, kept = [], None
        for step in range(steps):
            x, y = batch(step)
            xs, ys = x[rank * n : (rank + 1) * n], y[rank * n : (rank + 1) * n]
            if regime == "no_sync" and step % 2 == 0:
                with ddp.no_sync():
                    loss_fn(ddp, xs, ys).backward()
                continue
            loss_fn(ddp, xs, ys).backward()
            grads.append([p.grad.numpy().copy() for p in model.parameters()])
            if view:
                for p in model.parameters():
                    assert any(
                        v is not None and p.grad.data_ptr() == v.data_ptr()
                        for b in ddp._buckets
                        for v in b.views
                    ), "each .grad must be a view of its bucket"
                if regime != "none":
                    # Zeroed in place, the views stay: the same tensors every step.
                    now = [p.grad for p in model.parameters()]
                    assert kept is None or all(a is b for a, b in zip(now, kept))
                    kept = now
            with torch.no_grad():
                for p in model.parameters():
                    p.sub_(p.grad * 0.1)
            model.zero_grad(set_to_none=(regime == "none"))
        return grads, params(model)

    for deterministic in (True, False):
        for regime in ("none", "zeros", "no_sync"):
            g0, p0 = run(False, deterministic, regime)
            g1, p1 = run(True, deterministic, regime)
            for s0, s1 in zip(g0, g1):
                assert all(a.tobytes() == b.tobytes() for a, b in zip(s0, s1)), regime
            assert all(a.tobytes() == b.tobytes() for a, b in zip(p0, p1)), regime

    # A parameter unused on every rank keeps its .grad untouched, as in the default mode.
    def unused(view):
        torch.manual_seed(1)
        m = Branchy()
        ddp = DDP(m, find_unused_parameters=True, gradient_as_bucket_view=view)
        x = torch.ones(2, 4) * (rank + 1)
        ddp(x, use_b=True).sum().backward()
        # Now different on each rank: an unused parameter's .grad must keep this rank's.
        with torch.no_grad():
            m.b.weight.grad.mul_(rank + 1.0)
        ddp(x * 0.5, use_b=False).sum().backward()  # accumulates: no zero_grad between
        got = [m.a.weight.grad.numpy().copy(), m.b.weight.grad.numpy().copy()]
        # Used on rank 0 only: every rank gets the average, unused ones too.
        ddp(x * 0.25, use_b=(rank == 0)).sum().backward()
        return got + [m.a.weight.grad.numpy().copy(), m.b.weight.grad.numpy().copy()]

    assert all(a.tobytes() == b.tobytes() for a, b in zip(unused(False), unused(True)))


def train_steps(ddp, opt, rank, world, steps):
    n = 12 // world
    for step in steps:
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(ddp, x[rank * n : (rank + 1) * n], y[rank * n : (rank + 1) * n]).backward()
        opt.step()


def momentum_sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def check_checkpoint(rank, world, phase, path):
    # Phase "save" trains steps 0-4 and rank 0 saves the DDP state_dict and the
    # optimizer's momentum with ferrograd.save; phase "resume", run with another number
    # of processes, loads the model on rank 0 only (the other ranks start from different
    # values and get rank 0's through DDP's broadcast) and the optimizer state on every
    # rank, then trains steps 5-9. The result must match one process training steps 0-9
    # on the whole batch.
    if phase == "save":
        model = fresh()
        ddp = DDP(model)
        opt = momentum_sgd(model)
        train_steps(ddp, opt, rank, world, range(5))
        if rank == 0:
            torch.save({"model": ddp.state_dict(), "optim": opt.state_dict()}, path)
        return
    ckpt = torch.load(path)
    # PyTorch's layout: the wrapped module's entries under "module.".
    assert sorted(ckpt["model"]) == sorted("module." + k for k in fresh().state_dict())
    model = fresh(seed=7 + rank)
    if rank == 0:
        model.load_state_dict({k[len("module."):]: v for k, v in ckpt["model"].items()})
    ddp = DDP(model)
    opt = momentum_sgd(model)
    opt.load_state_dict(ckpt["optim"])
    train_steps(ddp, opt, rank, world, range(5, 10))
    full = fresh()
    opt_full = momentum_sgd(full)
    for step in range(10):
        x, y = batch(step)
        opt_full.zero_grad()
        loss_fn(full, x, y).backward()
        opt_full.step()
    for a, c in zip(params(model), params(full)):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


def check_join(rank, world, divide, bucket_cap_mb, deterministic=False, find_unused=False):
    # Rank r has 2 + r batches (uneven). Under ddp.join(), a rank that ran out shadows the
    # others' reductions with zeros: at step i the gradient is the sum over the ranks that
    # still have a batch, divided by the world size (divide=True) or by their number.
    # Afterwards every rank holds the model of the last rank to finish.
    counts = [2 + r for r in range(world)]
    model = Counting()
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb, deterministic=deterministic,
              find_unused_parameters=find_unused)  # fmt: skip
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with ddp.join(divide_by_initial_world_size=divide):
        for step in range(counts[rank]):
            x, y = batch(step, n=3 * world)
            opt.zero_grad()
            loss_fn(ddp, x[3 * rank : 3 * rank + 3], y[3 * rank : 3 * rank + 3]).backward()
            opt.step()
    ref = Counting()
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(max(counts)):
        x, y = batch(step, n=3 * world)
        active = [r for r in range(world) if counts[r] > step]
        acc = None
        for r in active:
            ref.zero_grad()
            loss_fn(ref, x[3 * r : 3 * r + 3], y[3 * r : 3 * r + 3]).backward()
            g = [p.grad.numpy().copy() for p in ref.parameters()]
            acc = g if acc is None else [a + b for a, b in zip(acc, g)]
        div = np.float32(world if divide else len(active))
        for p, a in zip(ref.parameters(), acc):
            p.grad = torch.from_numpy(a / div)
        ropt.step()
    for a, b in zip(params(model), params(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # The buffer counts forwards; it came from an active rank each step (rank 0 stopped
    # early), then from the last joiner: the longest run's count everywhere.
    assert model.steps.item() == max(counts), (model.steps.item(), counts)
    # After the block, forward no longer takes part in a join.
    x, y = batch(99)
    loss_fn(ddp, x[:3], y[:3]).backward()


class Counting(MLP):
    """An MLP whose buffer counts its forwards (broadcast from an active rank by DDP)."""

    def __init__(self):
        torch.manual_seed(5)
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        with torch.no_grad():
            self.steps.add_(1.0)
        return self.net(x)


def check_join_throw(rank, world):
    model = MLP()
    ddp = DDP(model)
    try:
        with ddp.join(throw_on_early_termination=True):
            for step in range(1 + rank):
                x, y = batch(step)
                loss_fn(ddp, x, y).backward()
    except RuntimeError as e:
        print(f"rank {rank} JOIN THROW: {e}", flush=True)
    else:
        raise AssertionError("throw_on_early_termination must raise on every rank")


def train_until(rank, stop_rank, stop_step, how, steps=4):
    """Trains ``steps`` DDP steps; rank ``stop_rank`` stops at ``stop_step``: ``exit``
    (catches an error and calls sys.exit(1)), ``return`` (leaves the script, exit status
    0), ``destroy`` (fewer batches, then destroy_process_group(), then other work),
    ``barrier`` (fewer batches, then the script's final barrier and exit)."""
    ddp = DDP(MLP())
    for step in range(steps):
        if rank == stop_rank and step == stop_step:
            if how == "exit":
                try:
                    raise ValueError("bad batch")
                except ValueError:
                    sys.exit(1)
            break
        x, y = batch(step)
        loss_fn(ddp, x, y).backward()
    if how == "return":
        return
    if how == "barrier":
        dist.barrier()
    dist.destroy_process_group()
    if how == "destroy":
        time.sleep(30)


def check_arg_mismatches(rank, world):
    # Arguments wrong on one rank only raise on every rank, naming that rank.
    def expect(cls, text, fn):
        try:
            fn()
        except cls as e:
            print(f"rank {rank} ARG: {e}", flush=True)
            assert text in str(e), str(e)
        else:
            raise AssertionError(f"expected {cls.__name__} containing {text!r}")

    t = torch.ones(3)
    n = world if rank != 1 else world + 1
    expect(ValueError, "all_gather: rank 1: tensor_list must be a list of",
           lambda: dist.all_gather([torch.zeros(3) for _ in range(n)], t))
    outs = [torch.zeros(3 if (rank != 1 or r != 0) else 4) for r in range(world)]
    expect(ValueError, "all_gather: rank 1: all_gather: every tensor in tensor_list",
           lambda: dist.all_gather(outs, t))
    expect(RuntimeError, "broadcast: every rank must pass the same src, got rank 0: 0, rank 1: 1",
           lambda: dist.broadcast(t, src=min(rank, 1)))
    expect(RuntimeError, "all_reduce: every rank must pass the same op",
           lambda: dist.all_reduce(t, op=dist.ReduceOp.MAX if rank == 1 else dist.ReduceOp.SUM))
    expect(RuntimeError, "collective mismatch: rank 0 called all_reduce, rank 1 called broadcast",
           lambda: dist.broadcast(t, 0) if rank == 1 else dist.all_reduce(t))
    expect(TypeError, "all_reduce: rank 1: tensor must be a Tensor",
           lambda: dist.all_reduce([1.0] if rank == 1 else t))
    gl = [torch.zeros(3)] if rank == 0 else None
    expect(ValueError, "gather: rank 0: gather_list must be a list of",
           lambda: dist.gather(t, gl, dst=0))
    # The group still works afterwards.
    t = torch.ones(3)
    dist.all_reduce(t)
    assert t.tolist() == [float(world)] * 3


def main():
    mode = sys.argv[1]
    if mode.startswith("stuck"):
        # Long for the per-wait timeout of stuck_async, which must be the one to fire.
        seconds = 60 if mode == "stuck_async" else 2
        dist.init_process_group("mpi", timeout=timedelta(seconds=seconds))
    else:
        dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if mode == "all":
        check_collectives(rank, world)
        check_ddp(rank, world, deterministic=True, bucket_cap_mb=0.0005)
        check_ddp(rank, world, deterministic=False, bucket_cap_mb=25)
        check_no_sync(rank, world)
        check_unused(rank, world)
        check_overlap(rank, world)
        check_bucket_view(rank, world)
        check_gil_released(rank, world)
    elif mode == "checkpoint":
        check_checkpoint(rank, world, sys.argv[2], sys.argv[3])
    elif mode == "raise":
        if rank == 1:
            raise ValueError("deliberate failure on rank 1")
        dist.barrier()  # would wait forever for rank 1
        time.sleep(60)
    elif mode == "raise_in_try_finally":
        # PyTorch scripts' usual shape: destroy_process_group() in a finally clause runs
        # before the exception reaches the excepthook.
        try:
            if rank == 1:
                raise ValueError("deliberate failure on rank 1")
            dist.barrier()
            time.sleep(60)
        finally:
            dist.destroy_process_group()
    elif mode.startswith("stuck"):
        # Rank 1 neither raises nor joins; the others' watchdogs must end the job.
        if mode == "stuck_ddp":
            ddp = DDP(MLP())
        t = torch.ones(3)
        if mode == "stuck_async":
            # Every rank posts; rank 1 never waits, so (MPI progressing a non-blocking
            # collective only inside MPI calls) the others' wait cannot finish.
            work = dist.all_reduce(t, async_op=True)
        if rank == 1:
            if mode == "stuck_async":
                # Stuck so hard that nothing runs: not even its watchdog thread, whose
                # MPI calls would otherwise move the posted reduction forward.
                dist.distributed_c10d._world.watchdog.stop()
            time.sleep(60)
        if mode == "stuck":
            dist.all_reduce(t)
        elif mode == "stuck_async":
            work.wait(timeout=timedelta(seconds=1))
        else:
            x, y = batch(0)
            loss_fn(ddp, x, y).backward()
    elif mode == "join":
        for divide in (True, False):
            check_join(rank, world, divide, bucket_cap_mb=0.0005)
        check_join(rank, world, True, bucket_cap_mb=25, deterministic=True)
        check_join(rank, world, False, bucket_cap_mb=0.0005, find_unused=True)
    elif mode == "join_throw":
        check_join_throw(rank, world)
    elif mode == "arg_mismatch":
        check_arg_mismatches(rank, world)
    elif mode.startswith("leave_"):
        # Rank 1 stops at step 2 of 4 (sys.exit(1) after catching an error, returning
        # early, fewer batches then destroy_process_group or a barrier); the others must
        # fail within seconds, naming rank 1, instead of waiting for the timeout.
        train_until(rank, 1, 2, mode[len("leave_"):])
        return
    elif mode == "kill":
        ddp = DDP(MLP())
        for step in range(4):
            if rank == 1 and step == 2:
                import os
                import signal

                os.kill(os.getpid(), signal.SIGKILL)
            x, y = batch(step)
            loss_fn(ddp, x, y).backward()
        time.sleep(30)
    elif mode == "requires_grad_mismatch":
        model = MLP()
        if rank == 1:
            model.net[2].bias.requires_grad_(False)
        try:
            DDP(model)
        except RuntimeError as e:
            print(f"rank {rank} DDP: {e}", flush=True)
        else:
            raise AssertionError("DDP must refuse a model whose ranks differ")
    elif mode == "mismatch":
        t = torch.ones(3 if rank == 0 else 4)
        try:
            dist.all_reduce(t)
        except RuntimeError as e:
            print(f"rank {rank} MISMATCH: {e}", flush=True)
            assert np.array_equal(t.numpy(), np.ones(t.numel(), np.float32))
        try:
            DDP(nn.Linear(3 if rank == 0 else 4, 2))
        except RuntimeError as e:
            print(f"rank {rank} DDP MISMATCH: {e}", flush=True)
    dist.barrier()
    print(f"rank {rank} OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
