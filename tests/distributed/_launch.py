"""Launch real multi-process groups for the distributed tests, with hard timeouts.

Every launch runs each rank as its own OS process (``python worker.py`` with the
env:// variables torchrun would set, or ``torchrun`` itself), in its own session so
a timeout kills the whole tree; nothing can hang the test run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKERS = HERE / "workers"
REPO = HERE.parent.parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(out_dir: Path, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["NX_TEST_OUT"] = str(out_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(WORKERS), str(REPO), env.get("PYTHONPATH", "")])
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    # the default emulated instance (4 logical cores) unless a test asks otherwise
    for k in (
        "TORCH_NEURONX_EMULATED_INSTANCE",
        "NEURON_LOGICAL_NC_CONFIG",
        "NEURON_RT_VISIBLE_CORES",
        "NEURON_RT_NUM_CORES",
    ):
        env.pop(k, None)
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


class LaunchResult:
    def __init__(self, procs, outputs, returncodes, out_dir, timed_out):
        self.outputs = outputs
        self.returncodes = returncodes
        self.out_dir = Path(out_dir)
        self.timed_out = timed_out

    def log(self) -> str:
        return "\n".join(
            f"--- proc {i} rc={rc}\n{out[-6000:]}"
            for i, (rc, out) in enumerate(zip(self.returncodes, self.outputs, strict=True))
        )

    def check(self):
        assert not self.timed_out, "launch timed out (killed):\n" + self.log()
        assert all(rc == 0 for rc in self.returncodes), "a process failed:\n" + self.log()
        return self

    def results(self, rank: int) -> dict:
        p = self.out_dir / f"rank{rank}.json"
        assert p.exists(), f"rank {rank} wrote no results:\n" + self.log()
        return json.loads(p.read_text())


def _run(cmds_envs, out_dir: Path, timeout: float) -> LaunchResult:
    procs = []
    logs = []
    for i, (cmd, env) in enumerate(cmds_envs):
        log = open(out_dir / f"proc{i}.log", "w+")
        logs.append(log)
        procs.append(
            subprocess.Popen(
                cmd,
                env=env,
                cwd=str(REPO),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    deadline = time.monotonic() + timeout
    timed_out = False
    for p in procs:
        left = deadline - time.monotonic()
        try:
            p.wait(timeout=max(left, 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
            break
    if timed_out:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in procs:
            p.wait()
    outputs = []
    for log in logs:
        log.flush()
        log.seek(0)
        outputs.append(log.read())
        log.close()
    return LaunchResult(procs, outputs, [p.returncode for p in procs], out_dir, timed_out)


def launch(
    script: str,
    out_dir: Path,
    nprocs: int = 2,
    args=(),
    env: dict | None = None,
    timeout: float = 120.0,
    port: int | None = None,
) -> LaunchResult:
    """Run ``workers/<script>`` as ``nprocs`` ranks of one env:// group."""
    port = port or free_port()
    cmds = []
    for rank in range(nprocs):
        e = base_env(out_dir, env)
        e.setdefault("NX_HANG_DUMP_S", str(max(timeout - 15, 5)))
        e.update(
            RANK=str(rank),
            WORLD_SIZE=str(nprocs),
            LOCAL_RANK=str(rank),
            LOCAL_WORLD_SIZE=str(nprocs),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
        )
        cmds.append(([sys.executable, str(WORKERS / script), *map(str, args)], e))
    return _run(cmds, out_dir, timeout)


def torchrun(
    script: str,
    out_dir: Path,
    runs: list[list[str]],
    args=(),
    env: dict | None = None,
    timeout: float = 150.0,
) -> LaunchResult:
    """Run one ``torchrun`` per entry of ``runs`` (its launcher flags) concurrently."""
    cmds = []
    for flags in runs:
        e = base_env(out_dir, env)
        e.setdefault("NX_HANG_DUMP_S", str(max(timeout - 15, 5)))
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            *flags,
            str(WORKERS / script),
            *map(str, args),
        ]
        cmds.append((cmd, e))
    return _run(cmds, out_dir, timeout)
