"""Persistent compile cache of the ``neuron`` backend.

Layout under ``TORCH_NEURONX_NEFF_CACHE_DIR`` (default per user,
``<tempdir>/torchneuronx_<user>/neff_cache``; cache_dir.py creates it 0700 and refuses a
directory another user can write, since the cache holds code this process loads)::

    compile-<version tag>/            one tree per (torch, torch_neuronx, python, format)
        inductor/                     Inductor's FX-graph cache and kernel code cache
        entries/<k[:2]>/<k>.json      our manifest for graph key k: every artifact file the
                                      graph needs, with its size and sha256

The graph key ``k`` hashes the lowered ATen graph, its input metadata, the compile kind
(forward/backward/inference), the Inductor options we pass, the backend options and the
version tag. Inductor's own FX-graph cache (keyed by graph, Inductor config and versions)
does the actual reuse: on a hit, no code is generated and no C++ is compiled.

Integrity: before compiling a graph whose manifest exists, every listed file is checked
(size + sha256). A missing, truncated or altered artifact -- or a corrupt manifest -- is
reported once (a warning) and deleted, so Inductor rebuilds it. If loading an entry still
fails, the files named in the error (and the graph's artifacts) are deleted and the graph is
rebuilt once more; a real compile error is re-raised unchanged.

Concurrency: Inductor writes cache files atomically (temporary file + rename) and compiles
kernels under file locks; manifests are written the same way. Several processes compiling
the same model therefore never see partial files, and last-writer-wins on identical content.

Above this per-ATen-graph level, ``graph_session`` lets PyTorch's AOTAutogradCache serve a
whole Dynamo graph (partitioned, compiled forward/backward; see aot_cache.py), with a
manifest of its own verified the same way.

``TORCH_NEURONX_NEFF_DISABLE_CACHE=1`` disables reading and writing the persistent cache at
both levels (Inductor then compiles in a throw-away directory). So does a cache directory that
cannot be written (read-only, full disk, quota): found before a compile (cache_dir.usable) or
during one (a write fails: :class:`CacheWriteFailed`, and the backend compiles that graph
again without the cache), it is reported by one warning and not used again in the process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
import re
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import torch

from torch_neuronx.runtime import env

from . import cache_dir, config, inductor_dirs

log = logging.getLogger("torch_neuronx.compile")

# the layout version and the tag of compile-<tag> (cache_dir.py: where the cache lives)
CACHE_FORMAT = cache_dir.CACHE_FORMAT
version_tag = cache_dir.version_tag

#: (key, description) of every corrupt entry detected in this process (for tests/tools)
corruption_reports: list[tuple[str, str]] = []
_reported: set = set()


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _report(key: str, detail: str) -> None:
    corruption_reports.append((key, detail))
    if (key, detail) in _reported:
        return
    _reported.add((key, detail))
    log.warning(
        "neuron compile cache: corrupt entry %s detected (%s); rebuilding it", key[:16], detail
    )


def _write_atomic(path: str, data: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _describe_input(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"T({tuple(x.shape)},{tuple(x.stride())},{x.storage_offset()},{x.dtype},{x.device.type},{x.requires_grad})"
    return f"V({type(x).__name__}:{x!r})"


class CacheWriteFailed(Exception):
    """A write into the persistent cache failed (full disk, read-only file system) while a
    graph was being compiled. The cache is marked unusable (one warning) and the backend
    compiles the whole Dynamo graph again without it (backend._compile_static)."""


#: the directories the cache uses under its version-specific root
SUBDIRS = ("inductor", "entries")


class PersistentCache:
    def __init__(self, enabled: bool, root: str, base: str | None = None):
        self.enabled = enabled
        self.root = root
        self.base = base or os.path.dirname(root)
        self.inductor_dir = os.path.join(root, "inductor")
        self.entries_dir = os.path.join(root, "entries")

    @classmethod
    def current(cls) -> PersistentCache:
        """The cache the next compile uses: disabled by the environment, or when its
        directory cannot be written; an unsafe directory raises UnsafeCacheDirError."""
        base = config.cache_dir()
        root = os.path.join(base, f"compile-{version_tag()}")
        if config.cache_disabled():
            return cls(enabled=False, root=root, base=base)
        return cls(enabled=cache_dir.usable(base, root, SUBDIRS), root=root, base=base)

    @classmethod
    def disabled(cls) -> PersistentCache:
        """No persistent cache (a compile retried after CacheWriteFailed)."""
        base = config.cache_dir()
        return cls(enabled=False, root=os.path.join(base, f"compile-{version_tag()}"), base=base)

    def _write_failed(self, exc: BaseException) -> bool:
        """If ``exc`` is a failed write into this cache: mark it unusable (one warning)."""
        if not cache_dir.is_write_failure(exc, self.root):
            return False
        cache_dir.mark_unusable(self.root, exc, self.base)
        return True

    # ------------------------------------------------------------------ keys
    def graph_key(self, gm, inputs, kind: str, kwargs: dict[str, Any], tag: str) -> str:
        h = hashlib.sha256()
        h.update(version_tag().encode())
        h.update(kind.encode())
        h.update(tag.encode())
        h.update(repr(sorted(kwargs.items())).encode())
        h.update(gm.code.encode())
        for x in inputs:
            h.update(_describe_input(x).encode())
        return h.hexdigest()

    def manifest_path(self, key: str) -> str:
        return os.path.join(self.entries_dir, key[:2], key + ".json")

    # ------------------------------------------------------------------ env
    @contextlib.contextmanager
    def _inductor_cache_dir(self):
        """Inductor's directories for a compile against this cache (inductor_dirs.py)."""
        with inductor_dirs.selected(self.inductor_dir if self.enabled else None):
            yield

    # ------------------------------------------------------------------ integrity
    def _load_manifest(self, key: str):
        path = self.manifest_path(key)
        if not os.path.exists(path):
            return None
        try:
            with open(path) as f:
                manifest = json.load(f)
            if manifest.get("key") != key or not isinstance(manifest.get("files"), dict):
                raise ValueError("manifest does not describe this graph")
            return manifest
        except Exception as exc:
            _report(key, f"unreadable manifest: {type(exc).__name__}")
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None

    def verify(self, key: str) -> bool:
        """Check the artifacts of ``key``; delete bad ones. True if the entry was intact."""
        manifest = self._load_manifest(key)
        if manifest is None:
            return False
        bad = []
        for rel, (size, digest) in manifest["files"].items():
            path = os.path.join(self.inductor_dir, rel)
            try:
                if os.path.getsize(path) != size or _sha256_file(path) != digest:
                    bad.append((rel, "altered or truncated"))
            except FileNotFoundError:
                bad.append((rel, "missing"))
        if not bad:
            return True
        _report(key, ", ".join(f"{rel}: {why}" for rel, why in bad))
        self._purge(key, [rel for rel, _ in bad], manifest=True)
        return False

    def _purge(self, key: str, rels, manifest: bool) -> None:
        for rel in rels:
            path = os.path.join(self.inductor_dir, rel)
            with contextlib.suppress(OSError):
                os.unlink(path)
        if manifest:
            with contextlib.suppress(OSError):
                os.unlink(self.manifest_path(key))

    def _artifact_files(self, compiled, new_modules) -> list[str]:
        files = set()
        key = getattr(compiled, "_fx_graph_cache_key", None)
        if key:
            d = os.path.join(self.inductor_dir, "fxgraph", key[1:3], key)
            if os.path.isdir(d):
                files.update(os.path.join(d, f) for f in os.listdir(d) if not f.startswith("."))
        for path in new_modules:
            if path:
                files.add(path)
        root = os.path.realpath(self.inductor_dir)
        out = []
        for f in files:
            real = os.path.realpath(f)
            if real.startswith(root + os.sep) and os.path.isfile(real):
                out.append(os.path.relpath(real, root))
        return sorted(out)

    def _record(self, key: str, compiled, new_modules) -> None:
        self._record_files(key, self._artifact_files(compiled, new_modules))

    def _record_files(self, key: str, paths) -> None:
        root = os.path.realpath(self.inductor_dir)
        rels = set()
        for p in paths:
            real = os.path.realpath(p if os.path.isabs(p) else os.path.join(root, p))
            if real.startswith(root + os.sep) and os.path.isfile(real):
                rels.add(os.path.relpath(real, root))
        if not rels:
            return
        files = {}
        for rel in sorted(rels):
            path = os.path.join(self.inductor_dir, rel)
            try:
                files[rel] = [os.path.getsize(path), _sha256_file(path)]
            except OSError:
                continue
        manifest = {"key": key, "version_tag": version_tag(), "files": files}
        try:
            _write_atomic(self.manifest_path(key), json.dumps(manifest, sort_keys=True))
        except OSError as exc:
            # the compiled graph is fine; without its manifest the entry is simply not
            # verified (and so rebuilt) by a later process
            if not self._write_failed(exc):
                raise

    # ------------------------------------------------------------------ compile
    def compile(self, key: str, build: Callable[[], Any]):
        """Run ``build`` (Inductor) against the persistent cache. Returns (compiled, status)
        with status 'hit', 'miss' or 'disabled'."""
        from torch._dynamo.utils import counters
        from torch._inductor import config as inductor_config

        if not self.enabled:
            # Inductor's throw-away directories then go in this process's private scratch
            isa_config = self._vec_isa_config()
            with (
                self._inductor_cache_dir(),
                inductor_config.patch(force_disable_caches=True, **isa_config),
            ):
                return build(), "disabled"

        def attempt():
            """``build()`` with the modules and cache hits counted from just before it; a
            failed write into this cache surfaces as CacheWriteFailed."""
            before = _module_snapshot()
            hits0 = counters["inductor"]["fxgraph_cache_hit"]
            try:
                return build(), before, hits0
            except Exception as exc:
                if self._write_failed(exc):
                    raise CacheWriteFailed(str(exc)) from exc
                raise

        isa_config = self._vec_isa_config()  # before our cache directory is selected
        with self._inductor_cache_dir(), inductor_config.patch(fx_graph_cache=True, **isa_config):
            intact = self.verify(key)
            try:
                compiled, before, hits0 = attempt()
            except CacheWriteFailed:
                raise
            except Exception as exc:
                rels = self._paths_in_error(exc)
                if not rels and not os.path.exists(self.manifest_path(key)):
                    raise  # nothing of ours was read: a genuine compile error
                _report(key, f"failed to load: {type(exc).__name__}: {str(exc)[:200]}")
                manifest = self._load_manifest(key)
                if manifest is not None:
                    rels = list(rels) + list(manifest["files"])
                self._purge(key, rels, manifest=True)
                _clear_inductor_memory_caches()
                compiled, before, hits0 = attempt()
            hit = counters["inductor"]["fxgraph_cache_hit"] > hits0
            new_modules = _module_snapshot() - before
            if not (hit and intact):
                self._record(key, compiled, new_modules)
            return compiled, ("hit" if hit else "miss")

    @contextlib.contextmanager
    def graph_session(self, key: str, aot_tag):
        """One backend call (a whole Dynamo graph): selects the cache directory and Inductor
        settings once, and -- when ``aot_tag`` is given -- lets PyTorch's AOTAutogradCache
        serve the partitioned, compiled graphs (see aot_cache.py). ``key`` names our manifest
        of everything the entry needs (AOT entry file, generated modules, kernels), verified
        before the lookup like the per-graph manifests. Yields a :class:`GraphSession`
        whose ``aot`` is 'hit', 'miss', 'bypass' or 'disabled' afterwards."""
        from torch._inductor import config as inductor_config

        from . import aot_cache

        session = GraphSession()
        if not self.enabled:
            isa_config = self._vec_isa_config()
            with (
                self._inductor_cache_dir(),
                inductor_config.patch(force_disable_caches=True, **isa_config),
                aot_cache.disabled(),
            ):
                yield session
            return
        isa_config = self._vec_isa_config()
        aot_ctx = aot_cache.enabled(aot_tag) if aot_tag else aot_cache.disabled()
        with (
            self._inductor_cache_dir(),
            aot_ctx,
            inductor_config.patch(fx_graph_cache=True, **isa_config),
        ):
            if not aot_tag:
                yield session
                return
            intact = self.verify(key)
            before_entries = self._aot_entry_files()
            before_modules = _module_snapshot()
            hit0, miss0, bypass0 = aot_cache.counters()
            yield session
            if cache_dir.is_unusable(self.root):
                return  # a write failed meanwhile (warned): record nothing more here
            if session.unsaved:
                # not saved on purpose (its bypass is counted too): no entry, no manifest,
                # and no "failed to load" report when the next call misses again
                session.aot = "bypass"
                return
            hit, miss, bypass = aot_cache.counters()
            if bypass > bypass0:  # counted after a "hit" whose load then failed
                session.aot = "bypass"
            elif hit > hit0:
                session.aot = "hit"
            else:
                session.aot = "miss"
            if session.aot == "bypass" and intact:
                # the entry verified intact yet could not be used (e.g. a kernel missing
                # from the manifest): report it, drop it so the next process rebuilds it
                _report(key, "AOT cache entry failed to load")
                manifest = self._load_manifest(key)
                if manifest is not None:
                    self._purge(key, list(manifest["files"]), manifest=True)
                return
            if session.aot == "hit" and intact:
                return
            new_entries = self._aot_entry_files() - before_entries
            # on a hit without a manifest, which entry file was read is unknown: the
            # manifest then lists the kernels only
            files = set(new_entries) | (_module_snapshot() - before_modules)
            for compiled in session.compiled:
                files.update(self._artifact_files(compiled, ()))
            self._record_files(key, files)

    def _aot_entry_files(self) -> set:
        root = os.path.join(self.inductor_dir, "aotautograd")
        out = set()
        for dirpath, _, names in os.walk(root):
            out.update(os.path.join(dirpath, n) for n in names if not n.startswith("."))
        return out

    def _vec_isa_config(self) -> dict[str, Any]:
        """Inductor probes the CPU's vector ISAs (compiling and loading a test program per
        ISA, in subprocesses) in every process and in every new cache directory: tens of
        seconds on a busy 2-core host. The result is a property of the machine, toolchain
        and torch build, so it is recorded once per host (``~/.cache/torch_neuronx``, or
        ``$XDG_CACHE_HOME``); when every ISA the CPU reports passed, compiles (cold and warm
        alike, so graph keys agree) pass ``cpp.vec_isa_ok=True`` instead of probing."""
        global _vec_isa_ok
        if _vec_isa_ok is None:
            # the probes build and load test programs: in the checked host directory
            with inductor_dirs.probing():
                _vec_isa_ok = _probe_vec_isa()
                if _vec_isa_ok:
                    _prime_isa_extension_probes()
        return {"cpp.vec_isa_ok": True} if _vec_isa_ok else {}

    def _paths_in_error(self, exc: BaseException) -> list[str]:
        root = os.path.realpath(self.inductor_dir)
        rels = []
        seen = set()
        e = exc
        while e is not None and id(e) not in seen:
            seen.add(id(e))
            for m in re.findall(r"(/[^\s'\":]+)", str(e)):
                real = os.path.realpath(m)
                if real.startswith(root + os.sep) and os.path.isfile(real):
                    rels.append(os.path.relpath(real, root))
            e = e.__cause__ or e.__context__
        return rels


class GraphSession:
    """What happened to one Dynamo graph in the persistent cache."""

    def __init__(self):
        self.aot = "disabled"
        self.compiled: list[Any] = []  # Inductor outputs compiled (or FX-cache loaded) here
        # why the graph's AOT entry is not saved (aot_cache.unsafe_to_save), '' when it is
        self.unsaved = ""


_vec_isa_ok = None


def _host_record_path() -> str:
    base = env.text("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    import shutil

    cxx = env.text("CXX") or shutil.which("g++") or shutil.which("c++") or "none"
    try:
        cxx_id = f"{os.path.realpath(cxx)}:{os.path.getmtime(os.path.realpath(cxx))}"
    except OSError:
        cxx_id = cxx
    ident = "|".join(
        [torch.__version__, platform.machine(), _cpu_flags_digest(), cxx_id, str(CACHE_FORMAT)]
    )
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return os.path.join(base, "torch_neuronx", f"vec_isa-{digest}.json")


def _probe_vec_isa() -> bool:
    path = _host_record_path()
    try:
        with open(path) as f:
            data = json.load(f)
        if isinstance(data.get("all_ok"), bool):
            return data["all_ok"]
    except Exception:
        pass
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        from torch._inductor import cpu_vec_isa

        flags = cpu_vec_isa.x86_isa_checker()
        candidates = [
            isa
            for isa in cpu_vec_isa.supported_vec_isa_list
            if all(flag in flags for flag in str(isa).split())
        ]
        valid = cpu_vec_isa.valid_vec_isa_list()
        all_ok = bool(candidates) and len(valid) == len(candidates)
    except Exception:
        return False
    with contextlib.suppress(OSError):
        _write_atomic(path, json.dumps({"all_ok": all_ok, "isas": [str(i) for i in valid]}))
    return all_ok


def _cpu_flags_digest() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    return "unknown"


def _prime_isa_extension_probes() -> None:
    """The AVX-512 subclasses additionally probe bf16/VNNI/AMX support by compiling test
    programs into the *current* Inductor cache directory (memoised per process). Run those
    probes once per process here, in the checked per-host directory (inductor_dirs.probing),
    so they are built once per host instead of in every new TORCH_NEURONX_NEFF_CACHE_DIR."""
    try:
        from torch._inductor import config as inductor_config
        from torch._inductor import cpu_vec_isa

        with inductor_config.patch({"cpp.vec_isa_ok": True}):
            for isa in cpu_vec_isa.valid_vec_isa_list():
                bool(isa)
            cpu_vec_isa.pick_vec_isa()
    except Exception:  # pragma: no cover - best effort; Inductor probes lazily otherwise
        pass


def _module_snapshot() -> set:
    """Paths of the generated modules (kernel .so, wrapper .py) loaded in this process."""
    paths = set()
    try:
        from torch._inductor.codecache import CppPythonBindingsCodeCache, PyCodeCache

        for name in list(CppPythonBindingsCodeCache._loaded_module_names):
            mod = sys.modules.get(name)
            if mod is not None and getattr(mod, "__file__", None):
                paths.add(mod.__file__)
        for mod in list(getattr(PyCodeCache, "modules", [])):
            if getattr(mod, "__file__", None):
                paths.add(mod.__file__)
    except Exception:  # pragma: no cover - internal API drift
        pass
    return paths


def _clear_inductor_memory_caches() -> None:
    try:
        from torch._inductor.codecache import CppPythonBindingsCodeCache, PyCodeCache

        CppPythonBindingsCodeCache.cache_clear()
        PyCodeCache.cache_clear(purge=False)
    except Exception:  # pragma: no cover
        pass
