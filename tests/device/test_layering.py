"""The package's shape (issue 9): layers import only downward, the public namespace is the
public API, every replacement of a torch attribute is listed, `import torch` stays light."""

import ast
from pathlib import Path

import torch_neuronx
from torch_neuronx.runtime import patches

PKG = Path(torch_neuronx.__file__).resolve().parent

# Each layer and the layers it must not import (the ones above it). Layers missing from the
# tree (not written yet) constrain nothing.
LAYERS = ["runtime", "perf", "eager", "compile", "distributed", "nki", "testing", "tools"]
ABOVE = {
    "runtime": {"perf", "eager", "compile", "distributed", "nki", "testing", "tools", "evaluate"},
    "perf": {"eager", "compile", "distributed", "nki", "testing", "tools", "evaluate"},
    "eager": {"compile", "distributed", "nki", "testing", "tools", "evaluate"},
    "compile": {"distributed", "nki", "testing", "tools", "evaluate"},
    "distributed": {"compile", "nki", "testing", "tools", "evaluate"},
    "nki": {"testing", "tools", "evaluate"},
}


def _imported_layers(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:  # relative import: resolve against the file's package
                base = path.relative_to(PKG).parts[: -node.level]
                names = [".".join(("torch_neuronx", *base, node.module))]
            else:
                names = [node.module]
        for n in names:
            parts = n.split(".")
            if parts[0] == "torch_neuronx" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_layers_import_only_downward():
    bad = []
    for layer, forbidden in ABOVE.items():
        folder = PKG / layer
        if not folder.is_dir():
            continue
        for f in sorted(folder.rglob("*.py")):
            wrong = _imported_layers(f) & forbidden
            if wrong:
                bad.append(f"{f.relative_to(PKG)} imports {sorted(wrong)}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_layering_check_detects_an_upward_import(tmp_path):
    # the checker itself must be able to fail
    f = PKG / "runtime" / "__init__.py"
    assert "compile" not in _imported_layers(f)
    probe = tmp_path / "probe.py"
    probe.write_text("from torch_neuronx.compile import inputs\n")
    assert _imported_layers(probe) == {"compile"}


def test_public_namespace():
    names = dir(torch_neuronx)
    leftovers = [n for n in names if n.startswith("_") and not n.startswith("__")]
    assert not leftovers, leftovers
    assert "annotations" not in names
    assert set(torch_neuronx.__all__) <= set(names)
    for name in torch_neuronx.__all__:
        assert hasattr(torch_neuronx, name), name


def test_every_torch_replacement_is_listed():
    import torch

    targets = {p.target for p in patches.installed()}
    for expected in ("torch.compile", "torch.vmap"):
        assert expected in targets, sorted(targets)
    assert any(t.endswith("Module._apply") for t in targets), sorted(targets)
    if torch.distributed.is_available():
        assert any(t.endswith("ProcessGroup.split_group") for t in targets), sorted(targets)
    for p in patches.installed():
        assert p.reason.strip(), p


def test_import_torch_does_not_import_dynamo_or_inductor(py):
    py("""
        import sys, torch
        assert 'torch_neuronx' in sys.modules
        torch.ones(2, device='neuron') + 1
        heavy = [m for m in ('torch._dynamo', 'torch._inductor') if m in sys.modules]
        assert not heavy, heavy
        """)
