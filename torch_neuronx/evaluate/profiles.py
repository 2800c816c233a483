"""The instance profiles a report projects onto, and their prices.

A profile is a target (an instance and its LNC: one logical NeuronCore of that instance runs
one rank) plus a price. The target is the hardware table's own ``hardware.Target``
(``torch_neuronx.runtime.hardware``), the same type the emulated process runs on, so a
projection and the emulation cannot read different figures; prices may be overridden by the
caller."""

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
    """A target plus a price."""

    target: Target
    price_usd_per_hour: float | None
    price_source: str

    @property
    def instance_name(self) -> str:
        return self.target.instance.name

    @property
    def lnc(self) -> int:
        return self.target.lnc

    @property
    def key(self) -> str:
        return f"{self.instance_name}/lnc{self.lnc}"

    @property
    def price_verified(self) -> bool:
        """A price passed by the caller, or one the hardware table cites a public source for
        (not one it marks UNVERIFIED)."""
        if self.price_usd_per_hour is None:
            return False
        if self.price_source == "passed by the caller":
            return True
        src = hardware.instance(self.instance_name).price_usd_per_hour.source
        return bool(src) and "UNVERIFIED" not in src

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
        inst = hardware.instance(name)  # an unknown name is an error naming the valid ones
        allowed = sorted(inst.chip.lnc_allowed)
        for n in allowed if lnc is None else [x for x in allowed if x == lnc]:
            price = hardware.price_per_hour(name, prices.get(name))
            src = "passed by the caller" if name in prices else inst.price_usd_per_hour.note
            out.append(Profile(for_instance(name, n), price, src))
    if not out:
        raise ValueError(f"no profile: LNC {lnc} is not allowed on {', '.join(names)}")
    return out
