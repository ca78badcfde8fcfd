"""Grad-mode switches. The mode itself is a per-thread flag in Rust; these
classes only flip it for a block or a decorated function."""

from __future__ import annotations

import functools
import inspect

from .. import _C


class _GradModeContext:
    """Base: a context manager that is also a decorator (generators included)."""

    def _enter_mode(self):
        raise NotImplementedError

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        gen.close()
                        raise
                    except BaseException as exc:  # noqa: BLE001 - re-thrown into the generator
                        with self.clone():
                            response = gen.throw(exc)
                        continue
                    with self.clone():
                        try:
                            response = gen.send(request)
                        except StopIteration as stop:
                            return stop.value

            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class _NoParamGradModeContext(_GradModeContext):
    """Also usable as a decorator without parentheses (``@no_grad``), as in PyTorch."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamGradModeContext):
    """Disables graph recording: results of ops do not require grad."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class enable_grad(_NoParamGradModeContext):
    """Re-enables graph recording inside a ``no_grad`` block."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False


class set_grad_enabled(_GradModeContext):
    """Sets grad mode on or off: takes effect at once when called as a
    function, and is restored on exit when used as a context manager."""

    def __init__(self, mode: bool):
        self.prev = _C.is_grad_enabled()
        self.mode = bool(mode)
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        # As a decorator the mode applies per call, not from now on.
        _C._set_grad_enabled(self.prev)
        return super().__call__(func)


class inference_mode(_GradModeContext):
    """Like ``no_grad`` (ferrograd has no separate inference-tensor kind)."""

    def __new__(cls, mode_or_orig_func=True):
        # ``@inference_mode`` without parentheses decorates at once.
        if mode_or_orig_func is None or isinstance(mode_or_orig_func, bool):
            return super().__new__(cls)
        return cls()(mode_or_orig_func)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        if self.mode:
            _C._set_grad_enabled(False)
        _C._set_inference_mode(self.mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev[0])
        _C._set_inference_mode(self.prev[1])
        return False

    def clone(self):
        return self.__class__(self.mode)
