"""The package's shape (issue 9): layers import only downward, only the listed modules call the
driver (`_C`), the public namespace is the public API, every replacement of a torch attribute
is listed, `import torch` stays light."""

import ast
from pathlib import Path

import torch_neuronx
from torch_neuronx.runtime import patches

PKG = Path(torch_neuronx.__file__).resolve().parent

# Each layer and the layers it must not import (the ones above it). Layers missing from the
# tree (not written yet) constrain nothing.
LAYERS = [
    "runtime",
    "perf",
    "profiler",
    "eager",
    "compile",
    "distributed",
    "nki",
    "testing",
    "tools",
    "evaluate",
]
_TOP = {"testing", "tools", "evaluate"}
ABOVE = {
    "runtime": {"perf", "profiler", "eager", "compile", "distributed", "nki"} | _TOP,
    "perf": {"profiler", "eager", "compile", "distributed", "nki"} | _TOP,
    "profiler": {"eager", "compile", "distributed", "nki"} | _TOP,
    "eager": {"compile", "distributed", "nki"} | _TOP,
    "compile": {"distributed", "nki"} | _TOP,
    "distributed": {"compile", "nki"} | _TOP,
    "nki": _TOP,
    # beside each other under tools/, whose CLI runs the OpInfo sweep and `evaluate`
    "testing": {"tools", "evaluate"},
    "evaluate": {"tools", "testing"},
}

# The modules above runtime that call the driver (torch_neuronx._C), each for its layer's own
# C++ part; runtime/ is the driver's Python face (any module), evaluate/ and every layer not
# named here reach the driver only through the API of the layer that owns the part.
DRIVER_CALLERS = {
    "__init__.py": "autoload: loads and configures the driver",
    "metrics.py": "torch_neuronx.metrics: the driver's counters, every layer's too",
    "eager/op_policy.py": "sends the op policy table to csrc/eager/op_table",
    "eager/tracking.py": "reads csrc/eager/op_table's executed/fallback tracking",
    "eager/unsupported_features.py": "TORCH_NEURONX_STRICT, held by csrc/eager/op_table",
    "eager/perf_hook.py": "owns the driver's per-op callback (csrc/runtime/perf_hook): it needs "
    "each op's engine from the policy table; others observe it through add_op_observer",
    "distributed/backend.py": "registers the c10d kernels of csrc/distributed",
    "profiler/device_events.py": "the driver's Kineto session (csrc/runtime/device_trace)",
}


def _imported_layers(path: Path, root: Path = PKG) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the file's package
                base = path.relative_to(root).parts[: -node.level]
                module = ".".join(("torch_neuronx", *base, *([node.module] if node.module else [])))
            else:
                module = node.module or ""
            # `from torch_neuronx import perf` imports the layer torch_neuronx.perf
            names = [module, *(f"{module}.{a.name}" for a in node.names)]
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
    probe.write_text("def f():\n    from torch_neuronx import _C, compile\n")
    assert _imported_layers(probe) == {"_C", "compile"}


def _driver_callers(root: Path = PKG) -> set[str]:
    """The modules of the package at ``root`` that import the driver (relative paths)."""
    return {
        f.relative_to(root).as_posix()
        for f in sorted(root.rglob("*.py"))
        if "_C" in _imported_layers(f, root) and "csrc" not in f.relative_to(root).parts
    }


def test_only_listed_modules_call_the_driver():
    found = {m for m in _driver_callers() if not m.startswith("runtime/")}
    unlisted = sorted(found - set(DRIVER_CALLERS))
    assert not unlisted, f"call _C without a reason in DRIVER_CALLERS: {unlisted}"
    stale = sorted(set(DRIVER_CALLERS) - found)
    assert not stale, f"listed in DRIVER_CALLERS but no longer call _C: {stale}"
    assert not any(m.startswith("evaluate/") for m in found)


def test_driver_caller_check_detects_a_call(tmp_path):
    # the checker itself must be able to fail: a module of evaluate/ importing the driver
    probe = PKG / "evaluate" / "collector.py"
    assert "_C" not in _imported_layers(probe)
    for text in ("from torch_neuronx import _C\n", "import torch_neuronx._C\n"):
        f = tmp_path / "probe.py"
        f.write_text(text)
        assert "_C" in _imported_layers(f), text
    # a relative import inside the package resolves too (`from .. import _C` in nki/)
    pkg = tmp_path / "torch_neuronx"
    (pkg / "nki").mkdir(parents=True)
    (pkg / "nki" / "kernel.py").write_text("from .. import _C\n")
    (pkg / "nki" / "alloc.py").write_text("from ..runtime import host\n")
    assert _driver_callers(pkg) == {"nki/kernel.py"}


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


def _rooted_at_torch(node) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "torch"


def _direct_torch_replacements(path: Path) -> list[int]:
    """Lines of ``path`` that set or delete an attribute of ``torch`` themselves (an assignment
    to ``torch.x.y`` or ``setattr`` / ``delattr`` on something under ``torch``)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
            and _rooted_at_torch(node.args[0])
        ):
            lines.append(node.lineno)
        flat = []
        for t in targets:
            flat.extend(t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])
        if any(isinstance(t, ast.Attribute) and _rooted_at_torch(t.value) for t in flat):
            lines.append(node.lineno)
    return lines


def test_torch_attributes_are_replaced_only_through_patches(tmp_path):
    # the rest replace through patches.replace / patches.scoped, so installed() lists them
    bad = [
        f"{f.relative_to(PKG)}:{line}"
        for f in sorted(PKG.rglob("*.py"))
        if f != PKG / "runtime" / "patches.py"
        for line in _direct_torch_replacements(f)
    ]
    assert not bad, bad
    probe = tmp_path / "probe.py"  # the check can fail
    probe.write_text(
        "import torch\ntorch.compile = None\ntorch.Tensor.a, x = 1, 2\n"
        "setattr(torch.Tensor, 'item', None)\ny = torch.compile\nx.backward = 3\n"
    )
    assert sorted(_direct_torch_replacements(probe)) == [2, 3, 4]


def test_import_torch_does_not_import_dynamo_or_inductor(py):
    py("""
        import sys, torch
        assert 'torch_neuronx' in sys.modules
        torch.ones(2, device='neuron') + 1
        heavy = [m for m in ('torch._dynamo', 'torch._inductor') if m in sys.modules]
        assert not heavy, heavy
        """)


# ---- no import circles (issue 27): every module of the package, imports inside functions
# included. The compiled driver (torch_neuronx._C) has no Python source and imports nothing of
# ours, so it cannot close a circle; the package root (torch_neuronx/__init__.py) re-exports
# the public API and is imported by no module of the package (the second check), so its
# imports cannot close one either.


def _module_of(path: Path, root: Path, package: str) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((package, *parts))


def _import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the package's modules it imports (statements anywhere in the file)."""
    files = {_module_of(f, root, package): f for f in sorted(root.rglob("*.py"))}
    driver = f"{package}._C"  # the compiled driver: a leaf (no Python source)

    def known(name: str) -> str | None:  # the innermost module a dotted name lies in
        if name == driver or name.startswith(driver + "."):
            return driver
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, f in files.items():
        is_pkg = f.name == "__init__.py"
        deps = set()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: against the file's package
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                # `from pkg import name` imports the module pkg.name when there is one
                targets = [f"{src}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                if t == package or t.startswith(package + "."):
                    dep = known(t)
                    if dep is not None and dep != mod:
                        deps.add(dep)
        graph[mod] = deps
    return graph


def _import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_cycles_between_modules():
    graph = _import_graph(PKG, "torch_neuronx")
    assert "torch_neuronx.nki.tensor" in graph and graph["torch_neuronx.nki"], "graph is empty"
    circles = _import_circles(graph)
    lines = [
        " <-> ".join(c) + "\n    " + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
        for c in circles
    ]
    assert not circles, "import circles:\n" + "\n".join(lines)


def test_no_module_imports_the_package_root():
    # torch_neuronx/__init__.py is the public facade; modules import what they use from where
    # it is defined (the compiled driver as `from torch_neuronx import _C`)
    graph = _import_graph(PKG, "torch_neuronx")
    bad = sorted(m for m, deps in graph.items() if "torch_neuronx" in deps)
    assert not bad, bad


def test_import_circle_check_detects_a_circle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import a\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from ..b import g\n")
    (pkg / "b.py").write_text("from pkg.sub import a\n")
    (pkg / "c.py").write_text("from pkg import b, _C\nimport pkg\n")
    graph = _import_graph(pkg, "pkg")
    assert graph["pkg.c"] == {"pkg", "pkg.b", "pkg._C"}
    assert _import_circles(graph) == [["pkg.b", "pkg.sub.a"]]
