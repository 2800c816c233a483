"""``nki.typing``: type annotations of NKI kernels (``from nki.typing import tensor``).

Annotations do not change how a kernel runs; ``tensor`` and ``tensor[shape, dtype]`` are
accepted so that kernels annotated as in AWS's documentation import and run unchanged.
"""

from __future__ import annotations

from .tensor import NkiTensor


class tensor(NkiTensor):  # noqa: N801 - NKI's name
    """An NKI tensor annotation; ``tensor[shape, dtype]`` is the same annotation."""

    def __class_getitem__(cls, item):
        return cls


__all__ = ["tensor"]
