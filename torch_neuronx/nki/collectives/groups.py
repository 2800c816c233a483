"""``nki.collectives.ReplicaGroup``: the sub-groups of ranks a collective runs over.

AWS's page: "Defines a group of ranks that participate in a collective operation. Sub-groups
represented by lists of ranks should not have any overlap."
(https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.collectives.ReplicaGroup.html);
kernels build it as ``ReplicaGroup([[0, 1, 2, 3]])`` (aws-neuron/nki-library,
test/integration/nkilib/experimental/collectives/test_collectives.py). The order of a
sub-group's list is the ranks' order in the collective: the concatenation order of
``all_gather``, the chunk order of ``reduce_scatter``/``all_to_all`` and the ring of the
implicit collective permutes.
"""

from __future__ import annotations

from ..errors import NkiValidationError
from ..language import NKIObject


class ReplicaGroup(NKIObject):
    """Sub-groups of ranks (lists of rank ids, no rank in two of them); an ``NKIObject`` as in
    AWS's stub."""

    __slots__ = ("replica_groups",)

    def __init__(self, replica_groups):
        groups = []
        try:
            for g in replica_groups:
                groups.append(tuple(_rank(r) for r in g))
        except TypeError:
            raise NkiValidationError(
                f"ReplicaGroup takes a list of lists of rank ids (e.g. ReplicaGroup([[0, 1]])), "
                f"got {replica_groups!r}"
            ) from None
        if not groups or any(not g for g in groups):
            raise NkiValidationError(
                f"ReplicaGroup needs at least one non-empty list of ranks, got {replica_groups!r}"
            )
        seen = {}
        for i, g in enumerate(groups):
            for r in g:
                if r in seen:
                    where = "twice in one sub-group" if seen[r] == i else "in two sub-groups"
                    raise NkiValidationError(
                        f"ReplicaGroup {replica_groups!r}: rank {r} is {where}; sub-groups "
                        f"must not overlap"
                    )
                seen[r] = i
        self.replica_groups = [list(g) for g in groups]

    def group_of(self, rank: int):
        """The sub-group (a tuple, in order) that holds ``rank``, or None."""
        for g in self.replica_groups:
            if rank in g:
                return tuple(g)
        return None

    def __eq__(self, other):
        return isinstance(other, ReplicaGroup) and other.replica_groups == self.replica_groups

    def __hash__(self):
        return hash(tuple(map(tuple, self.replica_groups)))

    def __repr__(self):
        return f"ReplicaGroup({self.replica_groups})"


def _rank(r) -> int:
    if isinstance(r, bool) or not isinstance(r, int) and not hasattr(r, "__index__"):
        raise TypeError(r)
    v = int(r)
    if v < 0:
        raise NkiValidationError(f"ReplicaGroup: rank ids are >= 0, got {v}")
    return v
