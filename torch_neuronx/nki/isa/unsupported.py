"""Documented ``nki.isa`` names this simulator does not implement: calling one raises
:class:`NkiUnsupportedError`."""

from __future__ import annotations

from ..errors import NkiUnsupportedError


def _unsupported(name, why=""):
    def fn(*args, **kwargs):
        raise NkiUnsupportedError(
            f"nki.isa.{name} is not simulated by torch_neuronx.nki{why}; see docs/nki.md for the "
            f"covered instructions"
        )

    fn.__name__ = name
    fn.__doc__ = f"nki.isa.{name} (not simulated)"
    fn.not_simulated = True  # read by the generated coverage table (torch-neuronx nki-coverage)
    return fn


# name -> a function that raises NkiUnsupportedError (nki.isa exports each under its name)
NOT_SIMULATED = {
    _n: _unsupported(_n, _why)
    for _n, _why in [
        # every documented 2.33 instruction is simulated; a name added here is listed as not
        # covered by the generated coverage table
    ]
}
