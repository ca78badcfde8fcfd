"""Process-wide settings: the determinism flag and print options."""

from __future__ import annotations

import builtins

# ----- global settings -----------------------------------------------------------------

_DETERMINISTIC = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(
    mode: builtins.bool, *, warn_only: builtins.bool = False
) -> None:
    """Records the flag, as PyTorch's: every ferrograd kernel is already deterministic
    (reductions split work the same way on every run), so nothing else changes."""
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must "
                        f"be bool, not {type(mode).__name__}")  # fmt: skip
    _DETERMINISTIC["mode"] = mode
    _DETERMINISTIC["warn_only"] = builtins.bool(warn_only)


def are_deterministic_algorithms_enabled() -> builtins.bool:
    """The flag last set by ``use_deterministic_algorithms`` (False by default)."""
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    """The ``warn_only`` flag last set by ``use_deterministic_algorithms``."""
    return _DETERMINISTIC["warn_only"]


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: builtins.bool | None = None,
) -> None:
    """Sets how tensors print, as ``torch.set_printoptions``: ``precision`` digits,
    summarizing past ``threshold`` elements with ``edgeitems`` at each end, lines of
    ``linewidth``, ``sci_mode`` (None: automatic), ``profile`` (``"default"``,
    ``"short"``, ``"full"``) applied first."""
    from .. import _tensor_str

    # Checked before anything is set, so a bad value cannot break every later repr.
    for name, v in (("precision", precision), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if v is not None and (not isinstance(v, int) or isinstance(v, builtins.bool) or v < 0):
            raise TypeError(f"set_printoptions(): '{name}' must be a non-negative int, got {v!r}")
    if threshold is not None and (
        not isinstance(threshold, (int, float)) or isinstance(threshold, builtins.bool)
    ):
        raise TypeError(f"set_printoptions(): 'threshold' must be a number, got {threshold!r}")
    if sci_mode is not None and not isinstance(sci_mode, builtins.bool):
        raise TypeError(f"set_printoptions(): 'sci_mode' must be a bool or None, got {sci_mode!r}")
    if profile is not None and not isinstance(profile, str):
        raise TypeError(f"set_printoptions(): 'profile' must be a str, got {profile!r}")
    _tensor_str.set_printoptions(precision, threshold, edgeitems, linewidth, profile, sci_mode)
