"""One estimator (issue 23, item 5): project_model, --fake's projection (fake.project) and the
compiled-graph planner give the same compiled time for the same workload."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

from torch_neuronx import evaluate
from torch_neuronx.eager.op_policy import engine_for
from torch_neuronx.evaluate import fake, profiles
from torch_neuronx.perf import graph

H, HEADS, LAYERS, SEQ, BATCH, VOCAB, LR = 256, 4, 3, 128, 4, 1000, 1e-3


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.o = nn.Linear(H, 3 * H), nn.Linear(H, H)
        self.ln1, self.ln2 = nn.LayerNorm(H), nn.LayerNorm(H)
        self.up, self.down = nn.Linear(H, 4 * H), nn.Linear(4 * H, H)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, HEADS, H // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, H)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


class Bert(nn.Module):  # a few-layer BERT-like encoder with a token-classification loss
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, H)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.head = nn.Linear(H, VOCAB)

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x)
        return F.cross_entropy(self.head(x).flatten(0, 1), ids.flatten())


def _ids():
    return torch.zeros(BATCH, SEQ, dtype=torch.long)


def _build():
    m = Bert().to("neuron")
    return m, torch.optim.SGD(m.parameters(), lr=LR)


def _step(model, opt):
    model(_ids().to("neuron")).backward()
    opt.step()


def _planner_time(core) -> float:
    """The planner on make_fx graphs of the same step: forward + backward, then SGD's update."""
    m = Bert()
    names = [n for n, _ in m.named_parameters()]

    def fwd_bwd(ids, *ps):
        loss = torch.func.functional_call(m, dict(zip(names, ps)), (ids,))
        return (loss, *torch.autograd.grad(loss, ps))

    def sgd(ps, gs):
        for p, g in zip(ps, gs):
            p.add_(g, alpha=-LR)
        return ps

    ps = [p.detach().requires_grad_() for p in m.parameters()]
    gm = make_fx(fwd_bwd, tracing_mode="fake")(_ids(), *ps)
    upd = make_fx(sgd, tracing_mode="fake")(
        [p.detach() for p in ps], [torch.empty_like(p) for p in ps]
    )
    plans = [graph.plan_graph(g, n, engine_for) for g, n in ((gm, "fwd_bwd"), (upd, "sgd"))]
    return sum(p.duration(core) for p in plans)


def test_project_model_fake_and_planner_agree_on_compiled_time():
    profs = profiles.profiles(["trn2.3xlarge"])
    api = evaluate.project_model(_build, _step, instances=["trn2.3xlarge"])
    with fake.fake_session() as rec:
        model, opt = _build()
        _step(model, opt)
    fk = fake.project(rec, profs)
    plans = rec.graph_plans()
    assert [p.name for p in plans] == ["fake step: model", "fake step: optimizer"]
    a, f = api["profiles"][0]["compiled_step_s"], fk["profiles"][0]["compiled_step_s"]
    ref = _planner_time(profs[0].target.core)
    assert a == f
    assert abs(a - ref) <= 0.05 * ref, (a, ref)
    # the planner fuses: the compiled step is faster than the eager one
    assert a < api["profiles"][0]["step_s"]
