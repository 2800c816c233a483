"""Emulated instance profiles and the environment variables that shape them.

A `neuron:N` device is one logical NeuronCore. The profiles are the emulated instances of the
hardware table (runtime/hardware.py, every figure with its public source): a Trn2 chip has 8
physical NeuronCore-v3 and 96 GiB of HBM; a Trn3 chip 8 NeuronCore-v4 and 144 GiB. LNC=2 (the
default) groups two physical cores into one logical core, which then owns the HBM of both.
"""

from __future__ import annotations

import dataclasses
import re

from torch_neuronx.runtime import env, hardware

GiB = 1 << 30


@dataclasses.dataclass(frozen=True)
class InstanceProfile:
    name: str
    chips: int
    physical_cores_per_chip: int
    hbm_per_chip: int  # bytes
    core_generation: str  # NeuronCore-v3 (Trn2) / NeuronCore-v4 (Trn3)
    default_lnc: int = 2


def _profile(spec: hardware.InstanceSpec) -> InstanceProfile:
    chip = spec.chip
    return InstanceProfile(
        spec.name,
        int(spec.chips.value),
        chip.physical_cores,
        int(chip.hbm_capacity.value),
        chip.core.name,
        int(chip.default_lnc.value),
    )


# The emulated instances of the hardware table (Trn2 and Trn3; for Trn3 the Linux driver names
# 3xlarge and 48xlarge variants, whose customer availability is unconfirmed, so both are
# offered for planning). Trn1 is in the table for the performance model only: TorchNeuron
# supports Trn2 and Trn3.
PROFILES = {spec.name: _profile(spec) for spec in hardware.emulated_instances()}
DEFAULT_PROFILE = "trn2.3xlarge"


@dataclasses.dataclass(frozen=True)
class Topology:
    profile: InstanceProfile
    lnc: int
    visible_cores: tuple[int, ...]  # logical core ids, in device-index order
    hbm_per_core: int

    @property
    def device_count(self) -> int:
        return len(self.visible_cores)

    @property
    def logical_cores_total(self) -> int:
        return self.profile.chips * self.profile.physical_cores_per_chip // self.lnc


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B?)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(
            f"TORCH_NEURONX_HBM_PER_CORE={text!r}: expected a size like 512MiB, 2GiB or 1073741824"
        )
    value = float(m.group(1))
    unit = (m.group(2) or "").upper().rstrip("B").rstrip("I")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]
    return int(value * scale)


def parse_core_list(text: str, total: int) -> tuple[int, ...]:
    cores: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = (int(x) for x in part.split("-", 1))
            if hi < lo:
                raise ValueError(f"NEURON_RT_VISIBLE_CORES: bad range {part!r}")
            cores.extend(range(lo, hi + 1))
        else:
            cores.append(int(part))
    for c in cores:
        if not 0 <= c < total:
            raise ValueError(
                f"NEURON_RT_VISIBLE_CORES={text!r}: core {c} does not exist; this instance has "
                f"{total} logical NeuronCores (0..{total - 1})"
            )
    if len(set(cores)) != len(cores):
        raise ValueError(f"NEURON_RT_VISIBLE_CORES={text!r}: a core is listed twice")
    return tuple(cores)


def from_environment(environ=None) -> Topology:
    """The topology ``environ`` (default: os.environ) asks for."""
    name = env.choice(
        "TORCH_NEURONX_EMULATED_INSTANCE", sorted(PROFILES), DEFAULT_PROFILE, environ=environ
    )
    profile = PROFILES[name]
    lnc_text = env.choice(
        "NEURON_LOGICAL_NC_CONFIG", ("1", "2"), str(profile.default_lnc), environ=environ
    )
    lnc = int(lnc_text)
    total = profile.chips * profile.physical_cores_per_chip // lnc
    visible = tuple(range(total))
    visible_text = env.text("NEURON_RT_VISIBLE_CORES", environ=environ)
    if visible_text is not None:
        visible = parse_core_list(visible_text, total)
    n = env.integer("NEURON_RT_NUM_CORES", None, environ=environ)
    if n is not None:
        if not 0 < n <= len(visible):
            raise ValueError(
                f"NEURON_RT_NUM_CORES={n}: between 1 and the {len(visible)} visible cores"
            )
        visible = visible[:n]
    hbm = profile.hbm_per_chip * lnc // profile.physical_cores_per_chip
    hbm_text = env.text("TORCH_NEURONX_HBM_PER_CORE", environ=environ)
    if hbm_text is not None:
        hbm = parse_size(hbm_text)
    return Topology(profile, lnc, visible, hbm)


_current: Topology | None = None


def current() -> Topology:
    global _current
    if _current is None:
        _current = from_environment()
    return _current
