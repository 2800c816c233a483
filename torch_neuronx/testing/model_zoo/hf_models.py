"""Hugging Face transformers architectures, built from a shrunk default config (random weights).

One entry per model type of transformers' ``MODEL_MAPPING_NAMES`` (the ``AutoModel`` table):
the base model, since every architecture has one and its head-specific variants add little
beyond a Linear (where the base model has no forward of its own, its first sub-model that
has one: Bark's semantic model). The config class's defaults are kept and only the sizes are
shrunk, where the attribute exists: few layers, a small hidden size, few heads and experts,
small images and sequences, every dropout at 0, by the rules of `hf_shrink`. Nothing is
downloaded: configs come from the installed library, weights from the seeded initialiser.
"""

from __future__ import annotations

import copy

import torch

from torch_neuronx.testing.model_zoo import hf_inputs, hf_shrink, train_check

# The synthetic batch (`hf_inputs`): its size, and token ids drawn below the shrunk vocabulary
# (or the config's, if smaller) so no id reaches a special embedding out of range.
BATCH = hf_inputs.BATCH
SEQ = hf_inputs.SEQ
shrink_config = hf_shrink.shrink_config
inputs = hf_inputs.inputs
_config_value = hf_inputs.config_value


def model_types() -> list[str]:
    """Every model type of ``AutoModel``, sorted (the sweep's list of architectures)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return sorted(MODEL_MAPPING_NAMES)


def build(model_type: str, seed: int = 0):
    """The seeded base model of `model_type` (CPU, float32) and its config."""
    from torch_neuronx.testing import torchvision_shim

    torchvision_shim.install()  # transformers imports torchvision for vision/speech models
    from transformers import AutoConfig

    top = AutoConfig.for_model(model_type)
    cls = _model_class(top)
    default = _model_config(top, cls)
    config = shrink_config(default)
    try:
        return _trainable(_build(config, seed, cls), config)
    except Exception:
        if not hf_shrink.mixed_kinds(default, config):
            raise
        # a model that cannot be built with one layer of each kind from its default config
        # (Gemma 3n's KV-sharing layers, Qwen4's indexer without sizes, Zamba's tied hybrid
        # blocks): its first layers, as the shrink kept before every kind was
        config = shrink_config(default, frozenset({hf_shrink.FIRST_LAYERS}))
        return _trainable(_build(config, seed, cls), config)


def _trainable(model, config):
    """`model` and its config; for a base model without a forward of its own (Bark's
    `BarkModel` only generates, through its sub-models), its first sub-model that has one
    (Bark's semantic model, a causal text model), with that sub-model's config: the part a
    training script would train."""
    if type(model).forward is not torch.nn.Module.forward:
        return model, config
    from transformers import PreTrainedModel

    for child in model.children():
        if (
            isinstance(child, PreTrainedModel)
            and type(child).forward is not torch.nn.Module.forward
        ):
            return child, child.config
    return model, config  # nothing trainable: the check reports the missing forward


def build_with_inputs(model_type: str, seed: int = 0):
    """The seeded model of `model_type`, its config and batch, at the smallest image side of
    `hf_shrink.IMAGE_SIDES` (at most the default config's image size) at which a copy of the
    model trains on its image batch on CPU to finite values: a 32 px image is too small for a
    model whose strides and pooling leave nothing of it (MobileViTv2, PP-OCR's recognizers),
    or whose batch norms see too few values (D-FINE). A model
    without an image input, or that fails at every side, is built at the first side (its
    error is then the one a 32 px image gives)."""
    first = None
    for side in hf_shrink.IMAGE_SIDES:
        if first is not None and side > _image_cap(model_type):
            break
        with hf_shrink.image_side(side):
            model, config = build(model_type, seed)
            batch = inputs(model, config)
        first = first or (model, config, batch)
        if not any("pixel_values" in name for name in batch) or _runs(model, batch):
            return model, config, batch
    return first


def _image_cap(model_type: str) -> int:
    from transformers import AutoConfig

    size = _config_value(AutoConfig.for_model(model_type), "image_size")
    size = max(size) if isinstance(size, list | tuple) else size
    return size if isinstance(size, int) else max(hf_shrink.IMAGE_SIDES)


def _runs(model, batch) -> bool:
    """Whether a copy of `model` (the copy so that its weights and batch-norm statistics do
    not move) trains on `batch` as the check trains it, to finite losses and gradients: at a
    small image a model may run and still not train (D-FINE's HGNetV2 stem at 32 px: batch
    norms over 2 values per channel give 1e9 gradients at step 0 and NaN at step 1)."""
    probe = copy.deepcopy(model)
    kwargs = train_check._forward_kwargs(probe)
    try:
        ref = train_check._train(probe, lambda **b: probe(**b, **kwargs), batch)
    except Exception:  # noqa: BLE001 - any failure: the next side, or the check reports it
        return False
    return not train_check._not_finite(ref)


def _model_class(config):
    """AutoModel's base model class for `config`; None where it has none (AutoModel then says
    so when the model is built) or several."""
    from transformers import AutoModel

    try:
        cls = AutoModel._model_mapping[type(config)]
    except KeyError:
        return None
    # several base classes (Funnel's full and base models): AutoModel picks one by the
    # config's `architectures`, so the choice stays AutoModel's
    return cls if isinstance(cls, type) else None


def _model_config(config, cls):
    """The config `AutoModel` builds its base model from: `config`, or its sub-config of the
    class the base model is declared with where the two differ (Musicgen's AutoModel entry is
    its decoder, `MusicgenModel(MusicgenDecoderConfig)`, while its config type is the composite
    `MusicgenConfig`, whose `decoder` holds that config)."""
    wanted = getattr(cls, "config_class", None)
    if not isinstance(wanted, type) or isinstance(config, wanted):
        return config
    subs = [v for v in vars(config).values() if isinstance(v, wanted)]
    return subs[0] if len(subs) == 1 else config


def _build(config, seed: int, cls=None):
    from transformers import AutoModel

    if cls is not None and not isinstance(config, cls.config_class):
        cls = None  # not the sub-config `_model_config` chose: AutoModel's own choice
    config._attn_implementation = "eager" if _sdpa_unsupported(config, cls) else "sdpa"

    def make():
        # the class itself for a sub-config AutoModel's table does not list (Musicgen's decoder)
        return cls._from_config(config) if cls is not None else AutoModel.from_config(config)

    torch.manual_seed(seed)
    try:
        model = make()
    except ValueError as exc:
        # a sub-model without SDPA (D-FINE's HGNetV2 backbone) rejects it when built: the
        # whole model then runs the eager attention, as transformers' own fallback does
        if "does not support an attention implementation" not in str(exc):
            raise
        config._attn_implementation = "eager"
        torch.manual_seed(seed)
        model = make()
    return model.float()


def _sdpa_unsupported(config, cls=None) -> bool:
    cls = cls or _model_class(config)
    if cls is None:
        return True
    return not getattr(cls, "_supports_sdpa", False)
