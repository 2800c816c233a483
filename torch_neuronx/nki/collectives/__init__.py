"""``nki.collectives`` (``ncc``): collective communication between the ranks of a job, simulated.

A kernel written for AWS's module runs with an import change::

    import torch_neuronx.nki.collectives as ncc
    from torch_neuronx.nki.collectives import ReplicaGroup

On hardware such a kernel runs once per rank (a logical NeuronCore). Here it runs so in a
``torch.distributed`` job (each process calls it; collectives exchange between the processes,
:mod:`.processes`), or the ranks are launched together in one process with :func:`run_ranks`
(torch-neuronx's addition: AWS's CPU simulator does not implement ``nki.collectives``), which
runs one launch per rank as coroutines that meet at each collective (nki/ranks.py). Names and rules follow NKI 2.33
(https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/nki.collectives.html).
See docs/nki.md ("Collectives").
"""

from __future__ import annotations

from ..instructions import returning_handle
from ..ranks import run_ranks
from .api import (
    all_gather,
    all_reduce,
    all_to_all,
    collective_permute,
    collective_permute_implicit,
    collective_permute_implicit_current_processing_rank_id,
    collective_permute_implicit_reduce,
    rank_id,
    reduce_scatter,
)
from .groups import ReplicaGroup
from .variable import all_gather_v, all_to_all_v

# each collective returns its NkiInstruction (``.depends_on``), as in NKI 2.33
for _n in (
    "all_reduce",
    "all_gather",
    "all_gather_v",
    "reduce_scatter",
    "all_to_all",
    "all_to_all_v",
    "collective_permute",
    "collective_permute_implicit",
    "collective_permute_implicit_reduce",
):
    globals()[_n] = returning_handle(globals()[_n])

__all__ = [
    "ReplicaGroup",
    "all_reduce",
    "all_gather",
    "all_gather_v",
    "reduce_scatter",
    "all_to_all",
    "all_to_all_v",
    "collective_permute",
    "collective_permute_implicit",
    "collective_permute_implicit_reduce",
    "collective_permute_implicit_current_processing_rank_id",
    "rank_id",
    "run_ranks",
]
