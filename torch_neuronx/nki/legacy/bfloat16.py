"""``nl.bfloat16`` of the old language: torch's bfloat16 that NumPy asks about by name.

Old neuronxcc's ``nl.bfloat16`` was a NumPy dtype (ml_dtypes), so old kernels size buffers
with ``np.dtype(nl.bfloat16).itemsize``. NumPy has no bfloat16 of its own and ml_dtypes is not
a dependency here, so ``np.dtype()`` of it raises :class:`NkiUnsupportedError` naming the call
and the replacement instead of NumPy's bare ``TypeError``. Everywhere else it is
``torch.bfloat16``: equal to it, hashed like it, and turned into it by ``dtypes.normalize``.
"""

from __future__ import annotations

import torch

from ..errors import NkiUnsupportedError, fail


class LegacyBFloat16:
    """Compares and hashes as ``torch.bfloat16``; NumPy reads its ``dtype`` attribute."""

    __slots__ = ()
    _nki_torch_dtype = torch.bfloat16  # dtypes.normalize: the dtype tiles are made with
    itemsize = 2
    is_floating_point = True

    def __eq__(self, other) -> bool:
        return other is torch.bfloat16 or isinstance(other, LegacyBFloat16)

    def __hash__(self) -> int:
        return hash(torch.bfloat16)

    def __repr__(self) -> str:
        return "nl.bfloat16"

    @property
    def dtype(self):
        # np.dtype(x) reads x.dtype: the one place NumPy meets this object
        fail(  # fail() names the kernel line that called np.dtype
            "np.dtype(nl.bfloat16): NumPy has no bfloat16 (old neuronxcc used ml_dtypes, not "
            "installed here); use nl.bfloat16 directly (2 bytes: nl.bfloat16.itemsize) or "
            "torch.bfloat16",
            NkiUnsupportedError,
        )


bfloat16 = LegacyBFloat16()
