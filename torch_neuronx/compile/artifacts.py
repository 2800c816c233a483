"""Debug artifacts: with TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS=1 the backend writes,
per process and per graph, under TORCH_NEURONX_DEBUG_DIR (default /tmp/neuron_backend)::

    proc_<pid>/<graph name>/dynamo_graph.txt      FX graph from Dynamo (before AOTAutograd)
    proc_<pid>/<graph name>/aot_forward.txt       ATen graphs after AOTAutograd
    proc_<pid>/<graph name>/aot_backward.txt      (aot_inference.txt when no backward)
    proc_<pid>/<graph name>/forward_code.py       Inductor's generated code
    proc_<pid>/<graph name>/backward_code.py
    proc_<pid>/<graph name>/metrics.json          the metrics record of the graph
"""

from __future__ import annotations

import json
import os

import torch

from . import config


def graph_dir(graph_name: str) -> str | None:
    if not config.preserve_artifacts():
        return None
    path = os.path.join(config.debug_dir(), f"proc_{os.getpid()}", graph_name)
    os.makedirs(path, exist_ok=True)
    return path


def _write(directory: str | None, filename: str, text: str) -> None:
    if directory is None:
        return
    tmp = os.path.join(directory, f".{filename}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(directory, filename))


def dump_graph(directory: str | None, filename: str, gm: torch.fx.GraphModule) -> None:
    if directory is None:
        return
    try:
        text = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    except Exception:  # pragma: no cover - print_readable is best effort
        text = str(gm.graph)
    _write(directory, filename, text)


def dump_text(directory: str | None, filename: str, text: str) -> None:
    _write(directory, filename, text)


def dump_json(directory: str | None, filename: str, obj) -> None:
    if directory is None:
        return
    _write(directory, filename, json.dumps(obj, indent=2, default=str))
