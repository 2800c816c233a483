"""Cross-rank argument checks of neuron collectives (``TORCH_NEURONX_COLLECTIVE_CHECKS=1``).

Why: gloo trusts every rank to pass matching tensors. An ``all_reduce`` whose sizes differ
across ranks overflows a receive buffer inside gloo's transport thread, which throws where
nothing catches it: that rank aborts (SIGABRT) and its peers get connection errors; a
dtype mismatch of equal byte count silently reduces garbage. PyTorch already has the
remedy, ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: it wraps each backend in ``ProcessGroupWrapper``,
which before every collective compares op type, shapes and dtypes across ranks over a helper
gloo group, and raises the same clear ``RuntimeError`` on every rank. This switch applies
exactly that wrapper to the neuron backend alone (DETAIL also turns on PyTorch's other
debug machinery, and wraps CPU gloo groups too). It is off by default: each checked
collective costs one barrier and one all-gather on the helper group (2-5x the time of a
small all_reduce on loopback; the numbers are in docs/distributed.md and docs/decisions.md).
Not checked: split_group children (PyTorch's ``ProcessGroupWrapper.split`` returns the
unwrapped child) and point-to-point ops (the wrapper passes them through).
"""

from __future__ import annotations

import torch.distributed as dist
from torch.distributed import ProcessGroupGloo
from torch.distributed import distributed_c10d as c10d

from torch_neuronx.runtime import env

SWITCH = "TORCH_NEURONX_COLLECTIVE_CHECKS"


def enabled() -> bool:
    """The switch is on, and PyTorch is not already wrapping (under DETAIL it wraps every
    backend the creator returns; wrapping twice would check each collective twice)."""
    return env.flag(SWITCH, default=False) and dist.get_debug_level() != dist.DebugLevel.DETAIL


def wrap(backend, store, rank: int, size: int, group_name: str, timeout):
    """``backend`` inside PyTorch's ``ProcessGroupWrapper``, built as
    ``distributed_c10d._create_process_group_wrapper`` builds it for DETAIL: a helper gloo group
    on its own prefix of the group's store, so its rendezvous never meets the checked group's."""
    helper_store = dist.PrefixStore(f"{c10d.PG_WRAPPER_STORE_PREFIX}:{group_name}", store)
    helper = ProcessGroupGloo(helper_store, rank, size, timeout=timeout)
    return c10d._ProcessGroupWrapper(backend, helper)
