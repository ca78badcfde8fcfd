"""``ferrograd.__config__`` and ``python -m ferrograd``: the version has one source, the
build is baseline x86-64, and the SIMD paths reported are the ones the kernels'
own dispatch selects on this CPU."""

from __future__ import annotations

import doctest
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ferrograd
from ferrograd import _C
from ferrograd import __config__ as config

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE_ROOT = str(Path(ferrograd.__file__).resolve().parent.parent)


def cargo_version() -> str:
    package = (ROOT / "Cargo.toml").read_text().split("[package]")[1].split("\n[")[0]
    return re.search(r'^version = "([^"]+)"', package, re.M).group(1)


def test_the_version_has_one_source():
    project = (ROOT / "pyproject.toml").read_text().split("[project]")[1].split("\n[")[0]
    assert not re.search(r"^version\s*=", project, re.M)
    assert re.search(r'^dynamic = \["version"\]', project, re.M)
    assert ferrograd.__version__ == _C.__version__ == cargo_version()
    assert _C._build_info()["version"] == ferrograd.__version__
    if "site-packages" in Path(ferrograd.__file__).parts:  # an installed wheel
        assert importlib.metadata.version("ferrograd") == ferrograd.__version__


def test_the_build_is_baseline_x86_64():
    info = _C._build_info()
    assert set(info) >= {"git_commit", "rustc", "profile", "target", "target_features"}
    assert info["rustc"].startswith("rustc "), info
    if info["target"].startswith("x86_64"):
        # Compiled for the x86-64 baseline: the AVX paths are chosen at run time only.
        compiled = set(info["target_features"].split(","))
        assert "sse2" in compiled
        assert not compiled & {"avx", "avx2", "fma", "avx512f"}, compiled


def test_simd_paths_follow_the_cpu():
    have = _C._cpu_features()
    paths = {family: path for family, (path, _) in _C._simd_paths().items()}
    assert set(paths) == {"vector", "gemm", "small_gemm", "conv", "norm_f32", "randn", "vmath",
                          "convert", "checksum", "bf16", "amx", "transpose", "extreme_rows"}
    if not have:  # not x86-64
        return
    x86_v4 = all(have[f] for f in ("avx512f", "avx512vl", "avx512bw", "avx512dq", "avx2", "fma"))
    x86_v3 = all(have[f] for f in ("avx", "avx2", "fma"))
    # multiversion's clones (kernels/*.rs): the AVX-512 clone needs F, VL, BW and DQ.
    assert paths["vector"] == ("avx512" if x86_v4 else "avx2" if x86_v3 else "baseline")
    # gemm-common's init_gemm_fn: AVX-512F, else FMA, else scalar.
    assert paths["gemm"] == ("avx512" if have["avx512f"] else "avx2" if have["fma"] else "scalar")
    # small_gemm::isa(): AVX-512F, else AVX2 with FMA.
    assert paths["small_gemm"] == (
        "avx512" if have["avx512f"] else "avx2" if have["avx2"] and have["fma"] else "scalar"
    )
    # conv_direct::available_isa(): AVX-512F with VL, else small_gemm's AVX2 + FMA.
    wide = have["avx512f"] and have["avx512vl"]
    assert paths["conv"] == (
        "avx512 direct" if wide else "avx2 direct" if paths["small_gemm"] != "scalar"
        else "im2col + gemm"
    )
    assert paths["norm_f32"] == ("avx512" if have["avx512f"] else paths["vector"])
    assert paths["randn"] == ("fma" if have["fma"] else "baseline")
    # kernels/vmath: the AVX-512 loop needs F, VL, BW, DQ and FMA; AVX2 needs FMA.
    if os.environ.get("FERROGRAD_ISA") is None:
        assert paths["vmath"] == ("avx512" if x86_v4 else "avx2" if x86_v3 else "portable")
    # kernels/convert.rs: F16C with AVX; checksum.rs: SSE4.2's crc32.
    assert paths["convert"] == ("f16c" if have["avx"] and have["f16c"] else "portable")
    assert paths["checksum"] == ("sse4.2" if have["sse4.2"] else "table")
    assert paths["extreme_rows"] == ("exact" if paths["vmath"] == "portable" else "avx2")
    # kernels/transpose.rs: AVX2 (through vmath's choice, so FERROGRAD_ISA caps it too).
    if os.environ.get("FERROGRAD_ISA") is None:
        assert paths["transpose"] == ("avx2" if x86_v3 else "scalar")
    # bf16_gemm::Path::best(): AMX tiles, else AVX512_BF16 (with F, BW, VL, DQ), else the
    # float32 GEMM on widened operands; the row reports the path products take now.
    bf16 = ferrograd.backends.cpu
    avx512_bf16 = have["avx512_bf16"] and all(
        have[f] for f in ("avx512f", "avx512vl", "avx512bw", "avx512dq"))
    best = ("amx" if avx512_bf16 and have["amx_bf16"] and have["amx_tile"]
            else "avx512_bf16" if avx512_bf16 else "portable")
    assert bf16.bf16_matmul_paths()[-1] == best
    assert paths["bf16"] == bf16.get_bf16_matmul_path()
    if "FERROGRAD_BF16_GEMM" not in os.environ:
        assert paths["bf16"] == best
    assert paths["amx"] == ("bf16 tiles" if paths["bf16"] == "amx" else "none")


def test_simd_paths_report_a_forced_bf16_path():
    cpu = ferrograd.backends.cpu
    before = cpu.get_bf16_matmul_path()
    try:
        for name in cpu.bf16_matmul_paths():
            cpu.set_bf16_matmul_path(name)
            paths = {family: path for family, (path, _) in _C._simd_paths().items()}
            assert paths["bf16"] == name
            assert paths["amx"] == ("bf16 tiles" if name == "amx" else "none")
            assert any(ln.split()[:1] == ["bf16"] and name in ln for ln in config.show().splitlines())
    finally:
        cpu.set_bf16_matmul_path(None)
    assert cpu.get_bf16_matmul_path() == before or "FERROGRAD_BF16_GEMM" in os.environ


def test_cpu_features_match_the_kernel_view_of_proc_cpuinfo():
    flags_line = next(
        (ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")),
        None,
    ) if Path("/proc/cpuinfo").exists() else None
    if flags_line is None:
        pytest.skip("no /proc/cpuinfo flags on this system")
    flags = set(flags_line.split(":", 1)[1].split())
    have = _C._cpu_features()
    for ours, linux in [("avx2", "avx2"), ("fma", "fma"), ("f16c", "f16c"), ("avx512f", "avx512f"),
                        ("avx512bw", "avx512bw"), ("avx512_bf16", "avx512_bf16"),
                        ("amx_tile", "amx_tile"), ("amx_bf16", "amx_bf16")]:
        assert have[ours] == (linux in flags), (ours, have[ours])


def _dispatch_sites() -> dict[str, set[str]]:
    """Each kind of run-time dispatch in the crate, and the files that use it."""
    sites: dict[str, set[str]] = {"multiversion": set(), "detected": set(), "enabled": set()}
    for path in SRC.rglob("*.rs"):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text()
        if "multiversion(targets" in text:
            sites["multiversion"].add(rel)
        if "is_x86_feature_detected!" in text:
            sites["detected"].add(rel)
        if "target_feature(enable" in text:
            sites["enabled"].add(rel)
    return sites


def test_every_multiversion_kernel_lists_the_probed_targets():
    probe = re.search(r"multiversion\(targets\((.*?)\)\)", (SRC / "kernels/simd.rs").read_text(),
                      re.S)
    assert probe is not None
    want = re.findall(r'"([^"]+)"', probe.group(1))
    count = 0
    for path in SRC.rglob("*.rs"):
        for targets in re.findall(r"multiversion\(targets\((.*?)\)\)", path.read_text(), re.S):
            count += 1
            assert re.findall(r'"([^"]+)"', targets) == want, path
    assert count > 40  # the elementwise, reduction, norm, softmax, optimizer and RNN kernels


def test_every_hand_written_dispatch_has_a_row():
    # A new file that tests CPU features at run time must add its family to
    # kernels/simd.rs::paths(), then to this list.
    sites = _dispatch_sites()
    assert sites["detected"] == {
        "kernels/simd.rs", "kernels/trig_f32.rs", "kernels/norm.rs",
        "random/continuous.rs", "kernels/bf16_gemm/mod.rs",
        "checksum.rs",
        "kernels/convert.rs", "kernels/vmath/mod.rs",
    }
    assert sites["enabled"] <= {
        "kernels/simd.rs", "kernels/conv_direct/blocks.rs", "kernels/conv_direct/channels.rs",
        "kernels/trig_f32.rs",
        "kernels/norm_f32.rs", "kernels/small_gemm/mod.rs", "kernels/small_gemm/pairs.rs",
        "random/continuous.rs", "kernels/bf16_gemm/amx.rs", "kernels/bf16_gemm/avx512.rs",
        "kernels/bf16_gemm/convert.rs", "kernels/bf16_gemm/pack.rs", "checksum.rs",
        "kernels/convert.rs", "kernels/vmath/mod.rs", "kernels/transpose.rs",
        "kernels/extreme_rows.rs", "kernels/max_pool.rs", "kernels/distance.rs",
    }, sites["enabled"]


def test_show_reports_everything():
    text = config.show()
    lines = text.splitlines()
    assert lines[0] == f"ferrograd {ferrograd.__version__}"
    assert re.match(r"  build: \S+ \(opt-level \d\), \S+, rustc ", lines[1]), lines[1]
    assert "SIMD paths:" in lines
    for family, (path, _) in _C._simd_paths().items():
        assert any(ln.split()[:1] == [family] and path in ln for ln in lines), family
    assert f"threads: {ferrograd.get_num_threads()}" in lines
    assert any(ln.split()[:2] == ["numpy", __import__("numpy").__version__] for ln in lines)
    info = config.get_info()
    assert info["num_threads"] == ferrograd.get_num_threads()
    assert info["extras"]["numpy"] == __import__("numpy").__version__
    assert "threads" in config.parallel_info().lower()


def test_absent_extras_are_reported_not_imported(monkeypatch):
    monkeypatch.setattr(config, "_EXTRAS", (
        *config._EXTRAS, ("ferrograd_no_such_module", "no-such-dist", "a test"),
    ))
    before = set(sys.modules)
    info = config.get_info()
    assert info["extras"]["ferrograd_no_such_module"] is None
    assert "no-such-dist  not installed" in config.show().replace("   ", "  ")
    # Reporting imports none of the optional packages.
    assert not {m for m in set(sys.modules) - before
                if m.split(".")[0] in {"mpi4py", "matplotlib", "sklearn", "tqdm"}}


def test_thread_count_follows_set_num_threads_in_a_child():
    env = dict(os.environ, FERROGRAD_NUM_THREADS="3")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-m", "ferrograd"], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout
    assert "threads: 3" in out.splitlines()
    code = "import ferrograd; print(ferrograd.__config__.parallel_info())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    assert "FERROGRAD_NUM_THREADS=3" in out


def test_python_m_ferrograd_prints_show():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-m", "ferrograd"], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout
    assert out.splitlines()[0] == f"ferrograd {ferrograd.__version__}"
    assert "SIMD paths:" in out and "extras:" in out


def test_config_docstring_examples():
    result = doctest.testmod(config)
    assert result.attempted >= 1 and result.failed == 0
