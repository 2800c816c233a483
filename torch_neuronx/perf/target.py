"""The hardware the model targets: the emulated instance of this process.

``TORCH_NEURONX_EMULATED_INSTANCE`` and ``NEURON_LOGICAL_NC_CONFIG`` (read by
``runtime/topology.py``) choose it; every neuron device of the process is one logical core of
that instance. A target is ``runtime.hardware.Target`` (an instance of the hardware table and
one logical core of it): :func:`current` is the very object the topology built, so the
performance model, the allocator and the NKI simulator cannot describe different chips."""

from __future__ import annotations

from torch_neuronx.runtime import hardware, topology

Target = hardware.Target


def for_instance(name: str, lnc: int | None = None) -> Target:
    """Instance ``name`` at ``lnc`` (default: its chip's default); an unknown name is an error
    naming the valid ones."""
    return hardware.target(name, lnc)


def current() -> Target:
    return topology.current().target
