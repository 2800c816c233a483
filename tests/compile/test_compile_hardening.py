"""Issue 28: no foreign code in a compile, no crash on a damaged kernel.

1. Inductor's own directories (its default ``<tempdir>/torchinductor_<user>``, whose
   precompiled headers every kernel includes) are never read: a header planted there by
   another user never runs (compile/inductor_dirs.py); nor does a pickle planted where
   Dynamo reads its profile-guided state before the backend runs (``job_id`` set).
2. A truncated kernel with no manifest is deleted and rebuilt, not loaded (SIGBUS); a
   ``compile-<tag>`` that is a symbolic link is refused (compile/kernel_check.py,
   compile/cache_dir.py).

The scenarios run in child processes: a damaged kernel must be met by a process that has not
loaded it (a truncated kernel in this process is a mapped file cut short under it).
"""

from __future__ import annotations

import glob
import os
import pickle
import shutil
import warnings
from pathlib import Path

import pytest

from torch_neuronx.compile import cache, cache_dir, dynamo_dirs, inductor_dirs, kernel_check
from torch_neuronx.compile.cache_dir import UnsafeCacheDirError
from torch_neuronx.runtime import patches
from torch_neuronx.testing import child

ROOT = os.geteuid() == 0
OTHER_UID = 65534

COMPILE = """
import os, sys, torch
from torch_neuronx.compile import cache, get_dynamo_metrics

def f(x, w):
    return torch.relu(x @ w).sum(dim=1) * 0.5

x = (torch.arange(12.0).reshape(3, 4) / 7).to("neuron")
w = (torch.arange(8.0).reshape(4, 2) - 3).to("neuron")
with torch.no_grad():
    out = torch.compile(f, backend="neuron")(x, w)
torch.testing.assert_close(out.cpu(), f(x.cpu(), w.cpu()))
print("CACHE", get_dynamo_metrics()[-1]["cache"], "REPORTS", len(cache.corruption_reports))
"""


@pytest.fixture(scope="module")
def host_cache():
    """The per-host directory of Inductor's precompiled headers for this file's child
    processes: the user's own (``$XDG_CACHE_HOME`` or ``~/.cache``), which the suite's other
    compiles fill too. A private one made every run of this file build the headers again
    (measured: 18 CPU s). No scenario here plants anything in it."""
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"))


@pytest.fixture(scope="module")
def warm(tmp_path_factory, host_cache):
    """One compile of COMPILE in a fresh cache of its own, shared by the tests that need a
    first compile (the precompiled headers it builds, the kernels it leaves): a child less."""
    root = tmp_path_factory.mktemp("warm")
    env = _env(root, "warm", host_cache)
    child.run_ok(COMPILE, env)
    return root, env


def _env(tmp_path, name: str, xdg, **extra) -> dict:
    """A child's environment: its own compile cache and temp directory; the host directory
    ``xdg`` is this file's (``host_cache``)."""
    env = {
        "TORCH_NEURONX_NEFF_CACHE_DIR": str(tmp_path / name / "neff"),
        "XDG_CACHE_HOME": str(xdg),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    env.update(extra)
    for key in ("XDG_CACHE_HOME", "TMPDIR"):
        os.makedirs(env[key], mode=0o700, exist_ok=True)
    return env


# ------------------------------------------------------------------ 1. no foreign code


@pytest.mark.skipif(not ROOT, reason="planting files as another user needs root (chown)")
def test_header_planted_by_another_user_never_runs(tmp_path, host_cache, warm):
    # a first compile (``warm``) shows which precompiled header Inductor builds (its name is a
    # hash of the header, the compiler and its flags, not of the directory)
    names = {
        os.path.basename(p)
        for pattern in (
            host_cache / "torch_neuronx" / "inductor-*" / "precompiled_headers" / "*.h",
            warm[0] / "tmp" / "torchinductor_*" / "precompiled_headers" / "*.h",
        )
        for p in glob.glob(str(pattern))
    }
    assert names, "no precompiled header was built"
    # another user owns the victim's default Inductor directory and has planted a header
    # that records it ran, under every name the victim's compile would use
    marker = tmp_path / "planted-code-ran"
    planted = tmp_path / "tmp" / f"torchinductor_{cache_dir._user()}"
    if planted.exists():
        shutil.rmtree(planted)
    headers = planted / "precompiled_headers"
    os.makedirs(headers)
    for name in names:
        (headers / name).write_text(
            "#include <torch/csrc/inductor/cpp_prefix.h>\n#include <cstdio>\n"
            "static int planted_ = [] { FILE* f = std::fopen("
            f'"{marker}", "w"); if (f) std::fclose(f); return 0; }}();\n'
        )
    for p in (planted, headers, *headers.iterdir()):
        os.chown(p, OTHER_UID, OTHER_UID)
        os.chmod(p, 0o777)
    # a fresh compile cache: the kernels are compiled (and include the header) again
    out = child.run_ok(COMPILE, _env(tmp_path, "second", host_cache))
    assert "CACHE miss" in out, out
    assert not marker.exists(), "code planted in another user's Inductor directory ran"


PGO_COMPILE = """
import os, torch
from torch._dynamo import pgo

torch.compiler.config.job_id = "issue28"

def f(x, w):
    return torch.relu(x @ w).sum(dim=1) * 0.5

x = (torch.arange(12.0).reshape(3, 4) / 7).to("neuron")
w = (torch.arange(8.0).reshape(4, 2) - 3).to("neuron")
with torch.no_grad():
    out = torch.compile(f, backend="neuron")(x, w)
torch.testing.assert_close(out.cpu(), f(x.cpu(), w.cpu()))
# where Dynamo itself reads and writes the profile (the function torch_neuronx wraps)
code_state_path = getattr(pgo.code_state_path, "__wrapped__", pgo.code_state_path)
dynamo_path = code_state_path(pgo.get_cache_key())
print("DYNAMO_PATH", dynamo_path)
"""


class _Planted:
    """Unpickling it evaluates ``code``: writes ``marker``, then gives Dynamo an empty
    profile (so that a process that ran it still compiles, and the marker tells)."""

    def __init__(self, marker):
        self.code = (
            f"open({str(marker)!r}, 'w').close() or __import__('collections').defaultdict("
            "__import__('torch._dynamo.pgo', fromlist=['CodeState']).CodeState)"
        )

    def __reduce__(self):
        return (eval, (self.code,))


@pytest.mark.skipif(not ROOT, reason="planting files as another user needs root (chown)")
def test_profile_pickle_planted_by_another_user_never_runs(tmp_path, host_cache):
    """With ``torch.compiler.config.job_id`` set, Dynamo unpickles its profile-guided state
    from ``<Inductor cache dir>/dynamo/code_state_<key>.pkl`` before the backend runs. A
    pickle planted there (the victim's default Inductor directory, owned and writable by
    another user) never runs: for a neuron compile Dynamo reads and writes that state in the
    checked compile cache instead."""
    marker = tmp_path / "planted-pickle-ran"
    inductor = tmp_path / "tmp" / f"torchinductor_{cache_dir._user()}"
    dynamo = inductor / "dynamo"
    planted = dynamo / "code_state_issue28_None_.pkl"
    os.makedirs(dynamo)
    planted.write_bytes(pickle.dumps(_Planted(marker)))
    for p in (inductor, dynamo, planted):
        os.chown(p, OTHER_UID, OTHER_UID)
        os.chmod(p, 0o777)
    # Dynamo's default directory (TMPDIR's torchinductor_<user>), explicitly
    env = _env(tmp_path, "pgo", host_cache, TORCHINDUCTOR_CACHE_DIR=str(inductor))
    out = child.run_ok(PGO_COMPILE, env)
    assert f"DYNAMO_PATH {planted}" in out, out  # the pickle lies where Dynamo reads
    assert not marker.exists(), "a pickle planted in another user's Inductor directory ran"
    # the profile went to the checked compile cache, private like the rest of it
    ours = glob.glob(str(tmp_path / "pgo" / "neff" / "compile-*" / "inductor" / "dynamo" / "*.pkl"))
    assert [os.path.basename(p) for p in ours] == [planted.name], ours
    st = os.stat(os.path.dirname(ours[0]))
    assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0
    # a second process reads it back from there (and still not the planted one)
    child.run_ok(PGO_COMPILE, env)
    assert not marker.exists()


def test_dynamo_caches_point_into_checked_ones_for_neuron_only(tmp_path, monkeypatch):
    """Dynamo's profile-guided state and precompiled packages: in a checked directory while
    it compiles for neuron, unchanged otherwise (other backends)."""
    import torch
    from torch._dynamo import package, pgo
    from torch._dynamo.eval_frame import get_compiler_fn

    import torch_neuronx.compile  # noqa: F401  (the backend module installs the routing)
    from torch_neuronx.compile import backend  # noqa: F401

    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path / "neff"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dynamo_dirs.targets_neuron(get_compiler_fn("neuron"))
    assert dynamo_dirs.targets_neuron(torch._TorchCompileWrapper("neuron", None, None, False))
    assert not dynamo_dirs.targets_neuron(get_compiler_fn("eager"))
    with torch.compiler.config.patch(job_id="issue28"):
        key = pgo.get_cache_key()
        outside = pgo.code_state_path(key)
        with dynamo_dirs.dynamo_region():
            inside = pgo.code_state_path(key)
            prefix = package.DynamoCache.path_prefix()
    assert outside == patches.original(pgo, "code_state_path")(key)
    expected = os.path.join(str(tmp_path / "neff"), f"compile-{cache.version_tag()}", "inductor")
    assert inside == os.path.join(expected, "dynamo", os.path.basename(outside))
    assert prefix == os.path.join(expected, "dynamo")
    st = os.stat(prefix)
    assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0
    assert package.DynamoCache.path_prefix() != prefix  # outside the region: Dynamo's own
    assert not dynamo_dirs.in_dynamo_region()


def test_host_directory_of_another_user_is_not_used(tmp_path, monkeypatch):
    """The per-host directory (ISA probes, precompiled headers) is checked like the cache:
    foreign, it is replaced by this process's private scratch directory, with one warning."""
    xdg = tmp_path / "xdg"
    host = xdg / "torch_neuronx" / f"inductor-{cache.version_tag()}"
    os.makedirs(host)
    os.chmod(host, 0o777)  # anyone can plant code in it
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    inductor_dirs._reset_for_tests()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chosen = inductor_dirs.host_dir()
    assert chosen == inductor_dirs.scratch_dir() != str(host)
    assert any("not using" in str(w.message) and str(host) in str(w.message) for w in caught)
    st = os.stat(chosen)
    assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0


def test_inductor_directories_point_into_checked_ones(tmp_path, monkeypatch):
    """During a compile Inductor's cache directory and its precompiled headers are ours."""
    from torch._inductor import codecache
    from torch._inductor.runtime.cache_dir_utils import cache_dir as inductor_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    inductor_dirs._reset_for_tests()
    with inductor_dirs.selected(None) as directory:
        assert inductor_cache_dir() == directory == inductor_dirs.scratch_dir()
        host = inductor_dirs.host_dir()
        assert host.startswith(str(tmp_path / "xdg"))
        assert codecache._HEADER_DIR == os.path.join(host, "precompiled_headers")


# ------------------------------------------------------------------ 2. damaged kernels


def test_truncated_kernel_without_manifest_is_rebuilt(tmp_path, host_cache, warm):
    # a copy of ``warm``'s compile cache, damaged here (the fixture's stays whole)
    env = _env(tmp_path, "warm", host_cache)
    shutil.copytree(warm[1]["TORCH_NEURONX_NEFF_CACHE_DIR"], env["TORCH_NEURONX_NEFF_CACHE_DIR"])
    base = env["TORCH_NEURONX_NEFF_CACHE_DIR"]
    kernels = glob.glob(os.path.join(base, "compile-*", "inductor", "**", "*.so"), recursive=True)
    assert kernels
    # no manifest vouches for (or against) anything: only the file itself can tell
    for entries in glob.glob(os.path.join(base, "compile-*", "entries")):
        shutil.rmtree(entries)
    for k in kernels:
        with open(k, "r+b") as f:
            f.truncate(os.path.getsize(k) // 10)  # dlopen dies of SIGBUS on this one
        assert kernel_check.problem(k) is not None
    r = child.run(COMPILE, env)
    assert r.returncode == 0, f"status {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    assert "corrupt entry" in r.stderr, r.stderr[-4000:]
    reports = int(r.stdout.split("REPORTS")[-1])
    assert reports >= 1
    rebuilt = glob.glob(os.path.join(base, "compile-*", "inductor", "**", "*.so"), recursive=True)
    assert rebuilt and all(kernel_check.problem(k) is None for k in rebuilt)


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda b: b[:100], "truncated"),
        (lambda b: b"garbage!" + b[8:], "not an ELF file"),
        (lambda b: b[:18] + bytes([0xB7, 0x00]) + b[20:], "another machine"),
    ],
    ids=["truncated", "corrupt", "wrong_machine"],
)
def test_kernel_check_names_what_is_wrong(tmp_path, damage, why):
    import sys

    import torch

    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so")
    if sys.platform != "linux" or not os.path.exists(lib):
        pytest.skip("needs torch's libc10.so (Linux) as a sample shared object")
    assert kernel_check.problem(lib) is None
    with open(lib, "rb") as f:
        data = f.read()
    bad = tmp_path / "k.so"
    bad.write_bytes(damage(data))
    assert why in (kernel_check.problem(str(bad)) or "")


def test_version_tree_that_is_a_symbolic_link_is_refused(tmp_path, monkeypatch):
    base, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    for d in (base, elsewhere):
        os.makedirs(d)
        os.chmod(d, 0o700)
    os.symlink(elsewhere, base / f"compile-{cache.version_tag()}")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(base))
    monkeypatch.delenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", raising=False)
    cache_dir._reset_for_tests()
    with pytest.raises(UnsafeCacheDirError, match="symbolic link"):
        cache.PersistentCache.current()
