"""The emulated instance of this process and the environment variables that shape it.

A `neuron:N` device is one logical NeuronCore. The emulated instances are those of the
hardware table (runtime/hardware.py, every figure with its public source): a Trn2 chip has 8
physical NeuronCore-v3 and 96 GiB of HBM; a Trn3 chip 8 NeuronCore-v4 and 144 GiB. LNC=2 (the
default) groups two physical cores into one logical core, which then owns the HBM of both.

``current().target`` (a :class:`hardware.Target`: the table's instance and one logical core of
it) is the one hardware description of the process: the allocator's capacity comes from it,
and the performance model and the NKI simulator read the same object.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from torch_neuronx.runtime import env, hardware

GiB = 1 << 30

# The emulated instances are the table's entries with ``emulated=True`` (Trn2 and Trn3; for Trn3
# the Linux driver names 3xlarge and 48xlarge variants, whose customer availability is
# unconfirmed, so both are offered for planning). Trn1 is in the table for the performance
# model only: TorchNeuron supports Trn2 and Trn3.
DEFAULT_INSTANCE = "trn2.3xlarge"


def emulated_instance_names() -> list[str]:
    """The accepted values of TORCH_NEURONX_EMULATED_INSTANCE, read from the table each time
    (so a table entry added at run time is one too)."""
    return sorted(i.name for i in hardware.emulated_instances())


@dataclasses.dataclass(frozen=True)
class InstanceProfile:
    """The emulated instance as the runtime reports it: a view of the hardware table's entry
    (nothing copied, so it cannot disagree with the performance model or the NKI simulator)."""

    spec: hardware.InstanceSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def generation(self) -> str:  # "trn2" / "trn3", as everywhere else
        return self.spec.generation

    @property
    def core_name(self) -> str:  # "NeuronCore-v3" (Trn2) / "NeuronCore-v4" (Trn3)
        return self.spec.chip.core.name

    @property
    def chips(self) -> int:
        return int(float(self.spec.chips))

    @property
    def physical_cores_per_chip(self) -> int:
        return self.spec.chip.physical_cores

    @property
    def hbm_per_chip(self) -> int:  # bytes
        return int(float(self.spec.chip.hbm_capacity))

    @property
    def default_lnc(self) -> int:
        return int(float(self.spec.chip.default_lnc))


@dataclasses.dataclass(frozen=True)
class Topology:
    target: hardware.Target  # the instance and one logical core of it: what every layer models
    visible_cores: tuple[int, ...]  # logical core ids, in device-index order
    hbm_per_core: int  # the allocator's capacity: the core's HBM unless TORCH_NEURONX_HBM_PER_CORE

    @property
    def instance(self) -> hardware.InstanceSpec:
        return self.target.instance

    @property
    def core(self) -> hardware.LogicalCore:
        return self.target.core

    @property
    def lnc(self) -> int:
        return self.target.lnc

    @functools.cached_property
    def profile(self) -> InstanceProfile:
        return InstanceProfile(self.target.instance)

    @property
    def device_count(self) -> int:
        return len(self.visible_cores)

    @property
    def logical_cores_total(self) -> int:
        return self.target.cores_per_instance


SIZE_ACCEPTED = "a size in bytes, optionally with a unit: 512MiB, 2GiB, 1.5G or 1073741824"


def parse_size(text: str) -> int:
    """TORCH_NEURONX_HBM_PER_CORE: a positive byte count (K/M/G/T are powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B?)?\s*", text, re.IGNORECASE)
    if not m:
        raise env.invalid("TORCH_NEURONX_HBM_PER_CORE", text, "is not a size", SIZE_ACCEPTED)
    value = float(m.group(1))
    unit = (m.group(2) or "").upper().rstrip("B").rstrip("I")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]
    size = int(value * scale)
    if size < 1:  # a device with no memory fails every allocation, far from the cause
        raise env.invalid("TORCH_NEURONX_HBM_PER_CORE", text, "is not positive", SIZE_ACCEPTED)
    return size


def parse_core_list(text: str, total: int) -> tuple[int, ...]:
    """NEURON_RT_VISIBLE_CORES: logical core ids and inclusive ranges, comma-separated."""
    accepted = (
        f"logical core ids 0..{total - 1} and ranges of them, comma-separated, each core once "
        "(e.g. 0-3 or 1,3)"
    )

    def bad(problem: str) -> env.EnvError:
        return env.invalid("NEURON_RT_VISIBLE_CORES", text, problem, accepted)

    def core(part: str) -> int:
        if not re.fullmatch(r"\d+", part.strip()):
            raise bad(f"has {part.strip()!r} where a core id belongs")
        return int(part)

    cores: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = (core(x) for x in part.split("-", 1))
            if hi < lo:
                raise bad(f"has the empty range {part!r}")
            cores.extend(range(lo, hi + 1))
        else:
            cores.append(core(part))
    if not cores:
        raise bad("names no core")
    for c in cores:
        if not 0 <= c < total:
            raise bad(f"names core {c}, which this instance ({total} logical cores) lacks")
    if len(set(cores)) != len(cores):
        raise bad("lists a core twice")
    return tuple(cores)


def from_environment(environ=None) -> Topology:
    """The topology ``environ`` (default: os.environ) asks for."""
    name = env.choice(
        "TORCH_NEURONX_EMULATED_INSTANCE",
        emulated_instance_names(),
        DEFAULT_INSTANCE,
        environ=environ,
    )
    spec = hardware.instance(name)
    chip = spec.chip
    lnc_text = env.choice(
        "NEURON_LOGICAL_NC_CONFIG",
        tuple(str(n) for n in chip.lnc_allowed),
        str(int(float(chip.default_lnc))),
        environ=environ,
    )
    target = hardware.Target(spec, hardware.logical_core(spec.generation, int(lnc_text)))
    total = target.cores_per_instance
    visible = tuple(range(total))
    visible_text = env.text("NEURON_RT_VISIBLE_CORES", environ=environ)
    if visible_text is not None:
        visible = parse_core_list(visible_text, total)
    n = env.integer("NEURON_RT_NUM_CORES", None, minimum=1, environ=environ)
    if n is not None:
        if n > len(visible):
            raise env.invalid(
                "NEURON_RT_NUM_CORES",
                str(n),
                "is more cores than are visible",
                f"1..{len(visible)} (the visible cores)",
            )
        visible = visible[:n]
    hbm = target.core.hbm_capacity
    hbm_text = env.text("TORCH_NEURONX_HBM_PER_CORE", environ=environ)
    if hbm_text is not None:
        hbm = parse_size(hbm_text)
    return Topology(target, visible, hbm)


_current: Topology | None = None


def current() -> Topology:
    global _current
    if _current is None:
        _current = from_environment()
    return _current
