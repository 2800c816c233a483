"""``torch_neuronx.testing.torchvision_shim.install()``: make ``import torchvision`` (and so
``import timm``) work beside the CPU torch this project pins. The implementation lives in
:mod:`torch_neuronx.runtime.torchvision_shim`, one layer down, so that ``evaluate`` (which may
not import ``testing``) applies it in the evaluated script's process too."""

from torch_neuronx.runtime.torchvision_shim import install

__all__ = ["install"]
