"""Device work reaches the clocks (issue 10, points 2-3): eager ops, copies, CPU fallbacks and
compiled graphs on the neuron device are costed while measured, and nothing is recorded while
nobody measures. Results stay identical to CPU either way."""

import pytest
import torch

import torch_neuronx
import torch_neuronx.perf as perf
from torch_neuronx.perf import estimate, target


@pytest.fixture(autouse=True)
def _fresh():
    perf.reset()
    yield
    perf.reset()


def _by_name(m):
    return {r["name"]: r for r in m.by_op()}


def test_eager_ops_are_costed_and_results_match_cpu():
    a = torch.randn(256, 128)
    b = torch.randn(128, 64)
    da, db = a.to("neuron"), b.to("neuron")
    with perf.measure() as m:
        out = (da @ db).relu() + 1
    torch.testing.assert_close(out.cpu(), (a @ b).relu() + 1)
    rows = _by_name(m)
    mm = rows["aten::mm"]
    assert mm["kind"] == "op" and mm["engine"] == "tensor" and mm["flops"] == 2 * 256 * 128 * 64
    expect = estimate.estimate_op("mm", [(256, 128), (128, 64)], torch.float32, target.current())
    assert mm["time_s"] == pytest.approx(expect.duration)
    assert "aten::relu" in rows and "aten::add.Tensor" in rows
    assert all(r["bound"] == "launch" for r in rows.values() if r["kind"] == "op")  # tiny ops


def test_nothing_is_recorded_while_nobody_measures():
    x = torch.ones(64, device="neuron")
    assert not perf.recording()
    before = perf.totals(0)["events"]
    y = x * 2 + x
    assert perf.totals(0)["events"] == before
    torch.testing.assert_close(y.cpu(), torch.full((64,), 3.0))


def test_views_cost_nothing_and_inplace_ops_are_costed():
    x = torch.ones(1024, device="neuron")
    with perf.measure() as m:
        v = x.view(32, 32).t()
        v.add_(1)
    names = [e.cost.name for e in m.events]
    assert names == ["aten::add_.Tensor"]
    assert m.events[0].cost.bytes == 2 * 4 * 1024  # read and write the same 1024 floats


def test_copies_cross_the_host_link():
    x = torch.randn(1 << 16)
    with perf.measure() as m:
        d = x.to("neuron")
        back = d.cpu()
        s = d.sum().item()
    torch.testing.assert_close(back, x)
    assert s == pytest.approx(x.sum().item(), rel=1e-5)
    copies = [e.cost for e in m.events if e.cost.kind == "copy"]
    names = [c.name for c in copies]
    assert names[:2] == ["host_to_device", "device_to_host"] and names[-1] == "device_to_host"
    assert copies[0].bytes == 4 << 16
    chip = target.current().core.chip
    assert copies[0].duration == pytest.approx(
        chip.host_link_latency.value + (4 << 16) / chip.host_link_bw.value
    )


def test_cpu_fallback_ops_cost_host_time_plus_transfers():
    import warnings

    a = torch.randn(64, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with perf.measure() as m:
            q, r = torch.linalg.qr(a.to("neuron"))
    torch.testing.assert_close((q @ r).cpu(), a, atol=1e-4, rtol=1e-4)
    fb = [e.cost for e in m.events if e.cost.kind == "fallback"]
    assert fb and fb[0].engine == "host" and fb[0].host_s > 0
    assert fb[0].bytes == 3 * 64 * 64 * 4  # a in; q and r out


def test_compiling_an_elementwise_chain_lowers_modeled_time():
    def chain(x):
        return ((torch.relu(x) * 2 + 1).exp() - x).sigmoid()

    x = torch.randn(1 << 18)
    dx = x.to("neuron")
    compiled = torch.compile(chain, backend="neuron")
    torch.testing.assert_close(compiled(dx).cpu(), chain(x))  # compile outside the region
    with perf.measure() as eager:
        ref = chain(dx)
    with perf.measure() as comp:
        got = compiled(dx)
    torch.testing.assert_close(got.cpu(), ref.cpu())
    kinds = [e.cost.kind for e in comp.events]
    assert kinds[0] == "graph" and kinds.count("kernel") == 1
    assert comp.events[1].cost.name.startswith("fused(relu,mul,add,exp")
    assert comp.summary()["device_time_s"] < eager.summary()["device_time_s"] / 2
    assert comp.summary()["bytes"] == 2 * 4 * (1 << 18)  # read x once, write the result once


def test_measure_per_device():
    with perf.measure(devices=[1]) as m:
        torch.ones(8, device="neuron:0") + 1
        torch.ones(8, device="neuron:1") + 1
    assert {e.device for e in m.events} == {1}
    s = m.summary()
    assert (
        list(s["devices"]) == [1]
        and s["instance"] == torch_neuronx.perf.target.current().instance.name
    )


def test_a_graph_from_the_persistent_cache_keeps_its_kernel_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", raising=False)
    from torch_neuronx.compile import get_dynamo_metrics, reset_dynamo_metrics

    def f(x):
        return torch.tanh(x * 3) + 1

    x = torch.randn(4096).to("neuron")
    plans = []
    for _ in range(2):  # the second compile is served by the AOT-level cache (pickled executable)
        torch._dynamo.reset()
        reset_dynamo_metrics()
        compiled = torch.compile(f, backend="neuron")
        compiled(x)
        with perf.measure() as m:
            out = compiled(x)
        torch.testing.assert_close(out.cpu(), f(x.cpu()))
        plans.append([(e.cost.kind, e.cost.name, e.cost.bytes) for e in m.events])
    assert get_dynamo_metrics()[-1]["aot_cache"] == "hit"
    assert plans[0] == plans[1] and plans[0][1][0] == "kernel"
