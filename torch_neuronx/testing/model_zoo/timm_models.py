"""timm architectures: the smallest variant of every family, random weights, a small input.

A *family* is a module of ``timm.models`` (timm registers each model function in the module
that defines its architecture: ``resnet``, ``convnext``, ``vision_transformer``, ...), so the
sweep has one model per module. The *smallest variant* is the one with the fewest parameters
when built on the meta device (no memory, no arithmetic), ties broken by name; timm's own
``test_*`` models (``test_vit``, ``test_convnext``, ...), tiny versions it keeps for its tests,
win where a family has one.

Each chosen model then gets, by rule:

- its *size*: a smallest variant over `PARAM_BUDGET` parameters (only a few families have
  nothing smaller: BEiT, SAM's ViT, the DeepSeek/Gemma 4/Qwen3 vision towers, ...) is built
  with the depth arguments its class takes at their minimum (``depth=2``, ``depths`` and
  ``layers`` at one block per stage), the way the ``hf`` suite shrinks configs; 2-step
  training of a 400M-parameter model would take several GB of this machine's memory and
  minutes, and tests nothing a shallower copy does not;

- its *resolution*: the first of `RESOLUTIONS` at which a CPU training step (batch `BATCH`)
  runs; models whose constructor takes ``img_size`` (ViTs, Swin, ...) are built for that
  resolution; failing all, the model's own default input size (CrossViT); a family none of
  whose variants trains is listed in the table as unrunnable (none in timm 1.0.31);
- its *memory format*: ``channels_last`` for a convnet (more than one Conv2d: more than a
  ViT's patch embedding), as timm's ``train.py --channels-last`` is used for convnets;
  contiguous else.

The selection takes minutes (every timm model is built once), so its result is kept in
``timm_families.json`` beside this file with the timm version it came from;
``python -m torch_neuronx.testing.model_zoo.timm_models`` regenerates it (after a timm
upgrade: `tests/models/test_model_zoo.py` checks that its families are the installed timm's).

Models are built with ``pretrained=False`` (nothing is downloaded), ``num_classes`` =
`NUM_CLASSES`, and every dropout and drop-path rate at 0 (CPU and neuron draw from different
generators, so a dropout mask would differ between them and say nothing about the device).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import warnings

import torch

from torch_neuronx.testing import torchvision_shim

BATCH = 2
NUM_CLASSES = 10
RESOLUTIONS = (32, 64, 96, 128, 160, 192, 224, 256)
PARAM_BUDGET = 30_000_000
_TABLE = os.path.join(os.path.dirname(__file__), "timm_families.json")


def _timm():
    torchvision_shim.install()
    import timm

    return timm


def families() -> dict[str, dict]:
    """model name -> {family, params, shrink, resolution, img_size, channels_last} (the kept
    table)."""
    with open(_TABLE) as f:
        return json.load(f)["models"]


def unrunnable() -> dict[str, list[str]]:
    """family -> its variants, for the families none of whose variants trains on CPU at any
    of RESOLUTIONS (outside the sweep by the CPU rule, like a ``cpu_error`` model)."""
    with open(_TABLE) as f:
        return json.load(f)["skipped_unrunnable"]


def table_timm_version() -> str:
    with open(_TABLE) as f:
        return json.load(f)["timm_version"]


def model_names() -> list[str]:
    """The chosen model of every family, sorted by family."""
    return sorted(families(), key=lambda n: families()[n]["family"])


def _init_params(timm, name: str) -> dict[str, inspect.Parameter]:
    """The constructor parameters of the model's class (entry points pass **kwargs on)."""
    with torch.device("meta"):
        model = timm.create_model(name, pretrained=False)
    return dict(inspect.signature(type(model).__init__).parameters)


def _shrink_kwargs(params: dict[str, inspect.Parameter]) -> dict:
    """Depth arguments at their minimum, for those of `params` with a usable default."""
    kw: dict = {}
    for name, param in params.items():
        default = param.default
        if name == "depth" and isinstance(default, int) and default > 2:
            kw[name] = 2
        elif name in ("depths", "layers") and isinstance(default, list | tuple) and default:
            if all(isinstance(d, int) for d in default):
                kw[name] = [1] * len(default)
    return kw


def _create(
    timm, name: str, resolution: int | None, img_size: bool, shrink: dict | None = None
) -> torch.nn.Module:
    kwargs = {"pretrained": False, "num_classes": NUM_CLASSES, **(shrink or {})}
    if img_size and resolution is not None:
        kwargs["img_size"] = resolution
    model = timm.create_model(name, **kwargs)
    _no_dropout(model)
    return model


def _no_dropout(model: torch.nn.Module) -> None:
    """Every dropout (modules and the rates that functional dropouts read) and drop path at 0."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd):
            m.p = 0.0
        for attr in ("drop_prob", "drop_rate", "drop_path_rate", "proj_drop", "attn_drop"):
            if isinstance(getattr(m, attr, None), float):
                setattr(m, attr, 0.0)


def _is_convnet(model: torch.nn.Module) -> bool:
    """More than one 2-D convolution: more than a ViT's patch embedding. (Not the parameter
    share: ConvNeXt keeps most of its weights in Linear layers, and is the model timm users
    train channels_last.)"""
    return sum(isinstance(m, torch.nn.Conv2d) for m in model.modules()) > 1


def build(name: str, seed: int = 0) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    """The seeded model `name` (CPU, float32, its memory format) and its CPU batch {"x": ...}."""
    timm = _timm()
    entry = families()[name]
    res = entry["resolution"]
    torch.manual_seed(seed)
    model = _create(timm, name, res, entry["img_size"], entry["shrink"]).float()
    x = torch.randn(BATCH, 3, res, res, generator=torch.Generator().manual_seed(seed))
    if entry["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return model, {"x": x}


def _param_counts(timm) -> dict[str, tuple[str, int]]:
    """model -> (family, parameter count), every model that builds on the meta device."""
    from timm.models import _registry

    counts = {}
    for name in timm.list_models():
        try:
            with torch.device("meta"):
                model = timm.create_model(name, pretrained=False)
        except Exception:  # noqa: BLE001, S112 - a variant that cannot build is not a candidate
            continue
        counts[name] = (
            _registry._model_to_module[name],
            sum(p.numel() for p in model.parameters()),
        )
    return counts


def _trains(timm, name: str, res: int, img_size: bool, shrink: dict) -> bool:
    try:
        torch.manual_seed(0)
        model = _create(timm, name, res, img_size, shrink)
        model.train()
        model(torch.randn(BATCH, 3, res, res)).float().sum().backward()
        return True
    except Exception:  # noqa: BLE001 - any failure: this setting does not fit the model
        return False


def _default_resolution(timm, name: str) -> int:
    size = timm.models.get_pretrained_cfg_value(name, "input_size") or (3, 224, 224)
    return int(size[-1])


def _fit(timm, name: str, params: int) -> tuple[dict, int, bool] | None:
    """(shrink, resolution, img_size) of the first setting at which a training step runs on
    CPU: the shrunk model (above PARAM_BUDGET) before the full one, each at the smallest of
    RESOLUTIONS (built for it where the class takes ``img_size``), then at the model's own
    default size without ``img_size`` (CrossViT takes ``img_size`` but only its defaults fit
    its two branches). None when nothing runs."""
    init = _init_params(timm, name)
    takes = "img_size" in init
    shrinks = [_shrink_kwargs(init)] if params > PARAM_BUDGET else []
    shrinks = [k for k in shrinks if k] + [{}]  # NextViT's one-block stages do not build
    for shrink in shrinks:
        for res in RESOLUTIONS:
            if _trains(timm, name, res, takes, shrink):
                return shrink, res, takes
        res = _default_resolution(timm, name)
        if takes and _trains(timm, name, res, False, shrink):
            return shrink, res, False
    return None


def _entry(timm, family: str, name: str, params: int) -> dict | None:
    fit = _fit(timm, name, params)
    if fit is None:
        return None
    shrink, res, img_size = fit
    with torch.device("meta"):
        model = _create(timm, name, None, False, shrink)
    return {
        "family": family,
        "params": sum(p.numel() for p in model.parameters()),
        "default_params": params,
        "shrink": shrink,
        "resolution": res,
        "img_size": img_size,
        "channels_last": _is_convnet(model),
    }


def select(counts: dict[str, tuple[str, int]] | None = None) -> dict:
    """The table: the smallest variant of every family with its resolution and format
    (`counts`: `_param_counts`'s result, when already known)."""
    timm = _timm()
    counts = counts or _param_counts(timm)
    by_family: dict[str, list[tuple[int, str]]] = {}
    for name, (family, params) in counts.items():
        by_family.setdefault(family, []).append((params, name))
    models, unfit = {}, {}
    for family, candidates in sorted(by_family.items()):
        for params, name in sorted(candidates):  # the smallest that runs at some resolution
            entry = _entry(timm, family, name, params)
            if entry is None:
                unfit.setdefault(family, []).append(name)
                continue
            models[name] = entry
            break
    return {"timm_version": timm.__version__, "models": models, "skipped_unrunnable": unfit}


def main(argv: list[str] | None = None) -> int:
    """Regenerates the table; ``--counts FILE`` reuses a JSON {model: [family, params]}."""
    warnings.filterwarnings("ignore")
    argv = sys.argv[1:] if argv is None else argv
    counts = None
    if argv[:1] == ["--counts"]:
        with open(argv[1]) as f:
            counts = {k: tuple(v) for k, v in json.load(f).items()}
    table = select(counts)
    with open(_TABLE, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(table['models'])} families -> {_TABLE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
