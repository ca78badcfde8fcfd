"""Impossible and huge sizes: an ordinary exception, never a crash or an abort.

Each case runs in its own interpreter under an address-space limit, so that a
request for terabytes fails at once (as it does on a machine without that
much memory) instead of being granted lazily, and so that a crash takes down
only that interpreter: the test then reports the signal. The expected
results are PyTorch 2.15's on the same calls.
"""

from __future__ import annotations

import signal
import textwrap

import pytest

from helpers import run_isolated

ALLOC = "DefaultCPUAllocator: can't allocate memory: you tried to allocate"


def run_capped(body, gigabytes=4, timeout=60):
    """Runs `body` in a fresh interpreter whose address space is capped at
    `gigabytes` (beyond what it uses at start); returns its stdout."""
    code = textwrap.dedent(
        f"""
        import resource, sys
        import ferrograd as fg
        import ferrograd.nn.functional as F
        (fg.ones(200_000) * 2).sum()  # the thread pool's stacks, before the cap
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        cap = used + {gigabytes} * 2**30
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        """
    ) + textwrap.dedent(body)
    r = run_isolated(code, timeout=timeout)
    if r.returncode < 0:
        raise AssertionError(
            f"killed by {signal.Signals(-r.returncode).name}:\n{r.stderr[-2000:]}"
        )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def raises_in_child(expr, exc, match, **kw):
    out = run_capped(
        f"""
        try:
            {expr}
        except {exc} as e:
            print("RAISED", type(e).__name__, e)
        else:
            print("NO ERROR")
        """,
        **kw,
    )
    assert "RAISED" in out and match in out, out
    return out


# -- zero-element tensors of any declared size ---------------------------------------


@pytest.mark.parametrize("rows", [2**61, 2**62, 2**63 - 1])
def test_empty_tensors_of_huge_declared_size_print_and_convert(rows):
    out = run_capped(
        f"""
        t = fg.empty({rows}, 0)
        print(repr(t))
        print(t.shape, t.numel(), t.stride())
        print(t.sum(1).shape if {rows} < 2**31 else "skip", t.sum(0).shape)
        print(t.t().shape, t.reshape(0, {rows}).shape, t.clone().shape, t.double().shape)
        print(fg.empty(0, {rows}).tolist())
        """
    )
    # PyTorch's repr of torch.empty(2**61, 0).
    assert f"tensor([], size=({rows}, 0))" in out
    assert "torch.Size" not in out
    assert f"Size([{rows}, 0]) 0 (1, 1)" in out
    assert "[]" in out


@pytest.mark.parametrize("rows", [2**61, 2**62])
def test_numpy_of_a_huge_empty_tensor_raises_numpys_error(rows):
    # NumPy refuses the shape (its size over the nonzero sizes times the item size
    # overflows); PyTorch's .numpy() raises the same ValueError.
    raises_in_child(f"fg.empty({rows}, 0).numpy()", "ValueError", "array is too big")
    raises_in_child(f"import numpy as np; np.asarray(fg.empty({rows}, 0))", "ValueError",
                    "array is too big")


def test_numpy_of_an_empty_tensor_that_numpy_allows():
    out = run_capped(
        """
        import numpy as np
        a = fg.empty(2**33, 0).numpy()
        print(a.shape, a.dtype, a.size)
        print(fg.empty(2**40, 0, dtype=fg.bool).numpy().shape)
        """
    )
    assert "(8589934592, 0) float32 0" in out
    assert "(1099511627776, 0)" in out


def test_tolist_of_a_huge_empty_tensor_raises_memory_error():
    # PyTorch: MemoryError (the outer list cannot be made), not a panic.
    raises_in_child("fg.empty(2**62, 0).tolist()", "MemoryError", "RAISED MemoryError")
    raises_in_child("fg.empty(2**33, 0).tolist()", "MemoryError", "RAISED MemoryError",
                    gigabytes=8)


def test_strides_that_overflow_are_refused_before_anything_is_made():
    # PyTorch refuses torch.empty(0, 2**62, 2**62): its leading stride does not fit.
    raises_in_child("fg.empty(0, 2**62, 2**62)", "RuntimeError", "Stride calculation overflowed")
    raises_in_child("fg.zeros(2**40, 2**40, 0)", "RuntimeError",
                    "Storage size calculation overflowed")
    raises_in_child("fg.ones(1).expand(2**40, 2**40)", "RuntimeError",
                    "numel: integer multiplication overflow")


def test_a_checkpoint_of_a_huge_empty_tensor_round_trips(tmp_path):
    path = tmp_path / "empty.pt"
    out = run_capped(
        f"""
        fg.save({{"w": fg.empty(2**61, 0), "b": fg.ones(2)}}, {str(path)!r})
        d = fg.load({str(path)!r})
        print(repr(d["w"]), d["w"].shape, d["b"].tolist())
        """
    )
    assert "tensor([], size=(2305843009213693952, 0))" in out
    assert "[1.0, 1.0]" in out


# -- allocations the system refuses ---------------------------------------------------


def test_refused_allocations_raise_pytorchs_error():
    # PyTorch: RuntimeError "[enforce fail at alloc_cpu.cpp] ... DefaultCPUAllocator:
    # can't allocate memory: you tried to allocate 8796093022208 bytes ...".
    out = raises_in_child("fg.multinomial(fg.ones(3), 2**40, replacement=True)",
                          "RuntimeError", ALLOC)
    assert "8796093022208 bytes" in out
    raises_in_child("fg.empty(2**40)", "RuntimeError", ALLOC)
    raises_in_child("fg.ones(2).repeat(2**40)", "RuntimeError", ALLOC)
    raises_in_child("fg.zeros(2**20, 2**20)", "RuntimeError", ALLOC)
    # 2**62 float32 elements: a byte count past int64, which PyTorch refuses as an
    # overflow ("Storage size calculation overflowed with sizes=[2147483648,
    # 2147483648]"); ferrograd names the element count.
    out = raises_in_child("fg.ones(1).expand(2**31, 2**31).contiguous()", "RuntimeError",
                          "Storage size calculation overflowed with sizes=[")
    assert "4611686018427387904" in out and "18446744073709551615" not in out
    raises_in_child("fg.ones(1).expand(2**62).sin()", "RuntimeError",
                    "Storage size calculation overflowed with sizes=[4611686018427387904]")
    raises_in_child("fg.ones(1).expand(2**40).sin()", "RuntimeError", ALLOC)
    raises_in_child("fg.randn(2**40)", "RuntimeError", ALLOC)
    raises_in_child("fg.arange(2**40)", "RuntimeError", ALLOC)
    raises_in_child("fg.eye(2**20)", "RuntimeError", ALLOC)


def test_conv_with_huge_padding_raises_before_allocating():
    # The issue: ~12.7 GB was allocated (and touched) before the abort; PyTorch
    # raises at once. Under a 16 GB cap nothing may be allocated first.
    out = raises_in_child(
        "F.conv2d(fg.ones(1, 1, 3, 3), fg.ones(1, 1, 3, 3), padding=100000)",
        "RuntimeError", ALLOC, gigabytes=16,
    )
    # The output: 200001**2 float32 elements (PyTorch names its column buffer, 9x that).
    assert "160001600004 bytes" in out
    raises_in_child("F.conv_transpose2d(fg.ones(1, 1, 3, 3), fg.ones(1, 1, 3, 3), "
                    "stride=2**20)", "RuntimeError", ALLOC)
    raises_in_child("F.conv1d(fg.ones(1, 1, 3), fg.ones(1, 1, 3), padding=2**62)",
                    "RuntimeError", "overflowed")


def test_interpolate_with_a_huge_scale_raises_before_allocating():
    out = raises_in_child("F.interpolate(fg.ones(1, 1, 3, 3), scale_factor=1e8)", "RuntimeError",
                          ALLOC, gigabytes=16)
    assert "360000000000000000 bytes" in out  # PyTorch's figure
    raises_in_child("F.interpolate(fg.ones(1, 1, 3), scale_factor=1e12)", "RuntimeError", ALLOC)
    raises_in_child("F.interpolate(fg.ones(1, 1, 3, 3), scale_factor=1e300)", "RuntimeError",
                    "value cannot be converted to type int64_t without overflow")
    raises_in_child("F.interpolate(fg.ones(1, 1, 3, 3), size=2**40)", "RuntimeError",
                    "Storage size calculation overflowed with sizes=[1, 1, 1099511627776")


def test_huge_sizes_in_pooling_and_padding():
    raises_in_child("F.pad(fg.ones(1, 1, 3, 3), (2**40, 2**40))", "RuntimeError", "RAISED")
    raises_in_child("F.max_pool2d(fg.ones(1, 1, 3, 3), 2, padding=2**40)", "RuntimeError",
                    "RAISED")
    # PyTorch: "numel: integer multiplication overflow" (2**80 output elements).
    raises_in_child("F.adaptive_avg_pool2d(fg.ones(1, 1, 3, 3), 2**40)", "RuntimeError",
                    "numel: integer multiplication overflow")
    # 2**62 float32 elements: a byte count past int64 (PyTorch names the sizes).
    raises_in_child("F.adaptive_max_pool2d(fg.ones(1, 1, 3, 3), 2**31)", "RuntimeError",
                    "Storage size calculation overflowed with sizes=[")
    raises_in_child("F.adaptive_max_pool2d(fg.ones(1, 1, 3, 3), 2**20)", "RuntimeError", ALLOC)
    raises_in_child("F.one_hot(fg.tensor([0]), 2**40)", "RuntimeError", "RAISED")
    raises_in_child("fg.bincount(fg.tensor([0]), minlength=2**40)", "RuntimeError", "RAISED")
    raises_in_child("F.fold(fg.ones(1, 4, 1), (2**30, 2**30), 2)", "RuntimeError", "RAISED")
    raises_in_child("F.unfold(fg.ones(1, 1, 3, 3), 2, padding=2**40)", "RuntimeError", "RAISED")


def test_factorisations_of_matrices_without_rows_answer_at_once():
    # LAPACK's workspace query for a 0 x 2**40 matrix runs for ever; PyTorch 2.15
    # answers: no singular values, rank 0, norms 0, an empty pseudo-inverse.
    out = run_capped(
        """
        x = fg.empty(0, 2**40, dtype=fg.float64)
        u, s, vh = fg.linalg.svd(x, full_matrices=False)
        print("svd", tuple(u.shape), tuple(s.shape), tuple(vh.shape))
        print("svdvals", tuple(fg.linalg.svdvals(x).shape))
        print("rank", fg.linalg.matrix_rank(x).item())
        print("pinv", tuple(fg.linalg.pinv(x).shape), tuple(fg.pinverse(x).shape))
        print("norms", [fg.linalg.matrix_norm(x, o).item() for o in ("nuc", 2, float("inf"))])
        u, s, vh = fg.linalg.svd(fg.empty(0, 3, dtype=fg.float64))
        print("full", tuple(u.shape), tuple(s.shape), vh.tolist())
        """,
        timeout=60,
    )
    assert "svd (0, 0) (0,) (0, 1099511627776)" in out
    assert "svdvals (0,)" in out and "rank 0" in out
    assert "pinv (1099511627776, 0) (1099511627776, 0)" in out
    assert "norms [0.0, 0.0, 0.0]" in out
    assert "full (0, 0) (0,) [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]" in out
