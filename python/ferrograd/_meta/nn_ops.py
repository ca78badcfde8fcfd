"""Shape rules of the ``nn.functional`` ops: convolution, pooling, padding,
interpolation, attention, embedding, losses and ``one_hot``."""

from __future__ import annotations

import math

from .. import _C
from . import _RULES, MetaTensor, _any_requires_grad, _broadcast, _check_devices, _is_tensorish


def _tuple(v, n):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(v) * n
        return tuple(v)
    return (v,) * n


def _conv_shape(x, weight, stride, padding, dilation, groups, sd, transposed=False,
                output_padding=0):  # fmt: skip
    name = f"conv{'_transpose' if transposed else ''}{sd}d"
    if x.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"Expected {sd + 1}D (unbatched) or {sd + 2}D (batched) input to {name}, but got "
            f"input of size: {list(x.shape)}"
        )
    unbatched = x.dim() == sd + 1
    xs = ((1,) if unbatched else ()) + tuple(x.shape)
    n, c, spatial = xs[0], xs[1], xs[2:]
    k = tuple(weight.shape[2:])
    stride, dilation = _tuple(stride, sd), _tuple(dilation, sd)
    if transposed:
        if c != weight.shape[0]:
            raise RuntimeError(
                f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                f"{list(xs)} to have {weight.shape[0]} channels, but got {c} channels instead"
            )
        pad, opad = _tuple(padding, sd), _tuple(output_padding, sd)
        out = tuple(
            (spatial[i] - 1) * stride[i] - 2 * pad[i] + dilation[i] * (k[i] - 1) + opad[i] + 1
            for i in range(sd)
        )
        oc = weight.shape[1] * groups
    else:
        if c != weight.shape[1] * groups:
            raise RuntimeError(
                f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                f"{list(xs)} to have {weight.shape[1] * groups} channels, but got {c} channels "
                "instead"
            )
        if padding == "same":
            out = tuple(spatial)
        else:
            pad = (0,) * sd if padding == "valid" else _tuple(padding, sd)
            out = tuple(
                (spatial[i] + 2 * pad[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1
                for i in range(sd)
            )
            if any(o <= 0 for o in out):
                raise RuntimeError(
                    f"Calculated padded input size per channel: "
                    f"({' x '.join(str(spatial[i] + 2 * pad[i]) for i in range(sd))}). Kernel "
                    f"size: ({' x '.join(str(dilation[i] * (k[i] - 1) + 1) for i in range(sd))}). "
                    "Kernel size can't be greater than actual input size"
                )
        oc = weight.shape[0]
    shape = (n, oc) + out
    return shape[1:] if unbatched else shape


def conv(x, weight, bias, stride, padding, dilation, groups, sd, transposed=False,
         output_padding=0):  # fmt: skip
    """The meta result of a convolution (called by ``nn.functional``)."""
    args = (x, weight) if bias is None else (x, weight, bias)
    _check_devices(args)
    shape = _conv_shape(x, weight, stride, padding, dilation, groups, sd, transposed,
                        output_padding)  # fmt: skip
    if x.dtype != weight.dtype:
        raise RuntimeError(
            f"Input type ({x.dtype}) and weight type ({weight.dtype}) should be the same"
        )
    rg = _any_requires_grad(args)
    return MetaTensor(shape, x.dtype, rg, leaf=not rg)


def _pool_out(size, k, s, p, d, ceil_mode):
    out = (size + 2 * p - d * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def pool(name, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
         return_indices=False, sd=2, **kwargs):  # fmt: skip
    """The meta result of a max or average pool (called by ``nn.functional``)."""
    if x.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"{name}: Expected {sd + 1}D or {sd + 2}D input, but got input of size: "
            f"{list(x.shape)}"
        )
    k = _tuple(kernel_size, sd)
    s = _tuple(stride if stride not in (None, [], ()) else kernel_size, sd)
    p = _tuple(padding, sd)
    d = _tuple(dilation, sd)
    lead = tuple(x.shape[: x.dim() - sd])
    spatial = tuple(x.shape[x.dim() - sd :])
    out = tuple(_pool_out(spatial[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(sd))
    if any(o <= 0 for o in out):
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, x.shape))}). Calculated output size: "
            f"({'x'.join(map(str, lead[-1:] + out))}). Output size is too small"
        )
    res = MetaTensor(lead + out, x.dtype, _any_requires_grad((x,)))
    if return_indices:
        return res, MetaTensor(lead + out, _C.int64, False)
    return res


def adaptive_pool(x, output_size, sd, return_indices=False):
    """The meta result of an adaptive pool (called by ``nn.functional``)."""
    if x.dim() not in (sd + 1, sd + 2):
        raise RuntimeError(
            f"adaptive_pool{sd}d(): Expected {sd + 1}D or {sd + 2}D tensor, but got "
            f"{list(x.shape)}"
        )
    os = _tuple(output_size, sd)
    spatial = tuple(x.shape[x.dim() - sd :])
    out = tuple(spatial[i] if os[i] is None else os[i] for i in range(sd))
    res = MetaTensor(tuple(x.shape[: x.dim() - sd]) + out, x.dtype, _any_requires_grad((x,)))
    if return_indices:
        return res, MetaTensor(res._shape, _C.int64, False)
    return res


def pad(x, pads, mode="constant", value=None):
    """The meta result of ``F.pad``."""
    pads = list(pads)
    if len(pads) % 2 or len(pads) // 2 > x.dim():
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the rank")
    shape = list(x.shape)
    for i in range(len(pads) // 2):
        d = len(shape) - 1 - i
        shape[d] += pads[2 * i] + pads[2 * i + 1]
    return x._derive(tuple(shape))


def interpolate(x, size=None, scale_factor=None, **kwargs):
    """The meta result of ``F.interpolate``."""
    sd = x.dim() - 2
    if size is not None:
        out = _tuple(size, sd)
    elif scale_factor is not None:
        sf = _tuple(scale_factor, sd)
        out = tuple(int(math.floor(x.shape[2 + i] * sf[i])) for i in range(sd))
    else:
        raise ValueError("either size or scale_factor should be defined")
    return x._derive(tuple(x.shape[:2]) + tuple(out))


def _conv_rule(sd, transposed):
    def rule(input, weight, bias=None, stride=1, padding=0, *rest, **kwargs):
        if transposed:
            # (output_padding, groups, dilation)
            names = ("output_padding", "groups", "dilation")
        else:
            names = ("dilation", "groups")
        opts = dict(zip(names, rest))
        opts.update(kwargs)
        return conv(input, weight, bias, stride, padding, opts.get("dilation", 1),
                    opts.get("groups", 1), sd, transposed, opts.get("output_padding", 0))  # fmt: skip

    return rule


for _sd in (1, 2, 3):
    _RULES[f"conv{_sd}d"] = _conv_rule(_sd, False)
    _RULES[f"conv_transpose{_sd}d"] = _conv_rule(_sd, True)


def _max_pool_rule(sd, indices):
    def rule(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=indices):  # fmt: skip
        return pool(f"max_pool{sd}d", input, kernel_size, stride, padding, dilation, ceil_mode,
                    return_indices, sd=sd)  # fmt: skip

    return rule


def _avg_pool_rule(sd):
    def rule(input, kernel_size, stride=None, padding=0, ceil_mode=False, *rest, **kwargs):
        return pool(f"avg_pool{sd}d", input, kernel_size, stride, padding, 1, ceil_mode,
                    False, sd=sd)  # fmt: skip

    return rule


def _adaptive_rule(sd, indices):
    def rule(input, output_size, return_indices=indices):
        return adaptive_pool(input, output_size, sd, return_indices)

    return rule


for _sd in (1, 2, 3):
    _RULES[f"max_pool{_sd}d"] = _max_pool_rule(_sd, False)
    _RULES[f"max_pool{_sd}d_with_indices"] = _max_pool_rule(_sd, True)
    _RULES[f"avg_pool{_sd}d"] = _avg_pool_rule(_sd)
    _RULES[f"adaptive_avg_pool{_sd}d"] = _adaptive_rule(_sd, False)
    _RULES[f"adaptive_max_pool{_sd}d"] = _adaptive_rule(_sd, False)
    _RULES[f"adaptive_max_pool{_sd}d_with_indices"] = _adaptive_rule(_sd, True)
_RULES["pad"] = pad
_RULES["interpolate"] = _RULES["upsample"] = interpolate


def _mha(query, key, value, embed_dim_to_check, num_heads, *args, **kwargs):
    import inspect

    from ..nn._functional.multi_head_attention import multi_head_attention_forward

    bound = inspect.signature(multi_head_attention_forward).bind(
        query, key, value, embed_dim_to_check, num_heads, *args, **kwargs
    )
    bound.apply_defaults()
    a = bound.arguments
    batched = query.dim() == 3
    L = query.shape[0]
    S = key.shape[0] + (1 if a["bias_k"] is not None else 0) + (1 if a["add_zero_attn"] else 0)
    tensors = [t for t in a.values() if _is_tensorish(t)]
    rg = _any_requires_grad(tensors)
    out = MetaTensor(tuple(query.shape[:-1]) + (embed_dim_to_check,), query.dtype, rg,
                     leaf=not rg)  # fmt: skip
    if not a["need_weights"]:
        return out, None
    heads = () if a["average_attn_weights"] else (num_heads,)
    lead = (query.shape[1],) if batched else ()
    return out, MetaTensor(lead + heads + (L, S), query.dtype, rg, leaf=not rg)


_RULES["multi_head_attention_forward"] = _mha


def _embedding(input, weight, *args, **kwargs):
    if input.dtype.is_floating_point:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {input.dtype} instead (while checking arguments for embedding)"
        )
    return MetaTensor(
        tuple(input.shape) + tuple(weight.shape[1:]), weight.dtype,
        _any_requires_grad((weight,)), leaf=not _any_requires_grad((weight,)),
    )  # fmt: skip


_RULES["embedding"] = _embedding


def _sdpa(q, k, v, *args, **kwargs):
    shape = _broadcast(tuple(q.shape[:-2]), tuple(v.shape[:-2])) + (q.shape[-2], v.shape[-1])
    return MetaTensor(shape, q.dtype, _any_requires_grad((q, k, v)))


_RULES["scaled_dot_product_attention"] = _sdpa


def _loss(name, target_shape=False):
    def rule(input, target, *args, reduction=None, **kwargs):
        _check_devices((input, target))
        if reduction is None:
            # The native losses take it positionally, as the only string argument.
            reduction = next((a for a in args if isinstance(a, str)), "mean")
        if reduction == "none":
            shape = tuple(target.shape) if target_shape else _broadcast(
                tuple(input.shape), tuple(target.shape)
            )
        elif reduction in ("mean", "sum"):
            shape = ()
        else:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        return MetaTensor(shape, input.dtype, _any_requires_grad((input, target)))

    return rule


for _n in ("mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
           "binary_cross_entropy_with_logits kl_div soft_margin_loss poisson_nll_loss").split():  # fmt: skip
    _RULES[_n] = _loss(_n)
for _n in ("cross_entropy", "nll_loss", "multi_margin_loss", "multilabel_margin_loss"):
    _RULES[_n] = _loss(_n, target_shape=True)


def _one_hot(x, num_classes=-1):
    if num_classes < 0:
        raise NotImplementedError(
            "ferrograd: one_hot of a meta tensor needs num_classes (the default depends on the "
            "data)"
        )
    return MetaTensor(tuple(x.shape) + (num_classes,), _C.int64, False)


_RULES["one_hot"] = _one_hot
