"""The engines' generators (nisa.rng, rand2, set_rng_seed, rand_set_state, rand_get_state):
reproducible from the kernel's generator and from seeds, state round-trips that replay the
same numbers, and distributions compared with PyTorch's own uniform generator. rand2 and the
Vector Engine's state instructions need NeuronCore-v4 and run in a fresh trn3 process."""

import pytest
import torch
from nki_testing import on_dev

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

TRN3 = {"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"}


def _out(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


def _bits(shape, dtype=nl.int32, engine=nisa.engine.vector):
    @nki.jit
    def k(a):
        t = nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)
        nisa.rng(dst=t, engine=engine)
        return _out(t)

    return k(torch.zeros(1, 1).to("neuron")).cpu()


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic."""
    a, b = a.flatten().double().sort().values, b.flatten().double().sort().values
    x = torch.cat([a, b])
    fa = torch.searchsorted(a, x, right=True) / len(a)
    fb = torch.searchsorted(b, x, right=True) / len(b)
    return float((fa - fb).abs().max())


@pytest.mark.parametrize("engine", [nisa.engine.vector, nisa.engine.gpsimd])
def test_rng_bits_are_uniform_and_reproducible(engine):
    torch.manual_seed(1)
    a = _bits((128, 1024), engine=engine)
    torch.manual_seed(1)
    assert torch.equal(_bits((128, 1024), engine=engine), a)  # from torch's generator
    assert not torch.equal(_bits((128, 1024), engine=engine), a)
    u = a.long() & 0xFFFFFFFF
    for i in range(32):  # every bit is a fair coin (131072 draws: sd 0.0014)
        assert abs(((u >> i) & 1).float().mean().item() - 0.5) < 0.01, i
    ref = torch.randint(0, 1 << 32, (128 * 1024,))
    assert ks(u, ref) < 0.01  # the same distribution as PyTorch's uniform 32-bit integers
    assert len(set(a[:, 0].tolist())) == 128  # lanes draw different numbers


def test_rng_keeps_the_low_bits_for_narrow_dtypes():
    # the same state drawn as int32 and as uint8 / int16: the narrow values are the low bits
    @nki.jit
    def k(a):
        s = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rand_get_state(dst=s)
        wide = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
        nisa.rng(dst=wide, engine=nisa.engine.gpsimd)
        nisa.rand_set_state(src_seeds=s)
        u8 = nl.ndarray((128, 64), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.rng(dst=u8, engine=nisa.engine.gpsimd)
        nisa.rand_set_state(src_seeds=s)
        i16 = nl.ndarray((128, 64), dtype=nl.int16, buffer=nl.sbuf)
        nisa.rng(dst=i16, engine=nisa.engine.gpsimd)
        return _out(wide), _out(u8), _out(i16)

    wide, u8, i16 = (t.cpu() for t in k(torch.zeros(1, 1).to("neuron")))
    assert torch.equal(u8.long(), wide.long() & 0xFF)
    assert torch.equal(i16, wide.to(torch.int16))  # two's complement truncation


def test_rand_get_and_set_state_round_trip():
    @nki.jit
    def k(seeds):
        s = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=seeds)
        nisa.rand_set_state(src_seeds=s)
        first = nl.ndarray((128, 100), dtype=nl.int32, buffer=nl.sbuf)
        nisa.rng(dst=first, engine=nisa.engine.gpsimd)
        saved = nl.ndarray((128, 6), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rand_get_state(dst=saved)
        a = nl.ndarray((128, 100), dtype=nl.int32, buffer=nl.sbuf)
        nisa.rng(dst=a, engine=nisa.engine.gpsimd)
        nisa.rand_set_state(src_seeds=saved)
        b = nl.ndarray((128, 100), dtype=nl.int32, buffer=nl.sbuf)
        nisa.rng(dst=b, engine=nisa.engine.gpsimd)
        return _out(first), _out(a), _out(b), _out(saved)

    seeds = torch.randint(0, 1 << 31, (128, 6), dtype=torch.int64).to(torch.uint32)
    torch.manual_seed(5)
    first, a, b, saved = (t.cpu() for t in k(*on_dev(seeds)))
    assert torch.equal(a, b)  # the saved state replays the same numbers
    assert not torch.equal(first, a)
    torch.manual_seed(6)  # the seeds, not torch's generator, decide the numbers
    first2, _, _, saved2 = (t.cpu() for t in k(*on_dev(seeds)))
    assert torch.equal(first2, first) and torch.equal(saved2, saved)


def test_set_rng_seed_seeds_the_vector_engine():
    @nki.jit
    def k(seed):
        s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=seed)
        nisa.set_rng_seed(src_seeds=s)
        t = nl.ndarray((128, 512), dtype=nl.uint16, buffer=nl.sbuf)
        nisa.rng(dst=t)
        # AWS's recipe for floats: 16 random bits divided by 2^16 - 1
        f = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=f, data=t, op0=nl.multiply, operand0=1.0 / 65535)
        return _out(f)

    def draw(seed, torch_seed):
        torch.manual_seed(torch_seed)
        return k(torch.tensor([[seed]], dtype=torch.int32).to("neuron")).cpu()

    a = draw(7, 0)
    assert torch.equal(draw(7, 1), a)  # same seed, same numbers
    assert not torch.equal(draw(8, 0), a)
    assert ks(a, torch.rand(128 * 512)) < 0.01  # uniform on [0, 1] like torch.rand
    assert 0.0 <= float(a.min()) and float(a.max()) <= 1.0


# ---- rules
def _raises(body, match, err=nki.NkiValidationError):
    with pytest.raises(err, match=match) as e:
        nki.jit(body)(torch.zeros(1, 1).to("neuron"))
    assert "test_isa_prng.py" in str(e.value)  # names the kernel line


def test_prng_rules():
    def float_dst(a):
        nisa.rng(dst=nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf))

    _raises(float_dst, "dst must be int8/16/32 or uint8/16/32")

    def gpsimd_psum(a):
        nisa.rng(dst=nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.psum), engine=nisa.engine.gpsimd)

    _raises(gpsimd_psum, "must be in SBUF")

    def seed_shape(a):
        nisa.set_rng_seed(src_seeds=nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.sbuf))

    _raises(seed_shape, r"\[1, 1\] tile")

    def seed_width(a):
        nisa.set_rng_seed(src_seeds=nl.ndarray((1, 1), dtype=nl.int16, buffer=nl.sbuf))

    _raises(seed_width, "32-bit value")

    def state_words(a):
        nisa.rand_set_state(src_seeds=nl.ndarray((4, 24), dtype=nl.uint32, buffer=nl.sbuf))

    _raises(state_words, "must hold 6 uint32 words")

    def state_dtype(a):
        nisa.rand_get_state(dst=nl.ndarray((4, 6), dtype=nl.int32, buffer=nl.sbuf))

    _raises(state_dtype, "must be uint32")

    def vector_state_on_v3(a):
        s = nl.ndarray((4, 24), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rand_get_state(dst=s, engine=nisa.engine.vector)

    _raises(vector_state_on_v3, "needs NeuronCore-v4")

    def rand2_on_v3(a):
        nisa.rand2(dst=nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf), min=0.0, max=1.0)

    _raises(rand2_on_v3, "needs NeuronCore-v4")


def test_rand2_and_vector_state_on_neuroncore_v4(py):
    py(
        """
        import torch
        from torch_neuronx import nki
        import torch_neuronx.nki.isa as nisa
        import torch_neuronx.nki.language as nl

        def ks(a, b):
            a, b = a.flatten().double().sort().values, b.flatten().double().sort().values
            x = torch.cat([a, b])
            fa = torch.searchsorted(a, x, right=True) / len(a)
            fb = torch.searchsorted(b, x, right=True) / len(b)
            return float((fa - fb).abs().max())

        @nki.jit
        def k(lo, hi, dt):
            P = lo.shape[0]
            lt = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            ht = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=lt, src=lo)
            nisa.dma_copy(dst=ht, src=hi)
            st = nl.ndarray((P, 24), dtype=nl.uint32, buffer=nl.psum)
            nisa.rand_get_state(dst=st, engine=nisa.engine.vector)
            saved = nl.ndarray((P, 24), dtype=nl.uint32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=saved, src=st)
            a = nl.ndarray((P, 2048), dtype=dt.dtype, buffer=nl.sbuf)
            nisa.rand2(dst=a, min=lt, max=ht)
            nisa.rand_set_state(src_seeds=saved, engine=nisa.engine.vector)
            b = nl.ndarray((P, 2048), dtype=dt.dtype, buffer=nl.sbuf)
            nisa.rand2(dst=b, min=lt, max=ht)
            c = nl.ndarray((P, 2048), dtype=dt.dtype, buffer=nl.sbuf)
            nisa.rand2(dst=c, min=-1.0, max=3.0)
            outs = []
            for t in (a, b, c):
                o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
                nisa.dma_copy(dst=o, src=t)
                outs.append(o)
            return outs

        lo = torch.linspace(-5, 5, 64).reshape(64, 1)
        hi = lo + torch.linspace(0.5, 10, 64).reshape(64, 1)
        for dtype in (torch.float32, torch.bfloat16):
            torch.manual_seed(0)
            a, b, c = (t.cpu().float() for t in k(lo.to("neuron"), hi.to("neuron"),
                                                   torch.zeros(1, 1, dtype=dtype).to("neuron")))
            assert torch.equal(a, b)  # the Vector Engine's saved state replays rand2
            ref = (lo + torch.rand(64, 2048) * (hi - lo)).to(dtype).float()
            assert bool((a >= lo.to(dtype).float()).all() and (a <= hi.to(dtype).float()).all())
            # per row, the same uniform distribution as PyTorch's (KS on the unit scale)
            unit = (a - lo) / (hi - lo)
            unit_ref = (ref - lo) / (hi - lo)
            assert ks(unit, unit_ref) < 0.02, ks(unit, unit_ref)
            cref = (torch.rand(64, 2048) * 4 - 1).to(dtype).float()
            assert ks(c, cref) < 0.02 and float(c.min()) >= -1 and float(c.max()) <= 3
            torch.testing.assert_close(a.mean(1), ((lo + hi) / 2).flatten(),
                                       atol=0.05 * 10, rtol=0.05)

        def bad_range(x):
            t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
            nisa.rand2(dst=t, min=1.0, max=1.0)

        try:
            nki.jit(bad_range)(torch.zeros(1, 1).to("neuron"))
            raise AssertionError("no error")
        except nki.NkiValidationError as e:
            assert "must be less than max" in str(e), e
    """,
        env=TRN3,
    )
