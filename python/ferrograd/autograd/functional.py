"""Higher-level derivatives built on the backward engine, as ``torch.autograd.functional``.

``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` take a function of
tensors and the point to differentiate at, and return plain tensors (or, with
``create_graph=True``, tensors that are themselves differentiable). Return
structures follow PyTorch: a tensor where the user passed a tensor, a tuple where
the user passed a tuple, nested ``[output][input]`` for Jacobians.

``jvp`` and ``hvp`` use the double-backward trick, as PyTorch does: a backward
pass is linear in its cotangent, so differentiating it with respect to the
cotangent gives the forward-mode product.

``jacobian(vectorize=True)`` runs all rows of the Jacobian through one engine call
(``autograd.grad(..., is_grads_batched=True)``); see :func:`_vectorized_jacobian`.
"""

from __future__ import annotations

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _fg():
    import ferrograd

    return ferrograd


# --- input and output plumbing (PyTorch's helpers, same messages) -------------------


def _as_tuple(inp, arg_name, fn_name):
    """(was it a tuple, the tuple); every element must be a tensor."""
    fg = _fg()
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, fg.Tensor):
            if is_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the value at index {i} has type {type(el)}."
                )
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the given {arg_name} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    # Undo _as_tuple: one flag for a flat tuple, (outer, inner) for a nested one.
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    # Always a new tensor object, so the inputs given as arguments can be told
    # apart from the same tensors captured by func from an enclosing scope.
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    # Results carry history only when the user asked for it.
    if isinstance(inputs[0], _fg().Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."
            )
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example)."
            )
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode."
            )
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The "
            "outputs must be computed in a differentiable manner from the input when "
            "running in strict mode."
        )


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False):
    """``autograd.grad`` that skips outputs (and their cotangents) that are None or
    do not require grad, and returns all-None when nothing is left."""
    fg = _fg()
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            if grad_out is None:
                # Only reached for single-element outputs (checked by the callers).
                grad_out = fg.ones_like(out)
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    return fg.autograd.grad(
        tuple(new_outputs),
        inputs,
        tuple(new_grad_outputs),
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
        is_grads_batched=is_grads_batched,
    )


_FILL_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {}. This is "
    "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{} in the grad_jacobian. This is not allowed in strict mode as it prevents from using "
    "the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Missing gradients become zeros, or in strict mode the error for ``stage``."""
    fg = _fg()
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_FILL_MESSAGES[stage].format(i))
            g = fg.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _prepare_v(v, inputs, is_inputs_tuple, create_graph, fn_name):
    """``v`` as a validated tuple; omitted, ones for a single one-element input."""
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function "
                "is a single Tensor with a single element."
            )
        return (_fg().ones_like(inputs[0]),)
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, inputs, is_inputs_tuple)
    return v


# --- public API ------------------------------------------------------------------------


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(*inputs), v^T J)``: the outputs and the vector-Jacobian product.

    ``v`` has the shape of ``func``'s output(s) and may be omitted when the output is a
    single tensor with a single element. The product has the structure of ``inputs``
    (a tensor or a tuple). With ``strict=True`` an input that no output depends on
    raises instead of giving zeros; with ``create_graph=True`` both results are
    differentiable.
    """
    fg = _fg()
    with fg.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a "
                "single Tensor with a single element."
            )
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
        outputs = _grad_postprocess(outputs, create_graph)
        res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_inputs_tuple),
    )


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(*inputs), J v)``: the outputs and the Jacobian-vector product.

    ``v`` has the shape of ``inputs`` and may be omitted for a single one-element
    input; the product has the structure of ``func``'s output. Computed with the
    double-backward trick: the vjp ``u -> J^T u`` is linear in ``u``, so
    differentiating ``<J^T u, v>`` with respect to ``u`` gives ``J v``.
    """
    fg = _fg()
    with fg.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        # The backward is linear in grad_outputs, so their value never reaches the
        # result; zeros only need to be finite.
        grad_outputs = tuple(fg.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
        outputs = _grad_postprocess(outputs, create_graph)
        res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_outputs_tuple),
    )


def _vectorized_jacobian(outputs, inputs, create_graph, strategy):
    """All Jacobian blocks ``[output][input]`` from one batched engine call.

    This is the single place where ``vectorize=True`` (and ``strategy``) is handled;
    Reverse mode stacks the rows of the identity as a batch of cotangents and runs
    them through the retained graph inside one call into the engine
    (``autograd.grad(..., is_grads_batched=True)``); forward mode is
    :func:`_forward_jacobian`.
    """
    fg = _fg()
    sizes = [out.numel() for out in outputs]
    total = sum(sizes)
    eye = fg.eye(total, dtype=outputs[0].dtype) if total else None
    grad_outputs, offset = [], 0
    for out, n in zip(outputs, sizes):
        if total:
            block = eye[:, offset:offset + n].reshape((total,) + tuple(out.shape))
        else:
            block = fg.zeros((0,) + tuple(out.shape), dtype=out.dtype)
        grad_outputs.append(block)
        offset += n
    if total:
        vjps = _autograd_grad(
            tuple(outputs), inputs, tuple(grad_outputs), create_graph=create_graph,
            is_grads_batched=True,
        )
    else:
        vjps = (None,) * len(inputs)
    jac, offset = [], 0
    for out, n in zip(outputs, sizes):
        row = []
        for inp, g in zip(inputs, vjps):
            shape = tuple(out.shape) + tuple(inp.shape)
            if g is None:
                row.append(fg.zeros(shape, dtype=inp.dtype))
            else:
                row.append(g[offset:offset + n].reshape(shape))
        jac.append(tuple(row))
        offset += n
    return tuple(jac)


def _forward_jacobian(func, inputs, outer_of_hessian):
    """``J[output][input]`` in forward mode: ``ferrograd.func.jacfwd``, one vmapped
    evaluation of ``func`` over every input direction.

    The outer Jacobian of a forward-over-reverse Hessian calls ``autograd.grad``
    inside ``func``, which vmap refuses; there each input direction gets its own
    dual evaluation (one forward pass per input element, no vmap).
    """
    fg = _fg()
    if not outer_of_hessian:
        from ..func import jacfwd

        jac = jacfwd(func, argnums=tuple(range(len(inputs))))(*inputs)
        if jac and isinstance(jac[0], tuple):
            return True, jac
        return False, (jac,)
    from . import forward_ad as fwAD

    columns, outs_tuple = None, False
    for j, inp in enumerate(inputs):
        flat_cols = []
        for k in range(inp.numel()):
            tangent = fg.zeros(inp.numel(), dtype=inp.dtype)
            tangent[k] = 1.0
            with fwAD.dual_level():
                duals = tuple(
                    fwAD.make_dual(x, tangent.reshape(x.shape)) if i == j else x
                    for i, x in enumerate(inputs)
                )
                outs = func(*duals)
                outs_tuple = isinstance(outs, tuple)
                outs = outs if outs_tuple else (outs,)
                cols = []
                for o in outs:
                    primal, t = fwAD.unpack_dual(o)
                    cols.append(fg.zeros_like(primal) if t is None else t.detach().clone())
            flat_cols.append(cols)
        if columns is None:
            columns = [[None] * len(inputs) for _ in flat_cols[0]] if flat_cols else []
        for o in range(len(columns)):
            stacked = fg.stack([c[o] for c in flat_cols], dim=-1)
            columns[o][j] = stacked.reshape(tuple(stacked.shape[:-1]) + tuple(inp.shape))
    return outs_tuple, tuple(tuple(row) for row in columns)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``.

    One input and one output give one tensor of shape ``out.shape + in.shape``; a
    tuple on either side gives a tuple, both give ``J[i][j]`` for output ``i`` and
    input ``j``. An input no output depends on gets zeros (an error with
    ``strict=True``). ``vectorize=True`` computes every row in one batched engine call
    instead of one backward per output element; ``strategy`` is ``"reverse-mode"``
    (``"forward-mode"`` needs ``vectorize=True`` and forward-mode AD).
    """
    fg = _fg()
    if strategy not in _STRATEGIES:
        raise ValueError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more '
            'performant. Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is "
                "only implemented for `vectorize=True`."
            )
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` "
                "are not supported together (yet). Please either set `strict=False` or "
                "`strategy=\"reverse-mode\"`."
            )
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        outer_of_hessian = getattr(func, "_ferrograd_hessian_inner", False)
        is_outputs_tuple, jac = _forward_jacobian(func, inputs, outer_of_hessian)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))
    with fg.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)

        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` "
                    "are not supported together. Please either set `strict=False` or "
                    "`vectorize=False`."
                )
            jac = _vectorized_jacobian(outputs, inputs, create_graph, strategy)
            jac = _grad_postprocess(jac, create_graph)
            return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))

        jac = []
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.numel()):
                vj = _autograd_grad(
                    (flat[j],), inputs, retain_graph=True, create_graph=create_graph
                )
                for k, (acc, g, inp) in enumerate(zip(rows, vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent "
                                f"of input {i}. This is not allowed in strict mode when "
                                "create_graph=True."
                            )
                        acc.append(g)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {k}. This is not allowed in strict mode."
                            )
                        acc.append(fg.zeros_like(inp))
            jac.append(tuple(
                (fg.stack(acc, dim=0) if acc else fg.zeros((0,) + tuple(inp.shape),
                                                           dtype=inp.dtype))
                .reshape(tuple(out.shape) + tuple(inp.shape))
                for acc, inp in zip(rows, inputs)
            ))
        jac = _grad_postprocess(tuple(jac), create_graph)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function ``func`` at ``inputs``.

    One input gives a tensor of shape ``in.shape + in.shape``; a tuple of inputs gives
    ``H[i][j]`` of shape ``in_i.shape + in_j.shape``. It is the Jacobian of the
    gradient, the inner Jacobian always in reverse mode with a graph;
    ``vectorize`` and ``outer_jacobian_strategy`` choose how the outer one is taken.
    """
    fg = _fg()
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, fg.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a "
                "single element"
            )
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    jac_func._ferrograd_hessian_inner = True

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(func, inputs, strict, fn_name):
    fg = _fg()
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(
        outputs, "outputs of the user-provided function", fn_name
    )
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], fg.Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a "
            "single element"
        )
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(*inputs), v^T H)`` for a scalar function: the output and the
    vector-Hessian product, with the structure of ``inputs``.

    Two backward passes: the gradient with a graph, then its vjp with ``v``.
    """
    fg = _fg()
    with fg.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "vhp")
        is_outputs_tuple, outputs = _scalar_output(func, inputs, strict, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
        outputs = _grad_postprocess(outputs, create_graph)
        res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_inputs_tuple),
    )


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(*inputs), H v)`` for a scalar function: the output and the
    Hessian-vector product, with the structure of ``inputs``.

    Uses the double-backward trick on the gradient, so it costs one backward more
    than :func:`vhp`; for a twice continuously differentiable function the two agree.
    """
    fg = _fg()
    with fg.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "hvp")
        is_outputs_tuple, outputs = _scalar_output(func, inputs, strict, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(fg.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
        outputs = _grad_postprocess(outputs, create_graph)
        res = _grad_postprocess(res, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(res, is_inputs_tuple),
    )
