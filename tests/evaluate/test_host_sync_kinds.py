"""Host syncs are classified by the call that made them (observed Tensor methods and the
model's transfer events), each with the user's source line -- including the eager remainder
of a compiled function after a graph break."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import torch

from torch_neuronx.evaluate import profiles
from torch_neuronx.evaluate.collector import Collector

HERE = Path(__file__)


def _line(marker: str) -> int:
    for i, text in enumerate(HERE.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# MARK-{marker}"):
            return i
    raise AssertionError(marker)


def _reads():
    x = torch.randn(4, 3, device="neuron")
    x.sum().item()  # MARK-item
    float(x.sum())  # MARK-float
    int(x.sum())  # MARK-int
    if (x > 10).any():  # MARK-bool
        pass
    x.tolist()  # MARK-tolist
    x.cpu()  # MARK-cpu
    x.to("cpu")  # MARK-to
    with contextlib.redirect_stdout(io.StringIO()):
        print(x)  # MARK-print
    _ = f"{x.sum():.3f}"  # MARK-format
    torch.nonzero(x > 0)  # MARK-nonzero
    host = torch.empty(4, 3)
    host.copy_(x)  # MARK-copy
    x.to("neuron")  # not a read
    x.detach().clone()  # not a read


def _compiled(t):
    y = t * 2
    if y.sum() > -1e9:  # MARK-compiled-bool
        y = y + 1
    return y * y.max().item()  # MARK-compiled-item


def _sites(c, kind):
    return {
        (int(s.split(":")[-1].split(" ")[0]), s.rsplit(" in ", 1)[1])
        for s in c.host_reads.sites[kind]
        if s.startswith(str(HERE))
    }


def test_each_kind_of_host_read_with_its_source_line():
    c = Collector(profiles.profiles(["trn2.3xlarge"], 2)).start()
    try:
        _reads()
    finally:
        c.stop()
    expect = {
        ".item()": "item",
        "float(tensor)": "float",
        "int(tensor)": "int",
        "bool(tensor)": "bool",
        ".tolist()": "tolist",
        ".cpu()": "cpu",
        '.to("cpu")': "to",
        "device-to-host transfer (aten::_copy_from)": "copy",
    }
    for kind, marker in expect.items():
        assert _sites(c, kind) == {(_line(marker), "_reads")}, (kind, dict(c.host_reads.sites))
        assert c.host_reads.count[kind] == 1, kind
    assert _sites(c, "printing") == {(_line("print"), "_reads"), (_line("format"), "_reads")}
    assert c.host_reads.count["printing"] == 2  # print's own nested .tolist() is the same read
    (dd,) = c.data_dependent.rows()
    assert dd["name"] == "aten::nonzero"
    assert dd["sites"][0]["site"].startswith(f"{HERE}:{_line('nonzero')} ")
    assert sum(c.host_reads.count.values()) == 10  # .to("neuron"), clone: no read
    # the wrappers are gone once the evaluation ends
    assert (
        "item" not in torch.Tensor.__dict__ and torch.Tensor.__repr__.__module__ == "torch._tensor"
    )


def test_reads_in_the_eager_remainder_of_a_compiled_function():
    f = torch.compile(_compiled, backend="neuron")
    x = torch.randn(4, 3, device="neuron")
    c = Collector(profiles.profiles(["trn2.3xlarge"], 2)).start()
    try:
        for _ in range(2):
            out = f(x)
    finally:
        c.stop()
    torch.testing.assert_close(out.cpu(), _compiled(x).cpu())
    assert _sites(c, "bool(tensor)") == {(_line("compiled-bool"), "_compiled")}
    assert _sites(c, ".item()") == {(_line("compiled-item"), "_compiled")}
    # the instrumentation itself never shows up as a graph break of the user's code
    assert c.graph_breaks and all(str(HERE) in g["site"] for g in c.graph_breaks), c.graph_breaks
