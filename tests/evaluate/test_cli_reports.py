"""``torch-neuronx evaluate`` end to end on small scripts: every section, the right source
lines, exit codes and bad input."""

from __future__ import annotations

import os

import pytest
from evaluate_support import SCRIPTS, marker_line

from torch_neuronx.evaluate.build import SCHEMA, SCHEMA_VERSION, SECTIONS


def _site_lines(rows, script):
    path = str(SCRIPTS / script)
    return {
        int(s["site"].split(":")[-1].split(" ")[0])
        for r in rows
        for s in r["sites"]
        if s["site"].startswith(path)
    }


def test_tinygpt_eager_report_has_every_section(run_eval):
    r = run_eval(
        "tinygpt_eager",
        "--steps",
        "3",
        "--tokens-per-step",
        "128",
        "tinygpt_train.py",
        "--steps",
        "10",
    )
    assert r.rc == 0, r.explain()
    rep = r.report
    assert rep["schema"] == SCHEMA and rep["schema_version"] == SCHEMA_VERSION
    assert rep["status"] == "ok" and rep["steps_completed"] == 3  # --steps stopped the 10-step loop
    for s in SECTIONS:
        assert rep[s], s
    assert rep["placement"]["fallback_calls"] == 0 and rep["placement"]["native_calls"] > 100
    assert all(s["loss"] is not None and s["loss"] > 0 for s in rep["steps"])
    assert rep["memory"]["peak_allocated"] > 0 and all(
        f["fits_one_core"] for f in rep["memory"]["fit"]
    )
    profs = {p["profile"]: p for p in rep["projection"]["profiles"]}
    assert {"trn2.3xlarge/lnc2", "trn2.48xlarge/lnc2", "trn3.3xlarge/lnc2"} <= set(profs)
    for p in profs.values():
        assert p["step_s"] > 0 and 0 < p["mfu"] < 1 and p["tokens_per_s"] > 0
    assert profs["trn2.3xlarge/lnc2"]["usd_per_1000_steps"] > 0
    assert rep["projection"]["flops_per_step"] > 0
    assert os.path.exists(r.out / "report.html")


def test_fallback_host_sync_and_recompile_with_source_lines(run_eval):
    r = run_eval("problems", "--fail-on", "fallback,recompile", "problems.py")
    assert r.rc == 3, r.explain()  # the gate, not a script error
    rep = r.report
    assert rep["status"] == "ok"
    fb = [x for x in rep["placement"]["fallback_ops"] if "linalg_qr" in x["name"]]
    assert fb and marker_line("problems.py", "fallback") in _site_lines(fb, "problems.py")
    reads = rep["host_sync"]["reads"]
    assert marker_line("problems.py", "sync") in _site_lines(reads, "problems.py")
    # the kind is the call that read (observed), at its line
    item = [x for x in reads if x["name"] == ".item()"]
    assert item and marker_line("problems.py", "sync") in _site_lines(item, "problems.py"), reads
    unsupported = rep["placement"]["unsupported_features"]
    assert [u["name"] for u in unsupported] == ["torch.func transforms"], unsupported
    assert marker_line("problems.py", "unsupported") in _site_lines(unsupported, "problems.py")
    assert any("torch.func transforms" in i["item"] for i in rep["readiness"])
    assert rep["host_sync"]["in_steady_state_per_step"] >= 1
    rc = rep["compilation"]["recompiles"]
    assert rc, rep["compilation"]
    assert any(
        x["site"].startswith(
            str(SCRIPTS / "problems.py") + f":{marker_line('problems.py', 'recompile')}"
        )
        for x in rc
    ), rc
    assert any("size mismatch" in reason for x in rc for reason in x["reasons"])
    assert "pad" in rc[0]["suggestion"]
    assert set(rep["fail_on"]["triggered"][i].split(":")[0] for i in range(2)) == {
        "fallback",
        "recompile",
    }
    assert rep["readiness"][0]["status"] == "fail" and "linalg_qr" in rep["readiness"][0]["item"]


def test_a_second_run_reports_the_warm_cache_compile_time(run_eval):
    # the same script twice with one compile cache (the session's): cold, then from the cache
    cold = run_eval("problems", "--fail-on", "fallback,recompile", "problems.py")
    warm = run_eval("problems_warm", "problems.py")
    c0, c1 = cold.report["compilation"], warm.report["compilation"]
    assert c0["graphs"] >= 1 and c0["graphs_from_cache"] == 0 and c0["compile_cold_s"] > 0
    assert "run again" in c0["warm_cache_note"]
    assert c1["graphs"] == c1["graphs_from_cache"] == c0["graphs"] and c1["compile_cold_s"] == 0
    assert 0 < c1["compile_warm_cache_s"] < c0["compile_cold_s"]


def test_raising_script_still_writes_report(run_eval):
    r = run_eval("raises", "raises.py")
    assert r.rc == 1, r.explain()
    rep = r.report
    assert rep["status"] == "error" and rep["steps_completed"] == 1
    assert "boom from the user script" in rep["error"]["traceback"]
    assert f'raises.py", line {marker_line("raises.py", "raise")}' in rep["error"]["traceback"]
    assert "boom" in (r.out / "report.html").read_text()


def test_script_that_never_touches_neuron_says_so(run_eval):
    r = run_eval("cpu_only", "cpu_only.py")
    assert r.rc == 0, r.explain()
    assert (
        r.report["touched_neuron"] is False
        and "never touched the neuron device" in r.report["notice"]
    )
    assert r.report["readiness"][0]["status"] == "fail"


def test_ctrl_c_writes_a_partial_report(run_eval, tmp_path):
    script = SCRIPTS / "interrupted.py"
    r = run_eval("interrupted", str(script))
    assert r.rc == 130, r.explain()
    assert r.report["status"] == "interrupted" and r.report["steps_completed"] == 2


def test_unknown_instance_and_malformed_price_list_valid_choices(capsys):
    from torch_neuronx.tools.cli import main

    assert main(["evaluate", "--instances", "trn9.huge", "x.py"]) == 2
    err = capsys.readouterr().err
    assert "unknown instance 'trn9.huge'" in err and "trn2.48xlarge" in err
    assert main(["evaluate", "--price", "trn2.3xlarge=cheap", "x.py"]) == 2
    assert "not a number" in capsys.readouterr().err
    assert main(["evaluate", "--price", "trn2.3xlarge", "x.py"]) == 2
    assert "INSTANCE=USD_PER_HOUR" in capsys.readouterr().err
    assert main(["evaluate", "--fail-on", "speed", "x.py"]) == 2
    assert "fallback, recompile, numerics, memory" in capsys.readouterr().err


def test_price_override_changes_cost():
    from torch_neuronx.evaluate import build, profiles

    (table,) = profiles.profiles(["trn2.3xlarge"], 2)
    (mine,) = profiles.profiles(["trn2.3xlarge"], 2, profiles.parse_prices("trn2.3xlarge=22.35"))
    assert mine.price_usd_per_hour == 22.35 and mine.price_source == "passed by the caller"
    assert table.price_usd_per_hour is not None and table.price_source != "passed by the caller"
    work = {"tokens_per_step": 1000}
    a = build.projection_row(table, 0.5, 1e12, work)
    b = build.projection_row(mine, 0.5, 1e12, work)
    # billed for the cores the layout uses (one rank here), not the whole instance
    assert b["billed_cores"] == 1
    assert b["usd_per_1000_steps"] == pytest.approx(1000 * 0.5 * 22.35 / 3600 / mine.cores)
    assert b["usd_per_1000_steps"] / a["usd_per_1000_steps"] == pytest.approx(
        22.35 / table.price_usd_per_hour
    )
    # per million tokens: every core of the instance runs a replica at this step time
    assert b["usd_per_million_tokens"] == pytest.approx(
        22.35 / 3600 / (1000 / 0.5 * mine.cores) * 1e6
    )
    (trn3,) = profiles.profiles(["trn3.3xlarge"], 2)
    assert (
        build.projection_row(trn3, 0.5, 1e12, work)["usd_per_1000_steps"] is None
    )  # no public price
