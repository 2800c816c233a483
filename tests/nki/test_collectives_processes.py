"""NKI collectives across the processes of a torch.distributed job: each of two processes (the
env:// variables torchrun sets) calls the same collective kernel, as on hardware; results
against torch, and a rule broken on one rank raises on both instead of hanging."""

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_collective_kernel_in_a_two_process_job(tmp_path):
    port, procs = _port(), []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank))
        env.update(LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        env.setdefault("OMP_NUM_THREADS", "1")
        cmd = [sys.executable, str(HERE / "workers" / "collective_job.py"), str(tmp_path)]
        procs.append(
            subprocess.Popen(
                cmd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=240)[0].decode(errors="replace"))
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    assert all(p.returncode == 0 for p in procs), "\n".join(x[-3000:] for x in logs)
    for rank in range(2):
        res = json.loads((tmp_path / f"rank{rank}.json").read_text())
        for dtype in ("torch.float32", "torch.bfloat16"):
            assert res[dtype] == {"equal": True, "rank_id": rank}
        # rank 1 broke a rule at its first collective; rank 0 learns it there, naming rank 1
        if rank == 1:
            assert "all be in HBM or all in SBUF" in res["error"]
        else:
            assert "rank 1 of the job failed at this collective" in res["error"]
