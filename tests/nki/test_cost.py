"""The cost of a simulated kernel: instruction counts per engine, DMA bytes, the modeled
duration of its instruction schedule, and its event on the device's modeled timeline."""

import pytest
import softmax
import torch

import torch_neuronx
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
import torch_neuronx.perf  # noqa: F401 - torch_neuronx.perf.measure
from torch_neuronx import nki


@nki.jit
def copy_and_scale(x, n_ops):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    for _ in range(n_ops):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=1.0)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_counts_per_engine_and_dma_bytes():
    x = torch.randn(128, 512, device="neuron")
    softmax.softmax(x)
    r = nki.last_report()
    assert r.name == "nki_softmax_kernel"
    assert r.instructions == {"dma": 2, "vector": 3, "scalar": 1}
    assert r.by_opcode == {
        "dma_copy": 2,
        "tensor_reduce": 1,
        "activation": 1,
        "reciprocal": 1,
        "tensor_scalar": 1,
    }
    assert r.dma_bytes == 2 * 128 * 512 * 4 and r.dma_transfers == 2
    assert r.total_instructions == 6


def test_modeled_time_follows_the_work():
    x = torch.randn(128, 2048, device="neuron")
    copy_and_scale(x, 1)
    one = copy_and_scale.last_report.modeled_seconds
    copy_and_scale(x, 9)
    nine = copy_and_scale.last_report.modeled_seconds
    # 8 more dependent VectorE instructions over 2048 fp32 elements per partition at 0.96 GHz
    per = 2048 / 0.96e9
    assert abs((nine - one) - 8 * per) < 1e-9
    # half the bytes (bf16) move in less DMA time; 16-bit VectorE modes are faster
    copy_and_scale(x.to(torch.bfloat16), 9)
    assert copy_and_scale.last_report.modeled_seconds < nine


def test_independent_engines_overlap():
    @nki.jit
    def k(x, dependent):
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=x)
        nisa.dma_copy(dst=b, src=x)
        for _ in range(4):
            nisa.activation(dst=a, op=nl.exp, data=a)  # a Scalar Engine chain
        # a Vector Engine chain: independent of the activations, or waiting for their result
        nisa.tensor_tensor(dst=b, data1=b, data2=a if dependent else b, op=nl.add)
        for _ in range(3):
            nisa.tensor_scalar(dst=b, data=b, op0=nl.add, operand0=1.0)

    x = torch.randn(128, 4096, device="neuron")
    k(x, False)
    parallel = k.last_report
    k(x, True)
    serial = k.last_report
    assert parallel.modeled_busy == serial.modeled_busy  # the same work ...
    # ... but independent chains overlap on the two engines
    overlap = serial.modeled_seconds - parallel.modeled_seconds
    assert overlap > 0.5 * min(parallel.modeled_busy["scalar"], parallel.modeled_busy["vector"])


def test_kernel_is_a_device_event_of_the_performance_model():
    x = torch.randn(256, 512, device="neuron")
    with torch_neuronx.perf.measure() as m:
        softmax.softmax(x)
    events = [
        e for e in m.events if e.cost.kind == "kernel" and e.cost.name == "nki:nki_softmax_kernel"
    ]
    assert len(events) == 1
    ev = events[0]
    assert abs((ev.end - ev.start) - softmax.nki_softmax_kernel.last_report.modeled_seconds) < 1e-12
    assert ev.cost.bytes == 2 * 256 * 512 * 4


def test_lnc2_programs_run_on_the_two_physical_cores():
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        n = nl.num_programs()
        rows = x.shape[0] // n
        for i in range(rows // 128):
            r = nl.program_id(0) * rows + i * 128
            t = nl.load(x[r : r + 128, :])
            for _ in range(4):
                nisa.activation(dst=t, op=nl.exp, data=t)
            nl.store(out[r : r + 128, :], value=t)
        return out

    x = torch.randn(512, 1024, device="neuron") * 0.01
    one = k(x)
    t1 = k.last_report.modeled_seconds
    two = k[2](x)
    t2 = k.last_report.modeled_seconds
    torch.testing.assert_close(one.cpu(), two.cpu())
    assert k.last_report.total_instructions == 2 * (2 * 6)
    # same instructions, two NeuronCores of the logical core (LNC=2): about half the time
    launch = torch_neuronx.perf.params.current().eager_launch_s
    assert abs((t2 - launch) / (t1 - launch) - 0.5) < 0.05


def test_the_op_is_not_costed_twice():
    x = torch.randn(128, 512, device="neuron")
    with torch_neuronx.perf.measure() as m:
        x * 2  # an eager op: recorded by the eager path's hook
        softmax.softmax(x)  # an eager op too, but its kernel records its own cost
    if not any(e.cost.kind == "op" for e in m.events):
        pytest.skip("this build's eager path does not report ops to the performance model")
    names = [e.cost.name for e in m.events]
    assert names.count("nki:nki_softmax_kernel") == 1
    assert not any("nki_examples::softmax" in n for n in names)
