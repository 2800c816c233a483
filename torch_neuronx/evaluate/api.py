"""The Python API: N steps of a model on neuron eager, neuron compiled and a reference device,
compared step by step, in one report.

    from torch_neuronx import evaluate
    rep = evaluate.evaluate_model(
        TinyGPT(), inputs=[make_batch(i) for i in range(5)],
        loss_fn=lambda out, batch: out[1], optimizer_factory=lambda ps: torch.optim.AdamW(ps, lr=1e-3),
        steps=5, out_dir="eval-out")

``model`` is a module on the CPU (each run gets its own deep copy, so all start from the same
weights); ``inputs`` is one batch (a tuple of tensors, reused every step), a list of batches, or a
function ``step -> batch``; the model is called as ``model(*batch)`` and ``loss_fn(output, batch)``
returns the scalar loss. The reference device is the CPU unless ``reference`` names another
available device (``"auto"``: CUDA when present).
"""

from __future__ import annotations

import copy
import math
import time

import torch

from . import fake as _fake
from . import profiles as _profiles
from . import report as _report
from .session import Evaluation, write


def _batch_for(inputs, i):
    if callable(inputs):
        b = inputs(i)
    elif isinstance(inputs, list):
        b = inputs[i % len(inputs)]
    else:
        b = inputs
    return b if isinstance(b, tuple) else (b,)


def _to(batch, device):
    return tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in batch)


def _output_summary(out) -> float | None:
    t = out[0] if isinstance(out, (tuple, list)) else out
    if hasattr(t, "logits"):
        t = t.logits
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return None
    return float(t.detach().float().abs().mean().cpu())


def _run(model, inputs, loss_fn, optimizer_factory, steps, device, compiled=False, ev=None):
    m = copy.deepcopy(model).to(device)
    opt = optimizer_factory(m.parameters())
    fwd = torch.compile(m, backend="neuron") if compiled else m
    out = {
        "device": str(device),
        "compiled": compiled,
        "loss": [],
        "grad_norm": [],
        "output": [],
        "wall_s": [],
    }
    for i in range(steps):
        t0 = time.perf_counter()
        batch = _to(_batch_for(inputs, i), device)
        opt.zero_grad(set_to_none=True)
        y = fwd(*batch)
        loss = loss_fn(y, batch)
        loss.backward()
        grads = [p.grad for p in m.parameters() if p.grad is not None]
        ctx = ev.collector.internal() if ev is not None else _null()
        with ctx:
            gn = (
                math.sqrt(sum(float(g.detach().float().pow(2).sum().cpu()) for g in grads))
                if grads
                else None
            )
            out["output"].append(_output_summary(y))
            lv = float(loss.detach().float().cpu())
        opt.step()  # the step tracker (steps.py) reads the gradient norm before it, as above
        out["loss"].append(lv)
        out["grad_norm"].append(gn)
        if ev is not None:
            ev.collector.mark_step(lv)
        out["wall_s"].append(time.perf_counter() - t0)
    return out, m, opt


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _work(inputs) -> dict:
    b = _batch_for(inputs, 0)
    x = b[0] if b and isinstance(b[0], torch.Tensor) else None
    if x is None or x.dim() == 0:
        return {}
    w = {"samples_per_step": int(x.shape[0])}
    if not x.is_floating_point():
        w["tokens_per_step"] = int(x.numel())
    return w


def evaluate_model(
    model,
    inputs,
    loss_fn,
    optimizer_factory,
    *,
    steps: int = 5,
    compiled: bool = True,
    reference: str = "cpu",
    instances=None,
    prices=None,
    tolerances=None,
    out_dir=None,
    device: str = "neuron",
) -> dict:
    """Runs ``steps`` steps on neuron eager, neuron compiled (``compiled=True``) and ``reference``;
    returns the report (and writes report.json / report.html into ``out_dir`` when given)."""
    profs = _profiles.profiles(
        instances, prices=_profiles.parse_prices(prices) if isinstance(prices, str) else prices
    )
    if reference == "auto":
        reference = "cuda" if torch.cuda.is_available() else "cpu"
    work = _work(inputs)
    runs = {}
    ev = Evaluation("api", profs, work=work, tolerances=tolerances)
    ev.collector.explicit = True
    static = None
    with ev:
        try:
            runs["neuron_eager"], m, opt = _run(
                model, inputs, loss_fn, optimizer_factory, steps, device, ev=ev
            )
            static = _fake.static_bytes(list(m.parameters()), [opt])
        except Exception as e:
            ev.fail(e)
    compile_report = None
    if compiled and ev.error is None:
        ev_c = Evaluation("api-compiled", profs, work=work, tolerances=tolerances)
        ev_c.collector.explicit = True
        with ev_c:
            try:
                runs["neuron_compiled"], _, _ = _run(
                    model, inputs, loss_fn, optimizer_factory, steps, device, compiled=True, ev=ev_c
                )
            except Exception as e:
                ev_c.fail(e)
                ev.fail(e)
        compile_report = ev_c.report(static=static)
    runs["reference"], _, _ = _run(model, inputs, loss_fn, optimizer_factory, steps, reference)
    rep = ev.report(runs=runs, static=static)
    if compile_report is not None:
        rep["compilation"] = compile_report["compilation"]
        rep["projection"]["compiled_run"] = compile_report["projection"]["profiles"]
        rep["placement"]["compiled_run_fallback_calls"] = compile_report["placement"][
            "fallback_calls"
        ]
    _report.finish(rep)  # the one builder's last phase, as for the CLI
    if out_dir:
        rep["files"] = write(rep, out_dir)
    return rep


def project_model(
    build,
    step_fn,
    *,
    dp: int = 1,
    tp: int = 1,
    instances=None,
    prices=None,
    work: dict | None = None,
) -> dict:
    """The fake-mode twin of ``--fake``: ``build()`` returns (model, optimizer) -- called under
    fake tensors, so build at full size --, ``step_fn(model, optimizer)`` runs one training step.
    Returns the ``fake_projection`` section (FLOPs, bytes, peak memory per core, modeled step time
    per profile for FSDP degree ``dp`` x tensor-parallel degree ``tp``)."""
    profs = _profiles.profiles(
        instances, prices=_profiles.parse_prices(prices) if isinstance(prices, str) else prices
    )
    with _fake.fake_session() as rec:
        model, opt = build()
        step_fn(model, opt)
        static = _fake.static_bytes(list(model.parameters()), [opt] if opt is not None else [])
    return _fake.project(rec, profs, dp=dp, tp=tp, static=static, work=work)
