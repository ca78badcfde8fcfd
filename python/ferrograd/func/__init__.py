"""Composable function transforms, as ``torch.func``: ``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``,
``hessian``, ``vmap``, ``functional_call`` and ``stack_module_state``. ``vmap`` runs a function once
on batched values (every op has a batching rule); the transforms nest
(``vmap(grad(f))``, ``jacfwd(jacrev(f))``, ``vmap(vmap(f))``)."""

from ._batched import BatchedTensor
from ._forward import hessian, jacfwd, jvp, linearize
from ._functional_call import functional_call, stack_module_state
from ._reverse import grad, grad_and_value, jacrev, vjp
from ._vmap import vmap

__all__ = [
    "BatchedTensor",
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "stack_module_state",
    "vjp",
    "vmap",
]
