"""``NkiTensor.rearrange``: einops-style patterns as a chain of free views.

``t.rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4})`` splits each grouped source
dim (``reshape_dim``, sizes from ``fixed_sizes``, at most one inferred), reorders the named
dims (``permute``) and merges each grouped destination dim (``flatten_dims``), as AWS's
``NkiTensor.rearrange`` page describes and AWS's nki-library ``TensorView.rearrange`` does
(https://github.com/aws-neuron/nki-library, ``kernel_utils/tensor_view.py``). Every step keeps
the tensor's rules (partition dim of on-chip tensors, contiguity of merged dims).
"""

from __future__ import annotations

from .errors import fail


def _names(pattern, where: str) -> list:
    out = []
    for p in pattern:
        group = p if isinstance(p, (tuple, list)) else (p,)
        for n in group:
            if not isinstance(n, str):
                fail(f"rearrange: {where} pattern entries are names (str) or tuples of names")
            out.append(n)
    if len(set(out)) != len(out):
        fail(f"rearrange: a name appears twice in the {where} pattern {tuple(pattern)}")
    return out


def rearranged(t, src_pattern, dst_pattern, fixed_sizes=None):
    fixed = dict(fixed_sizes or {})
    src = _names(src_pattern, "source")
    dst = _names(dst_pattern, "destination")
    if sorted(src) != sorted(dst):
        fail(
            f"rearrange: the source names {src} and destination names {dst} must be the same "
            f"(rearrange neither adds nor drops dims)"
        )
    if len(src_pattern) != t.ndim:
        fail(f"rearrange: the source pattern has {len(src_pattern)} dims; the tensor {t.ndim}")
    unknown = [k for k in fixed if k not in src]
    if unknown:
        fail(f"rearrange: fixed_sizes names {unknown}, which are not in the pattern")
    dim = 0
    for p in src_pattern:
        if isinstance(p, (tuple, list)):
            t = t.reshape_dim(dim, tuple(int(fixed.get(n, -1)) for n in p))
            dim += len(p)
        else:
            if p in fixed and int(fixed[p]) != t.shape[dim]:
                fail(f"rearrange: '{p}' has size {t.shape[dim]}, fixed_sizes says {fixed[p]}")
            dim += 1
    t = t.permute(tuple(src.index(n) for n in dst))
    dim = 0
    for p in dst_pattern:
        if isinstance(p, (tuple, list)):
            t = t.flatten_dims(dim, dim + len(p) - 1)
        dim += 1
    return t
