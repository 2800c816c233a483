"""--fake costs a fused or foreach optimizer's update: those ops take lists of tensors and
return nothing, and the recorder used to look for neuron tensors only among plain tensor
arguments and outputs, so nanoGPT's fused AdamW (`aten::_fused_adamw_`) recorded no work in
either column and the optimizer looked free."""

from __future__ import annotations

import pytest
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


def test_next_steps_first_op_taking_a_list_ends_the_trace():
    """The trace of one step ends at the next step's first device op. When that op takes its
    tensors in a list -- ``zero_grad(set_to_none=False)`` of a foreach optimizer runs
    ``aten::_foreach_zero_`` over the gradients -- the step-end check used to see no neuron
    tensor, and the trace ran on into the next step's forward."""
    from torch_neuronx.evaluate.steps import StepLimitReached

    with fake.fake_session() as rec:
        model = torch.nn.Linear(16, 16).to("neuron")
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
        model(torch.randn(4, 16).to("neuron")).sum().backward()
        opt.step()
        rec.end_step()  # what the step tracker calls at the optimizer's post-step hook
        with pytest.raises(StepLimitReached):
            opt.zero_grad(set_to_none=False)  # the next step's first device op
        assert rec.ended
        assert [w.name for w in rec.works].count("aten::_foreach_zero_") == 0  # not this step's
