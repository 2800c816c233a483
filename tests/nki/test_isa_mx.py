"""Microscaling (OCP MX): nisa.quantize_mx, nisa.nc_matmul_mx and the packed x4 dtypes against
a PyTorch reference (dequantize with torch's fp8 types / the E2M1 table, matmul in fp32), and
their rules. MX is NeuronCore-v4 only: those cases run in one fresh process emulating a trn3
instance (the instance profile is fixed at startup)."""

import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

TRN3 = {"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"}


def test_mx_numerics_and_rules_on_neuroncore_v4(py):
    py(
        """
        import sys, torch
        sys.path.insert(0, "examples/nki")
        import mx_matmul as mx
        from torch_neuronx import nki
        import torch_neuronx.nki.isa as nisa
        import torch_neuronx.nki.language as nl

        g = torch.Generator().manual_seed(0)
        # offline-quantized data (bits from the host), every element type, mixed K
        for kind, dt in (("float8_e4m3fn", nl.float8_e4m3fn_x4),
                         ("float8_e5m2", nl.float8_e5m2_x4),
                         ("float4_e2m1fn", nl.float4_e2m1fn_x4)):
            for K, M, N in ((128, 128, 512), (64, 32, 96)):
                sb, ss, sv = mx.random_mx(K, M, kind, g)
                mb, ms, mv = mx.random_mx(K, N, kind, g)
                out = mx.mx_matmul_offline(sb.to("neuron"), ss.to("neuron"), mb.to("neuron"),
                                           ms.to("neuron"), dt).cpu()
                ref = mx.dequantize(sv, ss).t() @ mx.dequantize(mv, ms)
                # bf16 dst: one bf16 rounding of the fp32 sum (summation order differs)
                torch.testing.assert_close(out.float(), ref, rtol=1e-2,
                                           atol=ref.abs().max().item() / 256)
                rep = mx.mx_matmul_offline.last_report
                assert rep.by_opcode["nc_matmul_mx"] == 1 and rep.tensor_flops == 2 * M * N * 4 * K

        # on-device quantization (both operands, scales packed at quadrant offsets 0 and 4)
        for kind, dt in (("float8_e4m3fn", nl.float8_e4m3fn_x4), ("float8_e5m2", nl.float8_e5m2_x4)):
            st = torch.randn(512, 128, generator=g).to(torch.bfloat16)
            mv = (torch.randn(512, 256, generator=g) * 100).to(torch.bfloat16)
            out = mx.quantize_matmul(st.to("neuron"), mv.to("neuron"), dt).cpu()
            ref = mx.quantize_reference(st, kind).t() @ mx.quantize_reference(mv, kind)
            torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-3)
            exact = st.float().t() @ mv.float()
            rel = ((out - exact).norm() / exact.norm()).item()
            assert rel < (0.05 if kind == "float8_e4m3fn" else 0.1), rel  # MX error, not garbage

        # quantize_mx alone: the scale bits (E8M0 float8_e8m0fnu) and the packed bytes
        @nki.jit
        def q(x):
            P, F = x.shape
            t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            d = nl.ndarray((P, F // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
            s = nl.ndarray((4, F // 4), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
            nisa.quantize_mx(dst=d, src=t, dst_scale=s)
            bits = nl.ndarray((P, F // 4), dtype=nl.int32, buffer=nl.shared_hbm)
            sc = nl.ndarray((4, F // 4), dtype=nl.float8_e8m0fnu, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=bits.ap([[F // 4, P], [1, F // 4]], dtype=nl.float8_e4m3fn_x4), src=d)
            nisa.dma_copy(dst=sc, src=s)
            return bits, sc

        x = torch.randn(32, 16, generator=g).to(torch.float16)
        x[0:8, 0:4] = 0.0  # an all-zero group quantizes to zeros
        bits, sc = q(x.to("neuron"))
        vals = bits.cpu().view(torch.uint8).view(torch.float8_e4m3fn).float()  # (32, 16)
        scale = sc.cpu().float().repeat_interleave(8, 0).repeat_interleave(4, 1)
        torch.testing.assert_close(vals * scale, mx.quantize_reference(
            x.reshape(32, 4, 4).permute(2, 0, 1).reshape(128, 4), "float8_e4m3fn"
        ).reshape(4, 32, 4).permute(1, 2, 0).reshape(32, 16))
        assert (vals[0:8, 0:4] == 0).all()
        amax = x.float().reshape(4, 8, 4, 4).abs().amax(dim=(1, 3))
        nz = amax > 0  # E8M0 scale = 2^(floor(log2 amax) - 8 + 1) for e4m3 (emax 8)
        assert torch.equal(sc.cpu().float()[nz], torch.exp2(torch.floor(torch.log2(amax)) - 7)[nz])

        # accumulation over two contraction tiles (accumulate=True) and the rules
        def expect(fn, match, *args):
            try:
                nki.jit(fn)(*args)
            except nki.NkiValidationError as e:
                assert match in str(e), e
                return
            raise AssertionError("no error: " + match)

        z = torch.zeros(1, 1).to("neuron")

        def tiles(P=32, F=8, dt=nl.float8_e4m3fn_x4):
            a = nl.ndarray((P, F), dtype=dt, buffer=nl.sbuf)
            s = nl.ndarray((max(P, 4), F), dtype=nl.uint8, buffer=nl.sbuf)
            return a, s

        def bad_k(_):
            a, s = tiles(P=48)
            p = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s, moving_scale=s)
        expect(bad_k, "multiple of 32 partitions", z)

        def bad_scale_rows(_):
            a, s = tiles(P=64)
            p = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s[0:8],
                              moving_scale=s)
        expect(bad_scale_rows, "need 36", z)

        def bad_scale_offset(_):
            a, s = tiles(P=32)
            p = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s[14:],
                              moving_scale=s)
        expect(bad_scale_offset, "first 16 partitions", z)

        def bad_dst(_):
            a, s = tiles()
            p = nl.ndarray((8, 8), dtype=nl.float16, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s, moving_scale=s)
        expect(bad_dst, "float32 or bfloat16", z)

        def not_packed(_):
            a = nl.ndarray((32, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
            s = nl.ndarray((32, 8), dtype=nl.uint8, buffer=nl.sbuf)
            p = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s, moving_scale=s)
        expect(not_packed, "must be a packed MX type", z)

        def fp4_quantize(_):
            t = nl.ndarray((32, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
            d, s = tiles(F=2, dt=nl.float4_e2m1fn_x4)
            nisa.quantize_mx(dst=d, src=t, dst_scale=s)
        expect(fp4_quantize, "MXFP8 only", z)

        def fp32_src(_):
            t = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.sbuf)
            d, s = tiles(F=2)
            nisa.quantize_mx(dst=d, src=t, dst_scale=s)
        expect(fp32_src, "float16 or bfloat16", z)

        def column_tiling(_):
            a, s = tiles()
            p = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s, moving_scale=s,
                              tile_position=(0, 64), tile_size=(32, 64))
        expect(column_tiling, "only row tiling", z)

        def row_tile_too_small(_):
            a, s = tiles(P=64)
            p = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s, moving_scale=s,
                              tile_position=(32, 0), tile_size=(32, 128))
        expect(row_tile_too_small, "exceeds the row tile of 32", z)

        def accumulate_first(_):
            a, s = tiles()
            p = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul_mx(dst=p, stationary=a, moving=a, stationary_scale=s, moving_scale=s,
                              accumulate=True)
        expect(accumulate_first, "no matmul has initialised it", z)

        def packed_in_alu(_):
            a, _s = tiles()
            nisa.tensor_tensor(dst=a, data1=a, data2=a, op=nl.add)
        expect(packed_in_alu, "packed MX type nl.float8_e4m3fn_x4", z)

        def packed_cast(_):
            a, _s = tiles()
            b = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=b, src=a)
        expect(packed_cast, "copied as bits", z)

        @nki.jit
        def acc2(sb, ss, mb, ms):  # two 32-partition K tiles accumulated in one PSUM tile
            K, M = sb.shape
            N = mb.shape[1]
            p = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
            for k in range(2):
                a = nl.ndarray((32, M), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
                b = nl.ndarray((32, N), dtype=nl.float8_e5m2_x4, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=sb[32 * k:32 * k + 32, :].view(nl.float8_e5m2_x4))
                nisa.dma_copy(dst=b, src=mb[32 * k:32 * k + 32, :].view(nl.float8_e5m2_x4))
                sa = nl.ndarray((4, M), dtype=nl.uint8, buffer=nl.sbuf)
                sm = nl.ndarray((4, N), dtype=nl.uint8, buffer=nl.sbuf)
                nisa.dma_copy(dst=sa, src=ss[4 * k:4 * k + 4, :])
                nisa.dma_copy(dst=sm, src=ms[4 * k:4 * k + 4, :])
                nisa.nc_matmul_mx(dst=p, stationary=a, moving=b, stationary_scale=sa,
                                  moving_scale=sm, accumulate=k > 0)
            o = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=o, src=p)
            out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=o)
            return out

        sb, ss, sv = mx.random_mx(64, 16, "float8_e5m2", g)
        mb, ms, mv = mx.random_mx(64, 40, "float8_e5m2", g)
        out = acc2(sb.to("neuron"), ss.to("neuron"), mb.to("neuron"), ms.to("neuron")).cpu()
        ref = sum(mx.dequantize(sv[32 * k:32 * k + 32], ss[4 * k:4 * k + 4]).t()
                  @ mx.dequantize(mv[32 * k:32 * k + 32], ms[4 * k:4 * k + 4]) for k in range(2))
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        print("ok")
    """,
        env=TRN3,
    )


def test_mx_needs_neuroncore_v4():
    @nki.jit
    def k(x):
        t = nl.ndarray((32, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        d = nl.ndarray((32, 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((4, 4), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=d, src=t, dst_scale=s)

    with pytest.raises(nki.NkiValidationError, match="only on NeuronCore-v4") as e:
        k(torch.zeros(32, 16, dtype=torch.bfloat16, device="neuron"))
    assert "test_isa_mx.py" in str(e.value)  # names the kernel line


def test_packed_mx_tiles_move_as_bits_on_any_generation():
    """The x4 types are storage types: DMA and same-type copies move their bits unchanged."""

    @nki.jit
    def k(x):
        P, F = x.shape
        t = nl.ndarray((P, F), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
        u = nl.ndarray((P, F), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.view(nl.float4_e2m1fn_x4))
        nisa.tensor_copy(dst=u, src=t)
        out = nl.ndarray((P, F), dtype=nl.int16, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out.view(nl.float4_e2m1fn_x4), src=u)
        return out

    x = torch.randint(-(2**15), 2**15, (32, 8), dtype=torch.int16)
    assert torch.equal(k(x.to("neuron")).cpu(), x)
    assert nl.float8_e4m3fn_x4.itemsize == 4 and nl.float4_e2m1fn_x4.itemsize == 2
