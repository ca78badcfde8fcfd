"""Private implementations behind ``ferrograd.nn.functional``, one file per topic."""
