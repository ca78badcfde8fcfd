"""Lists the call paths by which a kernel compiled for AVX2+FMA or AVX-512
reaches the software `fma`/`fmaf` (a diagnostic; exit status 1 when there is
one).

`f32::mul_add`/`f64::mul_add` compile to one instruction where FMA is
enabled and to a call into the bundled libm everywhere else. A closure
handed to `kernels::vmath::map` (or a helper called from a multiversioned
kernel) is compiled without FMA and is inlined into the FMA copies only when
LLVM judges it cheap; when it is not, the loop calls it once per element,
and each `mul_add` in it is a further call. This script disassembles the
extension, takes every function compiled for FMA (the `wide`/`avx2` copies
of `vmath`'s loops and the `multiversion` clones whose target list includes
`fma`), follows direct calls and tail calls from them, and prints each path
that ends in a function calling the software FMA. (Taking `mul_add` out of
such a closure removes the calls but does not by itself get the closure
inlined: LLVM's size threshold still applies.)

Usage: python tools/check_fma_calls.py [path/to/_C.abi3.so]  (needs objdump
and readelf from binutils; exit status 1 when a path is found).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DEFAULT_SO = Path(__file__).resolve().parents[1] / "python" / "ferrograd" / "_C.abi3.so"

# Function header in `objdump -d -C`: "0000000000123abc <name>:".
HEADER = re.compile(r"^([0-9a-f]+) <(.*)>:$")
# A direct call or jump to the start of a function: "call   1234 <name>"
# (names may hold '<', '>' and '+': `<impl Fn<A> for &F>::call`; a jump
# inside a function ends in "+0x..>").
DIRECT = re.compile(r"\s(?:call|jmp)\s+([0-9a-f]+) <(.*)>$")
INSIDE = re.compile(r"\+0x[0-9a-f]+$")
# A reference to a GOT slot (objdump prints the slot's address after '#').
SLOT = re.compile(r"# ([0-9a-f]+) <")

ROOT_PATTERNS = (
    # `kernels::vmath`'s `isa_loop!` copies.
    re.compile(r"::vmath::(?:map|zip|update)_on::(?:wide|avx2)$"),
    # `multiversion` clones built with FMA (and functions nested in them).
    re.compile(r"_fma_[a-z0-9_]*version(?:::|$)|_fma_version(?:::|$)"),
)


def software_fma(so: Path) -> tuple[set[int], set[int]]:
    """Addresses of the software `fma`/`fmaf` and of the GOT slots that hold them."""
    syms = subprocess.run(
        ["readelf", "-sW", str(so)], check=True, capture_output=True, text=True
    ).stdout
    targets = set()
    for line in syms.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[7] in ("fma", "fmaf"):
            targets.add(int(parts[1], 16))
    relocs = subprocess.run(
        ["readelf", "-rW", str(so)], check=True, capture_output=True, text=True
    ).stdout
    slots = set()
    for line in relocs.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] == "R_X86_64_RELATIVE" and int(parts[3], 16) in targets:
            slots.add(int(parts[0], 16))
        elif (
            len(parts) >= 5
            and parts[2] == "R_X86_64_GLOB_DAT"
            and (parts[4].split("@")[0] in ("fma", "fmaf"))
        ):
            slots.add(int(parts[0], 16))
    return targets, slots


def call_graph(so: Path, targets: set[int], slots: set[int]):
    """(names, edges, bad): function names by address, direct callees, and
    the functions that call the software FMA themselves."""
    names: dict[int, str] = {}
    edges: dict[int, set[int]] = {}
    bad: set[int] = set()
    proc = subprocess.Popen(
        ["objdump", "-d", "--no-show-raw-insn", "-C", str(so)],
        stdout=subprocess.PIPE,
        text=True,
    )
    cur = None
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        m = HEADER.match(line)
        if m:
            cur = int(m.group(1), 16)
            names[cur] = m.group(2)
            edges[cur] = set()
            continue
        if cur is None or cur in targets:
            continue
        m = DIRECT.search(line)
        if m and not INSIDE.search(m.group(2)):
            callee = int(m.group(1), 16)
            if callee in targets:
                bad.add(cur)
            elif callee != cur:
                edges[cur].add(callee)
        m = SLOT.search(line)
        if m and int(m.group(1), 16) in slots:
            bad.add(cur)
    proc.wait()
    if proc.returncode:
        raise SystemExit(f"objdump failed with status {proc.returncode}")
    return names, edges, bad


def offending_paths(so: Path) -> tuple[list[str], list[list[str]]]:
    """The names of the FMA-compiled functions, and the call paths from them
    to a function that calls the software FMA."""
    targets, slots = software_fma(so)
    names, edges, bad = call_graph(so, targets, slots)
    roots = [a for a, n in names.items() if any(p.search(n) for p in ROOT_PATTERNS)]
    paths = []
    seen: set[int] = set()
    for root in roots:
        # Depth-first with parent links, so each bad function is reported
        # once with one path that reaches it.
        stack = [(root, [root])]
        while stack:
            addr, path = stack.pop()
            if addr in seen:
                continue
            seen.add(addr)
            if addr in bad:
                paths.append([names.get(a, hex(a)) for a in path])
                continue
            for callee in edges.get(addr, ()):
                if callee in names and callee not in seen:
                    stack.append((callee, path + [callee]))
    return [names[a] for a in roots], paths


def main(argv: list[str]) -> int:
    so = Path(argv[1]) if len(argv) > 1 else DEFAULT_SO
    roots, paths = offending_paths(so)
    if not roots:
        print("no FMA-compiled function found (stripped or renamed?)", file=sys.stderr)
        return 2
    for path in paths:
        print(" -> ".join(path))
    if paths:
        print(f"{len(paths)} FMA-compiled path(s) call the software fma/fmaf", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
