"""nisa.activate2 and nl.prelu (NeuronCore-v4 only) against PyTorch in float32 and bfloat16,
and their rules. The v4 cases run in a fresh process emulating a trn3 instance (the instance
profile is fixed at startup)."""

import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

TRN3 = {"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"}


def test_activate2_and_prelu_on_neuroncore_v4(py):
    py(
        """
        import torch
        from torch_neuronx import nki
        import torch_neuronx.nki.isa as nisa
        import torch_neuronx.nki.language as nl

        TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5),
               torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}

        @nki.jit
        def k(x, b):
            t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            bias = nl.ndarray(b.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            nisa.dma_copy(dst=bias, src=b)
            y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            r = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
            # tanh(2 - x * 0.5 ... reversed subtract): (imm1 - (x * 0.5)) with imm1 per row
            nisa.activate2(dst=y, op=nl.tanh, data=t, imm0=0.5, imm1=bias, op0=nl.multiply,
                           op1=nl.subtract, reverse1=True, reduce_op=nl.maximum,
                           reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
            p = nl.prelu(t, 0.25)
            out = nl.ndarray((x.shape[0], 2 * x.shape[1] + 1), dtype=nl.float32,
                             buffer=nl.shared_hbm)
            n = x.shape[1]
            nisa.dma_copy(dst=out[:, 0:n], src=y)
            nisa.dma_copy(dst=out[:, n:2 * n], src=p)
            nisa.dma_copy(dst=out[:, 2 * n:2 * n + 1], src=r)
            return out

        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(64, 48).to(dtype)
            b = torch.randn(64, 1)
            out = k(x.to("neuron"), b.to("neuron")).cpu()
            xf = x.float()
            y = torch.tanh(b - xf * 0.5)
            torch.testing.assert_close(out[:, :48], y.to(dtype).float(), **TOL[dtype])
            pre = torch.nn.functional.prelu(xf, torch.tensor([0.25]))
            torch.testing.assert_close(out[:, 48:96], pre.to(dtype).float(), **TOL[dtype])
            torch.testing.assert_close(out[:, 96], y.amax(1), **TOL[dtype])

        def bad_pair(x):
            t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activate2(dst=t, op=nl.exp, data=t, imm0=1.0, imm1=1.0, op0=nl.add,
                           op1=nl.add)

        try:
            nki.jit(bad_pair)(torch.zeros(1, 1).to("neuron"))
            raise AssertionError("no error")
        except nki.NkiValidationError as e:
            assert "(nl.add, nl.add) is not supported" in str(e), e
    """,
        env=TRN3,
    )


def test_activate2_needs_neuroncore_v4():
    # the default instance (trn2) is NeuronCore-v3
    def k(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activate2(dst=t, op=nl.exp, data=t, imm0=1.0, imm1=0.0, op0=nl.multiply, op1=nl.add)

    with pytest.raises(nki.NkiValidationError, match="only on NeuronCore-v4") as e:
        nki.jit(k)(torch.zeros(1, 1).to("neuron"))
    assert "test_isa_activate2.py" in str(e.value)
