"""Hugging Face transformers architectures, built from a shrunk default config (random weights).

One entry per model type of transformers' ``MODEL_MAPPING_NAMES`` (the ``AutoModel`` table):
the base model, since every architecture has one and its head-specific variants add little
beyond a Linear. The config class's defaults are kept and only the sizes are shrunk, where
the attribute exists: few layers, a small hidden size, few heads and experts, small images
and sequences, every dropout (and LayerDrop, drop path) at 0 (CPU and neuron draw from different generators, so a
dropout mask would differ between them and say nothing about the device). Nothing is
downloaded: configs come from the installed library, weights from the seeded initialiser.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

# Integer sizes set wherever the config has the attribute (the config's own name or one of
# its `attribute_map` aliases). Hidden 64 with 4 heads (head_dim 16) and 2 KV heads keeps
# every common divisibility rule (heads | hidden, KV heads | heads, even rotary dims).
_SIZES: dict[str, int] = {
    "hidden_size": 64,
    "d_model": 64,
    "n_embd": 64,
    "embed_dim": 64,
    "dim": 64,
    "num_hidden_layers": 2,
    "num_layers": 2,
    "n_layer": 2,
    "n_layers": 2,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "num_encoder_layers": 2,
    "num_decoder_layers": 2,
    "num_attention_heads": 4,
    "n_head": 4,
    "n_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 128,
    "ffn_dim": 128,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "n_inner": 128,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "rotary_dim": 8,  # GPT-J's partial rotary dims must fit in head_dim 16
    "image_size": 32,
    "max_source_positions": 32,
}

_LAYER_COUNTS = tuple(n for n in _SIZES if "layers" in n or n == "n_layer")

# Sequence and batch of the synthetic inputs; token ids are drawn below this vocabulary bound
# (or the config's vocabulary, if smaller) so no id reaches a special embedding out of range.
BATCH = 2
SEQ = 16
_VOCAB = 256


def model_types() -> list[str]:
    """Every model type of ``AutoModel``, sorted (the sweep's list of architectures)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return sorted(MODEL_MAPPING_NAMES)


def _accepted(config_cls, default) -> set[str]:
    names = set(inspect.signature(config_cls.__init__).parameters) | set(vars(default))
    return names | set(getattr(config_cls, "attribute_map", {}))


def _shrink_kwargs(config_cls, default) -> dict[str, Any]:
    """The constructor arguments that shrink `default` (an instance of `config_cls`)."""
    accepted = _accepted(config_cls, default)
    kw: dict[str, Any] = {}
    for name, size in _SIZES.items():
        value = getattr(default, name, None) if name in accepted else None
        if isinstance(value, int) and not isinstance(value, bool) and value > size:
            kw[name] = size
    layers = {getattr(default, n) for n in _LAYER_COUNTS if n in kw}
    for name in accepted:
        value = getattr(default, name, None)
        if name not in kw and isinstance(value, list) and len(value) in layers:
            # per-layer lists (layer_types, ...) follow the shrunk layer count
            kw[name] = value[: min(kw[n] for n in _LAYER_COUNTS if n in kw)]
            continue
        if isinstance(value, float) and "drop" in name:  # dropout, *_pdrop, drop_path, layerdrop
            kw[name] = 0.0
        elif "drop" in name and isinstance(value, list | tuple) and value:
            if all(isinstance(v, float) for v in value):  # per-stage rates (CvT's drop_path_rate)
                kw[name] = [0.0] * len(value)
        elif name == "depths" and isinstance(value, list | tuple):
            kw[name] = [1] * len(value)  # hierarchical vision models: one block per stage
        elif _is_config(value):
            kw[name] = shrink_config(value)  # composite models: text/vision/audio sub-configs
    return kw


def _token_ids_fit(config, vocab: int) -> bool:
    for name in dir(config):
        if name.endswith(("_token_id", "_token_index")):
            value = getattr(config, name, None)
            values = value if isinstance(value, list | tuple) else [value]
            if any(isinstance(v, int) and v >= vocab for v in values):
                return False
    return True


def _fit_mrope(merged: dict) -> None:
    """Multimodal RoPE splits head_dim / 2 into sections (Qwen2-VL's `mrope_section`, e.g.
    [24, 20, 20] of 64): scaled to the shrunk head_dim, largest remainders first."""
    rope = merged.get("rope_parameters")
    section = rope.get("mrope_section") if isinstance(rope, dict) else None
    head_dim = merged.get("head_dim")
    if not isinstance(head_dim, int):
        heads = merged.get("num_attention_heads")
        hidden = merged.get("hidden_size")
        head_dim = hidden // heads if isinstance(hidden, int) and isinstance(heads, int) else None
    if not section or not head_dim or sum(section) == head_dim // 2:
        return
    half, total = head_dim // 2, sum(section)
    exact = [v * half / total for v in section]
    fitted = [int(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: fitted[i] - exact[i])
    for i in by_remainder[: half - sum(fitted)]:
        fitted[i] += 1
    merged["rope_parameters"] = {**rope, "mrope_section": fitted}


def shrink_config(default):
    """A copy of the config `default` with the sizes of `_SIZES`, dropout 0 and (when every
    special token id fits) a vocabulary of `_VOCAB`."""
    config_cls = type(default)
    kw = _shrink_kwargs(config_cls, default)
    vocab = getattr(default, "vocab_size", None)
    if isinstance(vocab, int) and vocab > _VOCAB and _token_ids_fit(default, _VOCAB):
        kw["vocab_size"] = _VOCAB
    merged = {**default.to_dict(), **kw}
    _fit_mrope(merged)
    merged.pop("model_type", None)
    merged.pop("transformers_version", None)
    return config_cls(**merged)


def build(model_type: str, seed: int = 0):
    """The seeded base model of `model_type` (CPU, float32) and its config."""
    from torch_neuronx.testing import torchvision_shim

    torchvision_shim.install()  # transformers imports torchvision for vision/speech models
    from transformers import AutoConfig, AutoModel

    config = shrink_config(AutoConfig.for_model(model_type))
    config._attn_implementation = "eager" if _sdpa_unsupported(config) else "sdpa"
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
    others = [k for k, v in vars(config).items() if k not in usual and _is_config(v)]
    for sub in (*usual, *others):
        inner = getattr(config, sub, None)
        if inner is not None and hasattr(inner, name):
            return getattr(inner, name)
    return None


def _is_config(value) -> bool:
    return hasattr(value, "to_dict") and hasattr(value, "model_type")


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
