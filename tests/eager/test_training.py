"""End-to-end training on the neuron device, compared with the identical CPU run.

Every test builds the same seeded model and data on both devices (see
``torch_neuronx.testing.models``), runs the same training procedure, and compares
losses / gradients / parameters. The emulated NeuronCore runs the CPU kernels on device
memory, so results are bit-identical to CPU (README, "What the emulation is") and the
comparisons are exact. Tolerances remain only where bit-identity is not the claim:
autocast (the neuron device autocasts CUDA's op lists, the CPU its own) and identities
that hold mathematically but not bitwise on one device (accumulated against full-batch
gradients, the norm after clipping).

Each test also checks that the work really happened on the neuron device (tensor
devices, optimizer state, autocast dtype) and that training actually moved the
parameters, so a no-op or a silent CPU fallback cannot pass.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

from torch_neuronx.testing.models import (
    GPTConfig,
    build_mlp,
    build_tinygpt,
    make_batch,
    make_mlp_batch,
    max_rel_diff,
    train_tinygpt,
)

DEVICE = "neuron"
DEVICE_TYPE = "neuron"

# autocast bf16: CPU and neuron autocast different op lists, and bf16 has ~3
# significant digits; this is a sanity bound, not an exactness check.
AMP_LOSS_RTOL = 3e-2
AMP_UPDATE_RTOL = 0.15  # per-tensor relative norm of (update_dev - update_cpu); ~0.03 seen

# (result key, device)
_RUNS = (("dev", DEVICE), ("cpu", "cpu"))

SMALL_GPT = GPTConfig()  # defaults: vocab 64, d_model 32, 2 heads, 2 layers, seq 16


@pytest.fixture(scope="module", autouse=True)
def _single_thread():
    """These models are tiny: intra-op threads only add synchronisation, and on a busy
    shared machine a descheduled OpenMP worker can stall every op by ~100x. One thread
    also makes CPU reductions run in a fixed order."""
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


# --------------------------------------------------------------------------- helpers


def _named_params(model):
    return dict(model.named_parameters())


def assert_on_device(model: nn.Module, with_grads: bool = False):
    for name, p in model.named_parameters():
        assert p.device.type == DEVICE_TYPE, f"{name} is on {p.device}, expected {DEVICE}"
        if with_grads:
            assert p.grad is not None, f"{name} has no grad"
            assert p.grad.device.type == DEVICE_TYPE, f"{name}.grad is on {p.grad.device}"


def assert_exact(actual, expected, what=""):
    """Bit-identical (NaNs included), with assert_close's report of the differences."""
    torch.testing.assert_close(
        actual,
        expected,
        rtol=0,
        atol=0,
        equal_nan=True,
        msg=(lambda m: f"{what}: {m}") if what else None,
    )


def assert_models_equal(model_dev, model_cpu, grads=False):
    """Parameters (and optionally grads) of the two models are bit-identical."""
    pd, pc = _named_params(model_dev), _named_params(model_cpu)
    assert pd.keys() == pc.keys()
    for name in pc:
        assert_exact(pd[name].detach().cpu(), pc[name].detach(), f"param {name}")
        if grads:
            gd, gc = pd[name].grad, pc[name].grad
            assert (gd is None) == (gc is None), f"grad presence differs for {name}"
            if gc is not None:
                assert_exact(gd.cpu(), gc, f"grad {name}")


def assert_params_moved(model_before: dict, model_after: nn.Module, min_changed=0.9):
    """At least ``min_changed`` of the parameter tensors changed during training."""
    after = _named_params(model_after)
    changed = sum(
        not torch.equal(before, after[n].detach().cpu()) for n, before in model_before.items()
    )
    assert changed >= min_changed * len(model_before), (
        f"only {changed}/{len(model_before)} parameters changed: did the optimizer run?"
    )


def snapshot(model):
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters()}


def assert_losses_equal(dev_losses, cpu_losses):
    assert dev_losses == cpu_losses, (
        f"{DEVICE} losses differ from CPU:\n  {DEVICE}: {dev_losses}\n  cpu:    {cpu_losses}"
    )


def assert_losses_close(dev_losses, cpu_losses, rtol):
    assert len(dev_losses) == len(cpu_losses)
    rel = max_rel_diff(dev_losses, cpu_losses)
    assert rel <= rtol, (
        f"{DEVICE} losses diverge from CPU: max rel diff {rel:.3e} > {rtol:.0e}\n"
        f"  {DEVICE}: {dev_losses}\n  cpu:    {cpu_losses}"
    )


# --------------------------------------------------------------------------- TinyGPT


def test_tinygpt_adamw_20_steps_matches_cpu():
    cfg = SMALL_GPT
    m_dev = build_tinygpt(0, DEVICE, cfg)
    m_cpu = build_tinygpt(0, "cpu", cfg)
    assert_on_device(m_dev)
    # Tied head: the same Parameter object after .to(device).
    assert m_dev.lm_head.weight is m_dev.tok_emb.weight
    before = snapshot(m_cpu)
    dev_losses = train_tinygpt(DEVICE, steps=20, seed=0, config=cfg, model=m_dev)
    cpu_losses = train_tinygpt("cpu", steps=20, seed=0, config=cfg, model=m_cpu)

    assert all(torch.isfinite(torch.tensor(dev_losses)))
    assert_losses_equal(dev_losses, cpu_losses)
    # It learned something (the synthetic data is structured): guards against no-op steps.
    assert cpu_losses[-1] < cpu_losses[0] - 0.2, cpu_losses
    assert_on_device(m_dev, with_grads=True)
    assert_params_moved(before, m_dev)
    # Bit-identical everywhere, including the attention *key* bias, whose true gradient
    # is exactly zero (softmax is invariant to adding the same score to a whole row): its
    # computed gradient is rounding noise that Adam scales up to lr-sized steps, so any
    # difference in the last bits would show there first.
    assert_models_equal(m_dev, m_cpu)


def test_tinygpt_forward_eval_logits_match_cpu():
    m_dev, m_cpu = build_tinygpt(3, DEVICE).eval(), build_tinygpt(3, "cpu").eval()
    idx, tgt = make_batch(7)
    with torch.no_grad():
        logits_d, loss_d = m_dev(idx.to(DEVICE), tgt.to(DEVICE))
        logits_c, loss_c = m_cpu(idx, tgt)
    assert logits_d.device.type == DEVICE_TYPE
    assert logits_d.shape == (4, SMALL_GPT.seq_len, SMALL_GPT.vocab_size)
    assert_exact(logits_d.cpu(), logits_c, "logits")
    assert_exact(loss_d.cpu(), loss_c, "loss")


# --------------------------------------------------------------------------- nn + autograd


class _Zoo(nn.Module):
    """A grab bag of common (non-convolution) layers, so one forward/backward touches
    many kernels."""

    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(24, 32)
        self.bn = nn.BatchNorm1d(32)
        self.gn = nn.GroupNorm(4, 32)
        self.ln = nn.LayerNorm(32)
        self.emb = nn.Embedding(10, 32)
        self.gate = nn.Linear(32, 32)
        self.head = nn.Linear(32, 5)

    def forward(self, feats, tok):
        x = F.relu(self.bn(self.fc_in(feats)))
        x = F.silu(self.gn(x))
        x = self.ln(torch.tanh(x) + F.leaky_relu(x, 0.1))
        x = x + self.emb(tok).mean(1)
        x = torch.sigmoid(self.gate(x)) * F.gelu(x) + F.softplus(x).clamp(max=3.0)
        return F.log_softmax(self.head(F.dropout(x, 0.0)), dim=-1)


def _zoo_inputs(device):
    g = torch.Generator().manual_seed(11)
    feats = torch.randn(8, 24, generator=g)
    tok = torch.randint(0, 10, (8, 6), generator=g)
    y = torch.randint(0, 5, (8,), generator=g)
    return feats.to(device), tok.to(device), y.to(device)


def _fwd_bwd_compare(model_cpu, inputs_fn, loss_fn):
    model_dev = copy.deepcopy(model_cpu).to(DEVICE)
    outs = {}
    for key, dev, model in (("dev", DEVICE, model_dev), ("cpu", "cpu", model_cpu)):
        x, *rest = inputs_fn(dev)
        x.requires_grad_(True)
        out = model(x, *rest[:-1])
        loss = loss_fn(out, rest[-1])
        loss.backward()
        outs[key] = (out.detach(), loss.detach(), x.grad)
    out_d, loss_d, xg_d = outs["dev"]
    out_c, loss_c, xg_c = outs["cpu"]
    assert out_d.device.type == DEVICE_TYPE and xg_d.device.type == DEVICE_TYPE
    assert_exact(out_d.cpu(), out_c, "output")
    assert_exact(loss_d.cpu(), loss_c, "loss")
    assert_exact(xg_d.cpu(), xg_c, "input grad")
    assert_on_device(model_dev, with_grads=True)
    assert_models_equal(model_dev, model_cpu, grads=True)
    return model_dev


def test_nn_modules_and_autograd_match_cpu():
    torch.manual_seed(0)
    zoo_cpu = _Zoo()
    zoo_dev = _fwd_bwd_compare(
        zoo_cpu, _zoo_inputs, lambda out, y: F.nll_loss(out, y) + 0.01 * out.pow(2).mean()
    )
    # BatchNorm running statistics were updated on the device as on the CPU.
    assert_exact(zoo_dev.bn.running_mean.cpu(), zoo_cpu.bn.running_mean, "running_mean")
    assert_exact(zoo_dev.bn.running_var.cpu(), zoo_cpu.bn.running_var, "running_var")
    assert int(zoo_dev.bn.num_batches_tracked.cpu()) == 1


class _ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.head = nn.Linear(8, 5)

    def forward(self, img):
        x = self.pool(F.relu(self.bn(self.conv1(img))))
        x = F.adaptive_avg_pool2d(F.gelu(self.conv2(x)), 1).flatten(1)
        return self.head(x)


def _conv_inputs(device):
    g = torch.Generator().manual_seed(12)
    img = torch.randn(4, 3, 8, 8, generator=g)
    y = torch.randint(0, 5, (4,), generator=g)
    return img.to(device), y.to(device)


def test_conv_net_and_autograd_match_cpu():
    torch.manual_seed(0)
    net_cpu = _ConvNet()
    net_dev = _fwd_bwd_compare(net_cpu, _conv_inputs, F.cross_entropy)
    assert_exact(net_dev.bn.running_var.cpu(), net_cpu.bn.running_var, "running_var")


def test_autograd_grad_and_double_backward_match_cpu():
    res = {}
    for key, dev in _RUNS:
        g = torch.Generator().manual_seed(5)
        x = torch.randn(6, 5, generator=g).to(dev).requires_grad_(True)
        w = torch.randn(5, 3, generator=g).to(dev).requires_grad_(True)
        y = torch.tanh(x @ w).pow(3).sum()
        (gx,) = torch.autograd.grad(y, x, create_graph=True)
        z = (gx * gx).sum()
        (gw,) = torch.autograd.grad(z, w)
        res[key] = (y.detach(), gx.detach(), gw)
    for what, a, b in zip(("y", "dy/dx", "d|dy/dx|^2/dw"), res["dev"], res["cpu"], strict=True):
        assert a.device.type == DEVICE_TYPE
        assert_exact(a.cpu(), b, what)


# --------------------------------------------------------------------------- optimizers

_OPTS = {
    "sgd": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    "adam": (torch.optim.Adam, dict(lr=1e-2, weight_decay=1e-3)),
    "adamw": (torch.optim.AdamW, dict(lr=1e-2, weight_decay=1e-2)),
}


def _run_mlp(device, opt_name, impl, steps=5):
    model = build_mlp(0, device)
    cls, kw = _OPTS[opt_name]
    opt = cls(model.parameters(), **kw, **{impl: True})
    losses = []
    for i in range(steps):
        x, y = make_mlp_batch(100 + i, device=device)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().cpu()))
    return model, opt, losses


@pytest.mark.parametrize("impl", ["foreach", "fused"])
@pytest.mark.parametrize("opt_name", ["sgd", "adam", "adamw"])
def test_optimizer_matches_cpu(opt_name, impl):
    before = snapshot(build_mlp(0, "cpu"))
    m_dev, opt_dev, l_dev = _run_mlp(DEVICE, opt_name, impl)
    m_cpu, _, l_cpu = _run_mlp("cpu", opt_name, impl)
    assert opt_dev.param_groups[0][impl] is True
    assert_losses_equal(l_dev, l_cpu)
    assert_params_moved(before, m_dev)
    assert_on_device(m_dev, with_grads=True)
    assert_models_equal(m_dev, m_cpu)
    # Optimizer state lives on the device too.
    for p in m_dev.parameters():
        state = opt_dev.state[p]
        assert state, "optimizer kept no state"
        for k, v in state.items():
            if isinstance(v, torch.Tensor) and v.dim() > 0:
                assert v.device.type == DEVICE_TYPE, f"state {k} on {v.device}"


# --------------------------------------------------------------------------- grad clipping


@pytest.mark.parametrize("foreach", [False, True])
def test_clip_grad_norm_matches_cpu(foreach):
    res = {}
    for key, dev in _RUNS:
        model = build_tinygpt(1, dev)
        idx, tgt = make_batch(2, device=dev)
        _, loss = model(idx, tgt)
        (loss * 50).backward()  # large grads, so clipping is active
        total = torch.nn.utils.clip_grad_norm_(
            model.parameters(), max_norm=0.5, foreach=foreach, error_if_nonfinite=True
        )
        clipped_total = torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(p.grad) for p in model.parameters()])
        )
        res[key] = (model, total, clipped_total)
    m_dev, tot_dev, clipped_dev = res["dev"]
    m_cpu, tot_cpu, clipped_cpu = res["cpu"]
    assert tot_dev.device.type == DEVICE_TYPE
    assert float(tot_cpu) > 0.5, "test setup: gradients too small to be clipped"
    assert_exact(tot_dev.cpu(), tot_cpu, "total norm")
    # after clipping the norm is max_norm up to rounding (an identity, not bit-exact)
    torch.testing.assert_close(clipped_dev.cpu(), torch.tensor(0.5), rtol=1e-4, atol=0)
    torch.testing.assert_close(clipped_cpu, torch.tensor(0.5), rtol=1e-4, atol=0)
    assert_models_equal(m_dev, m_cpu, grads=True)


def test_clip_grad_norm_in_training_loop_matches_cpu():
    dev_losses = train_tinygpt(DEVICE, steps=8, seed=4, clip_grad_norm=0.1)
    cpu_losses = train_tinygpt("cpu", steps=8, seed=4, clip_grad_norm=0.1)
    assert_losses_equal(dev_losses, cpu_losses)


def test_clip_grad_norm_nonfinite_raises_on_device():
    model = build_mlp(0, DEVICE)
    x, y = make_mlp_batch(0, device=DEVICE)
    F.cross_entropy(model(x), y).backward()
    with torch.no_grad():
        model.fc1.weight.grad[0, 0] = float("inf")
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)


# --------------------------------------------------------------------------- accumulation


def _accumulate(device, micro_batches=4, micro_size=2, steps=3):
    model = build_tinygpt(2, device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for k in range(micro_batches):
            idx, tgt = make_batch(1000 * step + k, batch_size=micro_size, device=device)
            _, loss = model(idx, tgt)
            (loss / micro_batches).backward()
            total += float(loss.detach().cpu()) / micro_batches
        grads = {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}
        opt.step()
        losses.append(total)
    return model, losses, grads


def test_gradient_accumulation_matches_cpu():
    m_dev, l_dev, g_dev = _accumulate(DEVICE)
    m_cpu, l_cpu, g_cpu = _accumulate("cpu")
    assert_losses_equal(l_dev, l_cpu)
    assert g_dev.keys() == g_cpu.keys()
    for n in g_cpu:
        assert_exact(g_dev[n], g_cpu[n], f"accumulated grad {n}")
    assert_models_equal(m_dev, m_cpu)


def test_gradient_accumulation_equals_full_batch_on_device():
    """Accumulating (loss / k) over k micro-batches gives the full-batch gradient (up to
    rounding: the sums are ordered differently, so this identity is not bit-exact)."""
    model = build_tinygpt(2, DEVICE)
    batches = [make_batch(50 + k, batch_size=2, device=DEVICE) for k in range(4)]
    for idx, tgt in batches:
        _, loss = model(idx, tgt)
        (loss / len(batches)).backward()
    acc = {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    idx = torch.cat([b[0] for b in batches])
    tgt = torch.cat([b[1] for b in batches])
    _, loss = model(idx, tgt)
    loss.backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(
            acc[n], p.grad.cpu(), rtol=1e-4, atol=1e-6, msg=lambda m, n=n: f"grad {n}: {m}"
        )


# --------------------------------------------------------------------------- autocast + GradScaler


def _amp_run(device, steps=6):
    dtype = torch.device(device).type
    model = build_tinygpt(5, device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler(dtype, init_scale=2.0**10, growth_interval=2)
    losses, scales, logit_dtypes = [], [], set()
    for i in range(steps):
        idx, tgt = make_batch(300 + i, device=device)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dtype, dtype=torch.bfloat16):
            logits, loss = model(idx, tgt)
        logit_dtypes.add(logits.dtype)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.detach().float().cpu()))
        scales.append(float(scaler.get_scale()))
    return model, losses, scales, logit_dtypes


def test_autocast_bf16_with_grad_scaler_matches_cpu_autocast():
    m_dev, l_dev, s_dev, dt_dev = _amp_run(DEVICE)
    m_cpu, l_cpu, s_cpu, dt_cpu = _amp_run("cpu")
    # autocast really was active on the device: the LM head (a linear) ran in bf16.
    assert dt_dev == {torch.bfloat16}, f"logits dtype under autocast: {dt_dev}"
    assert dt_cpu == {torch.bfloat16}
    # Parameters and grads stay fp32 (autocast casts activations only).
    assert all(p.dtype == torch.float32 for p in m_dev.parameters())
    assert_on_device(m_dev, with_grads=True)
    # No overflow in this tiny model: every step applied, scale grew every 2 steps.
    assert s_dev == s_cpu == [2.0**10 * 2 ** ((i + 1) // 2) for i in range(6)], (s_dev, s_cpu)
    assert_losses_close(l_dev, l_cpu, rtol=AMP_LOSS_RTOL)
    # Element-wise parameter equality is too strict here: bf16 rounding noise in small
    # gradients is amplified by Adam. Compare each tensor's total update instead.
    assert_updates_close(snapshot(build_tinygpt(5)), m_dev, m_cpu, rtol=AMP_UPDATE_RTOL)


def _without_key_bias(name, t, d_model):
    """Drop the attention key-bias slice (its true gradient is exactly zero, so its
    updates are pure rounding noise; see test_tinygpt_adamw_20_steps_matches_cpu)."""
    if name.endswith("attn.qkv.bias"):
        return torch.cat([t[:d_model], t[2 * d_model :]])
    return t


def assert_updates_close(init: dict, model_dev, model_cpu, rtol):
    """``||update_dev - update_cpu|| / ||update_cpu|| <= rtol`` for every parameter,
    where ``update = param - init``."""
    d_model = model_cpu.config.d_model
    pd = _named_params(model_dev)
    for name, pc in model_cpu.named_parameters():
        ud = _without_key_bias(name, pd[name].detach().cpu() - init[name], d_model)
        uc = _without_key_bias(name, pc.detach() - init[name], d_model)
        assert float(uc.norm()) > 0, f"{name} was not updated on the CPU"
        rel = float((ud - uc).norm() / uc.norm())
        assert rel <= rtol, f"{name}: {DEVICE} update differs from CPU's by {rel:.3f} (> {rtol})"


def test_grad_scaler_skips_step_on_inf_and_backs_off():
    res = {}
    for key, dev in _RUNS:
        dtype = torch.device(dev).type
        model = build_mlp(0, dev)
        before = snapshot(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(dtype, init_scale=256.0, backoff_factor=0.5)
        x, y = make_mlp_batch(0, device=dev)
        scaler.scale(F.cross_entropy(model(x), y)).backward()
        with torch.no_grad():
            model.fc2.bias.grad[0] = float("nan")
        scaler.step(opt)
        scaler.update()
        res[key] = (model, before, scaler.get_scale())
    for key, (model, before, scale) in res.items():
        assert scale == 128.0, f"{key}: scale {scale} after overflow, expected 128"
        after = snapshot(model)
        for n in before:
            assert torch.equal(before[n], after[n]), f"{key}: {n} changed despite inf grads"


# --------------------------------------------------------------------------- checkpointing


def _ckpt_grads(device, checkpointing, dropout=0.0, seed=None):
    model = build_tinygpt(6, device, dropout=dropout)
    model.gradient_checkpointing = checkpointing
    idx, tgt = make_batch(9, device=device)
    if seed is not None:
        torch.manual_seed(seed)  # seeds the CPU and every device generator
    _, loss = model(idx, tgt)
    loss.backward()
    return float(loss.detach().cpu()), {n: p.grad.cpu() for n, p in model.named_parameters()}


def test_checkpoint_matches_cpu():
    loss_d, g_d = _ckpt_grads(DEVICE, checkpointing=True)
    loss_c, g_c = _ckpt_grads("cpu", checkpointing=False)
    assert loss_d == loss_c
    assert g_d.keys() == g_c.keys()
    for n in g_c:
        assert_exact(g_d[n], g_c[n], f"grad {n}")


def test_checkpoint_replays_device_rng_for_dropout():
    """With dropout inside checkpointed blocks, the recomputation must replay the same
    device RNG stream (preserve_rng_state) or the gradients would be wrong."""
    loss_ref, g_ref = _ckpt_grads(DEVICE, checkpointing=False, dropout=0.2, seed=123)
    loss_ck, g_ck = _ckpt_grads(DEVICE, checkpointing=True, dropout=0.2, seed=123)
    loss_other, _ = _ckpt_grads(DEVICE, checkpointing=False, dropout=0.2, seed=321)
    assert loss_ref != loss_other, "dropout did not depend on the device seed"
    # the recomputation replays the same kernels on the same values: the same bits
    assert loss_ck == loss_ref
    for n in g_ref:
        assert_exact(g_ck[n], g_ref[n], f"grad {n}")


def test_checkpoint_function_api_use_reentrant_true_matches_cpu():
    res = {}
    for key, dev in _RUNS:
        torch.manual_seed(0)
        lin1, lin2 = nn.Linear(16, 32), nn.Linear(32, 16)
        lin1, lin2 = lin1.to(dev), lin2.to(dev)
        x = make_mlp_batch(3, batch_size=8, in_features=16, device=dev)[0].requires_grad_(True)

        def seg(t, lin1=lin1, lin2=lin2):
            return lin2(F.gelu(lin1(t)))

        out = torch.utils.checkpoint.checkpoint(seg, x, use_reentrant=True)
        out.pow(2).sum().backward()
        res[key] = (out.detach().cpu(), x.grad.cpu(), lin1.weight.grad.cpu())
    for what, a, b in zip(
        ("output", "input grad", "lin1 grad"), res["dev"], res["cpu"], strict=True
    ):
        assert_exact(a, b, what)


# --------------------------------------------------------------------------- the helpers


def test_models_are_deterministic_and_leave_global_rng_alone():
    state = torch.get_rng_state()
    a, b = build_tinygpt(0), build_tinygpt(0)
    c = build_tinygpt(1)
    x1, x2 = make_batch(4), make_batch(4)
    assert torch.equal(state, torch.get_rng_state()), "builders consumed the global RNG"
    for (n, p), q, r in zip(a.named_parameters(), b.parameters(), c.parameters(), strict=True):
        assert torch.equal(p, q), n
        if p.dim() > 1:
            assert not torch.equal(p, r), f"{n} does not depend on the seed"
    assert torch.equal(x1[0], x2[0]) and torch.equal(x1[1], x2[1])
    assert torch.equal(x1[0][:, 1:], x1[1][:, :-1]), "targets are not idx shifted by one"
    assert not torch.equal(make_batch(5)[0], x1[0])


def test_models_move_to_device_unchanged():
    m_cpu = build_tinygpt(0)
    m_dev = build_tinygpt(0, DEVICE)
    assert_models_equal(m_dev, m_cpu)
    idx, tgt = make_batch(0, device=DEVICE)
    assert idx.device.type == DEVICE_TYPE and idx.dtype == torch.int64
    assert torch.equal(idx.cpu(), make_batch(0)[0])
