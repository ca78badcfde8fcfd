"""NumPy references the declarations point at, where a one-line lambda would
not say what PyTorch computes. SciPy (for the special functions) is imported
only when a reference is called, so importing ferrograd never needs it."""

from __future__ import annotations

import math

import numpy as np


def _special():
    import scipy.special

    return scipy.special


def erf(x):
    return _special().erf(x)


def erfc(x):
    return _special().erfc(x)


def erfinv(x):
    return _special().erfinv(x)


def lgamma(x):
    return _special().gammaln(x)


def digamma(x):
    return _special().digamma(x)


def i0e(x):
    return _special().i0e(x)


def i1(x):
    return _special().i1(x)


def i1e(x):
    return _special().i1e(x)


def ndtri(x):
    return _special().ndtri(x)


def erfcx(x):
    return _special().erfcx(x)


def log_ndtr(x):
    return _special().log_ndtr(x)


def igamma(a, x):
    return _special().gammainc(a, x)


def igammac(a, x):
    return _special().gammaincc(a, x)


def zeta(x, q):
    return _special().zeta(x, q)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def relu(x):
    return np.where(x > 0, x, np.zeros_like(x))


def silu(x):
    return x * sigmoid(x)


def rsqrt(x):
    return 1.0 / np.sqrt(x)


def sinc(x):
    return np.sinc(x)


def frac(x):
    return x - np.trunc(x)


def logit(x):
    return np.log(x / (1.0 - x))


def xlogy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), np.zeros_like(out), out)


def remainder(a, b):
    return a - np.floor(a / b) * b


def floor_divide(a, b):
    return np.floor(a / b)


def logaddexp2(a, b):
    return np.logaddexp2(a, b)


def float_power(a, b):
    return np.power(np.asarray(a, np.float64), np.asarray(b, np.float64))


def trace(x):
    return np.asarray(np.trace(x))


def all_(x):
    return np.asarray(np.all(x))


def any_(x):
    return np.asarray(np.any(x))


def clamp_min(x, m):
    return np.maximum(x, m)


def clamp_max(x, m):
    return np.minimum(x, m)


def deg2rad(x):
    return x * (math.pi / 180.0)


def rad2deg(x):
    return x * (180.0 / math.pi)


# ----- nn -----------------------------------------------------------------------------------


def softmax(x, dim):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True)) if x.size else x
    return e / np.sum(e, axis=dim, keepdims=True) if x.size else x


def log_softmax(x, dim):
    if not x.size:
        return x
    m = np.max(x, axis=dim, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))


def logsumexp(x, dim, keepdim=False):
    m = np.max(x, axis=dim, keepdims=True)
    out = m + np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True))
    return out if keepdim else np.squeeze(out, axis=dim)


def erf_np(x):
    return erf(x)


def gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def selu(x):
    a, s = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return s * elu(x, a)


def celu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha))


def leaky_relu(x, negative_slope=0.01):
    return np.where(x > 0, x, negative_slope * x)


def hardtanh(x, min_val=-1.0, max_val=1.0):
    return np.clip(x, min_val, max_val)


def relu6(x):
    return np.clip(x, 0.0, 6.0)


def softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def softsign(x):
    return x / (1 + np.abs(x))


def mish(x):
    return x * np.tanh(np.log1p(np.exp(x)))


def logsigmoid(x):
    return -np.logaddexp(0, -x)


def hardswish(x):
    return x * np.clip(x + 3, 0, 6) / 6


def hardsigmoid(x):
    return np.clip(x + 3, 0, 6) / 6


def tanhshrink(x):
    return x - np.tanh(x)


def softshrink(x, lambd=0.5):
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0.0))


def hardshrink(x, lambd=0.5):
    return np.where(np.abs(x) > lambd, x, 0.0)


def threshold(x, threshold, value):
    return np.where(x > threshold, x, value)


def glu(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * sigmoid(b)


def _reduce(v, reduction):
    if reduction == "mean":
        return np.asarray(v.mean())
    if reduction == "sum":
        return np.asarray(v.sum())
    return v


def mse_loss(x, y, reduction="mean"):
    return _reduce((x - y) ** 2, reduction)


def l1_loss(x, y, reduction="mean"):
    return _reduce(np.abs(x - y), reduction)


def smooth_l1_loss(x, y, reduction="mean", beta=1.0):
    d = np.abs(x - y)
    return _reduce(np.where(d < beta, 0.5 * d**2 / beta, d - 0.5 * beta), reduction)


def huber_loss(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return _reduce(np.where(d < delta, 0.5 * d**2, delta * (d - 0.5 * delta)), reduction)


def binary_cross_entropy(p, y, reduction="mean"):
    return _reduce(-(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log1p(-p), -100)),
                   reduction)


def binary_cross_entropy_with_logits(x, y, reduction="mean"):
    return _reduce((1 - y) * x - logsigmoid(x), reduction)


def nll_loss(logp, target, reduction="mean"):
    picked = -np.take_along_axis(logp, target[:, None], axis=1)[:, 0]
    return _reduce(picked, reduction)


def cross_entropy(x, target, reduction="mean"):
    return nll_loss(log_softmax(x, 1), target, reduction)


def kl_div(x, y, reduction="mean", log_target=False):
    v = np.exp(y) * (y - x) if log_target else xlogy(y, y) - y * x
    return _reduce(v, reduction)


def _in_float64(fn):
    """A normalization's reference evaluated in float64 and rounded once to the input's
    dtype: on (near-)constant input the float32 mean's rounding error, divided by
    sqrt(eps), would otherwise dominate the reference."""

    def ref(x, *args, **kwargs):
        dt = x.dtype
        up = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
              for a in args]
        return fn(x.astype(np.float64), *up, **kwargs).astype(dt)

    ref.__name__ = fn.__name__
    return ref


@_in_float64
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    out = (x - m) / np.sqrt(v + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


@_in_float64
def batch_norm_train(x, weight, bias, eps=1e-5):
    axes = (0, *range(2, x.ndim))
    shape = [1, -1] + [1] * (x.ndim - 2)
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * weight.reshape(shape) + bias.reshape(shape)


@_in_float64
def group_norm(x, num_groups, weight, bias, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    m = g.mean(axis=2, keepdims=True)
    v = g.var(axis=2, keepdims=True)
    out = ((g - m) / np.sqrt(v + eps)).reshape(x.shape)
    shape = [1, c] + [1] * (x.ndim - 2)
    return out * weight.reshape(shape) + bias.reshape(shape)


def linear(x, w, b=None):
    out = x @ w.T
    return out + b if b is not None else out


def embedding(idx, w):
    return w[idx]


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct definition of a 2-D cross-correlation (NCHW, OIHW)."""
    s, p, d = (stride,) * 2 if isinstance(stride, int) else stride, \
        (padding,) * 2 if isinstance(padding, int) else padding, \
        (dilation,) * 2 if isinstance(dilation, int) else dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (wd + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                           j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    return conv2d(x[:, :, None], w[:, :, None], b, (1, stride), (0, padding), (1, dilation),
                  groups)[:, :, 0]


def _pool_windows(x, k, s):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    win = np.empty((n, c, oh, ow, k * k))
    for i in range(k):
        for j in range(k):
            win[..., i * k + j] = x[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s]
    return win


def max_pool2d(x, kernel_size, stride=None):
    return _pool_windows(x, kernel_size, stride or kernel_size).max(-1)


def avg_pool2d(x, kernel_size, stride=None):
    return _pool_windows(x, kernel_size, stride or kernel_size).mean(-1)


def adaptive_avg_pool2d(x, output_size):
    n, c, h, w = x.shape
    oh, ow = (output_size,) * 2 if isinstance(output_size, int) else output_size
    out = np.empty((n, c, oh, ow))
    for i in range(oh):
        h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


def pad(x, p, mode="constant", value=0.0):
    widths = [(0, 0)] * x.ndim
    for k in range(len(p) // 2):
        widths[x.ndim - 1 - k] = (p[2 * k], p[2 * k + 1])
    if mode == "constant":
        return np.pad(x, widths, constant_values=value)
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


def cosine_similarity(a, b, dim=1, eps=1e-8):
    na = np.maximum(np.linalg.norm(a, axis=dim), eps)
    nb = np.maximum(np.linalg.norm(b, axis=dim), eps)
    return (a * b).sum(axis=dim) / (na * nb)


def normalize(x, p=2.0, dim=1, eps=1e-12):
    n = np.maximum(np.linalg.norm(x, ord=p, axis=dim, keepdims=True), eps)
    return x / n


def sdpa(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return softmax(s, -1) @ v


def pool1d(x, k, reducer):
    n, c, length = x.shape
    out = length // k
    return reducer(x[:, :, : out * k].reshape(n, c, out, k), -1)


def pool3d(x, k, reducer):
    n, c, d, h, w = x.shape
    od, oh, ow = d // k, h // k, w // k
    v = x[:, :, : od * k, : oh * k, : ow * k].reshape(n, c, od, k, oh, k, ow, k)
    return reducer(reducer(reducer(v, 7), 5), 3)


def adaptive_pool1d(x, size, reducer):
    length = x.shape[-1]
    cols = []
    for i in range(size):
        a, b = (i * length) // size, -((-(i + 1) * length) // size)
        cols.append(reducer(x[..., a:b], -1))
    return np.stack(cols, -1)


def conv_transpose2d(x, w, b=None, stride=1):
    """The adjoint of a strided convolution, by scattering each input pixel."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    out = np.zeros((n, o, (h - 1) * stride + kh, (wd - 1) * stride + kw))
    for i in range(h):
        for j in range(wd):
            out[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, i, j], w)
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def conv3d(x, w, b=None):
    n, c, d, h, wd = x.shape
    o, _, kd, kh, kw = w.shape
    out = np.zeros((n, o, d - kd + 1, h - kh + 1, wd - kw + 1))
    for a in range(kd):
        for i in range(kh):
            for j in range(kw):
                patch = x[:, :, a:a + out.shape[2], i:i + out.shape[3], j:j + out.shape[4]]
                out += np.einsum("ncdhw,oc->nodhw", patch, w[:, :, a, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1, 1)
    return out


def interpolate_nearest(x, scale_factor):
    s = int(scale_factor)
    for axis in range(2, x.ndim):
        x = np.repeat(x, s, axis=axis)
    return x


def unfold(x, k):
    n, c, h, w = x.shape
    oh, ow = h - k + 1, w - k + 1
    cols = np.empty((n, c, k, k, oh * ow))
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = x[:, :, i:i + oh, j:j + ow].reshape(n, c, -1)
    return cols.reshape(n, c * k * k, oh * ow)


def fold(cols, output_size, k):
    n, ckk, L = cols.shape
    h, w = output_size
    c = ckk // (k * k)
    oh, ow = h - k + 1, w - k + 1
    cols = cols.reshape(n, c, k, k, oh, ow)
    out = np.zeros((n, c, h, w))
    for i in range(k):
        for j in range(k):
            out[:, :, i:i + oh, j:j + ow] += cols[:, :, i, j]
    return out


def pixel_shuffle(x, r):
    n, c, h, w = x.shape
    return x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(
        n, c // (r * r), h * r, w * r)


def pixel_unshuffle(x, r):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // r, r, w // r, r).transpose(0, 1, 3, 5, 2, 4).reshape(
        n, c * r * r, h // r, w // r)


@_in_float64
def instance_norm(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    return (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    eps = np.finfo(x.dtype).eps if eps is None else eps
    out = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return out * weight if weight is not None else out


def pairwise_distance(a, b, p=2.0, eps=1e-6):
    return np.linalg.norm(a - b + eps, ord=p, axis=-1)


def pdist(x):
    n = x.shape[0]
    return np.array([np.linalg.norm(x[i] - x[j]) for i in range(n) for j in range(i + 1, n)])


def one_hot(idx, num_classes=-1):
    k = idx.max() + 1 if num_classes < 0 else num_classes
    return (idx[..., None] == np.arange(k)).astype(np.int64)


def bilinear(x1, x2, w, b=None):
    out = np.einsum("ni,oij,nj->no", x1, w, x2)
    return out + b if b is not None else out


def margin_ranking_loss(a, b, y, margin=0.0):
    return np.asarray(np.maximum(0, -y * (a - b) + margin).mean())


def hinge_embedding_loss(x, y, margin=1.0):
    return np.asarray(np.where(y == 1, x, np.maximum(0, margin - x)).mean())


def soft_margin_loss(x, y):
    return np.asarray(np.log1p(np.exp(-y * x)).mean())


def poisson_nll_loss(x, y):
    return np.asarray((np.exp(x) - y * x).mean())


def gaussian_nll_loss(x, y, var, eps=1e-6):
    v = np.maximum(var, eps)
    return np.asarray((0.5 * (np.log(v) + (x - y) ** 2 / v)).mean())


def multilabel_soft_margin_loss(x, y):
    v = -(y * logsigmoid(x) + (1 - y) * logsigmoid(-x))
    return np.asarray(v.mean(-1).mean())


def cosine_embedding_loss(a, b, y, margin=0.0):
    c = cosine_similarity(a, b, 1)
    return np.asarray(np.where(y == 1, 1 - c, np.maximum(0, c - margin)).mean())


def triplet_margin_loss(a, p, n, margin=1.0, eps=1e-6):
    dp = np.linalg.norm(a - p + eps, axis=-1)
    dn = np.linalg.norm(a - n + eps, axis=-1)
    return np.asarray(np.maximum(dp - dn + margin, 0).mean())


def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    sq = x ** 2
    c = x.shape[1]
    div = np.zeros_like(x)
    for i in range(c):
        lo, hi = max(0, i - size // 2), min(c, i + (size - 1) // 2 + 1)
        div[:, i] = sq[:, lo:hi].sum(1)
    return x / (k + alpha / size * div) ** beta


def affine_grid(theta, size, align_corners=False):
    """``F.affine_grid`` for 2-D sizes: each output pixel's normalised (x, y)
    mapped by its batch's 2x3 matrix."""
    _, _, h, w = size

    def base(n):
        if align_corners:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        return (2.0 * np.arange(n) + 1.0) / n - 1.0

    ys, xs = np.meshgrid(base(h), base(w), indexing="ij")
    pts = np.stack([xs, ys, np.ones_like(xs)], -1)  # (H, W, 3)
    return np.einsum("hwk,njk->nhwj", pts, theta)


def _pool_bounds(length, out, k=None):
    """The ``[start, end)`` of each window along one dimension: a kernel ``k``
    with stride ``k``, or adaptive windows (``k`` is None) of ``out`` outputs."""
    if k is not None:
        return [(i * k, i * k + k) for i in range(out)]
    return [((i * length) // out, -((-(i + 1) * length) // out)) for i in range(out)]


def max_pool_with_indices(x, kernel=None, out=None):
    """Max pooling over the trailing dimensions of ``x`` (N, C, *S) by a kernel
    of stride ``kernel``, or to ``out`` outputs per dimension (adaptive): the
    maxima and, as PyTorch records them, each maximum's flat index in its plane."""
    spatial = x.shape[2:]
    nd = len(spatial)
    if kernel is not None:
        sizes = [s // kernel for s in spatial]
    else:
        sizes = [out] * nd if isinstance(out, int) else list(out)
    bounds = [_pool_bounds(s, o, kernel) for s, o in zip(spatial, sizes)]
    vals = np.empty(x.shape[:2] + tuple(sizes), dtype=x.dtype)
    idx = np.empty(vals.shape, dtype=np.int64)
    for pos in np.ndindex(*sizes):
        win = tuple(slice(*bounds[d][p]) for d, p in enumerate(pos))
        w = x[(Ellipsis,) + win].reshape(x.shape[:2] + (-1,))
        arg = w.argmax(-1)
        vals[(Ellipsis,) + pos] = np.take_along_axis(w, arg[..., None], -1)[..., 0]
        local = np.unravel_index(arg, [b - a for a, b in (bounds[d][p] for d, p in enumerate(pos))])
        coords = [bounds[d][p][0] + local[d] for d, p in enumerate(pos)]
        idx[(Ellipsis,) + pos] = np.ravel_multi_index(coords, spatial)
    return vals, idx


def max_unpool(x, indices, kernel_size):
    """Each value of ``x`` (N, C, *S) written at its flat ``indices`` in a zero
    plane of ``kernel_size`` times the size (stride = kernel)."""
    n, c = x.shape[:2]
    spatial = tuple(s * kernel_size for s in x.shape[2:])
    out = np.zeros((n, c, int(np.prod(spatial))), dtype=x.dtype)
    np.put_along_axis(out, indices.reshape(n, c, -1), x.reshape(n, c, -1), -1)
    return out.reshape((n, c) + spatial)


def upsample_bilinear(x, scale_factor):
    """Bilinear resizing of (N, C, H, W) by an integer factor with the corners
    aligned (what the deprecated ``upsample_bilinear`` does)."""
    for axis in (2, 3):
        n = x.shape[axis]
        out = n * int(scale_factor)
        src = np.arange(out) * (n - 1) / (out - 1) if out > 1 else np.zeros(out)
        i0 = np.floor(src).astype(np.int64).clip(0, n - 1)
        i1 = np.minimum(i0 + 1, n - 1)
        shape = [1] * x.ndim
        shape[axis] = out
        w = (src - i0).reshape(shape)
        x = np.take(x, i0, axis) * (1 - w) + np.take(x, i1, axis) * w
    return x


def multi_margin_loss(x, target, p=1, margin=1.0):
    """The mean over rows of sum_{j != y} max(0, margin - x[y] + x[j])^p / C."""
    xy = np.take_along_axis(x, target[:, None], 1)
    v = np.maximum(0, margin - xy + x) ** p
    v[np.arange(len(target)), target] = 0
    return np.asarray((v.sum(1) / x.shape[1]).mean())


def multilabel_margin_loss(x, target):
    """The mean over rows of sum over target classes j (read up to the first -1)
    and other classes i of max(0, 1 - (x[j] - x[i])) / C."""
    rows = []
    for xr, tr in zip(x, target):
        stop = np.flatnonzero(tr < 0)
        tg = tr[: stop[0] if stop.size else tr.size]
        others = np.setdiff1d(np.arange(x.shape[1]), tg)
        rows.append(sum(np.maximum(0, 1 - (xr[j] - xr[i])) for j in tg for i in others) / x.shape[1])
    return np.asarray(np.mean(rows))
