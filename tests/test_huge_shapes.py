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


# -- empty tensors whose other sizes are huge, through kernels that loop -----------------


def test_sorting_scans_and_gathers_of_an_empty_tensor_beside_a_huge_size_answer_at_once():
    # A kernel that walked the 2**62 outer positions of `empty(2**62, 0)` (each
    # holding nothing) ran for ever; one that sized its scratch by the 2**62 long
    # dimension of no rows asked for exabytes. PyTorch 2.15 answers each at once
    # with an empty result of these shapes.
    out = run_capped(
        """
        x = fg.empty(2**62, 0)
        i = fg.empty(2**62, 0, dtype=fg.int64)
        calls = {
            "sort0": lambda: x.sort(0)[0], "sort1": lambda: x.sort(1)[1],
            "msort": lambda: fg.msort(x), "argsort": lambda: x.argsort(0),
            "topk": lambda: x.topk(3, 0)[0], "topk1": lambda: x.topk(0, 1)[1],
            "kthvalue": lambda: x.kthvalue(2, 0)[0], "median": lambda: x.median(0)[1],
            "mode": lambda: x.mode(0)[0], "cumsum0": lambda: x.cumsum(0),
            "cumsum1": lambda: x.cumsum(1), "cummax": lambda: x.cummax(0)[1],
            "gather": lambda: x.gather(1, i), "softmax": lambda: x.softmax(1),
            "log_softmax": lambda: x.log_softmax(0),
            "index_select": lambda: fg.empty(2**62, 3, 0).index_select(1, fg.tensor([0, 2])),
            "cumsum_mid": lambda: fg.empty(2**40, 0, 3).cumsum(1),
        }
        for name, f in calls.items():
            print(name, tuple(f().shape))
        """,
    )
    big = 2**62
    for name, shape in [("sort0", (big, 0)), ("sort1", (big, 0)), ("msort", (big, 0)),
                        ("argsort", (big, 0)), ("topk", (3, 0)), ("topk1", (big, 0)),
                        ("kthvalue", (0,)), ("median", (0,)), ("mode", (0,)),
                        ("cumsum0", (big, 0)), ("cumsum1", (big, 0)), ("cummax", (big, 0)),
                        ("gather", (big, 0)), ("softmax", (big, 0)), ("log_softmax", (big, 0)),
                        ("index_select", (big, 2, 0)), ("cumsum_mid", (2**40, 0, 3))]:
        assert f"{name} {shape}" in out, (name, out)


def test_padding_an_empty_batch_by_a_huge_amount_answers_at_once():
    # F.pad of a (0, 4, 1) tensor by 2**40 built a Python list of 2**41 source
    # positions first; PyTorch 2.15 returns the empty (0, 4, 2**41 + 1) tensor.
    out = run_capped(
        """
        x = fg.empty(0, 4, 1)
        for mode in ("constant", "replicate"):
            print(mode, tuple(F.pad(x, (2**40, 2**40), mode=mode).shape))
        print("2d", tuple(F.pad(fg.empty(0, 2, 1, 1), (2**20, 1, 1, 2**20),
                                mode="replicate").shape))
        """
    )
    assert f"constant (0, 4, {2**41 + 1})" in out
    assert f"replicate (0, 4, {2**41 + 1})" in out
    assert f"2d (0, 2, {2**20 + 2}, {2**20 + 2})" in out


def test_padding_by_a_huge_amount_refuses_the_output_before_building_indices():
    # PyTorch 2.15: the allocator's error for a 2**41-element output, and the
    # storage-size check for sizes whose product overflows.
    raises_in_child("F.pad(fg.ones(1, 4, 1), (2**40, 2**40), mode='replicate')", "RuntimeError",
                    ALLOC)
    raises_in_child("F.pad(fg.ones(1, 4, 1, 1), (2**40, 2**40, 2**40, 2**40), mode='replicate')",
                    "RuntimeError", "Storage size calculation overflowed with sizes=[1, 4, ")
    raises_in_child("F.pad(fg.ones(1, 4, 1), (2**62, 2**62), mode='replicate')",
                    "RuntimeError", "Storage size calculation overflowed")
    # The other modes refuse a padding larger than the input, as PyTorch does.
    raises_in_child("F.pad(fg.ones(1, 4, 2), (2**40, 2**40), mode='reflect')", "RuntimeError",
                    "Padding size should be less than the corresponding input dimension")
    raises_in_child("F.pad(fg.ones(1, 4, 2), (2**40, 2**40), mode='circular')", "RuntimeError",
                    "Padding value causes wrapping around more than once")


def test_products_pooling_and_differences_of_empty_tensors_beside_huge_sizes():
    # 2**40 empty matrices, an empty batch 2**40 deep or wide: each kernel used
    # to loop over (or tabulate) the huge side before finding nothing to do.
    # PyTorch 2.15 gives these shapes at once.
    out = run_capped(
        """
        b = 2**40
        calls = {
            "bmm": lambda: fg.bmm(fg.empty(b, 3, 0), fg.empty(b, 0, 0)),
            "matmul": lambda: fg.empty(b, 0, 3) @ fg.empty(b, 3, 0),
            "sdpa": lambda: F.scaled_dot_product_attention(
                fg.empty(b, 0, 3), fg.empty(b, 0, 3), fg.empty(b, 0, 3)),
            "max_pool2d": lambda: F.max_pool2d(fg.empty(0, 1, b, 2), 1),
            "avg_pool2d": lambda: F.avg_pool2d(fg.empty(0, 1, b, 2), 1),
            "max_pool3d": lambda: F.max_pool3d(fg.empty(0, 1, b, 2, 2), (2, 1, 1)),
            "avg_pool3d": lambda: F.avg_pool3d(fg.empty(0, 1, b, 2, 2), 1),
            # The n-th difference of nothing: only the length shortens (PyTorch
            # steps it down one at a time).
            "diff": lambda: fg.empty(0, 2**62).diff(n=b),
            # No samples over 2**40 frames: no loop over the frames.
            "ctc_loss": lambda: F.ctc_loss(fg.empty(b, 0, 3), fg.empty(0, 0, dtype=fg.int64),
                                           [], [], reduction="none"),
            "tril_indices": lambda: fg.tril_indices(b, 0),
        }
        for name, f in calls.items():
            print(name, tuple(f().shape))
        """,
    )
    b = 2**40
    for name, shape in [("bmm", (b, 3, 0)), ("matmul", (b, 0, 0)), ("sdpa", (b, 0, 3)),
                        ("max_pool2d", (0, 1, b, 2)), ("avg_pool2d", (0, 1, b, 2)),
                        ("max_pool3d", (0, 1, b // 2, 2, 2)), ("avg_pool3d", (0, 1, b, 2, 2)),
                        ("diff", (0, 2**62 - b)), ("ctc_loss", (0,)),
                        ("tril_indices", (2, 0))]:
        assert f"{name} {shape}" in out, (name, out)


def test_a_section_count_no_list_can_hold_is_refused_at_once():
    # 2**40 views cannot exist: refused before a loop that fills memory.
    raises_in_child("fg.ones(2, 3).tensor_split(2**40)", "MemoryError", "RAISED MemoryError")
