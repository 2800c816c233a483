"""karpathy/nanoGPT's own ``train.py`` and ``bench.py`` (verbatim copies in scripts/nanogpt, MIT)
under ``--fake`` at GPT-2 124M size, run from their folder as their README says, with
``data/openwebtext/{train,val}.bin`` written here as random tokens (issue 25, item 4).

What they need from ``--fake``: ``exec(open('configurator.py').read())`` from the working
directory, ``from model import GPT`` beside the script, torch.cuda calls and ``device='cuda'``,
``np.memmap`` batches sliced at ``torch.randint`` indices (drawn for real on the host), a
pinned-memory copy, fused AdamW, the evaluation loop at iteration 0 (left out of the step) and
gradient accumulation (every micro-batch is the step's)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from evaluate_support import SCRIPTS, line_of

from torch_neuronx.runtime import env

NANO = SCRIPTS / "nanogpt"
TOKENS = 12 * 1024  # nanoGPT's micro-batch: batch_size 12 x block_size 1024


def gpt2_flops_per_token(vocab=50304, L=12, d=768, T=1024):
    """nanoGPT's own count (model.estimate_mfu, PaLM appendix B): 6 N + 12 L d T per token, N
    without the position embedding; GPT-2 124M without biases."""
    n = vocab * d + L * (12 * d * d + 4 * d) + 2 * d
    return 6 * n + 12 * L * d * T


@pytest.fixture(scope="module")
def nano_dir(tmp_path_factory):
    """A checkout of the scripts with a prepared dataset, as ``data/openwebtext/prepare.py``
    leaves it (uint16 GPT-2 token ids)."""
    root = tmp_path_factory.mktemp("nanogpt")
    for f in ("train.py", "bench.py", "model.py", "configurator.py"):
        shutil.copy(NANO / f, root / f)
    data = root / "data" / "openwebtext"
    data.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        rng.integers(0, 50257, 20_000, dtype=np.uint16).tofile(data / f"{split}.bin")
    return root


def _check_flops(rep, tokens):
    fk = rep["fake_projection"]
    ratio = fk["flops_per_step"] / (gpt2_flops_per_token() * tokens)
    assert abs(ratio - 1) < 0.10, ratio
    # 6 N D leaves attention out: the count is a little above it, never far
    assert 0.95 < fk["flops_check"]["counted_over_six_n_d"] < 1.25
    return fk


def test_train_py_projects_gpt2_124m_with_accumulation_and_evaluation(run_eval, nano_dir):
    r = run_eval(
        "nano_train",
        "--fake",
        "train.py",
        "--eval_iters=3",
        "--gradient_accumulation_steps=2",
        cwd=nano_dir,
    )
    assert r.rc == 0, r.explain()
    rep = r.report
    assert rep["status"] == "ok" and rep["steps_completed"] == 1
    # two micro-batches of 12 x 1024 tokens are one step (the script prints 24,576 itself)
    assert "tokens per iteration will be: 24,576" in r.stdout
    assert rep["work"] == {"samples_per_step": 24, "tokens_per_step": 2 * TOKENS}
    fk = _check_flops(rep, 2 * TOKENS)
    assert fk["inputs"]["calls"] == 2 and fk["inputs"]["shape"] == [12, 1024]
    # the batches came from the memmap at real indices: 12 x 1024, not 12 x 0
    script = nano_dir / "train.py"
    assert (
        fk["inputs"]["site"]
        == f"{script}:{line_of(script, 'logits, loss = model(X, Y)', 2)} in <module>"
    )
    # estimate_loss at iteration 0: 3 batches x 2 splits, one traced, none in the step
    (ev,) = fk["evaluation_outside_step"]["forwards"]
    assert ev["calls"] == 6 and ev["module"] == "GPT"
    assert ev["site"].endswith("in estimate_loss")
    assert 0.9 < ev["flops_per_call"] / (gpt2_flops_per_token() * TOKENS / 3) < 1.1  # forward only
    # its loss.item() is the evaluation's read; the step's own read is the logging one
    (er,) = ev["host_reads"]
    assert er["site"].startswith(f"{script}:{line_of(script, 'losses[k] = loss.item()')} ")
    lossf = line_of(script, "lossf = loss.item() * gradient_accumulation_steps")
    assert [d["site"].split(" ")[0] for d in fk["data_dependence"]] == [f"{script}:{lossf}"]
    # its f-strings of fake losses printed the placeholder, as `python train.py` prints a value
    assert "step 0: train loss 1.0000, val loss 1.0000" in r.stdout
    calls = {c["call"] for c in fk["cuda_calls"]}
    assert {"torch.cuda.is_available", "torch.autocast('cuda')", "device 'cuda'"} <= calls
    # bf16 autocast (the script's own, on 'cuda'): no fp32-bound finding
    assert not [a for a in fk["advice"] if a["kind"] == "fp32-bound"]
    assert fk["recommendation"]["metric"] == "usd_per_million_tokens"


def test_bench_py_projects_gpt2_124m(run_eval, nano_dir):
    r = run_eval("nano_bench", "--fake", "bench.py", cwd=nano_dir)
    assert r.rc == 0, r.explain()
    rep = r.report
    assert rep["status"] == "ok"
    assert rep["work"] == {"samples_per_step": 12, "tokens_per_step": TOKENS}  # inferred
    fk = _check_flops(rep, TOKENS)
    assert fk["evaluation_outside_step"] is None
    script = nano_dir / "bench.py"
    calls = {(c["call"], int(c["site"].split(":")[1].split()[0])) for c in fk["cuda_calls"]}
    assert ("torch.cuda.synchronize", line_of(script, "torch.cuda.synchronize()")) in calls
    assert ("torch.cuda.manual_seed", line_of(script, "torch.cuda.manual_seed(seed)")) in calls
    assert all(c["site"].startswith(str(nano_dir)) for c in fk["cuda_calls"])  # not torch's own
    item = line_of(script, "lossf = loss.item()", 2)
    assert any(d["site"].startswith(f"{script}:{item}") for d in fk["data_dependence"])
    assert any("torch.neuron.synchronize" in i["item"] for i in rep["readiness"])
    rec = fk["recommendation"]
    assert rec["metric"] == "usd_per_million_tokens" and rec["modeled"] and rec["price_source"]
    assert rep["verdict"]["cheapest"]["profile"] == rec["profile"]


@pytest.mark.skipif(
    not env.flag("TORCH_NEURONX_TEST_FULL"),
    reason="train.py's defaults trace 40 micro-batches and 400 evaluation forwards (~2-4 min): "
    "TORCH_NEURONX_TEST_FULL=1",
)
def test_train_py_defaults(run_eval, nano_dir):
    r = run_eval("nano_train_defaults", "--fake", "train.py", cwd=nano_dir, timeout=900)
    assert r.rc == 0, r.explain()
    rep = r.report
    assert rep["work"]["tokens_per_step"] == 40 * TOKENS  # tokens per iteration: 491,520
    _check_flops(rep, 40 * TOKENS)
    (ev,) = rep["fake_projection"]["evaluation_outside_step"]["forwards"]
    assert ev["calls"] == 400
