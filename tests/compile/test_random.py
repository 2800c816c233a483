"""Random ops in compiled graphs draw from the neuron device's generator (issue 26).

Inductor would compute random numbers in its host kernels with a scalar Philox loop over
seeds drawn from PyTorch's default CPU generator; the backend makes each random node a graph
input that the executable draws on the neuron device at each call with eager's kernels
(compile/random_inputs.py): compiled draws are eager's, and as fast.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def _mask_fn(x):
    return F.dropout(x, 0.5, training=True)


def _rand_fn(x):
    return x + torch.rand(x.shape, device=x.device) + torch.randn_like(x)


def _bf16_mask_fn(x):
    # rand_like of a bfloat16 tensor: Inductor's graph has a dtype conversion before the
    # compare. The mask times x, not the bfloat16 product (Inductor keeps it in float32)
    return (F.dropout(x.bfloat16(), 0.2, training=True) != 0) * x


def _randint_fn(x):
    return x + torch.randint(0, 10, x.shape, device=x.device) + F.dropout(x, 0.7, training=True)


@pytest.mark.parametrize("grad", [True, False], ids=["training", "inference"])
@pytest.mark.parametrize(
    "fn", [_mask_fn, _bf16_mask_fn, _rand_fn, _randint_fn], ids=lambda f: f.__name__[1:-3]
)
def test_compiled_random_ops_draw_what_eager_draws(device, grad, fn):
    """Given the same seed, compiled dropout masks, rand, randn and randint equal eager's bit
    for bit: drawn as graph inputs with eager's kernels from the device generator, not by
    Inductor's in-kernel Philox (half of a nanoGPT-size compiled forward with dropout:
    BENCHMARKS.md, "nanoGPT loop")."""
    x = torch.randn(16, 32, device=device, requires_grad=grad)
    compiled = torch.compile(fn, backend="neuron")
    with torch.set_grad_enabled(grad):
        compiled(x)  # compile outside the compared calls
        torch.neuron.manual_seed(7)
        ref = [fn(x).detach().cpu() for _ in range(2)]
        torch.neuron.manual_seed(7)
        got = [compiled(x).detach().cpu() for _ in range(2)]
    for r, g in zip(ref, got):
        assert torch.equal(r, g)
    assert not torch.equal(got[0], got[1])


_LAYOUTS = {
    # Inductor writes *_like of the first two as a permuted draw (random_inputs.py,
    # "Layouts"); the last two are not dense: eager's empty_like of them is contiguous
    "transposed": lambda t: t.reshape(32, 16).t(),
    "channels_last": lambda t: t.reshape(2, 8, 4, 8).contiguous(memory_format=torch.channels_last),
    "sliced_offset": lambda t: torch.cat([t, t[:, :1]], 1)[:, 1:],
    "expanded": lambda t: t[:1].expand(16, 32),
}


def _drop_path_fn(x):
    # timm's drop_path: a per-sample keep mask by bernoulli_ on a new tensor
    return x * x.new_empty(x.shape[:1] + (1,) * (x.dim() - 1)).bernoulli_(0.7)


def _user_compare_fn(x):
    # a user's own rand < p (and a user's own permute of a draw): eager draws these as rand
    # and randn, not as a bernoulli mask
    drawn = torch.randn(x.shape[::-1], device=x.device)
    return x * (torch.rand(x.shape, device=x.device) < 0.3) + drawn.permute(
        *reversed(range(x.dim()))
    )


_PATTERNS = (_mask_fn, _bf16_mask_fn, _rand_fn, _randint_fn, _drop_path_fn, _user_compare_fn)


def _every_pattern(x):
    # one graph per layout (a compile each costs CI time): the draws of every pattern in turn
    return tuple(fn(x) for fn in _PATTERNS)


@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_compiled_random_ops_draw_what_eager_draws_over_layouts(device, layout):
    """The same over input layouts: eager's rand_like/randn_like fill ``empty_like(x)`` (x's
    strides) in memory order, and CPU's kernels choose another algorithm for a non-contiguous
    tensor, while Inductor draws the physical shape contiguous and permutes it; dropout's mask
    is contiguous in eager whatever the input. A transposed input gave other numbers compiled
    (hf:vibevoice_acoustic_tokenizer's sampled latents, 0.4% off in the loss)."""
    base = torch.randn(16, 32, device=device, requires_grad=True)
    compiled = torch.compile(_every_pattern, backend="neuron")
    x = _LAYOUTS[layout](base)
    compiled(x)  # compile outside the compared calls
    torch.neuron.manual_seed(7)
    ref = _every_pattern(x)
    torch.neuron.manual_seed(7)
    got = compiled(x)
    for fn, r, g in zip(_PATTERNS, ref, got):
        assert torch.equal(r.detach().cpu(), g.detach().cpu()), fn.__name__
        assert r.stride() == g.stride(), fn.__name__
    sum(r.sum() for r in ref).backward()
    ref_grad, base.grad = base.grad, None
    torch.neuron.manual_seed(7)
    sum(g.sum() for g in compiled(x)).backward()
    assert torch.equal(ref_grad.cpu(), base.grad.cpu())


def _draws_in_dtype(x):
    shape = x.shape
    return (
        torch.randn_like(x),
        torch.rand_like(x),
        torch.randint_like(x, 0, 100),
        torch.randn(shape, dtype=x.dtype, device=x.device),
        torch.randn(shape, device=x.device).to(x.dtype),  # the user's conversion: float32 drawn
        torch.randint(0, 100, shape, dtype=torch.int32, device=x.device),
    )


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64], ids=str)
def test_compiled_draws_in_other_dtypes_are_eagers(device, dtype, layout):
    """Inductor draws float32 (int64) and converts; eager draws in the asked dtype (other
    numbers). The pass draws in that dtype, and leaves a user's own `.to()` after a float32
    draw as it is."""
    x = torch.randn(16, 32, device=device).to(dtype)
    if layout == "transposed":
        x = x.reshape(32, 16).t()
    compiled = torch.compile(_draws_in_dtype, backend="neuron")
    compiled(x)
    torch.neuron.manual_seed(7)
    ref = _draws_in_dtype(x)
    torch.neuron.manual_seed(7)
    got = compiled(x)
    for i, (r, g) in enumerate(zip(ref, got)):
        assert r.dtype == g.dtype and r.stride() == g.stride(), i
        assert torch.equal(r.cpu(), g.cpu()), i


def test_random_inputs_replace_every_random_node(device):
    """The pass leaves no Inductor random node (no Philox loop, no seed) in a dropout graph,
    and describes each new input: dropout's keep mask as bernoulli(1 - p)."""
    import torch._inductor.inductor_prims  # noqa: F401
    from torch.fx.experimental.proxy_tensor import make_fx

    from torch_neuronx.compile.legality import DECOMPOSED_FROM
    from torch_neuronx.compile.random_inputs import Draw, random_as_inputs

    prims = torch.ops.prims

    def graph(x):
        seeds = prims.inductor_seeds.default(3, x.device)
        r0 = prims.inductor_random.default(
            [4, 8], prims.inductor_lookup_seed.default(seeds, 0), "rand"
        )
        r1 = prims.inductor_random.default(
            [4, 8], prims.inductor_lookup_seed.default(seeds, 1), "rand"
        )
        r2 = prims.inductor_random.default(
            [4, 8], prims.inductor_lookup_seed.default(seeds, 2), "randn"
        )
        # dropout of a bfloat16 tensor, as Inductor's decomposition writes it
        keep = prims.convert_element_type.default(r0, torch.bfloat16) > 0.25
        return x * keep, r1 < 0.5, x + r2

    x = torch.randn(4, 8, device=device)
    gm = make_fx(graph, tracing_mode="fake")(x)
    # the first compare came from dropout's decomposition (the neuron table marks it); the
    # second is a user's own `rand < p`, which eager draws as rand
    keep = next(n for n in gm.graph.nodes if n.target is torch.ops.aten.gt.Scalar)
    keep.meta["custom"] = {DECOMPOSED_FROM: "aten::native_dropout"}
    fake_x = next(n for n in gm.graph.nodes if n.op == "placeholder").meta["val"]
    inputs, draws = random_as_inputs(gm, [fake_x])
    targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert not targets & {
        prims.inductor_seeds.default,
        prims.inductor_lookup_seed.default,
        prims.inductor_random.default,
    }
    assert draws == (
        Draw("mask", (4, 8), torch.bool, p=0.75),
        Draw("rand", (4, 8), torch.float32),
        Draw("randn", (4, 8), torch.float32),
    )
    assert len(inputs) == 4 and [i.dtype for i in inputs[1:]] == [
        torch.bool,
        torch.float32,
        torch.float32,
    ]


@pytest.mark.parametrize("grad", [True, False], ids=["training", "inference"])
@pytest.mark.parametrize("fn", [_mask_fn, _rand_fn], ids=["dropout", "rand_randn"])
def test_neuron_manual_seed_makes_compiled_random_ops_reproducible(device, grad, fn):
    x = torch.ones(16, 32, device=device, requires_grad=grad)
    compiled = torch.compile(fn, backend="neuron")
    with torch.set_grad_enabled(grad):
        torch.neuron.manual_seed(1234)
        first = compiled(x).detach().cpu()
        second = compiled(x).detach().cpu()
        torch.neuron.manual_seed(1234)
        # re-seeding the CPU generator alone must not change the compiled draws
        torch.default_generator.manual_seed(99)
        again = compiled(x).detach().cpu()
        torch.neuron.manual_seed(1234)
        torch.default_generator.manual_seed(7)
        again2 = compiled(x).detach().cpu()
    assert torch.equal(first, again)
    assert torch.equal(first, again2)
    assert not torch.equal(first, second)  # the stream advances between calls


def test_compiled_dropout_does_not_draw_from_the_cpu_generator(device):
    x = torch.ones(8, 8, device=device, requires_grad=True)
    compiled = torch.compile(_mask_fn, backend="neuron")
    compiled(x)  # compile outside the measured call
    cpu_state = torch.get_rng_state()
    compiled(x).sum().backward()
    assert torch.equal(torch.get_rng_state(), cpu_state)


def test_eager_and_compiled_both_advance_the_neuron_generator(device):
    x = torch.ones(8, 8, device=device)
    compiled = torch.compile(_mask_fn, backend="neuron")
    for run in (_mask_fn, compiled):
        run(x)  # compile once
        before = torch.neuron.get_rng_state().clone()
        run(x)
        assert not torch.equal(torch.neuron.get_rng_state(), before), run


def test_compiled_dropout_masks_agree_between_forward_and_backward(device):
    """The seed input is drawn once per forward; the backward reuses the saved mask."""
    x = torch.randn(32, 32, device=device, requires_grad=True)
    compiled = torch.compile(_mask_fn, backend="neuron")
    torch.neuron.manual_seed(3)
    y = compiled(x)
    y.sum().backward()
    kept = y.detach().cpu() != 0
    assert torch.equal(x.grad.cpu() != 0, kept)
    assert 0.3 < kept.float().mean().item() < 0.7
