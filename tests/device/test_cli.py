"""torch-neuronx command line (issue 2, point 11)."""

import json
import os
import subprocess
import sys

BIN = os.path.join(os.path.dirname(sys.executable), "torch-neuronx")


def run(*args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300, env=e)


def test_verify_passes():
    r = run("verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks passed" in r.stdout and "trn2.3xlarge" in r.stdout


def test_verify_fails_without_devices():
    r = run(
        "verify",
        env={
            "TORCH_DEVICE_BACKEND_AUTOLOAD": "1",
            "NEURON_RT_VISIBLE_CORES": "0",
            "NEURON_RT_NUM_CORES": "1",
            "TORCH_NEURONX_HBM_PER_CORE": "1KiB",
        },
    )
    # 1 KiB of HBM cannot hold the verification matmul: verify must report failure, not crash.
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL" in r.stdout


def test_info_json():
    r = run("info", "--json", env={"NEURON_LOGICAL_NC_CONFIG": "1"})
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["profile"] == "trn2.3xlarge" and len(d["devices"]) == 8
    assert d["devices"][0]["total_memory"] == 12 << 30


def test_ops_json_covers_every_aten_op():
    import torch

    r = run("ops", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    names = {row["op"] for row in rows}
    aten = {
        n.split(".")[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")
    }
    assert aten <= names
    assert all(set(row) == {"op", "status", "reason"} for row in rows)
    status = {row["op"]: row["status"] for row in rows}
    assert status["aten::linalg_qr"] == "fallback" and status["aten::mm"] == "native"


def _first_line_then_close(*args):
    """Runs ``torch-neuronx ARGS | head -1``: reads one line, then closes the pipe."""
    p = subprocess.Popen(
        [sys.executable, "-m", "torch_neuronx.tools.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    return first, p.wait(timeout=300), err


def test_a_closed_pipe_ends_quietly():
    """Issue 28 item 5: ``torch-neuronx ops --format json | head -1`` printed a BrokenPipeError
    traceback (the JSON is far larger than a pipe's buffer, so the write meets the closed
    pipe); now nothing on stderr, and 141 (128 + SIGPIPE) as a C tool would report."""
    first, rc, err = _first_line_then_close("ops", "--format", "json")
    assert first.strip() == b"["
    assert err == "" and rc == 141, (rc, err)


def test_bad_arguments_are_one_line_and_exit_2():
    r = run("ops", "--format", "yaml")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("torch-neuronx ops: error: argument --format: invalid choice")
    assert r.stderr.count("\n") == 1, r.stderr
