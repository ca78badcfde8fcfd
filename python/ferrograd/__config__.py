"""How this ferrograd was built and what it runs on here.

``ferrograd.__config__.show()`` returns the report that ``python -m ferrograd``
prints: the version, how the extension was built, the CPU features found,
the instruction-set path each kernel family selected on this CPU, the thread
count and the optional extras that are installed. As in PyTorch, ``show()``
and ``parallel_info()`` return text; print it.

The extension is compiled for baseline x86-64 and picks its AVX2 or AVX-512
kernels when it runs, so one wheel serves every x86-64 CPU at its speed; the
``SIMD paths`` lines say which kernels run here.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys

from . import _C

__all__ = ["get_info", "parallel_info", "show"]

# Optional packages ferrograd uses when they are there: (import name, distribution, what for).
_EXTRAS = (
    ("numpy", "numpy", "required"),
    ("mpi4py", "mpi4py", "ferrograd.distributed"),
    ("safetensors", "safetensors", "interchange with safetensors files"),
    ("matplotlib", "matplotlib", "examples' pictures"),
    ("sklearn", "scikit-learn", "examples' data sets"),
    ("tqdm", "tqdm", "examples' progress bars"),
    ("hypothesis", "hypothesis", "ferrograd.testing.strategies"),
)


def _extras() -> dict[str, str | None]:
    """Each optional package's installed version, or ``None`` when it cannot be imported.

    Nothing is imported: the import system is asked where the module would come
    from, and the distribution's metadata for its version.
    """
    found: dict[str, str | None] = {}
    for module, dist, _ in _EXTRAS:
        if importlib.util.find_spec(module) is None:
            found[module] = None
            continue
        try:
            found[module] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[module] = "installed"
    return found


def get_info() -> dict[str, object]:
    """The facts :func:`show` reports, as a dictionary.

    Returns:
        A dict with the keys ``version``, ``build`` (the extension's build
        facts: ``git_commit``, ``rustc``, ``profile``, ``target``,
        ``target_features``, ``source_hash``: a hash of the Rust sources it was
        built from), ``python``, ``platform``, ``cpu`` (the CPU's
        model name), ``cpu_features`` (feature name to bool), ``simd_paths``
        (kernel family to the path it selected), ``num_threads`` and
        ``extras`` (package to version, ``None`` when absent).
    """
    paths = _C._simd_paths()
    return {
        "version": _C.__version__,
        "build": dict(_C._build_info()),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_features": dict(_C._cpu_features()),
        "simd_paths": {family: path for family, (path, _) in paths.items()},
        "num_threads": _C.get_num_threads(),
        "extras": _extras(),
    }


def _cpu_model() -> str:
    """The CPU's model name, with its family and model numbers where Linux gives them."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            fields: dict[str, str] = {}
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.processor() or platform.machine()
    name = fields.get("model name", platform.machine())
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


def parallel_info() -> str:
    """The thread pool's settings, as PyTorch's ``torch.__config__.parallel_info()``.

    Returns:
        Lines naming the number of threads the kernels use, where that number
        came from (``FERROGRAD_NUM_THREADS``, ``OMP_NUM_THREADS`` or the CPUs
        this process may run on) and the CPUs available.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    source = "the CPUs this process may use"
    for var in ("FERROGRAD_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").strip()
        if value.isdigit() and int(value) > 0:  # as the pool reads them (kernels/parallel.rs)
            source = f"{var}={value}"
            break
    return (
        f"ferrograd.get_num_threads() : {_C.get_num_threads()}\n"
        f"default thread count from   : {source}\n"
        f"CPUs available              : {cpus}\n"
    )


def show() -> str:
    """A report of this build and machine, as PyTorch's ``torch.__config__.show()``.

    Returns:
        The text ``python -m ferrograd`` prints: version, build, CPU, the CPU
        features found, the path each kernel family selected, the thread count
        and the optional packages installed.

    Example:
        >>> import ferrograd
        >>> report = ferrograd.__config__.show()
        >>> report.splitlines()[0].startswith("ferrograd ")
        True
    """
    info = get_info()
    build = info["build"]
    assert isinstance(build, dict)
    lines = [
        f"ferrograd {info['version']}",
        f"  build: {build['profile']}, {build['target']}, {build['rustc']}, "
        f"git commit {build['git_commit']}, Rust sources {build.get('source_hash', 'unknown')}",
        f"  compiled for: {build['target_features'] or 'the target default'} "
        "(faster paths are chosen at run time)",
        f"  python: {info['python']} on {info['platform']}",
        f"  cpu: {info['cpu']}",
    ]
    features = info["cpu_features"]
    assert isinstance(features, dict)
    found = [name for name, present in features.items() if present]
    missing = [name for name, present in features.items() if not present]
    lines.append(f"  cpu features found: {' '.join(found) or 'none'}")
    if missing:
        lines.append(f"  cpu features absent: {' '.join(missing)}")
    lines.append("SIMD paths:")
    paths = _C._simd_paths()
    width = max(len(f) for f in paths)
    for family, (path, covers) in paths.items():
        lines.append(f"  {family:<{width}}  {path:<13}  {covers}")
    lines.append(f"threads: {info['num_threads']}")
    lines.append("extras:")
    extras = info["extras"]
    assert isinstance(extras, dict)
    for module, dist, why in _EXTRAS:
        version = extras[module]
        state = version if version is not None else "not installed"
        lines.append(f"  {dist:<13} {state:<15} {why}")
    return "\n".join(lines) + "\n"
