"""``nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and
``orthogonal`` as parametrizations (``nn.utils.parametrize``), with
PyTorch's state-dict layout:

- ``weight_norm``: ``parametrizations.weight.original0`` (the magnitude
  ``g``) and ``original1`` (the direction ``v``);
- ``spectral_norm``: ``parametrizations.weight.original`` and the power
  iteration's vectors ``parametrizations.weight.0._u``, ``._v``;
- ``orthogonal``: ``parametrizations.weight.original`` and, with the default
  trivialization, the base ``parametrizations.weight.0.base``.
"""

from __future__ import annotations

from enum import Enum, auto

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ._norm_fns import _weight_norm, householder_product, matrix_exp, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_tensor(x):
    return isinstance(x, _C.Tensor) or getattr(x, "is_meta", False) is True


# ----- orthogonal --------------------------------------------------------------------------

class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _is_orthogonal(q):
    n, k = q.size(-2), q.size(-1)
    eye = _C.eye(k, dtype=q.dtype)
    eps = 10.0 * n * _finfo_eps(q.dtype)
    return bool(_C.allclose(q.mT @ q, eye, atol=eps))


def _finfo_eps(dtype):
    from ... import finfo

    return finfo(dtype).eps


def _make_orthogonal(a):
    """The Q of ``A = QR`` with ``diag(R) >= 0`` (``A`` tall)."""
    from ... import linalg

    q, r = linalg.qr(a)
    sign = r.diagonal(dim1=-2, dim2=-1).sign()
    sign = sign.masked_fill(sign == 0, 1.0)
    return q * sign.unsqueeze(-2)


def _geqrf(a):
    from ... import geqrf

    return geqrf(a)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.size(-2), x.size(-1)
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:
                x = _C.cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], -1)
            a = x - x.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = matrix_exp(a)
            else:
                from ... import linalg

                eye = _C.eye(n, dtype=a.dtype)
                q = linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = householder_product(a, tau)
            # The diagonal of X holds the signs (+-1) of the reflections' columns.
            q = q * x.diagonal(dim1=-2, dim2=-1).long().to(q.dtype).unsqueeze(-2)
        if hasattr(self, "base"):
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q):
        with no_grad():
            if q.shape != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. "
                    f"Got a tensor of shape {q.shape}."
                )
            q_init = q
            n, k = q.size(-2), q.size(-1)
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential "
                        "or the Cayley parametrizations when use_trivialization=False."
                    )
                a, tau = _geqrf(q)
                diag = a.diagonal(dim1=-2, dim2=-1)
                signs = diag.sign()
                signs = _C.where(tau == 0.0, -signs, signs)
                a = a.clone()
                a.diagonal(dim1=-2, dim2=-1).copy_(signs)
                return a.mT if transpose else a
            if n == k:
                q = _make_orthogonal(q) if not _is_orthogonal(q) else q.clone()
            else:
                extra = _C.randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype)
                q = _make_orthogonal(_C.cat([q, extra], -1))
            self.base = q
            neg_id = q_init.new_zeros(q_init.shape)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Makes ``module.<name>`` an orthogonal matrix (or a batch of them):
    ``Q^T Q = I`` for a tall one, ``Q Q^T = I`` for a wide one.

    ``orthogonal_map`` is ``"matrix_exp"`` (the default for square matrices),
    ``"cayley"`` or ``"householder"`` (the default otherwise). With
    ``use_trivialization`` (the default) the tensor is ``base @ map(X)``, with
    a buffer ``base`` that assigning to the weight sets. The current value
    is kept orthogonal on registration. Returns ``module``."""
    weight = getattr(module, name, None)
    if not _is_tensor(weight):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ----- weight norm -------------------------------------------------------------------------

class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        weight_g = norm_except_dim(weight, 2, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module, name="weight", dim=0):
    """Weight normalization (Salimans and Kingma): ``weight = g * v / ||v||``,
    the norm taken over every dimension but ``dim`` (over all of them for
    ``dim=None``). ``g`` is ``parametrizations.weight.original0`` and ``v``
    ``original1``; the weight's value is unchanged by registering. Returns
    ``module``."""
    _weight_norm_mod = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _weight_norm_mod, unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):  # fmt: skip
        # Checkpoints of the legacy nn.utils.weight_norm (weight_g, weight_v) load too.
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ----- spectral norm -----------------------------------------------------------------------

class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # Start with u, v close to the leading singular vectors.
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # In place, as PyTorch's ``out=``: the buffers keep their identity.
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_C.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_C.mv(weight_mat.mT, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = _C.dot(u, _C.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def _default_sn_dim(module):
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d

    types = (ConvTranspose1d, ConvTranspose2d)
    try:
        from ..modules.conv import ConvTranspose3d

        types = (*types, ConvTranspose3d)
    except ImportError:
        pass
    return 1 if isinstance(module, types) else 0


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization (Miyato et al.): ``weight / sigma(weight)``, the
    largest singular value estimated by ``n_power_iterations`` steps of power
    iteration per training forward (in eval mode the vectors are not updated).
    ``dim`` is the dimension of output units (1 for transposed convolutions,
    else 0). Returns ``module``."""
    weight = getattr(module, name, None)
    if not _is_tensor(weight):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_sn_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module
