"""``ferrograd.nn.utils``: helpers around modules and their inputs."""

from . import rnn

__all__ = ["rnn"]
