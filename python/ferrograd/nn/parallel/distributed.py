"""``DistributedDataParallel``: one model replica per process, gradients averaged over MPI."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

import numpy as np

from ... import _C
from ...autograd.grad_mode import no_grad
from ...distributed.algorithms.join import Join, Joinable, JoinHook, _JoinConfig
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


def _named_buffers(module, prefix=""):
    if hasattr(module, "named_buffers"):
        yield from module.named_buffers()
        return
    for name, b in module.__dict__.get("_buffers", {}).items():
        if b is not None:
            yield prefix + name, b
    for mname, m in module.__dict__.get("_modules", {}).items():
        if m is not None:
            yield from _named_buffers(m, prefix + mname + ".")


def _low_precision(t):
    return str(t.dtype).rsplit(".", 1)[-1] in ("float16", "bfloat16")


def _np(t):
    # float16/bfloat16 travel as float32 (MPI has neither type, NumPy no bfloat16): the
    # sum is done in float32 and rounded once into the gradient.
    d = t.detach()
    return d.float().numpy() if _low_precision(t) else d.numpy()


def _tensors_in(obj):
    if isinstance(obj, _C.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


def _reachable_leaves(outputs):
    """ids of the leaves that backward from ``outputs`` can reach (AccumulateGrad nodes)."""
    # grad_fn wrappers are made on access, but hash and compare by the node they show.
    seen, found = set(), set()
    stack = [t.grad_fn for t in _tensors_in(outputs) if t.grad_fn is not None]
    for t in _tensors_in(outputs):
        if t.grad_fn is None and t.requires_grad:
            found.add(id(t))
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        var = getattr(fn, "variable", None)
        if var is not None:
            found.add(id(var))
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return found


def _aliases(t, arr):
    """Whether tensor ``t`` is exactly the memory of the contiguous array ``arr``."""
    return (
        t.data_ptr() == arr.__array_interface__["data"][0]
        and t.is_contiguous()
        and t.numel() == arr.size
    )


class _Bucket:
    def __init__(self, params, dtype):
        self.params = params
        self.dtype = dtype
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.numel = n
        self.flat = None
        # Per parameter: the tensor over its slot of ``flat`` that stands as its ``.grad``
        # with gradient_as_bucket_view=True (made once, as ``flat`` is kept).
        self.views = [None] * len(params)
        self.pending = 0
        self.request = None
        self.gathered = None
        self.seq = 0  # the group's number of this step's collective of this bucket


class DistributedDataParallel(Module, Joinable):
    """Wraps ``module`` for data-parallel training over the processes of a
    :mod:`ferrograd.distributed` group (MPI): each process runs the model on its share of
    the batch and the gradients are averaged across processes during backward.

    Rank 0's parameters and buffers are broadcast at construction. During backward
    each parameter's accumulated ``.grad`` is copied (from a post-accumulate-grad
    hook) into a bucket of about ``bucket_cap_mb``, whose non-blocking all-reduce
    starts as soon as its last gradient arrives, while backward still runs; when the
    last one is in, the averaged gradients are written to ``.grad``. ``no_sync()``
    accumulates locally. Buffers are re-broadcast from rank 0 at each forward unless
    ``broadcast_buffers=False``. ``join()`` trains on uneven inputs: ranks that run
    out of batches shadow the others' gradient all-reduces with zeros until every rank is
    done.

    Construction checks that every rank has the same parameters (how many require grad,
    their shapes and dtypes, in PyTorch's words) and buffers, and raises on every rank if
    not.

    Args:
        module (Module): the model to replicate.
        device_ids (list, optional): accepted for PyTorch compatibility (CPU only).
            Default: ``None``.
        output_device (optional): accepted for PyTorch compatibility.
            Default: ``None``.
        dim (int): accepted for PyTorch compatibility. Default: ``0``.
        broadcast_buffers (bool): re-broadcast rank 0's buffers at each forward.
            Default: ``True``.
        process_group (optional): the group to average over. Default: the default
            group.
        bucket_cap_mb (float, optional): the bucket size in MiB. Default: ``25``.
        find_unused_parameters (bool): count parameters that backward cannot reach as
            zero gradients instead of waiting for them. Default: ``False``.
        check_reduction (bool): accepted for PyTorch compatibility. Default: ``False``.
        gradient_as_bucket_view (bool): after the first synchronised backward each
            ``.grad`` becomes a view of its slot in the bucket, so the averages are
            not copied back; a backward that accumulates into such a ``.grad`` writes
            straight into the bucket. Default: ``False``.
        static_graph (bool): accepted for PyTorch compatibility. Default: ``False``.
        deterministic (bool): gather every rank's bucket and sum in rank order, so the
            result does not depend on MPI's reduction order. Default: ``False``.

    Raises:
        ValueError: if no process group has been initialised.

    Note:
        ferrograd's process groups run over MPI: start the script with
        ``mpiexec -n N python train.py`` or ``python -m ferrograd.distributed.run -n N
        train.py`` and call ``dist.init_process_group("mpi")``. A training script
        looks like this::

            import ferrograd as torch
            import ferrograd.distributed as dist

            dist.init_process_group("mpi")
            model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(10, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:  # each rank its own shard
                opt.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()

    Example::

        >>> nn.parallel.DistributedDataParallel(nn.Linear(4, 2))  # no group yet
        Traceback (most recent call last):
        ...
        ValueError: Default process group has not been initialized, ...call init_process_group.
    """

    def __init__(
        self,
        module,
        device_ids=None,
        output_device=None,
        dim=0,
        broadcast_buffers=True,
        process_group=None,
        bucket_cap_mb=None,
        find_unused_parameters=False,
        check_reduction=False,
        gradient_as_bucket_view=False,
        static_graph=False,
        deterministic=False,
    ):
        from ... import distributed as dist

        super().__init__()
        if not dist.is_initialized():
            raise ValueError(
                "Default process group has not been initialized, please make sure to call "
                "init_process_group."
            )
        if not isinstance(module, Module):
            raise TypeError(f"module must be a Module, but got {type(module).__name__}")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if bucket_cap_mb <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        object.__setattr__(self, "_dist", dist)
        object.__setattr__(self, "_comm", dist.distributed_c10d._check_group(process_group).comm)
        object.__setattr__(self, "process_group", process_group)
        object.__setattr__(self, "broadcast_buffers", broadcast_buffers)
        object.__setattr__(self, "find_unused_parameters", find_unused_parameters)
        object.__setattr__(self, "deterministic", deterministic)
        object.__setattr__(self, "gradient_as_bucket_view", bool(gradient_as_bucket_view))
        object.__setattr__(self, "bucket_bytes_cap", int(bucket_cap_mb * 1024 * 1024))
        object.__setattr__(self, "require_backward_grad_sync", True)
        object.__setattr__(self, "world_size", self._comm.Get_size())
        object.__setattr__(self, "_join_config", _JoinConfig.construct_disabled_join_config())
        object.__setattr__(self, "_join_rows", None)
        object.__setattr__(self, "_divide_by_initial_world_size", True)
        object.__setattr__(self, "_divisor", self.world_size)

        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        seen = set()
        named = [(n, p) for n, p in named if not (id(p) in seen or seen.add(id(p)))]
        params = [p for _, p in named]
        object.__setattr__(self, "_params", params)
        self._verify_model(named)
        self._sync_module_states()
        object.__setattr__(self, "_buckets", self._build_buckets(params))
        object.__setattr__(self, "_slot", {})
        for bi, b in enumerate(self._buckets):
            for j, p in enumerate(b.params):
                self._slot[id(p)] = (bi, j)
        object.__setattr__(self, "_armed", False)
        object.__setattr__(self, "_ready", set())
        object.__setattr__(self, "_hook_fired", False)
        object.__setattr__(self, "_finished", False)
        object.__setattr__(self, "_next_launch", 0)
        object.__setattr__(self, "_used", None)
        object.__setattr__(self, "_comm_wait_s", 0.0)
        # Post-accumulate hooks: the engine writes a parameter's .grad as soon as its last
        # contribution is in and then calls the hook, so buckets start during backward.
        object.__setattr__(
            self,
            "_hooks",
            [p.register_post_accumulate_grad_hook(self._make_hook(p)) for p in params],
        )

    # ---- construction -----------------------------------------------------------------

    def _c10d(self):
        return self._dist.distributed_c10d

    def _verify_model(self, named):
        """Every rank must hold the same model: the same number of parameters that
        require grad, with the same shapes and dtypes (PyTorch's checks and words), and
        the same other parameters and buffers (they are broadcast from rank 0). One
        ``allgather``; a difference raises on every rank."""
        mine = {
            "params": [(n, tuple(p.shape), str(p.dtype)) for n, p in named],
            "state": [("param", n, tuple(p.shape), str(p.dtype))
                      for n, p in self.module.named_parameters()]
                     + [("buffer", n, tuple(b.shape), str(b.dtype))
                        for n, b in _named_buffers(self.module)],
        }
        metas = self._c10d()._blocking(
            "DistributedDataParallel: comparing the ranks' models", self._comm.allgather, mine
        )
        me = self._comm.Get_rank()
        own = metas[me]["params"]
        for r, m in enumerate(metas):
            if len(m["params"]) != len(own):
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {me} has {len(own)} "
                    f"params, while rank {r} has inconsistent {len(m['params'])} params. "
                    "(A parameter with requires_grad=False on some ranks only?)"
                )
        base = metas[0]["params"]
        for i, (name0, shape0, dtype0) in enumerate(base):
            for r, m in enumerate(metas):
                name, shape, dtype = m["params"][i]
                where = "this process" if r == me else f"process {r}"
                if shape != shape0:
                    raise RuntimeError(
                        f"[{r}]: params[{i}] in {where} with sizes {list(shape)} appears not "
                        f"to match sizes of the same param in process 0. (params[{i}] is "
                        f"'{name}' there; process 0 has '{name0}' with sizes {list(shape0)})"
                    )
                if dtype != dtype0:
                    raise RuntimeError(
                        f"[{r}]: params[{i}] in {where} with dtype {dtype} appears not to "
                        f"match the dtype of the same param in process 0 ({dtype0}). "
                        f"(params[{i}] is '{name}')"
                    )
                if name != name0:
                    raise RuntimeError(
                        f"DDP expects same model across all ranks, but params[{i}] is "
                        f"'{name}' in {where} and '{name0}' in process 0 (a parameter with "
                        "requires_grad=False on some ranks only?)"
                    )
        for r, m in enumerate(metas):
            if m["state"] != metas[0]["state"]:
                diff = next(
                    (a, b)
                    for a, b in zip(metas[0]["state"] + [None], m["state"] + [None])
                    if a != b
                )
                raise RuntimeError(
                    "DistributedDataParallel: the module's parameters and buffers differ "
                    f"between rank 0 and rank {r}: {diff[0]} vs {diff[1]}"
                )

    def _states(self):
        return [p for _, p in self.module.named_parameters()] + [
            b for _, b in _named_buffers(self.module)
        ]

    def _sync_module_states(self, root=0, what=None):
        """Copies rank ``root``'s parameters and buffers everywhere (one coalesced
        broadcast per dtype)."""
        what = what or "DistributedDataParallel: broadcasting rank 0's state"
        self._broadcast(self._states(), root, what)

    def _broadcast(self, tensors, root, what):
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(_np(t).dtype, []).append(t)
        blocking = self._c10d()._blocking
        for dtype, ts in by_dtype.items():
            flat = np.concatenate([np.ascontiguousarray(_np(t)).reshape(-1) for t in ts])
            flat = flat.astype(dtype, copy=False)
            blocking(what, self._comm.Bcast, flat, root=root)
            if self._comm.Get_rank() != root:
                self._write_flat(flat, ts)

    @staticmethod
    def _write_flat(flat, ts):
        off = 0
        with no_grad():
            for t in ts:
                n = t.numel()
                t.copy_(_C.from_numpy(flat[off : off + n].reshape(tuple(t.shape))))
                off += n

    def _build_buckets(self, params):
        # Reverse registration order approximates the order backward produces gradients
        # (the last layer's first), as PyTorch's reducer assumes.
        buckets, cur, size, cur_dtype = [], [], 0, None
        for p in reversed(params):
            dt = _np(p).dtype
            nbytes = p.numel() * dt.itemsize
            if cur and (dt != cur_dtype or size + nbytes > self.bucket_bytes_cap):
                buckets.append(_Bucket(cur, cur_dtype))
                cur, size = [], 0
            cur.append(p)
            cur_dtype = dt
            size += nbytes
        if cur:
            buckets.append(_Bucket(cur, cur_dtype))
        return buckets

    # ---- forward --------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        # Only a backward that started reducing and did not finish is an error; a forward
        # whose output never went through backward (an evaluation with grad mode on) is not.
        if self._armed and self._hook_fired:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting "
                "a new one. This error indicates that your module has parameters that were "
                "not used in producing loss. You can enable unused parameter detection by "
                "passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all "
                "`forward` function outputs participate in calculating loss."
            )
        sync = _C.is_grad_enabled() and self.require_backward_grad_sync
        root = 0
        object.__setattr__(self, "_divisor", self.world_size)
        if self._join_config.enable:
            rows = Join.notify_join_context(self)
            if rows is not None:
                active = np.flatnonzero(rows[:, 0])
                # Rank 0 may have joined, with stale buffers: the last active rank's win.
                root = int(active[-1])
                if not self._divide_by_initial_world_size:
                    object.__setattr__(self, "_divisor", len(active))
        if self._syncs_buffers():
            self._broadcast(
                [b for _, b in _named_buffers(self.module)], root, _BUFFERS_WHAT
            )
        out = self.module(*inputs, **kwargs)
        object.__setattr__(self, "_armed", sync)
        self._ready.clear()
        object.__setattr__(self, "_hook_fired", False)
        object.__setattr__(self, "_finished", False)
        object.__setattr__(self, "_next_launch", 0)
        for b in self._buckets:
            b.pending = len(b.params)
            b.request = None
        if sync and self.find_unused_parameters:
            reach = _reachable_leaves(out)
            used = np.array([1 if id(p) in reach else 0 for p in self._params], np.int8)
            object.__setattr__(self, "_used", used)
            for p, u in zip(self._params, used):
                if not u:
                    self._mark_ready(p, unused=True)
        return out

    # ---- backward ---------------------------------------------------------------------------

    def _make_hook(self, p):
        def hook(param):
            if not self._armed:
                if self._finished:
                    # A second backward after this iteration's gradients were averaged
                    # would leave the ranks with different gradients.
                    raise RuntimeError(
                        "Expected to mark a variable ready only once. This error is caused "
                        "by running backward twice through the output of one "
                        "DistributedDataParallel forward; run forward again, or use "
                        "no_sync() to accumulate gradients over several backwards."
                    )
                return None
            object.__setattr__(self, "_hook_fired", True)
            self._mark_ready(p)
            return None

        return hook

    def _mark_ready(self, p, unused=False):
        key = id(p)
        if key in self._ready:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by "
                "a parameter that received gradients in more than one backward within an "
                "iteration of DistributedDataParallel."
            )
        self._ready.add(key)
        bi, j = self._slot[key]
        b = self._buckets[bi]
        if b.flat is None:
            # Kept from step to step: a fresh multi-megabyte buffer per step costs page
            # faults, and freeing it makes the allocator return memory that backward's
            # own buffers then fault in again.
            b.flat = np.empty(b.numel, dtype=b.dtype)
        # A view of the bucket in the parameter's shape: gradients often arrive as
        # transposed views, and one strided copy into it beats flattening them first.
        dst = b.flat[b.offsets[j] : b.offsets[j] + p.numel()].reshape(tuple(p.shape))
        # The hook runs after the engine accumulated this backward's gradient into .grad,
        # so .grad already holds what is reduced: this backward's plus whatever no_sync()
        # iterations accumulated before it. An unused parameter (marked at forward) may
        # have none.
        have = p.grad
        if have is None:
            dst[...] = 0
        elif b.views[j] is not None and _aliases(have, dst):
            # Backward accumulated straight into the bucket (gradient_as_bucket_view).
            if unused:
                # Unused here and maybe everywhere: a parameter no rank used keeps its
                # .grad untouched, which a view the reduction overwrites would not be.
                p.grad = have.clone()
        else:
            dst[...] = _np(have)
        b.pending -= 1
        # Buckets start strictly in index order so every rank posts its collectives in the
        # same sequence, as MPI requires.
        while self._next_launch < len(self._buckets) and self._buckets[self._next_launch].pending == 0:
            self._launch(self._buckets[self._next_launch])
            object.__setattr__(self, "_next_launch", self._next_launch + 1)
        if len(self._ready) == len(self._params):
            self._finalize()
        elif self._next_launch:
            # MPI progresses non-blocking collectives only inside MPI calls (there is no
            # progress thread): each hook gives the buckets in flight a turn.
            from mpi4py import MPI

            MPI.Request.Testall([b.request for b in self._buckets[: self._next_launch]])

    def _launch(self, b):
        from mpi4py import MPI

        b.seq = self._c10d()._group().take()
        if self.deterministic:
            if b.gathered is None:
                b.gathered = np.empty((self.world_size, b.numel), dtype=b.dtype)
            b.request = self._comm.Iallgather(b.flat, b.gathered)
        else:
            b.request = self._comm.Iallreduce(MPI.IN_PLACE, b.flat, op=MPI.SUM)

    def _finalize(self):
        """Runs in the post-accumulate hook of the last parameter to become ready (or at
        forward, when that one is unused): every ``.grad`` this backward produces is
        written by then, so it waits for every bucket, averages, and writes the averages
        into ``.grad`` in place (the same tensor objects, as the optimizer may hold them),
        or, with gradient_as_bucket_view, makes each ``.grad`` a view of its slot."""
        from mpi4py import MPI

        object.__setattr__(self, "_armed", False)
        object.__setattr__(self, "_finished", True)
        t0 = time.perf_counter()
        requests = [b.request for b in self._buckets]
        c10d = self._c10d()
        with c10d._watched(_GRADS_WHAT, self._buckets[0].seq, self._buckets[-1].seq):
            # Test and yield rather than MPI's busy Waitall: when the ranks share cores,
            # a spinning rank takes the time the rank it waits for needs to finish backward.
            while not MPI.Request.Testall(requests):
                os.sched_yield()
        # Time blocked on communication that backward did not hide (benches read it).
        object.__setattr__(self, "_comm_wait_s", self._comm_wait_s + time.perf_counter() - t0)
        globally_used = None
        if self.find_unused_parameters:
            globally_used = self._used.copy()
            c10d._blocking(
                _UNUSED_WHAT, self._comm.Allreduce, MPI.IN_PLACE, globally_used, op=MPI.MAX
            )
        index = {id(p): i for i, p in enumerate(self._params)}
        for b in self._buckets:
            if self.deterministic:
                # The send buffer is free once the gather completed: sum into it.
                total = b.flat
                np.copyto(total, b.gathered[0])
                for r in range(1, self.world_size):
                    total += b.gathered[r]
            else:
                total = b.flat
            total /= self._divisor
            for j, (p, off) in enumerate(zip(b.params, b.offsets)):
                if globally_used is not None and not globally_used[index[id(p)]]:
                    continue
                slot = total[off : off + p.numel()].reshape(tuple(p.shape))
                if self.gradient_as_bucket_view and not _low_precision(p):
                    if b.views[j] is None:
                        b.views[j] = _C.from_numpy(slot)
                    have = p.grad
                    if have is None or not _aliases(have, slot):
                        p.grad = b.views[j]
                    continue
                g = _C.from_numpy(slot)
                if p.grad is not None:
                    with no_grad():
                        p.grad.copy_(g)
                else:
                    # Unused here but used on another rank (the bucket is reused: copy).
                    p.grad = g.to(p.dtype) if _low_precision(p) else g.clone()
            b.request = None
        self._ready.clear()

    # ---- user API ---------------------------------------------------------------------------

    @contextmanager
    def no_sync(self):
        """Within it, backward accumulates gradients locally without communication; the
        first backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        object.__setattr__(self, "require_backward_grad_sync", False)
        try:
            yield
        finally:
            object.__setattr__(self, "require_backward_grad_sync", old)

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):  # fmt: skip
        """Context manager for ranks with different numbers of batches: a rank that
        ran out of batches waits at the end of the ``with`` block and, as long as other
        ranks still train, takes part in their gradient all-reduces with zeros (and in
        their buffer broadcasts), so nothing hangs. Gradients are averaged over the
        initial world size (``divide_by_initial_world_size=True``, PyTorch's default)
        or over the ranks still training. When all ranks are done, the model of the
        last rank to finish is copied to every rank. ``throw_on_early_termination=True``
        instead raises on every rank as soon as one runs out. Assumes each forward of
        the wrapped module under grad mode is followed by a backward, as PyTorch's
        does."""
        return Join(
            [self],
            enable,
            throw_on_early_termination,
            divide_by_initial_world_size=divide_by_initial_world_size,
        )

    def join_hook(self, **kwargs):
        """The ``JoinHook`` that shadows this model's collectives on a joined rank."""
        divide = kwargs.get("divide_by_initial_world_size", True)
        object.__setattr__(self, "_divide_by_initial_world_size", bool(divide))
        return _DDPJoinHook(self)

    @property
    def join_device(self):
        """The device of the join's communication: the CPU."""
        from ..._device import device

        return device("cpu")

    @property
    def join_process_group(self):
        """The process group of the join's communication."""
        return self.process_group

    def _syncs_buffers(self):
        return (
            self.broadcast_buffers
            and self.require_backward_grad_sync
            and any(True for _ in _named_buffers(self.module))
        )

    def _join_row(self):
        # What a joined rank must know to shadow this iteration's collectives.
        sync = _C.is_grad_enabled() and self.require_backward_grad_sync
        return [int(self._syncs_buffers()), int(sync)]

    def _shadow_iteration(self, rows):
        """A joined rank's side of one iteration of the active ranks: their buffer
        broadcast, then every bucket's reduction with zeros, in the same order."""
        from mpi4py import MPI

        active = rows[:, 0] == 1
        if rows[active, 1].any():
            root = int(np.flatnonzero(active)[-1])
            self._broadcast([b for _, b in _named_buffers(self.module)], root, _BUFFERS_WHAT)
        if not rows[active, 2].any():
            return
        c10d = self._c10d()
        w = c10d._group()
        requests = []
        first = None
        for b in self._buckets:
            zeros = np.zeros(b.numel, dtype=b.dtype)
            seq = w.take()
            first = seq if first is None else first
            if self.deterministic:
                gathered = np.empty((self.world_size, b.numel), dtype=b.dtype)
                requests.append(self._comm.Iallgather(zeros, gathered))
            else:
                requests.append(self._comm.Iallreduce(MPI.IN_PLACE, zeros, op=MPI.SUM))
        with c10d._watched(_GRADS_WHAT, first, w.seq - 1):
            while not MPI.Request.Testall(requests):
                os.sched_yield()
        if self.find_unused_parameters:
            unused = np.zeros(len(self._params), dtype=np.int8)
            c10d._blocking(_UNUSED_WHAT, self._comm.Allreduce, MPI.IN_PLACE, unused, op=MPI.MAX)

    def _sync_final_model(self, is_last_joiner):
        """After a join: every rank takes the model of the highest rank among the last
        to join (the others stopped stepping their optimizers when they joined)."""
        from mpi4py import MPI

        mine = np.array([self._comm.Get_rank() if is_last_joiner else -1], dtype=np.int64)
        self._c10d()._blocking(
            "DistributedDataParallel: choosing the last rank to join",
            self._comm.Allreduce, MPI.IN_PLACE, mine, op=MPI.MAX,
        )  # fmt: skip
        self._sync_module_states(
            int(mine[0]), "DistributedDataParallel: broadcasting the last joiner's model"
        )

    def __getstate__(self):
        raise RuntimeError("DistributedDataParallel is not picklable; save ddp.module instead")


_GRADS_WHAT = "DistributedDataParallel: the gradients' all-reduce"
_UNUSED_WHAT = "DistributedDataParallel: the all-reduce of which parameters were used"
_BUFFERS_WHAT = "DistributedDataParallel: broadcasting buffers"


class _DDPJoinHook(JoinHook):
    """A joined rank's part in the iterations of the ranks still training."""

    def __init__(self, ddp):
        self.ddp = ddp

    def main_hook(self):
        self.ddp._shadow_iteration(self.ddp._join_rows)

    def post_hook(self, is_last_joiner):
        self.ddp._sync_final_model(is_last_joiner)
