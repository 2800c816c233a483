"""--fake costs a fused or foreach optimizer's update: those ops take lists of tensors and
return nothing, and the recorder used to look for neuron tensors only among plain tensor
arguments and outputs, so nanoGPT's fused AdamW (`aten::_fused_adamw_`) recorded no work in
either column and the optimizer looked free."""

from __future__ import annotations

import torch

from torch_neuronx.evaluate import fake


def test_fused_adamw_update_is_recorded_in_both_columns():
    with fake.fake_session() as rec:
        model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 256))
        model = model.to("neuron")
        opt = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
        model(torch.randn(8, 256).to("neuron")).sum().backward()
        opt.step()
    param_bytes = sum(p.numel() * 4 for p in model.parameters())
    adam = [w for w in rec.works if w.name == "aten::_fused_adamw_"]
    assert len(adam) == 1  # eager: one kernel over every parameter
    # it reads at least parameters, gradients and both moments
    assert adam[0].bytes >= 4 * param_bytes
    optimizer_plan = [p for p in rec.graph_plans() if p.name == "fake step: optimizer"]
    assert any("_fused_adamw_" in w.name for w in optimizer_plan[0].works)  # compiled
