"""Private topic files behind ``ferrograd.nn.functional``, which re-exports them."""
