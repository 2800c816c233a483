"""Point 1: registration at autoload, torchrun launch (K = 4 visible cores), device binding
neuron:LOCAL_RANK, init_device_mesh, and a 2-node x 2-process rendezvous on loopback."""

import json

from _launch import free_port, torchrun


def _all_results(out_dir, n):
    files = sorted(out_dir.glob("rank*.json"))
    assert len(files) == n, f"expected {n} result files, got {[f.name for f in files]}"
    return [json.loads(f.read_text()) for f in files]


def _assert_ok(results):
    for res in results:
        for name in ("registered_at_autoload", "device_is_neuron_local_rank", "init_device_mesh"):
            assert res[name]["ok"], f"{name}: {res[name].get('error')}\n{res[name].get('trace')}"


def test_torchrun_single_node_four_cores(tmp_path):
    port = free_port()
    torchrun(
        "launch_check.py",
        tmp_path,
        [["--nproc_per_node", "4", "--master_addr", "127.0.0.1", "--master_port", str(port)]],
        args=["neuron"],
        timeout=180,
    ).check()
    results = _all_results(tmp_path, 4)
    _assert_ok(results)
    binding = sorted(
        (r["device_is_neuron_local_rank"]["value"] for r in results), key=lambda b: b["rank"]
    )
    assert [b["device"] for b in binding] == [f"neuron:{i}" for i in range(4)]
    assert all(b["device_count"] >= 4 for b in binding)  # default profile: 4 logical cores
    assert all(r["backend"] == "neuron" for r in results)
    for r in results:  # split_group after init_process_group(device_id=...)
        assert r["split_group"]["ok"], r["split_group"].get("error")


def test_torchrun_two_nodes_loopback(tmp_path):
    port = free_port()
    common = [
        "--nnodes",
        "2",
        "--nproc_per_node",
        "2",
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        f"127.0.0.1:{port}",
        "--rdzv_id",
        "nx-two-nodes",
    ]
    torchrun(
        "launch_check.py",
        tmp_path,
        [common + ["--node_rank", "0"], common + ["--node_rank", "1"]],
        args=["cpu:gloo,neuron:neuron"],
        timeout=180,
    ).check()
    results = _all_results(tmp_path, 4)
    _assert_ok(results)
    binding = sorted(
        (r["device_is_neuron_local_rank"]["value"] for r in results), key=lambda b: b["rank"]
    )
    assert sorted(b["rank"] for b in binding) == [0, 1, 2, 3]
    # two ranks per node: local ranks 0,1 on each node; device index == local rank
    assert sorted(b["local_rank"] for b in binding) == [0, 0, 1, 1]
    assert all(b["device"] == f"neuron:{b['local_rank']}" for b in binding)
    assert all(r["world_size"] == 4 for r in results)
    for r in results:  # split_group of a cpu:gloo,neuron:neuron group across two nodes
        assert r["split_group"]["ok"], r["split_group"].get("error")
