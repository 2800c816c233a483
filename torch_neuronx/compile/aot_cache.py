"""AOT-level cache: PyTorch's own AOTAutogradCache, used by the ``neuron`` backend.

A warm process must skip AOTAutograd's tracing, Inductor's joint-graph passes and the
min-cut partitioner, not only code generation. PyTorch's AOTAutogradCache does exactly that
for any backend whose forward/backward compilers are ``SerializableAOTDispatchCompiler``s
returning an ``OutputCode`` (ours: ``executable._DeviceExecutable``). In *bundled* mode an
entry holds the partitioned graphs' compiled outputs together with AOTAutograd's runtime
metadata and wrappers; a hit rebuilds the runtime wrappers and reloads the kernels.

Its key covers the Dynamo graph, the input metadata (shape, stride, dtype, device,
requires_grad), grad mode, autocast state, deterministic-algorithm settings, the Inductor and
functorch configs and torch's source hash. What is specific to our backend goes into
``torch.compiler.config.cache_key_tag`` (which PyTorch adds to both its AOTAutograd and
FX-graph cache keys): a fingerprint of this package's code, of the eager op policy that
decides graph legality and of the C++ core, the backend options that change generated code,
and the intra-op thread count (CPU kernels specialise on it). When the op policy cannot be
fingerprinted (e.g. a policy function replaced at run time) the AOT cache is not used for
that graph, since a hit would skip the legality pass.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import os
from collections.abc import Callable

import torch

from . import legality

_PKG = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_PKG)


@functools.cache
def _code_fingerprint() -> str:
    """This package's sources, the op-policy and conv-backend modules and the core extension
    (by size and mtime): a development checkout changes them without changing the package
    version."""
    h = hashlib.sha256()
    files = sorted(glob.glob(os.path.join(_PKG, "*.py")))
    files.append(os.path.join(_ROOT, "eager", "op_policy.py"))
    # the convolution memory format that FakeTensor gives neuron tensors shapes traced graphs
    files.append(os.path.join(_ROOT, "eager", "conv_backend.py"))
    for path in files:
        try:
            with open(path, "rb") as f:
                h.update(os.path.basename(path).encode() + b"\0" + f.read())
        except OSError:
            h.update(b"missing:" + path.encode())
    for so in sorted(glob.glob(os.path.join(_ROOT, "_C*.so"))):
        try:
            st = os.stat(so)
            h.update(f"{os.path.basename(so)}:{st.st_size}:{st.st_mtime_ns}".encode())
        except OSError:
            pass
    return h.hexdigest()[:16]


def key_tag(options_tag: str) -> str | None:
    """Extra cache-key material for the current compile, or None when the AOT cache must not
    be used (the legality policy cannot be fingerprinted)."""
    policy = legality.policy_fingerprint()
    if policy is None:
        return None
    return (
        f"neuron:{_code_fingerprint()}:policy={policy}:opts={options_tag}"
        f":threads={torch.get_num_threads()}"
    )


def serializable(compiler: Callable) -> Callable:
    """Mark a forward/backward/inference compiler as cacheable by AOTAutogradCache."""
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

    from .executable import _DeviceExecutable

    return SerializableAOTDispatchCompiler(_DeviceExecutable, compiler)


@contextlib.contextmanager
def enabled(tag: str):
    """AOTAutogradCache on, in bundled mode, with our key tag (for the duration of one
    backend call; the Inductor cache directory is selected by the caller)."""
    from torch._functorch import config as functorch_config

    with (
        functorch_config.patch(
            enable_autograd_cache=True, bundled_autograd_cache=True, strict_autograd_cache=False
        ),
        torch.compiler.config.patch(cache_key_tag=tag),
    ):
        yield


@contextlib.contextmanager
def disabled():
    from torch._functorch import config as functorch_config

    with functorch_config.patch(enable_autograd_cache=False):
        yield


# ViewMetas whose pickling reads freed memory in torch 2.13: their serializable tuples hold
# references to temporaries (pytorch/pytorch#185630, fixed upstream by #185861). AOTAutograd
# pickles the ViewMeta sequence of every output that aliases an intermediate (to replay the
# view at run time); a saved entry then held garbage sizes (a cache hit raised "invalid shape
# dimension -3362887879290299908"), or the save itself crashed the process. Found by the
# model-zoo sweep: PE Audio's encoder returns `linear(x)[:, 1:]` and `linear(x)[:, 0]` of
# a bias-free linear on a 3-D input, whose matmul ends in `_unsafe_view`.
_UNSAFE_TO_PICKLE = ("_unsafe_view_ViewMeta", "resize__ViewMeta")


def unsafe_to_save() -> str:
    """Why the graph being compiled (AOTAutograd's current metadata) must not go into the
    AOT-level cache; '' when it may."""
    tc = torch._guards.TracingContext.try_get()
    meta = getattr(tc, "fw_metadata", None) if tc is not None else None
    for i, info in enumerate(getattr(meta, "output_info", None) or ()):
        seq = getattr(info, "view_meta_sequence", None)
        for vm in getattr(seq, "sequence", None) or ():
            if type(vm).__name__ in _UNSAFE_TO_PICKLE:
                return (
                    f"output {i} is a view through {type(vm).__name__[: -len('_ViewMeta')]}, "
                    "whose ViewMeta torch cannot pickle safely (pytorch/pytorch#185630)"
                )
    return ""


def counters() -> tuple:
    from torch._dynamo.utils import counters as c

    a = c["aot_autograd"]
    return (a["autograd_cache_hit"], a["autograd_cache_miss"], a["autograd_cache_bypass"])
