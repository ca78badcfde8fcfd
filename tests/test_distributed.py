"""ferrograd.distributed, DistributedDataParallel and DistributedSampler.

Multi-process checks run tests/distributed_worker.py under ``mpiexec`` with 2 and 3
processes; each rank compares its results with NumPy references and a single-process
reference training run. They are skipped only when mpi4py or mpiexec is not installed
(``pip install mpi4py mpich``; CI installs both through the ``test`` extra).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ferrograd
from ferrograd.distributed import DistributedSampler
from ferrograd.distributed.run import find_mpiexec

ROOT = Path(__file__).resolve().parent.parent
# Where the ferrograd under test was imported from (the source tree in a development
# install, site-packages in a plain one), so child processes import the same build.
PACKAGE_ROOT = str(Path(ferrograd.__file__).resolve().parent.parent)
WORKER = Path(__file__).resolve().parent / "distributed_worker.py"

try:
    import mpi4py  # noqa: F401

    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False
MPIEXEC = find_mpiexec()
needs_mpi = pytest.mark.skipif(
    not (HAVE_MPI4PY and MPIEXEC),
    reason="MPI is not installed (needs mpi4py and mpiexec: pip install mpi4py mpich)",
)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_ROOT, *filter(None, [env.get("PYTHONPATH")])]
    )
    env["FERROGRAD_NUM_THREADS"] = "1"
    return env


def _mpirun(n, *args, timeout=60):
    cmd = [MPIEXEC, "-n", str(n), sys.executable, str(WORKER), *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT
    )


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_collectives_and_ddp_match_references(n):
    # Collectives against NumPy; DDP (deterministic: bit for bit; otherwise allclose) for
    # 20 steps against one process on the same global batch; no_sync; unused parameters.
    r = _mpirun(n, "all")
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(n):
        assert f"rank {rank} OK" in r.stdout, r.stdout + r.stderr


@needs_mpi
def test_checkpoint_from_rank_0_resumes_on_another_number_of_processes(tmp_path):
    path = str(tmp_path / "ckpt.npz")
    r = _mpirun(2, "checkpoint", "save", path)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _mpirun(3, "checkpoint", "resume", path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(f"rank {k} OK" in r.stdout for k in range(3)), r.stdout + r.stderr


@needs_mpi
def test_launcher_runs_the_script_under_mpiexec():
    cmd = [sys.executable, "-m", "ferrograd.distributed.run", "-n", "2", str(WORKER), "all"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=_env(), cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0 OK" in r.stdout and "rank 1 OK" in r.stdout


@needs_mpi
def test_a_rank_that_raises_fails_the_job_instead_of_hanging():
    t0 = time.monotonic()
    r = _mpirun(3, "raise", timeout=30)
    elapsed = time.monotonic() - t0
    assert r.returncode != 0
    assert "deliberate failure on rank 1" in r.stderr
    assert "rank 1 raised; aborting all ranks" in r.stderr
    # The survivors sat in a barrier and then a 60 s sleep: they were killed, not waited for.
    assert elapsed < 20, elapsed
    assert " OK" not in r.stdout


@needs_mpi
def test_a_rank_that_raises_inside_try_finally_destroy_still_fails_the_job():
    # `finally: destroy_process_group()` runs before the excepthook sees the exception;
    # it must not disarm the abort, or the other ranks wait in their barrier forever.
    t0 = time.monotonic()
    r = _mpirun(3, "raise_in_try_finally", timeout=30)
    assert r.returncode != 0
    assert "deliberate failure on rank 1" in r.stderr
    assert "rank 1 raised; aborting all ranks" in r.stderr
    assert time.monotonic() - t0 < 20
    assert " OK" not in r.stdout


@needs_mpi
@pytest.mark.parametrize(
    ("mode", "what", "limit"),
    [
        ("stuck", "all_reduce", "0:00:02"),
        ("stuck_async", "all_reduce", "0:00:01"),
        ("stuck_ddp", "DistributedDataParallel: the gradients' all-reduce", "0:00:02"),
    ],
)
def test_a_stuck_rank_makes_the_others_fail_after_the_timeout(mode, what, limit):
    # Rank 1 sleeps for 60 s without raising; ranks 0 and 2 wait in a collective whose
    # timeout (init_process_group's, or Work.wait's) ends the whole job with a message.
    t0 = time.monotonic()
    r = _mpirun(3, mode, timeout=40)
    elapsed = time.monotonic() - t0
    assert r.returncode != 0
    assert f"]: {what} ran for" not in r.stderr  # the rank is named, then the collective
    assert f"rank 0: {what} ran for" in r.stderr or f"rank 2: {what} ran for" in r.stderr, (
        r.stderr
    )
    assert f"milliseconds before timing out (timeout {limit})" in r.stderr
    assert "aborting all ranks" in r.stderr
    assert elapsed < 20, elapsed
    assert " OK" not in r.stdout


def test_timeouts_must_be_timedeltas():
    import ferrograd.distributed as dist

    with pytest.raises(
        TypeError, match="Expected timeout argument to be of type datetime.timedelta, got 30"
    ):
        dist.init_process_group("mpi", timeout=30)
    work = dist.Work("all_reduce", [], None)
    with pytest.raises(TypeError, match="of type datetime.timedelta, got 1.5"):
        work.wait(timeout=1.5)
    assert not dist.is_initialized()
    assert dist.distributed_c10d.default_pg_timeout.total_seconds() == 1800


def _singleton(code, **env_vars):
    # One process started without mpiexec, as torchrun would start it: MPI makes it a
    # world of one, and RANK/WORLD_SIZE are the only launcher variables.
    env = _env()
    for k in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
              "PMIX_RANK", "PMIX_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "RANK", "WORLD_SIZE"):
        env.pop(k, None)
    env.update(env_vars)
    return subprocess.run(
        [sys.executable, "-c", "import ferrograd.distributed as dist\n" + code],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT,
    )


@needs_mpi
def test_torchrun_style_rank_and_world_size_are_read_without_an_mpi_launcher():
    # One write per process, so mpiexec's forwarding cannot interleave the two ranks'.
    ok = (
        "dist.init_process_group('mpi')\n"
        "print(f'rank {dist.get_rank()} of {dist.get_world_size()}', flush=True)"
    )
    r = _singleton(ok, RANK="0", WORLD_SIZE="1")
    assert r.returncode == 0 and r.stdout.strip() == "rank 0 of 1", r.stdout + r.stderr
    # A rank of a larger world started without MPI cannot join it: say so, not train alone.
    r = _singleton(ok, RANK="1", WORLD_SIZE="2")
    assert r.returncode != 0
    assert (
        "RuntimeError: the RANK environment variable gives rank 1 but MPI reports rank 0 "
        "(world size 1); start the processes with `python -m ferrograd.distributed.run"
    ) in r.stderr
    r = _singleton(ok, RANK="0", WORLD_SIZE="2")
    assert "the WORLD_SIZE environment variable gives world_size 2 but MPI reports " \
        "world_size 1" in r.stderr
    r = _singleton("dist.init_process_group('mpi', rank=0, world_size=4)")
    assert "init_process_group(world_size=...) gives world_size 4" in r.stderr
    # Under mpiexec, MPI's own variables win over stale torchrun ones.
    env = dict(_env(), RANK="7", WORLD_SIZE="9")
    r = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, "-c", "import ferrograd.distributed as dist\n" + ok],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    assert "rank 0 of 2" in r.stdout and "rank 1 of 2" in r.stdout, r.stdout


@needs_mpi
def test_the_distributed_guide_commands_run_the_example():
    readme = (ROOT / "docs" / "distributed.md").read_text()
    command = "python -m ferrograd.distributed.run -n 2 examples/ddp_spirals.py"
    assert command in readme and "pip install mpi4py mpich" in readme
    r = subprocess.run(
        [sys.executable, *command.split()[1:]],
        capture_output=True, text=True, timeout=120, env=_env(), cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("step")]
    # Only rank 0 reports; both ranks train one model to separate the three spirals.
    assert len(lines) == 7, r.stdout
    assert float(lines[-1].split()[-1]) >= 0.95, lines[-1]


def test_launcher_explains_a_missing_mpiexec(tmp_path, monkeypatch, capsys):
    import types

    from ferrograd.distributed import run

    bindir = tmp_path / "bin"
    bindir.mkdir()
    # mpi4py importable, but no mpiexec beside the interpreter nor on PATH.
    monkeypatch.setitem(sys.modules, "mpi4py", types.ModuleType("mpi4py"))
    monkeypatch.setattr(sys, "executable", str(bindir / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert run.find_mpiexec() is None
    assert run.main(["-n", "2", "train.py"]) == 1
    err = capsys.readouterr().err
    assert "an MPI launcher (mpiexec) not found" in err
    assert "pip install 'ferrograd[distributed]'" in err and "pip install mpi4py mpich" in err
    # The mpich wheel's mpiexec sits beside the interpreter: found there before PATH.
    fake = bindir / "mpiexec"
    fake.write_text(f'#!/bin/sh\necho "$FERROGRAD_NUM_THREADS $@" > "{bindir / "args"}"\n')
    fake.chmod(0o755)
    assert run.find_mpiexec() == str(fake)
    assert run.main(["-n", "3", "--threads", "2", "train.py", "--lr", "0.1"]) == 0
    assert (bindir / "args").read_text().split() == [
        "2", "-n", "3", str(bindir / "python"), "train.py", "--lr", "0.1"
    ]
    with pytest.raises(SystemExit):
        run.main(["-n", "0", "train.py"])
    assert "-n must be at least 1" in capsys.readouterr().err


@needs_mpi
@pytest.mark.parametrize(
    ("how", "says"),
    [
        # Caught an error and called sys.exit(1): its process exits (status 1).
        ("exit", "rank 1 exited after"),
        # Left the script early (status 0): the others would wait for ever.
        ("return", "rank 1 exited after"),
        # Fewer batches, then destroy_process_group() and other work.
        ("destroy", "rank 1 called destroy_process_group() after"),
    ],
)
def test_a_rank_that_leaves_is_noticed_within_seconds(how, says):
    # Rank 1 stops at step 2 of 4; ranks 0 and 2 wait in step 2's reduction. Without the
    # liveness check they would wait for the 30-minute timeout (PyTorch/gloo: ~2 s).
    t0 = time.monotonic()
    r = _mpirun(3, f"leave_{how}", timeout=60)
    elapsed = time.monotonic() - t0
    assert r.returncode != 0
    assert says in r.stderr, r.stderr
    assert "which rank 1 never entered" in r.stderr
    assert "with ddp.join()" in r.stderr
    assert "aborting all ranks" in r.stderr
    assert elapsed < 20, elapsed


@needs_mpi
def test_ranks_in_different_collectives_fail_within_seconds():
    # Rank 1 ran out of batches and went on to the script's final barrier while the others
    # wait in their next step: MPI would match nothing and hang until the timeout.
    t0 = time.monotonic()
    r = _mpirun(2, "leave_barrier", timeout=60)
    elapsed = time.monotonic() - t0
    assert r.returncode != 0
    # Either the ranks saw each other wait in different collectives, or rank 1 got
    # through its barrier (MPI may match it with rank 0's broadcast) and left.
    assert (
        "collective mismatch: this rank waits in" in r.stderr
        or "every rank is blocked, in collectives that do not match" in r.stderr
        or "rank 1 called destroy_process_group() after" in r.stderr
    ), r.stderr
    assert elapsed < 20, elapsed


@needs_mpi
def test_launcher_names_a_rank_killed_by_a_signal():
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "ferrograd.distributed.run", "-n", "2", str(WORKER), "kill"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=_env(), cwd=ROOT)
    assert r.returncode != 0
    assert "ferrograd.distributed.run: rank 1 was killed by signal 9 (Killed)" in r.stderr
    assert "Exit codes:" not in r.stdout + r.stderr
    assert time.monotonic() - t0 < 20


@needs_mpi
def test_ddp_refuses_parameters_that_differ_between_ranks():
    # requires_grad=False on one rank only: PyTorch's check and words, on every rank.
    r = _mpirun(2, "requires_grad_mismatch")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("rank 0 DDP: DDP expects same model across all ranks, but Rank 0 has 4 params, "
            "while rank 1 has inconsistent 3 params.") in r.stdout
    assert ("rank 1 DDP: DDP expects same model across all ranks, but Rank 1 has 3 params, "
            "while rank 0 has inconsistent 4 params.") in r.stdout


@needs_mpi
def test_arguments_wrong_on_one_rank_raise_on_every_rank():
    r = _mpirun(2, "arg_mismatch")
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        assert f"rank {rank} ARG: all_gather: rank 1: tensor_list must be a list of 2" in r.stdout
        assert f"rank {rank} ARG: collective mismatch: rank 0 called all_reduce" in r.stdout
        assert f"rank {rank} OK" in r.stdout


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_join_trains_on_uneven_inputs(n):
    # Rank r has 2 + r batches; the result matches a single process that averages, at
    # each step, the gradients of the ranks that still had a batch.
    r = _mpirun(n, "join", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert all(f"rank {k} OK" in r.stdout for k in range(n)), r.stdout + r.stderr


@needs_mpi
def test_join_can_throw_on_every_rank():
    r = _mpirun(2, "join_throw")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0 JOIN THROW: Rank 0 exhausted all inputs." in r.stdout
    assert ("rank 1 JOIN THROW: Detected at least one rank that exhausted inputs. Throwing "
            "across all ranks.") in r.stdout


@needs_mpi
def test_mismatched_shapes_raise_on_every_rank():
    r = _mpirun(3, "mismatch")
    assert r.returncode == 0, r.stdout + r.stderr
    # Ranks' lines may interleave in mpiexec's forwarded output; each message is whole.
    msg = "same shape and dtype on every rank, got rank 0: (3,) ferrograd.float32, rank 1: (4,)"
    for rank in range(3):
        assert f"rank {rank} MISMATCH: all_reduce: tensors must have the {msg}" in r.stdout
        # DDP's construction compares every rank's parameters with rank 0's, in
        # PyTorch's words (which name the rank that differs, in brackets).
        assert (
            f"rank {rank} DDP MISMATCH: [1]: params[0] in "
            + ("this process" if rank == 1 else "process 1")
            + " with sizes [2, 4] appears not to match sizes of the same param in process 0."
        ) in r.stdout
    assert "(params[0] is 'weight' there; process 0 has 'weight' with sizes [2, 3])" in r.stdout


def _run_without_mpi4py(code):
    # A None entry in sys.modules makes `import mpi4py` fail as if it were not installed.
    prelude = "import sys; sys.modules['mpi4py'] = None; sys.modules['mpi4py.MPI'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True, text=True, timeout=30, env=_env(), cwd=ROOT,
    )


def test_ferrograd_imports_without_mpi4py_and_says_what_to_install():
    r = _run_without_mpi4py(
        "import ferrograd, ferrograd.distributed as d\n"
        "from ferrograd.nn.parallel import DistributedDataParallel\n"
        "assert not d.is_available() and not d.is_initialized()\n"
        "try:\n"
        "    d.init_process_group('mpi')\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    assert r.returncode == 0, r.stderr
    assert "pip install 'ferrograd[distributed]'" in r.stdout
    r = _run_without_mpi4py(
        "import sys; from ferrograd.distributed.run import main\n"
        "sys.exit(main(['-n', '2', 'train.py']))\n"
    )
    assert r.returncode == 1
    assert "mpi4py" in r.stderr and "pip install" in r.stderr


def test_collectives_need_a_process_group():
    import ferrograd.distributed as dist

    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.all_reduce(ferrograd.ones(2))
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("nccl")


class _Data:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def _shards(n, world, **kw):
    return [list(DistributedSampler(_Data(n), world, r, shuffle=False, **kw)) for r in range(world)]


def test_sampler_partitions_and_pads_like_pytorch():
    # 10 samples over 3 ranks: 12 slots, padded with the first two indices, dealt round-robin.
    assert _shards(10, 3) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert [len(DistributedSampler(_Data(10), 3, r, shuffle=False)) for r in range(3)] == [4] * 3
    # drop_last trims to the largest multiple of the world size instead.
    assert _shards(10, 3, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # More ranks than samples: padding repeats the whole list as often as needed.
    assert _shards(2, 5) == [[0], [1], [0], [1], [0]]
    # An exact multiple needs neither.
    assert _shards(6, 2) == [[0, 2, 4], [1, 3, 5]]
    assert _shards(6, 2, drop_last=True) == [[0, 2, 4], [1, 3, 5]]


def test_sampler_rejects_a_bad_rank():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(_Data(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(_Data(4), num_replicas=3, rank=-1)


def test_sampler_shuffle_uses_a_seeded_permutation():
    s = [DistributedSampler(_Data(11), 2, r, seed=3) for r in range(2)]
    if not hasattr(ferrograd, "randperm"):
        with pytest.raises(NotImplementedError, match="ferrograd.randperm"):
            list(s[0])
        return
    got = list(s[0]) + list(s[1])
    assert sorted(set(got)) == list(range(11)) and len(got) == 12
    first = list(s[0])
    assert list(s[0]) == first  # same epoch, same order
    s[0].set_epoch(1)
    assert list(s[0]) != first


def test_shuffled_sampler_is_the_seeded_permutation_split_by_rank():
    from ferrograd.utils.data import DistributedSampler as FromData

    assert FromData is DistributedSampler
    perm = ferrograd.randperm(10, generator=ferrograd.Generator().manual_seed(3)).tolist()
    for rank in (0, 1):
        s = FromData(list(range(10)), num_replicas=2, rank=rank, shuffle=True, seed=3)
        assert list(s) == perm[rank::2]
    s.set_epoch(1)
    perm1 = ferrograd.randperm(10, generator=ferrograd.Generator().manual_seed(4)).tolist()
    assert list(s) == perm1[1::2]
