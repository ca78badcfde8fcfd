"""Public names that are not ops: they compute no tensor from tensors (state,
metadata, conversion out of ferrograd, autograd and transform entry points).
They are listed so that "every public name is declared" can be checked: the
coverage test walks ``ops()``, and a name neither there nor here fails
``tests/test_registry.py``."""

from __future__ import annotations

#: Module-level functions of ``ferrograd`` that are not ops, by what they hold.
FUNCTIONS = {
    "random state": (
        "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    ),
    "settings": (
        "set_default_dtype", "get_default_dtype", "set_default_tensor_type", "set_num_threads",
        "get_num_threads", "set_printoptions", "use_deterministic_algorithms",
        "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
        "get_default_device", "set_default_device", "get_float32_matmul_precision",
        "set_float32_matmul_precision", "get_num_interop_threads", "set_num_interop_threads",
    ),
    "grad mode": (
        "is_grad_enabled", "is_inference_mode_enabled", "is_anomaly_enabled",
        "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    ),
    "serialization": ("save", "load"),
    "autocast state": (
        "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
        "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
        "autocast_increment_nesting", "autocast_decrement_nesting", "is_autocast_cpu_enabled",
        "get_autocast_cpu_dtype",
    ),
    "transforms": ("compile", "vmap"),
    "predicates and metadata": (
        "is_tensor", "is_floating_point", "is_nonzero", "is_same_size", "numel", "equal",
        "allclose", "broadcast_shapes",
    ),
    "dtype relations": ("can_cast", "promote_types", "result_type"),
}

#: ``Tensor`` methods that are not ops.
METHODS = {
    "autograd": (
        "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad",
        "requires_grad_", "detach_",
    ),
    "conversion out of ferrograd": ("item", "tolist", "numpy"),
    "metadata": (
        "size", "stride", "dim", "ndimension", "nelement", "numel", "storage_offset", "data_ptr",
        "element_size", "is_contiguous", "is_complex", "is_signed", "is_floating_point",
        "is_nonzero", "is_same_size", "equal", "allclose", "type", "is_meta", "is_pinned",
        "is_quantized", "is_sparse",
    ),
    "devices and memory": ("cpu", "cuda", "share_memory_", "pin_memory"),
}


def names(kind: str) -> set:
    """Every listed name of ``kind`` (``"function"`` or ``"method"``)."""
    table = FUNCTIONS if kind == "function" else METHODS
    return {n for group in table.values() for n in group}
