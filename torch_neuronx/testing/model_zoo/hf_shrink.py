"""The shrink rules of the Hugging Face suite: a transformers config made small, by rule.

The config class's defaults are kept and only the sizes are shrunk, where the attribute exists:
few layers, a small hidden size, few heads and experts, small images and sequences, every
dropout (and LayerDrop, drop path, SpecAugment masking, router jitter, a sampler's noise scale)
at 0 (CPU and neuron draw from different generators, so a random mask would differ between
them and say nothing about the device). A shrink must keep the invariants the default config
satisfied, so the rules below carry them along, each for a whole kind of config rather than
one model:

- sizes that were equal stay equal (key/value heads equal to the heads: multi-head attention,
  which DeepSeek's latent attention and ESM-C require), widths stay multiples of the head count
  (Swin's three heads in its first stage), rotary sections still sum to half the head dim;
- per-layer data follows the layer count (`layer_types`, a heterogeneous config's
  `per_layer_config`, per-layer head counts), a backbone's `out_indices` and a sub-stack's
  layer ids are mapped onto the shrunk stages; sizes that are sums stay sums (a head dim
  of its parts, a width of concatenated sub-config widths); a width the shrink must undo
  keeps its heads;
- aliases (`attribute_map`) that name something other than a size (ConvNeXt's
  `num_hidden_layers` is its stage count), a stage count the constructor does not take (Swin's
  `num_layers`, len(depths)) and read-only properties are left alone;
- values a model needs and the default leaves to the checkpoint or the user are given: a
  forecast horizon (`prediction_length`), a timm backbone's architecture, a padding id
  beside a vocabulary, multimodal RoPE sections (`mrope_section`) fitted to the shrunk
  rotary dims;
- a shrink the config class still rejects (its own validation names the attributes) is
  carried over where the named sizes were equal in the default (Inkling2's
  `vision_config.text_hidden_size` must match `text_config.hidden_size`: both become the
  shrunk width), else undone for the attributes its message names; the config is built again.
  (Undoing an equality undoes both sides: the text model back at full width, 1,157M
  parameters.)
"""

from __future__ import annotations

import contextlib
import inspect
import math
import re
from typing import Any

# Integer sizes set wherever the config has the attribute (the config's own name or one of
# its `attribute_map` aliases). Hidden 64 with 4 heads (head_dim 16) and 2 KV heads keeps
# every common divisibility rule (heads | hidden, KV heads | heads, even rotary dims).
SIZES: dict[str, int] = {
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
    # multi-head latent attention (DeepSeek V2/V3): the rope part is the rotary head dim
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "kv_lora_rank": 32,
    "q_lora_rank": 32,
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
    "num_experts_per_token": 2,
    # group-limited routing: 2 groups of the 4 experts, top-2 scored within a group
    "n_group": 2,
    "num_expert_group": 2,
    "topk_group": 1,
    # linear-attention mixers (Bailing hybrid's KDA): 4 heads of 16
    "linear_num_heads": 4,
    "linear_head_dim": 16,
    "rotary_dim": 8,  # GPT-J's partial rotary dims must fit in head_dim 16
    "mamba_d_state": 16,  # Mamba-2 blocks' heads: `_fit_mamba`
    "image_size": 32,
    # TVP's frames (`max_img_size`, its image size) and the prompt band padded around them
    "max_img_size": 64,
    "visual_prompt_size": 8,
    "max_source_positions": 32,
    "max_length": 64,  # spectrogram frames (the Audio Spectrogram Transformer)
    # Perceiver's latent stack: its layers, width and latent count
    "num_self_attends_per_block": 2,
    "d_latents": 64,
    "num_latents": 16,
    "num_queries": 16,
    "latent_query_num": 8,
    "num_query_tokens": 8,  # a Q-Former's image tokens in the prompt (BLIP-2): within SEQ  # image embeddings spliced into the prompt (Kosmos-2): within SEQ  # detection queries (DETR-style): fewer than a 32 px image's anchors
    "num_frames": 4,  # video clips (VideoMAE, ViViT: a multiple of the tubelet's 1 or 2 frames)
    "frames_per_clip": 4,
}

# Sizes a model keeps at its default, by model type, where no general rule can say so (a table,
# for want of one; each entry with its reason):
# - omdet-turbo: `d_model` (256, its encoder width, which its decoder's deformable attention and
#   `decoder_hidden_dim` and `vision_features_channels` also are): shrunk to 64 it equals the
#   shrunk text width (512 -> 64) that `class_embed_dim` follows, and its decoder builds
#   `task_project` only where `class_embed_dim != decoder_hidden_dim` but calls it always
#   (transformers' code assumes the two differ, as in every checkpoint).
KEPT_SIZES = {"omdet-turbo": frozenset({"d_model"})}
# Layer kinds of hybrid models whose default config leaves `layer_types` to the checkpoint
# (None) while the modeling code indexes it, a table for want of a general sign (each with
# its reason): one layer of each kind, in the order the kinds are named.
# - lfm2_moe: `config.layer_types[layer_idx] != "conv"` picks a short-convolution or an
#   attention block (its dense sibling LFM2 derives the list; LFM2-MoE's config does not).
UNSET_LAYER_KINDS = {"lfm2_moe": ("conv", "full_attention")}

# in `undone`: keep the first layers only, not one of each kind (`_kept_layers`)
FIRST_LAYERS = "<first layers>"
# (name, value) pairs set over the shrink rules: the ties a validation message asked for
Forced = tuple[tuple[str, Any], ...]

PREDICTION_LENGTH = 4
# The timm architecture of a backbone wrapper whose config leaves it to the user (TimmBackbone:
# "backbone is not set in the config. Please set it to a timm model name."): a small ResNet,
# random weights (the wrapper builds it with pretrained=False)
TIMM_BACKBONE = "resnet18"
SEQ = 16  # the synthetic batch's sequence length (hf_inputs)
# Values a config's default leaves unset (None or empty) where its modeling code needs one, by
# config class (a table, for want of a general sign: 17 other configs leave `sliding_window`
# None and run); each with its reason, from what the published checkpoints set:
# - Step3p7TextConfig `sliding_window`: Step3p7's text model builds its "sliding_attention" mask
#   for any layer mix and masking_utils raises without a window; the default's layers are all
#   full attention, so the window is built and unused.
# - LwDetrConfig `projector_scale_factors`: its multi-scale projector makes one feature level per
#   factor and the default lists none, so the encoder concatenates no levels ("torch.cat():
#   expected a non-empty list"); one level at the backbone's own scale, as LW-DETR's small
#   checkpoints have it (the config derives the level count and channels from the list).
UNSET_VALUES = {
    "Step3p7TextConfig": {"sliding_window": SEQ // 2},
    "LwDetrConfig": {"projector_scale_factors": [1.0]},
}
WINDOW = 2  # a windowed hierarchy's window, where the shrunk image is smaller than the default's

LAYER_COUNTS = tuple(n for n in SIZES if "layers" in n or n == "n_layer")
_WIDTHS = ("hidden_size", "d_model", "n_embd", "embed_dim", "dim")
_HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
HEAD_DIM = 16  # of the widths the head rule picks
MAMBA_HEADS = 8

# The vocabulary of a shrunk config (when every special token id fits below it), and of a
# config whose default has none (ESM's default leaves it to the checkpoint).
VOCAB = 256
PAD_ID = 1  # the padding id given with that vocabulary (hf_inputs draws ids from 3)


# The image sides the builder tries, smallest first (`hf_models.build_with_inputs`): a model
# whose strides and pooling reduce a 32 px image to nothing (MobileViTv2's output stride 32
# before a 2 x 2 unfold, PP-OCR's 48-line recognizers) gets the next side at which its CPU
# reference runs, never more than its default image.
IMAGE_SIDES = (32, 64, 128, 256)


@contextlib.contextmanager
def image_side(side: int):
    """Shrink images to `side` (`SIZES["image_size"]`, which hf_inputs also synthesizes for a
    config without an image size) within the block."""
    old = SIZES["image_size"]
    SIZES["image_size"] = side
    try:
        yield
    finally:
        SIZES["image_size"] = old


def is_config(value) -> bool:
    return hasattr(value, "to_dict") and hasattr(value, "model_type")


def get(config, name: str, default=None):
    """`config.name`, also for a per-layer attribute of a heterogeneous config (which raises on
    a plain read: its global value is the default the layers override)."""
    raw = getattr(type(config), "_getattr_without_heterogeneous_validation", None)
    try:
        if raw is not None:
            return raw(config, name, default)
        return getattr(config, name, default)
    except Exception:  # noqa: BLE001 - an attribute that cannot be read is not there
        return default


def _accepted(config_cls, default) -> set[str]:
    names = set(inspect.signature(config_cls.__init__).parameters) | set(vars(default))
    return names | set(getattr(config_cls, "attribute_map", {}))


def _settable(config_cls, name: str) -> bool:
    """Whether `name` can be set: not an alias of a read-only property (Bamba's `layer_types`
    is its computed `layers_block_type`), nor a layer count that aliases something else
    (ConvNeXt's `num_hidden_layers` is `num_stages`: its per-stage lists fix that count)."""
    target = getattr(config_cls, "attribute_map", {}).get(name, name)
    attr = inspect.getattr_static(config_cls, target, None)
    if isinstance(attr, property) and attr.fset is None:
        return False
    return not (name in SIZES and target != name and target not in SIZES)


def _heads(value) -> int | None:
    """A head count: an int, or the first stage's of a per-stage list."""
    if isinstance(value, list | tuple) and value and isinstance(value[0], int):
        value = value[0]
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _fit_heads(default, kw: dict[str, Any]) -> None:
    """Widths stay multiples of the head count, and key/value heads equal to the heads stay
    equal (multi-head attention)."""
    heads = next(
        (_heads(kw.get(n, get(default, n))) for n in _HEADS if _heads(get(default, n))), None
    )
    if heads is None:
        return
    for name in _WIDTHS:
        width = kw.get(name)
        if isinstance(width, int) and width % heads and heads * HEAD_DIM < get(default, name):
            kw[name] = heads * HEAD_DIM
    for rotary in ("qk_rope_head_dim", "rotary_dim"):
        # DeepSeek's latent attention: its head_dim is the rotary part's, and stays so
        if rotary in kw and "head_dim" in kw and get(default, rotary) == get(default, "head_dim"):
            kw["head_dim"] = kw[rotary]
    if "head_dim" in vars(default) and get(default, "head_dim") is None and "hidden_size" in kw:
        # head_dim None means hidden / heads, which some models read as a number (Ministral)
        kw["head_dim"] = kw["hidden_size"] // kw.get("num_attention_heads", heads)
    width, old_heads = get(default, "d_model"), get(default, "n_head")
    if isinstance(width, int) and isinstance(old_heads, int) and "d_model" in kw:
        # XLNet, Funnel: d_head is d_model // n_head in the default, and must stay so
        if get(default, "d_head") == width // old_heads:
            kw["d_head"] = kw["d_model"] // kw.get("n_head", old_heads)
    kv = get(default, "num_key_value_heads")
    if "num_key_value_heads" in kw and kv == _heads(get(default, "num_attention_heads")):
        kw["num_key_value_heads"] = kw.get("num_attention_heads", kv)
    old_heads, new_heads = get(default, "num_attention_heads"), kw.get("num_attention_heads")
    if not isinstance(old_heads, int) or not isinstance(new_heads, int) or old_heads <= 0:
        return
    for name, value in list(kw.items()):
        # per-layer head counts (Sapiens2's `num_key_value_heads_per_layer` [16, ..., 8, ...]
        # of its 16 heads): scaled with the heads, so each still divides them
        if "heads" in name and name not in SIZES and isinstance(value, list) and value:
            if all(isinstance(v, int) and (v * new_heads) % old_heads == 0 for v in value):
                kw[name] = [max(1, v * new_heads // old_heads) for v in value]


def _tied(name: str) -> bool:
    """A size that may be defined as another one (a codebook or projection width defaulting to
    the hidden size or the head dim): names `*_dim`, `*_size`, `dim_*` about a width."""
    if name in SIZES or not (name.endswith(("_dim", "_size")) or name.startswith("dim_")):
        return False
    # not `*hidden_dim`: D-FINE's encoder_hidden_dim equals its d_model by chance, and its
    # backbone projection is built for 256
    # (ViT's pooler_output_size: the pooler's width, a projection's input in a dual encoder)
    words = ("codebook", "proj", "embed", "pooler")
    return any(w in name for w in words) and "vocab" not in name


def _fit_tied(default, kw: dict[str, Any], accepted: set[str], config_cls) -> None:
    """Sizes equal to a shrunk width in the default stay equal to it (EnCodec's `codebook_dim`
    is its hidden size); shared-layer counts that are a part of the stack (Gemma 3n's
    `num_kv_shared_layers`, 15 of 35) keep their share of the shrunk stack, at least one."""
    widths = {get(default, w): kw[w] for w in _WIDTHS if w in kw}
    # and sizes equal to the head dim stay the head dim (BROS's dim_bbox_projection, added to
    # each head's attention scores)
    heads = get(default, "num_attention_heads")
    if "hidden_size" in kw and isinstance(heads, int) and kw.get("num_attention_heads"):
        old_head = get(default, "hidden_size") // heads
        widths.setdefault(old_head, kw["hidden_size"] // kw["num_attention_heads"])
    old_layers = max((get(default, n) for n in LAYER_COUNTS if n in kw), default=None)
    new_layers = min((kw[n] for n in LAYER_COUNTS if n in kw), default=None)
    for name in sorted(accepted):
        if name in kw or not _settable(config_cls, name):
            continue
        value = get(default, name)
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if (_tied(name) or name.endswith("_groups")) and value in widths:
            # (a depthwise conv's groups are its channels: Mimi's upsample_groups = hidden)
            kw[name] = widths[value]

        elif "shared" in name and name.endswith("_layers") and old_layers and new_layers:
            # (not every `num_*_layers`: Wav2Vec2's num_feat_extract_layers counts its convs)
            if 0 < value < old_layers:
                kw[name] = min(max(1, round(value * new_layers / old_layers)), new_layers - 1)


LAYOUT_WIDTH = 96  # 6 x 16: a multiple of 6 and of the 4 heads x 4 (LiLT's shrunk layout stream)


def _fit_layout_width(default, kw: dict[str, Any]) -> None:
    """Document models with a 2-D position table (`max_2d_position_embeddings`) whose default
    width is a multiple of 6 split it in sixths, one per box feature (x0, y0, x1, y1, width,
    height: LayoutLMv3's `coordinate_size` and `shape_size` of 768 / 6, LiLT's hidden // 6):
    the shrunk width stays a multiple of 6 (`LAYOUT_WIDTH`), and sizes that were its sixth stay
    so."""
    width = get(default, "hidden_size")
    if get(default, "max_2d_position_embeddings") is None or "hidden_size" not in kw:
        return
    if not isinstance(width, int) or width % 6:
        return
    kw["hidden_size"] = LAYOUT_WIDTH
    for name in ("coordinate_size", "shape_size"):
        if get(default, name) == width // 6:
            kw[name] = LAYOUT_WIDTH // 6
    side, patch = get(default, "input_size"), get(default, "patch_size")
    if isinstance(side, int) and isinstance(patch, int) and side > SIZES["image_size"]:
        # LayoutLMv3's page image side is `input_size` (224, patches of 16): the image size
        kw["input_size"] = SIZES["image_size"]


def _fill_unset(default, kw: dict[str, Any], accepted: set[str]) -> None:
    """Sizes the default leaves unset (None) where the modeling code reads a number: key/value
    heads (None meant "as many as the heads", Nemotron's config keeps the None), and the
    experts each token is routed to in a mixture of experts (DeepSeek V2 leaves it to the
    checkpoint; a top-k of None fails). Not a None expert count: that means a dense model.
    A default the user is asked to pick among listed options. A hybrid's unset layer kinds
    (`UNSET_LAYER_KINDS`) and unset values the model needs (`UNSET_VALUES`)."""
    heads = kw.get("num_attention_heads", get(default, "num_attention_heads"))
    if "num_key_value_heads" in accepted and get(default, "num_key_value_heads", 0) is None:
        if isinstance(heads, int) and _settable(type(default), "num_key_value_heads"):
            kw["num_key_value_heads"] = heads
    for name in accepted:
        # a choice the config leaves to the user among the options it lists: the first (X-MOD's
        # `default_language` of its `languages`, which it raises without)
        options = get(default, f"{name[len('default_') :]}s")
        if name.startswith("default_") and get(default, name, 0) is None and options:
            if isinstance(options, list | tuple) and _settable(type(default), name):
                kw[name] = options[0]
    experts = ("num_experts", "num_local_experts", "n_routed_experts")
    if "num_experts_per_tok" in accepted and get(default, "num_experts_per_tok", 0) is None:
        if any(isinstance(kw.get(n, get(default, n)), int) for n in experts):
            kw["num_experts_per_tok"] = SIZES["num_experts_per_tok"]
    kinds = UNSET_LAYER_KINDS.get(getattr(default, "model_type", None))
    if kinds and get(default, "layer_types", 0) is None:
        layers = kw.get("num_hidden_layers", get(default, "num_hidden_layers"))
        kw["layer_types"] = [kinds[i % len(kinds)] for i in range(layers)]
    for name, value in UNSET_VALUES.get(type(default).__name__, {}).items():
        if name in accepted and get(default, name, 0) in (None, [], ()):
            kw[name] = value


def _fit_factors(default, kw: dict[str, Any], accepted: set[str], config_cls) -> None:
    """Tuples that split a size into parts keep splitting the shrunk one: parts summing to a
    shrunk width are scaled to it (Reformer's axial position embedding widths (64, 192) of
    hidden 256), factors multiplying to the position count become factors of the synthetic
    sequence (its `axial_pos_shape` (64, 64) of 4096 positions must multiply to the sequence
    length in training)."""
    widths = {get(default, w): kw[w] for w in _WIDTHS if w in kw}
    positions = get(default, "max_position_embeddings")
    for name in sorted(accepted):
        value = get(default, name)
        if name in kw or not _settable(config_cls, name) or not isinstance(value, list | tuple):
            continue
        if len(value) < 2 or not all(isinstance(v, int) and v > 0 for v in value):
            continue
        if sum(value) in widths and widths[sum(value)] != sum(value):
            kw[name] = type(value)(_split(widths[sum(value)], value))
        elif isinstance(positions, int) and math.prod(value) == positions and positions > SEQ:
            kw[name] = type(value)(_factors(SEQ, len(value)))


def _split(total: int, shares) -> list[int]:
    """`total` split in the proportions of `shares`, each part at least 1, largest remainders
    first."""
    exact = [v * total / sum(shares) for v in shares]
    parts = [max(1, int(x)) for x in exact]
    for i in sorted(range(len(exact)), key=lambda i: parts[i] - exact[i]):
        if sum(parts) >= total:
            break
        parts[i] += 1
    return parts


def _factors(n: int, count: int) -> list[int]:
    """`count` factors of `n` (a power of two), as equal as they can be: 16 in 2 -> [4, 4]."""
    out = [1] * count
    i = 0
    while n > 1:
        out[i % count] *= 2
        n //= 2
        i += 1
    return out


def _fit_mamba(default, kw: dict[str, Any]) -> None:
    """Mamba-2 mixers (Bamba, Falcon-H1): heads x head dim = the mixer width, which is
    `mamba_d_ssm` where the config has one (shrunk to expand x hidden), else expand x hidden."""
    if not isinstance(get(default, "mamba_n_heads"), int) or "hidden_size" not in kw:
        return
    width = (get(default, "mamba_expand") or 2) * kw["hidden_size"]
    if isinstance(get(default, "mamba_d_ssm"), int):
        kw["mamba_d_ssm"] = width
    kw["mamba_n_heads"] = MAMBA_HEADS
    kw["mamba_d_head"] = width // MAMBA_HEADS


STEM_WIDTH = 32  # a patch-merging hierarchy's first stage, where SIZES has no name for it


def _fit_hierarchy(default, kw: dict[str, Any]) -> None:
    """A patch-merging hierarchy's last width is its first stage's doubled at each merge
    (`hidden_size` = `embed_dim` x 2^(stages - 1): Swin's 96 -> 768, CLAP's audio tower with
    `patch_embeds_hidden_size`): shrunk together, the first stage to `STEM_WIDTH` where no
    size rule shrinks it."""
    depths, hidden = get(default, "depths"), get(default, "hidden_size")
    if not isinstance(depths, list | tuple) or "hidden_size" not in kw:
        return
    merges = 2 ** (len(depths) - 1)
    for name in ("embed_dim", "patch_embeds_hidden_size"):
        first = get(default, name)
        if isinstance(first, int) and isinstance(hidden, int) and hidden == first * merges:
            kw.setdefault(name, min(first, STEM_WIDTH))
            kw["hidden_size"] = kw[name] * merges
            return


def _square(value) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and value[0] == value[1]
    )


def _whole_ratio(value) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
        and max(value) % min(value) == 0
    )


def _fit_stage_widths(default, kw: dict[str, Any]) -> None:
    """Per-stage widths (`*_per_stage`: SAM 2's Hiera `embed_dim_per_stage` [96, ..., 768])
    whose first stage is the model's `hidden_size` are scaled with it, so the stem's width
    still feeds the first stage (96 -> 64: [64, 128, 256, 512])."""
    old, new = get(default, "hidden_size"), kw.get("hidden_size")
    if not isinstance(old, int) or not isinstance(new, int) or old <= 0:
        return
    for name in dir(default):
        widths = get(default, name) if name.endswith("_per_stage") else None
        if (
            isinstance(widths, list | tuple)
            and widths
            and widths[0] == old
            and all(isinstance(w, int) and (w * new) % old == 0 for w in widths)
            and name not in kw
        ):
            kw[name] = [w * new // old for w in widths]


def _fit_stage_channels(default, kw: dict[str, Any]) -> None:
    """Channel lists beside a sub-config whose per-stage widths were scaled (SAM 2's neck
    `backbone_channel_list` [768, 384, 192, 96], its Hiera backbone's stages reversed) map
    each width to the scaled one."""
    scaled: dict[int, int] = {}
    for sub, config in kw.items():
        old = get(default, sub)
        if not (is_config(config) and is_config(old)):
            continue
        for name in dir(old):
            before = get(old, name) if name.endswith("_per_stage") else None
            after = get(config, name) if before is not None else None
            if isinstance(before, list | tuple) and isinstance(after, list | tuple):
                scaled.update((b, a) for b, a in zip(before, after) if b != a)
    if not scaled:
        return
    for name in dir(default):
        value = get(default, name) if not name.startswith("_") else None
        if (
            name not in kw
            and isinstance(value, list | tuple)
            and value
            and all(isinstance(v, int) and v in scaled for v in value)
        ):
            kw[name] = [scaled[v] for v in value]


def _side(value) -> int | None:
    if _square(value):
        return value[0]
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _fit_feature_sizes(default, kw: dict[str, Any]) -> None:
    """Feature-map sizes declared beside a backbone sub-config (SAM 2's neck
    `backbone_feature_sizes` [[256, 256], [128, 128], [64, 64]] of its 1024 px image) follow
    the backbone's shrunk image side (32 px: [[8, 8], [4, 4], [2, 2]]). Where the image side
    does not divide them, they follow its patch grid, the maps being the grid scaled
    (SAM 3's ViT backbone: 1008 px in patches of 14 is a grid of 72, its FPN's maps
    [[288, 288], [144, 144], [72, 72]]; 32 px is a grid of 2: [[8, 8], [4, 4], [2, 2]])."""
    for sub, config in list(kw.items()):
        old = get(default, sub)
        if not (is_config(config) and is_config(old)):
            continue
        before, after = _side(get(old, "image_size")), _side(get(config, "image_size"))
        if not before or not after or before == after:
            continue
        patch = _side(get(old, "patch_size"))
        grid = (before // patch, after // patch) if patch and before % patch == 0 else None
        for name in dir(default):
            sizes = get(default, name) if name.endswith("feature_sizes") else None
            if name in kw or not isinstance(sizes, list | tuple) or not sizes:
                continue
            for old_side, new_side in ((before, after), grid or (0, 0)):
                if old_side and all(
                    _square(v) and (v[0] * new_side) % old_side == 0 for v in sizes
                ):
                    kw[name] = [[v[0] * new_side // old_side] * 2 for v in sizes]
                    break


def _fit_windows(default, kw: dict[str, Any]) -> None:
    """Windowed attention over a patch-merging hierarchy (Swin: `depths` stages, each halving
    the patch grid, its width `embed_dim` doubling up to `hidden_size`): a window larger than
    a stage's grid is cut to the grid at run time while the relative-position table keeps the
    configured window (Swin's "size of tensor a (16) must match b (49)"), so the window must fit
    the last stage. Where the shrunk image leaves it too small, the window becomes `WINDOW`
    and the image just large enough for a last stage of one window."""
    window, patch, embed = (get(default, n) for n in ("window_size", "patch_size", "embed_dim"))
    depths = get(default, "depths")
    image = kw.get("image_size", get(default, "image_size"))
    sizes = (window, patch, embed, image, get(default, "hidden_size"))
    if not isinstance(depths, list | tuple) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in sizes
    ):
        return
    merges = 2 ** (len(depths) - 1)
    if get(default, "hidden_size") != embed * merges or image // patch // merges >= window:
        return
    kw["window_size"] = min(window, WINDOW)
    kw["image_size"] = max(image, kw["window_size"] * patch * merges)


def _fit_out_indices(default, kw: dict[str, Any], new_layers: int | None) -> None:
    """A backbone's output stages (`out_indices` into `stage_names`, "stem" first) mapped onto
    the shrunk layer count, keeping their relative depth (BEiT's last layer 12 of 12 -> 2)."""
    stages = get(default, "stage_names")
    indices = get(default, "out_indices")
    if not stages or not indices or new_layers is None:
        return
    old = len(stages) - 1
    if old <= new_layers:
        return
    mapped = sorted({math.ceil(i % (old + 1) * new_layers / old) for i in indices})
    kw["out_indices"], kw["out_features"] = mapped, None
    kw.pop("stage_names", None)


def _fit_per_layer_config(default, kw: dict[str, Any], kept: list[int]) -> None:
    """A heterogeneous config's per-layer overrides: those of the layers kept (`_kept_layers`,
    renumbered as they are in the shrunk stack), their sizes shrunk by the same rules."""
    per_layer = default.to_dict().get("per_layer_config")
    if not per_layer or not kept:
        return
    shrunk_overrides = {}
    for index, overrides in per_layer.items():
        if int(index) in kept:
            shrunk = {
                k: min(v, SIZES[k]) if k in SIZES and isinstance(v, int) else v
                for k, v in overrides.items()
            }
            key = kept.index(int(index))
            shrunk_overrides[str(key) if isinstance(index, str) else key] = shrunk
    kw["per_layer_config"] = shrunk_overrides


def _kept_layers(default, accepted, config_cls, layers: set, new_layers: int | None) -> list:
    """Which layers of the default stack the shrunk one keeps: the first ones, but with every
    kind of layer the default's `layer_types` has (Gemma 3's sliding and full attention, Qwen3-
    Next's linear and full: the first two are both sliding / linear, and a hybrid model would
    not run its other kind at all) — the first layer of each kind missing replaces the last
    ones kept, in order. [] where there is one layer count and no per-layer kinds to keep."""
    if len(layers) != 1 or not new_layers:
        return []
    (old,) = layers
    for name in ("layer_types", "layers_block_type"):
        kinds = get(default, name)
        if name not in accepted or not _settable(config_cls, name):
            continue
        if not isinstance(kinds, list) or len(kinds) != old:
            continue
        if not all(isinstance(k, str) for k in kinds):
            continue
        kept = list(range(new_layers))
        firsts = {}
        for i, kind in enumerate(kinds):
            firsts.setdefault(kind, i)
        missing = [i for kind, i in firsts.items() if kind not in {kinds[j] for j in kept}]
        for slot, index in zip(range(new_layers - 1, 0, -1), missing):
            kept[slot] = index
        return sorted(kept)
    return []


def shrink_kwargs(
    config_cls, default, undone: frozenset[str] = frozenset(), forced: Forced = ()
) -> dict[str, Any]:
    """The constructor arguments that shrink `default` (an instance of `config_cls`), but for
    the attributes in `undone` (``sub.attr`` for one of a sub-config), and with the values of
    `forced` ((name, value) pairs, ``sub.attr`` names likewise) over the rules'."""
    accepted = _accepted(config_cls, default)
    kw: dict[str, Any] = {}
    for name, size in SIZES.items():
        value = get(default, name) if name in accepted and _settable(config_cls, name) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > size:
            kw[name] = size
        elif name == "image_size" and _square(value) and value[0] > size:
            kw[name] = [size] * len(value)  # a square image given as a list (SAM 2's 1024 px)
        elif name == "image_size" and _whole_ratio(value) and min(value) > size:
            # a (height, width) image whose sides are whole multiples of its smaller one
            # (SegGPT's prompt and image stacked in height, 896 x 448): the smaller side
            # shrunk, the ratio kept (64 x 32)
            kw[name] = [v // min(value) * size for v in value]
    timm_side = get(default, "img_size") if "img_size" in accepted else None
    if isinstance(timm_side, int) and not isinstance(timm_side, bool):
        if timm_side > SIZES["image_size"] and _settable(config_cls, "img_size"):
            # timm's name for the image side, which a timm backbone's config hands to
            # `timm.create_model` (OmDet-Turbo's Swin at 640 px): it follows the shrunk image
            # side, as the model's own `image_size` does, or the patch embedding refuses it
            kw["img_size"] = SIZES["image_size"]
    arch = get(default, "architecture")
    if isinstance(arch, str) and re.search(r"_patch\d+", arch) and "model_args" in accepted:
        if get(default, "model_args") is None and _settable(config_cls, "model_args"):
            # a timm vision transformer the config only names (PE Video's
            # `vit_pe_core_large_patch14_336`, built by timm at 336 px, 24 layers of 1024):
            # shrunk through the keyword arguments timm's ViT and EVA take
            kw["model_args"] = {
                "img_size": SIZES["image_size"],
                "depth": SIZES["num_hidden_layers"],
                "embed_dim": SIZES["hidden_size"],
                "num_heads": SIZES["num_attention_heads"],
            }
    params = _fields(config_cls)
    depths = get(default, "depths")
    for name in [n for n in LAYER_COUNTS if n in kw and n not in params]:
        if isinstance(depths, list | tuple) and get(default, name) == len(depths):
            # a stage count the constructor does not take: Swin's num_layers is len(depths),
            # and set it would disagree with the stages (`depths` keeps them, one block each)
            del kw[name]
    layers = {get(default, n) for n in LAYER_COUNTS if n in kw}
    new_layers = min((kw[n] for n in LAYER_COUNTS if n in kw), default=None)
    kept = (
        []
        if FIRST_LAYERS in undone
        else _kept_layers(default, accepted, config_cls, layers, new_layers)
    )
    for name in sorted(accepted):
        value = get(default, name)
        if name in kw or not _settable(config_cls, name):
            continue
        if name == "depths" and isinstance(value, list | tuple):
            kw[name] = [1] * len(value)  # hierarchical vision models: one block per stage
        elif isinstance(value, list) and len(value) in layers:
            # per-layer lists (layer_types, ...) follow the shrunk layer count; per-layer sizes
            # (Gemma 3n's intermediate_size) are shrunk as the single size would be
            kw[name] = [value[i] for i in kept] if kept else value[:new_layers]
            if name in SIZES and all(isinstance(v, int) for v in value):
                kw[name] = [min(v, SIZES[name]) for v in kw[name]]
        elif isinstance(value, float) and ("drop" in name or _is_random(name)):
            kw[name] = 0.0  # dropout, *_pdrop, drop_path, layerdrop, random masks and noise
        elif isinstance(value, float) and name == "depth_coefficient" and value > 1.0:
            # EfficientNet's block count scaling (ALIGN's B7 tower: 3.1); not the width's,
            # which the text projection is built to match
            kw[name] = 1.0
        elif "drop" in name and isinstance(value, list | tuple) and value:
            if all(isinstance(v, float) for v in value):  # per-stage rates (CvT's drop_path_rate)
                kw[name] = [0.0] * len(value)
        elif name == "prediction_length" and value is None:
            # a time-series forecast horizon the config leaves to the user (GluonTS-style
            # models raise without one): a short one
            kw[name] = PREDICTION_LENGTH
        elif re.fullmatch(r"num_sparse_\w*layers", name) and isinstance(value, int) and value > 1:
            # how many of a stack's layers are mixture-of-experts layers, from which the config
            # derives every how-many-th layer is one (Switch Transformers: 3 of 12, every 4th):
            # one of the shrunk stack's layers (3 of 2 gave a step of 0, i.e. no sparse layer)
            kw[name] = 1
        elif (
            re.fullmatch(r"num_\w*blocks", name)
            and isinstance(value, int)
            and value in layers
            and new_layers is not None
            and value > new_layers
        ):
            # a block count equal to the layer count is its alias, which the config derives
            # from it when unset (xLSTM's `num_blocks`, the length of its block stack), and
            # which the default's copy fixes: it follows the shrunk layer count (32 blocks
            # made a 29,037-node graph that Inductor's joint-graph passes alone took more than
            # 9 CPU min over, on CPU as on neuron)
            kw[name] = new_layers
        elif name == "backbone" and value is None and "backbone_config" not in accepted:
            kw[name] = TIMM_BACKBONE  # a timm wrapper left without its architecture
        elif is_config(value):
            # composite models: text/vision/audio sub-configs
            inner = frozenset(n.split(".", 1)[1] for n in undone if n.startswith(f"{name}."))
            inner |= undone & {FIRST_LAYERS}  # the whole model's stacks keep their first layers
            inner_forced = tuple(
                (n.split(".", 1)[1], v) for n, v in forced if n.startswith(f"{name}.")
            )
            kw[name] = shrink_config(value, inner, inner_forced)
    _fill_unset(default, kw, accepted)
    _fit_layout_width(default, kw)
    _fit_heads(default, kw)
    _fit_mamba(default, kw)
    _fit_tied(default, kw, accepted, config_cls)
    _fit_factors(default, kw, accepted, config_cls)
    _fit_out_indices(default, kw, new_layers)
    _fit_hierarchy(default, kw)
    _fit_stage_widths(default, kw)
    _fit_stage_channels(default, kw)
    _fit_feature_sizes(default, kw)
    _fit_windows(default, kw)
    _fit_per_layer_config(default, kw, kept or list(range(new_layers or 0)))
    _fit_grid(default, kw, accepted, config_cls)
    _fit_siblings(default, kw, undone, forced)
    _fit_concatenated(default, kw, accepted, config_cls)
    _fit_tower_widths(default, kw, accepted, config_cls)
    _fit_head_parts(default, kw)
    _fit_feature_layers(default, kw)
    _fit_adapter_outputs(default, kw)
    _fit_layer_ids(default, kw, new_layers)
    _fit_layer_index(default, kw, layers, new_layers)
    kw.update((n, v) for n, v in forced if "." not in n)
    return kw


def _fit_concatenated(default, kw: dict[str, Any], accepted: set[str], config_cls) -> None:
    """A size of the model (`_tied`: a codebook's, a projection's; a quantizer's) equal in the
    default to the widths of its sub-configs (and its own) summed, their features
    concatenated (X-Codec's `codebook_dim` 1024: its semantic model's 768 and acoustic
    model's 256; NeuCodec's `quantization_dim` 2048: its own 1024 and its semantic model's),
    stays their shrunk sum."""
    own = next((w for w in _WIDTHS if isinstance(kw.get(w), int)), None)
    before = [get(default, own)] if own else []
    after = [kw[own]] if own else []
    for name, sub in kw.items():
        old = get(default, name)
        if not (is_config(sub) and is_config(old)):
            continue
        width = next((w for w in _WIDTHS if isinstance(get(old, w), int)), None)
        if width is not None and isinstance(get(sub, width), int):
            before.append(get(old, width))
            after.append(get(sub, width))
    if len(before) < 2 or sum(before) == sum(after):
        return
    for name in sorted(accepted):
        value = get(default, name)
        if name in kw or not (_tied(name) or "quantiz" in name) or not _settable(config_cls, name):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value == sum(before):
            kw[name] = sum(after)


def _fit_tower_widths(default, kw: dict[str, Any], accepted: set[str], config_cls) -> None:
    """The model's sizes (`_tied`: a projection's, an embedding's) equal in the default to a
    tower's width, where one of them is named for that tower (`text_projection_in_dim` of
    `text_config`), stay that tower's shrunk width: the name says the value is the tower's
    width, not an equal one by chance, and its equals read the same features (OmDet-Turbo's
    text projection in and out and its `class_embed_dim`, all its CLIP text width 512: the
    task encoder reads the text tower's unprojected states through `class_embed_dim`). A
    size equal to a tower's width that no name ties to it (X-CLIP's `projection_dim`, which
    its MIT width must match) is kept."""
    for sub_name, sub in list(kw.items()):
        old_sub = get(default, sub_name)
        if not (sub_name.endswith("_config") and is_config(sub) and is_config(old_sub)):
            continue
        width = next((w for w in _WIDTHS if isinstance(get(old_sub, w), int)), None)
        old, new = get(old_sub, width), get(sub, width)
        if width is None or not isinstance(new, int) or old == new:
            continue
        tied = [
            n
            for n in sorted(accepted)
            if n not in kw and _tied(n) and _settable(config_cls, n) and get(default, n) == old
        ]
        if any(n.startswith(sub_name.removesuffix("config")) for n in tied):
            kw.update((n, new) for n in tied)


def _fit_grid(default, kw: dict[str, Any], accepted: set[str], config_cls) -> None:
    """A size that is the patch grid's side in the default (SAM's prompt encoder
    `image_embedding_size` 64 = 1024 / 16) stays the shrunk image's grid side."""
    image, patch = get(default, "image_size"), get(default, "patch_size")
    if "image_size" not in kw or not isinstance(image, int) or not isinstance(patch, int):
        return
    if not isinstance(kw["image_size"], int) or patch <= 0 or image // patch <= 1:
        return
    for name in sorted(accepted):
        if name in kw or not name.endswith("_size") or not _settable(config_cls, name):
            continue
        if "patch" in name or name in SIZES:
            continue  # the sizes the grid is made of (Pixio's patch 16 of 256 px is 16 patches)
        if get(default, name) == image // patch:
            kw[name] = max(1, kw["image_size"] // patch)


def _fit_siblings(default, kw: dict[str, Any], undone: frozenset[str], forced: Forced) -> None:
    """Sub-configs of one model exchange tensors, so a sub-config's channel count equal in the
    default to a sibling's width (SAM's vision `output_channels` 256, the prompt encoder's and
    mask decoder's `hidden_size`; its `num_pos_feats`, half of it; SAM 3's vision
    `fpn_hidden_size`, its DETR encoder's width) follows that width where the
    siblings shrank it alike: the
    sub-config is shrunk again with it forced."""
    subs = {n: v for n, v in kw.items() if is_config(v) and is_config(get(default, n))}
    if len(subs) < 2:
        return
    shrunk: dict[int, set[int]] = {}
    for name, sub in subs.items():
        for w in _WIDTHS:
            old, new = get(get(default, name), w), get(sub, w)
            if isinstance(old, int) and isinstance(new, int) and old != new:
                shrunk.setdefault(old, set()).add(new)
    widths = {old: news.pop() for old, news in shrunk.items() if len(news) == 1}
    for name, value in vars(default).items():
        # a size of the model itself that the shrink keeps (X-CLIP's projection_dim 512, which
        # its MIT width must match, equal to the text width only by chance): not a tie
        if isinstance(value, int) and not isinstance(value, bool) and kw.get(name, value) == value:
            widths.pop(value, None)
    for name, sub in subs.items():
        old_sub = get(default, name)
        ties = []
        for attr, value in vars(old_sub).items():
            if not isinstance(value, int) or get(sub, attr) != value:
                continue
            if any(n == f"{name}.{attr}" for n, _ in forced):
                continue
            # (and `hidden_size_*`: BLT's encoder `hidden_size_global`, its global model's)
            tied = attr.endswith(("_channels", "_hidden_size")) or attr.startswith("hidden_size_")
            if tied and value in widths:
                ties.append((attr, widths[value]))
            elif "pos_feats" in attr and 2 * value in widths:
                # sine position features, two per channel (SAM's num_pos_feats 128 of 256)
                ties.append((attr, widths[2 * value] // 2))
        if ties:
            inner = frozenset(n.split(".", 1)[1] for n in undone if n.startswith(f"{name}."))
            inner |= undone & {FIRST_LAYERS}
            inner_forced = tuple(
                (n.split(".", 1)[1], v) for n, v in forced if n.startswith(f"{name}.")
            )
            kw[name] = shrink_config(old_sub, inner, (*inner_forced, *ties))


def _is_random(name: str) -> bool:
    """Rates of random draws made in training: SpecAugment's mask_*_prob, a router's jitter
    noise (PhiMoE's router_jitter_noise), a sampler's noise scale (VITS's `noise_scale` and
    `noise_scale_duration`: its flow starts from `torch.randn_like` of a device tensor, drawn
    from the device's generator, while its duration noise is drawn on CPU and moved, so the
    two sides' draws differ as CPU and CUDA ones do). (ViTMAE's masking takes its noise as an
    input: `hf_inputs` gives it one, so its mask_ratio stays.)"""
    return (
        (name.startswith("mask_") and name.endswith("_prob"))
        or "jitter" in name
        or name.startswith("noise_scale")
    )


def _token_ids_fit(config, vocab: int) -> bool:
    for name in dir(config):
        if name.endswith(("_token_id", "_token_index")):
            value = get(config, name)
            values = value if isinstance(value, list | tuple) else [value]
            if any(isinstance(v, int) and v >= vocab for v in values):
                return False
    return True


# Multimodal RoPE's split of the rotary frequencies into (time, height, width) sections where
# the config gives none and the model has its own default: Qwen2-VL's [16, 24, 24] and GLM-4V's
# [8, 12, 12] are both 2:3:3.
MROPE_SHARES = (2, 3, 3)


def _fit_mrope(merged: dict, config_cls) -> None:
    """Multimodal RoPE splits the rotary frequencies (head_dim x partial_rotary_factor / 2)
    into sections (Qwen2-VL's `mrope_section`, e.g. [24, 20, 20] of 64): scaled to the shrunk
    head_dim, largest remainders first. A model whose config class declares the key but whose
    config leaves it out gets the sections its modeling code defaults to, scaled (Ernie 4.5
    VL's [22, 22, 20] -> [3, 3, 2]: its height and width sections are stacked pairwise, so
    they must stay equal), or where the code names none, `MROPE_SHARES`."""
    rope = merged.get("rope_parameters")
    if not isinstance(rope, dict):
        return
    section = rope.get("mrope_section")
    coded = _code_defaults_mrope(config_cls) if not section and rope else None
    if (
        not section
        and rope
        and (
            "mrope_section" in getattr(config_cls, "ignore_keys_at_rope_validation", ())
            or (rope.get("rope_type") == "default" and coded is not None)
        )
    ):
        section = list(coded or MROPE_SHARES)
    head_dim = merged.get("head_dim")
    if not isinstance(head_dim, int):
        heads = merged.get("num_attention_heads")
        hidden = merged.get("hidden_size")
        head_dim = hidden // heads if isinstance(hidden, int) and isinstance(heads, int) else None
    partial = rope.get("partial_rotary_factor", merged.get("partial_rotary_factor")) or 1.0
    if not section or not head_dim:
        return
    half, total = int(head_dim * partial) // 2, sum(section)
    if total == half:
        merged["rope_parameters"] = {**rope, "mrope_section": list(section)}
        return
    exact = [v * half / total for v in section]
    fitted = [int(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: fitted[i] - exact[i])
    for i in by_remainder[: half - sum(fitted)]:
        fitted[i] += 1
    merged["rope_parameters"] = {**rope, "mrope_section": fitted}


def _code_defaults_mrope(config_cls) -> list[int] | None:
    """The multimodal RoPE sections the modeling code beside the config class defaults to
    where the config has none (PaddleOCR-VL's text model: `rope_parameters.get(
    "mrope_section", [16, 24, 24])`, its config class silent on them); None where it reads
    no such default."""
    import ast
    import importlib
    import sys

    module = config_cls.__module__.replace(".configuration_", ".modeling_")
    try:
        source = inspect.getsource(sys.modules.get(module) or importlib.import_module(module))
    except Exception:  # noqa: BLE001 - no modeling module beside it: no such default
        return None
    found = re.search(r"""\.get\(\s*["']mrope_section["']\s*,\s*(\[[^\]]*\])""", source)
    if found is None:
        return None
    try:
        section = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return []  # a default that is not a literal: the shares
    ok = section and all(isinstance(v, int) and v > 0 for v in section)
    return list(section) if ok else []


def _fit_layer_ids(default, kw: dict[str, Any], new_layers: int | None) -> None:
    """Lists of layer indices (`*_hook_ids`, `*_layer_ids`) into the one stack the sub-configs
    shrank alike (Depth Pro's intermediate_hook_ids (11, 5) into its 12-layer patch encoder)
    mapped onto the shrunk stack, keeping their relative depth (-> [1, 0] of 2) where they
    stay distinct. Not into the config's own stack (Zamba2's `hybrid_layer_ids` of its 54
    layers would collapse onto the 2 kept)."""
    if new_layers:
        return
    counts = set()
    for name, sub in kw.items():
        old = get(default, name)
        if is_config(sub) and is_config(old):
            for n in LAYER_COUNTS:
                before, after = get(old, n), get(sub, n)
                if isinstance(before, int) and isinstance(after, int) and before != after:
                    counts.add((before, after))
    if len(counts) != 1:
        return
    ((old_count, new_count),) = counts
    for name in dir(default):
        if name in kw or not name.endswith(("hook_ids", "layer_ids")):
            continue
        ids = get(default, name)
        if not isinstance(ids, list | tuple) or not ids:
            continue
        if all(isinstance(i, int) and 0 <= i < old_count for i in ids):
            mapped = [i * new_count // old_count for i in ids]
            if len(set(mapped)) == len(mapped):
                kw[name] = mapped


def _fit_layer_index(default, kw: dict[str, Any], layers: set, new_layers: int | None) -> None:
    """A single index into the config's own stack (`*_layer_id`: MiniCPM-V's vision
    `insert_layer_id` 6 of 27, where its window-attention merger runs) mapped onto the shrunk
    stack at its relative depth (-> 0 of 2): left at 6, no shrunk layer has that index and the
    module it places never runs. (Not -1, which the models read as "none".) A composite's own
    copy of a sub-config's index (MiniCPM-V's `insert_layer_id`, which its config writes into
    `vision_config`) takes the sub-config's mapped one."""
    for name, sub in list(kw.items()):
        old_sub = get(default, name)
        if not (is_config(sub) and is_config(old_sub)):
            continue
        for attr in [a for a in vars(old_sub) if a.endswith("_layer_id") and a not in kw]:
            value = get(default, attr)
            if isinstance(value, int) and value == get(old_sub, attr) != get(sub, attr):
                kw[attr] = get(sub, attr)
    if not new_layers or len(layers) != 1:
        return
    (old_count,) = layers
    for name in sorted(vars(default)):
        value = get(default, name)
        if name in kw or not name.endswith("_layer_id") or isinstance(value, bool):
            continue
        if isinstance(value, int) and new_layers <= value < old_count:
            kw[name] = value * new_layers // old_count


def _fit_adapter_outputs(default, kw: dict[str, Any]) -> None:
    """A modality tower's adapter that projects into the text model (`adapter_out_dim`: Dots3
    Note's vision and audio adapters, 5120 = its text width, which its config checks) keeps
    projecting to the text model's width once both are shrunk."""
    old_text, new_text = get(default, "text_config"), kw.get("text_config")
    if not (is_config(old_text) and is_config(new_text)):
        return
    old_w, new_w = get(old_text, "hidden_size"), get(new_text, "hidden_size")
    if not (isinstance(old_w, int) and isinstance(new_w, int) and old_w != new_w):
        return
    for sub_name, sub in kw.items():
        old_sub = get(default, sub_name)
        if sub_name == "text_config" or not (is_config(sub) and is_config(old_sub)):
            continue
        for name in [n for n in vars(old_sub) if "adapter" in n and n.endswith("out_dim")]:
            if get(old_sub, name) == old_w and get(sub, name) != new_w:
                setattr(sub, name, new_w)


def _fit_feature_layers(default, kw: dict[str, Any]) -> None:
    """The vision tower's layers a sibling sub-config reads (`vision_feature_layer`: Molmo2's
    adapter reads layers [24, 18] of 25, and its config checks they exist), where an index is
    past the shrunk tower, mapped onto it at its relative depth (-> [1, 1] of 2); indices still
    in range, and negative ones, are left as they are. (A composite's own list, LLaVA-style,
    is indexed into the hidden states with Python's wrap-around and is left alone: VipLlava's
    [-2, -5, -8, -11, 6] runs as it is.)"""
    old_vision, new_vision = get(default, "vision_config"), kw.get("vision_config")
    if not (is_config(old_vision) and is_config(new_vision)):
        return
    old_n = get(old_vision, "num_hidden_layers")
    new_n = get(new_vision, "num_hidden_layers")
    if not (isinstance(old_n, int) and isinstance(new_n, int) and 0 < new_n < old_n):
        return

    def fit(value):
        if isinstance(value, int) and not isinstance(value, bool) and value > new_n:
            return value * new_n // old_n
        if isinstance(value, list | tuple) and any(fit(v) != v for v in value):
            return type(value)(fit(v) for v in value)
        return value

    name = "vision_feature_layer"
    for sub_name, sub in kw.items():
        if sub_name != "vision_config" and is_config(sub) and hasattr(sub, name):
            value = getattr(sub, name)
            fitted = fit(value)
            if fitted != value:
                setattr(sub, name, fitted)


def _fit_head_parts(default, kw: dict[str, Any]) -> None:
    """A head dim that is the sum of its parts in the default (LongCat-Flash's `qk_head_dim`
    192: `qk_nope_head_dim` 128 + `qk_rope_head_dim` 64) stays the sum of the shrunk parts."""
    for name in dir(default):
        value = get(default, name) if name.endswith("head_dim") and name not in kw else None
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        prefix = name[: -len("head_dim")]
        parts = [n for n in kw if n != name and n.startswith(prefix) and n.endswith("_head_dim")]
        if len(parts) >= 2 and sum(get(default, n) for n in parts) == value:
            kw[name] = sum(kw[n] for n in parts)


def shrink_config(default, _undone: frozenset[str] = frozenset(), _forced: Forced = ()):
    """A copy of the config `default` with the sizes of `SIZES`, dropout 0 and (when every
    special token id fits) a vocabulary of `VOCAB`. When the config class rejects the shrunk
    values, the sizes its message names are made equal where they were equal in the default
    (`_tie`), else their shrink is undone, and it is built again."""
    config_cls = type(default)
    _undone = _undone | KEPT_SIZES.get(getattr(default, "model_type", None), frozenset())
    kw = shrink_kwargs(config_cls, default, _undone, _forced)
    kw = {k: v for k, v in kw.items() if k not in _undone}
    vocab = get(default, "vocab_size")
    accepted = _accepted(config_cls, default)
    if "vocab_size" in accepted and "vocab_size" not in _undone:
        if vocab is None or (
            isinstance(vocab, int) and vocab > VOCAB and _token_ids_fit(default, VOCAB)
        ):
            kw["vocab_size"] = VOCAB
            for name in accepted:  # Gemma 3n's per-layer embeddings: vocab_size_per_layer_input
                other = get(default, name)
                if name.startswith("vocab_size_") and isinstance(other, int) and other > VOCAB:
                    kw[name] = VOCAB
        if vocab is None and "pad_token_id" in accepted and get(default, "pad_token_id") is None:
            # a vocabulary left to the checkpoint leaves its padding id too (ESM masks
            # `input_ids != pad_token_id`): one below the synthetic ids, which start at 3
            kw["pad_token_id"] = PAD_ID
    for back, name in enumerate(("image_token_index", "video_token_index"), start=1):
        if name not in accepted or get(default, name, 0) is not None:
            continue
        # the prompt's image (video) placeholder id, left to the checkpoint's processor
        # (BLIP-2, InstructBLIP-Video compare `input_ids == None` without one): the last
        # (last but one) id of the shrunk vocabulary of its text model (hf_inputs puts it
        # where the image features go)
        text_vocab = get(kw.get("text_config"), "vocab_size")
        if isinstance(text_vocab, int) and _settable(config_cls, name):
            kw[name] = text_vocab - back
    merged = {**default.to_dict(), **kw}
    for name in _derived_attributes(config_cls, default, kw):
        del merged[name]  # derived again from the shrunk fields (`_derived_attributes`)
    _fit_mrope(merged, config_cls)
    merged.pop("model_type", None)
    merged.pop("transformers_version", None)
    if merged.get("architectures") is None:
        # a model type with several base classes picks one by `architectures` (Funnel)
        merged["architectures"] = []
    try:
        return config_cls(**merged)
    except Exception as exc:  # noqa: BLE001 - a validation error names what it rejects
        # `sub.attr` (FunASR's "adaptor_config.intermediate_size must equal text_config.
        # hidden_size // 4") undoes that attribute of the sub-config, a plain name its own
        # (overlapping: `config.image_model_config.image_size` names both pairs)
        dotted = set(re.findall(r"(?<!\w)(?=([A-Za-z_]\w*)\.([A-Za-z_]\w*))", str(exc)))
        tied = _tie(default, kw, {f"{a}.{b}" for a, b in dotted}, str(exc), dict(_forced))
        tied = tied or _follow_layers(default, kw, str(exc), dict(_forced))
        if tied:
            return shrink_config(default, _undone, (*_forced, *tied.items()))
        named = {
            f"{a}.{b}" for a, b in dotted if is_config(kw.get(a)) and f"{a}.{b}" not in _undone
        }
        named |= {
            k for k in kw if k not in _undone and not is_config(kw[k]) and _names(str(exc), k)
        }
        if FIRST_LAYERS not in _undone and _mixed_kinds(default, kw):
            # a mix of layer kinds the config rejects (Dots3's sliding layers need multi-head
            # attention): the first layers, as before `_kept_layers`, then the rules above
            return shrink_config(default, _undone | {FIRST_LAYERS}, _forced)
        if not named:
            raise
        if named & set(_WIDTHS):
            # a width left at its default keeps its heads too, so the head dim the model
            # reads stays (EfficientLoFTR's hidden_size, tied to its last stage's channels:
            # its rotary table, 4 x the head dim of 32, fills a quarter of the width)
            named |= {n for n in (*_HEADS, "num_key_value_heads") if n in kw}
        return shrink_config(default, _undone | named, _forced)


def _derived_attributes(config_cls, default, kw: dict[str, Any]) -> list[str]:
    """Attributes the config class derives from its fields and takes no argument for
    (FastSpeech 2's `encoder_config`/`decoder_config` tables, built in `__post_init__` from
    `encoder_layers`, `encoder_dropout_rate`, ...; LW-DETR's `num_feature_levels`,
    `projector_in_channels` and `projector_out_channels`, from `projector_scale_factors` and
    `d_model`): passed back as they are in the default, they would be set over the derived ones
    and undo the shrink (4 conformer layers at dropout 0.2; a 256-wide projector before a 64-wide
    encoder). Known by being equal in a fresh default instance and not a constructor argument."""
    fields = _fields(config_cls)
    given = default.to_dict()
    derived = [
        n for n in given if n not in fields and n not in kw and not is_config(get(default, n))
    ]
    if not derived:
        return []
    try:
        fresh = config_cls().to_dict()
    except Exception:  # noqa: BLE001 - no fresh instance to tell derived from given: keep all
        return []
    return [n for n in derived if n in fresh and fresh[n] == given[n]]


def _fields(config_cls) -> set[str]:
    """What the config's constructor takes: its parameters and its dataclass fields."""
    fields = set(inspect.signature(config_cls.__init__).parameters)
    return fields | set(getattr(config_cls, "__dataclass_fields__", {}))


def _mixed_kinds(config, kw: dict[str, Any]) -> bool:
    """Whether `kw` keeps other layers than the first ones (`_kept_layers`)."""
    for name in ("layer_types", "layers_block_type"):
        kinds, default = kw.get(name), get(config, name)
        if isinstance(kinds, list) and isinstance(default, list):
            return kinds != list(default[: len(kinds)])
    return False


def mixed_kinds(default, shrunk) -> bool:
    """Whether the shrunk config (or a sub-config of it) keeps other layers than the first
    ones of the default (`_kept_layers`)."""
    if _mixed_kinds(default, {n: get(shrunk, n) for n in ("layer_types", "layers_block_type")}):
        return True
    return any(
        mixed_kinds(value, get(shrunk, name))
        for name, value in vars(default).items()
        if is_config(value) and is_config(get(shrunk, name))
    )


def _value(config, kw: dict[str, Any], name: str, shrunk: bool):
    """The value of `name` (``sub.attr`` for a sub-config's) in the default `config`, or in
    the shrunk one (`kw` over the default) when `shrunk`."""
    if "." in name:
        sub, attr = name.split(".", 1)
        inner = kw.get(sub) if shrunk else get(config, sub)
        return get(inner, attr) if is_config(inner) else None
    return kw[name] if shrunk and name in kw else get(config, name)


def _tie(config, kw: dict[str, Any], dotted: set[str], message: str, forced: dict):
    """Sizes a validation message names (``sub.attr``, or the config's own) that were equal in
    the default and are not after the shrink: each set to the smallest of their shrunk values
    (a projection's width must match the text model's hidden size). {} when there is none, or
    when the same tie was already made (the message is about something else)."""
    names = {n for n in dotted if is_config(kw.get(n.split(".", 1)[0]))}
    # the config's own attributes: named alone, not as the `attr` of a `sub.attr`, or as
    # `config.attr` (Depth Pro's "`config.image_model_config.image_size=32` should match
    # `config.patch_size=384`")
    own = {k for k in {*kw, *vars(config)} if not is_config(kw.get(k))}
    names |= {k for k in own if _names(message, k, dotted=False) or f"config.{k}" in dotted}
    old = {n: _value(config, kw, n, shrunk=False) for n in names}
    new = {n: _value(config, kw, n, shrunk=True) for n in names}
    sizes = [v for v in old.values() if isinstance(v, int) and not isinstance(v, bool)]
    if len(sizes) < 2 or len(set(sizes)) != 1:
        return {}
    tied = {n for n in names if old[n] == sizes[0]}
    shrunk = [new[n] for n in tied if isinstance(new[n], int) and not isinstance(new[n], bool)]
    if not shrunk:
        return {}
    target = min(shrunk)
    changes = {n: target for n in tied if new[n] != target}
    return {} if all(forced.get(n) == v for n, v in changes.items()) else changes


def _follow_layers(config, kw: dict[str, Any], message: str, forced: dict):
    """Per-layer sequences a validation message names beside a shrunk layer count, which had
    one entry per layer in the default: cut to the shrunk count (MuseSpark audio's tuples
    `patch_sizes`, `hidden_sizes`, `depths` of its 4 layers; the per-layer list rule of
    `shrink_kwargs` takes lists only, as a hierarchical model's per-stage tuples keep their
    stage count). {} when there is none, or it was done already."""
    counts = {n: kw[n] for n in LAYER_COUNTS if n in kw and _names(message, n, dotted=False)}
    changes = {}
    for name in {*vars(config), *kw}:
        value = kw.get(name, get(config, name))  # the shrunk one: `depths` of one block each
        if not isinstance(value, list | tuple) or not _names(message, name, dotted=False):
            continue
        for count, new in counts.items():
            if len(value) == get(config, count) and forced.get(name) != list(value[:new]):
                changes[name] = list(value[:new])
    return changes


def _names(message: str, name: str, dotted: bool = True) -> bool:
    """Whether a validation message names the attribute `name` (as a word; not after a dot
    unless `dotted`, where ``sub.name`` counts too)."""
    before = "A-Za-z0-9_" if dotted else "A-Za-z0-9_."
    return re.search(rf"(?<![{before}]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None
