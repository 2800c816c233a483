"""--fake's rules for what a real training script does besides its step (fake.py,
fake_forwards.py), in process and small: host random draws carry real values; an evaluation
of the trained model is left out of the step, a frozen teacher's no-grad forward is in it;
repeated inference forwards run once; every micro-batch of an accumulation is the step's."""

from __future__ import annotations

import torch

from torch_neuronx.evaluate import fake, profiles


def test_host_draws_are_the_values_python_would_draw():
    with fake.fake_session():
        torch.manual_seed(0)
        ix = torch.randint(100, (5,))
        drawn = [int(i) for i in ix]  # numpy's __index__ path: one element at a time
        perm = torch.randperm(10).tolist()
        on_device = torch.randint(100, (5,), device="neuron")
    torch.manual_seed(0)
    assert drawn == torch.randint(100, (5,)).tolist()
    assert perm == torch.randperm(10).tolist()
    assert type(on_device).__name__ == "FakeTensor" and on_device.constant is None


def _flops(n_in, n_out, batch):
    return 2 * n_in * n_out * batch


def test_evaluation_is_left_out_teacher_and_micro_batches_are_in():
    with fake.fake_session() as rec:
        student = torch.nn.Linear(64, 32).to("neuron")
        teacher = torch.nn.Linear(64, 32).to("neuron").eval()
        opt = torch.optim.SGD(student.parameters(), lr=0.1)
        x = torch.randn(8, 64, device="neuron")
        student.eval()
        with torch.no_grad():
            for _ in range(3):  # an evaluation loop of the trained model: one traced, 3 calls
                student(x).sum().item()
        student.train()
        for _ in range(2):  # two micro-batches, each with a frozen teacher's no-grad forward
            with torch.no_grad():
                t = teacher(x)
            (student(x) - t).pow(2).mean().backward()
        opt.step()
    fk = fake.project(rec, profiles.profiles(["trn2.3xlarge"], 2))
    (ev,) = fk["evaluation_outside_step"]["forwards"]
    assert ev["module"] == "Linear" and ev["calls"] == 3
    assert ev["flops_per_call"] >= _flops(64, 32, 8)
    assert ev["host_reads"] and not fk["data_dependence"]  # .item() of the evaluation's output
    # the step: 2 x (student forward + weight gradient; x needs none) and 2 teacher forwards
    # (the second replayed), never the evaluation
    mm = 2 * 2 * _flops(64, 32, 8) + 2 * _flops(64, 32, 8)
    assert mm <= fk["flops_per_step"] < 1.2 * mm
    assert fake.inferred_work(rec)["samples_per_step"] == 16 and fk["inputs"]["calls"] == 2
