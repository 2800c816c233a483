"""Random number generation on neuron: one default generator per device."""

from __future__ import annotations

import torch

from torch_neuronx import _C
from torch_neuronx.runtime.devices import _index, device_count


def default_generator(device=None) -> torch.Generator:
    return _C._default_generator(_index(device))


class _DefaultGenerators:
    def __getitem__(self, i):
        return default_generator(i)

    def __len__(self):
        return device_count()

    def __iter__(self):
        return (default_generator(i) for i in range(device_count()))


default_generators = _DefaultGenerators()


def manual_seed(seed: int) -> None:
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    # torch.manual_seed calls this; it must never call back into torch.manual_seed.
    for i in range(device_count()):
        default_generator(i).manual_seed(int(seed))


def seed() -> None:
    default_generator().seed()


def seed_all() -> None:
    s = default_generator(0).seed()
    for i in range(1, device_count()):
        default_generator(i).manual_seed(s)


def initial_seed() -> int:
    return default_generator().initial_seed()


def get_rng_state(device="neuron") -> torch.Tensor:
    return default_generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device="neuron") -> None:
    default_generator(device).set_state(new_state.clone().cpu())


def get_rng_state_all() -> list[torch.Tensor]:
    return [default_generator(i).get_state() for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
