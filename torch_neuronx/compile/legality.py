"""Legality pass: every ATen operator in a graph must be *native* under the eager op policy
(torch_neuronx.eager.op_policy.policy_for). Ops that eager mode would run through the CPU
fallback (or cannot run at all) make the graph illegal for the compiled path; the backend
then fails with :class:`NeuronCompileError` naming the op and the user's source line, or,
with fallback execution enabled, runs that graph eagerly.
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


def eager_op_name(node: torch.fx.Node) -> str | None:
    """The op eager mode would have dispatched for this node: the op a decomposition came
    from, the in-place op a functionalised ``copy``/``*_copy`` stands for, or the node's own
    op. None for nodes that are not ATen kernels."""
    custom = node.meta.get("custom")
    if isinstance(custom, dict) and custom.get(DECOMPOSED_FROM):
        return custom[DECOMPOSED_FROM]
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


def find_illegal_ops(gm: torch.fx.GraphModule) -> list[IllegalOp]:
    seen = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        name = eager_op_name(node)
        if name is None or name in seen:
            continue
        status, reason = policy_status(name)
        if status != "native" and "." not in name:
            # functionalisation turns in-place ops into their out-of-place twins
            # (zero_ -> zero, fill_ -> fill): the eager op was the in-place one
            alt_status, _ = policy_status(name + "_")
            if alt_status == "native":
                status = alt_status
        if status != "native" and _eager_decomposes(name, reason):
            status = "native"
        if status != "native":
            seen[name] = IllegalOp(name, status, reason, user_source(node))
    return list(seen.values())


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
