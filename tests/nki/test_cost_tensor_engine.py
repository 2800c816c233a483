"""The Tensor Engine cost rules, pinned to the statements they come from (AWS publishes no
measured NKI matmul latency to check them against; docs/nki.md, "Cost rules against published
profiles"): the Trainium/Inferentia2 architecture guide's initiation interval
``max(N, MM_INIT_LATENCY)`` for back-to-back MultiplyMoving with BF16 inputs, "roughly 4x" for
FP32, and the Trainium2 guide's double-FP8 mode ("the same amount of time" as BF16 for twice
the contraction)."""

import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki import target

REPS = 8


def _matmuls(dtype, n, double=False):
    """REPS back-to-back matmuls reusing one stationary tile: the guide's ideal sequence."""

    @nki.jit
    def k(x):
        k_rows = 128
        shape_s = (k_rows, 2, 128) if double else (k_rows, 128)
        shape_m = (k_rows, 2, n) if double else (k_rows, n)
        s = nl.ndarray(shape_s, dtype=dtype, buffer=nl.sbuf)
        m = nl.ndarray(shape_m, dtype=dtype, buffer=nl.sbuf)
        nisa.memset(dst=s, value=0.0)
        nisa.memset(dst=m, value=0.0)
        mode = nisa.matmul_perf_mode.double_row if double else nisa.matmul_perf_mode.none
        for _ in range(REPS):
            p = nl.ndarray((128, n), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=p, stationary=s, moving=m, perf_mode=mode)
        return x

    k(torch.zeros(1, 1, device="neuron"))
    r = k.last_report
    return r.modeled_busy["tensor"] / REPS, r.tensor_flops / REPS


def _cycle_s():
    return 1.0 / float(target.current().core.core.tensor_clock)


@pytest.mark.parametrize("n", [512, 128, 64])
def test_bf16_matmul_takes_n_cycles(n):
    per, flops = _matmuls(nl.bfloat16, n)
    assert per == pytest.approx(n * _cycle_s(), rel=1e-9)
    assert flops == 2 * 128 * 128 * n


def test_short_matmuls_cost_the_initiation_minimum():
    per, _ = _matmuls(nl.bfloat16, 16)
    assert per == pytest.approx(64 * _cycle_s(), rel=1e-9)  # MM_INIT_LATENCY: 64 cycles


def test_fp32_matmul_costs_four_times_bf16():
    bf16, _ = _matmuls(nl.bfloat16, 512)
    fp32, _ = _matmuls(nl.float32, 512)
    assert fp32 == pytest.approx(4 * bf16, rel=1e-9)


def test_fp8_double_row_is_bf16_time_for_twice_the_flops():
    bf16, bf16_flops = _matmuls(nl.bfloat16, 512)
    fp8, fp8_flops = _matmuls(nl.float8_e4m3fn, 512, double=True)
    assert fp8 == pytest.approx(bf16, rel=1e-9)
    assert fp8_flops == 2 * bf16_flops  # the doubled throughput is in the work per instruction
