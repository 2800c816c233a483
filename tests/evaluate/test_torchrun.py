"""Under torchrun: a report per rank and a merged one."""

from __future__ import annotations

import json
import sys


def test_two_rank_ddp_writes_per_rank_and_merged_reports(run_eval):
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--master-port",
        "29631",
        "-m",
        "torch_neuronx.tools.cli",
    ]
    r = run_eval("ddp", "ddp_train.py", launcher=launcher)
    assert r.rc == 0, r.explain()
    for rank in (0, 1):
        with open(r.out / f"report-rank{rank}.json") as f:
            rep = json.load(f)
        assert rep["rank"] == rank and rep["world_size"] == 2 and rep["steps_completed"] == 3
        assert any(row["kind"] == "collective" for row in rep["projection"]["by_op"])
    merged = r.report
    assert merged["rank"] == "merged" and [x["rank"] for x in merged["ranks"]] == [0, 1]
    assert all(x["status"] == "ok" and x["steps"] == 3 for x in merged["ranks"])
    assert (r.out / "report.html").exists()
