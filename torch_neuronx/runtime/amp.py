"""Mixed-precision capabilities of the NeuronCore."""

import torch


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16, torch.float32]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True
