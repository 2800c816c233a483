"""Full differential OpInfo sweep (neuron against CPU) -> docs/coverage.md.

Run from the repository root (``make coverage`` runs the first line):

    python -m torch_neuronx.tools.coverage_sweep                   # full sweep -> docs/coverage.md
    python -m torch_neuronx.tools.coverage_sweep --ci              # the CI sample only
    python -m torch_neuronx.tools.coverage_sweep --ops add,sort    # some ops (report to --out)
    python -m torch_neuronx.tools.coverage_sweep --categories float64,complex128,grad64 \
        --out /tmp/wide.md                                          # the 64-bit part only
    python -m torch_neuronx.tools.coverage_sweep --report-only     # re-render from --results
    # harness self-check, CPU against CPU:
    TORCH_NEURONX_OPINFO_DEVICE=cpu python -m torch_neuronx.tools.coverage_sweep --out /tmp/c.md

The comparison itself is :mod:`torch_neuronx.testing.opinfo` (shared with
``tests/eager/test_opinfo.py``); this module only schedules it and writes the report.

The sweep runs in a worker subprocess that appends one JSON line per sample to the
results file; if the worker crashes (segfault, abort) or stalls on an op, the parent
records that (op, category) as failed with reason ``crash``/``timeout`` and starts a new
worker after it, so one bad kernel cannot lose the rest of the sweep.

Pass rate = passed / (passed + failed) over samples that run on CPU without error:
a sample that raises on CPU is excluded (``cpu_error``). Random/undefined-output ops
are compared on structure, dtype, shape and device only and reported separately.
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

from torch_neuronx.runtime import env

# The source tree of the package under test: the report names its git commit.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _harness():
    # Imported on use: it loads PyTorch's OpInfo database (seconds), which --report-only
    # and --known-failures do not need.
    from torch_neuronx.testing import opinfo

    return opinfo


# ---------------------------------------------------------------------------------------
# worker
# ---------------------------------------------------------------------------------------


def worker(args) -> int:
    H = _harness()
    device = H.device_under_test()
    ops = H.load_op_db()
    plan = H.CI_PLAN if args.ci else H.FULL_PLAN
    wanted = set(args.ops.split(",")) if args.ops else None
    cats = _categories(args, H)
    crash_on = env.text("COVERAGE_SWEEP_CRASH_ON")  # test hook: "op:category" to abort on
    with open(args.results, "a", buffering=1) as f:
        for idx in range(args.start, len(ops)):
            op = ops[idx]
            key = H.op_key(op)
            if wanted is not None and key not in wanted and op.name not in wanted:
                continue
            for ci, cat in enumerate(H.CATEGORIES):
                if (idx, ci) < (args.start, args.start_cat) or cat not in cats:
                    continue
                if not H.category_dtypes(op, cat):
                    continue
                f.write(
                    json.dumps({"begin": [idx, ci], "op": key, "cat": cat, "t": time.time()}) + "\n"
                )
                if crash_on == f"{key}:{cat}":
                    os.abort()  # simulates a kernel crash
                for r in H.run_op_category(op, cat, device, plan):
                    d = r.to_json()
                    d["cat"] = cat
                    f.write(json.dumps(d) + "\n")
                f.write(json.dumps({"end": [idx, ci]}) + "\n")
        # RNN/LSTM/GRU, attention and transformer modules (module_db), after the ops;
        # their (idx, cat) continue the op numbering so crash recovery works the same.
        for j, minfo in enumerate(H.load_module_db()):
            idx = len(ops) + j
            key = f"module:{minfo.name}"
            if wanted is not None and key not in wanted and minfo.name not in wanted:
                continue
            for ci, cat in enumerate(H.CATEGORIES):
                if cat not in ("float32", "grad") or cat not in cats:
                    continue
                if (idx, ci) < (args.start, args.start_cat):
                    continue
                f.write(
                    json.dumps({"begin": [idx, ci], "op": key, "cat": cat, "t": time.time()}) + "\n"
                )
                for r in H.run_module(minfo, device, plan, cat):
                    d = r.to_json()
                    d["cat"] = cat
                    f.write(json.dumps(d) + "\n")
                f.write(json.dumps({"end": [idx, ci]}) + "\n")
        f.write(json.dumps({"done": True, "device": device}) + "\n")
    return 0


# ---------------------------------------------------------------------------------------
# parent: run workers, survive crashes
# ---------------------------------------------------------------------------------------


def _categories(args, H) -> set:
    """The categories to sweep: --categories, else all of them."""
    if not args.categories:
        return set(H.CATEGORIES)
    cats = set(args.categories.split(","))
    unknown = cats - set(H.CATEGORIES)
    if unknown:
        raise SystemExit(f"--categories: unknown {sorted(unknown)}; known: {list(H.CATEGORIES)}")
    return cats


def _read_records(path):
    recs = []
    if not os.path.exists(path):
        return recs
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                recs.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut short by a crash
    return recs


def _open_begin(recs):
    """The last (idx, cat) begun and not ended, with its record, else None."""
    open_ = None
    for r in recs:
        if "begin" in r:
            open_ = r
        elif "end" in r:
            open_ = None
    return open_


def sweep(args) -> None:
    H = _harness()
    ncat = len(H.CATEGORIES)
    if os.path.exists(args.results) and not args.resume:
        os.remove(args.results)
    start, start_cat = 0, 0
    if args.resume:
        recs = _read_records(args.results)
        ends = [tuple(r["end"]) for r in recs if "end" in r]
        if ends:
            i, c = max(ends)
            start, start_cat = (i, c + 1) if c + 1 < ncat else (i + 1, 0)
    retries = 0
    while True:
        n_before = len(_read_records(args.results))
        cmd = [
            sys.executable,
            "-m",
            __spec__.name,
            "--worker",
            "--results",
            args.results,
            "--start",
            str(start),
            "--start-cat",
            str(start_cat),
        ]
        if args.ci:
            cmd.append("--ci")
        if args.ops:
            cmd += ["--ops", args.ops]
        if args.categories:
            cmd += ["--categories", args.categories]
        proc = subprocess.Popen(cmd)
        stalled = False
        while proc.poll() is None:
            time.sleep(2)
            ob = _open_begin(_read_records(args.results)[-2000:])
            if ob is not None and time.time() - ob["t"] > args.op_timeout:
                proc.kill()
                stalled = True
                proc.wait()
        recs = _read_records(args.results)
        if any("done" in r for r in recs) or any("fatal" in r for r in recs):
            break
        if len(recs) == n_before:
            # the worker died before starting anything (e.g. the extension failed to
            # import): retry a few times, then give up
            retries += 1
            if retries > 5:
                with open(args.results, "a") as f:
                    f.write(
                        json.dumps(
                            {
                                "fatal": f"worker exits with code {proc.returncode} "
                                "before running any op"
                            }
                        )
                        + "\n"
                    )
                break
            time.sleep(15)
            continue
        retries = 0
        ob = _open_begin(recs)
        if ob is None:
            # died between two (op, category) pairs
            ends = [tuple(r["end"]) for r in recs if "end" in r]
            last = max(ends) if ends else (start, start_cat - 1)
            i, c = last
        else:
            i, c = ob["begin"]
            status = "timeout" if stalled else f"crash (exit code {proc.returncode})"
            with open(args.results, "a") as f:
                f.write(
                    json.dumps(
                        {
                            "op": ob["op"],
                            "variant": "all",
                            "dtype": "-",
                            "index": -1,
                            "status": "fail",
                            "kind": status.split()[0],
                            "reason": f"worker {status} while running this op/category",
                            "sample": "",
                            "relaxed": False,
                            "cat": ob["cat"],
                        }
                    )
                    + "\n"
                )
                f.write(json.dumps({"end": [i, c]}) + "\n")
            print(
                f"coverage_sweep: {ob['op']} [{ob['cat']}]: {status}; continuing", file=sys.stderr
            )
        start, start_cat = (i, c + 1) if c + 1 < ncat else (i + 1, 0)


# ---------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------

_NUM = re.compile(r"(?<![A-Za-z_])[-+]?\d+(\.\d+)?(e[-+]?\d+)?")


def normalize_reason(kind, reason):
    r = _NUM.sub("N", reason)
    r = re.sub(r"\(N(, N)*,?\)|\[N(, N)*\]", "(...)", r)
    if kind == "values":
        r = "values differ"
    return f"{kind}: {r[:160]}"


def _rate(p, f):
    n = p + f
    return f"{100.0 * p / n:.2f}%" if n else "n/a"


def render(recs, device, mode) -> str:
    H = _harness()
    results = [r for r in recs if "status" in r]
    fatal = [r["fatal"] for r in recs if "fatal" in r]

    def bucket(r):
        if r["relaxed"]:
            return None
        if r["op"].startswith("module:"):
            return "modules forward" if r["cat"] == "float32" else "modules gradients"
        if r["cat"] == "float32":
            return "float32 forward"
        if r["cat"] == "grad":
            return "float32 gradients"
        if r["cat"] == "bfloat16":
            return "bfloat16"
        if r["cat"] == "integer":
            return "integer/bool"
        if r["cat"] in ("float64", "complex128"):
            return f"{r['cat']} forward"
        if r["cat"] == "grad64":
            return "float64/complex128 gradients"
        return None

    counts = collections.defaultdict(collections.Counter)
    variant_counts = collections.defaultdict(collections.Counter)
    dtype_counts = collections.defaultdict(collections.Counter)
    relaxed_counts = collections.Counter()
    op_counts = collections.defaultdict(collections.Counter)
    for r in results:
        b = bucket(r)
        if r["relaxed"]:
            relaxed_counts[r["status"]] += 1
        if b is None:
            continue
        counts[b][r["status"]] += 1
        variant_counts[(b, r["variant"])][r["status"]] += 1
        if b == "integer/bool":
            dtype_counts[r["dtype"]][r["status"]] += 1
        op_counts[r["op"]][r["status"]] += 1

    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    import torch

    L = []
    L.append("# Op coverage: differential OpInfo sweep\n")
    try:
        sha = (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"],
                cwd=PACKAGE_ROOT,
                text=True,
                capture_output=True,
                timeout=10,
            ).stdout.strip()
            or "?"
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "torch_neuronx"],
            cwd=PACKAGE_ROOT,
            text=True,
            capture_output=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # no git, or not a checkout
        sha, dirty = "?", ""
    core = f"core at git {sha}" + (" plus uncommitted torch_neuronx changes" if dirty else "")
    L.append(
        f"Generated by `python -m torch_neuronx.tools.coverage_sweep` ({mode}) on {now}; "
        f"torch {torch.__version__}; "
        f"{core}; device under test: **{device}**.\n"
    )
    if device == "cpu":
        L.append(
            "> **Harness self-check (CPU against CPU).** These numbers validate the harness "
            "itself, not the neuron device: every comparable sample must pass. Re-run "
            "`python -m torch_neuronx.tools.coverage_sweep` without "
            "`TORCH_NEURONX_OPINFO_DEVICE` to measure neuron.\n"
        )
    if fatal:
        L.append(f"> **The sweep did not run:** {fatal[0]}\n")
    ci = H.CI_PLAN
    L.append(f"""## Method

The harness is validated by running it CPU against CPU
(`TORCH_NEURONX_OPINFO_DEVICE=cpu python -m torch_neuronx.tools.coverage_sweep --out /tmp/self.md`),
where every comparable sample must pass (it does), and by unit tests of its own comparison
(`test_harness_detects_mismatch`, `test_harness_preserves_layout`).

Every OpInfo in PyTorch's `op_db` (`torch.testing._internal.common_methods_invocations`,
shipped in the wheel) is swept by `torch_neuronx/testing/opinfo/`. Each sample is generated
on CPU (seeded), cloned to the device with its exact layout (sizes, strides, storage offset,
overlapping/expanded memory), run on the device and on CPU, and compared: same output
structure, dtype, shape, device type, values within the OpInfo's tolerances
(`assert_close` defaults widened by the op's `toleranceOverride`/`precisionOverride`),
strides for elementwise ops and for in-place/`out=` results. Variants: functional,
in-place (`inplace_variant`: must return its input), `out=` (`supports_out`: must return
the `out` tensors). Gradients: backward through the op's gradcheck wrapper with the same
random `grad_outputs` on both sides; all input gradients compared.

* **Pass rate** = passed / (passed + failed), over samples that run on CPU without error.
  Samples that raise on CPU (`cpu_error`) are excluded: they are invalid inputs or ops the
  CPU build lacks.
* **Unsupported by policy**: a sample on which the device raises TorchNeuron's
  documented "not supported on the neuron device" error (e.g. `torch.sparse`) is listed
  below and excluded from the pass rates.
* **float64 results** (from float32/integer inputs: `float_power`, `softmax(dtype=float64)`,
  ...) are held to float32 tolerances, because float64 arithmetic on neuron runs in float32.
* **Random / undefined-output ops** (the OpInfo database skips `test_compare_cpu` for them,
  plus the `empty*` factories and random samplers) are compared on structure, dtype, shape
  and device only and counted separately (below); `tests/eager/test_random_ops.py` checks
  the random ops statistically.
* **float64 and complex128** (rows `float64 forward`, `complex128 forward`,
  `float64/complex128 gradients`): 64-bit floating arithmetic on neuron has float32
  precision by design (TorchNeuron behaviour). Dtype and shape must equal CPU's exactly;
  values are held to the op's float32 (complex64) tolerance (docs/eager.md, "Dtype policy").
  float16 and other complex dtypes are outside this report.
* CI (`pytest tests/eager/test_opinfo.py`) runs a deterministic sample: every op and
  category, {ci.take} of the first {ci.pool} samples ({ci.take_wide} of {ci.pool_wide} for
  the 64-bit categories) picked by a stable hash, {ci.int_dtypes_per_op} integer
  dtypes per op. `make test-full` (`TORCH_NEURONX_TEST_FULL=1`) runs every sample of every
  dtype, as this sweep does.
* A kernel that crashes the process or stalls is recorded as one failure (`crash` /
  `timeout`) of its (op, category); the sweep goes on in a fresh worker.
""")
    L.append("""## Not covered

* float16 and complex64; forward-mode AD and double
  backward; sparse/nested layouts (unsupported on neuron by policy).
* `op_db` has no RNN/LSTM/GRU or attention modules: those come from `module_db` (rows
  `modules` below), float32 and eval mode only.
* A crash or stall counts one failure for its whole (op, category); the samples after it
  in that category are not run.
* Random ops are checked statistically in `tests/eager/test_random_ops.py`, not here.

Known failures, with their reasons, are listed in `KNOWN_FAILURES` in
`torch_neuronx/testing/opinfo/known_failures.py` (CI reports them as expected failures).
""")
    L.append("## Pass rates\n")
    L.append(
        "| category | passed | failed | pass rate | unsupported by policy | "
        "excluded (fails on CPU) | skipped |"
    )
    L.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in (
        "float32 forward",
        "float32 gradients",
        "bfloat16",
        "integer/bool",
        "float64 forward",
        "complex128 forward",
        "float64/complex128 gradients",
        "modules forward",
        "modules gradients",
    ):
        c = counts[b]
        L.append(
            f"| {b} | {c['pass']} | {c['fail']} | {_rate(c['pass'], c['fail'])} | "
            f"{c['unsupported']} | {c['cpu_error']} | {c['skip']} |"
        )
    L.append("")
    L.append(
        "Targets: >= 98% of float32 samples, >= 95% of gradient samples. The first "
        "four rows are PyTorch's `op_db` (float32 forward = functional, in-place and "
        "`out=` variants); the `modules` rows are RNN/LSTM/GRU (and cells), "
        "MultiheadAttention and Transformer encoder/decoder layers from "
        "`common_modules.module_db` (float32, eval mode), which `op_db` lacks.\n"
    )
    L.append("### By variant\n")
    L.append("| category | variant | passed | failed | pass rate |")
    L.append("| --- | --- | ---: | ---: | ---: |")
    for (b, v), c in sorted(variant_counts.items()):
        L.append(f"| {b} | {v} | {c['pass']} | {c['fail']} | {_rate(c['pass'], c['fail'])} |")
    L.append("")
    if dtype_counts:
        L.append("### Integer and bool dtypes\n")
        L.append("| dtype | passed | failed | pass rate | excluded (fails on CPU) |")
        L.append("| --- | ---: | ---: | ---: | ---: |")
        for dt, c in sorted(dtype_counts.items()):
            L.append(
                f"| {dt} | {c['pass']} | {c['fail']} | {_rate(c['pass'], c['fail'])} | "
                f"{c['cpu_error']} |"
            )
        L.append("")
    L.append("### Random / undefined-output ops (structure, dtype, shape, device only)\n")
    L.append(
        f"passed {relaxed_counts['pass']}, failed {relaxed_counts['fail']}, excluded "
        f"{relaxed_counts['cpu_error']}, skipped {relaxed_counts['skip']}.\n"
    )
    all_ops = collections.defaultdict(collections.Counter)
    for r in results:
        all_ops[r["op"]][r["status"]] += 1
    nops = len(all_ops)
    failing = sum(1 for c in all_ops.values() if c["fail"])
    clean = sum(1 for c in all_ops.values() if c["fail"] == 0 and c["pass"] > 0)
    none = nops - failing - clean
    L.append(
        f"OpInfos and modules swept: {nops}: every compared sample passes for {clean}, at "
        f"least one sample fails for {failing}, and {none} have no comparable sample (CPU-only, "
        f"e.g. jiterator, or unsupported by policy).\n"
    )

    fails = [r for r in results if r["status"] == "fail"]
    L.append("## Failure groups (most samples first)\n")
    if not fails:
        L.append("None.\n")
    else:
        groups = collections.defaultdict(list)
        for r in fails:
            groups[normalize_reason(r["kind"], r["reason"])].append(r)
        L.append("| samples | ops | reason | ops (first 8) |")
        L.append("| ---: | ---: | --- | --- |")
        for reason, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            ops = sorted({r["op"] for r in rs})
            L.append(
                f"| {len(rs)} | {len(ops)} | {reason.replace('|', '/')} | "
                f"{', '.join(ops[:8])}{' ...' if len(ops) > 8 else ''} |"
            )
        L.append("")
        L.append("## Every failure\n")
        L.append(
            "One row per (op, variant, dtype): failing / compared samples, the reason of "
            "the first failing sample, and that sample.\n"
        )
        L.append("| op | variant | dtype | failing | reason | first failing sample |")
        L.append("| --- | --- | --- | ---: | --- | --- |")
        per = collections.defaultdict(list)
        tot = collections.Counter()
        for r in results:
            if r["status"] in ("pass", "fail"):
                tot[(r["op"], r["variant"], r["dtype"])] += 1
        for r in fails:
            per[(r["op"], r["variant"], r["dtype"])].append(r)
        for k in sorted(per):
            rs = per[k]
            r0 = rs[0]
            reason = f"{r0['kind']}: {r0['reason']}".replace("|", "/").replace("\n", " ")[:300]
            sample = f"#{r0['index']} {r0['sample']}".replace("|", "/")[:160]
            L.append(f"| {k[0]} | {k[1]} | {k[2]} | {len(rs)}/{tot[k]} | {reason} | `{sample}` |")
        L.append("")
    unsup = collections.defaultdict(collections.Counter)
    for r in results:
        if r["status"] == "unsupported":
            unsup[r["op"]][r["reason"]] += 1
    if unsup:
        L.append("## Unsupported on neuron by policy (excluded from the pass rates)\n")
        L.append(
            "The device raised TorchNeuron's documented \"not supported on the neuron "
            'device" error (`torch_neuronx.eager.op_policy`: `unsupported`).\n'
        )
        L.append("| op | samples | reason |")
        L.append("| --- | ---: | --- |")
        for o in sorted(unsup):
            for reason, n in unsup[o].most_common():
                L.append(f"| {o} | {n} | {reason.replace('|', '/')[:240]} |")
        L.append("")
    skips = collections.Counter(
        normalize_reason(r["kind"], r["reason"]) for r in results if r["status"] == "skip"
    )
    if skips:
        L.append("## Skipped samples\n")
        L.append("| samples | reason |")
        L.append("| ---: | --- |")
        for reason, n in skips.most_common():
            L.append(f"| {n} | {reason.replace('|', '/')} |")
        L.append("")
    cpu_err = collections.Counter(r["op"] for r in results if r["status"] == "cpu_error")
    if cpu_err:
        L.append("## Excluded: samples that fail on CPU (top 30 ops)\n")
        L.append(", ".join(f"{o} ({n})" for o, n in cpu_err.most_common(30)) + "\n")
    return "\n".join(L)


def known_failures_snippet(recs) -> str:
    """Python source for torch_neuronx.testing.opinfo's KNOWN_FAILURES / KNOWN_CRASHES."""
    fails = collections.defaultdict(collections.Counter)
    crashes = {}
    for r in recs:
        if r.get("status") != "fail":
            continue
        if r["kind"] in ("crash", "timeout"):
            crashes.setdefault(r["op"], {})[r["cat"]] = r["reason"]
        else:
            fails[(r["op"], r["cat"])][normalize_reason(r["kind"], r["reason"])] += 1
    kf = collections.defaultdict(dict)
    for (op, cat), c in sorted(fails.items()):
        if op in crashes and cat in crashes[op]:
            continue
        kf[op][cat] = "; ".join(reason for reason, _ in c.most_common(2))[:200]

    def literal(name, table):
        lines = [f"{name}: dict[str, dict[str, str]] = {{"]
        for op in sorted(table):
            lines.append(f"    {op!r}: {{")
            for cat, reason in sorted(table[op].items()):
                lines.append(f"        {cat!r}: {reason!r},")
            lines.append("    },")
        lines.append("}")
        return lines

    return "\n".join(literal("KNOWN_FAILURES", kf) + literal("KNOWN_CRASHES", crashes))


# A section of the report that this tool does not generate (written by another tool, such as
# tools/pytorch_tests.py, or kept by hand, such as the float64 measurements of issue 13) sits
# between `<!-- NAME:begin ... -->` and `<!-- NAME:end -->` lines; a rewrite keeps every such
# block, in its order, after the generated part, so no tool needs to know the others' markers.
_MARKED_BLOCK = re.compile(
    r"^<!-- (?P<name>[\w.-]+):begin\b[^\n]*-->[ \t]*$.*?^<!-- (?P=name):end -->[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def preserved_blocks(path: str) -> list[str]:
    """The marked blocks of an existing report, markers included, in file order."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [m.group(0) for m in _MARKED_BLOCK.finditer(f.read())]


def write_report(path: str, text: str) -> None:
    """Writes the generated report `text` to `path`, followed by the marked blocks of the
    file it replaces."""
    for block in preserved_blocks(path):
        text += "\n" + block + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default=os.path.join("docs", "coverage.md"))
    p.add_argument("--results", default=os.path.join("/tmp", "torch_neuronx_coverage.jsonl"))
    p.add_argument("--ci", action="store_true", help="the CI sample instead of the full sweep")
    p.add_argument("--ops", default="", help="comma-separated op names/keys to sweep")
    p.add_argument(
        "--categories",
        default="",
        help="comma-separated categories to sweep (default: all), e.g. float64,complex128,grad64",
    )
    p.add_argument(
        "--op-timeout",
        type=float,
        default=600.0,
        help="seconds one (op, category) may run before the worker is killed",
    )
    p.add_argument("--resume", action="store_true", help="continue an interrupted sweep")
    p.add_argument("--report-only", action="store_true")
    p.add_argument(
        "--known-failures",
        action="store_true",
        help="print KNOWN_FAILURES / KNOWN_CRASHES for "
        "torch_neuronx/testing/opinfo/known_failures.py from --results",
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--start-cat", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.known_failures:
        print(known_failures_snippet(_read_records(args.results)))
        return 0
    if not args.report_only:
        sweep(args)
    recs = _read_records(args.results)
    device = next(
        (r["device"] for r in recs if "device" in r),
        env.text("TORCH_NEURONX_OPINFO_DEVICE", "neuron"),
    )
    mode = "CI sample" if args.ci else ("ops " + args.ops if args.ops else "full sweep")
    if args.categories:
        mode += f", categories {args.categories}"
    write_report(args.out, render(recs, device, mode))
    res = [r for r in recs if "status" in r]
    c = collections.Counter(r["status"] for r in res)
    print(f"coverage_sweep: {len(res)} samples: {dict(c)} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
