"""The hardware the model targets: the emulated instance profile of this process.

``TORCH_NEURONX_EMULATED_INSTANCE`` and ``NEURON_LOGICAL_NC_CONFIG`` (read by
``runtime/topology.py``) choose it; every neuron device of the process is one logical core of
that instance."""

from __future__ import annotations

import dataclasses
import functools

from torch_neuronx.runtime import hardware, topology


@dataclasses.dataclass(frozen=True)
class Target:
    instance: hardware.InstanceSpec
    core: hardware.LogicalCore

    @property
    def lnc(self) -> int:
        return self.core.lnc

    @property
    def cores_per_chip(self) -> int:
        return self.core.cores_per_chip

    @property
    def cores_per_instance(self) -> int:
        return int(float(self.instance.chips)) * self.cores_per_chip


def for_instance(name: str, lnc: int | None = None) -> Target:
    inst = hardware.instance(name)
    return Target(inst, hardware.logical_core(inst.generation, lnc))


@functools.lru_cache(maxsize=1)
def current() -> Target:
    topo = topology.current()
    return for_instance(topo.profile.name, topo.lnc)
