"""The engines' pseudo-random number generators: ``rng`` (32 random bits per element),
``rand2`` (uniform floats, NeuronCore-v4), ``set_rng_seed`` (Vector Engine seed),
``rand_set_state`` / ``rand_get_state`` (per-lane generator state, NeuronCore-v3+).

Each engine (Vector, GpSimd) keeps one generator state per compute lane (partition): 6 uint32
words on the GpSimd Engine, 24 on the Vector Engine, AWS's XORWOW state sizes. The state lives
for the whole launch (all SPMD programs), as the hardware keeps it for the rest of the NEFF.
A state nobody set is drawn from the kernel's generator (``nl.random_seed``, else torch's
default CPU generator), so a kernel is reproducible from ``torch.manual_seed``.

The bits are not AWS's XORWOW stream: each lane's state is a key (every word but word 5) and
a counter (word 5); element ``j`` of a call is a two-round MurmurHash3 finaliser of
``counter + j`` keyed by the key, and the counter then advances by the elements drawn. That
is one vectorised torch op per instruction (XORWOW is sequential per lane), uniform over 32
bits (the finaliser is a bijection), and exact under ``rand_get_state`` / ``rand_set_state``
round-trips: a saved state replays the same numbers.

AWS pages (2.33): nki.isa.rng, nki.isa.rand2, nki.isa.set_rng_seed, nki.isa.rand_set_state,
nki.isa.rand_get_state under
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/
"""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import ON_CHIP, PSUM, SBUF_ONLY, operand, record, scalar_or_vector, write
from .arguments import engine_name
from .enums import engine

_M32 = 0xFFFFFFFF
_LANES = 128
_WORDS = {Engine.gpsimd: 6, Engine.vector: 24}  # XORWOW state words per lane (AWS's tile sizes)
_COUNTER = 5  # the word that counts drawn elements; the others are the key
_RNG_DTYPES = (torch.int8, torch.int16, torch.int32, torch.uint8, torch.uint16, torch.uint32)


def _fmix32(h: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's finaliser on uint32 values held in int64 (a bijection of 32 bits)."""
    h = h ^ (h >> 16)
    h = (h * 0x85EBCA6B) & _M32  # int64 products wrap; the low 32 bits are exact
    h = h ^ (h >> 13)
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _state(ex, eng: str) -> torch.Tensor:
    """The (128, words) int64 state of ``eng``'s lanes, drawn from the kernel's generator the
    first time it is used."""
    states = ex.prng
    st = states.get(eng)
    if st is None:
        st = states[eng] = torch.randint(0, 1 << 32, (_LANES, _WORDS[eng]), generator=ex.rng)
    return st


def _draw(ex, eng: str, lanes: int, n: int) -> torch.Tensor:
    """``n`` random 32-bit values (int64) for each of the first ``lanes`` lanes of ``eng``."""
    st = _state(ex, eng)[:lanes]
    key = torch.zeros(lanes, dtype=torch.int64)
    k2 = torch.full((lanes,), 0x9E3779B9, dtype=torch.int64)
    for w in range(st.shape[1]):  # fold the key words (6 or 24 columns, not elements)
        if w != _COUNTER:
            key = _fmix32(key ^ st[:, w])
            k2 = _fmix32((k2 + st[:, w]) & _M32)
    ctr = (st[:, _COUNTER : _COUNTER + 1] + torch.arange(n, dtype=torch.int64)) & _M32
    bits = _fmix32(_fmix32(ctr ^ key[:, None]) ^ k2[:, None])
    st[:, _COUNTER] = (st[:, _COUNTER] + n) & _M32
    return bits


def _rng_engine(ex, opc, e, default, v4_vector: bool) -> str:
    eng = engine_name(e, default)
    if eng not in (Engine.vector, Engine.gpsimd):
        fail(f"nisa.{opc} runs on the vector or gpsimd engine, not {eng}")
    v = ex.target.nc_version
    if eng == Engine.gpsimd and v < 3:
        fail(
            f"nisa.{opc} on the GpSimd Engine needs NeuronCore-v3 or newer; this is {ex.target.label}"
        )
    if eng == Engine.vector and v4_vector and v < 4:
        fail(f"nisa.{opc} on the Vector Engine needs NeuronCore-v4; this is {ex.target.label}")
    return eng


def rng(dst, engine=engine.vector, name=None):
    """Write 32 random bits per element of ``dst`` (an integer tile), keeping the least
    significant bits that fit its dtype (Vector Engine, or GpSimd on NeuronCore-v3+)."""
    ex = execution.begin("rng")
    eng = _rng_engine(ex, "rng", engine, Engine.vector, v4_vector=False)
    operand(ex, "rng", "dst", dst, SBUF_ONLY if eng == Engine.gpsimd else ON_CHIP, write=True)
    if dtypes.normalize(dst.dtype) not in _RNG_DTYPES:
        fail(
            f"nisa.rng: dst must be int8/16/32 or uint8/16/32, got {dtypes.name(dst.dtype)} "
            f"(draw uint16/uint32 bits and scale them for floats, or use nisa.rand2)"
        )
    _lanes(ex, "rng", dst)
    record(ex, eng, dst)
    if ex.compute:
        # copy_ from int64 wraps: exactly the low bits, two's complement for signed dtypes
        write(dst, _draw(ex, eng, dst.partitions, dst.free_size))


def rand2(dst, min, max, name=None):  # noqa: A002 - AWS's names
    """Uniform random values in [min, max] (float32, converted to ``dst``'s dtype) on the
    Vector Engine (NeuronCore-v4); ``min``/``max`` scalars or ``(P, 1)`` tiles."""
    ex = execution.begin("rand2")
    if ex.target.nc_version < 4:
        fail(f"nisa.rand2 needs NeuronCore-v4 (Trn3); this is {ex.target.label}")
    operand(ex, "rand2", "dst", dst, ON_CHIP, write=True)
    d = dtypes.normalize(dst.dtype)
    if d is torch.bool or (not dtypes.is_float(d) and d not in _RNG_DTYPES):
        fail(f"nisa.rand2: dst cannot be {dtypes.name(dst.dtype)}")
    if isinstance(d, torch.dtype) and d in (torch.float8_e8m0fnu,):
        fail(f"nisa.rand2: dst cannot be {dtypes.name(dst.dtype)}")
    lo = scalar_or_vector(ex, "rand2", "min", min, dst)
    hi = scalar_or_vector(ex, "rand2", "max", max, dst)
    if isinstance(lo, float) and isinstance(hi, float) and not lo < hi:
        fail(f"nisa.rand2: min ({lo}) must be less than max ({hi})")
    _lanes(ex, "rand2", dst)
    record(ex, Engine.vector, dst)
    if ex.compute:
        P = dst.partitions
        # 24 random bits make a float32 in [0, 1) with every value equally likely
        u = (_draw(ex, Engine.vector, P, dst.free_size) >> 8).float() * (1.0 / (1 << 24))
        lo = lo.reshape(P, 1) if isinstance(lo, torch.Tensor) else lo
        hi = hi.reshape(P, 1) if isinstance(hi, torch.Tensor) else hi
        if isinstance(lo, torch.Tensor) and bool((lo >= hi).any()):
            fail("nisa.rand2: min must be less than max in every partition")
        v = lo + u * (hi - lo)
        if dtypes.is_int(d):
            v = v.round()  # float -> integer conversion rounds to nearest (like tensor_copy)
        write(dst, v)


def set_rng_seed(src_seeds, name=None):
    """Seed every lane of the Vector Engine's generator from one 32-bit value (a [1, 1] tile):
    the same seed gives the same numbers from ``rng`` / ``rand2`` on the Vector Engine."""
    ex = execution.begin("set_rng_seed")
    operand(ex, "set_rng_seed", "src_seeds", src_seeds, ON_CHIP)
    if tuple(src_seeds.shape) != (1, 1):
        fail(f"nisa.set_rng_seed: src_seeds must be a [1, 1] tile, got {src_seeds.shape}")
    if dtypes.itemsize(src_seeds.dtype) != 4:
        fail(
            f"nisa.set_rng_seed: src_seeds must be a 32-bit value, got {dtypes.name(src_seeds.dtype)}"
        )
    record(ex, Engine.vector, src_seeds)
    if ex.compute:
        # the seed's 32 bits (a float seed is taken by its bit pattern, not its value)
        raw = src_seeds.read().reshape(1)
        seed = (
            int(raw.view(torch.int32).item()) & _M32
            if raw.dtype.is_floating_point
            else (int(raw.to(torch.int64).item()) & _M32)
        )
        W = _WORDS[Engine.vector]
        # distinct, seed-determined states per lane and word
        pos = torch.arange(_LANES * W, dtype=torch.int64).reshape(_LANES, W)
        ex.prng[Engine.vector] = _fmix32(_fmix32((pos * 0x9E3779B9) & _M32) ^ seed)


def _state_operand(ex, opc, role, t, eng):
    if t.dtype is not torch.uint32:
        fail(f"nisa.{opc}: {role} must be uint32, got {dtypes.name(t.dtype)}")
    W = _WORDS[eng]
    if t.free_size != W:
        fail(
            f"nisa.{opc}: {role} must hold {W} uint32 words per partition (the {eng} "
            f"engine's XORWOW state), got {t.free_size} (shape {t.shape})"
        )
    _lanes(ex, opc, t)


def _lanes(ex, opc, t):
    if t.partitions > _LANES:
        fail(f"nisa.{opc}: {t.partitions} partitions; the engine has {_LANES} lanes")


def rand_set_state(src_seeds, engine=engine.gpsimd, name=None):
    """Set the generator state of lanes ``0..P-1`` of the engine from ``src_seeds`` (SBUF,
    uint32, 6 words per partition on GpSimd, 24 on Vector (NeuronCore-v4))."""
    ex = execution.begin("rand_set_state")
    opc = "rand_set_state"
    if ex.target.nc_version < 3:
        fail(f"nisa.{opc} needs NeuronCore-v3 or newer; this is {ex.target.label}")
    eng = _rng_engine(ex, opc, engine, Engine.gpsimd, v4_vector=True)
    operand(ex, opc, "src_seeds", src_seeds, SBUF_ONLY)
    _state_operand(ex, opc, "src_seeds", src_seeds, eng)
    record(ex, eng, src_seeds)
    if ex.compute:
        st = _state(ex, eng)
        st[: src_seeds.partitions] = (
            src_seeds.read().reshape(src_seeds.partitions, -1).to(torch.int64)
        )


def rand_get_state(dst, engine=engine.gpsimd, name=None):
    """Store the generator state of lanes ``0..P-1`` of the engine into ``dst`` (uint32, 6
    words per partition on GpSimd, 24 on Vector (NeuronCore-v4); PSUM only on v4 Vector)."""
    ex = execution.begin("rand_get_state")
    opc = "rand_get_state"
    if ex.target.nc_version < 3:
        fail(f"nisa.{opc} needs NeuronCore-v3 or newer; this is {ex.target.label}")
    eng = _rng_engine(ex, opc, engine, Engine.gpsimd, v4_vector=True)
    operand(ex, opc, "dst", dst, ON_CHIP, write=True)
    if dst.buffer is PSUM and (eng == Engine.gpsimd or ex.target.nc_version < 4):
        fail(f"nisa.{opc}: dst must be in SBUF (PSUM only on the Vector Engine of NeuronCore-v4)")
    _state_operand(ex, opc, "dst", dst, eng)
    record(ex, eng, dst)
    if ex.compute:
        write(dst, _state(ex, eng)[: dst.partitions].clone())
