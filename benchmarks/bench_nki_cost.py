"""The NKI cost model against published kernel profiles: AWS's "Fused Mamba" NKI tutorial
(measured with neuron-profile on a NeuronCore-v2, Trn1), re-run here on the modeled schedule
of a NeuronCore-v2 (the trn1 profile of runtime/hardware.py).

    python benchmarks/bench_nki_cost.py            # the calibration point and the quick checks
    python benchmarks/bench_nki_cost.py --full     # every published point (minutes)

Published figures (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/tutorials/fused_mamba.html;
source aws-neuron/aws-neuron-sdk nki/guides/tutorials/fused_mamba.rst), batch 1, 16 states:

- calibration: ``mamba_v2``, 4096 channels, seq 512: 1.61 ms, VectorE active 99.63% (the
  one point that is Vector-Engine-bound throughout: it fits the two-input fp32 VectorE rule,
  ``nki.cost.VECTOR_FP32_BINARY_CALIBRATION``);
- validation: ``mamba_v1``, 256 channels, seq 512: 172.93 us (VectorE 98.71% of the
  execution period, which excludes the NEFF's start-up); ``mamba_v1``, 4096 channels, seq
  512: 2.34 ms (VectorE 92.16%: DMA reloads); ``mamba_v3``, 4096 channels, seq 1024..8192
  (the scaling table; no spilling).

``mamba_v2`` at seq 1024..8192 is left out: its measured times include SBUF spills and
reloads (the tutorial's profile shows them), which the model does not model.

Everything here is **modeled** time; the printed error is modeled / published - 1.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "nki")
)

import mamba_tutorial as mk  # noqa: E402

from torch_neuronx.runtime.engines import Engine  # noqa: E402

US, MS = 1e-6, 1e-3
# (split, kernel, channels, seq, published seconds, published VectorE active fraction or None)
PUBLISHED = [
    ("calibration", "mamba_v2", 4096, 512, 1.61 * MS, 0.9963),
    ("validation", "mamba_v1", 256, 512, 172.93 * US, 0.9871),
    ("validation", "mamba_v1", 4096, 512, 2.34 * MS, 0.9216),
    ("validation", "mamba_v3", 4096, 1024, 3.3 * MS, None),
    ("validation", "mamba_v3", 4096, 2048, 6.6 * MS, None),
    ("validation", "mamba_v3", 4096, 3072, 10.1 * MS, None),
    ("validation", "mamba_v3", 4096, 4096, 13.3 * MS, None),
    ("validation", "mamba_v3", 4096, 5120, 17.3 * MS, None),
    ("validation", "mamba_v3", 4096, 6144, 19.6 * MS, None),
    ("validation", "mamba_v3", 4096, 7168, 24.2 * MS, None),
    ("validation", "mamba_v3", 4096, 8192, 27.8 * MS, None),
]
QUICK = {("mamba_v1", 256, 512), ("mamba_v2", 4096, 512), ("mamba_v3", 4096, 1024)}


def fitted_calibration(current: float, published_busy: float, modeled_busy: float) -> float:
    """The two-input fp32 VectorE factor that makes the calibration point's modeled VectorE
    busy time equal its published one (busy time is linear in the factor: every VectorE
    instruction of the Mamba kernels is a two-input fp32 one)."""
    return current * published_busy / modeled_busy


def modeled(kernel: str, channels: int, seq: int):
    """(modeled seconds, VectorE busy fraction, report) of one tutorial kernel on a v2 core."""
    r = mk.modeled_on_neuroncore_v2(kernel, channels, seq)
    vec = r.modeled_busy.get(Engine.vector, 0.0)
    return r.modeled_seconds, vec / r.modeled_seconds, r


def rows(full: bool):
    out = []
    for split, kernel, ch, seq, pub_s, pub_vec in PUBLISHED:
        if not full and (kernel, ch, seq) not in QUICK:
            continue
        s, vec, _ = modeled(kernel, ch, seq)
        out.append((split, kernel, ch, seq, pub_s, s, pub_vec, vec))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="every published point (minutes)")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    print(
        f"{'split':<12}{'kernel':<10}{'chan':>6}{'seq':>6}{'published':>12}{'modeled':>12}"
        f"{'error':>8}{'VecE pub':>10}{'VecE mod':>10}"
    )
    from torch_neuronx.nki import cost

    for split, kernel, ch, seq, pub_s, s, pub_vec, vec in rows(a.full):
        pv = f"{pub_vec:.1%}" if pub_vec is not None else "-"
        print(
            f"{split:<12}{kernel:<10}{ch:>6}{seq:>6}{pub_s * 1e6:>10.1f}us{s * 1e6:>10.1f}us"
            f"{s / pub_s - 1:>+8.1%}{pv:>10}{vec:>10.1%}"
        )
        if split == "calibration":
            k = fitted_calibration(cost.VECTOR_FP32_BINARY_CALIBRATION, pub_s * pub_vec, s * vec)
            print(
                f"  fit: VECTOR_FP32_BINARY_CALIBRATION = {k:.3f} "
                f"(now {cost.VECTOR_FP32_BINARY_CALIBRATION})"
            )


if __name__ == "__main__":
    main()
