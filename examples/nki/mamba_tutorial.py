"""The three Mamba kernels of AWS's "Fused Mamba" NKI tutorial, re-written here in the 0.2+ API
after the tutorial's description (the same loop orders, instruction choices and tile sizes;
not a copy of its code), for checking the cost model against the tutorial's published
profiles (benchmarks/bench_nki_cost.py, tests/nki/test_cost_calibration.py).

    python examples/nki/mamba_tutorial.py     # the three kernels against the reference

Tutorial: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/tutorials/fused_mamba.html
(source: aws-neuron/aws-neuron-sdk, nki/guides/tutorials/fused_mamba.rst). Per (state, channel
tile of 128): ``exp(delta * A[:, s])`` on the Scalar Engine (``activation`` with a per-partition
scale), then on the Vector Engine ``delta * u``, ``* B[s]`` (B broadcast to the channel
partitions by a Tensor Engine matmul with a row of ones, read from PSUM), the scan
``h = dA * h + dBu`` (``tensor_tensor_scan``), ``* C[s]`` (broadcast the same way) and the
accumulation over states: four fp32 ``tensor_tensor`` and one scan.

- ``mamba_v1``: loops state -> channel tile; ``delta``/``u`` are loaded again for every state.
- ``mamba_v2``: loops channel tile -> state; ``delta``/``u`` loaded once per channel tile.
- ``mamba_v3``: v2 plus ``seq_len`` tiled by 512 as the innermost loop, the scan chained
  through ``initial`` (the previous tile's last column).
"""

import contextlib

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

P = 128


def _bcast(row, cols, ones):
    """``row[:, cols]`` (one partition) on all 128 partitions: ones(1, 128).T @ row, in PSUM
    (the tutorial's partition-dim broadcast on the Tensor Engine)."""
    n = cols.stop - cols.start
    p = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.psum)
    for j in range(0, n, 512):  # one PSUM bank (512 fp32) per matmul
        w = min(512, n - j)
        nisa.nc_matmul(
            dst=p[:, j : j + w], stationary=ones, moving=row[:, cols.start + j : cols.start + j + w]
        )
    return p


def _state_step(delta_t, u_t, A_t, s, B_r, C_r, ones, acc, cols, init=None):
    """Steps 1-6 of the tutorial for one state on one channel tile (columns ``cols``)."""
    n = cols.stop - cols.start
    d = delta_t[:, cols]
    da = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=da, op=nl.exp, data=d, scale=A_t[:, s : s + 1])
    du = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=du, data1=d, data2=u_t[:, cols], op=nl.multiply)
    dbu = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=dbu, data1=du, data2=_bcast(B_r, cols, ones), op=nl.multiply)
    h = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(
        dst=h,
        data0=da,
        data1=dbu,
        initial=0.0 if init is None else init,
        op0=nl.multiply,
        op1=nl.add,
    )
    hc = nl.ndarray((P, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=hc, data1=h, data2=_bcast(C_r, cols, ones), op=nl.multiply)
    nisa.tensor_tensor(dst=acc[:, cols], data1=acc[:, cols], data2=hc, op=nl.add)
    return h


def _ones():
    o = nl.ndarray((1, P), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=o, value=1.0)
    return o


def _load_bc(B, C, b, s, seq):
    B_r = nl.ndarray((1, seq), dtype=nl.float32, buffer=nl.sbuf)
    C_r = nl.ndarray((1, seq), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=B_r, src=B[b, s : s + 1, :])
    nisa.dma_copy(dst=C_r, src=C[b, s : s + 1, :])
    return B_r, C_r


def _load(x, b, ct, seq):
    t = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[b, ct * P : (ct + 1) * P, :])
    return t


@nki.jit
def mamba_v1(delta, u, A, B, C):
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray(delta.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    ones = _ones()
    for b in nl.affine_range(batch):
        acc = nl.ndarray((P, channels // P, seq), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        for s in nl.affine_range(states):
            B_r, C_r = _load_bc(B, C, b, s, seq)
            for ct in nl.affine_range(channels // P):
                delta_t, u_t = _load(delta, b, ct, seq), _load(u, b, ct, seq)
                A_t = nl.ndarray((P, states), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=A_t, src=A[ct * P : (ct + 1) * P, :])
                _state_step(delta_t, u_t, A_t, s, B_r, C_r, ones, acc[:, ct, :], slice(0, seq))
        for ct in nl.affine_range(channels // P):
            nisa.dma_copy(dst=out[b, ct * P : (ct + 1) * P, :], src=acc[:, ct, :])
    return out


@nki.jit
def mamba_v2(delta, u, A, B, C):
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray(delta.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    ones = _ones()
    for b in nl.affine_range(batch):
        for ct in nl.affine_range(channels // P):
            acc = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            delta_t, u_t = _load(delta, b, ct, seq), _load(u, b, ct, seq)
            A_t = nl.ndarray((P, states), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=A_t, src=A[ct * P : (ct + 1) * P, :])
            for s in nl.affine_range(states):
                B_r, C_r = _load_bc(B, C, b, s, seq)
                _state_step(delta_t, u_t, A_t, s, B_r, C_r, ones, acc, slice(0, seq))
            nisa.dma_copy(dst=out[b, ct * P : (ct + 1) * P, :], src=acc)
    return out


@nki.jit
def mamba_v3(delta, u, A, B, C, tile=512):
    batch, channels, seq = delta.shape
    states = A.shape[1]
    out = nl.ndarray(delta.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    ones = _ones()
    for b in nl.affine_range(batch):
        for ct in nl.affine_range(channels // P):
            acc = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=acc, value=0.0)
            delta_t, u_t = _load(delta, b, ct, seq), _load(u, b, ct, seq)
            A_t = nl.ndarray((P, states), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=A_t, src=A[ct * P : (ct + 1) * P, :])
            for s in nl.affine_range(states):
                B_r, C_r = _load_bc(B, C, b, s, seq)
                init = None
                for j in nl.static_range(seq // tile):
                    cols = slice(j * tile, (j + 1) * tile)
                    h = _state_step(delta_t, u_t, A_t, s, B_r, C_r, ones, acc, cols, init)
                    init = h[:, tile - 1 : tile]
            nisa.dma_copy(dst=out[b, ct * P : (ct + 1) * P, :], src=acc)
    return out


def inputs(batch=1, channels=256, states=16, seq=512, device="neuron"):
    g = torch.Generator().manual_seed(0)
    delta = torch.nn.functional.softplus(torch.randn(batch, channels, seq, generator=g) - 1)
    u = torch.randn(batch, channels, seq, generator=g)
    A = -torch.rand(channels, states, generator=g) - 0.5
    B = torch.randn(batch, states, seq, generator=g)
    C = torch.randn(batch, states, seq, generator=g)
    return [t.to(device) for t in (delta, u, A, B, C)]


def reference(delta, u, A, B, C):
    """The tutorial's PyTorch reference: the scan over time, summed over states."""
    delta, u, A, B, C = (t.float().cpu() for t in (delta, u, A, B, C))
    dA = torch.exp(delta[:, :, None, :] * A[None, :, :, None])
    dBu = delta[:, :, None, :] * B[:, None, :, :] * u[:, :, None, :]
    h = torch.zeros_like(dA[..., 0])
    ys = []
    for t in range(delta.shape[-1]):
        h = dA[..., t] * h + dBu[..., t]
        ys.append((h * C[:, None, :, t]).sum(-1))
    return torch.stack(ys, -1)


@contextlib.contextmanager
def neuroncore_v2():
    """Kernels placed on a NeuronCore-v2 (Trn1's core, LNC=1) for their modeled schedule, as
    the tutorial's profiles were taken; the emulated instance (allocator, devices) is unchanged."""
    from torch_neuronx.nki import target
    from torch_neuronx.runtime import hardware

    view = target.CoreTarget(hardware.logical_core("trn1"))
    saved = target.current
    target.current = lambda: view
    try:
        yield view
    finally:
        target.current = saved


def modeled_on_neuroncore_v2(kernel: str, channels: int, seq: int, states: int = 16):
    """The launch report of one tutorial kernel (``"mamba_v1"``...) on a NeuronCore-v2."""
    k = globals()[kernel]
    args = inputs(channels=channels, states=states, seq=seq)
    with neuroncore_v2():
        k(*args)
    return k.last_report


def main():
    args = inputs(channels=256, seq=1024)
    ref = reference(*args)
    for k in (mamba_v1, mamba_v2, mamba_v3):
        torch.testing.assert_close(k(*args).cpu(), ref, rtol=1e-4, atol=1e-4)
        print(f"{k.__name__}: matches the PyTorch reference; {k.last_report}")


if __name__ == "__main__":
    main()
