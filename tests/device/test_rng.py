"""RNG: per-device generators, reproducibility, state round trips (issue 2, point 6)."""

import pytest
import torch

DEV = "neuron"

SAMPLERS = {
    "randn": lambda g: torch.randn(64, device=DEV, generator=g),
    "rand": lambda g: torch.rand(64, device=DEV, generator=g),
    "randint": lambda g: torch.randint(0, 100, (64,), device=DEV, generator=g),
    "randperm": lambda g: torch.randperm(50, device=DEV, generator=g),
    "normal_": lambda g: torch.empty(64, device=DEV).normal_(generator=g),
    "uniform_": lambda g: torch.empty(64, device=DEV).uniform_(generator=g),
    "bernoulli": lambda g: torch.bernoulli(torch.full((64,), 0.5, device=DEV), generator=g),
    "multinomial": lambda g: torch.multinomial(torch.ones(10, device=DEV), 5, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS) + ["dropout"])
def test_manual_seed_reproduces(name):
    def draw():
        torch.manual_seed(1234)
        if name == "dropout":
            return torch.nn.functional.dropout(torch.ones(256, device=DEV), 0.5).cpu()
        return SAMPLERS[name](None).cpu()

    a, b = draw(), draw()
    assert torch.equal(a, b)
    torch.manual_seed(4321)
    c = (
        torch.nn.functional.dropout(torch.ones(256, device=DEV), 0.5)
        if name == "dropout"
        else SAMPLERS[name](None)
    ).cpu()
    if name not in ("multinomial",):  # 5 of 10 equal weights can coincide; others cannot
        assert not torch.equal(a, c)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_explicit_generator(name):
    g1 = torch.Generator(device=DEV).manual_seed(7)
    g2 = torch.Generator(device=DEV).manual_seed(7)
    assert g1.device.type == "neuron"
    assert torch.equal(SAMPLERS[name](g1).cpu(), SAMPLERS[name](g2).cpu())


def test_neuron_stream_independent_of_cpu():
    torch.manual_seed(0)
    a = torch.randn(8, device=DEV).cpu()
    torch.manual_seed(0)
    torch.randn(100)  # consuming CPU randomness must not change the neuron stream
    b = torch.randn(8, device=DEV).cpu()
    assert torch.equal(a, b)


def test_get_set_rng_state_round_trip():
    torch.neuron.manual_seed(5)
    state = torch.neuron.get_rng_state()
    a = torch.rand(16, device=DEV).cpu()
    torch.neuron.set_rng_state(state)
    b = torch.rand(16, device=DEV).cpu()
    assert torch.equal(a, b)
    states = torch.neuron.get_rng_state_all()
    x = [torch.rand(4, device=f"neuron:{i}").cpu() for i in range(2)]
    torch.neuron.set_rng_state_all(states)
    y = [torch.rand(4, device=f"neuron:{i}").cpu() for i in range(2)]
    assert all(torch.equal(p, q) for p, q in zip(x, y, strict=True))


def _initial_seeds():
    seeds = []
    for i in range(torch.neuron.device_count()):
        with torch.neuron.device(i):
            seeds.append(torch.neuron.initial_seed())
    return seeds


def test_seed_functions():
    torch.neuron.manual_seed_all(99)
    assert _initial_seeds() == [99] * 4
    torch.neuron.seed()  # a fresh non-deterministic 64-bit seed, current device only
    fresh = _initial_seeds()
    assert fresh[0] != 99 and fresh[1:] == [99] * 3, fresh
    torch.neuron.seed_all()  # one fresh seed, shared by every device
    shared = _initial_seeds()
    assert len(set(shared)) == 1 and shared[0] not in (99, fresh[0]), shared


def test_per_device_generators_differ():
    torch.neuron.manual_seed(1)
    with torch.neuron.device(1):
        torch.neuron.manual_seed(2)
    a = torch.rand(8, device="neuron:0").cpu()
    b = torch.rand(8, device="neuron:1").cpu()
    assert not torch.equal(a, b)
