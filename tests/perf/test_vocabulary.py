"""One vocabulary (issue 27, item 3): one engine enum for the op policy, the performance model,
NKI and the profiler; one op-name formatter."""

from __future__ import annotations

import ast
import enum
import json
import operator
from pathlib import Path

import pytest
import torch

import torch_neuronx
from torch_neuronx.eager import op_policy
from torch_neuronx.perf import estimate
from torch_neuronx.perf.target import for_instance
from torch_neuronx.runtime import op_names
from torch_neuronx.runtime.engines import CORE_ENGINES, Engine

PKG = Path(torch_neuronx.__file__).resolve().parent
ENGINES_PY = PKG / "runtime" / "engines.py"
OP_NAMES_PY = PKG / "runtime" / "op_names.py"


def _package_files():
    return sorted(PKG.rglob("*.py"))


# --- engines -----------------------------------------------------------------------------------
def test_engine_names_and_display_names():
    assert [e.display for e in (Engine.tensor, Engine.vector, Engine.scalar, Engine.gpsimd)] == [
        "TensorE",
        "VectorE",
        "ScalarE",
        "GpSimdE",
    ]
    assert Engine.dma.display == "DMA" and Engine.sync.display == "SyncE"
    assert Engine.collective.display == "CC-Core" and Engine.host.display == "CPU"
    # a member is its value wherever a string goes: JSON, f-strings, dict keys
    assert Engine.tensor == "tensor" and f"{Engine.tensor}" == "tensor"
    assert json.dumps({Engine.vector: Engine.dma}) == '{"vector": "dma"}'
    assert {"tensor": 1}[Engine.tensor] == 1
    assert CORE_ENGINES < set(Engine) and Engine.host not in CORE_ENGINES


def test_parse_takes_exact_names_only():
    assert Engine.parse("TensorE") is Engine.tensor
    assert Engine.parse("tensor") is Engine.tensor
    assert Engine.parse("VECTORE") is Engine.vector
    assert Engine.parse("CC-Core") is Engine.collective
    assert Engine.parse("CPU") is Engine.host
    assert Engine.parse(Engine.gpsimd) is Engine.gpsimd
    assert Engine.parse(None) is None and Engine.parse("") is None
    assert Engine.parse(Engine.unknown) is None
    for label in ("tens", "pe", "tensor_engine", "GPU"):  # no prefix matching
        with pytest.raises(ValueError, match="unknown engine"):
            Engine.parse(label)


def test_every_layer_uses_the_one_enum():
    from torch_neuronx.nki import cost as nki_cost
    from torch_neuronx.nki import isa as nisa

    assert nisa.engine is Engine
    assert nisa.tensor_engine is Engine.tensor and nisa.gpsimd_engine is Engine.gpsimd
    assert all(isinstance(e, Engine) for e in nki_cost.ENGINES)
    assert all(isinstance(e, Engine) for e in op_policy.ENGINES)
    assert op_policy.engine_for("aten::mm") is Engine.tensor
    tgt = for_instance("trn2.48xlarge")
    c = estimate.estimate_op("mm", [(256, 256), (256, 256)], torch.bfloat16, tgt)
    assert c.engine is Engine.tensor
    c = estimate.estimate_op("add", [(256, 256), (256, 256)], torch.float32, tgt)
    assert c.engine is Engine.vector and c.busy and all(isinstance(e, Engine) for e, _ in c.busy)


def test_no_second_engine_vocabulary():
    """No other enum of engines and no literal list of engine names anywhere in the package."""
    values = {e.value for e in Engine}
    # the display names no other concept shares ("CPU" and "DMA" also name other things)
    displays = {e.display for e in Engine} - values - {"CPU", "DMA"}
    bad = []
    for f in _package_files():
        if f == ENGINES_PY:
            continue
        tree = ast.parse(f.read_text(), str(f))
        # a membership test ("eng in ('vector', 'scalar')") checks an argument, it names nothing
        tested = {
            id(c)
            for n in ast.walk(tree)
            if isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.NotIn))
            for c in n.comparators
        }
        for node in ast.walk(tree):
            if id(node) in tested:
                continue
            if isinstance(node, ast.ClassDef):  # a class whose attributes name engines
                members = {
                    t.id
                    for a in node.body
                    if isinstance(a, ast.Assign)
                    for t in a.targets
                    if isinstance(t, ast.Name)
                }
                if len(members & values) >= 3:
                    bad.append(f"{f.relative_to(PKG)}:{node.lineno}: class {node.name}")
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = [
                    e.value
                    for e in node.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
                if len([n for n in names if n in values]) >= 3:
                    bad.append(f"{f.relative_to(PKG)}:{node.lineno}: engine names {names}")
            if isinstance(node, ast.Constant) and node.value in displays:  # "TensorE" as a label
                bad.append(f"{f.relative_to(PKG)}:{node.lineno}: engine label {node.value!r}")
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                if len([k for k in keys if k in values]) >= 3:
                    bad.append(f"{f.relative_to(PKG)}:{node.lineno}: engine keys {keys}")
    assert not bad, "\n".join(bad)


def test_nki_instructions_take_only_core_engines():
    from torch_neuronx.nki.errors import NkiValidationError
    from torch_neuronx.nki.isa.arguments import engine_name

    assert engine_name(Engine.unknown, "vector") == "vector"
    assert engine_name(Engine.gpsimd, "vector") is Engine.gpsimd
    for e in (Engine.host, Engine.collective, Engine.launch, "vector"):
        with pytest.raises(NkiValidationError):
            engine_name(e, "vector")


# --- op names ----------------------------------------------------------------------------------
def test_op_name_is_the_drivers():
    aten = torch.ops.aten
    assert op_names.op_name(aten.mm.default) == "aten::mm"
    assert op_names.op_name(aten.add.Tensor) == "aten::add.Tensor"
    assert op_names.op_name(aten.add_.Tensor) == "aten::add_.Tensor"
    assert op_names.op_name(aten.add) == "aten::add"  # a packet: the op
    assert op_names.op_name(torch.ops._c10d_functional.all_reduce.default) == (
        "_c10d_functional::all_reduce"
    )
    assert op_names.op_name(operator.getitem) == "getitem"


def test_parsing_op_names():
    assert op_names.strip_overload("aten::add.Tensor") == "aten::add"
    assert op_names.strip_overload("aten::mm") == "aten::mm"
    assert op_names.split("aten::add_.Tensor") == ("aten", "add_", "Tensor")
    assert op_names.split("aten::mm") == ("aten", "mm", "")
    assert op_names.split("aten.mm.default") == ("aten", "mm", "default")
    assert op_names.base_name("aten::add_.Tensor") == "add_"
    assert op_names.base_name("aten.mm.default") == "mm"
    assert op_names.base_name("mylib::foo.bar") == "foo"


def test_op_names_round_trip_over_the_dispatcher():
    """Every dispatcher op's driver name parses back to the same op and overload."""
    for full in torch._C._dispatch_get_all_op_names()[:3000]:
        ns, name, overload = op_names.split(full)
        packet = getattr(getattr(torch.ops, ns), name, None)
        if packet is None:
            continue
        try:
            op = getattr(packet, overload or "default")
        except AttributeError:
            continue
        assert op_names.op_name(op) == full


def test_no_second_op_name_formatter():
    """Only runtime/op_names.py builds an op's name from PyTorch's op objects (its
    overload or schema name)."""
    bad = []
    for f in _package_files():
        if f == OP_NAMES_PY:
            continue
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if not isinstance(node, ast.Attribute):
                continue
            schema_name = (
                node.attr == "name"
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "_schema"
            )
            if node.attr in ("_overloadname", "_qualified_op_name") or schema_name:
                bad.append(f"{f.relative_to(PKG)}:{node.lineno}: .{ast.unparse(node)}")
    assert not bad, "\n".join(bad)


def test_enum_is_a_str_enum():
    assert issubclass(Engine, enum.StrEnum)
