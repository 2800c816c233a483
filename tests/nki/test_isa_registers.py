"""Sequencer registers (register_alloc/move/load/store), register-bounded loops
(nl.while_loop, nl.dynamic_range), nl.gather_flattened, nisa.dma_compute and the LNC pair's
core_barrier / sendrecv, against PyTorch (float32 and bfloat16), and their rules."""

import pytest
import torch
from nki_testing import on_dev, tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki.errors import NkiUnsupportedError


def _count(n):
    return torch.tensor([[n]], dtype=torch.int32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_while_loop_runs_until_the_register_is_zero(dtype):
    """acc += x once per iteration of a loop whose count is data (loaded into a register)."""

    @nki.jit
    def kernel(x, count):
        xt = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x)
        acc = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        c = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=c, src=count)
        one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=one, value=1)
        reg = nisa.register_alloc()
        nisa.register_load(reg, c)

        def body(r):
            nisa.tensor_tensor(dst=acc, data1=acc, data2=xt, op=nl.add)
            nisa.tensor_tensor(dst=c, data1=c, data2=one, op=nl.subtract)
            nxt = nisa.register_alloc()
            nisa.register_load(nxt, c)
            return nxt

        nl.while_loop(reg, body)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        res = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = torch.randn(32, 16).to(dtype)
    for n in (0, 1, 5):
        out = kernel(*on_dev(x, _count(n))).cpu()
        ref = (x.float() * n).to(dtype)
        torch.testing.assert_close(
            out, ref, rtol=1e-2 if dtype is torch.bfloat16 else 1e-5, atol=1e-2
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dynamic_range_with_a_register_bound(dtype):
    @nki.jit
    def kernel(x, count):
        c = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=c, src=count)
        n = nisa.register_alloc(c)  # register_alloc with a tensor loads it
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        for _ in nl.dynamic_range(n):
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = torch.randn(16, 8).to(dtype)
    out = kernel(*on_dev(x, _count(3))).cpu()
    torch.testing.assert_close(out, x * 8)


def test_register_move_store_roundtrip():
    @nki.jit
    def kernel(x):
        a = nisa.register_alloc(7)
        b = nisa.register_alloc()
        nisa.register_move(b, a)
        out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.register_store(out[0:1, 0:1], b)
        nisa.register_move(b, -3)
        nisa.register_store(out[0:1, 1:2], b)
        return out

    out = kernel(*on_dev(torch.zeros(1, 1))).cpu()
    assert out.tolist() == [[7.0, -3.0]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gather_flattened_matches_take_along_axis(dtype):
    data = torch.randn(16, 4, 8).to(dtype)
    idx = torch.randint(0, 32, (16, 2, 5))

    def body(d, i):
        return nl.gather_flattened(d, i)

    out = tile_kernel(body)(*on_dev(data, idx.to(torch.uint32))).cpu()
    ref = data.reshape(16, -1).gather(1, idx.reshape(16, -1)).reshape(16, 2, 5)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dma_compute_adds_its_sources_in_float32(dtype):
    @nki.jit
    def kernel(a, b, c):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_compute(dst=out, srcs=[t, b, c], reduce_op=nl.add)
        return out

    a, b, c = (torch.randn(32, 64).to(dtype) for _ in range(3))
    out = kernel(*on_dev(a, b, c)).cpu()
    ref = (a.float() + b.float() + c.float()).to(dtype)
    torch.testing.assert_close(out, ref)


def test_core_barrier_between_spmd_programs():
    """Each program writes its half of a shared HBM tensor, meets the barrier, then reads
    its own half back doubled (what the barrier protects on hardware)."""

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        pid = nl.program_id(0)
        rows = slice(pid * 16, pid * 16 + 16)
        t = nl.ndarray((16, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows, :])
        nisa.dma_copy(dst=out[rows, :], src=t)
        nisa.core_barrier(out, (0, 1))
        nisa.dma_compute(dst=out[rows, :], srcs=[out[rows, :], t], reduce_op=nl.add)
        return out

    x = torch.randn(32, 8)
    out = kernel[2](*on_dev(x)).cpu()
    torch.testing.assert_close(out, 2 * x)


# ---- rules
def _raises(kernel, *inputs, match, cls=nki.NkiValidationError):
    with pytest.raises(cls, match=match) as e:
        nki.jit(kernel)(*on_dev(*inputs))
    assert "test_isa_registers.py" in str(e.value)  # names the kernel line
    return str(e.value)


def test_register_rules():
    def two_elements(a):
        t = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.sbuf)
        nisa.register_load(nisa.register_alloc(), t)

    _raises(two_elements, torch.zeros(1, 1), match="exactly one element")

    def uninitialised(a):
        r = nisa.register_alloc()
        for _ in nl.dynamic_range(r):
            pass

    _raises(uninitialised, torch.zeros(1, 1), match="never written")

    def not_a_register(a):
        nl.while_loop(nisa.register_alloc(1), lambda r: 0)

    _raises(not_a_register, torch.zeros(1, 1), match="must return the next condition register")

    def float_move(a):
        nisa.register_move(nisa.register_alloc(), 1.5)

    _raises(float_move, torch.zeros(1, 1), match="compile-time integer")


def test_gather_dma_compute_and_lnc_rules():
    def bad_axis(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((4, 2), dtype=nl.uint32, buffer=nl.sbuf)
        nl.gather_flattened(t, i, axis=1)

    _raises(bad_axis, torch.zeros(1, 1), match="only axis=0")

    def bad_scale(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_compute(dst=t, srcs=[t, t], reduce_op=nl.add, scales=[1.0, 2.0])

    _raises(bad_scale, torch.zeros(1, 1), match="scales of 1.0")

    def bad_op(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_compute(dst=t, srcs=[t], reduce_op=nl.multiply)

    _raises(bad_op, torch.zeros(1, 1), match="must be nl.add")

    def barrier_on_sbuf(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.core_barrier(t, (0, 1))

    _raises(barrier_on_sbuf, torch.zeros(1, 1), match="shared HBM")

    def barrier_cores(a):
        nisa.core_barrier(a, (0, 2))

    _raises(barrier_cores, torch.zeros(1, 1), match=r"cores=\(0, 1\)")

    def exchange(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.sendrecv(src=t, dst=t, send_to_rank=1, recv_from_rank=1, pipe_id=0)

    # a plain call has one program: no partner core
    _raises(exchange, torch.zeros(1, 1), match="exactly two programs", cls=NkiUnsupportedError)


def test_sendrecv_exchanges_tiles_between_the_lnc_pair():
    """A ring exchange (AWS's sendrecv example): each program sends its half of x to the
    other core and stores what it receives, so the halves swap; then a loopback (a rank's
    own) copy, a second exchange on another pipe, float32 and bfloat16."""

    @nki.jit
    def ring(x):
        out = nl.ndarray((x.shape[0], 2 * x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        rank = nl.program_id(0)
        P, F = x.shape[0] // 2, x.shape[1]
        mine = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        got = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=mine, src=x[rank * P : (rank + 1) * P, :])
        peer = (rank + 1) % 2
        nisa.sendrecv(src=mine, dst=got, send_to_rank=peer, recv_from_rank=peer, pipe_id=0)
        nisa.tensor_tensor(dst=mine, data1=mine, data2=got, op=nl.add)  # both halves' sum
        back = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=got, dst=back, send_to_rank=rank, recv_from_rank=rank, pipe_id=1)
        nisa.dma_copy(dst=out[rank * P : (rank + 1) * P, 0:F], src=back)
        nisa.dma_copy(dst=out[rank * P : (rank + 1) * P, F : 2 * F], src=mine)
        return out

    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(64, 24).to(dtype)
        out = ring[2](*on_dev(x)).cpu()
        swapped = torch.cat([x[32:], x[:32]])
        assert torch.equal(out[:, :24], swapped)  # moved as bits
        s = (x[:32].float() + x[32:].float()).to(dtype)
        torch.testing.assert_close(out[:, 24:], torch.cat([s, s]))
        assert ring.last_report.by_opcode["sendrecv"] == 4


def test_core_barrier_orders_the_pair_both_ways():
    """With the pair running as coroutines, a program reads after the barrier what its
    peer wrote before it, whichever program runs first (program 0 reads program 1's half)."""

    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        res = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        pid = nl.program_id(0)
        mine, other = slice(pid * 16, pid * 16 + 16), slice(16 - pid * 16, 32 - pid * 16)
        t = nl.ndarray((16, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[mine, :])
        nisa.dma_copy(dst=out[mine, :], src=t)
        nisa.core_barrier(out, (0, 1))
        nisa.dma_copy(dst=t, src=out[other, :])
        nisa.dma_copy(dst=res[mine, :], src=t)
        return res

    x = torch.randn(32, 8)
    assert torch.equal(kernel[2](*on_dev(x)).cpu(), torch.cat([x[16:], x[:16]]))


def test_sendrecv_without_a_partner_is_a_named_deadlock():
    @nki.jit
    def one_sided(x):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
        if nl.program_id(0) == 0:
            nisa.sendrecv(src=t, dst=t, send_to_rank=1, recv_from_rank=1, pipe_id=0)

    with pytest.raises(nki.NkiValidationError, match="deadlock: program 0 waits") as e:
        one_sided[2](*on_dev(torch.zeros(1, 1)))
    assert "test_isa_registers.py" in str(e.value)


def test_a_pair_waiting_for_each_other_is_a_named_deadlock():
    # program 0 waits for a sendrecv, program 1 at a barrier: neither can go on
    @nki.jit
    def crossed(x):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
        if nl.program_id(0) == 0:
            nisa.sendrecv(src=t, dst=t, send_to_rank=1, recv_from_rank=1, pipe_id=0)
        else:
            nisa.core_barrier(out, (0, 1))
        return out

    with pytest.raises(
        nki.NkiValidationError,
        match="deadlock: program 1 waits for the peer's core_barrier, while program 0 waits "
        "for a sendrecv from rank 1",
    ) as e:
        crossed[2](*on_dev(torch.zeros(1, 1)))
    assert "test_isa_registers.py" in str(e.value)


def test_sendrecv_kernel_in_an_nki_op_eager_and_compiled():
    """Inside an nki_op: eager runs the pair as coroutines; torch.compile's fake-tensor trace
    runs shapes only on one thread (fake tensor mode is per thread) and still checks rules."""
    from torch_neuronx import nki_op

    @nki.jit
    def swap(x):
        P, F = x.shape[0] // 2, x.shape[1]
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        rank = nl.program_id(0)
        t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        r = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rank * P : (rank + 1) * P, :])
        nisa.sendrecv(src=t, dst=r, send_to_rank=1 - rank, recv_from_rank=1 - rank, pipe_id=0)
        nisa.dma_copy(dst=out[rank * P : (rank + 1) * P, :], src=r)
        return out

    @nki_op("nki_tests::swap_halves", mutates_args={})
    def swap_halves(x: torch.Tensor) -> torch.Tensor:
        return swap[2](x)

    x = torch.randn(64, 8)
    want = torch.cat([x[32:], x[:32]])
    (xd,) = on_dev(x)
    assert torch.equal(swap_halves(xd).cpu(), want)
    f = torch.compile(lambda t: swap_halves(t) * 2, backend="neuron")
    torch.testing.assert_close(f(xd).cpu(), 2 * want)
