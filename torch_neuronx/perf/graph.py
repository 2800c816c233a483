"""Compiled graphs: which kernels a graph becomes, and what each one reads and writes.

On Trainium, ``torch.compile`` hands the whole graph to the Neuron compiler, which fuses
aggressively; the emulated core runs Inductor's CPU code instead, whose fusion says nothing
about Trainium. So the model plans the graph's kernels itself, from the ATen graph the backend
compiles (the same graph neuronx-cc would receive):

- every TensorE op (one PyTorch has a FLOP rule for: matmul, convolution, attention) is one
  kernel; its HBM traffic is its inputs and outputs;
- every other op joins a **fused kernel**: connected element-wise/reduction/data-movement ops
  between the same TensorE ops. To keep the kernels acyclic, each op gets a *stage* (the number
  of TensorE ops on the longest path from the graph's inputs); only ops of the same stage that
  feed each other fuse (a path through a TensorE op always raises the stage);
- a fused kernel reads each tensor it takes from outside once and writes only the tensors used
  outside it (by another kernel or as graph outputs); everything else stays on chip (SBUF).
  Each fused kernel records its working set (``Work.live``): at every boundary between two of
  its member ops, the bytes of the intermediates produced inside it and still needed by a later
  member. Where that exceeds the logical core's SBUF, the excess spills: it is written to HBM
  and read back, at each such boundary (``roofline.spill_bytes``; ASSUMPTION: no re-tiling of
  the kernel to fit). A loop-unrolled chain over tensors larger than SBUF thus pays HBM traffic
  per op, as unfused; a kernel that fits pays nothing more. Tensors read from outside are
  streamed and not counted in the working set. A kernel whose every op is row-local along the
  leading dimension of its largest output (element-wise ops, reductions over trailing dims:
  RMSNorm, softmax, an element-wise chain) is tiled by the compiler over that dimension, in
  tiles of 128 rows (one per SBUF partition, all generations [NKI1-3]); its working set is that
  of one tile. A kernel with a reduction across rows (a whole-tensor sum, a weight gradient)
  keeps whole tensors live;
- views, reshapes and ``getitem`` cost nothing (metadata only); a view of an outside tensor
  is read at the smaller of the two sizes (a slice reads only its part);
- a functional collective (``_c10d_functional.all_reduce`` ...) is one kernel costed by the
  collective model over its process group (a compiled graph runs it on host views, below the
  neuron c10d kernels that record eager collectives); ``wait_tensor`` is free;
- the graph pays ``params.graph_launch_s`` once per call and each kernel
  ``params.kernel_overhead_s``.

The plan (a list of :class:`~torch_neuronx.perf.events.Work`) depends only on the graph, so it
is computed once at compile time and can be stored with the compiled artifact; its costs are
computed per target generation when first recorded. Graphs with dynamic shapes are planned at
the sizes the compiler saw (their hints).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable

import torch
import torch.fx

from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.op_names import base_name, op_name

from . import events as ev
from . import roofline
from . import work as wk

_VIEW_FUNCTIONS = {operator.getitem}
#: SBUF partitions of a NeuronCore (128 on every generation [NKI1, NKI2, NKI3]): the row tile
#: of a row-local fused kernel
_PARTITIONS = 128


def _hint(s) -> int:
    if isinstance(s, torch.SymInt):
        from torch.fx.experimental.symbolic_shapes import optimization_hint

        return int(optimization_hint(s, fallback=1))
    return int(s)


def _concrete(val):
    """A meta tensor with the (hinted) shape and dtype of a graph value (or a list of them)."""
    if isinstance(val, torch.Tensor):
        try:
            from torch._subclasses.fake_tensor import unset_fake_temporarily
        except ImportError:  # pragma: no cover - older PyTorch
            import contextlib

            unset_fake_temporarily = contextlib.nullcontext
        with unset_fake_temporarily():
            return torch.empty([_hint(s) for s in val.shape], dtype=val.dtype, device="meta")
    if isinstance(val, (list, tuple)):
        return type(val)(_concrete(v) for v in val)
    if isinstance(val, torch.SymInt):
        return _hint(val)
    return val


def _is_view(target) -> bool:
    if target in _VIEW_FUNCTIONS:
        return True
    if not isinstance(target, torch._ops.OpOverload):
        return False
    schema = target._schema
    if schema.is_mutable:
        return False
    return bool(schema.returns) and all(
        r.alias_info is not None and not r.alias_info.is_write for r in schema.returns
    )


def _is_collective(target) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target.namespace in (
        "_c10d_functional",
        "c10d_functional",
        "c10d",
    )


def _size(val) -> float:
    if isinstance(val, torch.Tensor):
        return float(val.numel() * val.element_size())
    if isinstance(val, (list, tuple)):
        return sum(_size(v) for v in val)
    return 0.0


class GraphPlan:
    """The kernels of one compiled graph (target independent) and their per-target costs."""

    def __init__(self, name: str, works: tuple):
        self.name = name
        self.works = tuple(works)
        self._costs: dict = {}

    def __getstate__(self):
        return {"name": self.name, "works": self.works}

    def __setstate__(self, state):
        self.name, self.works, self._costs = state["name"], state["works"], {}

    def costs(self, core, tgt=None) -> tuple:
        """(graph launch, kernel costs...) on logical core ``core`` under the current params;
        collectives use ``tgt`` (default: this process's target) for the topology."""
        from . import params

        key = (
            core.generation,
            core.lnc,
            params.current(),
            tgt.instance.name if tgt is not None else None,
        )
        got = self._costs.get(key)
        if got is None:
            n = len(self.works)
            kernels = []
            for i, w in enumerate(self.works):
                if w.engine == Engine.collective:
                    from . import target
                    from .collectives import collective_cost, group_ranks

                    c = collective_cost(
                        w.name,
                        w.bytes,
                        group_ranks(w.group),
                        tgt or target.current(),
                        in_graph=True,
                    )
                else:
                    c = roofline.cost_of(w, core, in_graph=True)
                where = f"{self.name} kernel {i + 1}/{n}"
                kernels.append(
                    dataclasses.replace(c, detail=f"{where}: {c.detail}" if c.detail else where)
                )
            got = (roofline.graph_launch_cost(self.name),) + tuple(kernels)
            self._costs[key] = got
        return got

    def duration(self, core) -> float:
        return sum(c.duration for c in self.costs(core))


def plan_graph(
    gm: torch.fx.GraphModule, name: str, engine_of: Callable[[str], Engine | None] | None = None
) -> GraphPlan:
    """Plans the kernels of ATen graph ``gm`` (nodes carry ``meta['val']``, as the graphs
    AOTAutograd hands to a compiler do). ``engine_of(op_name)`` is the op policy's engine."""
    nodes = list(gm.graph.nodes)
    val: dict = {}
    level: dict = {}  # stage a node's value is seen at by its consumers
    stage: dict = {}
    kind: dict = {}  # input | view | tensor | fused | barrier | output
    root: dict = {}  # view -> the non-view node it reads

    for n in nodes:
        args_nodes = [a for a in n.all_input_nodes]
        lvl_in = max((level[a] for a in args_nodes if a in level), default=0)
        if n.op in ("placeholder", "get_attr"):
            kind[n], level[n] = "input", 0
            val[n] = _concrete(n.meta.get("val"))
            continue
        if n.op == "output":
            kind[n] = "output"
            continue
        target = n.target
        val[n] = _concrete(n.meta.get("val"))
        if n.op != "call_function" or _is_view(target):
            kind[n], level[n] = "view", lvl_in
            src = args_nodes[0] if args_nodes else n
            root[n] = root.get(src, src)
            continue
        if _is_collective(target):
            if target._opname.startswith("wait_tensor"):
                kind[n], level[n] = "view", lvl_in
                root[n] = root.get(args_nodes[0], args_nodes[0]) if args_nodes else n
            else:
                kind[n], stage[n], level[n] = "collective", lvl_in, lvl_in + 1
            continue
        opname = op_name(target)
        engine = Engine.parse(engine_of(opname) if engine_of else None)
        is_tensor = engine in (None, Engine.tensor) and wk.flop_formula(opname) is not None
        if is_tensor:
            kind[n], stage[n], level[n] = "tensor", lvl_in, lvl_in + 1
        else:
            kind[n], stage[n], level[n] = "fused", lvl_in, lvl_in

    def src(a):
        return root.get(a, a)

    # union-find over fused ops of equal stage that feed each other
    parent = {n: n for n in nodes if kind.get(n) == "fused"}

    def find(x):
        while parent[x] is not x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for n in parent:
        for a in n.all_input_nodes:
            s = src(a)
            if s in parent and stage[s] == stage[n]:
                ra, rb = find(s), find(n)
                if ra is not rb:
                    parent[ra] = rb
    groups: dict = {}
    for n in nodes:  # topological order inside each group
        if n in parent:
            groups.setdefault(find(n), []).append(n)

    def used_outside(n, members: set) -> bool:
        for u in n.users:
            if u.op == "output":
                return True
            if kind.get(u) == "view":
                if used_outside(u, members):
                    return True
            elif u not in members:
                return True
        return False

    def users_in(n, members: set, out: list) -> list:
        for u in n.users:
            if kind.get(u) == "view":
                users_in(u, members, out)
            elif u in members:
                out.append(u)
        return out

    def _working_set(members: list, mset: set) -> tuple:
        """(live, spans): live intermediate bytes at each boundary between consecutive members,
        and (first boundary, last boundary + 1, bytes, reads) of each intermediate live across
        one (the per-tensor view roofline.spill_bytes charges spills by)."""
        if len(members) < 2:
            return (), ()
        pos = {m: i for i, m in enumerate(members)}
        delta = [0.0] * len(members)
        spans = []
        for i, m in enumerate(members):
            uses = [pos[u] for u in users_in(m, mset, [])]
            last = max(uses, default=i)
            if last > i:  # live across boundaries i .. last-1
                size = _size(val.get(m))
                delta[i] += size
                delta[last] -= size
                spans.append((i, last, size, len(uses)))
        live, run = [], 0.0
        for d in delta[:-1]:
            run += d
            live.append(run)
        if not any(live):
            return (), ()
        rows = _row_tiles(members)
        f = min(1.0, _PARTITIONS / rows) if rows else 1.0
        return tuple(x * f for x in live), tuple((a, b, n * f, r) for a, b, n, r in spans)

    def _row_tiles(members: list) -> int:
        """The leading extent the kernel can be tiled over (0: not row-local)."""
        outs = [t for m in members for t in wk.tensors_in((val.get(m),))]
        big = max(outs, key=lambda t: t.numel(), default=None)
        if big is None or big.dim() == 0:
            return 0
        nd, rows = big.dim(), int(big.shape[0])

        def has_rows(t) -> bool:
            return t.dim() == nd and int(t.shape[0]) == rows

        for m in members:
            ins = [
                t for a in m.all_input_nodes for t in wk.tensors_in((val.get(a), val.get(src(a))))
            ]
            if not any(has_rows(t) for t in ins):
                continue  # a side computation on small tensors (a weight, a scalar)
            if not all(has_rows(t) for t in wk.tensors_in((val.get(m),))):
                return 0  # reduces or permutes across rows
        return rows

    works: list = []
    first_of: dict = {}
    for n in nodes:
        k = kind.get(n)
        if k == "collective":
            ins = wk.tensors_in([val.get(a) for a in n.all_input_nodes])
            outs = wk.tensors_in((val.get(n),))
            nbytes = max(sum(wk.nbytes(t) for t in ins), sum(wk.nbytes(t) for t in outs))
            group = n.args[-1] if n.args and isinstance(n.args[-1], str) else ""
            first_of[n] = len(works)
            works.append(
                ev.Work(
                    base_name(op_name(n.target)).rstrip("_"),
                    ev.KERNEL,
                    Engine.collective,
                    bytes=float(nbytes),
                    ops=(op_name(n.target),),
                    group=group,
                    shapes=", ".join("x".join(str(int(d)) for d in t.shape) for t in ins[:4]),
                )
            )
        if k == "tensor":
            args = tuple(
                _concrete(a.meta.get("val")) if isinstance(a, torch.fx.Node) else a for a in n.args
            )
            kwargs = {
                key: (_concrete(a.meta.get("val")) if isinstance(a, torch.fx.Node) else a)
                for key, a in n.kwargs.items()
            }
            w = wk.op_work(op_name(n.target), args, kwargs, val[n], Engine.tensor, kind=ev.KERNEL)
            first_of[n] = len(works)
            works.append(w)
    for members in groups.values():
        mset = set(members)
        reads: dict = {}
        elem: list = []
        names: list = []
        unfused = 0.0  # each member as its own kernel: reads its inputs, writes its outputs
        for m in members:
            ins = []
            for a in m.all_input_nodes:
                s = src(a)
                v = val.get(a)
                ins.extend(wk.tensors_in((v,)))
                if s not in mset:
                    reads[s] = max(
                        reads.get(s, 0.0),
                        min(_size(v), _size(val.get(s))) if s is not a else _size(v),
                    )
            outs = wk.tensors_in((val.get(m),))
            opname = op_name(m.target)
            # the bytes the eager model charges the same op (work.op_work), so a split kernel
            # is never modeled costlier than the eager ops
            margs = tuple(
                _concrete(a.meta.get("val")) if isinstance(a, torch.fx.Node) else a for a in m.args
            )
            mkw = {
                key: (_concrete(a.meta.get("val")) if isinstance(a, torch.fx.Node) else a)
                for key, a in m.kwargs.items()
            }
            try:
                unfused += wk.op_work(opname, margs, mkw, val.get(m), None, kind=ev.KERNEL).bytes
            except Exception:  # noqa: BLE001 - no rule for the op: its inputs and outputs
                unfused += sum(wk.nbytes(t) for t in (*ins, *outs))
            engine = Engine.parse(engine_of(opname) if engine_of else None) or Engine.vector
            if engine == Engine.tensor:
                engine = Engine.vector
            if engine != Engine.dma:
                elem.extend(wk.elementwise(opname, engine, ins, outs))
            short = base_name(opname)
            if short not in names:
                names.append(short)
        writes = sum(_size(val.get(m)) for m in members if used_outside(m, mset))
        live, spans = _working_set(members, mset)
        by_engine: dict = {}
        for e, elements, _, _ in elem:
            by_engine[e] = by_engine.get(e, 0.0) + elements
        engine = max(by_engine, key=by_engine.get) if by_engine else Engine.dma
        flops = float(
            sum(max([t.numel() for t in wk.tensors_in((val.get(m),))] or [0]) for m in members)
        )
        label = "fused(" + ",".join(names[:4]) + (",..." if len(names) > 4 else "") + ")"
        dts = [
            t.dtype for m in members for t in wk.tensors_in((val.get(m),)) if t.is_floating_point()
        ]
        outs = [t for m in members for t in wk.tensors_in((val.get(m),))]
        big = max(outs, key=lambda t: t.numel(), default=None)
        w = ev.Work(
            label,
            ev.KERNEL,
            engine,
            flops=flops,
            bytes=float(sum(reads.values()) + writes),
            dtype=wk.dtype_class(dts[0]) if dts else "fp32",
            elem_work=tuple(elem),
            ops=tuple(op_name(m.target) for m in members),
            shapes="x".join(str(int(d)) for d in big.shape) if big is not None else "",
            live=live,
            spans=spans,
            unfused_bytes=unfused,
        )
        first_of[members[0]] = len(works)
        works.append(w)
    order = {n: i for i, n in enumerate(nodes)}
    ordered = [works[first_of[n]] for n in sorted(first_of, key=order.get)]
    return GraphPlan(name, tuple(ordered))
