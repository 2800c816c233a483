"""Launch grids with core placement (``nl.nc``, ``nl.spmd_dim``), ``nki.typing`` annotations
and ``nisa.tensor_copy(dtype=)`` as AWS's documentation and tutorials write them."""

import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki.grid import normalize
from torch_neuronx.nki.typing import tensor


@nki.jit
def spmd_copy(a):
    """AWS's spmd_dim example: program (i, j) copies block a[i, j]."""
    b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    t = nl.load(a[i, j])
    nl.store(b[i, j], t)
    return b


@pytest.mark.parametrize(
    "grid",
    [
        (4, 2),
        (nl.nc(4), 2),
        (nl.spmd_dim(nl.nc(2), 2), 2),
        (nl.spmd_dim(2, nl.nc(2)), 2),
    ],
)
def test_placed_grids_run_every_program(grid):
    a = torch.randn(4, 2, 16, 8, device="neuron")
    out = spmd_copy[grid](a)
    torch.testing.assert_close(out.cpu(), a.cpu())
    assert spmd_copy.last_report.grid == (4, 2)


def test_spmd_dim_places_programs_on_physical_cores():
    g = normalize((nl.spmd_dim(nl.nc(2), 2), 2))
    # AWS: NC[0] runs kernel[0, *] and kernel[1, *]; NC[1] runs kernel[2, *], kernel[3, *]
    assert [g.core((i, 0), 99) for i in range(4)] == [0, 0, 1, 1]
    g = normalize((nl.spmd_dim(2, nl.nc(2)), 2))
    assert [g.core((i, 0), 99) for i in range(4)] == [0, 1, 0, 1]
    g = normalize((nl.nc(2), 2))
    assert [g.core((i, 1), 99) for i in range(2)] == [0, 1]
    assert normalize((4, 2)).core((3, 1), 7) == 7  # unannotated: round-robin index


def test_bad_grids_are_clear_errors():
    with pytest.raises(nki.NkiValidationError, match="at most one nl.nc"):
        nl.spmd_dim(nl.nc(2), nl.nc(2))
    with pytest.raises(nki.NkiValidationError, match="positive integer"):
        nl.nc(0)
    with pytest.raises(nki.NkiValidationError, match="at most one dimension"):
        normalize((nl.nc(2), nl.nc(2)))


@nki.jit
def annotated_add(a: tensor, b: tensor[[8, 16], nl.float32]) -> tensor:
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    nl.store(out, nl.add(ta, tb))
    return out


def test_nki_typing_annotations_run():
    a, b = torch.randn(8, 16, device="neuron"), torch.randn(8, 16, device="neuron")
    torch.testing.assert_close(annotated_add(a, b).cpu(), (a + b).cpu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_tensor_copy_dtype_keyword(dtype):
    @nki.jit
    def cast(a):
        t = nl.load(a)
        c = nl.ndarray(a.shape, dtype=dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=c, src=t, dtype=dtype)
        out = nl.ndarray(a.shape, dtype=dtype, buffer=nl.shared_hbm)
        nl.store(out, c)
        return out

    a = torch.randn(8, 16, device="neuron")
    torch.testing.assert_close(cast(a).cpu(), a.cpu().to(dtype))


def test_tensor_copy_differing_dtype_is_ignored():
    # AWS's current matmul tutorial copies PSUM into a float32 tile with dtype=bfloat16 and
    # casts on the DMA to a bfloat16 output: dst decides, the keyword is ignored (warned)
    @nki.jit
    def copy_then_store(a):
        t = nl.load(a)
        c = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=c, src=t, dtype=nl.bfloat16)
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, c)
        return out

    a = torch.randn(8, 16, device="neuron")
    with pytest.warns(UserWarning, match="dtype=bfloat16 ignored"):
        got = copy_then_store(a).cpu()
    assert torch.equal(got, a.cpu())  # float32 kept: no rounding through bfloat16
