"""Neuron SDK releases of the published training runs, and the one term the model has for them.

The compiler and runtime improved between releases: with one TensorE efficiency, every Trn1
training row published for SDK <= 2.15 was modeled 1.2-2.3x too fast and every SDK 2.24/2.28 row
0.87-1.26 (docs/perf-model.md, "Training by software release"). A roofline over the graph's
shapes cannot see a compiler's schedule, so the rows are grouped by release **era** and each
older era gets one constant, its **release efficiency**: the training step's device compute (the
layers' kernels, the LM head, the optimizer update; never the collectives, which the nccom-test
fit measures) is divided by it. The newest era is the model itself (efficiency 1.0): every
projection (``evaluate``, ``measure()``, ``torch-neuronx cost``) is for it and says so
(``LABEL``).

The split of the training rows (``workload_data``: in each era every other row calibration) and
the fit (``workload_fit.fit_release_efficiency``: on that era's calibration rows only) were
fixed before fitting (docs/decisions.md, "Training rows by software release").
"""

from __future__ import annotations

import contextlib

#: the newest era: what every projection models
NEWEST = "2.2x"

#: said with every projected training time (``ranges.SCOPE``)
LABEL = "modeled for Neuron SDK 2.2x (training rows of SDK 2.24-2.28; SDK <= 2.15 ran slower)"

#: {era: release efficiency}. 2.2x: 1.0 by definition (the model's own constants are fitted on
#: its rows). 2.1x: FITTED on the 2.1x training calibration rows (Llama-2-7B with NxD and NeMo
#: Megatron Llama-2-13B, SDK 2.15; ``python -m torch_neuronx.perf.workload_fit``).
EFFICIENCY: dict = {"2.1x": 0.71, NEWEST: 1.0}


def era(sdk: str) -> str:
    """The era of Neuron SDK release ``sdk`` ("2.15" -> "2.1x", "2.24" -> "2.2x")."""
    major, minor = (int(x) for x in sdk.split(".")[:2])
    if major != 2 or 16 <= minor <= 19:
        raise ValueError(
            f"Neuron SDK {sdk}: no published training row of this release, so it has no era; "
            "the eras are SDK 2.13-2.15 (2.1x) and 2.20 and later (2.2x)"
        )
    return "2.1x" if minor <= 15 else NEWEST


def efficiency(sdk: str) -> float:
    """The release efficiency of a published run of release ``sdk`` ("": the newest era)."""
    return EFFICIENCY[era(sdk)] if sdk else EFFICIENCY[NEWEST]


@contextlib.contextmanager
def override(name: str, value: float):
    """Temporarily set era ``name``'s release efficiency (the fit only)."""
    old = EFFICIENCY[name]
    EFFICIENCY[name] = value
    try:
        yield
    finally:
        EFFICIENCY[name] = old
