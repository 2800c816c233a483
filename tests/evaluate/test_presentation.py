"""How the report reads (issue 25 items 7 and 9; issue 23 item 8): the terminal summary at 80
and 160 columns and the HTML, over a few real reports (an ok run, a raising script, a crashed
--fake trace, Ctrl-C, a --fake projection): no raw reprs, paths relative to the
working directory and never broken by wrapping, units scaled to the figure, no header-only
tables, whole-run figures labelled, every projected time and cost with its likely range, and
the published runs behind the range listed in the HTML."""

from __future__ import annotations

import html
import html.parser
import io
import json
import re
import subprocess
import sys

import pytest
from evaluate_support import SCRIPTS, have

from torch_neuronx.evaluate import render_html, render_text
from torch_neuronx.evaluate.likely import COSTS, TIMES
from torch_neuronx.perf import ranges
from torch_neuronx.testing.child import child_env

REPORTS = {  # key of evaluate_support's cache (shared with the other tests) -> CLI arguments
    "tinygpt_eager": (
        "--steps",
        "3",
        "--tokens-per-step",
        "128",
        "tinygpt_train.py",
        "--steps",
        "10",
    ),
    "raises": ("raises.py",),
    "fake_raises_early": ("--fake", "raises_early.py"),
    "interrupted": (str(SCRIPTS / "interrupted.py"),),
    "tinygpt_fake": ("--fake", "tinygpt_train.py", "--steps", "10"),
}

#: a Python repr of a dict, list of strings or a bool where a reader expects words
RAW = re.compile(r"\{'|\['|\{\"|\bTrue\b|\bFalse\b|\bNone\b|<[a-zA-Z_.]+ object at 0x")
#: a container's repr (the HTML's prose may name True/False: cells are checked for those)
REPR = re.compile(r"\{'|\['|\{\"|<[a-zA-Z_.]+ object at 0x")
SITE = re.compile(r"[\w./-]+\.py:\d+")


@pytest.fixture(scope="module")
def reports(run_eval):
    out = {}
    for key, args in REPORTS.items():
        r = run_eval(key, *args)
        assert (r.out / "report.json").exists(), r.explain()
        out[key] = r
    return out


def _terminal(rep: dict, width: int) -> str:
    from rich.console import Console

    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=False, color_system=None)
    render_text.print_summary(
        rep, {"json": str(SCRIPTS / "neuron-eval" / "report.json")}, console=con
    )
    return buf.getvalue()


@pytest.mark.skipif(not have("rich"), reason="rich (the 'cli' extra) is not installed")
@pytest.mark.parametrize("width", [80, 160])
def test_terminal_reads_at_80_and_160_columns(reports, width, monkeypatch):
    monkeypatch.chdir(SCRIPTS)  # the reports were made there: their paths are relative to it
    for key, r in reports.items():
        rep = r.report
        text = _terminal(rep, width)
        assert not RAW.search(text), (key, RAW.search(text).group(0), text)
        assert str(SCRIPTS) not in text, (key, text)  # relative to the working directory
        assert "report.json" in text and "neuron-eval/report.json" in text
        # a file:line is never broken by wrapping (rich soft-wraps; the terminal folds)
        for line in render_text.summary_lines(rep):
            for site in SITE.findall(line):
                assert site in text, (key, site)
        # units scaled to the figure: no "0.0 GiB" for a MiB-sized run
        assert not re.search(r"\b0\.0+ [GMK]iB", text), (key, text)
        # per-step figures and whole-run figures are labelled as such
        if "host syncs:" in text:
            assert "per steady step" in text or "no step counted" in text
            assert "in the whole run" in text
        if "placement" in text:
            assert "placement (whole run)" in text


def test_every_projected_time_and_cost_has_a_likely_range(reports):
    """JSON: each projection row carries ``likely`` for its times and costs; the terminal and
    the verdict say "likely" beside them, labelled modeled."""
    for key in ("tinygpt_eager", "tinygpt_fake"):
        rep = reports[key].report
        pr = rep.get("fake_projection") or rep["projection"]
        assert pr["range"]["kind"] == "training" and "modeled" in pr["range"]["label"]
        assert pr["range"]["backing"]["all"], pr["range"]  # the published runs behind it
        for row in pr["profiles"]:
            for k in TIMES + COSTS:
                if row.get(k) is not None:
                    lo, hi = row["likely"][k]
                    assert lo <= row[k] <= hi and hi > lo, (key, k, row)
        rec = pr["recommendation"]
        assert rec["likely"][0] <= rec["value"] <= rec["likely"][1]
        text = "\n".join(render_text.summary_lines(rep))
        assert "likely range from the validation errors of training work" in text
        step_lines = [ln for ln in text.splitlines() if " step " in ln and "/lnc" in ln]
        assert step_lines and all("likely" in ln for ln in step_lines), step_lines
        assert "likely" in rep["verdict"]["will_it_be_fast"]["detail"]


def test_failed_fake_trace_does_not_say_it_fits(reports):
    rep = reports["fake_raises_early"].report
    fit = rep["verdict"]["does_it_fit"]
    assert fit["answer"] == "unknown" and fit["detail"].startswith("not determined")
    assert "fake trace did not complete" in fit["detail"]
    text = "\n".join(render_text.summary_lines(rep))
    assert "Does it fit?      UNKNOWN: not determined" in text


def test_raise_shows_its_file_and_line_and_ctrl_c_is_interrupted(reports, monkeypatch):
    monkeypatch.chdir(SCRIPTS)
    raised = "\n".join(render_text.summary_lines(reports["raises"].report))
    assert re.search(r"ERROR: the script raised RuntimeError at raises\.py:\d+ in ", raised), raised
    stopped = "\n".join(render_text.summary_lines(reports["interrupted"].report))
    assert "INTERRUPTED: Ctrl-C" in stopped and "ERROR" not in stopped, stopped


def test_fsdp_without_fake_is_a_clear_error():
    proc = subprocess.run(
        [sys.executable, "-m", "torch_neuronx.tools.cli", "evaluate", "--fsdp", "8", "x.py"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "--fsdp and --tp choose the layout of a --fake projection: add --fake" in proc.stderr


class _Tables(html.parser.HTMLParser):
    """Rows per table, the table cells' text, and the page's text outside <pre> (a traceback is
    raw by nature)."""

    def __init__(self):
        super().__init__()
        self.tables, self.text, self.cells, self._pre, self._td = [], [], [], 0, False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"rows": 0, "cells": 0})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"] += 1
        elif tag == "td" and self.tables:
            self.tables[-1]["cells"] += 1
            self._td = True
            self.cells.append("")
        elif tag == "pre":
            self._pre += 1

    def handle_endtag(self, tag):
        if tag == "pre":
            self._pre -= 1
        elif tag == "td":
            self._td = False

    def handle_data(self, data):
        if not self._pre:
            self.text.append(data)
        if self._td:
            self.cells[-1] += data


def test_html_has_no_raw_reprs_no_header_only_tables_and_names_the_runs_behind_ranges(
    reports, monkeypatch
):
    monkeypatch.chdir(SCRIPTS)
    for key, r in reports.items():
        page = render_html.render(json.loads(json.dumps(r.report)))
        p = _Tables()
        p.feed(page)
        text = " ".join(p.text)
        assert not REPR.search(text), (key, REPR.search(text).group(0))
        # a cell says yes/no/n/a, never Python's True/False/None (prose may name them)
        assert not [c for c in p.cells if re.search(r"\b(True|False|None)\b", c)], key
        assert str(SCRIPTS) not in text, key
        assert all(t["cells"] > 0 for t in p.tables), key  # a header row alone is no table
        assert not re.search(r"\b0\.0+ [GMK]iB", text), key
    page = render_html.render(reports["tinygpt_eager"].report)
    # the runs behind the training range are named (html-escaped as render_html writes them)
    backing = [html.escape(run, quote=True) for run, _, _ in ranges.BACKING["training"]]
    assert "id='likely'" in page and all(run in page for run in backing)
    assert "modeled time by op, whole run" in page.lower()


@pytest.mark.skipif(
    not have("matplotlib"), reason="matplotlib (the 'report' extra) is not installed"
)
def test_chart_labels_do_not_overlap(reports):
    """The bounding boxes of every chart's tick labels, axis labels and title, drawn as the
    HTML embeds them: no two overlap."""
    plt = render_html._plt()
    for key, r in reports.items():
        for name, fig in render_html.figures(r.report, plt).items():
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            for ax in fig.axes:
                texts = _drawn_ticks(ax, "x") + _drawn_ticks(ax, "y")
                texts += [t for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
                boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
                for i, (ta, a) in enumerate(boxes):
                    for tb, b in boxes[i + 1 :]:
                        assert not a.overlaps(b), (key, name, ta, tb)
            plt.close(fig)


def _drawn_ticks(ax, which: str) -> list:
    """The tick labels matplotlib draws: those of ticks inside the view limits (a locator also
    places ticks beyond them, which are not drawn)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
    span = (hi - lo) * 1e-9
    return [
        lbl
        for loc, lbl in zip(axis.get_ticklocs(), axis.get_ticklabels())
        if lo - span <= loc <= hi + span and lbl.get_visible() and lbl.get_text()
    ]


def test_torchrun_reference_refusal_and_long_errors_reach_the_terminal(reports, monkeypatch):
    """The --reference refusal under torchrun was only in the JSON; a compiler's 50-line error
    was pasted whole into the terminal."""
    from torch_neuronx.evaluate import report

    monkeypatch.chdir(SCRIPTS)
    rep = json.loads(json.dumps(reports["tinygpt_eager"].report))
    note = "--reference is not supported under torchrun (one process re-runs one script)"
    rep["numerics"].update(verdict="not compared", note=note, verdict_reason=note)
    rep.update(
        status="error",
        error={
            "type": "BackendCompilerFailed",
            "message": "\n".join(f"buf{i} = inductor_ir_line({i})" for i in range(50)),
            "traceback": "",
            "site": str(SCRIPTS / "tinygpt_train.py") + ":12 in step",
        },
    )
    del rep["verdict"]
    report.finish(rep)
    text = "\n".join(render_text.summary_lines(rep))
    assert f"Does it match?    NOT COMPARED: {note}" in text
    assert f"numerics: verdict not compared ({note})" in text
    assert "at tinygpt_train.py:12 in step" in text
    assert "buf2 = " in text and "buf3 = " not in text and "more characters in report.json" in text
