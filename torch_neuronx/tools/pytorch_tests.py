"""Runs PyTorch's own device-generic test files for CPU and for neuron and compares them per test.

PyTorch's ``test/test_*.py`` files that call ``instantiate_device_type_tests`` instantiate one
class per device type; ``torch.testing._internal.common_device_type`` adds a PrivateUse1 class
(``...PRIVATEUSE1``, device ``neuron``) when the backend is loaded, and
``PYTORCH_TESTING_DEVICE_ONLY_FOR`` selects the device types. The files are not part of the torch
wheel (``torch.testing._internal`` is): fetch them from pytorch/pytorch into a directory outside
this repository and pass that directory:

    python -m torch_neuronx.tools.pytorch_tests /tmp/pytorch-tests \\
        --files test_view_ops.py,test_shape_ops.py --out /tmp/pytorch-tests-results
    python -m torch_neuronx.tools.pytorch_tests /tmp/pytorch-tests --report-only \\
        --out /tmp/pytorch-tests-results --docs docs/coverage.md

Each file runs twice, in fresh interpreters: for CPU with the backend's autoload off (the plain
PyTorch baseline), and for neuron (``PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1``). Each run is
``pytest -p no:cacheprovider -q`` with a JUnit XML file, a per-test limit and a per-file limit;
the plugin ``pytorch_tests_plugin.py`` records every start and result as it happens, so a run
that crashes resumes after the test that killed it (recorded as ``crash``).

The comparison pairs tests by name with the device removed (``test_foo_cpu_float32`` and
``test_foo_privateuse1_float32``). The promise checked: a test that passes on CPU passes on
neuron, except what a documented policy excludes (sparse and quantized tensors: a clear error)
and calls that CUDA refuses the same way and the test does not make on CUDA
(``_ACCELERATOR_CONSISTENT``: each entry names the test, the message and the reason).
Failures are grouped by cause (``classify``) for the report.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
PASS = ("passed", "xfailed")
FAIL = ("failed", "error", "xpassed", "crash", "timeout")
DEVICES = ("cpu", "neuron")
_BEGIN = "<!-- pytorch-tests:begin (written by torch_neuronx/tools/pytorch_tests.py) -->"
_END = "<!-- pytorch-tests:end -->"


# ------------------------------------------------------------------------------------------
# Running


def _env(device: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = _HERE + os.pathsep + env.get("PYTHONPATH", "")
    if device == "cpu":
        env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "cpu"
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # the plain PyTorch baseline
    else:
        env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "privateuse1"
    env.setdefault(
        "OMP_NUM_THREADS", "1"
    )  # runs share a small machine; results do not depend on it
    return env


def _read_record(path: str) -> tuple[dict, str | None]:
    """Results by node id, and the node id that started last without a result (if any)."""
    results: dict[str, dict] = {}
    last_start = None
    if not os.path.exists(path):
        return results, None
    with open(path) as f:
        for line in f:
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a crash
            if "start" in d:
                last_start = d["start"]
            else:
                prev = results.get(d["id"])
                # keep the worst outcome of setup/call/teardown
                if prev is None or (
                    prev["outcome"] in PASS + ("skipped",) and d["outcome"] not in PASS
                ):
                    results[d["id"]] = d
    pending = last_start if last_start is not None and last_start not in results else None
    return results, pending


def run_file(
    test_dir: str,
    name: str,
    device: str,
    out: str,
    *,
    file_timeout: float,
    test_timeout: float,
    keyword: str | None = None,
    max_restarts: int = 20,
) -> dict:
    """Runs one file for one device; returns {"results": {nodeid: {...}}, "wall_s", "notes"}."""
    stem = f"{name[:-3]}.{device}"
    record = os.path.join(out, stem + ".jsonl")
    skip = os.path.join(out, stem + ".skip")
    for p in (record, skip):
        if os.path.exists(p):
            os.remove(p)
    notes: list[str] = []
    start = time.monotonic()
    extra: dict[str, dict] = {}
    for segment in range(max_restarts + 1):
        left = file_timeout - (time.monotonic() - start)
        if left <= 5:
            notes.append(f"file limit of {file_timeout:g} s reached")
            break
        results, _ = _read_record(record)
        with open(skip, "w") as f:
            f.write("\n".join(list(results) + list(extra)) + "\n")
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-p",
            "pytorch_tests_plugin",
            name,
            f"--junitxml={os.path.join(out, f'{stem}.{segment}.xml')}",
            f"--ntx-record={record}",
            f"--ntx-skip={skip}",
            f"--ntx-test-timeout={test_timeout}",
        ]
        if keyword:
            cmd += ["-k", keyword]
        try:
            proc = subprocess.run(
                cmd,
                cwd=test_dir,
                env=_env(device),
                timeout=left,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            rc = proc.returncode
            tail = proc.stdout[-3000:]
        except subprocess.TimeoutExpired as e:
            rc, tail = None, (e.stdout or "")[-3000:] if isinstance(e.stdout, str) else ""
        with open(os.path.join(out, f"{stem}.{segment}.log"), "w") as f:
            f.write(tail)
        results, pending = _read_record(record)
        if rc in (0, 1, 5):
            break
        if rc is None:
            notes.append(f"file limit of {file_timeout:g} s reached")
            if pending:
                extra[pending] = {
                    "id": pending,
                    "outcome": "timeout",
                    "when": "call",
                    "msg": "file limit reached",
                }
            break
        if pending is None:
            notes.append(
                f"pytest exited with {rc} outside a test: {tail.strip().splitlines()[-1:]}"
            )
            break
        extra[pending] = {
            "id": pending,
            "outcome": "crash",
            "when": "call",
            "msg": f"process died (exit {rc})",
        }
        notes.append(f"crash (exit {rc}) in {pending}; resumed after it")
    results, _ = _read_record(record)
    results.update(extra)
    return {"results": results, "wall_s": round(time.monotonic() - start, 1), "notes": notes}


# ------------------------------------------------------------------------------------------
# Comparing


_DEV_RE = re.compile(r"_(cpu|privateuse1|neuron)(?=_|$)")
_CLS_RE = re.compile(r"(CPU|PRIVATEUSE1|NEURON)(?=::|$)")


def test_key(nodeid: str) -> str:
    """The node id with the device removed, so CPU and neuron instances pair up."""
    parts = nodeid.split("::")
    parts = [_CLS_RE.sub("", p) if i < len(parts) - 1 else p for i, p in enumerate(parts)]
    return _DEV_RE.sub("_DEV", "::".join(parts))


# A policy exclusion needs the backend's own clear error (it names neuron), not any failure.
_NEURON_POLICY_ERROR = re.compile(r"\bneuron\b|TorchNeuron", re.I)
_CAUSES = [
    (
        "policy: sparse",
        re.compile(r"sparse", re.I),
        _NEURON_POLICY_ERROR,
    ),
    (
        "policy: quantized",
        re.compile(r"quantiz|qint|quint", re.I),
        _NEURON_POLICY_ERROR,
    ),
]


# Failures where neuron does what an accelerator does: the same call fails on CUDA (our model for
# the device contract), and the test itself does not make it on CUDA. Each entry was checked
# against PyTorch's source and matches one test's name AND its message, so any other failure of
# the same test still counts as a neuron failure.
ACCELERATOR = "accelerator contract: "
_ACCELERATOR_CONSISTENT = [
    (
        re.compile(r"test_stable_sort_against_numpy"),
        re.compile(r"Expected all tensors to be on the same device.*aten::index_fill_", re.S),
        ACCELERATOR
        + "CUDA refuses the same call: `x.index_fill(dim, idx, v)` with x on the device and "
        "a 1-dim CPU index (the test's `torch.randint(..., size=(size // 10,))`) raises 'Expected all "
        "tensors to be on the same device' on CUDA too (index_fill_ restrides the index to self's rank "
        "and feeds it to a TensorIterator built without allow_cpu_scalars, which admits no CPU operand "
        "beside a device tensor), and the test skips this branch on CUDA "
        '(`if self.device_type == "cuda": return`)',
    ),
]


_FLOAT64_POLICY = "float64 precision:"


def classify(nodeid: str, msg: str, outcome: str) -> str:
    """A failure's cause, for grouping: a short phrase, then the message's shape."""
    for name_re, msg_re, cause in _ACCELERATOR_CONSISTENT:
        if name_re.search(nodeid) and msg_re.search(msg):
            return cause
    for cause, name_re, msg_re in _CAUSES:
        if (name_re.search(nodeid) or name_re.search(msg)) and msg_re.search(msg):
            return cause
    if outcome in ("crash", "timeout"):
        return outcome
    if re.search(r"quantiz|qint|quint", nodeid + msg, re.I):
        return "quantized"
    if re.search(r"sparse", nodeid + msg, re.I):
        return "sparse"
    if re.search(r"not raised|DID NOT RAISE|did not raise|Regex didn't match|does not match", msg):
        return "argument validation: expected error not raised (or another message)"
    if re.search(r"Expected all tensors to be on the same device|found at least two devices", msg):
        return "devices: mixed CPU/neuron arguments refused"
    if re.search(r"Jacobian mismatch|gradcheck", msg) and re.search(
        r"float64|complex128|double", nodeid + msg
    ):
        return (
            "float64 precision: gradcheck in float64 (64-bit arithmetic runs in float32 by policy)"
        )
    if re.search(r"torch\.(float|complex|int|uint|bfloat|bool)\w* != torch\.", msg) or re.search(
        r"attribute 'dtype'|expected scalar type|result type|Expected object of scalar type", msg
    ):
        return "dtypes: result dtype differs from CPU's (64-bit promotion)"
    if re.search(r"not close|not equal|Mismatched elements|Greatest absolute difference", msg):
        if re.search(r"float64|complex128|double", nodeid):
            return (
                "float64 precision: values beyond the test's float64 tolerance (float32 by policy)"
            )
        return "values differ"
    if re.search(r"2\*\*24|2\^24|16777216|overflow|out of range|out of bounds for float", msg):
        return "64-bit limits leaking from the 32-bit policy"
    if re.search(r"TorchNeuron|on the neuron device|not supported on neuron", msg):
        return "neuron error"
    first = msg.strip().splitlines()[0] if msg.strip() else outcome
    return "other: " + re.sub(r"\d+", "N", first.split(":")[0])[:60]


def compare(runs: dict) -> dict:
    """runs[file][device] -> per-file figures and the neuron failures among CPU passes."""
    summary = {}
    for name, by_dev in runs.items():
        cpu = {test_key(k): v for k, v in by_dev["cpu"]["results"].items()}
        neu = {test_key(k): v for k, v in by_dev["neuron"]["results"].items()}

        def counts(res):
            c = collections.Counter(v["outcome"] for v in res.values())
            ran = sum(c[o] for o in PASS + FAIL)
            return {
                "ran": ran,
                "passed": sum(c[o] for o in PASS),
                "skipped": c["skipped"],
                "by_outcome": dict(c),
            }

        regress = []
        policy = []
        accelerator = []
        missing = []
        for key, c in cpu.items():
            if c["outcome"] not in PASS:
                continue
            n = neu.get(key)
            if n is None:
                missing.append(key)
                continue
            if n["outcome"] in PASS or n["outcome"] == "skipped":
                continue
            cause = classify(n["id"], n.get("msg", ""), n["outcome"])
            entry = {
                "id": n["id"],
                "outcome": n["outcome"],
                "msg": n.get("msg", "")[:400],
                "cause": cause,
            }
            if cause.startswith("policy:"):
                policy.append(entry)
            elif cause.startswith(ACCELERATOR):
                accelerator.append(entry)
            else:
                regress.append(entry)
        skip_reasons = collections.Counter(
            (neu[k].get("msg") or "").replace("Skipped: ", "")[:60]
            for k, c in cpu.items()
            if c["outcome"] in PASS and neu.get(k, {}).get("outcome") == "skipped"
        )
        neuron_only_skips = sum(skip_reasons.values())
        summary[name] = {
            "cpu": counts(cpu),
            "neuron": counts(neu),
            "cpu_passes": sum(1 for c in cpu.values() if c["outcome"] in PASS),
            "cpu_pass_neuron_fail": regress,
            "cpu_pass_neuron_policy": policy,
            "cpu_pass_neuron_accelerator": accelerator,
            "cpu_pass_neuron_skipped": neuron_only_skips,
            "cpu_pass_neuron_skip_reasons": dict(skip_reasons),
            "cpu_pass_not_instantiated_on_neuron": len(missing),
            "wall_s": {d: by_dev[d]["wall_s"] for d in DEVICES},
            "notes": {d: by_dev[d]["notes"] for d in DEVICES},
        }
    return summary


# ------------------------------------------------------------------------------------------
# Report


def render(summary: dict, source: str, extra_notes: list[str] | None = None) -> str:
    lines = [
        _BEGIN,
        "## PyTorch's own device-generic tests (neuron against CPU)",
        "",
        f"Run {datetime.date.today().isoformat()} with `python -m torch_neuronx.tools.pytorch_tests` on the test "
        f"files of {source} (not in this repository; fetched into a directory outside it). Each file runs in "
        "fresh interpreters for CPU (backend autoload off: plain PyTorch) and for neuron "
        "(`PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1`); tests pair by name with the device removed. "
        "Passed = passed or expected failure; ran = passed + failed (skips excluded). The promise: a test "
        "that passes on CPU passes on neuron, except policy exclusions (sparse, quantized: a clear error) "
        "and calls that an accelerator refuses too (CUDA is the model of the device contract; each such "
        "exclusion is listed below with its reason).",
        "",
        "| file | CPU passed / ran | neuron passed / ran | CPU passes failing on neuron | policy exclusions "
        "| accelerator-consistent exclusions | CPU passes skipped on neuron | wall s (CPU / neuron) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    tot = collections.Counter()
    for name, s in summary.items():
        c, n = s["cpu"], s["neuron"]
        bad = len(s["cpu_pass_neuron_fail"])
        acc = len(s.get("cpu_pass_neuron_accelerator", []))
        lines.append(
            f"| {name} | {c['passed']} / {c['ran']} | {n['passed']} / {n['ran']} | {bad} of {s['cpu_passes']} "
            f"| {len(s['cpu_pass_neuron_policy'])} | {acc} | {s['cpu_pass_neuron_skipped']} "
            f"| {s['wall_s']['cpu']:.0f} / {s['wall_s']['neuron']:.0f} |"
        )
        tot.update(
            cp=c["passed"],
            cr=c["ran"],
            np=n["passed"],
            nr=n["ran"],
            bad=bad,
            cpass=s["cpu_passes"],
            pol=len(s["cpu_pass_neuron_policy"]),
            acc=acc,
            skip=s["cpu_pass_neuron_skipped"],
        )
    lines.append(
        f"| **all** | {tot['cp']} / {tot['cr']} | {tot['np']} / {tot['nr']} | {tot['bad']} of {tot['cpass']} "
        f"| {tot['pol']} | {tot['acc']} | {tot['skip']} | |"
    )
    if tot["cpass"]:
        lines += [
            "",
            f"Of the tests that pass on CPU, {100.0 * (1 - tot['bad'] / tot['cpass']):.1f}% pass on neuron "
            "(or are skipped there, or are excluded by policy or as accelerator-consistent).",
        ]
    reasons = collections.Counter()
    for s in summary.values():
        reasons.update(s.get("cpu_pass_neuron_skip_reasons", {}))
    if reasons:
        lines += [
            "",
            "CPU passes skipped on neuron are PyTorch's own decorators: "
            + "; ".join(f"{r!r} {n}" for r, n in reasons.most_common(6))
            + ".",
        ]
    if extra_notes:
        lines += ["", "Notes:", ""] + [f"- {x}" for x in extra_notes]
    notes = [(n, d, x) for n, s in summary.items() for d in DEVICES for x in s["notes"][d]]
    if notes:
        lines += ["", "Run notes:", ""] + [f"- {n} ({d}): {x}" for n, d, x in notes]
    groups: dict[str, list] = collections.defaultdict(list)
    for s in summary.values():
        for e in s["cpu_pass_neuron_fail"]:
            groups[e["cause"]].append(e)
    if groups:
        lines += ["", "### CPU passes that fail on neuron, by cause", ""]
        f64 = sum(len(es) for cause, es in groups.items() if cause.startswith(_FLOAT64_POLICY))
        total = sum(len(es) for es in groups.values())
        if f64:
            share = f"All {total} of these" if f64 == total else f"{f64} of these {total}"
            lines += [
                f"{share} follow from the documented "
                'float64 policy (docs/eager.md, "Dtype policy": float64 and complex128 arithmetic runs '
                "in float32 on neuron, with CPU's result dtypes), because these tests hold float64 results "
                "to float64 tolerances or check float64 gradients numerically (gradcheck). They are "
                "expected under that policy, not bugs; they are listed, not excluded.",
                "",
            ]
        for cause, es in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(
                f"- **{cause}** ({len(es)}): "
                + ", ".join(f"`{e['id'].split('::')[-1]}`" for e in es[:12])
                + (f", ... ({len(es) - 12} more)" if len(es) > 12 else "")
            )
            lines.append(
                f"  - e.g. {es[0]['msg'].splitlines()[0][:200] if es[0]['msg'] else es[0]['outcome']}"
            )
    acc_groups: dict[str, list] = collections.defaultdict(list)
    for s in summary.values():
        for e in s.get("cpu_pass_neuron_accelerator", []):
            acc_groups[e["cause"]].append(e)
    if acc_groups:
        lines += ["", "### Accelerator-consistent exclusions (CUDA refuses the same call)", ""]
        for cause, es in sorted(acc_groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(
                f"- **{cause[len(ACCELERATOR) :]}** ({len(es)}): "
                + ", ".join(f"`{e['id'].split('::')[-1]}`" for e in es[:12])
                + (f", ... ({len(es) - 12} more)" if len(es) > 12 else "")
            )
            lines.append(
                f"  - e.g. {es[0]['msg'].splitlines()[0][:200] if es[0]['msg'] else es[0]['outcome']}"
            )
    pol = [e for s in summary.values() for e in s["cpu_pass_neuron_policy"]]
    if pol:
        lines += [
            "",
            f"Policy exclusions ({len(pol)}): "
            + ", ".join(sorted({e["cause"] for e in pol}))
            + ".",
        ]
    lines.append(_END)
    return "\n".join(lines) + "\n"


def write_docs(path: str, section: str) -> None:
    """Replaces the marked section of `path` (appends it when absent)."""
    text = open(path).read() if os.path.exists(path) else ""
    if _BEGIN in text and _END in text:
        a = text.index(_BEGIN)
        b = text.index(_END) + len(_END) + 1
        text = text[:a] + section + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


def preserved_section(path: str) -> str:
    """The marked section of an existing report (for tools that rewrite the rest of the file)."""
    if not os.path.exists(path):
        return ""
    text = open(path).read()
    if _BEGIN in text and _END in text:
        return "\n" + text[text.index(_BEGIN) : text.index(_END) + len(_END)] + "\n"
    return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("test_dir", help="directory holding PyTorch's test/test_*.py files")
    ap.add_argument(
        "--files", default="", help="comma-separated file names (default: every test_*.py)"
    )
    ap.add_argument("--out", default="/tmp/pytorch-tests-results", help="results directory")
    ap.add_argument("--devices", default="cpu,neuron")
    ap.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    ap.add_argument(
        "--file-timeout", type=float, default=900.0, help="limit per file and device (s)"
    )
    ap.add_argument("--test-timeout", type=float, default=60.0, help="limit per test (s)")
    ap.add_argument(
        "--source", default="pytorch/pytorch", help="where the files came from (for the report)"
    )
    ap.add_argument("--report-only", action="store_true", help="re-render from --out")
    ap.add_argument("--note", action="append", default=[], help="a line added to the report")
    ap.add_argument("--docs", default=None, help="write the report section into this markdown file")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    runs_path = os.path.join(args.out, "runs.json")
    runs = json.load(open(runs_path)) if os.path.exists(runs_path) else {}
    if not args.report_only:
        files = [f for f in args.files.split(",") if f] or sorted(
            f for f in os.listdir(args.test_dir) if f.startswith("test_") and f.endswith(".py")
        )
        for name in files:
            for device in args.devices.split(","):
                r = run_file(
                    args.test_dir,
                    name,
                    device,
                    args.out,
                    file_timeout=args.file_timeout,
                    test_timeout=args.test_timeout,
                    keyword=args.keyword,
                )
                runs.setdefault(name, {})[device] = r
                print(
                    f"{name} [{device}]: {len(r['results'])} results in {r['wall_s']} s {r['notes']}",
                    flush=True,
                )
                with open(runs_path, "w") as f:
                    json.dump(runs, f)
    complete = {n: r for n, r in runs.items() if all(d in r for d in DEVICES)}
    summary = compare(complete)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    section = render(summary, args.source, args.note)
    print(section)
    if args.docs:
        write_docs(args.docs, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
