"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and the single-step cells."""

from __future__ import annotations

import math
import numbers
import warnings
from typing import TYPE_CHECKING, overload

from ... import _C
from ...autograd.grad_mode import no_grad
from .._functional import rnn as _rnn
from .module import Module, Parameter

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import DType
    from ..utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _packed_type():
    from ..utils.rnn import PackedSequence

    return PackedSequence


def _reset_uniform(module, hidden_size):
    # PyTorch draws every parameter, in registration order, from one uniform range.
    stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    with no_grad():
        for p in module.parameters():
            if p is not None:
                p.uniform_(-stdv, stdv)


def _new_param(shape, dtype):
    return Parameter(_C.empty(*shape, dtype=dtype) if dtype is not None else _C.empty(*shape))


def _check_int(name, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")


def _no_proj_size(kwargs, name):
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(
            f"{name}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
        )


class RNNBase(Module):
    """Base class of :class:`RNN`, :class:`LSTM` and :class:`GRU`: the parameters, their
    initialisation, the argument checks and the forward pass over padded, unbatched or
    packed sequences.

    Layer ``k``'s parameters are ``weight_ih_l{k}``, ``weight_hh_l{k}``,
    ``bias_ih_l{k}``, ``bias_hh_l{k}`` (and ``weight_hr_l{k}`` for an LSTM with
    projections), with a ``_reverse`` suffix for the backward direction, registered
    in that order as in PyTorch, so state dicts are interchangeable.

    Every weight and bias is initialised uniformly in ``+-1 / sqrt(hidden_size)``.

    Args:
        mode (str): ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'`` or ``'GRU'``.
        input_size (int): ``H_in``, the features of each input step.
        hidden_size (int): ``H_out``, the features of the hidden state.
        num_layers (int): the number of stacked layers, each fed the previous one's
            output sequence. Default: ``1``.
        bias (bool): learn the ``b_ih`` and ``b_hh`` biases. Default: ``True``.
        batch_first (bool): input and output are ``(N, L, *)`` instead of
            ``(L, N, *)`` (the hidden states keep their layout). Default: ``False``.
        dropout (float): dropout on each layer's output except the last, in
            training mode. Default: ``0.0``.
        bidirectional (bool): also run each layer backwards in time and concatenate
            the two directions' outputs. Default: ``False``.
        proj_size (int): LSTM only: project the hidden state to this size.
            Default: ``0``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Example::

        >>> rnn = nn.RNNBase("GRU", 4, 8)
        >>> [name for name, _ in rnn.named_parameters()]
        ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    """

    mode: str
    input_size: int
    hidden_size: int
    num_layers: int
    bias: bool
    batch_first: bool
    dropout: float
    bidirectional: bool
    proj_size: int

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of "
                "an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(
                f"batch_first should be of type bool, got: {type(batch_first).__name__}"
            )
        _check_int("input_size", input_size)
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        _check_int("hidden_size", hidden_size)
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(dirs):
                layer_input = input_size if layer == 0 else real_hidden * dirs
                suffix = "_reverse" if direction == 1 else ""
                shapes = [
                    (f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                    (f"weight_hh_l{layer}{suffix}", (gate_size, real_hidden)),
                ]
                if bias:
                    shapes += [
                        (f"bias_ih_l{layer}{suffix}", (gate_size,)),
                        (f"bias_hh_l{layer}{suffix}", (gate_size,)),
                    ]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, _new_param(shape, dtype))
                self._flat_weights_names.extend(name for name, _ in shapes)
                self._all_weights.append([name for name, _ in shapes])
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws every parameter uniformly in +-1/sqrt(hidden_size), as PyTorch does."""
        _reset_uniform(self, self.hidden_size)

    def flatten_parameters(self):
        """Kept for PyTorch compatibility (cuDNN weight packing); nothing to do on the CPU."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _layer_weights(self):
        # Per layer and direction (w_ih, w_hh, b_ih, b_hh, w_hr); the names never change, so
        # their order is worked out once.
        order = self.__dict__.get("_weight_order")
        if order is None or len(order) != len(self._all_weights):
            kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
            order = []
            for names in self._all_weights:
                by_kind = {n.split("_l")[0]: n for n in names}
                order.append(tuple(by_kind.get(k) for k in kinds))
            self.__dict__["_weight_order"] = order
        return [tuple(None if n is None else getattr(self, n) for n in names) for names in order]

    def _state_sizes(self):
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if self.mode == "LSTM":
            return [real_hidden, self.hidden_size]
        return [real_hidden]

    def _check_input(self, input, packed):
        w = self.weight_ih_l0
        if input.dtype != w.dtype:
            raise ValueError(f"input must have the type {w.dtype}, got type {input.dtype}")
        expected = 2 if packed else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]}"
            )

    def _check_hidden(self, hx, batch):
        dirs = 2 if self.bidirectional else 1
        sizes = self._state_sizes()
        for k, (h, size) in enumerate(zip(hx, sizes)):
            expected = (self.num_layers * dirs, batch, size)
            if tuple(h.shape) != expected:
                label = f"hidden[{k}] size" if self.mode == "LSTM" else "hidden size"
                raise RuntimeError(f"Expected {label} {expected}, got {list(h.shape)}")

    def _unbatched_hx(self, hx, is_batched):
        # PyTorch's rank checks on the initial state, LSTM naming both tensors.
        if hx is None:
            return None
        states = tuple(hx) if self.mode == "LSTM" else (hx,)
        want = 3 if is_batched else 2
        if any(h.dim() != want for h in states):
            kind = "batched 3-D" if is_batched else "unbatched 2-D"
            if self.mode == "LSTM":
                dims = ", ".join(f"{h.dim()}-D" for h in states)
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but got ({dims}) tensors"
                )
            raise RuntimeError(
                f"For {kind} input, hx should also be {want}-D but got {states[0].dim()}-D tensor"
            )
        if not is_batched:
            states = tuple(h.unsqueeze(1) for h in states)
        return states

    @overload
    def forward(
        self, input: Tensor, hx: Tensor | tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor | tuple[Tensor, Tensor]]: ...
    @overload
    def forward(
        self, input: PackedSequence, hx: Tensor | tuple[Tensor, Tensor] | None = None
    ) -> tuple[PackedSequence, Tensor | tuple[Tensor, Tensor]]: ...
    def forward(
        self, input: Tensor | PackedSequence, hx: Tensor | tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor | PackedSequence, Tensor | tuple[Tensor, Tensor]]:
        PackedSequence = _packed_type()
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(self.mode, self.mode)
        dirs = 2 if self.bidirectional else 1
        if isinstance(input, PackedSequence):
            data, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = [int(b) for b in batch_sizes_t.tolist()]
            self._check_input(data, packed=True)
            batch = batch_sizes[0]
            is_batched = True
            if hx is not None:
                states = tuple(hx) if self.mode == "LSTM" else (hx,)
                if sorted_indices is not None:
                    states = tuple(h.index_select(1, sorted_indices) for h in states)
            else:
                states = None
        else:
            # A type with __ferrograd_function__ (a jit.trace value) runs the same code.
            if not isinstance(input, _C.Tensor) and not hasattr(
                type(input), "__ferrograd_function__"
            ):
                raise TypeError(
                    f"{name}.forward(): input must be a Tensor or PackedSequence, "
                    f"not {type(input).__name__}"
                )
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead"
                )
            is_batched = input.dim() == 3
            states = self._unbatched_hx(hx, is_batched)
            if not is_batched:
                input = input.unsqueeze(1 if self.batch_first is False else 0)
            self._check_input(input, packed=False)
            if self.batch_first:
                input = input.transpose(0, 1)
            steps, batch = input.shape[0], input.shape[1]
            batch_sizes = [batch] * steps
            data = input.reshape(steps * batch, input.shape[2])
            sorted_indices = unsorted_indices = None
        if states is None:
            states = tuple(
                _C.zeros(self.num_layers * dirs, batch, size, dtype=data.dtype)
                for size in self._state_sizes()
            )
        else:
            self._check_hidden(states, batch)
        if len(batch_sizes) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if batch == 0:
            # An empty batch: nothing to run, PyTorch returns empty outputs, which
            # are still part of the graph (they require grad, and backward gives
            # the weights zero gradients): a zero term in every input links them.
            width = dirs * self._state_sizes()[0]
            weights = [w for layer in self._layer_weights() for w in layer if w is not None]
            inputs = [data, *states, *weights]
            link = None
            for t in inputs:
                if t.requires_grad:
                    term = t.sum() * 0.0
                    link = term if link is None else link + term
            output = _C.zeros(len(batch_sizes), 0, width, dtype=data.dtype)
            if link is not None:
                output = output + link
                states = tuple(s + link for s in states)
            if self.batch_first:
                output = output.transpose(0, 1)
            return output, states if self.mode == "LSTM" else states[0]
        out, finals = _rnn.rnn_packed(
            self.mode,
            data,
            batch_sizes,
            states,
            self._layer_weights(),
            self.num_layers,
            self.bidirectional,
            self.dropout,
            self.training,
        )
        if isinstance(input, PackedSequence):
            if unsorted_indices is not None:
                finals = tuple(h.index_select(1, unsorted_indices) for h in finals)
            output = PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices)
        else:
            output = out.view(len(batch_sizes), batch, out.shape[1])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not is_batched:
                output = output.squeeze(0 if self.batch_first else 1)
                finals = tuple(h.squeeze(1) for h in finals)
        hidden = finals if self.mode == "LSTM" else finals[0]
        return output, hidden

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman recurrent network with a tanh or ReLU nonlinearity. For each layer and step ``t``:
    ``h_t = act(x_t @ W_ih.T + b_ih + h_(t-1) @ W_hh.T + b_hh)``.

    ``forward(input, hx=None)`` returns ``(output, h_n)``; a missing ``hx`` starts
    from zeros.

    Every weight and bias is initialised uniformly in ``+-1 / sqrt(hidden_size)``.

    Args:
        input_size (int): ``H_in``, the features of each input step.
        hidden_size (int): ``H_out``, the features of the hidden state.
        num_layers (int): the number of stacked layers, each fed the previous one's
            output sequence. Default: ``1``.
        nonlinearity (str): ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.
        bias (bool): learn the ``b_ih`` and ``b_hh`` biases. Default: ``True``.
        batch_first (bool): input and output are ``(N, L, *)`` instead of
            ``(L, N, *)`` (the hidden states keep their layout). Default: ``False``.
        dropout (float): dropout on each layer's output except the last, in
            training mode. Default: ``0.0``.
        bidirectional (bool): also run each layer backwards in time and concatenate
            the two directions' outputs. Default: ``False``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.
        **kwargs: no further option is accepted; they exist so that the misuse gets
            PyTorch's error. ``proj_size`` (an LSTM-only option) raises ``ValueError``
            ("proj_size argument is only supported for LSTM, not RNN or GRU"), any other
            keyword ``TypeError`` (unexpected keyword argument).

    Shape:
        ``D`` is 2 when bidirectional, else 1.

        - Input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, unbatched
          ``(L, H_in)``, or a :class:`~ferrograd.nn.utils.rnn.PackedSequence`.
        - hx: ``(D * num_layers, N, H_out)`` or ``(D * num_layers, H_out)``.
        - Output: ``(L, N, D * H_out)`` (or batch first, unbatched, or packed as the
          input): the last layer's hidden state at every step.
        - h_n: the shape of ``hx``, the final hidden state of each layer and direction.

    Example::

        >>> rnn = nn.RNN(10, 20, num_layers=2)
        >>> x, h0 = torch.ones(5, 3, 10), torch.zeros(2, 3, 20)
        >>> out, hn = rnn(x, h0)
        >>> out.shape, hn.shape
        (ferrograd.Size([5, 3, 20]), ferrograd.Size([2, 3, 20]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: object = None,
        dtype: DType | None = None,
        **kwargs: object,
    ) -> None:
        _no_proj_size(kwargs, "RNN")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(
            mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, 0, device, dtype,
        )  # fmt: skip
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory network. For each layer and step ``t``, with the gates in
    PyTorch's order (input, forget, cell, output)::

        i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)
        f = sigmoid(W_if x + b_if + W_hf h + b_hf)
        g = tanh(W_ig x + b_ig + W_hg h + b_hg)
        o = sigmoid(W_io x + b_io + W_ho h + b_ho)
        c' = f * c + i * g
        h' = o * tanh(c')

    With ``proj_size > 0`` the hidden state is projected, ``h' = W_hr h'``.
    ``forward(input, hx=None)``, ``hx`` the pair ``(h_0, c_0)``, returns
    ``(output, (h_n, c_n))``; missing states start from zeros.

    Every weight and bias is initialised uniformly in ``+-1 / sqrt(hidden_size)``.

    Args:
        input_size (int): ``H_in``, the features of each input step.
        hidden_size (int): ``H_out``, the features of the hidden state.
        num_layers (int): the number of stacked layers, each fed the previous one's
            output sequence. Default: ``1``.
        bias (bool): learn the ``b_ih`` and ``b_hh`` biases. Default: ``True``.
        batch_first (bool): input and output are ``(N, L, *)`` instead of
            ``(L, N, *)`` (the hidden states keep their layout). Default: ``False``.
        dropout (float): dropout on each layer's output except the last, in
            training mode. Default: ``0.0``.
        bidirectional (bool): also run each layer backwards in time and concatenate
            the two directions' outputs. Default: ``False``.
        proj_size (int): project the hidden state to this size (smaller than
            ``hidden_size``); 0 for none. Default: ``0``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        ``D`` is 2 when bidirectional, else 1.

        - Input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, unbatched
          ``(L, H_in)``, or a :class:`~ferrograd.nn.utils.rnn.PackedSequence`.
        - h_0: ``(D * num_layers, N, H_out)`` (``H_out`` is ``proj_size`` when set);
          c_0: ``(D * num_layers, N, hidden_size)``; without ``N`` when unbatched.
        - Output: ``(L, N, D * H_out)`` (or batch first, unbatched, or packed as the
          input): the last layer's hidden state at every step.
        - h_n, c_n: the shapes of ``h_0`` and ``c_0``, the final states.

    Example::

        >>> lstm = nn.LSTM(10, 20, batch_first=True, bidirectional=True)
        >>> out, (hn, cn) = lstm(torch.ones(3, 5, 10))
        >>> out.shape, hn.shape, cn.shape
        (ferrograd.Size([3, 5, 40]), ferrograd.Size([2, 3, 20]), ferrograd.Size([2, 3, 20]))
        >>> nn.LSTM(10, 20, proj_size=5)(torch.ones(5, 10))[0].shape
        ferrograd.Size([5, 5])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, proj_size, device, dtype,
        )  # fmt: skip


class GRU(RNNBase):
    """Gated recurrent unit network. For each layer and step ``t``, with the gates in PyTorch's
    order (reset, update, new)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    ``forward(input, hx=None)`` returns ``(output, h_n)``; a missing ``hx`` starts
    from zeros.

    Every weight and bias is initialised uniformly in ``+-1 / sqrt(hidden_size)``.

    Args:
        input_size (int): ``H_in``, the features of each input step.
        hidden_size (int): ``H_out``, the features of the hidden state.
        num_layers (int): the number of stacked layers, each fed the previous one's
            output sequence. Default: ``1``.
        bias (bool): learn the ``b_ih`` and ``b_hh`` biases. Default: ``True``.
        batch_first (bool): input and output are ``(N, L, *)`` instead of
            ``(L, N, *)`` (the hidden states keep their layout). Default: ``False``.
        dropout (float): dropout on each layer's output except the last, in
            training mode. Default: ``0.0``.
        bidirectional (bool): also run each layer backwards in time and concatenate
            the two directions' outputs. Default: ``False``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.
        **kwargs: no further option is accepted; they exist so that the misuse gets
            PyTorch's error. ``proj_size`` (an LSTM-only option) raises ``ValueError``
            ("proj_size argument is only supported for LSTM, not RNN or GRU"), any other
            keyword ``TypeError`` (unexpected keyword argument).

    Shape:
        ``D`` is 2 when bidirectional, else 1.

        - Input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, unbatched
          ``(L, H_in)``, or a :class:`~ferrograd.nn.utils.rnn.PackedSequence`.
        - hx: ``(D * num_layers, N, H_out)`` or ``(D * num_layers, H_out)``.
        - Output: ``(L, N, D * H_out)`` (or batch first, unbatched, or packed as the
          input): the last layer's hidden state at every step.
        - h_n: the shape of ``hx``, the final hidden state of each layer and direction.

    Example::

        >>> gru = nn.GRU(10, 20, num_layers=2)
        >>> out, hn = gru(torch.ones(5, 3, 10))
        >>> out.shape, hn.shape
        (ferrograd.Size([5, 3, 20]), ferrograd.Size([2, 3, 20]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: object = None,
        dtype: DType | None = None,
        **kwargs: object,
    ) -> None:
        _no_proj_size(kwargs, "GRU")
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, 0, device, dtype,
        )  # fmt: skip


class RNNCellBase(Module):
    """Base class of :class:`RNNCell`, :class:`LSTMCell` and :class:`GRUCell`: the parameters
    ``weight_ih`` ``(num_chunks * hidden_size, input_size)``, ``weight_hh``
    ``(num_chunks * hidden_size, hidden_size)``, ``bias_ih`` and ``bias_hh``
    ``(num_chunks * hidden_size,)``, initialised uniformly in ``+-1 / sqrt(hidden_size)``.

    Args:
        input_size (int): the features of the input.
        hidden_size (int): the features of the hidden state.
        bias (bool): learn the biases.
        num_chunks (int): the number of gates (1 for an RNN, 4 for an LSTM, 3 for a
            GRU).
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Example::

        >>> cell = nn.RNNCellBase(4, 8, True, 3)
        >>> cell.weight_ih.shape, cell.weight_hh.shape, cell.bias_ih.shape
        (ferrograd.Size([24, 4]), ferrograd.Size([24, 8]), ferrograd.Size([24]))
    """

    input_size: int
    hidden_size: int
    bias: bool
    weight_ih: Tensor
    weight_hh: Tensor
    bias_ih: Tensor | None
    bias_hh: Tensor | None

    _name = "RNNCellBase"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = _new_param((num_chunks * hidden_size, input_size), dtype)
        self.weight_hh = _new_param((num_chunks * hidden_size, hidden_size), dtype)
        if bias:
            self.bias_ih = _new_param((num_chunks * hidden_size,), dtype)
            self.bias_hh = _new_param((num_chunks * hidden_size,), dtype)
        else:
            self.bias_ih = self.bias_hh = None
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws every parameter uniformly in +-1/sqrt(hidden_size), as PyTorch does."""
        _reset_uniform(self, self.hidden_size)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = self.__dict__.get("nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    def _prepare(self, input, hx, n_states):
        name = type(self).__name__
        if not isinstance(input, _C.Tensor):
            raise TypeError(f"{name}.forward(): input must be a Tensor, not {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = None
        if hx is not None:
            states = tuple(hx) if n_states == 2 else (hx,)
            for k, h in enumerate(states):
                if h.dim() not in (1, 2):
                    label = f"hx[{k}]" if n_states == 2 else "hidden"
                    raise ValueError(
                        f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D instead"
                    )
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
            if states is not None:
                states = tuple(h.unsqueeze(0) for h in states)
        if input.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[1]} expected "
                f"{self.input_size}"
            )
        if states is None:
            states = tuple(
                _C.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
                for _ in range(n_states)
            )
        for k, h in enumerate(states):
            if h.dim() != 2 or h.shape[0] != input.shape[0]:
                raise RuntimeError(
                    f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size "
                    f"{h.shape[0]}"
                )
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected "
                    f"{self.hidden_size}"
                )
        return input, states, is_batched


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``.

    ``forward(input, hx=None)`` returns ``h'``; a missing ``hx`` is zeros.

    Args:
        input_size (int): ``H_in``, the features of the input.
        hidden_size (int): ``H_out``, the features of the hidden state.
        bias (bool): learn the biases. Default: ``True``.
        nonlinearity (str): ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(N, H_in)`` or ``(H_in,)``.
        - Hx: ``(N, H_out)`` or ``(H_out,)``.
        - Output: ``(N, H_out)`` or ``(H_out,)``.

    Example::

        >>> cell = nn.RNNCell(10, 20)
        >>> h = torch.zeros(3, 20)
        >>> for x in torch.ones(6, 3, 10):
        ...     h = cell(x, h)
        >>> h.shape
        ferrograd.Size([3, 20])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if self.nonlinearity not in ("tanh", "relu"):
            # Checked here, as PyTorch does, not at construction.
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, (h,), is_batched = self._prepare(input, hx, 1)
        step = _rnn.make_step(
            "RNN_RELU" if self.nonlinearity == "relu" else "RNN_TANH", self.weight_hh,
            self.bias_hh,
        )  # fmt: skip
        (out,) = step(_rnn.F.linear(input, self.weight_ih, self.bias_ih), h)
        return out if is_batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of an LSTM (gate order input, forget, cell, output, as in :class:`LSTM`).

    ``forward(input, hx=None)``, ``hx`` the pair ``(h, c)``, returns ``(h', c')``;
    missing states are zeros.

    Args:
        input_size (int): ``H_in``, the features of the input.
        hidden_size (int): ``H_out``, the features of the hidden and cell states.
        bias (bool): learn the biases. Default: ``True``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(N, H_in)`` or ``(H_in,)``.
        - h, c: ``(N, H_out)`` or ``(H_out,)``.
        - Output: ``(h', c')``, each ``(N, H_out)`` or ``(H_out,)``.

    Example::

        >>> cell = nn.LSTMCell(10, 20)
        >>> h, c = cell(torch.ones(3, 10))
        >>> h.shape, c.shape
        (ferrograd.Size([3, 20]), ferrograd.Size([3, 20]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        input, (h, c), is_batched = self._prepare(input, hx, 2)
        step = _rnn.make_step("LSTM", self.weight_hh, self.bias_hh)
        h, c = step(_rnn.F.linear(input, self.weight_ih, self.bias_ih), h, c)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One step of a GRU (gate order reset, update, new, as in :class:`GRU`).

    ``forward(input, hx=None)`` returns ``h'``; a missing ``hx`` is zeros.

    Args:
        input_size (int): ``H_in``, the features of the input.
        hidden_size (int): ``H_out``, the features of the hidden state.
        bias (bool): learn the biases. Default: ``True``.
        device (optional): accepted for PyTorch compatibility. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default
            dtype.

    Shape:
        - Input: ``(N, H_in)`` or ``(H_in,)``.
        - Hx: ``(N, H_out)`` or ``(H_out,)``.
        - Output: ``(N, H_out)`` or ``(H_out,)``.

    Example::

        >>> cell = nn.GRUCell(10, 20)
        >>> cell(torch.ones(10)).shape
        ferrograd.Size([20])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), is_batched = self._prepare(input, hx, 1)
        step = _rnn.make_step("GRU", self.weight_hh, self.bias_hh)
        (out,) = step(_rnn.F.linear(input, self.weight_ih, self.bias_ih), h)
        return out if is_batched else out.squeeze(0)
