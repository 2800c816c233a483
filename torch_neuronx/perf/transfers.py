"""Host <-> device copies, device -> device copies and CPU-fallback ops.

- host -> device / device -> host: the host link's latency + bytes / host-link bandwidth
  (both assumptions in the hardware table: PCIe per chip; no figure is published);
- same device: an eager op that reads and writes HBM (launch + 2 x bytes / HBM bandwidth);
- another core of the same chip: one DMA hop (on-chip latency + bytes / DMA bandwidth);
- a CPU-fallback op: the inputs go to the host, the host kernel runs (its **measured** wall
  time on this machine, the one piece of real time in the model: the op really runs on a host
  CPU on Trainium too, though a different one), the outputs come back.
"""

from __future__ import annotations

from torch_neuronx.runtime.engines import Engine

from . import events as ev
from . import params as _params
from .target import Target

H2D, D2H, D2D, PEER = "host_to_device", "device_to_host", "device_to_device", "device_to_peer"


def _link_copy(direction: str, nbytes: float, lat: float, bw: float) -> ev.Cost:
    """A copy over a link: latency plus bytes at the link's bandwidth, on the DMA engine."""
    body = nbytes / bw
    return ev.Cost(
        kind=ev.COPY,
        name=direction,
        engine=Engine.dma,
        duration=lat + body,
        bytes=float(nbytes),
        memory_s=body,
        overhead_s=lat,
        bound="link" if body > lat else "launch",
        busy=((Engine.dma, body),),
        basis=(direction, float(nbytes)),
    )


def copy_cost(direction: str, nbytes: float, target: Target) -> ev.Cost:
    chip = target.core.chip
    if direction in (H2D, D2H):
        return _link_copy(
            direction, nbytes, float(chip.host_link_latency), float(chip.host_link_bw)
        )
    if direction == PEER:
        return _link_copy(direction, nbytes, float(chip.on_chip_latency), target.core.dma_bw)
    p = _params.current()
    body = 2 * nbytes / (target.core.hbm_bw * p.hbm_efficiency)
    return ev.Cost(
        kind=ev.COPY,
        name=direction,
        engine=Engine.dma,
        duration=p.eager_launch_s + body,
        bytes=2.0 * nbytes,
        memory_s=body,
        overhead_s=p.eager_launch_s,
        bound="memory" if body > p.eager_launch_s else "launch",
        busy=((Engine.dma, body),),
        basis=(direction, float(nbytes)),
    )


def fallback_cost(
    name: str, host_s: float, bytes_in: float, bytes_out: float, target: Target, shapes: str = ""
) -> ev.Cost:
    chip = target.core.chip
    lat, bw = float(chip.host_link_latency), float(chip.host_link_bw)
    link = (bytes_in + bytes_out) / bw + (2 * lat if (bytes_in or bytes_out) else 0.0)
    return ev.Cost(
        kind=ev.FALLBACK,
        name=name,
        engine=Engine.host,
        duration=host_s + link,
        bytes=float(bytes_in + bytes_out),
        memory_s=link,
        bound="host" if host_s >= link else "link",
        shapes=shapes,
        detail="CPU fallback: inputs to host, host kernel (measured), outputs back",
        busy=((Engine.host, host_s), (Engine.dma, link)),
        host_s=host_s,
        basis=(float(bytes_in), float(bytes_out)),
    )
