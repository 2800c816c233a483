"""Errors a user can act on (issue 2, point 9)."""

import pytest
import torch


def test_mixed_devices_rejected():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="neuron") + torch.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(torch.ones(2, 2, device="neuron"), torch.ones(2, 2))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="neuron:0") + torch.ones(3, device="neuron:1")


def test_cpu_scalars_are_allowed():
    x = torch.ones(3, device="neuron")
    assert torch.equal((x * torch.tensor(2.0)).cpu(), torch.full((3,), 2.0))
    assert torch.equal(torch.where(x > 0, x, torch.tensor(0.0)).cpu(), torch.ones(3))


@pytest.mark.parametrize(
    "index,bad",
    [
        (9, lambda: torch.ones(2, device="neuron:9")),
        (9, lambda: torch.neuron.set_device(9)),
        (4, lambda: torch.ones(2).to("neuron:4")),
    ],
    ids=["factory", "set_device", "to"],
)
def test_bad_device_index(index, bad):
    with pytest.raises(
        IndexError,
        match=rf"Invalid device index neuron:{index}: .* valid indices "
        r"are 0\.\.3 \(see NEURON_RT_VISIBLE_CORES",
    ):
        bad()


def test_fork_after_init_says_spawn(py):
    py("""
        import multiprocessing as mp, torch
        torch.ones(1, device='neuron')      # initialises the runtime
        def child(q):
            try:
                torch.ones(1, device='neuron')
                q.put('no error')
            except RuntimeError as e:
                q.put(str(e))
        ctx = mp.get_context('fork')
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start(); p.join(60)
        msg = q.get(timeout=10)
        assert 'spawn' in msg and 'forked' in msg, msg
        """)


def test_spawn_works(py):
    py("""
        import multiprocessing as mp, torch
        def child(q):
            import torch
            q.put(torch.ones(2, device='neuron').sum().item())
        if __name__ == '__main__':
            torch.ones(1, device='neuron')
            ctx = mp.get_context('spawn')
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,))
            p.start(); p.join(120)
            assert p.exitcode == 0, p.exitcode
            assert q.get(timeout=10) == 2.0
        """)


def test_sparse_and_nested_are_clear_errors():
    with pytest.raises(
        NotImplementedError,
        match=r"torch\.sparse.* not supported on neuron; "
        r"keep sparse tensors on CPU",
    ):
        torch.ones(2, 2, device="neuron").to_sparse()
    with pytest.raises(
        NotImplementedError,
        match=r"\(torch\.sparse\) are not supported on the "
        r"neuron device.*\.to_dense\(\)",
    ):
        torch.sparse_coo_tensor(torch.tensor([[0]]), torch.tensor([1.0])).to("neuron")
