"""The ``neuron`` c10d backend.

Design
------
The emulated NeuronCore keeps device memory in host RAM, so the transport is gloo
(PyTorch's own TCP collectives library) operating *directly* on the bytes behind
neuron tensors:

* The backend creator registered for ``"neuron"`` returns a real, C++
  ``ProcessGroupGloo`` built on the process group's store/rank/size/timeout.  It is
  registered on the ``ProcessGroup`` for the ``neuron`` device (and, when the user
  asks for plain ``backend="neuron"``, for ``cpu`` too), so everything the C++
  ``ProcessGroup`` does natively keeps working: ``new_group``, ``split_group``
  (gloo supports splitting), ``DeviceMesh``, timeouts, object collectives,
  ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` wrapping, sequence numbers. With
  ``TORCH_NEURONX_COLLECTIVE_CHECKS=1`` it comes inside PyTorch's ``ProcessGroupWrapper``,
  which checks each collective's arguments across ranks first (:mod:`.checks`).

* gloo itself only accepts CPU tensors.  PyTorch routes every collective through
  the ``c10d::*`` dispatcher ops, keyed on the tensors' device; the driver registers
  ``PrivateUse1`` (= ``neuron``) kernels for all of them
  (torch_neuronx/csrc/distributed/collectives.cpp).  Each one hands the group's neuron
  gloo backend the host views of the neuron tensors (a CPU tensor over the *same* memory:
  no staging copy, gloo reads and writes device memory in place) and returns gloo's own
  ``Work``.  ``PREMUL_SUM``, which gloo lacks, runs as ``SUM`` over pre-scaled inputs.

* What torch 2.13 cannot do with such a group, ``split_group``, is mended below through
  :mod:`torch_neuronx.runtime.patches` (each replacement is listed there with its reason).
"""

from __future__ import annotations

import threading

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroupGloo

from torch_neuronx import _C
from torch_neuronx.distributed import checks
from torch_neuronx.runtime import devices as _device
from torch_neuronx.runtime import env, patches

NEURON = "neuron"

_lock = threading.Lock()
_registered = False


# --------------------------------------------------------------------------------------
# backend creation
# --------------------------------------------------------------------------------------
def _bind_local_device() -> None:
    """One process drives one logical NeuronCore: device index = LOCAL_RANK (when torchrun
    or another env:// launcher set it)."""
    local_rank = env.integer("LOCAL_RANK", default=-1, minimum=0)
    if local_rank < 0:
        return
    n = _device.device_count()
    if local_rank >= n:
        raise RuntimeError(
            f"neuron backend: LOCAL_RANK={local_rank} but only {n} logical NeuronCore(s) "
            f"are visible to this process; launch at most {n} processes per node "
            f"(torchrun --nproc_per_node <= {n}) or make more cores visible "
            f"(NEURON_RT_VISIBLE_CORES / TORCH_NEURONX_EMULATED_INSTANCE)."
        )
    _device.set_device(local_rank)


def _create_neuron_backend(dist_opts, backend_options=None):
    """Creator registered with ``dist.Backend.register_backend`` (extended API)."""
    ranks = list(dist_opts.global_ranks_in_group)
    if not ranks:  # the default group (the only one created without a rank list)
        _bind_local_device()
    backend = ProcessGroupGloo(
        dist_opts.store, dist_opts.group_rank, dist_opts.group_size, timeout=dist_opts.timeout
    )
    # The default group passes no ranks; gloo then assumes 0..size-1 only for the first
    # gloo instance of the process, and ``split`` indexes this list (an empty list crashes
    # it when another gloo backend came first, as in "cpu:gloo,neuron:neuron").
    backend.options.global_ranks_in_group = ranks or list(range(dist_opts.group_size))
    backend.options.group_name = dist_opts.group_id
    backend._set_sequence_number_for_group()
    if checks.enabled():  # TORCH_NEURONX_COLLECTIVE_CHECKS=1: see distributed/checks.py
        return checks.wrap(
            backend,
            dist_opts.store,
            dist_opts.group_rank,
            dist_opts.group_size,
            dist_opts.group_id,
            dist_opts.timeout,
        )
    return backend


# --------------------------------------------------------------------------------------
# split_group (torch 2.13 cannot split a group carrying the neuron backend on its own)
# --------------------------------------------------------------------------------------
def _gloo_options_deepcopy(self, memo):
    """``dist.split_group`` deep-copies the parent backend's options; gloo's pybind
    ``_Options`` cannot be pickled. The copy shares the gloo devices, as the C++ split does."""
    new = ProcessGroupGloo._Options()
    new._timeout = self._timeout
    new._threads = self._threads
    new._devices = list(self._devices)
    new.global_ranks_in_group = list(self.global_ranks_in_group)
    new.group_name = self.group_name
    return new


_SPLIT_DEFAULT_DEVICE_ERR = "must include the parent process group's default backend device type"


def _ensure_default_backend(pg) -> None:
    """torch never sets a default backend on a ``"cpu:gloo,neuron:neuron"`` group (it looks
    the plugin up as "NEURON" among the lowercase names of the backend string), and its
    ``splitGroup`` rejects a device-type filter without one. The neuron backend is the
    group's device backend, so it becomes the default (as NCCL would for
    ``cpu:gloo,cuda:nccl``)."""
    if pg._get_backend_name() == "undefined":
        pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)


def _split_mixed(self, orig, types, ranks, *args, **kwargs):
    """Split a group whose CPU tensors go to a backend other than the neuron one (e.g.
    ``"cpu:gloo,neuron:neuron"``): split the neuron backend alone (torch would split both
    gloo backends on one store prefix, whose rendezvous collide), then give the child a
    fresh gloo backend for CPU tensors under its own prefix of the child's store."""
    others = [t for t in types if t != NEURON]
    for t in others:
        if not isinstance(self._get_backend(torch.device(t)), ProcessGroupGloo):
            raise RuntimeError(
                f"split_group: the {t!r} backend of this group is not gloo; only neuron groups "
                "whose other devices use gloo can be split. Use dist.new_group(ranks) instead."
            )
    new = orig(self, ranks, *args, device_types=[torch.device(NEURON)], **kwargs)
    if new is None:
        return None
    neuron_child = new._get_backend(torch.device(NEURON))
    name, desc = new.group_name, new.group_desc
    timeout = kwargs.get("timeout") or neuron_child.options._timeout
    for t in others:
        child = ProcessGroupGloo(
            dist.PrefixStore(f"{t}/", new.get_group_store()),
            new.rank(),
            new.size(),
            timeout=timeout,
        )
        child.options.global_ranks_in_group = list(neuron_child.options.global_ranks_in_group)
        child.options.group_name = name
        child._set_sequence_number_for_group()
        new._register_backend(torch.device(t), dist.ProcessGroup.BackendType.GLOO, child)
    # the group reports its first backend's name/description: give the new ones the same
    new._set_group_name(name)
    new._set_group_desc(desc)
    return new


def _split_group(self, ranks, *args, device_types=None, **kwargs):
    """``ProcessGroup.split_group`` for groups carrying the neuron backend.

    torch 2.13's ``ProcessGroup::splitGroup`` splits per *device type*:
    * ``backend="neuron"``: one gloo backend serves ``cpu`` and ``neuron``; it gets split
      twice on the same store prefix and the two rendezvous race (hang). We split the
      shared backend once (device-type filter) and register the child for the group's
      other device type too, so CPU tensors keep working on it.
    * ``"cpu:gloo,neuron:neuron"``: the group never gets a default backend (see
      ``_ensure_default_backend``), and its two gloo backends would rendezvous on one store
      prefix: see ``_split_mixed``. (The crash torch 2.13 showed here was gloo's ``split``
      indexing an empty global-rank list; ``_create_neuron_backend`` now fills it.)
    Groups without the neuron backend go to torch's own method unchanged.
    """
    orig = patches.original(dist.ProcessGroup, "split_group")
    types = [d.type for d in self._device_types]
    if NEURON not in types:
        return orig(self, ranks, *args, device_types=device_types, **kwargs)
    _ensure_default_backend(self)
    if device_types is not None or len(types) == 1:
        return orig(self, ranks, *args, device_types=device_types, **kwargs)
    held = [self._get_backend(torch.device(t)) for t in types]  # alive: ids are stable
    if len({id(b) for b in held}) != 1:
        return _split_mixed(self, orig, types, ranks, *args, **kwargs)
    others = [t for t in types if t != NEURON]
    for first in [NEURON] + others:
        try:
            new = orig(self, ranks, *args, device_types=[torch.device(first)], **kwargs)
        except RuntimeError as e:
            if _SPLIT_DEFAULT_DEVICE_ERR in str(e):
                continue  # the default backend is keyed on another device type
            raise
        if new is not None:
            child = new._get_backend(torch.device(first))
            for t in types:
                if t != first:
                    new._register_backend(
                        torch.device(t), dist.ProcessGroup.BackendType.CUSTOM, child
                    )
        return new
    return orig(self, ranks, *args, device_types=device_types, **kwargs)


# --------------------------------------------------------------------------------------
# registration
# --------------------------------------------------------------------------------------
def register() -> None:
    """Register the ``neuron`` c10d backend (idempotent; called at autoload)."""
    global _registered
    with _lock:
        if _registered:
            return
        # "cpu" in the capability list: plain backend="neuron" also carries CPU-tensor
        # traffic (object collectives, barriers, DCP metadata) over the same gloo
        # transport.  The default backend of "cpu" stays gloo.
        dist.Backend.register_backend(
            NEURON, _create_neuron_backend, extended_api=True, devices=["cpu", NEURON]
        )
        _C._register_c10d_kernels()
        patches.replace(
            ProcessGroupGloo._Options,
            "__deepcopy__",
            _gloo_options_deepcopy,
            reason="dist.split_group deep-copies the parent backend's options, which gloo's "
            "pybind options object cannot do; the neuron backend is a gloo backend",
        )
        patches.replace(
            dist.ProcessGroup,
            "split_group",
            _split_group,
            reason="torch 2.13 cannot split a group carrying the neuron backend (a 'neuron' "
            "group's shared gloo backend is split twice on one store prefix and hangs; a "
            "'cpu:gloo,neuron:neuron' group has no default backend); other groups are "
            "passed to torch's method unchanged",
        )
        _registered = True


def is_registered() -> bool:
    return _registered
