"""Legality pass: every ATen operator in a graph must be *native* under the eager op policy
(torch_neuronx.eager.op_policy.policy_for). Ops that eager mode would run through the CPU
fallback (or cannot run at all) make the graph illegal for the compiled path; the backend
then fails with :class:`NeuronCompileError` naming the op and the user's source line, or,
with fallback execution enabled, runs that graph eagerly. One exception (:func:`check_graph`):
an op the policy does not list that the decomposition table replaced with native ops is
compiled through its decomposition, as TorchNeuron lowers a graph after AOTAutograd's
decompositions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from torch_neuronx.eager import op_policy
from torch_neuronx.runtime import op_names

#: node.meta["custom"] key naming the ATen op a node was decomposed from (written by the
#: decomposition table, compile/decompositions.py; read here)
DECOMPOSED_FROM = "neuron_decomposed_from"


class NeuronCompileError(RuntimeError):
    """A graph could not be compiled by the ``neuron`` backend."""


class NonNativeOpsError(NeuronCompileError):
    """A graph holds ops that are not native on Neuron (the compile policy refuses it unless
    `fallback_execution` is on); `ops` names them, as "aten::name"."""

    def __init__(self, message: str, ops: list[str]):
        super().__init__(message)
        self.ops = ops


@dataclass
class IllegalOp:
    op: str  # e.g. "aten::linalg_qr"
    status: str  # "fallback" | "unsupported"
    reason: str
    source: str | None  # 'File "x.py", line 3, in f\n    y = torch.linalg.qr(x)'


def _load_policy() -> Callable[[str], tuple[str, str]]:
    """The policy function that decides legality (the eager table's; tests inject others)."""
    return op_policy.policy_for


def policy_fingerprint() -> str | None:
    """A digest of the op policy that decides legality, or None when it cannot be known (a
    policy function other than the eager table's): cached compiles skip the legality pass,
    so their cache key must name the policy they were checked against."""
    if _load_policy() is not op_policy.policy_for:
        return None
    text = repr((sorted(op_policy.TABLE.items()), op_policy.DEFAULT_FALLBACK_REASON))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def op_name(target) -> str | None:
    """'aten::addmm' (without overload) for an OpOverload / OpOverloadPacket target, else
    None."""
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return op_names.strip_overload(op_names.op_name(target))
    return None


def policy_status(name: str) -> tuple[str, str]:
    """(status, reason) of an op name under the policy."""
    status, reason = _load_policy()(name)
    return str(status), str(reason or "")


def _eager_decomposes(name: str, reason: str) -> bool:
    """True when eager mode never runs ``name`` as one device kernel: the op is not listed
    in the policy (default fallback) and the dispatcher has a CompositeExplicitAutograd /
    CompositeImplicitAutograd kernel that takes precedence over the device's catch-all
    fallback, so eager executes its decomposition into (policy-checked) device ops. Example:
    ``aten::_safe_softmax`` from scaled_dot_product_attention."""
    if reason != op_policy.DEFAULT_FALLBACK_REASON:
        return False  # explicitly listed as fallback/unsupported
    # every overload: an op whose overloads all have names (``_unsafe_index.Tensor``, from
    # Inductor's decomposition of bilinear upsampling) has no dispatcher entry under the bare
    # name, and asking for that raised and read as "no decomposition" (issue 26: sam_hq)
    qualnames = _overload_qualnames(op_names.strip_overload(name))
    if not qualnames:
        return False
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for qualname in qualnames:
        if has(qualname, "PrivateUse1"):
            return False
        if not (
            has(qualname, "CompositeExplicitAutograd") or has(qualname, "CompositeImplicitAutograd")
        ):
            return False
    return True


def _overload_qualnames(name: str) -> list[str]:
    """'aten::x' -> the dispatcher names of its overloads ('aten::x', 'aten::x.Tensor', ...),
    those the dispatcher has (Python lists TorchScript-only ones too: ``Tensor_hacked_twin``)."""
    namespace, _, op = name.partition("::")
    try:
        overloads = getattr(getattr(torch.ops, namespace), op).overloads()
    except (AttributeError, RuntimeError):
        return []
    qualnames = [name if o == "default" else f"{name}.{o}" for o in overloads]
    return [q for q in qualnames if torch._C._dispatch_has_kernel(q)]


_FRAME_RE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n(?:\s*(.*))?')


def user_source(node: torch.fx.Node) -> str | None:
    """The innermost user frame recorded on the node (Dynamo stores it as ``stack_trace``)."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME_RE.findall(trace)
    if not frames:
        return trace.strip().splitlines()[-1] if trace.strip() else None
    filename, line, func, code = frames[-1]
    text = f'File "{filename}", line {line}, in {func}'
    if code:
        text += f"\n    {code.strip()}"
    return text


def decomposed_from(node: torch.fx.Node) -> str | None:
    """The op the user's program dispatched when ``node`` came out of a decomposition of
    the neuron table (compile/decompositions.py), else None."""
    custom = node.meta.get("custom")
    if isinstance(custom, dict) and custom.get(DECOMPOSED_FROM):
        return custom[DECOMPOSED_FROM]
    return None


def node_op_name(node: torch.fx.Node) -> str | None:
    """The op eager mode would dispatch for the node's own target: the in-place op a
    functionalised ``copy``/``*_copy`` stands for, or the node's op. None for nodes that are
    not ATen kernels."""
    name = op_name(node.target)
    if name is None or not name.startswith("aten::"):
        # prims / inductor / c10d_functional ops and Python callables are part of the
        # compiler's own op set, not of the eager dispatch policy
        return None
    if op_policy.is_metadata_only(name):
        return None  # shape/metadata queries and runtime asserts: no kernel runs for them
    if name == "aten::copy":
        return "aten::copy_"  # functionalised in-place copy
    if name.endswith("_copy") and name != "aten::narrow_copy":
        return name[: -len("_copy")]  # functionalised view op (view_copy, permute_copy, ...)
    return name


def eager_op_name(node: torch.fx.Node) -> str | None:
    """The op eager mode would have dispatched for this node: the op a decomposition came
    from, else the node's own op (:func:`node_op_name`)."""
    return decomposed_from(node) or node_op_name(node)


def graph_status(name: str) -> tuple[str, str]:
    """(status, reason) of an op as it stands in a graph: its policy status, except that an
    op functionalisation made out-of-place counts as its native in-place twin, and an op
    eager runs as its dispatcher decomposition counts as native."""
    status, reason = policy_status(name)
    if status != op_policy.NATIVE and "." not in name:
        # functionalisation turns in-place ops into their out-of-place twins
        # (zero_ -> zero, fill_ -> fill): the eager op was the in-place one
        if policy_status(name + "_")[0] == op_policy.NATIVE:
            return op_policy.NATIVE, reason
    if status != op_policy.NATIVE and _eager_decomposes(name, reason):
        return op_policy.NATIVE, reason
    return status, reason


@dataclass
class GraphLegality:
    illegal: list[IllegalOp]
    #: ops the policy does not list (eager runs them by CPU fallback) that the graph holds
    #: only as their decomposition into native ops: "compiled through its decomposition"
    through_decomposition: list[str]


def check_graph(gm: torch.fx.GraphModule) -> GraphLegality:
    """Check every ATen node of ``gm`` against the eager op policy.

    A node is checked as the op the user's program dispatched (:func:`eager_op_name`): a
    native op is legal whatever its decomposition produced, and an op the policy lists
    explicitly as fallback or unsupported is illegal even when decomposed (the table's
    decision, e.g. TorchNeuron's host linalg). An op the policy does not list (the default
    fallback: no Neuron lowering of its own) is legal when the decomposition table replaced
    it with nodes that are all legal on their own: on TorchNeuron a compiled graph is
    lowered after AOTAutograd's decompositions, so such an op never reaches the compiler
    (``aten::unfold_backward``, decomposed into ``index_put``, ``unfold`` and views).
    """
    statuses: dict[str, tuple[str, str]] = {}

    def status_of(name: str) -> tuple[str, str]:
        if name not in statuses:
            statuses[name] = graph_status(name)
        return statuses[name]

    illegal: dict[str, IllegalOp] = {}
    through: set[str] = set()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        dispatched, own = decomposed_from(node), node_op_name(node)
        name = dispatched or own
        if name is None or name in illegal:
            continue
        status, reason = status_of(name)
        if status == op_policy.NATIVE:
            continue
        if dispatched is not None and _compiles_through_decomposition(status, reason):
            # (own == name: the decomposition declined and left the op itself in the graph)
            if own is None or (own != name and status_of(own)[0] == op_policy.NATIVE):
                through.add(name)
                continue
            if own != name:
                reason += f"; its decomposition needs {own}, policy '{status_of(own)[0]}'"
        illegal[name] = IllegalOp(name, status, reason, user_source(node))
    return GraphLegality(list(illegal.values()), sorted(through - illegal.keys()))


def _compiles_through_decomposition(status: str, reason: str) -> bool:
    """Only ops the policy does not list may be compiled as their decomposition; explicit
    entries (fallback or unsupported) are decisions of the table."""
    return status == op_policy.FALLBACK and reason == op_policy.DEFAULT_FALLBACK_REASON


def find_illegal_ops(gm: torch.fx.GraphModule) -> list[IllegalOp]:
    return check_graph(gm).illegal


def format_error(graph_name: str, illegal: list[IllegalOp]) -> str:
    lines = [
        f"torch.compile(backend='neuron') cannot compile graph '{graph_name}': "
        f"it contains {len(illegal)} operator(s) that are not native on Neuron."
    ]
    for item in illegal:
        why = f" ({item.reason})" if item.reason else ""
        lines.append(f"  - {item.op}: policy '{item.status}'{why}")
        if item.source:
            lines.append("    from user code: " + item.source.replace("\n", "\n    "))
        else:
            lines.append("    from user code: <unknown source line>")
    lines.append(
        "Pass options={'fallback_execution': True} to torch.compile, or set "
        "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0, to run such graphs eagerly instead."
    )
    return "\n".join(lines)
