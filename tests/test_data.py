"""ferrograd.utils.data: datasets, samplers, collation and DataLoader (with workers)."""

import collections
import os
import re
import time
import warnings

import numpy as np
import pytest

import ferrograd as fg
from ferrograd.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)


def gen(seed):
    g = fg.Generator()
    g.manual_seed(seed)
    return g


def lists(batches):
    return [b.tolist() if isinstance(b, fg.Tensor) else [x.tolist() for x in b] for b in batches]


class Range(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i

    def __len__(self):
        return self.n


# ----- datasets ------------------------------------------------------------------------------


def test_tensor_dataset():
    x = fg.arange(12.0).reshape(4, 3)
    y = fg.tensor([1, 0, 1, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6.0, 7.0, 8.0] and b.item() == 1
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, fg.zeros(3))


def test_subset_concat_stack_chain():
    ds = Range(5)
    sub = Subset(ds, [4, 0, 2])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [4, 0, 2]
    assert sub.__getitems__([2, 0]) == [2, 4]
    cat = ds + Range(3)
    assert isinstance(cat, ConcatDataset) and len(cat) == 8
    assert [cat[i] for i in range(8)] == [0, 1, 2, 3, 4, 0, 1, 2]
    assert cat[-1] == 2 and cat[-8] == 0 and cat.cumulative_sizes == [5, 8]
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-9]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        ConcatDataset([])

    class It(IterableDataset):
        def __init__(self, xs):
            self.xs = xs

        def __iter__(self):
            return iter(self.xs)

        def __len__(self):
            return len(self.xs)

    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([ds, It([1])])
    chain = It([1, 2]) + It([3])
    assert isinstance(chain, ChainDataset) and list(chain) == [1, 2, 3] and len(chain) == 3
    st = StackDataset(Range(3), Range(3))
    assert st[1] == (1, 1) and len(st) == 3
    assert StackDataset(a=Range(2), b=Range(2))[1] == {"a": 1, "b": 1}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Range(2), Range(3))


def test_random_split_lengths_and_fractions():
    parts = random_split(Range(10), [3, 7], generator=gen(0))
    assert [len(p) for p in parts] == [3, 7]
    got = sorted(parts[0].indices + parts[1].indices)
    assert got == list(range(10))
    # Fractions: floors 3, 3, 3; the one left over goes to the first split.
    parts = random_split(Range(10), [0.33, 0.33, 0.34], generator=gen(1))
    assert [len(p) for p in parts] == [4, 3, 3]
    # 11 * [0.25]*4 floors to 2,2,2,2; the 3 left over go one each to the first three.
    assert [len(p) for p in random_split(Range(11), [0.25] * 4, generator=gen(1))] == [3, 3, 3, 2]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Range(2), [0.9, 0.1], generator=gen(0))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(Range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(Range(10), [1.5, -0.5])
    a = [p.indices for p in random_split(Range(20), [5, 15], generator=gen(7))]
    b = [p.indices for p in random_split(Range(20), [5, 15], generator=gen(7))]
    assert a == b


# ----- samplers ------------------------------------------------------------------------------


def test_sequential_and_batch_sampler():
    assert list(SequentialSampler(Range(4))) == [0, 1, 2, 3]
    bs = BatchSampler(SequentialSampler(Range(7)), 3, False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    bs = BatchSampler(SequentialSampler(Range(7)), 3, True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5]] and len(bs) == 2
    assert list(BatchSampler(range(4), 2, True)) == [[0, 1], [2, 3]]
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler_permutes_and_is_seeded():
    s = list(RandomSampler(Range(50), generator=gen(3)))
    assert sorted(s) == list(range(50)) and s != list(range(50))
    assert s == list(RandomSampler(Range(50), generator=gen(3)))
    g = gen(3)
    sampler = RandomSampler(Range(50), generator=g)
    assert list(sampler) == s and list(sampler) != s  # the generator advances per epoch
    # num_samples beyond the dataset: whole permutations, then the start of one more.
    long = list(RandomSampler(Range(4), num_samples=10, generator=gen(0)))
    assert len(long) == 10 and sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3]
    assert len(set(long[8:])) == 2
    # With replacement: num_samples draws in range, repeats allowed.
    r = list(RandomSampler(Range(3), replacement=True, num_samples=100, generator=gen(0)))
    assert len(r) == 100 and set(r) == {0, 1, 2}
    assert len(RandomSampler(Range(3), num_samples=7)) == 7
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(Range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(Range(3), num_samples=0)
    # Without a generator the global seed decides, as with torch.manual_seed.
    fg.manual_seed(5)
    a = list(RandomSampler(Range(30)))
    fg.manual_seed(5)
    assert list(RandomSampler(Range(30))) == a


def test_subset_random_sampler():
    s = list(SubsetRandomSampler([10, 20, 30, 40], generator=gen(1)))
    assert sorted(s) == [10, 20, 30, 40]
    assert s == list(SubsetRandomSampler([10, 20, 30, 40], generator=gen(1)))
    assert len(SubsetRandomSampler([1, 2])) == 2


def test_weighted_random_sampler():
    w = [0.0, 1.0, 3.0, 0.0]
    draws = list(WeightedRandomSampler(w, 4000, generator=gen(0)))
    assert len(draws) == 4000 and set(draws) <= {1, 2}
    frac = draws.count(2) / len(draws)
    assert abs(frac - 0.75) < 0.04  # binomial sd ~0.007
    no_rep = list(WeightedRandomSampler([1, 2, 3, 4, 5], 5, replacement=False, generator=gen(1)))
    assert sorted(no_rep) == [0, 1, 2, 3, 4]
    assert list(WeightedRandomSampler(w, 5, generator=gen(9))) == list(
        WeightedRandomSampler(w, 5, generator=gen(9))
    )
    # Without replacement the heaviest item comes first most often.
    firsts = [list(WeightedRandomSampler([1, 1, 20], 1, False, generator=gen(i)))[0]
              for i in range(200)]  # fmt: skip
    assert firsts.count(2) > 150
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(RuntimeError, match="without replacement"):
        list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False))
    with pytest.raises(RuntimeError, match="element < 0"):
        list(WeightedRandomSampler([1.0, -1.0], 2))
    assert len(WeightedRandomSampler(fg.tensor([1.0, 2.0]), 3)) == 3


# ----- collation -----------------------------------------------------------------------------


Point = collections.namedtuple("Point", ["x", "y"])


def test_default_collate_each_type():
    t = default_collate([fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0])])
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]] and t.dtype == fg.float32
    a = default_collate([np.array([1, 2], np.int32), np.array([3, 4], np.int32)])
    assert a.dtype == fg.int32 and a.tolist() == [[1, 2], [3, 4]]
    a = default_collate([np.zeros(2), np.ones(2)])
    assert a.dtype == fg.float64 and a.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert default_collate([np.float32(1.5), np.float32(2)]).dtype == fg.float32
    f = default_collate([1.5, 2.0])
    assert f.dtype == fg.float64 and f.tolist() == [1.5, 2.0]
    i = default_collate([1, 2, 3])
    assert i.dtype == fg.int64 and i.tolist() == [1, 2, 3]
    b = default_collate([True, False])
    assert b.dtype == fg.bool and b.tolist() == [True, False]
    assert default_collate(["a", "b"]) == ["a", "b"]
    tup = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(tup, list) and tup[0].tolist() == [1, 3] and tup[1].tolist() == [2.0, 4.0]
    lst = default_collate([[1, 2], [3, 4]])
    assert isinstance(lst, list) and [x.tolist() for x in lst] == [[1, 3], [2, 4]]
    d = default_collate([{"x": 1, "s": "a"}, {"x": 2, "s": "b"}])
    assert d["x"].tolist() == [1, 2] and d["s"] == ["a", "b"]
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == fg.float64
    nested = default_collate([{"a": (fg.ones(2), 1)}, {"a": (fg.zeros(2), 2)}])
    assert nested["a"][0].tolist() == [[1.0, 1.0], [0.0, 0.0]] and nested["a"][1].tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_default_convert():
    c = default_convert({"a": np.arange(3), "b": [np.float64(1.5), "s"], "c": (1, 2)})
    assert isinstance(c["a"], fg.Tensor) and c["a"].tolist() == [0, 1, 2]
    assert isinstance(c["b"][0], fg.Tensor) and c["b"][1] == "s"
    assert c["c"] == [1, 2]  # tuples become lists, numbers stay numbers
    p = default_convert(Point(np.ones(1), 2))
    assert isinstance(p, Point) and isinstance(p.x, fg.Tensor) and p.y == 2
    t = fg.ones(1)
    assert default_convert(t) is t


# ----- DataLoader ----------------------------------------------------------------------------


def test_loader_batches_by_hand():
    dl = DataLoader(Range(7), batch_size=3)
    assert len(dl) == 3
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]]
    dl = DataLoader(Range(7), batch_size=3, drop_last=True)
    assert len(dl) == 2 and [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]]
    # batch_size=None: no batching, default_convert per sample.
    assert list(DataLoader(Range(3), batch_size=None)) == [0, 1, 2]
    dl = DataLoader(Range(5), batch_size=2, collate_fn=lambda b: sum(b))
    assert list(dl) == [1, 5, 4]
    dl = DataLoader(Range(6), sampler=[5, 3, 1], batch_size=2)
    assert [b.tolist() for b in dl] == [[5, 3], [1]]
    dl = DataLoader(Range(6), batch_sampler=[[0, 5], [2]])
    assert [b.tolist() for b in dl] == [[0, 5], [2]] and len(dl) == 2
    x = fg.arange(10.0).reshape(5, 2)
    dl = DataLoader(TensorDataset(x, fg.arange(5)), batch_size=2)
    got = list(dl)
    assert got[0][0].tolist() == [[0.0, 1.0], [2.0, 3.0]] and got[2][1].tolist() == [4]
    assert isinstance(got[0], list)


def test_loader_option_errors():
    ds = Range(4)
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
        (dict(num_workers=1, prefetch_factor=-1), "prefetch_factor option should be non-negative"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], sampler=[0]), "batch_sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    ]
    for kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kw)

    class It(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    for kw, msg in [
        (dict(shuffle=True), "expected unspecified shuffle option"),
        (dict(sampler=[0]), "expected unspecified sampler option"),
        (dict(batch_sampler=[[0]]), "expected unspecified batch_sampler option"),
    ]:
        with pytest.raises(ValueError, match=msg):
            DataLoader(It(), **kw)
    DataLoader(ds, pin_memory=True)  # accepted, nothing to pin on a CPU


def test_shuffle_draws_in_pytorchs_order():
    # As PyTorch's: each epoch first draws the workers' base seed from the
    # generator (random_), then the sampler's permutation (randperm).
    dl = DataLoader(Range(10), batch_size=10, shuffle=True, generator=gen(0))
    ref = gen(0)
    for _ in range(2):
        fg.empty((), dtype=fg.int64).random_(generator=ref)
        assert next(iter(dl)).tolist() == fg.randperm(10, generator=ref).tolist()
    # With PyTorch's generator, randperm(10) seeded 0 is this permutation.
    assert fg.randperm(10, generator=gen(0)).tolist() == [4, 1, 7, 5, 3, 9, 0, 8, 6, 2]
    # Without a generator RandomSampler seeds a fresh one from the global stream.
    fg.manual_seed(3)
    got = list(RandomSampler(Range(8)))
    fg.manual_seed(3)
    seed = int(fg.empty((), dtype=fg.int64).random_().item())
    assert got == fg.randperm(8, generator=gen(seed)).tolist()
    # random_split draws one permutation of the whole dataset.
    parts = random_split(Range(10), [4, 6], generator=gen(5))
    perm = fg.randperm(10, generator=gen(5)).tolist()
    assert parts[0].indices == perm[:4] and parts[1].indices == perm[4:]
    # WeightedRandomSampler is multinomial with the sampler's arguments.
    w = fg.tensor([0.5, 1.0, 2.0, 0.1], dtype=fg.float64)
    ws = list(WeightedRandomSampler(w, 6, replacement=True, generator=gen(8)))
    assert ws == fg.multinomial(w, 6, True, generator=gen(8)).tolist()


def test_seeded_shuffle_repeats_and_epochs_differ():
    def epochs(seed):
        dl = DataLoader(Range(20), batch_size=6, shuffle=True, generator=gen(seed))
        return [[b.tolist() for b in dl] for _ in range(2)]

    a, b = epochs(11), epochs(11)
    assert a == b
    assert a[0] != a[1]
    assert sorted(sum(a[0], [])) == list(range(20))
    assert epochs(12) != a
    fg.manual_seed(0)
    c = [b.tolist() for b in DataLoader(Range(20), batch_size=5, shuffle=True)]
    fg.manual_seed(0)
    assert [b.tolist() for b in DataLoader(Range(20), batch_size=5, shuffle=True)] == c


def test_iterable_dataset_len_and_batches():
    class It(IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    dl = DataLoader(It(), batch_size=3)
    assert len(dl) == 3 and [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]]
    dl = DataLoader(It(), batch_size=3, drop_last=True)
    assert len(dl) == 2 and [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]]


def test_tensor_dataset_whole_batch_path_matches_per_sample_stacking():
    rs = np.random.default_rng(0)
    x = fg.from_numpy(rs.standard_normal((50, 3, 2)).astype(np.float32))
    y = fg.from_numpy(rs.integers(0, 5, 50))
    m = fg.from_numpy(rs.standard_normal(50) > 0)
    w = fg.randn(50, 2, requires_grad=True)
    ds = TensorDataset(x, y, m, w)
    fast = DataLoader(ds, batch_size=7, shuffle=True, generator=gen(4))
    slow = DataLoader(ds, batch_size=7, shuffle=True, generator=gen(4),
                      collate_fn=lambda b: default_collate(b))  # fmt: skip
    n = 0
    for a, b in zip(fast, slow):
        assert isinstance(a, list) and len(a) == 4
        for ta, tb in zip(a, b):
            assert ta.dtype == tb.dtype and ta.shape == tb.shape
            np.testing.assert_array_equal(ta.detach().numpy(), tb.detach().numpy())
        n += 1
        # A batch of a tensor that requires grad stays in its graph.
        a[3].sum().backward()
    assert n == 8
    assert w.grad is not None and float(w.grad.sum()) == 100.0
    # A batch sampler's negative index means the same row either way.
    got = list(DataLoader(TensorDataset(fg.arange(5)), batch_sampler=[[-1, 0]]))
    assert got[0][0].tolist() == [4, 0]


# ----- worker processes ----------------------------------------------------------------------


class WhoAmI(Dataset):
    """Each sample records the worker that produced it and a draw from its seeded RNGs."""

    def __getitem__(self, i):
        info = get_worker_info()
        wid = -1 if info is None else info.id
        seed = -1 if info is None else info.seed
        return {"i": i, "worker": wid, "seed": seed, "pid": os.getpid(),
                "draw": float(fg.rand(1)), "np": float(np.random.rand())}  # fmt: skip

    def __len__(self):
        return 12


def test_workers_return_the_batches_in_order_after_a_parallel_op():
    # A big kernel first, so the thread pool is running when the workers fork.
    a = fg.randn(1500, 1500)
    (a @ a).sum()
    ds = TensorDataset(fg.arange(40.0).reshape(20, 2), fg.arange(20))
    ref = [[t.tolist() for t in b] for b in DataLoader(ds, batch_size=3)]
    got = [[t.tolist() for t in b]
           for b in DataLoader(ds, batch_size=3, num_workers=2, prefetch_factor=3)]  # fmt: skip
    assert got == ref
    # The workers' own parallel kernels run on a pool rebuilt in the child.
    got = [b.tolist() for b in DataLoader(BigOp(), batch_size=2, num_workers=2)]
    assert got == [[float(BigOp()[i]) for i in range(2)], [float(BigOp()[i]) for i in range(2, 4)]]
    # The parent's pool still works after forking.
    assert float((a @ a).sum()) == pytest.approx(float((a @ a).sum()))


class BigOp(Dataset):
    def __getitem__(self, i):
        x = fg.arange(400 * 400, dtype=fg.float64).reshape(400, 400) / 1e5 + i
        return float((x @ x).sum())

    def __len__(self):
        return 4


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    g = gen(21)
    dl = DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=g,
                    worker_init_fn=_init_fn)  # fmt: skip
    batches = list(dl)
    workers = sorted({w for b in batches for w in b["worker"].tolist()})
    assert workers == [0, 1]
    seeds = {w: s for b in batches for w, s in zip(b["worker"].tolist(), b["seed"].tolist())}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker id
    assert all(b["pid"][0].item() != os.getpid() for b in batches)
    # worker_init_fn ran in each worker before any sample (it seeds NumPy per worker id).
    first_np = {b["worker"][0].item(): b["np"][0].item() for b in batches[:2]}
    for wid, v in first_np.items():
        assert v == np.random.default_rng(1000 + wid).random()
    # Same generator seed, same worker seeds and the same draws.
    again = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=gen(21),
                            worker_init_fn=_init_fn))  # fmt: skip
    assert [b["draw"].tolist() for b in again] == [b["draw"].tolist() for b in batches]
    assert [b["seed"].tolist() for b in again] == [b["seed"].tolist() for b in batches]


def _init_fn(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    with pytest.raises(RuntimeError, match="Cannot assign attributes"):
        info.id = 5
    rs = np.random.default_rng(1000 + worker_id)
    np.random.rand = rs.random


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_iterable_dataset_sharded_across_workers_and_persistent_workers():
    dl = DataLoader(Sharded(11), batch_size=2, num_workers=2)
    got = [b.tolist() for b in dl]
    # Worker 0 yields evens, worker 1 odds; batches alternate between them.
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]
    dl = DataLoader(Sharded(6), batch_size=2, num_workers=2, persistent_workers=True)
    e1 = [b.tolist() for b in dl]
    e2 = [b.tolist() for b in dl]
    assert e1 == e2 == [[0, 2], [1, 3], [4], [5]]
    it = dl._iterator
    pids = [w.pid for w in it._workers]
    list(dl)
    assert dl._iterator is it and [w.pid for w in it._workers] == pids
    assert all(w.is_alive() for w in it._workers)
    it._shutdown_workers()


class Failing(Dataset):
    def __getitem__(self, i):
        if i == 3:
            raise KeyError("no sample 3")
        return i

    def __len__(self):
        return 6


class Slow(Dataset):
    def __getitem__(self, i):
        time.sleep(3)
        return i

    def __len__(self):
        return 2


class Dies(Dataset):
    def __getitem__(self, i):
        os._exit(1)

    def __len__(self):
        return 2


def test_worker_errors_reach_the_main_process():
    with pytest.raises(KeyError, match="in DataLoader worker process"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.5))
    # PyTorch's words (its SIGCHLD handler's).
    with pytest.raises(
        RuntimeError,
        match=r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 1\. Details are "
        r"lost due to multiprocessing\. Rerunning with num_workers=0 may give better error trace",
    ):
        list(DataLoader(Dies(), batch_size=1, num_workers=1))


KILLED_WORKER = """
import os, signal, sys, time
from ferrograd.utils.data import DataLoader, Dataset

class Killed(Dataset):
    def __getitem__(self, i):
        os.kill(os.getpid(), signal.SIGKILL)

    def __len__(self):
        return 2

t0 = time.monotonic()
try:
    list(DataLoader(Killed(), batch_size=1, num_workers=2, timeout=float(sys.argv[1])))
except RuntimeError as e:
    print(f"{time.monotonic() - t0:.2f}", e)
"""


@pytest.mark.parametrize("timeout", [0, 60])
def test_a_killed_worker_is_reported_at_once_whatever_the_timeout(timeout):
    # PyTorch reports it within about a second (SIGCHLD) and names the signal. In a
    # process of its own: a loader that missed the death would wait `timeout` or for ever.
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", KILLED_WORKER, str(timeout)], capture_output=True,
                       text=True, env=env, timeout=45)  # fmt: skip
    assert r.returncode == 0, r.stderr
    seconds, message = r.stdout.split(" ", 1)
    assert float(seconds) < 10, r.stdout
    assert re.match(r"DataLoader worker \(pid \d+\) is killed by signal: Killed\. ", message)


def test_workers_never_warn_or_leak_processes():
    import multiprocessing

    before = set(multiprocessing.active_children())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            assert len(list(DataLoader(Range(9), batch_size=2, num_workers=2))) == 5
    deadline = time.time() + 5
    while set(multiprocessing.active_children()) - before and time.time() < deadline:
        time.sleep(0.05)
    assert set(multiprocessing.active_children()) - before == set()
