"""The thread pool: its size, forked children, and the GIL around kernels."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ferrograd as fg


def test_set_and_get_num_threads():
    before = fg.get_num_threads()
    try:
        fg.set_num_threads(1)
        assert fg.get_num_threads() == 1
        a = fg.rand(300, 300)
        np.testing.assert_allclose((a @ a).numpy(), a.numpy() @ a.numpy(), rtol=1e-4, atol=1e-4)
        fg.set_num_threads(2)
        assert fg.get_num_threads() == 2
    finally:
        fg.set_num_threads(before)


def test_set_num_threads_rejects_zero():
    with pytest.raises(RuntimeError):
        fg.set_num_threads(0)


def test_environment_variable_sets_the_pool_size():
    code = "import ferrograd as fg; print(fg.get_num_threads())"
    env = dict(os.environ, FERROGRAD_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_runs_parallel_kernels():
    # Use the pool in the parent first, so the child inherits a pool whose
    # threads do not exist in it.
    big = fg.rand(1 << 20)
    big.sum().item()
    pid = os.fork()
    if pid == 0:  # child: any hang or crash shows up as a bad exit status
        try:
            x = fg.rand(1 << 20, requires_grad=True)
            (x * 2).tanh().sum().backward()
            ok = x.grad.shape == (1 << 20,)
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_big_kernels_release_the_gil():
    import time

    a = fg.rand(1500, 1500)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.01)
        # One long call into Rust: if it held the GIL, the ticker could not
        # record a single time strictly between its start and end.
        start = time.perf_counter()
        a @ a
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    assert any(start < tick < end for tick in ticks)


def test_concurrent_threads_get_the_same_answers_as_one():
    # Several Python threads run parallel kernels at once (the GIL is released
    # around them); one parallel region runs at a time and the rest go inline.
    rng = np.random.default_rng(0)
    a = fg.tensor(rng.standard_normal((300, 400)), dtype=fg.float64)
    b = fg.tensor(rng.standard_normal((400, 200)), dtype=fg.float64)
    want_mm = (a @ b).numpy()
    want_sum = a.sum(0).numpy()
    errors = []

    def work():
        try:
            for _ in range(20):
                # Blocking may differ between a split and a whole product: last-bit changes only.
                np.testing.assert_allclose((a @ b).numpy(), want_mm, rtol=1e-12, atol=1e-12)
                np.testing.assert_array_equal(a.sum(0).numpy(), want_sum)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
