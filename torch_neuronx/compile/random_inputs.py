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
  eager's, bit for bit, given the same seed (tests/compile/test_random.py);
* other ``inductor_random`` nodes become ``torch.rand``/``torch.randn`` (float32, as
  Inductor's prim), ``inductor_randint`` nodes ``torch.randint``;
* seeds still used afterwards (a random node this pass does not take, e.g. symbolic sizes)
  become one ``int64`` seed input drawn on the device, which Inductor's Philox code reads.

The draws run through the eager dispatcher (one op each, tens of microseconds), which is
cheap next to the random numbers themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx

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

    def draw(self, device: torch.device) -> torch.Tensor:
        if self.kind == "mask":
            # eager native_dropout's mask (csrc/eager/kernel.cpp: run_random_without_generator)
            return torch.empty(self.size, dtype=torch.bool, device=device).bernoulli_(self.p)
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


def _on_neuron_contiguous(val) -> bool:
    return isinstance(val, torch.Tensor) and val.device.type == "neuron" and val.is_contiguous()


def _only_user(node: torch.fx.Node) -> torch.fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _mask_of(rand_node: torch.fx.Node) -> tuple[torch.fx.Node, float] | None:
    """``(compare node, probability of True)`` when ``rand_node`` only feeds
    ``gt(rand, p)`` / ``lt(rand, p)`` (through at most one dtype conversion)."""
    aten, prims = torch.ops.aten, torch.ops.prims
    user = _only_user(rand_node)
    src = rand_node
    if user is not None and user.target is prims.convert_element_type.default:
        src, user = user, _only_user(user)
    if user is None or user.kwargs or len(user.args) != 2 or user.args[0] is not src:
        return None
    p = user.args[1]
    if type(p) not in (int, float) or not 0.0 <= p <= 1.0:
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
        replaced = [node]
        if node.target is random_op:
            size, _seed, mode = node.args[:3]
            size = _static_size(size)
            if size is None or mode not in ("rand", "randn"):
                continue
            draw = Draw(mode, size, val.dtype)
            mask = _mask_of(node) if mode == "rand" else None
            if mask is not None and _on_neuron_contiguous(mask[0].meta.get("val")):
                compare, prob = mask
                replaced = [compare, *reversed(_chain(node, compare))]
                draw = Draw("mask", size, torch.bool, p=prob)
        else:
            low, high, size, _seed = node.args
            size = _static_size(size)
            if size is None or type(low) is not int or type(high) is not int:
                continue
            draw = Draw("randint", size, val.dtype, low=low, high=high)
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
