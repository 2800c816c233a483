"""The scan, top-8, range-select and dropout instructions against PyTorch (float32 and
bfloat16), and their rules (errors naming the kernel line)."""

import pytest
import torch
from nki_testing import on_dev, tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

DTYPES = [torch.float32, torch.bfloat16]
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def new(a, shape=None, dtype=None, buffer=nl.sbuf):
    return nl.ndarray(shape or a.shape, dtype=dtype or a.dtype, buffer=buffer)


def run(body, *inputs):
    return tile_kernel(body)(*on_dev(*inputs)).cpu()


def seq_scan(d0, d1, init, f0, f1):
    """The instruction's definition, column by column, in float32."""
    out, r = torch.empty_like(d0), init
    for i in range(d0.shape[1]):
        r = f1(f0(d0[:, i], r), d1[:, i])
        out[:, i] = r
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "op0,op1,f0,f1",
    [
        (nl.multiply, nl.add, torch.mul, torch.add),  # Mamba: h = a * h + b
        (nl.add, nl.add, torch.add, torch.add),  # cumsum
        (nl.subtract, nl.multiply, torch.sub, torch.mul),
        (nl.maximum, nl.maximum, torch.maximum, torch.maximum),
        (nl.divide, nl.add, torch.div, torch.add),  # no associative form: per-column path
    ],
)
def test_tensor_tensor_scan(dtype, op0, op1, f0, f1):
    a = (torch.rand(32, 70) * 0.5 + 0.6).to(dtype)
    b = (torch.randn(32, 70) * 0.1).to(dtype)
    init = torch.rand(32, 1) + 0.5

    def body(x, y, i):
        out = new(x)
        nisa.tensor_tensor_scan(dst=out, data0=x, data1=y, initial=i, op0=op0, op1=op1)
        return out

    ref = seq_scan(a.float(), b.float(), init[:, 0], f0, f1)
    torch.testing.assert_close(run(body, a, b, init).float(), ref, **TOL[dtype])


def test_tensor_tensor_scan_scalar_initial_and_psum_operand():
    a, b = torch.rand(8, 20), torch.rand(8, 20)

    def body(x, y):
        p = new(x, buffer=nl.psum)
        nisa.tensor_copy(dst=p, src=y)
        out = new(x)
        nisa.tensor_tensor_scan(dst=out, data0=x, data1=p, initial=1.0, op0=nl.multiply, op1=nl.add)
        return out

    ref = seq_scan(a, b, torch.ones(8), torch.mul, torch.add)
    torch.testing.assert_close(run(body, a, b), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "op1,ref",
    [
        (nl.add, lambda v: v.cumsum(1)),
        (nl.multiply, lambda v: v.cumprod(1)),
        (nl.maximum, lambda v: v.cummax(1).values),
        (nl.minimum, lambda v: v.cummin(1).values),
    ],
)
def test_tensor_scalar_cumulative(dtype, op1, ref):
    x = (torch.rand(16, 40) + 0.5).to(dtype)

    def body(t):
        out = new(t)
        nisa.tensor_scalar_cumulative(
            dst=out,
            src=t,
            op0=nl.multiply,
            op1=op1,
            imm0=0.9,
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        return out

    expect = ref(x.float() * 0.9)
    torch.testing.assert_close(run(body, x).float(), expect, **TOL[dtype])


def test_tensor_scalar_cumulative_load_and_continue_registers():
    x = torch.rand(4, 12)

    def body(t):
        out = new(t, (4, 24))
        R = nisa.reduce_cmd
        nisa.tensor_scalar_cumulative(
            dst=out[:, 0:12],
            src=t,
            op0=nl.add,
            op1=nl.add,
            imm0=0.0,
            imm1=5.0,
            reduce_cmd=R.load_reduce,
        )
        nisa.tensor_scalar_cumulative(  # continues from the registers
            dst=out[:, 12:24], src=t, op0=nl.add, op1=nl.add, imm0=0.0, reduce_cmd=R.reduce
        )
        return out

    expect = 5.0 + torch.cat((x, x), 1).cumsum(1)
    torch.testing.assert_close(run(body, x), expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max8_find_index8_match_replace8_give_topk(dtype):
    x = torch.randn(64, 300).to(dtype)  # bf16 may hold ties: indices checked by value

    def body(s):
        v1 = new(s, (64, 8))
        nisa.max8(dst=v1, src=s)
        i1 = new(s, (64, 8), nl.uint32)
        nisa.nc_find_index8(dst=i1, data=s, vals=v1)
        rest = new(s)
        i2 = new(s, (64, 8), nl.uint16)
        nisa.nc_match_replace8(dst=rest, data=s, vals=v1, imm=-1e30, dst_idx=i2)
        v2 = new(s, (64, 8))
        nisa.max8(dst=v2, src=rest)
        out = new(s, (64, 24), nl.float32)
        nisa.tensor_copy(dst=out[:, 0:8], src=v1)
        nisa.tensor_copy(dst=out[:, 8:16], src=v2)
        nisa.tensor_copy(dst=out[:, 16:24], src=i1)
        return out

    out = run(body, x)
    tv = x.float().topk(16, dim=1).values
    torch.testing.assert_close(out[:, :16], tv, rtol=0, atol=0)
    idx = out[:, 16:24].long()
    torch.testing.assert_close(x.float().gather(1, idx), tv[:, :8], rtol=0, atol=0)


def test_find_index8_pairs_duplicates_and_marks_missing():
    data = torch.tensor([[1.0, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]])
    vals = torch.tensor([[3.0, 8, 8, 8, 8, 8, 8, 99]])

    def body(d, v):
        i = new(d, (1, 8), nl.uint32)
        nisa.nc_find_index8(dst=i, data=d, vals=v)
        r = new(d)
        j = new(d, (1, 8), nl.uint32)
        nisa.nc_match_replace8(dst=r, data=d, vals=v, imm=0.0, dst_idx=j)
        out = new(d, (1, 16 + 11), nl.float32)
        nisa.tensor_copy(dst=out[:, 0:8], src=i)
        nisa.tensor_copy(dst=out[:, 8:16], src=j)
        nisa.tensor_copy(dst=out[:, 16:27], src=r)
        return out

    out = run(body, data, vals)
    miss = torch.tensor(0xFFFFFFFF, dtype=torch.float32).item()  # the sentinel as float32
    assert out[0, 0:8].tolist() == [2, 4, 5, 6, 7, 8, 9, miss]
    assert out[0, 8:16].tolist() == [2, 9, 8, 7, 6, 5, 4, miss]  # AWS: duplicates from slot 7
    assert out[0, 16:27].tolist() == [1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 8]


@pytest.mark.parametrize("dtype", DTYPES)
def test_range_select_with_max_reduce(dtype):
    x = torch.randn(16, 64).to(dtype)
    lo = torch.randint(0, 20, (16, 1)).float()
    hi = lo + torch.randint(1, 40, (16, 1)).float()

    def body(t, b0, b1):
        out = new(t)
        m = new(t, (16, 1), nl.float32)
        nisa.range_select(
            dst=out,
            on_true_tile=t,
            comp_op0=nl.greater_equal,
            comp_op1=nl.less,
            bound0=b0,
            bound1=b1,
            reduce_res=m,
            range_start=0,
            on_false_value=-1e4,
        )
        both = new(t, (16, 65), nl.float32)
        nisa.tensor_copy(dst=both[:, 0:64], src=out)
        nisa.tensor_copy(dst=both[:, 64:65], src=m)
        return both

    out = run(body, x, lo, hi)
    i = torch.arange(64).float()
    keep = (i >= lo) & (i < hi)
    expect = torch.where(keep, x.float(), torch.tensor(-1e4))
    torch.testing.assert_close(out[:, :64], expect.to(dtype).float(), **TOL[dtype])
    torch.testing.assert_close(out[:, 64], expect.amax(1), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_zeros_a_fraction_and_keeps_the_rest(dtype):
    x = (torch.rand(128, 512) + 1.0).to(dtype)

    def body(t):
        nl.random_seed(7)
        out = new(t)
        nisa.dropout(dst=out, data=t, prob=0.25)
        return out

    out = run(body, x)
    dropped = out == 0
    assert 0.23 < dropped.float().mean().item() < 0.27
    assert torch.equal(out[~dropped], x[~dropped])
    assert torch.equal(run(body, x), out)  # nl.random_seed makes it reproducible


def test_nl_dropout_per_partition_probability():
    x = torch.ones(4, 1000)
    prob = torch.tensor([[0.0], [1.0], [0.0], [1.0]])

    def body(t, p):
        return nl.dropout(t, p)

    out = run(body, x, prob)
    assert out[0].eq(1).all() and out[1].eq(0).all() and out[2].eq(1).all()


# ---- rules
def _raises(kernel, *inputs, match):
    with pytest.raises(nki.NkiValidationError, match=match) as e:
        nki.jit(kernel)(*on_dev(*inputs))
    assert "test_isa_scans_select.py" in str(e.value)  # names the kernel line
    return str(e.value)


def test_scan_rules():
    def both_psum(a):
        p = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.psum)
        q = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.psum)
        o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=o, data0=p, data1=q, initial=0.0, op0=nl.add, op1=nl.add)

    msg = _raises(both_psum, torch.zeros(4, 8), match="cannot both be in PSUM")
    assert "nisa.tensor_tensor_scan(dst=o, data0=p" in msg

    def bad_op(a):
        s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=s, data0=s, data1=s, initial=0.0, op0=nl.exp, op1=nl.add)

    _raises(bad_op, torch.zeros(4, 8), match="binary arithmetic operator")

    def int32_cumulative(a):
        s = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(dst=s, src=s, op0=nl.add, op1=nl.add, imm0=1.0)

    _raises(int32_cumulative, torch.zeros(4, 8), match="not 32-bit integers")

    def bad_op1(a):
        s = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(dst=s, src=s, op0=nl.add, op1=nl.divide, imm0=1.0)

    _raises(bad_op1, torch.zeros(4, 8), match="op1 must be nl.add")


def test_top8_rules():
    def too_few(a):
        s = nl.ndarray((4, 6), dtype=nl.float32, buffer=nl.sbuf)
        d = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=d, src=s)

    _raises(too_few, torch.zeros(1, 1), match="between 8 and 16384")

    def not_eight(a):
        s = nl.ndarray((4, 16), dtype=nl.float32, buffer=nl.sbuf)
        d = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=d, src=s)

    _raises(not_eight, torch.zeros(1, 1), match="exactly 8 elements")

    def float_index(a):
        s = nl.ndarray((4, 16), dtype=nl.float32, buffer=nl.sbuf)
        v = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=v, data=s, vals=v)

    _raises(float_index, torch.zeros(1, 1), match="must be uint16 or uint32")


def test_range_select_and_dropout_rules():
    def not_cmp(a):
        s = nl.ndarray((4, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(
            dst=s, on_true_tile=s, comp_op0=nl.add, comp_op1=nl.less, bound0=0.0, bound1=4.0
        )

    _raises(not_cmp, torch.zeros(1, 1), match="not a comparison operator")

    def cast(a):
        s = nl.ndarray((4, 16), dtype=nl.float32, buffer=nl.sbuf)
        d = nl.ndarray((4, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dropout(dst=d, data=s, prob=0.5)

    _raises(cast, torch.zeros(1, 1), match="must have the dtype of data")
