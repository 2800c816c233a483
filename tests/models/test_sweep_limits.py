"""The model-zoo sweep's per-model limit counts CPU seconds (a starved worker on a loaded
machine is not a slow model), and a worker that dies is that model's failure, not the sweep's."""

import os
import time

from torch_neuronx.testing.model_zoo import sweep


def test_cpu_seconds_counts_this_process_work():
    before = sweep._cpu_seconds(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:  # busy: CPU time, not wall time, must grow
        pass
    assert sweep._cpu_seconds(os.getpid()) - before >= 0.2


def test_cpu_seconds_of_a_missing_process_is_zero():
    assert sweep._cpu_seconds(2**22 + 12345) == 0.0


def test_a_worker_that_dies_fails_its_model_only():
    (rows,) = list(sweep.run_chunk(["nosuchsuite:model"], ("eager",), timeout=120.0))
    assert [r["status"] for r in rows] == ["fail"]
    assert rows[0]["model"] == "nosuchsuite:model"
    assert "unknown suite" in rows[0]["detail"]
