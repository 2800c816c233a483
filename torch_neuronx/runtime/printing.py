"""Printing a neuron tensor is a host read: copy to host once (through the one
synchronisation point, _copy_from), then format on the host. Formatting on the device would
run float64 statistics there, which the NeuronCore computes in float32."""

import torch._tensor_str as _ts

from torch_neuronx.runtime import patches

_orig_tensor_str = _ts._tensor_str


def _tensor_str(self, indent):
    if self.device.type == "neuron":
        self = self.cpu()
    return _orig_tensor_str(self, indent)


def install() -> None:
    patches.replace(
        _ts,
        "_tensor_str",
        _tensor_str,
        reason="format a neuron tensor on the host after one copy (formatting on the device "
        "would compute float64 statistics in float32)",
    )
