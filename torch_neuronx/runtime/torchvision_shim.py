"""Make `import torchvision` work beside the CPU torch this project pins, so timm imports.

PyPI's only torchvision for torch 2.13 (0.28.0) is a CUDA build: its extension `_C.so`
links `libtorch_cuda.so`, fails to load beside the CPU torch, and torchvision's import then
dies in `_meta_registrations.py`, which registers fake kernels for `torchvision::nms` and
`torchvision::qnms` without checking that the extension defined them ("operator
torchvision::nms does not exist"). Every other registration there is guarded by
`torchvision.extension._has_ops()`.

`install()` loads the extension the way torchvision does; only when that fails does it define
the two operators' schemas (copied from torchvision's csrc/ops/nms.cpp), so the import goes
through. torchvision's Python parts (transforms, models, feature extraction: what timm uses)
then work; its compiled ops (nms, roi_align, deform_conv2d, image decoding) stay unavailable
and raise torchvision's own "Couldn't load custom C++ ops" error. With a torchvision whose
extension loads (a CPU build), `install()` changes nothing.
"""

from __future__ import annotations

import importlib.util
import os

import torch

_LIB: torch.library.Library | None = None

# torchvision 0.28's csrc/ops/nms.cpp and csrc/ops/quantized/cpu/qnms_kernel.cpp.
_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)


def install() -> str:
    """Prepare `import torchvision`; returns what was done ('' when torchvision is absent)."""
    global _LIB
    if _LIB is not None:
        return "schemas defined"
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return ""
    folder = list(spec.submodule_search_locations)[0]
    extension = os.path.join(folder, "_C.so")
    if os.path.exists(extension):
        try:
            torch.ops.load_library(extension)
            return "extension loaded"
        except OSError:
            pass  # the CUDA build: fall through and define the schemas it would have
    _LIB = torch.library.Library("torchvision", "DEF")  # noqa: TOR901 - kept alive by _LIB
    for schema in _SCHEMAS:
        _LIB.define(schema)
    return "schemas defined"
