"""The engines of a NeuronCore: one vocabulary for every layer.

A NeuronCore has four compute engines and DMA queues (docs/sources.md: the NKI architecture
guide): TensorE, the 128x128 systolic array (matmul, convolution, attention); VectorE
(element-wise arithmetic, reductions, normalisation, pooling); ScalarE, the activation engine
(exp, tanh, gelu, ..., one input per element); GpSimdE, eight programmable SIMD processors
(gathers, scatters, indexing); the DMA engines (copies, layout changes, creation) and SyncE,
which triggers them. Collectives run on the CC-Cores; a CPU fallback runs on the host.

:class:`Engine` is that list, once: the op policy's engine of each op
(``eager/op_policy.py``), the performance model's engine of each cost (``perf/``: the
``engine`` of a ``Cost``, of a profiler event and of ``perf.measure()``'s rows),
``nki.isa.engine`` (NKI's own enum is this one) and the NKI cost model's engines. A member is
a ``str`` whose value is the short lowercase name NKI uses ("tensor", "vector", ...), so the
names in the performance model's JSON, in profiler events and in NKI reports are those
values; :attr:`Engine.display` is the hardware docs' name ("TensorE", ...) for text written for
people.
"""

from __future__ import annotations

import enum

__all__ = ["Engine", "CORE_ENGINES"]


class Engine(enum.StrEnum):
    """Where a piece of device work runs (see the module doc)."""

    # NeuronCore engines, as nki.isa.engine names them
    unknown = "unknown"  # NKI: "any engine that can" (the instruction's default)
    tensor = "tensor"  # TensorE
    scalar = "scalar"  # ScalarE (the activation engine, "ACT")
    gpsimd = "gpsimd"  # GpSimdE ("POOL")
    dma = "dma"  # the DMA engines
    vector = "vector"  # VectorE
    sync = "sync"  # SyncE: triggers DMA queues
    # beyond a NeuronCore's compute engines
    collective = "collective"  # CC-Cores: collective communication
    host = "host"  # the host CPU: CPU fallbacks
    launch = "launch"  # the runtime's launch of a compiled graph (no engine busy)

    @property
    def display(self) -> str:
        """The hardware docs' name: "TensorE", "VectorE", "ScalarE", "GpSimdE", "DMA", ..."""
        return _DISPLAY[self]

    @classmethod
    def parse(cls, label: str | Engine | None) -> Engine | None:
        """The engine a label names: a member, its value ("tensor") or its display name
        ("TensorE"), in any case; None for None, "" and ``unknown``. Anything else raises
        ValueError (no prefix matching: a label is one of the names above)."""
        if label is None or label == "":
            return None
        if isinstance(label, cls):
            e = label
        else:
            e = _BY_LABEL.get(str(label).lower())
            if e is None:
                names = ", ".join(f"{m.value} ({m.display})" for m in cls)
                raise ValueError(f"unknown engine {label!r}: one of {names}")
        return None if e is cls.unknown else e


_DISPLAY = {
    Engine.unknown: "unknown",
    Engine.tensor: "TensorE",
    Engine.scalar: "ScalarE",
    Engine.gpsimd: "GpSimdE",
    Engine.dma: "DMA",
    Engine.vector: "VectorE",
    Engine.sync: "SyncE",
    Engine.collective: "CC-Core",
    Engine.host: "CPU",
    Engine.launch: "launch",
}
_BY_LABEL = {**{e.value: e for e in Engine}, **{d.lower(): e for e, d in _DISPLAY.items()}}

#: the engines of a NeuronCore that run instructions (what an NKI kernel may name)
CORE_ENGINES = frozenset(
    {Engine.tensor, Engine.vector, Engine.scalar, Engine.gpsimd, Engine.dma, Engine.sync}
)
