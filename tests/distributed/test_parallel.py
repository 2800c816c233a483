"""Point 3: DDP, FSDP2 (+ MixedPrecisionPolicy), DTensor TP/SP, 2-stage pipelining,
functional collectives (eager and compiled with backend="neuron"), and DCP with a
sharded FSDP2 model; each checked against a single-process run (1e-5)."""

import pytest
from _launch import launch

SCENARIOS = [
    "ddp",
    "ddp_comm_hook",
    "fsdp2",
    "fsdp2_mixed_precision",
    "dcp_fsdp2",
    "tensor_parallel",
    "sequence_parallel",
    "pipeline_2_stages",
    "funcol_eager",
    "funcol_compiled",
]
_cache = {}


def _results(tmp_path_factory):
    if "res" not in _cache:  # one launch for all scenarios, failures included
        out = tmp_path_factory.mktemp("parallel")
        try:
            res = launch("parallel.py", out, nprocs=2, timeout=240).check()
            _cache["res"] = [res.results(r) for r in range(2)]
        except AssertionError as e:
            _cache["res"] = e
    if isinstance(_cache["res"], AssertionError):
        raise _cache["res"]
    return _cache["res"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_parallelism_api(scenario, tmp_path_factory):
    for r, res in enumerate(_results(tmp_path_factory)):
        assert res[scenario]["ok"], f"rank {r}: {res[scenario]['error']}\n{res[scenario]['trace']}"
