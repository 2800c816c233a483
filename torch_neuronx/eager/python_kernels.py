"""The one way this package registers an ATen kernel written in Python (torch.library).

A Python kernel runs as ordinary Python frames, and Dynamo evaluates every Python frame entered
while a compiled function runs, its eager parts included: an op Dynamo leaves out of its graphs
(nn.LSTM and the other RNN modules, by default) runs eagerly and reaches these kernels, and
Dynamo then compiled the kernel's own frames into graphs of their own (a graph break at the
first ``torch._C`` query, a compile per kernel; for nn.LSTM a graph of the kernel's body that
the backend could not run). A kernel belongs to the dispatcher, not to the user's program:
:func:`register` marks its code for Dynamo to skip, with every frame it calls, the mark
``torch._dynamo.eval_frame.skip_code`` sets (there non-recursive), through the C extension so
that importing torch_neuronx does not import torch._dynamo (1.7 s measured).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._C._dynamo.eval_frame import (
    _FrameAction,
    _FrameExecStrategy,
    set_code_exec_strategy,
)

# skip the kernel's frame and the frames it calls (its helpers, an autograd.Function's forward)
_SKIP = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)


def register(lib: torch.library.Library, name: str, kernel: Callable, key: str) -> None:
    """``lib.impl(name, kernel, key)``, with ``kernel`` kept out of Dynamo's tracing."""
    set_code_exec_strategy(kernel.__code__, _SKIP)
    lib.impl(name, kernel, key)
