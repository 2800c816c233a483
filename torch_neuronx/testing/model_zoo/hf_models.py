"""Hugging Face transformers architectures, built from a shrunk default config (random weights).

One entry per model type of transformers' ``MODEL_MAPPING_NAMES`` (the ``AutoModel`` table):
the base model, since every architecture has one and its head-specific variants add little
beyond a Linear. The config class's defaults are kept and only the sizes are shrunk, where
the attribute exists: few layers, a small hidden size, few heads and experts, small images
and sequences, every dropout at 0, by the rules of `hf_shrink`. Nothing is
downloaded: configs come from the installed library, weights from the seeded initialiser.
"""

from __future__ import annotations

import inspect

import torch

from torch_neuronx.testing.model_zoo import hf_shrink

# Sequence and batch of the synthetic inputs; token ids are drawn below this vocabulary bound
# (or the config's vocabulary, if smaller) so no id reaches a special embedding out of range.
BATCH = 2
SEQ = 16
_VOCAB = hf_shrink.VOCAB
shrink_config = hf_shrink.shrink_config


def model_types() -> list[str]:
    """Every model type of ``AutoModel``, sorted (the sweep's list of architectures)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return sorted(MODEL_MAPPING_NAMES)


def build(model_type: str, seed: int = 0):
    """The seeded base model of `model_type` (CPU, float32) and its config."""
    from torch_neuronx.testing import torchvision_shim

    torchvision_shim.install()  # transformers imports torchvision for vision/speech models
    from transformers import AutoConfig, AutoModel

    config = shrink_config(AutoConfig.for_model(model_type))
    config._attn_implementation = "eager" if _sdpa_unsupported(config) else "sdpa"
    torch.manual_seed(seed)
    try:
        model = AutoModel.from_config(config)
    except ValueError as exc:
        # a sub-model without SDPA (D-FINE's HGNetV2 backbone) rejects it when built: the
        # whole model then runs the eager attention, as transformers' own fallback does
        if "does not support an attention implementation" not in str(exc):
            raise
        config._attn_implementation = "eager"
        torch.manual_seed(seed)
        model = AutoModel.from_config(config)
    return model.float(), config


def _sdpa_unsupported(config) -> bool:
    from transformers import AutoModel

    try:
        cls = AutoModel._model_mapping[type(config)]
    except KeyError:
        return True
    return not getattr(cls, "_supports_sdpa", False)


def _config_value(config, name: str):
    """`name` from the config, or else from its first sub-config that has it: the usual
    vision/text/audio/encoder ones first, then any other (speech models keep their sizes in
    `encoder_config`, which the synthetic input has to follow)."""
    if hasattr(config, name):
        return getattr(config, name)
    usual = ("vision_config", "text_config", "audio_config", "encoder", "encoder_config")
    others = [k for k, v in vars(config).items() if k not in usual and hf_shrink.is_config(v)]
    for sub in (*usual, *others):
        inner = getattr(config, sub, None)
        if inner is not None and hasattr(inner, name):
            return getattr(inner, name)
    return None


def inputs(model, config, seed: int = 0) -> dict[str, torch.Tensor]:
    """A seeded synthetic batch (CPU) for the model's main input, by its kind."""
    g = torch.Generator().manual_seed(seed)
    main = getattr(model, "main_input_name", "input_ids")
    batch: dict[str, torch.Tensor] = {}
    if main == "input_ids":
        vocab = min(_config_value(config, "vocab_size") or _VOCAB, _VOCAB)
        batch["input_ids"] = torch.randint(3, vocab, (BATCH, SEQ), generator=g)
        if _contrastive(model, config):
            batch.update(_pixels(config, g))
    elif main == "pixel_values":
        batch.update(_pixels(config, g))
    elif main == "input_values":
        batch["input_values"] = torch.randn(BATCH, 1600, generator=g)
    elif main == "input_features":
        bins = _config_value(config, "num_mel_bins") or _config_value(config, "feature_size") or 80
        frames = 2 * (_config_value(config, "max_source_positions") or SEQ)
        shape = (BATCH, frames, bins) if _bins_last(config) else (BATCH, bins, frames)
        batch["input_features"] = torch.randn(*shape, generator=g)
    else:
        raise ValueError(f"no synthetic input for main input {main!r}")
    if getattr(config, "is_encoder_decoder", False) and "input_ids" in batch:
        batch["decoder_input_ids"] = batch["input_ids"].clone()
    elif "decoder_input_ids" in inspect.signature(model.forward).parameters:
        # speech and image encoder-decoders (Whisper, Canary, ...): the decoder needs tokens
        vocab = min(_config_value(config, "vocab_size") or _VOCAB, _VOCAB)
        batch["decoder_input_ids"] = torch.randint(3, vocab, (BATCH, SEQ), generator=g)
    return batch


def _bins_last(config) -> bool:
    """Whether the model takes its features as (batch, frames, bins) (Parakeet, Cohere ASR)
    rather than Whisper's (batch, bins, frames): asked of the model's own feature extractor
    (its class defaults, nothing downloaded), run on a short tone with an odd bin count that
    no frame count matches."""
    import numpy as np
    import transformers
    from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES

    name = FEATURE_EXTRACTOR_MAPPING_NAMES.get(getattr(config, "model_type", ""))
    cls = getattr(transformers, name, None) if isinstance(name, str) else None
    if cls is None:
        return False
    try:
        fe = cls(feature_size=7)
        rate = getattr(fe, "sampling_rate", 16000)
        tone = np.sin(np.arange(3200, dtype=np.float32) * 0.05)
        out = fe([tone], sampling_rate=rate, return_tensors="pt")["input_features"]
    except Exception:  # noqa: BLE001 - an extractor that cannot run says nothing: the default
        return False
    return out.ndim == 3 and out.shape[-1] == 7 and out.shape[1] != 7


def _contrastive(model, config) -> bool:
    """Text-and-image models that take both inputs side by side (CLIP, BLIP, SigLIP, ...):
    the forward takes `pixel_values` and the config has no image token (a vision-language
    model with one splices image features into the text at that token, and would need a
    prompt that holds it)."""
    if "pixel_values" not in inspect.signature(model.forward).parameters:
        return False
    return not any(n in dir(config) for n in ("image_token_id", "image_token_index"))


def _pixels(config, g: torch.Generator) -> dict[str, torch.Tensor]:
    size = _config_value(config, "image_size") or 32
    size = size[0] if isinstance(size, list | tuple) else size
    channels = _config_value(config, "num_channels") or 3
    return {"pixel_values": torch.randn(BATCH, channels, size, size, generator=g)}
