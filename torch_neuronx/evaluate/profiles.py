"""The instance profiles a report projects onto, and their prices.

A profile is (instance, LNC): one logical NeuronCore of that instance runs one rank. The
figures (peak FLOP/s, HBM capacity and bandwidth, prices) come from the hardware table
(``torch_neuronx.runtime.hardware``); prices may be overridden by the caller."""

from __future__ import annotations

import dataclasses
import math

from torch_neuronx.perf.target import Target, for_instance
from torch_neuronx.runtime import hardware

#: profiles of the report when none are named: Trn2 (one chip and a full instance) and Trn3,
#: each at the LNC values its chip allows
DEFAULT_INSTANCES = ("trn2.3xlarge", "trn2.48xlarge", "trn3.3xlarge")


@dataclasses.dataclass(frozen=True)
class Profile:
    instance: str
    lnc: int
    target: Target
    price_usd_per_hour: float | None
    price_source: str

    @property
    def key(self) -> str:
        return f"{self.instance}/lnc{self.lnc}"

    @property
    def cores(self) -> int:
        return self.target.cores_per_instance

    @property
    def hbm_per_core(self) -> int:
        return self.target.core.hbm_capacity


def parse_prices(text: str | None) -> dict:
    """'trn2.3xlarge=2.5,trn3.3xlarge=4' -> {name: USD/h}; a clear error for a bad entry."""
    out: dict = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        valid = ", ".join(hardware.INSTANCES)
        if not sep:
            raise ValueError(
                f"malformed price {part!r}: expected INSTANCE=USD_PER_HOUR, e.g. trn2.3xlarge=2.24; "
                f"instances: {valid}"
            )
        hardware_name = name.strip()
        if hardware_name not in hardware.INSTANCES:
            raise ValueError(
                f"unknown instance {hardware_name!r} in price {part!r}; valid: {valid}"
            )
        try:
            usd = float(value)
        except ValueError:
            raise ValueError(
                f"malformed price {part!r}: {value!r} is not a number of USD per hour"
            ) from None
        if not math.isfinite(usd) or usd < 0:
            raise ValueError(
                f"malformed price {part!r}: must be a finite, non-negative USD per hour"
            )
        out[hardware_name] = usd
    return out


def profiles(instances=None, lnc=None, prices=None) -> list:
    """One :class:`Profile` per (instance, allowed LNC). ``lnc``: keep only that LNC."""
    prices = prices or {}
    names = list(instances or DEFAULT_INSTANCES)
    out = []
    for name in names:
        if name not in hardware.INSTANCES:
            raise ValueError(f"unknown instance {name!r}; valid: {', '.join(hardware.INSTANCES)}")
        inst = hardware.instance(name)
        allowed = sorted(hardware.CHIPS[inst.generation].lnc_allowed)
        for n in allowed if lnc is None else [x for x in allowed if x == lnc]:
            price = hardware.price_per_hour(name, prices.get(name))
            src = "passed by the caller" if name in prices else inst.price_usd_per_hour.note
            out.append(Profile(name, n, for_instance(name, n), price, src))
    if not out:
        raise ValueError(f"no profile: LNC {lnc} is not allowed on {', '.join(names)}")
    return out
