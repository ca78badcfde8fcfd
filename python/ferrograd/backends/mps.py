"""``backends.mps``: Apple's Metal backend is not part of ferrograd."""


def is_available():
    """Always ``False``."""
    return False


def is_built():
    """Always ``False``."""
    return False
