"""runtime/patches.scoped (issue 27): a replacement that holds for a region, listed while it is
active and undone exactly on exit (nested, out of order, through an exception)."""

import types

import pytest

from torch_neuronx.runtime import patches


class _Owner:
    def method(self):
        return "original"


class _Child(_Owner):
    pass


def _scoped_targets() -> list[str]:
    return [p.target for p in patches.installed() if p.scoped]


def test_installed_lists_a_scoped_patch_only_while_it_is_active():
    mod = types.ModuleType("probe_mod")
    mod.fn = original = object()
    before = patches.installed()
    with patches.scoped(mod, "fn", "new", reason="probe") as previous:
        assert previous is original
        assert mod.fn == "new"
        listed = [p for p in patches.installed() if p.target == "probe_mod.fn"]
        assert len(listed) == 1 and listed[0].scoped and listed[0].reason == "probe"
        assert "(scoped)" in str(listed[0])
    assert mod.fn is original
    assert patches.installed() == before
    assert "probe_mod.fn" not in _scoped_targets()


def test_nested_scopes_restore_in_order():
    mod = types.ModuleType("probe_nest")
    mod.fn = "a"
    with patches.scoped(mod, "fn", "b", reason="outer") as prev_outer:
        with patches.scoped(mod, "fn", "c", reason="inner") as prev_inner:
            assert (prev_outer, prev_inner, mod.fn) == ("a", "b", "c")
            assert _scoped_targets().count("probe_nest.fn") == 2
        assert mod.fn == "b"
        assert _scoped_targets().count("probe_nest.fn") == 1
    assert mod.fn == "a"
    assert "probe_nest.fn" not in _scoped_targets()


def test_scopes_ending_out_of_order_still_restore_the_original():
    mod = types.ModuleType("probe_order")
    mod.fn = "a"
    outer = patches.scoped(mod, "fn", "b", reason="outer")
    inner = patches.scoped(mod, "fn", "c", reason="inner")
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)  # the outer region ends first: the inner one still holds
    assert mod.fn == "c"
    inner.__exit__(None, None, None)
    assert mod.fn == "a"
    assert "probe_order.fn" not in _scoped_targets()


def test_an_exception_restores():
    mod = types.ModuleType("probe_raise")
    mod.fn = "a"
    with pytest.raises(KeyError):
        with patches.scoped(mod, "fn", "b", reason="outer"):
            with patches.scoped(mod, "fn", "c", reason="inner"):
                raise KeyError("through both")
    assert mod.fn == "a"
    assert "probe_raise.fn" not in _scoped_targets()


def test_an_inherited_attribute_is_inherited_again():
    with patches.scoped(_Child, "method", lambda self: "wrapped", reason="probe") as previous:
        assert previous is _Owner.method
        assert _Child().method() == "wrapped"
    assert "method" not in _Child.__dict__  # not copied down from the base class
    assert _Child().method() == "original"


def test_a_scope_needs_a_reason_and_is_not_reentrant():
    mod = types.ModuleType("probe_misc")
    mod.fn = "a"
    with pytest.raises(ValueError, match="reason"):
        patches.scoped(mod, "fn", "b", reason="")
    scope = patches.scoped(mod, "fn", "b", reason="probe")
    with scope:
        with pytest.raises(RuntimeError, match="already active"):
            scope.__enter__()
    assert mod.fn == "a"
