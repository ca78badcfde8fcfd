"""ferrograd's main demo: build a small graph, run backward, look at it.

    pip install . && python examples/demo.py
"""

import ferrograd as fg


def walk(fn, depth=0, seen=None):
    """Prints the backward graph from `fn` down to the leaves."""
    seen = set() if seen is None else seen
    print("  " * depth + fn.name())
    if fn.name() == "AccumulateGrad" or id(fn) in seen:
        return
    seen.add(id(fn))
    for child, _ in fn.next_functions:
        if child is not None:
            walk(child, depth + 1, seen)


fg.manual_seed(0)
x = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
w = fg.tensor([[0.5], [-1.0]], requires_grad=True)
b = fg.tensor([0.1], requires_grad=True)

y = (x @ w + b).tanh()
loss = fg.nn.MSELoss()(y, fg.zeros(2, 1))
print("loss:", loss)

loss.backward()
print("x.grad:", x.grad)
print("w.grad:", w.grad)
print("b.grad:", b.grad)

print("graph, from the loss down to the leaves:")
walk(loss.grad_fn)

# Second derivative of sin: d2/dt2 sin(t) = -sin(t).
t = fg.tensor(0.5, dtype=fg.float64, requires_grad=True)
(g,) = fg.autograd.grad(fg.sin(t), t, create_graph=True)
(gg,) = fg.autograd.grad(g, t)
print("d/dt sin at 0.5:", g.item(), " d2/dt2:", gg.item())
