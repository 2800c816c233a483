"""Random numbers of a compiled graph, drawn on the neuron device as graph inputs.

Inductor's joint-graph passes turn ``rand``/``randn``/``randint`` (and so dropout's
``rand_like(x) > p``) into ``inductor_random``/``inductor_randint`` over per-graph seeds
(``inductor_seeds``). On the host its C++ code then computes every random number with a
scalar Philox loop (``normalized_rand_cpu``), about 12 ns per element on this machine, and
would create the seeds from PyTorch's CPU generator. Both are wrong for the emulated device:

* speed: a nanoGPT-size training step with dropout spent about half of its compiled forward
  in that loop (13 of 25 ms CPU; eager's whole forward took 19 ms, drawing its masks with
  CPU's ``bernoulli_`` kernel at about 5 ns per element); see BENCHMARKS.md, "nanoGPT loop";
* generator: eager neuron random ops draw from the device's generator
  (``torch.neuron.manual_seed``), and compiled ones must too.

So each random node becomes an extra graph input (after the graph's own) that the executable
draws at every call on the neuron device with the eager op that eager mode runs
(:meth:`Draw.draw`), in graph order:

* ``gt(rand, p)`` -- dropout's keep mask, also with a dtype conversion of ``rand`` in between
  (``rand_like`` of a bfloat16 activation) -- becomes a ``bool`` mask drawn as eager's
  ``native_dropout`` draws it: ``empty(bool).bernoulli_(1 - p)`` (``lt(rand, p)``:
  ``bernoulli_(p)``). Same generator, same kernel, same order: compiled dropout masks are
  eager's, bit for bit, given the same seed (tests/compile/test_random.py). Only the compares
  that dropout's and ``bernoulli_(p)``'s decompositions write (eager draws those as one
  bernoulli mask); a user's own ``torch.rand(...) < p`` is drawn as ``rand``, as eager draws
  it (it was drawn as a mask before, and differed from eager);
* other ``inductor_random`` nodes become ``torch.rand``/``torch.randn``,
  ``inductor_randint`` nodes ``torch.randint``, each in the dtype the program asked for
  (Inductor's prims draw float32 and int64 and convert; eager draws bfloat16, float16 and
  float64 numbers directly, other numbers than a converted float32 draw: ``_own_convert``);
* seeds still used afterwards (a random node this pass does not take, e.g. symbolic sizes)
  become one ``int64`` seed input drawn on the device, which Inductor's Philox code reads.

Layouts. ``rand_like``/``randn_like``/``randint_like`` of a dense tensor that is not
contiguous (transposed, permuted, channels_last) draw, in eager, into ``empty_like(x)``: a
tensor with ``x``'s strides, filled by the kernel in memory order (and CPU's kernels take
another algorithm for a non-contiguous tensor: ``normal_`` draws element by element instead of
its vectorised Box-Muller over blocks of 16). Inductor's decomposition writes them as a
contiguous draw of the physical shape, ``permute``d and ``clone``d; that chain becomes one
input drawn into ``empty_strided`` with the clone's strides, as eager draws it. Dropout's mask
of such a tensor is drawn contiguous, as eager's ``native_dropout`` draws it
(``empty_like(input, LEGACY_CONTIGUOUS_MEMORY_FORMAT).bernoulli_``).

The draws run through the eager dispatcher (one op each, tens of microseconds), which is
cheap next to the random numbers themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx

from . import legality

#: node.meta["custom"] key marking the nodes of Inductor's decompositions of RANDOM_LIKE_OPS
#: (compile/decompositions.py): their permute is a *_like layout chain, not the user's
RANDOM_LIKE = "neuron_random_like"
RANDOM_LIKE_OPS = (
    torch.ops.aten.rand_like.default,
    torch.ops.aten.randn_like.default,
    torch.ops.aten.randint_like.default,
    torch.ops.aten.randint_like.low_dtype,
)

#: the ops whose decomposition's ``rand < p`` / ``rand > p`` eager draws as one bernoulli
#: mask: dropout's keep mask, and ``bernoulli_(p)`` (timm's drop_path, Dropout2d)
_MASK_ORIGINS = ("aten::native_dropout", "aten::bernoulli")

#: the range Inductor's RandomSeeds draws seeds from
_SEED_LOW = torch.iinfo(torch.int64).min
_SEED_HIGH = torch.iinfo(torch.int64).max


@dataclass(frozen=True)
class Draw:
    """One random graph input, drawn on the device at each call (pickled with the
    executable into the AOT-level cache)."""

    kind: str  # "mask" | "rand" | "randn" | "randint" | "seeds"
    size: tuple[int, ...]
    dtype: torch.dtype
    p: float = 0.0  # mask: probability of True
    low: int = 0  # randint, seeds
    high: int = 0
    # rand, randn, randint: the strides of a *_like draw of a non-contiguous dense tensor;
    # mask: the strides the graph reads the (contiguously drawn) mask in
    stride: tuple[int, ...] | None = None

    def draw(self, device: torch.device) -> torch.Tensor:
        if self.kind == "mask":
            # eager native_dropout's mask (csrc/eager/kernel.cpp: run_random_without_generator)
            mask = torch.empty(self.size, dtype=torch.bool, device=device).bernoulli_(self.p)
            if self.stride is None:
                return mask
            out = torch.empty_strided(self.size, self.stride, dtype=torch.bool, device=device)
            return out.copy_(mask)
        if self.stride is not None:  # eager's *_like: empty_like(x) filled in memory order
            out = torch.empty_strided(self.size, self.stride, dtype=self.dtype, device=device)
            if self.kind == "rand":
                return out.uniform_()
            if self.kind == "randn":
                return out.normal_()
            if self.kind == "randint":
                return out.random_(self.low, self.high)
        if self.kind == "rand":
            return torch.rand(self.size, dtype=self.dtype, device=device)
        if self.kind == "randn":
            return torch.randn(self.size, dtype=self.dtype, device=device)
        if self.kind in ("randint", "seeds"):
            return torch.randint(self.low, self.high, self.size, dtype=self.dtype, device=device)
        raise ValueError(f"neuron compiled graph: unknown random input kind {self.kind!r}")


def _static_size(size) -> tuple[int, ...] | None:
    if not isinstance(size, (list, tuple)) or not all(type(s) is int for s in size):
        return None
    return tuple(size)


def _on_neuron(val) -> bool:
    return isinstance(val, torch.Tensor) and val.device.type == "neuron"


def _on_neuron_contiguous(val) -> bool:
    return _on_neuron(val) and val.is_contiguous()


def _like_draw(kind: str, last: torch.fx.Node, **bounds) -> Draw:
    """The draw of a ``*_like`` chain ending in ``last``: its logical size and strides."""
    val = last.meta["val"]
    return Draw(kind, tuple(val.shape), val.dtype, stride=tuple(val.stride()), **bounds)


def _only_user(node: torch.fx.Node) -> torch.fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _own_convert(random_node: torch.fx.Node) -> torch.fx.Node | None:
    """The dtype conversion Inductor's random-op pass wrote after ``random_node`` (its
    ``inductor_random`` is float32, its ``inductor_randint`` int64): ``randn(..., dtype=)``
    and ``*_like`` of a bfloat16, float16 or float64 tensor, which eager draws in that dtype
    (other numbers than a float32 draw converted). Told from a user's own ``.to()`` by the op
    each node was traced from (``meta["original_aten"]``: the random op for both, or
    ``_to_copy``)."""
    user = _only_user(random_node)
    if user is None or user.target is not torch.ops.prims.convert_element_type.default:
        return None
    origin = random_node.meta.get("original_aten")
    if origin is None or user.meta.get("original_aten") is not origin:
        return None
    return user


def _marked_like(node: torch.fx.Node | None) -> bool:
    custom = node.meta.get("custom") if node is not None else None
    return isinstance(custom, dict) and bool(custom.get(RANDOM_LIKE))


def _like_chain(random_node: torch.fx.Node) -> list[torch.fx.Node]:
    """``[permute]`` or ``[permute, clone]`` when ``random_node`` only feeds Inductor's
    ``*_like`` layout chain (``_rand_like``: a contiguous draw of the physical shape, permuted
    to the logical order and cloned with its strides; a training graph has lost the clone),
    marked as such by its decomposition; else ``[]``."""
    aten = torch.ops.aten
    permute = _only_user(random_node)
    if permute is None or permute.target is not aten.permute.default:
        return []
    if not _marked_like(permute):
        return []
    clone = _only_user(permute)
    if (
        clone is not None
        and clone.target is aten.clone.default
        and clone.args[0] is permute
        and _marked_like(clone)
        and clone.kwargs.get("memory_format", torch.preserve_format) is torch.preserve_format
    ):
        return [permute, clone]
    return [permute]


def _mask_of(rand_node: torch.fx.Node) -> tuple[torch.fx.Node, float] | None:
    """``(compare node, probability of True)`` when ``rand_node`` only feeds
    ``gt(rand, p)`` / ``lt(rand, p)`` (through at most one dtype conversion, then at most
    Inductor's ``rand_like`` layout chain)."""
    aten, prims = torch.ops.aten, torch.ops.prims
    user = _only_user(rand_node)
    src = rand_node
    if user is not None and user.target is prims.convert_element_type.default:
        src, user = user, _only_user(user)
    chain = _like_chain(src)
    if chain:
        src, user = chain[-1], _only_user(chain[-1])
    if user is None or user.kwargs or len(user.args) != 2 or user.args[0] is not src:
        return None
    p = user.args[1]
    if type(p) not in (int, float) or not 0.0 <= p <= 1.0:
        return None
    origin = legality.decomposed_from(user) or ""
    if not origin.startswith(_MASK_ORIGINS):  # a user's own rand < p draws as rand
        return None
    if user.target is aten.gt.Scalar:
        return user, 1.0 - float(p)
    if user.target is aten.lt.Scalar:
        return user, float(p)
    return None


def _new_placeholder(gm: torch.fx.GraphModule, name: str) -> torch.fx.Node:
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    anchor = (
        gm.graph.inserting_after(placeholders[-1])
        if placeholders
        else gm.graph.inserting_before(next(iter(gm.graph.nodes)))
    )
    with anchor:
        return gm.graph.placeholder(name)


def _erase_unused(gm: torch.fx.GraphModule, targets) -> None:
    # random nodes are impure for eliminate_dead_code; remove the dead ones explicitly
    for node in reversed(list(gm.graph.nodes)):
        if node.op == "call_function" and node.target in targets and not node.users:
            gm.graph.erase_node(node)


def random_as_inputs(gm: torch.fx.GraphModule, example_inputs: list) -> tuple[list, tuple]:
    """Replace the neuron random nodes of ``gm`` by extra graph inputs (module docstring).
    Returns the extended example inputs and the :class:`Draw` of each new input, in input
    order."""
    import torch._inductor.inductor_prims  # noqa: F401  (registers the prims below)

    prims = torch.ops.prims
    random_op, randint_op = prims.inductor_random.default, prims.inductor_randint.default
    lookup_op, seeds_op = prims.inductor_lookup_seed.default, prims.inductor_seeds.default
    draws: list[Draw] = []
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in (random_op, randint_op):
            continue
        val = node.meta.get("val")
        if not _on_neuron_contiguous(val):
            continue
        # the draw in the dtype the user asked for, as eager draws it, then *_like's layout
        own = _own_convert(node)
        like = _like_chain(own or node)
        replaced = [*reversed(like), *([own] if own else []), node]  # the nodes one draw replaces
        if node.target is random_op:
            size, _seed, kind = node.args[:3]
            bounds: dict[str, int] = {}
            if kind not in ("rand", "randn"):
                continue
        else:
            low, high, size, _seed = node.args
            kind, bounds = "randint", {"low": low, "high": high}
            if type(low) is not int or type(high) is not int:
                continue
        size = _static_size(size)
        if size is None:
            continue
        mask = _mask_of(node) if kind == "rand" else None
        if mask is not None and _on_neuron(mask[0].meta.get("val")):
            compare, prob = mask
            replaced = [compare, *reversed(_chain(node, compare))]
            # eager draws the mask contiguous whatever the input's layout; the graph then
            # reads it in the compare's strides
            cval = compare.meta["val"]
            stride = None if cval.is_contiguous() else tuple(cval.stride())
            draw = Draw("mask", tuple(cval.shape), torch.bool, p=prob, stride=stride)
        elif like:
            draw = _like_draw(kind, like[-1], **bounds)
        else:
            draw = Draw(kind, size, (own or node).meta["val"].dtype, **bounds)
        ph = _new_placeholder(gm, f"neuron_random_{len(draws)}")
        ph.meta.update(replaced[0].meta)
        replaced[0].replace_all_uses_with(ph)
        for dead in replaced:
            gm.graph.erase_node(dead)
        example_inputs.append(ph.meta["val"])
        draws.append(draw)
    _erase_unused(gm, (lookup_op,))
    _erase_unused(gm, (seeds_op,))

    # seeds still read by Inductor's own random code: drawn on the device too
    for i, node in enumerate([n for n in gm.graph.nodes if n.target is seeds_op]):
        val = node.meta.get("val")
        if not (isinstance(val, torch.Tensor) and val.device.type == "neuron"):
            continue
        ph = _new_placeholder(gm, f"neuron_seeds_{i}")
        ph.meta.update(node.meta)
        node.replace_all_uses_with(ph)
        gm.graph.erase_node(node)
        example_inputs.append(val)
        draws.append(
            Draw("seeds", (int(node.args[0]),), torch.int64, low=_SEED_LOW, high=_SEED_HIGH)
        )
    if draws:
        gm.graph.lint()
        gm.recompile()
    return example_inputs, tuple(draws)


def _chain(rand_node: torch.fx.Node, compare: torch.fx.Node) -> list[torch.fx.Node]:
    """The nodes from ``rand_node`` up to (not including) ``compare``."""
    chain, node = [], rand_node
    while node is not compare:
        chain.append(node)
        node = next(iter(node.users))
    return chain


__all__ = ["Draw", "random_as_inputs"]
