"""The roofline (issue 10, points 2 and 8): matmuls approach the TensorE peak, element-wise ops
approach HBM bandwidth, tiny ops are launch-bound. Every figure asserted here is computed from
the hardware table, never a wall time."""

import math

import pytest
import torch

from torch_neuronx.perf import estimate, params, roofline, target
from torch_neuronx.runtime import hardware

GENERATIONS = ["trn1.32xlarge", "trn2.48xlarge", "trn3.48xlarge"]


def _cost(op, shapes, dtype, instance, **kw):
    return estimate.estimate_op(op, shapes, dtype, target.for_instance(instance), **kw)


@pytest.mark.parametrize("instance", GENERATIONS)
@pytest.mark.parametrize(
    "dtype,cls", [(torch.bfloat16, "bf16"), (torch.float16, "bf16"), (torch.float32, "fp32")]
)
def test_large_matmul_approaches_the_tensor_engine_peak(instance, dtype, cls):
    n = 8192
    c = _cost("mm", [(n, n), (n, n)], dtype, instance)
    core = target.for_instance(instance).core
    peak = core.tensor_peak(cls)
    achieved = c.flops / c.duration
    assert c.flops == 2 * n**3
    assert c.bound == "compute"
    # the fitted TensorE efficiency (params.tensor_efficiency, perf/workload_fit.py) times the
    # tile rule's ideal
    eff = params.current().tensor_efficiency
    assert 0.97 * peak * eff <= achieved <= peak * eff


def test_fp8_matmul_runs_at_the_fp8_rate_on_trn2():
    n = 8192
    c = _cost("mm", [(n, n), (n, n)], torch.float8_e4m3fn, "trn2.48xlarge")
    assert c.flops / c.duration == pytest.approx(
        2 * 158e12 * params.current().tensor_efficiency, rel=0.03
    )  # LNC=2 logical core


def test_tile_rule_charges_partial_tiles():
    # full tiles: exactly efficient; K = 64 uses half of the 128 partitions [NKI1]
    assert roofline.tile_efficiency(((1, 128, 128, 512),)) == 1.0
    assert roofline.tile_efficiency(((1, 1024, 64, 1024),)) == pytest.approx(0.5)
    # a moving tile narrower than MM_INIT_LATENCY (64 cycles) still costs 64 cycles
    assert roofline.tile_efficiency(((1, 128, 128, 32),)) == pytest.approx(0.5)
    # the compiler may swap operands: M = 32 (tiny) can be the moving side
    assert roofline.tile_efficiency(((1, 4096, 4096, 32),)) == roofline.tile_efficiency(
        ((1, 32, 4096, 4096),)
    )


@pytest.mark.parametrize("instance", GENERATIONS)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_large_elementwise_ops_approach_hbm_bandwidth(instance, op):
    n = 64 << 20
    c = _cost(op, [(n,), (n,)], torch.bfloat16, instance)
    core = target.for_instance(instance).core
    assert c.bytes == 3 * 2 * n  # two inputs read, one output written
    assert c.bound == "memory"
    assert 0.97 * core.hbm_bw <= c.bytes / c.duration <= core.hbm_bw


@pytest.mark.parametrize("instance", GENERATIONS)
@pytest.mark.parametrize(
    "op,shapes", [("add", [(8,), (8,)]), ("mm", [(4, 4), (4, 4)]), ("relu", [(16,)])]
)
def test_tiny_ops_are_launch_bound(instance, op, shapes):
    c = _cost(op, shapes, torch.float32, instance)
    p = params.current()
    assert c.bound == "launch"
    assert p.eager_launch_s <= c.duration < 1.5 * p.eager_launch_s
    # inside a compiled graph the same op costs a kernel overhead, not an eager launch
    k = _cost(op, shapes, torch.float32, instance, in_graph=True)
    assert k.duration < c.duration and k.overhead_s == p.kernel_overhead_s


def test_eager_matmul_pays_tensor_engine_warmup():
    # 50% of peak ramping to 100% over 3 us [THR]: a long matmul loses 0.75 us
    assert roofline.warmup_extra(1e-3) == pytest.approx(0.75e-6)
    # a very short one runs near half speed: twice as long
    assert roofline.warmup_extra(1e-9) == pytest.approx(1e-9, rel=1e-3)
    with params.override(tensor_warmup=False):
        off = _cost("mm", [(512, 512), (512, 512)], torch.bfloat16, "trn2.48xlarge")
    on = _cost("mm", [(512, 512), (512, 512)], torch.bfloat16, "trn2.48xlarge")
    assert on.duration > off.duration


def test_attention_and_convolution_use_pytorch_flop_rules():
    from torch.utils.flop_counter import conv_flop_count, sdpa_flop_count

    q = (2, 8, 1024, 64)
    c = _cost("sdpa", [q, q, q], torch.bfloat16, "trn2.48xlarge")
    assert c.flops == sdpa_flop_count(q, q, q) and c.engine == "tensor"
    x, w = (8, 64, 56, 56), (128, 64, 3, 3)
    c = _cost("conv2d", [x, w], torch.bfloat16, "trn2.48xlarge")
    assert c.flops == conv_flop_count(x, w, (8, 128, 56, 56))


def test_fp32_matmul_is_four_times_slower_than_bf16():
    # --auto-cast none is the compiler default since Neuron 2.27: FP32 runs at the FP32 rate
    a = _cost("mm", [(8192, 8192)] * 2, torch.float32, "trn2.48xlarge")
    b = _cost("mm", [(8192, 8192)] * 2, torch.bfloat16, "trn2.48xlarge")
    assert a.duration / b.duration == pytest.approx(79 / 20, rel=0.02)


def test_params_override_is_scoped():
    base = _cost("add", [(8,), (8,)], torch.float32, "trn2.48xlarge").duration
    with params.override(eager_launch_s=1e-3):
        assert _cost("add", [(8,), (8,)], torch.float32, "trn2.48xlarge").duration == pytest.approx(
            1e-3, rel=1e-3
        )
    assert _cost("add", [(8,), (8,)], torch.float32, "trn2.48xlarge").duration == base


def test_generations_differ_as_their_figures_say():
    # element-wise HBM-bound work scales with HBM bandwidth per logical core
    big = [(64 << 20,), (64 << 20,)]
    t2 = _cost("add", big, torch.bfloat16, "trn2.48xlarge")
    t3 = _cost("add", big, torch.bfloat16, "trn3.48xlarge")
    c2, c3 = target.for_instance("trn2.48xlarge").core, target.for_instance("trn3.48xlarge").core
    assert math.isclose(t2.memory_s / t3.memory_s, c3.hbm_bw / c2.hbm_bw, rel_tol=1e-9)
    # Trn3's DMA ceiling (16 x 33 B/ns per core [DMA]) sits below its HBM share
    assert c3.hbm_bw == hardware.CHIPS["trn3"].core.dma_bw.value * 2 < c3.hbm_bw_share


def test_matmul_shape_efficiency_small_m_and_k_accumulation():
    # decode at batch 1: one row against 128-column weight tiles; every MultiplyMoving costs at
    # least 64 cycles [NKI1], so the better mapping reaches 1/64 of TensorE
    assert roofline.tile_efficiency(((1, 1, 8192, 1024),)) == pytest.approx(1 / 64)
    # K accumulates in PSUM over 128-partition tiles: K = 200 fills 200 of 256 partitions
    assert roofline.tile_efficiency(((1, 512, 200, 512),)) == pytest.approx(200 / 256)
    # so a decode-shaped matmul is bound by streaming its weights, on every generation
    for inst in ("trn1.32xlarge", "trn2.48xlarge", "trn3.48xlarge"):
        tgt = target.for_instance(inst)
        c = estimate.estimate_op(
            "mm", [(1, 8192), (8192, 1024)], torch.bfloat16, tgt, in_graph=True
        )
        assert c.bound == "memory", (inst, c)
