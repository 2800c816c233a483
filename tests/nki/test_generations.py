"""The simulated NeuronCore follows the emulated instance: Trn3 (NeuronCore-v4) has a larger
SBUF, wider matmuls, bfloat16 PSUM output and nisa.exponential. Run in a fresh process (the
instance profile is fixed at startup)."""


def test_trn3_profile_is_neuroncore_v4(py):
    py(
        """
        import torch
        from torch_neuronx import nki
        import torch_neuronx.nki.isa as nisa
        import torch_neuronx.nki.language as nl

        assert nisa.get_nc_version() == nisa.nc_version.gen4
        assert nl.tile_size.total_available_sbuf_size == 256 * 1024

        @nki.jit
        def k(x):
            s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
            m = nl.ndarray((128, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=x[:, 0:128])
            nisa.dma_copy(dst=m, src=x)
            p = nl.ndarray((128, 2048), dtype=nl.bfloat16, buffer=nl.psum)  # 4 KiB: 2 banks
            nisa.nc_matmul(dst=p, stationary=s, moving=m)  # moving 2048 > 512: v4 only
            e = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
            nisa.exponential(dst=e, src=p, max_value=0.0)
            out = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=e)
            return out

        x = torch.randn(128, 2048).div(16).to(torch.bfloat16)
        out = k(x.to("neuron")).cpu()
        ref = torch.exp((x[:, :128].float().t() @ x.float()).to(torch.bfloat16).float())
        torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2)
        assert k.last_report.target == "Trn3 NeuronCore-v4"
    """,
        env={"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"},
    )
