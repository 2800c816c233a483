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
  ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` wrapping, sequence numbers.

* gloo itself only accepts CPU tensors.  PyTorch routes every collective through
  the ``c10d::*`` dispatcher ops, keyed on the tensors' device; we register
  ``PrivateUse1`` (= ``neuron``) kernels for all of them.  Each kernel replaces
  every neuron tensor by ``host_alias(t)`` (a CPU tensor over the *same* memory:
  no staging copy, gloo reads and writes device memory in place) and re-dispatches
  the very same op on a small "host shadow" ``ProcessGroup`` whose CPU backend is
  the group's neuron gloo backend.  All option handling (reduce ops, roots,
  splits, timeouts, ``async_op``) is therefore gloo's own.

* The kernel returns gloo's own ``Work``: ``wait()`` raises gloo's errors (timeouts,
  dead peers), ``async_op`` stays asynchronous, and its future yields the host
  aliases, i.e. the very bytes of the neuron outputs (DDP's reducer and Python comm
  hooks copy from them into the neuron buckets).

* ``PREMUL_SUM`` (which gloo lacks) is run as ``SUM`` over pre-scaled inputs; the
  dispatcher's TorchScript ``ReduceOp`` does not carry the scale factor, so the
  Python-facing ``ProcessGroup`` reduce methods leave it in a thread-local.
"""
from __future__ import annotations

import os
import threading
import weakref

import torch
import torch.distributed as dist

NEURON = "neuron"

_lock = threading.Lock()
_registered = False
_kernel_lib = None
# real ProcessGroup (weak) -> {device_index_or_type: shadow ProcessGroup}
_shadows: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


# --------------------------------------------------------------------------------------
# host aliasing (the core's zero-copy seam)
# --------------------------------------------------------------------------------------
def _host_alias_fn():
    try:
        from torch_neuronx.runtime.host import host_alias
    except Exception:  # core not built: CPU tensors stand in for neuron tensors
        def host_alias(t):
            if t.device.type != "cpu":
                raise RuntimeError(f"cannot alias {t.device} tensor to host memory")
            return t
    return host_alias


_HOST_ALIAS = None


def host_alias(t: torch.Tensor) -> torch.Tensor:
    global _HOST_ALIAS
    if _HOST_ALIAS is None:
        _HOST_ALIAS = _host_alias_fn()
    return _HOST_ALIAS(t)


def _alias_tree(x):
    if isinstance(x, torch.Tensor):
        return host_alias(x) if x.device.type == NEURON else x
    if isinstance(x, (list, tuple)):
        return [_alias_tree(i) for i in x]
    return x


def _flatten_tensors(x, out):
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for i in x:
            _flatten_tensors(i, out)
    return out


def _sync_device(device):
    mod = getattr(torch, NEURON, None)
    sync = getattr(mod, "synchronize", None)
    if sync is not None:
        sync(device)


def _first_neuron_device(args):
    for a in args:
        for t in _flatten_tensors(a, []):
            if t.device.type == NEURON:
                return t.device
    return torch.device(NEURON)


# --------------------------------------------------------------------------------------
# backend creation
# --------------------------------------------------------------------------------------
def _maybe_bind_local_device(is_default_group: bool) -> None:
    """One process drives one logical NeuronCore: device index = LOCAL_RANK."""
    if not is_default_group:
        return
    local_rank = os.environ.get("LOCAL_RANK")
    mod = getattr(torch, NEURON, None)
    if local_rank is None or mod is None:
        return
    local_rank = int(local_rank)
    n = mod.device_count()
    if local_rank >= n:
        raise RuntimeError(
            f"neuron backend: LOCAL_RANK={local_rank} but only {n} logical NeuronCore(s) "
            f"are visible to this process; launch at most {n} processes per node "
            f"(torchrun --nproc_per_node <= {n}) or make more cores visible "
            f"(NEURON_RT_VISIBLE_CORES / TORCH_NEURONX_EMULATED_INSTANCE)."
        )
    mod.set_device(local_rank)


def _create_neuron_backend(dist_opts, backend_options=None):
    """Creator registered with ``dist.Backend.register_backend`` (extended API)."""
    from torch.distributed import ProcessGroupGloo

    ranks = list(dist_opts.global_ranks_in_group)
    _maybe_bind_local_device(is_default_group=len(ranks) == 0)
    timeout = dist_opts.timeout
    backend = ProcessGroupGloo(
        dist_opts.store, dist_opts.group_rank, dist_opts.group_size, timeout=timeout
    )
    # The default group passes no ranks; gloo then assumes 0..size-1 only for the first
    # gloo instance of the process, and ``split`` indexes this list (an empty list crashes
    # it when another gloo backend came first, as in "cpu:gloo,neuron:neuron").
    backend.options.global_ranks_in_group = ranks or list(range(dist_opts.group_size))
    backend.options.group_name = dist_opts.group_id
    try:
        backend._set_sequence_number_for_group()
    except Exception:  # pragma: no cover - best effort (debug info only)
        pass
    return backend


# --------------------------------------------------------------------------------------
# the host shadow process group
# --------------------------------------------------------------------------------------
def _shadow_for(pg_boxed, device):
    return _entry_for(pg_boxed, device)[1]


def _entry_for(pg_boxed, device):
    """(neuron backend of the group, boxed host shadow group, shadow group)."""
    pg = dist.ProcessGroup.unbox(pg_boxed)
    try:
        backend = pg._get_backend(device)
    except RuntimeError as e:
        raise RuntimeError(
            f"{e} (neuron tensors need a process group with the neuron backend: "
            "init_process_group('neuron') or init_process_group('cpu:gloo,neuron:neuron') (or "
            "pass backend= to new_group), or move the tensors to CPU for a gloo-only group.)"
        ) from None
    per_pg = _shadows.get(pg)
    if per_pg is None:
        per_pg = {}
        _shadows[pg] = per_pg
    key = device.index
    entry = per_pg.get(key)
    if entry is not None and entry[0] is backend:
        return entry
    shadow = dist.ProcessGroup(dist.HashStore(), pg.rank(), pg.size())
    btype = dist.ProcessGroup.BackendType.CUSTOM
    shadow._set_default_backend(btype)
    shadow._register_backend(torch.device("cpu"), btype, backend)
    # no _set_group_name here: it would rename the backend shared with ``pg``
    boxed = shadow.boxed()
    # keep the backend's Python wrapper alive so the identity check above stays valid
    entry = per_pg[key] = (backend, boxed, shadow)
    return entry


# --------------------------------------------------------------------------------------
# PrivateUse1 kernels of the c10d dispatcher ops
# --------------------------------------------------------------------------------------
# op name -> (index of the ProcessGroup argument, returns "pair" (outputs, work) or "work")
_OPS = {
    "allreduce_": (1, "pair"),
    "allreduce_coalesced_": (1, "work"),
    "allgather_": (2, "pair"),
    "_allgather_base_": (2, "pair"),
    "allgather_coalesced_": (2, "work"),
    "allgather_into_tensor_coalesced_": (2, "work"),
    "reduce_scatter_": (2, "pair"),
    "_reduce_scatter_base_": (2, "pair"),
    "reduce_scatter_tensor_coalesced_": (2, "work"),
    "reduce_": (1, "work"),
    "broadcast_": (1, "pair"),
    "gather_": (2, "work"),
    "scatter_": (2, "pair"),
    "alltoall_": (2, "pair"),
    "alltoall_base_": (2, "work"),
    "barrier": (1, "work"),
    "send": (1, "work"),
    "recv_": (1, "work"),
    "recv_any_source_": (1, "work"),
    "monitored_barrier_": (1, "none"),
}

# ops carrying a ReduceOp: op name -> (index of the ReduceOp argument, index of the
# argument PREMUL_SUM scales, whether that argument is updated in place by the op)
_REDUCING = {
    "allreduce_": (2, 0, True),
    "allreduce_coalesced_": (2, 0, True),
    "reduce_": (2, 0, True),
    "reduce_scatter_": (3, 1, False),
    "_reduce_scatter_base_": (3, 1, False),
    "reduce_scatter_tensor_coalesced_": (3, 1, False),
}

_PREMUL_SUM = int(dist.ReduceOp.RedOpType.PREMUL_SUM)


def _sum_op():
    return torch.classes.c10d.ReduceOp()  # default-constructed ReduceOp is SUM


def _premul(x, factor, in_place):
    if isinstance(x, torch.Tensor):
        if in_place:
            return x.mul_(factor)
        return x * factor  # inputs must stay untouched: scaled staging copy
    return [_premul(i, factor, in_place) for i in x]


def _make_kernel(name, pg_index, ret):
    cpu_op = getattr(torch.ops.c10d, name).default
    reducing = _REDUCING.get(name)

    def kernel(*args):
        device = _first_neuron_device(args)
        _sync_device(device)  # device work producing the inputs must be done before gloo reads
        host_args = [_alias_tree(a) for a in args]
        host_args[pg_index] = _shadow_for(args[pg_index], device)
        if reducing is not None and reducing[0] < len(args):
            op_index, data_index, in_place = reducing
            if int(args[op_index].op()) == _PREMUL_SUM:
                factor = _premul_factor()
                if isinstance(factor, torch.Tensor):
                    factor = _alias_tree(factor)
                host_args[data_index] = _premul(host_args[data_index], factor, in_place)
                host_args[op_index] = _sum_op()
        result = cpu_op(*host_args)
        if ret == "none":
            return None
        # gloo's own Work: wait() raises gloo's errors (timeouts, dead peers); its future
        # yields the host aliases, i.e. the same memory as the neuron outputs.
        if ret == "pair":
            return args[0], result[1]
        return result

    kernel.__name__ = f"neuron_{name}"
    kernel.__qualname__ = kernel.__name__
    return kernel


# --------------------------------------------------------------------------------------
# PREMUL_SUM: the dispatcher hands kernels a TorchScript ReduceOp that exposes only the
# op type, not the scale factor.  The Python-facing ProcessGroup methods see the full
# ReduceOp, so they leave its factor in a thread-local for the kernel they dispatch to.
# --------------------------------------------------------------------------------------
_tls = threading.local()


def _premul_factor():
    factor = getattr(_tls, "premul_factor", None)
    if factor is None:
        raise RuntimeError(
            "neuron backend: ReduceOp.PREMUL_SUM reached the neuron kernel without its "
            "scale factor; issue it through torch.distributed (all_reduce, reduce, "
            "reduce_scatter, reduce_scatter_tensor) or ProcessGroup methods."
        )
    return factor


def _find_reduce_op(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, dist.ReduceOp):
            return a
        op = getattr(a, "reduceOp", None)
        if isinstance(op, dist.ReduceOp):
            return op
    return None


def _wrap_pg_method(name):
    orig = getattr(dist.ProcessGroup, name)
    if getattr(orig, "_neuron_premul_wrapper", False):
        return

    def method(self, *args, **kwargs):
        op = _find_reduce_op(args, kwargs)
        if op is None or op.op != dist.ReduceOp.RedOpType.PREMUL_SUM:
            return orig(self, *args, **kwargs)
        prev = getattr(_tls, "premul_factor", None)
        _tls.premul_factor = op.factor
        try:
            return orig(self, *args, **kwargs)
        finally:
            _tls.premul_factor = prev

    method._neuron_premul_wrapper = True
    method.__name__ = name
    method.__doc__ = orig.__doc__
    setattr(dist.ProcessGroup, name, method)


def _install_premul_hooks():
    for name in (
        "allreduce",
        "allreduce_coalesced",
        "reduce",
        "reduce_scatter",
        "_reduce_scatter_base",
        "reduce_scatter_tensor_coalesced",
        "reduce_scatter_single",
        "reduce_scatter_single_coalesced",
    ):
        if hasattr(dist.ProcessGroup, name):
            _wrap_pg_method(name)


# --------------------------------------------------------------------------------------
# Fast paths for the hot collectives: allreduce_, _allgather_base_, _reduce_scatter_base_
# and broadcast_ have C++ kernels in the driver (torch_neuronx/csrc/collectives.cpp): the
# dispatcher's Python-kernel path costs ~0.1 ms per call, ~10% of a 1 MiB all_reduce.
# They call the group's neuron gloo backend on the host aliases, like torch's CPU kernels,
# and read PREMUL_SUM's factor from the ReduceOp itself. TORCH_NEURONX_DIST_FAST_PATH=0
# keeps the Python kernels below for every op (debugging, or a driver built without them).
# --------------------------------------------------------------------------------------
_FAST = ("allreduce_", "_allgather_base_", "_reduce_scatter_base_", "broadcast_")
_slow = {}


def _cpp_kernels():
    """The driver's registration function, or None when it is unavailable/disabled."""
    if os.environ.get("TORCH_NEURONX_DIST_FAST_PATH", "1") == "0":
        return None
    try:
        from torch_neuronx import _C
    except Exception:  # core not built: Python kernels only
        return None
    return getattr(_C, "_register_c10d_kernels", None)


def _install_kernels(dispatch_key: str = "PrivateUse1"):
    import warnings

    lib = torch.library.Library("c10d", "IMPL")
    with warnings.catch_warnings():
        # torch's Ops.cpp registers a forwarding PrivateUse1 kernel that would hand
        # neuron tensors to gloo unchanged; ours replaces it (expected override).
        warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
        warnings.filterwarnings("ignore", message=".*Warning only once for all operators.*")
        register_cpp = _cpp_kernels() if dispatch_key == "PrivateUse1" else None
        for name, (pg_index, ret) in _OPS.items():
            _slow[name] = _make_kernel(name, pg_index, ret)
            if register_cpp is None or name not in _FAST:
                lib.impl(name, _slow[name], dispatch_key)
        if register_cpp is not None:
            register_cpp()
    return lib


def _install_gloo_options_deepcopy():
    """``dist.split_group`` deep-copies the parent backend's options; gloo's pybind
    ``_Options`` cannot be pickled, so give it a ``__deepcopy__`` (the gloo devices are
    shared, as the C++ split does)."""
    from torch.distributed import ProcessGroupGloo

    opts_cls = ProcessGroupGloo._Options
    if "__deepcopy__" in opts_cls.__dict__:
        return

    def __deepcopy__(self, memo):
        new = opts_cls()
        new._timeout = self._timeout
        new._threads = self._threads
        new._devices = list(self._devices)
        new.global_ranks_in_group = list(self.global_ranks_in_group)
        new.group_name = self.group_name
        return new

    opts_cls.__deepcopy__ = __deepcopy__


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
    from torch.distributed import ProcessGroupGloo

    others = [t for t in types if t != NEURON]
    for t in others:
        if not isinstance(self._get_backend(torch.device(t)), ProcessGroupGloo):
            raise RuntimeError(
                f"split_group: the {t!r} backend of this group is not gloo; only neuron groups "
                "whose other devices use gloo can be split. Use dist.new_group(ranks) instead.")
    new = orig(self, ranks, *args, device_types=[torch.device(NEURON)], **kwargs)
    if new is None:
        return None
    neuron_child = new._get_backend(torch.device(NEURON))
    name, desc = new.group_name, new.group_desc
    timeout = kwargs.get("timeout") or neuron_child.options._timeout
    for t in others:
        child = ProcessGroupGloo(dist.PrefixStore(f"{t}/", new.get_group_store()),
                                 new.rank(), new.size(), timeout=timeout)
        child.options.global_ranks_in_group = list(neuron_child.options.global_ranks_in_group)
        child.options.group_name = name
        child._set_sequence_number_for_group()
        new._register_backend(torch.device(t), dist.ProcessGroup.BackendType.GLOO, child)
    # the group reports its first backend's name/description: give the new ones the same
    new._set_group_name(name)
    new._set_group_desc(desc)
    return new


def _install_split_group_once():
    """Make ``dist.split_group`` work on groups carrying the neuron backend.

    torch 2.13's ``ProcessGroup::splitGroup`` splits per *device type*:
    * ``backend="neuron"``: one gloo backend serves ``cpu`` and ``neuron``; it gets split
      twice on the same store prefix and the two rendezvous race (hang). We split the
      shared backend once (device-type filter) and register the child for the group's
      other device type too, so CPU tensors keep working on it.
    * ``"cpu:gloo,neuron:neuron"``: the group never gets a default backend (see
      ``_ensure_default_backend``), and its two gloo backends would rendezvous on one store
      prefix: see ``_split_mixed``. (The crash torch 2.13 showed here was gloo's ``split``
      indexing an empty global-rank list; ``_create_neuron_backend`` now fills it.)
    """
    orig = dist.ProcessGroup.split_group
    if getattr(orig, "_neuron_split_once", False):
        return
    custom = dist.ProcessGroup.BackendType.CUSTOM

    def split_group(self, ranks, *args, device_types=None, **kwargs):
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
                        new._register_backend(torch.device(t), custom, child)
            return new
        return orig(self, ranks, *args, device_types=device_types, **kwargs)

    split_group._neuron_split_once = True
    split_group.__doc__ = orig.__doc__
    dist.ProcessGroup.split_group = split_group


# --------------------------------------------------------------------------------------
# registration
# --------------------------------------------------------------------------------------
def register() -> None:
    """Register the ``neuron`` c10d backend (idempotent; called at autoload)."""
    global _registered, _kernel_lib
    if _registered:
        return
    with _lock:
        if _registered or not dist.is_available():
            return
        # "cpu" in the capability list: plain backend="neuron" also carries CPU-tensor
        # traffic (object collectives, barriers, DCP metadata) over the same gloo
        # transport.  The default backend of "cpu" stays gloo.
        dist.Backend.register_backend(
            NEURON, _create_neuron_backend, extended_api=True, devices=["cpu", NEURON]
        )
        _kernel_lib = _install_kernels("PrivateUse1")
        _install_premul_hooks()
        _install_gloo_options_deepcopy()
        _install_split_group_once()
        _registered = True


def is_registered() -> bool:
    return _registered
