"""``torch-neuronx cost`` and the hardware section of ``torch-neuronx info``.

``torch-neuronx cost mm 4096x4096 4096x4096 --dtype bf16`` prints the **modeled** cost of one op
at the given shapes and dtype on one logical core of each generation (Trn1, Trn2, Trn3), so
users can sanity-check the performance model (docs/perf-model.md). Nothing runs on a Trainium.
"""

from __future__ import annotations

import argparse
import json

from torch_neuronx.evaluate.cli_args import UsageError, positive_float, positive_int


def add_parser(sub) -> None:
    c = sub.add_parser(
        "cost",
        help="modeled Trainium cost of one op at given shapes/dtype, per generation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument(
        "op",
        help="ATen op (mm, bmm, addmm, add, mul, relu, exp, _softmax, sum, ...), sdpa, conv2d, "
        "layer_norm, or a collective (all_reduce, all_gather, reduce_scatter, broadcast, "
        "all_to_all)",
    )
    c.add_argument(
        "shapes",
        nargs="*",
        type=_shape,
        help="input shapes, e.g. 4096x4096 (collectives: the tensor's shape)",
    )
    c.add_argument(
        "--dtype", default="fp32", type=_dtype, help="bf16, fp16, fp32, fp8, ... (default fp32)"
    )
    c.add_argument(
        "--compiled",
        action="store_true",
        help="as a kernel inside a compiled graph (no eager launch)",
    )
    c.add_argument(
        "--ranks", type=positive_int, default=2, help="collectives: number of ranks (default 2)"
    )
    c.add_argument(
        "--lnc", type=int, choices=[1, 2], help="logical core size (default: each generation's)"
    )
    c.add_argument(
        "--instances",
        type=_instances,
        help="comma-separated instance names (default trn1.32xlarge,trn2.48xlarge,trn3.48xlarge)",
    )
    c.add_argument(
        "--price-per-hour", type=positive_float, help="your instance price in USD per hour"
    )
    c.add_argument("--json", action="store_true")
    c.set_defaults(fn=cmd_cost)


def _shape(text: str) -> tuple:
    """argparse ``type=``: '4096x4096' -> (4096, 4096), every size a whole number >= 0."""
    from torch_neuronx.perf import estimate

    try:
        shape = estimate.parse_shape(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"malformed shape {text!r}: expected sizes joined by x, e.g. 4096x4096 (or scalar)"
        ) from None
    if any(d < 0 for d in shape):
        raise argparse.ArgumentTypeError(f"shape {text!r} has a negative size")
    return shape


def _dtype(text: str):
    from torch_neuronx.perf import estimate

    try:
        return estimate.parse_dtype(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e} (e.g. bf16, fp16, fp32, fp8)") from None


def _instances(text: str) -> list:
    from torch_neuronx.runtime import hardware

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("names no instance")
    for n in names:
        try:
            hardware.instance(n)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return names


def cmd_cost(args) -> int:
    from torch_neuronx.eager.op_policy import engine_for
    from torch_neuronx.perf import estimate
    from torch_neuronx.runtime import hardware

    from .table import print_table as _print_table

    shapes, dtype = args.shapes, args.dtype
    try:
        rows = estimate.per_generation(
            args.op,
            shapes,
            dtype,
            engine_of=engine_for,
            in_graph=args.compiled,
            ranks=args.ranks,
            instances=args.instances,
            lnc=args.lnc,
        )
    # the op's meta kernel checks the shapes (too few inputs, mismatched sizes): the user's
    # mistake, said in one line
    except (ValueError, IndexError, TypeError, RuntimeError) as e:
        shown = " ".join("x".join(map(str, s)) or "scalar" for s in shapes) or "no shapes"
        why = "too few input shapes" if isinstance(e, IndexError) else str(e).strip()
        why = why.splitlines()[0] if why else type(e).__name__  # torch's schema errors: 8 lines
        raise UsageError(f"cannot model {args.op} on {shown} ({dtype}): {why}") from None
    out = []
    from torch_neuronx.perf import ranges
    from torch_neuronx.perf.target import for_instance

    for inst, lnc, c in rows:
        price = hardware.price_per_hour(inst, args.price_per_hour)
        gen = hardware.instance(inst).generation
        kind = "collective" if c.kind == "collective" else "kernel"
        lo, hi = ranges.likely(c.duration, kind, gen)
        cores = for_instance(inst, lnc).cores_per_instance
        out.append(
            {
                "instance": inst,
                "generation": hardware.instance(inst).generation,
                "lnc": lnc,
                "modeled_time_us": c.duration * 1e6,
                # how far off the model was on published cases of this kind (perf/ranges.py)
                "likely_time_us": [lo * 1e6, hi * 1e6],
                "range_from": f"validation errors of {kind} work ({gen})"
                + (f"; {ranges.scope(kind, gen)}" if ranges.scope(kind, gen) else ""),
                "bound": c.bound,
                "engine": c.engine,
                "flops": c.flops,
                "bytes": c.bytes,
                "tflop_per_s": c.flops / c.duration / 1e12 if c.duration else 0.0,
                "gb_per_s": c.bytes / c.duration / 1e9 if c.duration else 0.0,
                "compute_us": c.compute_s * 1e6,
                "memory_us": c.memory_s * 1e6,
                "overhead_us": c.overhead_s * 1e6,
                "detail": c.detail,
                # one logical core's share of the instance price, for a million calls back to back
                "usd_per_million_calls": (c.duration * 1e6 * price / 3600.0 / cores)
                if price is not None
                else None,
                # time x price: the cost's likely range is the time's
                "likely_usd_per_million_calls": [t * 1e6 * price / 3600.0 / cores for t in (lo, hi)]
                if price is not None
                else None,
            }
        )
    if args.json:
        print(
            json.dumps(
                {
                    "modeled": True,
                    "op": args.op,
                    "shapes": ["x".join(map(str, s)) or "scalar" for s in args.shapes],
                    "dtype": str(dtype),
                    "compiled": args.compiled,
                    "rows": out,
                },
                indent=1,
            )
        )
        return 0
    title = (
        f"modeled Trainium cost of {args.op} "
        f"{' '.join('x'.join(map(str, s)) or 'scalar' for s in args.shapes)} {dtype} "
        f"({'kernel in a compiled graph' if args.compiled else 'eager op'}, one logical core; "
        "no Trainium was used)"
    )
    _print_table(
        title,
        ["instance", "LNC", "modeled time", "bound", "engine", "TFLOP/s", "GB/s"],
        [
            [
                r["instance"],
                r["lnc"],
                f"{r['modeled_time_us']:,.2f} us",
                r["bound"],
                r["engine"],
                f"{r['tflop_per_s']:,.1f}",
                f"{r['gb_per_s']:,.0f}",
            ]
            for r in out
        ],
    )
    for r in out:
        usd = r["usd_per_million_calls"]
        print(
            f"{r['instance']}: compute {r['compute_us']:,.2f} us, memory {r['memory_us']:,.2f} us, "
            f"overhead {r['overhead_us']:,.2f} us; "
            f"{r['modeled_time_us']:,.3g} us, likely {r['likely_time_us'][0]:,.3g}-"
            f"{r['likely_time_us'][1]:,.3g} us (modeled; range from the {r['range_from']}); "
            + (
                f"${usd:,.4f} per million calls (likely ${r['likely_usd_per_million_calls'][0]:,.4f}-"
                f"{r['likely_usd_per_million_calls'][1]:,.4f}; one core's share of the instance "
                "price)"
                if usd is not None
                else "no price known (--price-per-hour)"
            )
            + (f"; {r['detail']}" if r["detail"] else "")
        )
    return 0


def hardware_rows(profile_name: str, lnc: int) -> list:
    """(figure, value, source) rows of the emulated profile's generation (``info``)."""
    from torch_neuronx.runtime import hardware

    inst = hardware.instance(profile_name)
    rows = [list(r) for r in hardware.table_rows(inst.generation, lnc)]
    price = inst.price_usd_per_hour
    rows.append([f"{inst.name} chips", f"{int(inst.chips.value)}", inst.chips.cite()])
    rows.append(
        [
            f"{inst.name} price",
            "unknown" if price.value is None else f"${price.value:,.3f}/h",
            f"{price.cite()}: {price.note}",
        ]
    )
    return rows


def source_rows(rows: list) -> list:
    """[key, URL] for every source key cited in ``rows`` (third column, "[T2, NKI2]" style)."""
    import re

    from torch_neuronx.runtime import hardware

    keys: list = []
    for r in rows:
        for group in re.findall(r"\[([A-Z0-9, ]+)\]", str(r[2])):
            for k in group.split(","):
                k = k.strip()
                if k in hardware.SOURCES and k not in keys:
                    keys.append(k)
    return [[k, hardware.SOURCES[k]] for k in keys]
