"""Environment variables: one reader (torch_neuronx/runtime/env.py), one syntax per kind, and
docs/environment.md in step with the code.

The package's source is read (``ast``) to find every variable it reads and how: each read
goes through env.flag / choice / integer / text, no module reads ``os.environ`` itself,
every variable has one kind, every on/off variable rejects a value such as "maybe" with an
error naming it, every enumerated one names its accepted values, and the variables the
package reads are exactly the ones docs/environment.md lists (less those it lists as read by
PyTorch or by the tests).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from torch_neuronx.runtime import env, topology

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "torch_neuronx"
DOC = REPO / "docs" / "environment.md"
READERS = ("flag", "choice", "integer", "text")
ON = ("1", "true", "yes", "on", "ON", "True", "Yes")
OFF = ("0", "false", "no", "off", "OFF", "False", "No")

#: modules that touch os.environ for another reason than reading a setting (copying the
#: whole environment for a child process, ``dict(os.environ)``, is allowed everywhere)
ENVIRON_USERS = {
    # saves and restores TORCHINDUCTOR_CACHE_DIR around a compile (Inductor reads it)
    "torch_neuronx/compile/inductor_dirs.py",
    # copies the environment, less the topology variables, into a child process's
    "torch_neuronx/testing/child.py",
    # sets variables that the public NKI packages it runs read themselves
    # (NKILIB_FORCE_BUNDLED_LIBRARY, NEURON_FRAMEWORK_DEBUG); reads none of its own
    "torch_neuronx/tools/nki_public_run.py",
}
#: documented because they matter to users of the package, and read by PyTorch (some by
#: torch_neuronx as well)
READ_BY_PYTORCH = {
    "TORCH_DEVICE_BACKEND_AUTOLOAD",
    "RANK",
    "WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "GLOO_SOCKET_IFNAME",
    "TORCH_DISTRIBUTED_DEBUG",
}
#: variables the package reads that must be enumerated (env.choice)
ENUMERATED = {
    "TORCH_NEURONX_EMULATED_INSTANCE",
    "NEURON_LOGICAL_NC_CONFIG",
    "TORCH_NEURONX_LOG_LEVEL",
}


def _constants(tree: ast.Module) -> dict[str, str]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for t in node.targets:
                if isinstance(t, ast.Name) and isinstance(node.value.value, str):
                    out[t.id] = node.value.value
    return out


def _reads(root: Path, strict: bool = True) -> dict[str, set[tuple[str, str]]]:
    """variable -> {(reader kind, file)} for every env.<reader>(NAME, ...) call under root
    (``strict``: a name that is not a literal or a module constant is an error; the tests
    themselves pass names around)."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        consts = _constants(tree)
        rel = str(path.relative_to(REPO))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in READERS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "env"
                and node.args
            ):
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value
            elif isinstance(arg, ast.Name) and arg.id in consts:
                name = consts[arg.id]
            elif not strict:
                continue
            else:
                raise AssertionError(
                    f"{rel}:{node.lineno}: env.{node.func.attr}() with a variable name that is "
                    "neither a literal nor a module constant"
                )
            found.setdefault(name, set()).add((node.func.attr, rel))
    return found


PACKAGE_READS = _reads(PACKAGE)


def _documented() -> dict[str, str]:
    """variable -> its table row in docs/environment.md (first-column names)."""
    out = {}
    for line in DOC.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", first):
            out[name] = line
    return out


DOCUMENTED = _documented()


def _environ_uses(tree: ast.Module) -> list[int]:
    """Lines that use ``os.environ`` / ``os.getenv`` / ``os.putenv``, except a whole copy of
    the environment (``dict(os.environ, ...)``, ``{**os.environ}``) for a child process."""
    copies = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
        ):
            copies.update(id(a) for a in node.args[:1])
        if isinstance(node, ast.Dict):
            copies.update(id(v) for k, v in zip(node.keys, node.values) if k is None)
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("environ", "getenv", "putenv", "environb", "getenvb")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and id(node) not in copies
        ):
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            if any(a.name in ("environ", "getenv", "putenv") for a in node.names):
                lines.append(node.lineno)
    return lines


def test_the_package_reads_its_environment_only_through_env_py():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(REPO))
        if rel == "torch_neuronx/runtime/env.py" or rel in ENVIRON_USERS:
            continue
        offenders += [f"{rel}:{n}" for n in _environ_uses(ast.parse(path.read_text()))]
    assert not offenders, "read the variable through torch_neuronx.runtime.env: " + ", ".join(
        offenders
    )
    native = [
        str(p.relative_to(REPO))
        for p in PACKAGE.joinpath("csrc").rglob("*")
        if p.suffix in (".cpp", ".h") and re.search(r"\bgetenv\b|\bget_env\b", p.read_text())
    ]
    assert not native, f"the C++ driver reads the environment itself: {native}"


def test_each_variable_has_one_kind():
    mixed = {
        n: sorted(k for k, _ in r) for n, r in PACKAGE_READS.items() if len({k for k, _ in r}) > 1
    }
    assert not mixed, f"read as different kinds in different places: {mixed}"


def test_every_variable_read_is_documented():
    missing = sorted(set(PACKAGE_READS) - set(DOCUMENTED))
    assert not missing, f"read by the package but absent from docs/environment.md: {missing}"


def test_every_documented_variable_is_read():
    test_reads = _reads(REPO / "tests", strict=False)
    unread = sorted(set(DOCUMENTED) - set(PACKAGE_READS) - set(test_reads) - READ_BY_PYTORCH)
    assert not unread, f"documented in docs/environment.md but read nowhere: {unread}"


def _flags() -> list[str]:
    return sorted(n for n, r in PACKAGE_READS.items() if {k for k, _ in r} == {"flag"})


def test_documented_on_off_variables_are_read_as_flags():
    """A row whose meaning starts with "`1`:" or "`0`:" documents an on/off switch."""
    switches = sorted(
        n
        for n, row in DOCUMENTED.items()
        if re.match(r"\s*`[01]`:", row.split("|")[3]) and n not in READ_BY_PYTORCH
    )
    assert len(switches) >= 8, switches
    not_flags = [n for n in switches if n in PACKAGE_READS and n not in _flags()]
    assert not not_flags, f"documented as on/off but not read with env.flag: {not_flags}"


@pytest.mark.parametrize("name", _flags())
def test_on_off_variable_rejects_maybe_naming_it(name):
    with pytest.raises(env.EnvError) as info:
        env.flag(name, False, environ={name: "maybe"})
    msg = str(info.value)
    assert name in msg and "'maybe'" in msg
    for word in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        assert re.search(rf"\b{word}\b", msg), (word, msg)


@pytest.mark.parametrize("name", _flags())
def test_on_off_variable_accepts_every_spelling(name):
    for value in ON:
        assert env.flag(name, False, environ={name: value}) is True, value
    for value in OFF:
        assert env.flag(name, True, environ={name: value}) is False, value
    for default in (False, True):
        assert env.flag(name, default, environ={}) is default
        assert env.flag(name, default, environ={name: "  "}) is default


def test_enumerated_variables_use_choice():
    for name in ENUMERATED:
        kinds = {k for k, _ in PACKAGE_READS.get(name, ())}
        assert kinds == {"choice"}, (name, kinds)


@pytest.mark.parametrize(
    "name, value, accepted",
    [
        ("TORCH_NEURONX_EMULATED_INSTANCE", "p5.48xlarge", "trn2.3xlarge"),
        ("TORCH_NEURONX_EMULATED_INSTANCE", "on", "trn2.48xlarge"),
        ("NEURON_LOGICAL_NC_CONFIG", "3", "1, 2"),
        ("NEURON_LOGICAL_NC_CONFIG", "yes", "1, 2"),
    ],
)
def test_enumerated_variable_names_its_accepted_values(name, value, accepted):
    with pytest.raises(env.EnvError) as info:
        topology.from_environment({name: value})
    msg = str(info.value)
    assert name in msg and repr(value) in msg and accepted in msg, msg


@pytest.mark.parametrize("value", ["debug", "4", "on"])
def test_log_level_names_its_accepted_values(value):
    from torch_neuronx.runtime import log

    try:
        with pytest.raises(env.EnvError) as info:
            log.configure({"TORCH_NEURONX_LOG_LEVEL": value})
    finally:
        log.configure()
    msg = str(info.value)
    assert "TORCH_NEURONX_LOG_LEVEL" in msg and "accepted values: 0, 1, 2, 3" in msg, msg


def test_choice_is_case_insensitive_and_returns_the_listed_spelling():
    t = topology.from_environment({"TORCH_NEURONX_EMULATED_INSTANCE": "TRN2.48XLARGE"})
    assert t.profile.name == "trn2.48xlarge"


def test_compile_switches_reject_maybe_where_they_are_read(monkeypatch):
    """The readers themselves (not only env.flag) raise, at the call that reads them."""
    from torch_neuronx.compile import config, inputs

    for name, reader in [
        ("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", config.disable_fallback_execution),
        ("TORCH_NEURONX_NEFF_DISABLE_CACHE", config.cache_disabled),
        ("TORCH_NEURONX_DISABLE_NEFF_CACHE", config.cache_disabled),
        ("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", config.preserve_artifacts),
        ("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", inputs.autocopy_disabled),
    ]:
        monkeypatch.setenv(name, "maybe")
        with pytest.raises(env.EnvError, match=name):
            reader()
        monkeypatch.setenv(name, "on")
        assert reader() is True
        monkeypatch.delenv(name)


def test_import_time_switch_rejects_maybe(py_env_child):
    """An on/off variable read at import (here TORCH_NEURONX_STRICT) stops ``import torch``
    with the variable's name, instead of being read as off."""
    out = py_env_child({"TORCH_NEURONX_STRICT": "maybe"})
    assert out.returncode != 0
    assert "TORCH_NEURONX_STRICT='maybe' is not an on/off value" in out.stderr


@pytest.fixture
def py_env_child():
    import subprocess
    import sys

    def run(extra):
        return subprocess.run(
            [sys.executable, "-c", "import torch"],
            env={**os.environ, **extra},
            capture_output=True,
            text=True,
            timeout=300,
        )

    return run


# --------------------------------------------------------------------------------------
# junk for every documented variable (issue 28, item 6): the error names the variable, the
# value and the accepted values, whichever reader or parser finds it
# --------------------------------------------------------------------------------------
def _topology(environ):
    topology.from_environment(environ)


def _log(environ):
    from torch_neuronx.runtime import log

    try:
        log.configure(environ)
    finally:
        log.configure()


def _as_read(name):
    """The package's own reader kind for ``name`` (flag or integer), as the AST scan found it."""
    (kind,) = {k for k, _ in PACKAGE_READS[name]}
    if kind == "flag":
        return lambda environ: env.flag(name, False, environ=environ)
    assert kind == "integer", (name, kind)
    return lambda environ: env.integer(name, 0, environ=environ)


_ON_OFF = "1, true, yes, on (on) or 0, false, no, off (off)"
#: variable -> (junk values, the call that reads it from a mapping, text of the accepted values)
JUNK = {
    "TORCH_NEURONX_EMULATED_INSTANCE": (["junk", "trn9"], _topology, "trn2.3xlarge, "),
    "NEURON_LOGICAL_NC_CONFIG": (["abc", "3", "-1"], _topology, "1, 2"),
    "NEURON_RT_VISIBLE_CORES": (
        ["abc", "1-x", "3-1", "0,0", "9", ",", "-", "0-"],
        _topology,
        "logical core ids 0..3 and ranges of them",
    ),
    "NEURON_RT_NUM_CORES": (["abc", "0", "-2", "9", "1.5"], _topology, "1"),
    "TORCH_NEURONX_HBM_PER_CORE": (["lots", "0", "-1GiB", "2XB"], _topology, "a size in bytes"),
    "TORCH_NEURONX_LOG_LEVEL": (["debug", "4"], _log, "0, 1, 2, 3"),
    "NEURON_COMPILATION_CACHE_MAX_ENTRIES": (
        ["many", "-1", "1e3"],
        lambda environ: env.integer(
            "NEURON_COMPILATION_CACHE_MAX_ENTRIES", 0, minimum=0, environ=environ
        ),
        "a decimal integer >= 0",
    ),
    "TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD": (
        ["four", "4.0"],
        _as_read("TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD"),
        "a decimal integer",
    ),
    "LOCAL_RANK": (
        ["x", "-3"],
        lambda environ: env.integer("LOCAL_RANK", -1, minimum=0, environ=environ),
        "a decimal integer >= 0",
    ),
    "RANK": (
        ["zero", "-1"],
        lambda environ: env.integer("RANK", 0, 0, environ=environ),
        ">= 0",
    ),
    "WORLD_SIZE": (
        ["two", "0"],
        lambda environ: env.integer("WORLD_SIZE", 1, 1, environ=environ),
        ">= 1",
    ),
    # read by the OpInfo tests themselves (tests/eager/test_opinfo.py), as a switch
    "TORCH_NEURONX_OPINFO_RUN_CRASHERS": (
        ["maybe"],
        lambda environ: env.flag("TORCH_NEURONX_OPINFO_RUN_CRASHERS", False, environ=environ),
        _ON_OFF,
    ),
    **{n: (["maybe", "2", "y"], _as_read(n), _ON_OFF) for n in _flags()},
}
#: documented variables that take any value, and why no value is junk
FREE_FORM = {
    "TORCH_NEURONX_LOG_FILE": "a path; an unwritable one fails when the log opens it",
    "TORCH_NEURONX_NEFF_CACHE_DIR": "a path, checked for safety where the cache opens it",
    "TORCH_NEURONX_DEBUG_DIR": "a path",
    "XDG_CACHE_HOME": "a path",
    "CXX": "a compiler command, only part of a cache key",
    "COVERAGE_SWEEP_CRASH_ON": "a test hook naming an OpInfo entry",
    "TORCH_NEURONX_OPINFO_DEVICE": "a device name, checked by torch where the harness uses it",
}


def test_every_documented_variable_is_covered_by_the_junk_table():
    not_read = READ_BY_PYTORCH - set(PACKAGE_READS)  # PyTorch's alone: not ours to check
    covered = set(JUNK) | set(FREE_FORM) | not_read
    assert not set(DOCUMENTED) - covered, f"add to JUNK or FREE_FORM: {set(DOCUMENTED) - covered}"
    assert not covered - set(DOCUMENTED), f"not in docs/environment.md: {covered - set(DOCUMENTED)}"


@pytest.mark.parametrize(
    "name, value", [(n, v) for n, (values, _, _) in sorted(JUNK.items()) for v in values]
)
def test_junk_names_the_variable_the_value_and_the_accepted_values(name, value):
    _, read, accepted = JUNK[name]
    with pytest.raises(env.EnvError) as info:
        read({name: value})
    msg = str(info.value)
    assert msg.startswith(f"{name}={value!r} "), msg
    assert "; accepted values: " in msg and accepted in msg.split("; accepted values: ", 1)[1], msg
