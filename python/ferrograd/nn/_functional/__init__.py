"""Private homes of ``ferrograd.nn.functional``'s topics; import from ``nn.functional``."""
