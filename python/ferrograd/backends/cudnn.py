"""``backends.cudnn``: no cuDNN; the flags are plain attributes scripts may set."""

deterministic = False
benchmark = False
enabled = True
allow_tf32 = True


def is_available():
    """Always ``False``: ferrograd does not use cuDNN."""
    return False


def version():
    """``None``, as PyTorch reports when cuDNN is absent."""
    return None
