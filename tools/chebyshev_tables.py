"""Prints the Chebyshev coefficient tables of `src/kernels/bessel.rs` and
`src/kernels/normal_fns.rs`.

Each table is the Chebyshev series of a smooth function on t in [-1, 1],
computed at 50 significant digits with mpmath from 64 Chebyshev nodes, and
cut where a coefficient falls below 1e-18 of the largest (1e-17 for
``ERFCX``, whose function stays within [1, 1.13]):

* ``I0E_A``/``I1E_A``: e^-x I0(x) and e^-x I1(x) / x on 0 <= x <= 8, x = 4 (t + 1);
* ``I0E_B``/``I1E_B``: sqrt(x) e^-x I0(x) and sqrt(x) e^-x I1(x) on x >= 8,
  8 / x = (t + 1) / 2 (the limit 1/sqrt(2 pi) at x = infinity);
* ``I1E_A32_LOW``/``I1E_A32_HIGH``: e^-x I1(x) / x on 0 <= x <= 4 and on
  4 <= x <= 8 (x = 2 (t + 1) and 4 + 2 (t + 1)), cut at 2^-27 for the
  float32 form, whose Clenshaw sum in float32 loses less to cancellation on
  the two halves than over the whole of [0, 8];
* ``ERFCX``: (1 + 2x) erfcx(x) on x >= 0, x = 3 (1 + t) / (1 - t) (the limit
  2/sqrt(pi) at t = 1), the mapping of Schonfelder's expansions of erfc
  (Math. Comp. 32, 1978), with 3 as the scale: 25 terms reach 1e-17.

Usage: python tools/chebyshev_tables.py  (needs mpmath; paste the output
over the tables in the Rust files).
"""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50
NODES = 64
CUT = mp.mpf("1e-18")


def chebyshev(f, n=NODES, cut=CUT):
    """c[0..n) with f(t) ~ sum c[k] T_k(t), c[0] already halved."""
    ts = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    fs = [f(t) for t in ts]
    c = [2 * mp.fsum(fs[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / n) for k in range(n)) / n
         for j in range(n)]
    c[0] /= 2
    top = max(abs(x) for x in c)
    while abs(c[-1]) < cut * top:
        c.pop()
    return c


def near(nu):
    def f(t):
        x = 4 * (t + 1)
        if nu == 0:
            return mp.besseli(0, x) * mp.exp(-x)
        return mp.besseli(1, x) * mp.exp(-x) / x if x else mp.mpf(1) / 2
    return f


def far(nu):
    def f(t):
        u = (t + 1) / 2
        if u == 0:
            return 1 / mp.sqrt(2 * mp.pi)
        x = 8 / u
        return mp.sqrt(x) * mp.besseli(nu, x) * mp.exp(-x)
    return f


def near_half(lo):
    def f(t):
        x = lo + 2 * (t + 1)
        return mp.besseli(1, x) * mp.exp(-x) / x if x else mp.mpf(1) / 2
    return f


def scaled_erfc(t):
    if t == 1:
        return 2 / mp.sqrt(mp.pi)
    x = 3 * (1 + t) / (1 - t)
    return (1 + 2 * x) * mp.exp(x * x) * mp.erfc(x)


def main():
    tables = [("I0E_A", near(0), NODES), ("I0E_B", far(0), NODES), ("I1E_A", near(1), NODES),
              ("I1E_B", far(1), NODES), ("I1E_A32_LOW", near_half(0), NODES),
              ("I1E_A32_HIGH", near_half(4), NODES), ("ERFCX", scaled_erfc, 96)]
    cuts = {"ERFCX": CUT * 10, "I1E_A32_LOW": mp.mpf(2) ** -27, "I1E_A32_HIGH": mp.mpf(2) ** -27}
    for name, f, nodes in tables:
        c = chebyshev(f, nodes, cuts.get(name, CUT))
        print(f"const {name}: [f64; {len(c)}] = [")
        for x in c:
            # The nearest float64, in its shortest round-trip form.
            print(f"    {float(x)!r},")
        print("];")


if __name__ == "__main__":
    main()
