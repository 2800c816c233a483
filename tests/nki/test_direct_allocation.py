"""Direct allocation: ``nl.ndarray(address=...)`` (NKI 2.33) and ``neuronxcc.nki.compiler``'s
``sbuf``/``psum`` ``alloc``/``mod_alloc``/``auto_alloc`` and kernel decorators: placed kernels
compute what PyTorch computes, bad places and placed tiles alive over the same bytes are
errors naming the kernel line."""

import pytest
import torch
from public_direct_alloc import allocated_loop_transpose

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
import torch_neuronx.nki.legacy as lnki
import torch_neuronx.nki.legacy.compiler as ncc
import torch_neuronx.nki.legacy.isa as lnisa
import torch_neuronx.nki.legacy.language as lnl
from torch_neuronx import nki
from torch_neuronx.nki import NkiCapacityError, NkiValidationError


@nki.jit
def placed_add(x, b_addr, psum_addr=2048):
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, address=(0, 0), name="a")
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, address=(0, b_addr), name="b")
    p = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum, address=(0, psum_addr))
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=x)
    nisa.tensor_tensor(dst=p, data1=a, data2=b, op=nl.add)
    nisa.tensor_copy(dst=a, src=p)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16))
def test_placed_tiles_compute_as_pytorch(dtype):
    x = torch.randn(128, 64).to(dtype)
    out = placed_add(x.to("neuron"), 4096).cpu()
    assert torch.equal(out, (x.float() + x.float()).to(dtype))


def test_placed_tiles_over_the_same_bytes_while_alive():
    x = torch.randn(128, 64)
    with pytest.raises(NkiCapacityError, match="overlap while both are alive.*'b'.*'a'") as e:
        placed_add(x.to("neuron"), 128)
    assert "test_direct_allocation.py" in str(e.value)


@pytest.mark.parametrize(
    "b_addr, psum_addr, match",
    [
        (10**7, 2048, "exceed the .* bytes of a SBUF partition"),
        (4096, 100, "beginning of a bank"),
        (-1, 2048, "non-negative integer"),
    ],
)
def test_bad_places(b_addr, psum_addr, match):
    with pytest.raises(NkiValidationError, match=match):
        placed_add(torch.randn(128, 64).to("neuron"), b_addr, psum_addr)


def test_partition_start_rule():
    @nki.jit
    def k(x, p0):
        t = nl.ndarray((x.shape[0], 8), dtype=x.dtype, buffer=nl.sbuf, address=(p0, 0))
        nisa.dma_copy(dst=t, src=x)
        return x

    k(torch.randn(32, 8).to("neuron"), 96)  # 32 partitions may start at 96
    with pytest.raises(NkiValidationError, match="must start at partition 0 or 64, got 32"):
        k(torch.randn(64, 8).to("neuron"), 32)


def test_aws_modulo_allocation_kernel_runs_with_imports_changed():
    a = torch.randn(256, 384).bfloat16()
    tp = torch.empty(384, 256).bfloat16().to("neuron")
    allocated_loop_transpose(a.to("neuron"), tp)
    assert torch.equal(tp.cpu(), a.t())


@lnki.jit
def blocks(x, buffer):
    t = lnl.ndarray((4, lnl.par_dim(128), 64), dtype=x.dtype, buffer=buffer)
    u = lnl.ndarray((lnl.par_dim(128), 64), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=256))
    out = lnl.ndarray(x.shape, dtype=x.dtype, buffer=lnl.shared_hbm)
    for b in lnl.affine_range(4):
        t[b] = lnl.load(x[:, b * 64 : (b + 1) * 64])
        u[...] = lnl.exp(t[b])
        lnl.store(out[:, b * 64 : (b + 1) * 64], u)
    return out


def test_legacy_mod_alloc_blocks():
    x = torch.randn(128, 256)
    # four blocks on two physical tiles of 256 bytes (64 fp32) at [1024, 1536); u at [256, 512)
    ok = ncc.sbuf.mod_alloc(base_addr=1024, num_free_tiles=(2,))
    torch.testing.assert_close(blocks(x.to("neuron"), ok).cpu(), torch.exp(x))
    # from byte 0 the second physical tile, [256, 512), is u's place, and both are in use
    clash = ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,))
    with pytest.raises(NkiCapacityError, match="overlap while both are alive"):
        blocks(x.to("neuron"), clash)
    # force_auto_alloc: direct allocations are ignored, so nothing clashes
    auto = ncc.force_auto_alloc(blocks)
    torch.testing.assert_close(auto(x.to("neuron"), clash).cpu(), torch.exp(x))
    with pytest.raises(NkiValidationError, match="num_free_tiles has 2 entries"):
        blocks(x.to("neuron"), ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2, 2)))
    assert ncc.sbuf.auto_alloc() is nl.sbuf and ncc.psum.auto_alloc() is nl.psum


def test_legacy_alloc_function_results_are_checked():
    x = torch.randn(128, 256)
    with pytest.raises(NkiValidationError, match=r"must return \(start_partition, byte_addr\)"):
        blocks(x.to("neuron"), ncc.sbuf.alloc(lambda idx, p, f: 0))
    with pytest.raises(NkiValidationError, match="block \\(1,\\).*must start at partition 0"):
        blocks(x.to("neuron"), ncc.sbuf.alloc(lambda idx, p, f: (idx[0] * 64, 4096)))


def test_compiler_decorators():
    @nki.jit
    def k(x):
        return x

    assert ncc.skip_middle_end_transformations(k)(torch.ones(2).to("neuron")).cpu().sum() == 2
    stacked = ncc.enable_stack_allocator(ncc.skip_middle_end_transformations(k))
    assert stacked.flags == {
        "skip_middle_end_transformations": True,
        "enable_stack_allocator": True,
        "log_level": 50,
    }
    with pytest.raises(NkiValidationError, match="together with skip_middle_end_transformations"):
        ncc.enable_stack_allocator(k)


@lnki.jit
def psum_blocks(x, buffer):
    """Two PSUM blocks per transpose pair, placed by bank; x^T through the Tensor Engine."""
    n = x.shape[1] // 128
    ident = lnl.shared_identity_matrix(128, dtype=x.dtype)
    acc = lnl.ndarray((n, lnl.par_dim(128), 128), dtype=lnl.float32, buffer=buffer)
    out = lnl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=lnl.shared_hbm)
    for b in lnl.affine_range(n):
        t = lnl.load(x[:, b * 128 : (b + 1) * 128])
        acc[b] = lnisa.nc_matmul(t, ident)
        lnl.store(out[b * 128 : (b + 1) * 128, :], lnl.copy(acc[b], dtype=x.dtype))
    return out


def test_psum_alloc_and_mod_alloc():
    x = torch.randn(128, 512)
    for buf in (
        ncc.psum.mod_alloc(base_bank=2, num_bank_tiles=(2,)),
        ncc.psum.alloc(lambda idx, p, f: (idx[0] % 2, 0, 0)),
    ):
        torch.testing.assert_close(psum_blocks(x.to("neuron"), buf).cpu(), x.t())
    with pytest.raises(NkiValidationError, match="PSUM bank must be 0..7, got 8"):
        psum_blocks(x.to("neuron"), ncc.psum.alloc(lambda idx, p, f: (8, 0, 0)))
    with pytest.raises(NkiValidationError, match="starts at partition 0, byte 0 of the bank"):
        psum_blocks(x.to("neuron"), ncc.psum.alloc(lambda idx, p, f: (0, 0, 64)))
    with pytest.raises(NkiValidationError, match="base_bank is required"):
        ncc.psum.mod_alloc(base_addr=0)


def test_address_on_a_block_tensor_names_the_block_allocation_api():
    @lnki.jit
    def k(x):
        lnl.ndarray((2, lnl.par_dim(128), 8), dtype=x.dtype, address=(0, 0))
        return x

    with pytest.raises(NkiValidationError, match="ncc.sbuf.alloc"):
        k(torch.zeros(2, 2).to("neuron"))


def test_neuronxcc_nki_compiler_import_after_install(py):
    """``import neuronxcc.nki.compiler as ncc`` (the old kernels' own import line) names the
    simulated module once ``install_as_neuronxcc()`` ran (a fresh interpreter: it edits
    sys.modules)."""
    py(
        """
        import torch
        import torch_neuronx.nki.legacy as lnki
        lnki.install_as_neuronxcc()
        import neuronxcc.nki as nki
        import neuronxcc.nki.compiler as ncc
        import neuronxcc.nki.language as nl

        @ncc.force_auto_alloc
        @nki.jit
        def k(x):
            t = nl.ndarray((nl.par_dim(128), 64), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
            t[...] = nl.load(x)
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(out, t)
            return out

        x = torch.randn(128, 64)
        assert torch.equal(k(x.to("neuron")).cpu(), x)
        assert ncc.psum.auto_alloc() is nl.psum
        """
    )
