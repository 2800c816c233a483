"""The persistent compile cache holds code the process loads: it must never come from a
directory another user can write, and a cache that cannot be written must not stop
compiling (torch_neuronx/compile/cache_dir.py).

"Another user" is real when the tests run as root (the directory is chown-ed to another
uid); otherwise the process's effective uid is monkeypatched so that our own directories
look foreign. A read-only cache is real for a non-root user (chmod 0500); root ignores
permission bits, so there the failing writes are simulated, as is a full disk (ENOSPC) --
by making the write functions the cache and Inductor use raise, for paths in the cache only.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import warnings

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

from torch_neuronx.compile import cache, cache_dir, config, get_dynamo_metrics
from torch_neuronx.compile.cache_dir import CacheUnavailableWarning, UnsafeCacheDirError

ROOT = os.geteuid() == 0
OTHER_UID = 4242


@pytest.fixture(autouse=True)
def _fresh_state():
    cache_dir._reset_for_tests()
    yield
    cache_dir._reset_for_tests()


def _private_dir(path) -> str:
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o700)
    return str(path)


def _as_other_user(monkeypatch, path: str) -> None:
    """Make ``path`` belong to another user (really, as root; else by pretending to be
    another uid, which makes every directory we own foreign)."""
    if ROOT:
        os.chown(path, OTHER_UID, OTHER_UID)
    else:
        real = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: real + OTHER_UID)


# ------------------------------------------------------------------ where, and created how


def test_default_is_per_user_and_created_0700(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_NEURONX_NEFF_CACHE_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    base = config.cache_dir()
    user_dir = os.path.dirname(base)
    assert os.path.dirname(user_dir) == str(tmp_path)
    assert os.path.basename(user_dir).startswith("torchneuronx_")
    assert os.path.basename(user_dir) != "torchneuronx_"  # names the user
    old_umask = os.umask(0)  # the mode must not depend on the umask
    try:
        store = cache.PersistentCache.current()
    finally:
        os.umask(old_umask)
    assert store.enabled
    for d in (user_dir, base, store.root, store.inductor_dir, store.entries_dir):
        st = os.stat(d)
        assert stat.S_IMODE(st.st_mode) == 0o700, (d, oct(st.st_mode))
        assert st.st_uid == os.geteuid()


def test_configured_missing_dir_is_created_0700(tmp_path, monkeypatch):
    target = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(target))
    assert cache.PersistentCache.current().enabled
    for d in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d


def test_version_tree_left_open_by_an_older_version_is_made_private(tmp_path, monkeypatch):
    d = _private_dir(tmp_path / "old")
    os.chmod(d, 0o755)  # a cache directory may be readable by others...
    root = os.path.join(d, f"compile-{cache.version_tag()}")
    os.makedirs(os.path.join(root, "inductor"), mode=0o755)
    os.chmod(root, 0o755)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    assert cache.PersistentCache.current().enabled
    # ...but what the process loads is below a directory only we can enter
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700


# ------------------------------------------------------------------ refused directories


def test_dir_of_another_user_is_refused(tmp_path, monkeypatch):
    d = _private_dir(tmp_path / "theirs")
    _as_other_user(monkeypatch, d)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    with pytest.raises(UnsafeCacheDirError, match="another user") as info:
        cache.PersistentCache.current()
    assert "TORCH_NEURONX_NEFF_CACHE_DIR" in str(info.value)


@pytest.mark.parametrize(
    "mode, who", [(0o770, "its group"), (0o707, "others"), (0o777, "its group and others")]
)
def test_group_or_world_writable_dir_is_refused(tmp_path, monkeypatch, mode, who):
    d = _private_dir(tmp_path / "shared")
    os.chmod(d, mode)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    with pytest.raises(UnsafeCacheDirError, match=f"writable by {who}"):
        cache.PersistentCache.current()


def test_writable_parent_without_sticky_bit_is_refused(tmp_path, monkeypatch):
    parent = _private_dir(tmp_path / "open")
    os.chmod(parent, 0o777)  # anyone could rename our directory away and put theirs there
    d = _private_dir(tmp_path / "open" / "cache")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    with pytest.raises(UnsafeCacheDirError, match="without the sticky bit"):
        cache.PersistentCache.current()
    os.chmod(parent, 0o1777)  # like /tmp: others cannot touch what we own in it
    assert cache.PersistentCache.current().enabled


def test_parent_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    if not ROOT:
        pytest.skip("needs root to give a directory above ours to another user")
    parent = _private_dir(tmp_path / "theirs")
    os.chmod(parent, 0o755)
    d = _private_dir(tmp_path / "theirs" / "cache")
    os.chown(parent, OTHER_UID, OTHER_UID)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    with pytest.raises(UnsafeCacheDirError, match="owned by another user"):
        cache.PersistentCache.current()


def test_symlink_to_another_users_dir_is_refused(tmp_path, monkeypatch):
    target = _private_dir(tmp_path / "theirs")
    _as_other_user(monkeypatch, target)
    link = tmp_path / "mine"
    link.symlink_to(target)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(link))
    with pytest.raises(UnsafeCacheDirError, match="another user"):
        cache.PersistentCache.current()


def test_symlink_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    """A link another user owns can be re-pointed by them at any time, even at a safe
    directory of ours today."""
    if not ROOT:
        pytest.skip("needs root to create a symbolic link owned by another user")
    target = _private_dir(tmp_path / "mine")
    link = tmp_path / "link"
    link.symlink_to(target)
    os.lchown(link, OTHER_UID, OTHER_UID)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(link))
    with pytest.raises(UnsafeCacheDirError, match="symbolic link owned by another user"):
        cache.PersistentCache.current()


def test_subdirectory_replaced_by_a_symlink_is_refused(tmp_path, monkeypatch):
    d = _private_dir(tmp_path / "cache")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    store = cache.PersistentCache.current()
    elsewhere = _private_dir(tmp_path / "elsewhere")
    os.rename(store.inductor_dir, store.inductor_dir + ".old")
    os.symlink(elsewhere, store.inductor_dir)
    with pytest.raises(UnsafeCacheDirError, match="symbolic link"):
        cache.PersistentCache.current()


def test_unsafe_dir_fails_the_compile_with_the_reason(tmp_path, monkeypatch, device):
    d = _private_dir(tmp_path / "shared")
    os.chmod(d, 0o777)
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    f = torch.compile(lambda x: x + 1, backend="neuron")
    with pytest.raises(BackendCompilerFailed) as info:
        f(torch.ones(2, device=device))
    assert isinstance(info.value.inner_exception, UnsafeCacheDirError)
    assert "writable by" in str(info.value.inner_exception)
    assert os.listdir(d) == []  # nothing was written (or read) there
    # disabling the cache is the documented way out
    monkeypatch.setenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", "1")
    torch._dynamo.reset()
    torch.testing.assert_close(f(torch.ones(2, device=device)).cpu(), torch.full((2,), 2.0))


# ------------------------------------------------------------------ cannot write: still compiles


def _fail_writes_under(monkeypatch, root: str, err: int) -> None:
    """Every write of the cache and of Inductor into ``root`` fails with ``err``."""
    from torch._inductor import codecache

    real_root = os.path.realpath(root)

    def inside(path) -> bool:
        return os.path.realpath(str(path)).startswith(real_root)

    def failing(real):
        def write(path, *args, **kwargs):
            if inside(path):
                raise OSError(err, os.strerror(err), str(path))
            return real(path, *args, **kwargs)

        return write

    monkeypatch.setattr(codecache, "write_atomic", failing(codecache.write_atomic))
    monkeypatch.setattr(cache, "_write_atomic", failing(cache._write_atomic))
    real_probe = cache_dir._probe_write
    monkeypatch.setattr(cache_dir, "_probe_write", failing(real_probe))


def _compile_twice_and_count_warnings(device, fn):
    """Two graphs (two shapes); returns the CacheUnavailableWarnings raised."""
    f = torch.compile(fn, backend="neuron")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (3, 4):
            x = torch.randn(n)
            torch.testing.assert_close(f(x.to(device)).cpu(), fn(x), rtol=1e-5, atol=1e-6)
    return [w for w in caught if issubclass(w.category, CacheUnavailableWarning)]


def _read_only(monkeypatch, d: str) -> None:
    if ROOT:  # root writes through permission bits: simulate the file system's answer
        _fail_writes_under(monkeypatch, d, errno.EROFS)
    else:
        os.chmod(d, 0o500)
        for sub, _, _ in os.walk(d):
            os.chmod(sub, 0o500)


def test_read_only_cache_dir_compiles_with_one_warning(tmp_path, monkeypatch, device):
    d = _private_dir(tmp_path / "ro")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    assert cache.PersistentCache.current().enabled  # the tree exists (an old cache)
    cache_dir._reset_for_tests()
    _read_only(monkeypatch, d)
    try:
        warned = _compile_twice_and_count_warnings(device, lambda x: torch.sin(x) * 3 - x)
    finally:
        os.chmod(d, 0o700)
    assert len(warned) == 1, [str(w.message) for w in warned]
    assert d in str(warned[0].message)
    assert [r["cache"] for r in get_dynamo_metrics()] == ["disabled", "disabled"]


def test_full_disk_during_compile_compiles_with_one_warning(tmp_path, monkeypatch, device):
    """The probe passes (a few bytes fit), then Inductor's first kernel write fails with
    ENOSPC in the middle of the compile: the graph is compiled again without the cache."""
    d = _private_dir(tmp_path / "full")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    from torch._inductor import codecache

    real_write = codecache.write_atomic
    real_root = os.path.realpath(d)

    def full(path, *args, **kwargs):
        if os.path.realpath(str(path)).startswith(real_root):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_write(path, *args, **kwargs)

    monkeypatch.setattr(codecache, "write_atomic", full)
    warned = _compile_twice_and_count_warnings(device, lambda x: torch.cos(x) * 5 + x)
    assert len(warned) == 1, [str(w.message) for w in warned]
    assert "No space left on device" in str(warned[0].message)
    assert [r["cache"] for r in get_dynamo_metrics()] == ["disabled", "disabled"]


def test_full_disk_for_the_manifest_only_keeps_the_graph(tmp_path, monkeypatch, device):
    d = _private_dir(tmp_path / "full_manifest")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", d)
    real = cache._write_atomic

    def full(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(cache, "_write_atomic", full)
    warned = _compile_twice_and_count_warnings(device, lambda x: torch.exp(x) - 2 * x)
    monkeypatch.setattr(cache, "_write_atomic", real)
    assert len(warned) == 1, [str(w.message) for w in warned]


def test_write_failure_classification(tmp_path):
    root = str(tmp_path)
    inside = os.path.join(root, "inductor", "x.cpp")
    assert cache_dir.is_write_failure(OSError(errno.ENOSPC, "full", inside), root)
    assert cache_dir.is_write_failure(OSError(errno.EROFS, "ro", inside), root)
    # the toolchain's report of a full disk, wrapped by Inductor
    err = RuntimeError("C++ compile error\n/usr/bin/ld: final link failed: No space left on device")
    assert (
        cache_dir.is_write_failure(RuntimeError("compile failed").with_traceback(None), root)
        is False
    )
    assert cache_dir.is_write_failure(err, root)
    # a permission error elsewhere is not the cache's
    assert not cache_dir.is_write_failure(OSError(errno.EACCES, "denied", "/etc/x"), root)
    # a genuine compile error is not a write failure
    assert not cache_dir.is_write_failure(ValueError("bad graph"), root)
