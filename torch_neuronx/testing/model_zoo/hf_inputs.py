"""Synthetic batches for the Hugging Face suite, from the model's forward signature and config.

The batch holds the model's main input (`main_input_name`), every other input its forward
requires (no default), and the inputs a model of its kind needs although its signature makes
them optional: the second modality of a side-by-side model (CLIP's pixels, CLAP's audio), the
decoder's tokens of an encoder-decoder, a document model's boxes, a decision transformer's
trajectory. Each input is made by its name, with sizes from the config:

- tokens (`*input_ids`): ids in [3, min(vocab, 256)); pixels: the config's image size;
- audio: `input_features`/`audio_mel` spectrograms and `input_values` waveforms in the layout
  the model's own feature extractor produces (run on a short tone, nothing downloaded);
- `*_mask` for an input: all positions valid (ones, HF's attention-mask convention);
- `grid_thw` with flattened patches as `hidden_states`/`pixel_values` (Qwen2-VL-style vision towers): one
  image of (1, 2m, 2m) patches per batch row, m the spatial merge size;
- other `*_embeds` / `hidden_states`: (batch, seq, hidden) floats;
- `noise` (ViTMAE's random masking): drawn here, once, so both devices mask alike;
- `bbox`: boxes with x0 <= x1, y0 <= y1, in [0, 1000) for LayoutLM-style position tables;
- images of the config's (height, width); clips (batch, frames, C, H, W) for a video model;
  SigLIP 2's native-resolution patches where the forward takes `spatial_shapes`;
- waveforms of whole tokens / at least two codec hops; spectrogram frames in whole windows;
- time series: past values over the context plus the largest lag, with their masks;
- LXMERT's detected regions (`visual_feats`, `visual_pos`);
- layouts the model's own image processor gives (run on one 64 px image, nothing
  downloaded): image pairs for a matcher that refuses one image, patches unflattened or in
  channels-last merge blocks; clips for a model with a video processor and no image
  processor, its video token holding each frame's query tokens; Gemma 4's positioned patches;
- a task's tokens of the length its config fixes (`task_inputs`, `task_seq_len`); decoder
  tokens in a documented multi-row layout; widths documented as products; a codec's
  waveform as long as its spectrogram's frames at its stride;
- the training targets of a model that refuses to train without them (FastSpeech 2's
  durations, pitch, energy and spectrogram); the audio beside the text of a model that takes
  two modalities side by side (PE Audio-Video) or adds them position by position (Voxtral
  Realtime: as many spectrogram frames per token as its encoder strides and downsamples).
"""

from __future__ import annotations

import inspect
import math
import re

import torch

from torch_neuronx.testing.model_zoo import hf_shrink

BATCH = 2
SEQ = hf_shrink.SEQ
_VOCAB = hf_shrink.VOCAB
_SAMPLES = 1600  # waveform length: 0.1 s at 16 kHz
_FRAMES = 4  # video clips' frames where the config does not say (the shrunk `num_frames`)
_MODALITIES = ("pixel_values", "input_features", "input_values")
_MODALITY_TOKENS = {
    "pixel_values": ("image_token_id", "image_token_index"),
    "input_features": ("audio_token_id", "audio_token_index"),
    "input_values": ("audio_token_id", "audio_token_index"),
}
# A region-based vision-language model's detected regions (LXMERT): input -> its width
_REGIONS = {"visual_feats": "visual_feat_dim", "visual_pos": "visual_pos_dim"}
# Models that take each prompt's images grouped, (batch, images, C, H, W), with a per-token
# cross-attention mask over them, and whose code or docs give no general sign of it (a table,
# for want of one): Idefics reads `batch_size, num_images = pixel_values.shape[:2]` and its
# `image_attention_mask` as (batch, text_seq, num_images); its image processor gives the images
# flat (images, C, H, W), and only the multimodal processor (a tokenizer: not here) groups them.
# One image per prompt, every token attending to it.
_GROUPED_IMAGES = {"idefics"}
# A variance-adaptor text-to-speech model's training targets (FastSpeech 2), per input token:
# its duration in spectrogram frames (`_FRAMES_PER_TOKEN` each), pitch and energy (one value
# each); then the target spectrogram over those frames
_VARIANCE_LABELS = ("duration_labels", "pitch_labels", "energy_labels", "spectrogram_labels")
_FRAMES_PER_TOKEN = 2
# A decision transformer's trajectory: (name, config attribute of its width, or 1)
_TRAJECTORY = (("states", "state_dim"), ("actions", "act_dim"), ("returns_to_go", None))


def config_value(config, name: str):
    """`name` from the config, or else from its first sub-config that has it: the usual
    vision/text/audio/encoder ones first, then any other (speech models keep their sizes in
    `encoder_config`, which the synthetic input has to follow)."""
    if hasattr(config, name):
        return hf_shrink.get(config, name)
    usual = ("vision_config", "text_config", "audio_config", "encoder", "encoder_config")
    others = [k for k, v in vars(config).items() if k not in usual and hf_shrink.is_config(v)]
    for sub in (*usual, *others):
        inner = getattr(config, sub, None)
        if inner is not None and hasattr(inner, name):
            return hf_shrink.get(inner, name)
    return None


def _params(model) -> dict[str, inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {n: p for n, p in inspect.signature(model.forward).parameters.items() if p.kind in kinds}


def inputs(model, config, seed: int = 0) -> dict[str, torch.Tensor]:
    """A seeded synthetic batch (CPU) for `model`, by the rules of the module doc."""
    g = torch.Generator().manual_seed(seed)
    params = _params(model)
    main = getattr(model, "main_input_name", "input_ids")
    if isinstance(main, list | tuple):
        main = main[0]  # several main inputs (OneFormer's pixels and task tokens): both required
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
    # a vision tower's patch grid comes first: it fixes its flattened `hidden_states`
    grids = [n for n in required if n.endswith("grid_thw")]
    inherited = main
    if main not in params and required:
        main = required[0]  # an inherited main_input_name the forward does not take (Q-Former)
    elif main not in params:
        # ... and no input required: its first token or modality input (SAM 3 Lite's text
        # encoder inherits the pixels of the segmentation model, its forward takes input_ids)
        named = [n for n in params if n.endswith("input_ids") or n in _MODALITIES]
        main = named[0] if named else main
    wanted = grids + [main] + [n for n in required if n != main]
    if main == "input_ids" or "input_ids" in required:
        wanted += [m for m in _MODALITIES if m in params and _side_by_side(config, m)]
    if main in _MODALITIES and "input_ids" in params and "text_config" in vars(config):
        # an image-to-text model led by its pixels whose text tower needs the prompt's tokens
        # (Kosmos-2: "You have to specify either input_ids or inputs_embeds")
        wanted.append("input_ids")
        if "image_embeds_position_mask" in params:
            wanted.append("image_embeds_position_mask")  # where the image goes in the prompt
    if main in ("input_values", "input_features") and "pixel_values_videos" in params:
        # an audio-led encoder that fuses a video beside it (PE Audio-Video: its video
        # embedder reads the clip unconditionally)
        wanted.append("pixel_values_videos")
    if main == "input_ids" and {"input_features", "encoder_inputs_embeds"} <= set(params):
        # a streaming speech model that adds its audio to the text position by position and
        # refuses the text alone (Voxtral Realtime: "You must specify exactly one of
        # input_features or encoder_inputs_embeds"): a spectrogram of as many frames as the
        # text has tokens once the encoder's strides and downsampling are applied
        wanted.append("input_features")
    if main == "input_ids" and {"pixel_values_videos", "input_values"} <= set(params):
        if not any(n in dir(config) for n in _MODALITY_TOKENS["input_values"]):
            # a text, video and audio model that embeds any two of them side by side and
            # refuses one alone (PE Audio-Video: "At least two of input_ids,
            # pixel_values_videos, or input_values must be provided"): the audio beside the
            # text. (A model with an audio token, MuseSpark, splices audio into the prompt.)
            wanted.append("input_values")
    if main == "states":
        wanted += [n for n in ("actions", "returns_to_go", "timesteps") if n in params]
    if "input_values" in wanted and "decoder_input_values" in params:
        if _hidden_state_values(model, "decoder_input_values"):
            wanted.append("decoder_input_values")  # (`_hidden_state_values`: SpeechT5Model's)
    if "bbox" in params:
        wanted.append("bbox")
    if _grouped_images(config) and "image_attention_mask" in params and "pixel_values" in wanted:
        wanted.append("image_attention_mask")  # each text token's images (`_GROUPED_IMAGES`)
    if "noise" in params and "pixel_values" in wanted:
        wanted.append("noise")  # ViTMAE's random masking, drawn here once for both devices
    if "input_ids" in wanted and "visual_feats" in params:
        wanted += [n for n in ("visual_feats", "visual_pos") if n in params]  # LXMERT's regions
    if "encoder_hidden_states" in params and config_value(config, "encoder_hidden_size"):
        wanted.append("encoder_hidden_states")  # a Q-Former cross-attends to image features
    if "duration_labels" in params and "input_ids" in wanted:
        # a text-to-speech model with variance predictors refuses to train without its
        # targets (FastSpeech 2: "All labels must be provided to run in training mode")
        wanted += list(_VARIANCE_LABELS)
    batch: dict[str, torch.Tensor] = {}
    if inherited == "input_values" and main == "hidden_states":
        batch.update(_conv_stream(model, config, g))
    if {"action_embeds", "pixel_values", "pixel_attention_mask"} <= set(params):
        batch.update(_camera_prefix(config, g))
    for name in dict.fromkeys(wanted):  # in order, once each
        if name not in batch:
            batch.update(_make(name, model, config, g, batch))
    _place_image_tokens(config, batch)
    _match_clip(config, model, batch, g)
    for name in list(batch):  # an input's own padding mask, where the forward takes one
        if f"{name}_mask" in params and f"{name}_mask" not in batch:
            batch.update(_make(f"{name}_mask", model, config, g, batch))
    decoder_rows = (_documented_shape(model, "decoder_input_ids") or ["batch_size"])[0]
    if "decoder_input_ids" in params and decoder_rows != "batch_size" and "input_ids" in batch:
        # the decoder's tokens in a documented layout of several rows per sample (Dia's
        # "(batch_size * num_codebooks, target_sequence_length)"): where the config names
        # that count, so many rows; else (Dia counts its codebooks as `num_channels`) none,
        # and the model starts from its own BOS tokens
        tokens = _tokens(config, g, model, "decoder_input_ids")
        if tokens.shape[0] != BATCH:
            batch["decoder_input_ids"] = tokens
    elif "input_ids" in batch and getattr(config, "is_encoder_decoder", False):
        batch["decoder_input_ids"] = batch["input_ids"].clone()
    elif "decoder_input_ids" in params and "decoder_input_ids" not in batch:
        # speech and image encoder-decoders (Whisper, Canary, ...): the decoder needs tokens
        batch["decoder_input_ids"] = _tokens(config, g)
    return batch


def _camera_prefix(config, g) -> dict[str, torch.Tensor]:
    """A robot policy's observation (PI0: its action expert attends to the cache that its
    vision-language model builds from the cameras' images and the prompt; the forward takes
    both as optional, but without them the cache is None and the forward fails): one camera
    per sample, `pixel_values` (batch, cameras, channels, side, side) and its camera mask, and
    a prompt with that camera's image tokens after the first, as the processor writes them."""
    vlm = next(
        c
        for c in (config, *vars(config).values())
        if hf_shrink.is_config(c) and hasattr(c, "vision_config") and hasattr(c, "image_token_id")
    )
    vision, image = vlm.vision_config, vlm.image_token_id
    side, patch = vision.image_size, vision.patch_size
    ids = _tokens(config, g)
    ids[ids == image] = 3  # a drawn id that is the image token's would be taken for the image
    ids[:, 1 : 1 + (side // patch) ** 2] = image
    pixels = torch.randn(BATCH, 1, vision.num_channels, side, side, generator=g)
    return {
        "input_ids": ids,
        "pixel_values": pixels,
        "pixel_attention_mask": torch.ones(BATCH, 1, dtype=torch.bool),
    }


def _match_clip(config, model, batch, g) -> None:
    """A codec that encodes a waveform and its spectrogram side by side and concatenates the
    two encodings (X-Codec 2: a semantic encoder's frames beside an acoustic encoder strided
    by its `downsampling_ratios`): the waveform as long as the spectrogram's frames at that
    stride, so both give as many frames."""
    ratios = config_value(config, "downsampling_ratios")
    if "input_values" not in batch or "input_features" not in batch:
        return
    if not isinstance(ratios, list | tuple) or not all(isinstance(r, int) for r in ratios):
        return
    frames = _steps(config, "input_features", batch, model)[1]
    shape = (*batch["input_values"].shape[:-1], frames * math.prod(ratios))
    batch["input_values"] = torch.randn(*shape, generator=g)


# a prompt's image features, by the config attribute that counts them
_IMAGE_TOKEN_COUNTS = ("num_query_tokens", "image_seq_length", "mm_tokens_per_image")


def _place_image_tokens(config, batch) -> None:
    """A prompt beside an image, for a model that splices the image's features into the text
    at its image token (BLIP-2's Q-Former outputs, `num_query_tokens` of them): the image
    token at the positions after the first, as the model's processor writes them, and
    nowhere else. A clip's features go at the video token, as many per frame
    (InstructBLIP-Video), the prompt lengthened to hold them and SEQ tokens of text."""
    image = hf_shrink.get(config, "image_token_index", None)
    count = next(
        (config_value(config, n) for n in _IMAGE_TOKEN_COUNTS if config_value(config, n)), None
    )
    pixels = batch.get("pixel_values")
    video = hf_shrink.get(config, "video_token_index", None)
    if pixels is not None and pixels.ndim == 5 and isinstance(video, int):
        image = video
        count = count * pixels.shape[1] if isinstance(count, int) else None
        if isinstance(count, int) and "input_ids" in batch and count >= SEQ:
            repeats = -(-(count + SEQ) // SEQ)
            batch["input_ids"] = batch["input_ids"].repeat(1, repeats)[:, : count + SEQ]
    if pixels is None or "input_ids" not in batch or not isinstance(image, int):
        return
    if not isinstance(count, int) or count < 1 or count >= batch["input_ids"].shape[1]:
        return
    ids = batch["input_ids"]
    ids[ids == image] = 3  # a drawn id that is the image token's would be taken for the image
    ids[:, 1 : 1 + count] = image


def _side_by_side(config, modality: str) -> bool:
    """Models that take text and another modality side by side (CLIP, BLIP, CLAP, CLVP, ...):
    the config has no token for that modality (a model with one splices the features into the
    text at that token, and would need a prompt that holds it)."""
    if any(n in dir(config) for n in _MODALITY_TOKENS[modality]):
        return False
    # audio beside text only in a contrastive model (CLAP's logit scale): a speech-or-text
    # model (SeamlessM4T) takes one of the two
    return modality == "pixel_values" or "logit_scale_init_value" in dir(config)


def _tokens(config, g, model=None, name: str = "input_ids", length: int = SEQ) -> torch.Tensor:
    """Token ids (batch, seq); (batch x codebooks, seq) where the forward documents that
    layout (Musicgen's decoder: "(batch_size * num_codebooks, sequence_length)")."""
    vocab = min(config_value(config, "vocab_size") or _VOCAB, _VOCAB)
    rows = BATCH
    dims = _documented_shape(model, name) if model is not None else []
    if dims and re.fullmatch(r"batch_size \* \w+", dims[0]):
        factor = config_value(config, dims[0].split("*")[1].strip())
        if isinstance(factor, int) and factor > 0:
            rows = BATCH * factor
    return torch.randint(3, vocab, (rows, length), generator=g)


def _documented_shape(model, name: str, brackets: bool = False) -> list[str]:
    """The dims of input `name` as the forward's docstring gives them ("name (`torch.
    LongTensor` of shape `(batch_size, sequence_length)`)"; "`[...]`" too with `brackets`),
    [] where it gives none."""
    doc = getattr(model.forward, "__doc__", None) or ""
    shape = r"`[\(\[]([^`]*)[\)\]]`" if brackets else r"`\(([^`]*)\)`"
    found = re.search(rf"(?m)^\s*{re.escape(name)} \([^)]*?of shape {shape}", doc)
    return [d.strip() for d in found.group(1).split(",")] if found else []


def _token_streams(model) -> int | None:
    """The streams of a multi-stream token input: where the model's input embeddings add a
    per-stream offset buffer to the ids (`audio_tokens_offsets`: Kyutai speech-to-text's text
    token and one per audio codebook, 33, summed into one embedding per step; its docs are
    the generic 2-D ones), its length; None where the forward documents its own codebook
    layout beside a 2-D one (CSM: "(batch_size, sequence_length, num_codebooks) or
    (batch_size, sequence_length)", the 2-D one the processor's prompt) or has no buffer."""
    try:
        embeddings = model.get_input_embeddings()
    except Exception:  # noqa: BLE001 - a model without input embeddings
        return None
    offsets = getattr(embeddings, "audio_tokens_offsets", None)
    if not isinstance(offsets, torch.Tensor) or offsets.ndim != 1:
        return None
    doc = getattr(model.forward, "__doc__", None) or ""
    if re.search(r"(?m)^\s*input_ids \([^\n]*num_codebooks", doc):
        return None
    return int(offsets.shape[0])


def _conv_stream(model, config, g) -> dict[str, torch.Tensor]:
    """`hidden_states` of a codec's encoder or decoder built alone, which inherits the codec's
    main input `input_values` and takes its stream under another name (VibeVoice's acoustic
    tokenizer halves): (batch, channels, length) with the channels its first convolution
    reads; a waveform of `_samples` where those are the config's audio channels (the
    encoder), else latent frames, SEQ of them (the decoder, its conv reading `hidden_size`).
    Nothing where the model has no Conv1d (then `hidden_states` is (batch, seq, hidden))."""
    conv = next((m for m in model.modules() if isinstance(m, torch.nn.Conv1d)), None)
    if conv is None:
        return {}
    audio = config_value(config, "channels") or config_value(config, "audio_channels") or 1
    length = _samples(config) if conv.in_channels == audio else SEQ
    return {"hidden_states": torch.randn(BATCH, conv.in_channels, length, generator=g)}


def _hidden_state_values(model, name: str) -> bool:
    """Whether `name` (`*input_values`) is hidden states: its docstring says it is a waveform,
    token ids "or hidden states" depending on the pre-net the model is built with, and the
    model has no pre-net (SpeechT5Model, AutoModel's base, builds its encoder and decoder
    without one: each reads (batch, seq, hidden_size) as it is)."""
    doc = getattr(model.forward, "__doc__", None) or ""
    found = re.search(rf"(?m)^(\s*){re.escape(name)} \([^\n]*\n((?:\1\s+\S[^\n]*\n?)*)", doc)
    if not found or "or hidden states" not in found.group(2):
        return False
    return not any("prenet" in n for n, _ in model.named_modules())


def _documented_counts(model, name: str) -> bool:
    """Whether the forward's docstring gives input `name` as an integer tensor (`LongTensor`)
    of the number of something ("... indicates the number of classes for each task")."""
    doc = getattr(model.forward, "__doc__", None) or ""
    found = re.search(
        rf"(?m)^(\s*){re.escape(name)} \(([^)]*?)of shape[^\n]*\n((?:\1\s+\S[^\n]*\n?)*)", doc
    )
    return bool(found) and "LongTensor" in found.group(2) and "number of" in found.group(3)


def _product(config, dim: str) -> int | None:
    """A documented dim that is a product of config sizes and list lengths ("dim *
    len(config.target_layer_ids)"), evaluated; None where it is not one (a single name is
    left to the caller's rules)."""
    factors = [f.strip() for f in dim.split("*")]
    if len(factors) < 2:
        return None
    total = 1
    for factor in factors:
        inner = re.fullmatch(r"len\((?:config\.)?(\w+)\)", factor)
        value = config_value(
            config, (inner or re.fullmatch(r"(?:config\.)?(\w+)", factor) or [0, ""])[1]
        )
        if inner and isinstance(value, list | tuple):
            value = len(value)
        if factor == "dim" and value is None:
            value = config_value(config, "hidden_size")  # the docs' model width
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            return None
        total *= value
    return total


def _make(name: str, model, config, g, batch) -> dict[str, torch.Tensor]:
    streams = _token_streams(model) if name == "input_ids" else None
    if streams:
        # one id per stream and step (`_token_streams`: Kyutai's text and 32 audio codebooks)
        tokens = _tokens(config, g, model, name, SEQ * streams)
        return {name: tokens.reshape(BATCH, SEQ, streams)}
    if name.endswith("input_ids"):
        return {name: _tokens(config, g, model, name)}
    length = config_value(config, f"{name.removesuffix('_inputs')}_seq_len")
    if name.endswith("_inputs") and isinstance(length, int) and length > 0:
        # a token input of the length its config fixes (OneFormer's `task_inputs`, read by an
        # MLP over `task_seq_len` positions)
        return {name: _tokens(config, g, model, name, length)}
    if name == "pixel_values" and "spatial_shapes" in _params(model):
        return _naflex(config, g)
    if name == "pixel_values" and "pixel_position_ids" in _params(model):
        return _positioned_patches(config, g)
    if name == "pixel_values" and "target_sizes" in _params(model):
        return _packed_patches(config, g)
    if name in ("pixel_values", "pixel_values_videos") or name.endswith("_pixel_values"):
        pixels = _pixels(config, g, name)  # (and a prompt image beside the input: SegGPT's)
        if name in ("pixel_values", "prompt_pixel_values") and "prompt_pixel_values" in _params(
            model
        ):
            # an image and its prompt image, stacked in height into the config's image by the
            # model (SegGPT's in-context canvas, 896 x 448 of two 448 px images): each half
            # as tall
            pixels[name] = pixels[name][..., : pixels[name].shape[-2] // 2, :].contiguous()
        return pixels
    if name == "image_attention_mask" and _grouped_images(config) and "pixel_values" in batch:
        # (batch, text_seq, images): every token attends to every image of its prompt
        rows, length = batch["input_ids"].shape if "input_ids" in batch else (BATCH, SEQ)
        return {name: torch.ones(rows, length, batch["pixel_values"].shape[1], dtype=torch.long)}
    if name.endswith("_attention_mask") and f"{name[: -len('_attention_mask')]}_input_ids" in batch:
        # the padding mask of a second token input (OmDet-Turbo's classes_input_ids): all kept
        ids = batch[f"{name[: -len('_attention_mask')]}_input_ids"]
        return {name: torch.ones(ids.shape, dtype=torch.long)}
    if (
        name == "input_features"
        and "encoder_inputs_embeds" in _params(model)
        and "input_ids" in batch
    ):
        # (the streaming rule of `inputs`): frames = tokens x conv strides x downsampling
        strides = math.prod(m.stride[0] for m in model.modules() if isinstance(m, torch.nn.Conv1d))
        frames = (
            batch["input_ids"].shape[1] * strides * (config_value(config, "downsample_factor") or 1)
        )
        return {name: torch.randn(BATCH, _bins(config), frames, generator=g)}
    if name in ("input_features", "audio_mel"):
        frames_second = _frames_second(config, model, name)
        features = _spectrogram(config, g, name, frames_second)
        width = _input_linear_width(model, config) if features.ndim == 3 else None
        if width is not None and (frames_second or _bins_last(config)):
            # (`_input_linear_width`: Granite Speech 5's 80 mel bins with deltas, 2 frames
            # stacked: 320)
            features = torch.randn(*features.shape[:2], width, generator=g)
        return {name: features}
    if name.endswith("input_values") and _hidden_state_values(model, name):
        width = config_value(config, "hidden_size") or 64
        return {name: torch.randn(BATCH, SEQ, width, generator=g)}
    if name == "input_values":
        values = _waveform_or_spectrogram(config, g)
        if values.ndim == 2 and _documented_shape(model, name)[1:2] == ["1"]:
            values = values.unsqueeze(1)  # a mono channel dim the forward documents (NeuCodec)
        return {name: values}
    if name.endswith("grid_thw"):
        flat = "hidden_states" if "hidden_states" in _params(model) else "pixel_values"
        return _patches(config, g, name, flat)
    if name.endswith("_mask") and name[: -len("_mask")] in batch:
        steps = _steps(config, name[: -len("_mask")], batch, model)
        if "Bool" in str(_params(model)[name].annotation):
            # PyTorch's boolean padding masks mark padding True (key_padding_mask)
            return {name: torch.zeros(steps, dtype=torch.bool)}
        return {name: torch.ones(steps, dtype=torch.long)}  # HF's attention masks: 1 = keep
    if name == "encoder_hidden_states" and config_value(config, "encoder_hidden_size"):
        width = config_value(config, "encoder_hidden_size")
        return {name: torch.randn(BATCH, SEQ, width, generator=g)}
    if name == "image_embeds_position_mask":
        # the prompt positions the image's embeddings replace (Kosmos-2's processor: right
        # after the <image> token at 0): as many as the image gives (`latent_query_num`)
        count = config_value(config, "latent_query_num") or config_value(config, "image_seq_length")
        mask = torch.zeros(BATCH, SEQ, dtype=torch.long)
        mask[:, 1 : 1 + min(count or 1, SEQ - 1)] = 1
        return {name: mask}
    if name == "inputs":
        # a modality-agnostic model's already-embedded inputs (Perceiver without a
        # preprocessor): (batch, seq, d_model)
        width = config_value(config, "d_model") or config_value(config, "hidden_size") or 64
        return {name: torch.randn(BATCH, SEQ, width, generator=g)}
    if name.endswith("_embeds") or name.endswith("hidden_states"):
        hidden = config_value(config, "hidden_size") or 64
        documented = _documented_shape(model, name, brackets=True)
        width = _product(config, documented[-1]) if len(documented) == 3 else None
        if width is not None:
            # a width the forward documents as a product (MuseGlimmer's context: "dim *
            # len(config.target_layer_ids)", the target's layers concatenated)
            hidden = width
        return {name: torch.randn(BATCH, SEQ, hidden, generator=g)}
    if name in _VARIANCE_LABELS and "input_ids" in batch:
        rows, tokens = batch["input_ids"].shape
        if name == "duration_labels":
            return {name: torch.full((rows, tokens), _FRAMES_PER_TOKEN, dtype=torch.long)}
        if name == "spectrogram_labels":
            bins = config_value(config, "num_mel_bins") or 80
            return {name: torch.randn(rows, tokens * _FRAMES_PER_TOKEN, bins, generator=g)}
        return {name: torch.randn(rows, tokens, 1, generator=g)}
    if name == "noise":  # one per patch
        size, patch = (
            config_value(config, "image_size") or hf_shrink.SIZES["image_size"],
            config_value(config, "patch_size"),
        )
        size = size[0] if isinstance(size, list | tuple) else size
        patch = patch[0] if isinstance(patch, list | tuple) else patch or 16
        return {name: torch.rand(BATCH, (size // patch) ** 2, generator=g)}
    if name == "bbox":
        return {name: _boxes(config, g)}
    if name in ("visual_feats", "visual_pos"):
        # detected regions (LXMERT): SEQ of them, features of `visual_feat_dim`, boxes of
        # `visual_pos_dim` in [0, 1)
        width = config_value(config, _REGIONS[name]) or 4
        return {name: torch.rand(BATCH, SEQ, width, generator=g)}
    if name == "past_values":
        return {name: _series(config, g)}
    if name in ("past_observed_mask", "observed_mask") and "past_values" in batch:
        return {name: torch.ones_like(batch["past_values"])}  # every value observed
    if name == "past_values_padding" and "past_values" in batch:
        return {name: torch.zeros(batch["past_values"].shape[:2])}  # no padding
    if name == "past_time_features" and "past_values" in batch:
        width = config_value(config, "num_time_features") or 0
        steps = batch["past_values"].shape[1]
        return {name: torch.randn(BATCH, steps, width, generator=g)}
    if name == "freq":  # TimesFM's frequency class (0: high frequency)
        return {name: torch.zeros(BATCH, 1, dtype=torch.long)}
    if name in dict(_TRAJECTORY):
        width = config_value(config, dict(_TRAJECTORY)[name]) if dict(_TRAJECTORY)[name] else 1
        return {name: torch.randn(BATCH, SEQ, width, generator=g)}
    if name == "timesteps":
        limit = config_value(config, "max_ep_len") or SEQ
        return {name: torch.randint(0, min(limit, 1000), (BATCH, SEQ), generator=g)}
    if name == "merge_sizes" and "grid_thw" in batch:
        # each image's spatial merge (VideoLLaMA 3's vision tower), beside its patch grid
        merge = config_value(config, "spatial_merge_size") or 1
        return {name: torch.full((batch["grid_thw"].shape[0],), merge, dtype=torch.long)}
    shape = _shape_from_doc(model, config, name, batch)
    if shape is not None and _documented_counts(model, name):
        # integer counts per sample (OmDet-Turbo's `classes_structure`, "the number of classes
        # for each task"): one each, as every other input holds one row per sample
        return {name: torch.ones(shape, dtype=torch.long)}
    if shape is not None:
        return {name: torch.randn(*shape, generator=g)}
    raise ValueError(f"no synthetic input for {name!r} (forward of {type(model).__name__})")


# documented dims that are a length the batch chooses
_LENGTHS = (
    "sequence_length",
    "seq_len",
    "frames",
    "time_steps",
    "num_frames",
    "target_length",
    "feature_sequence_length",  # spectrogram frames (Nemotron 3.5 Transcribe)
)


def _shape_from_doc(model, config, name: str, batch) -> tuple[int, ...] | None:
    """A float input no rule names, made to the shape the forward's docstring gives: the shape
    of an input in `batch` documented with the same dims (SegGPT's `prompt_masks` as its
    `prompt_pixel_values`), else where each dim is the batch, a length (`_LENGTHS`: SEQ) or a
    config size (Mimi decoder's `latents`, "(batch_size, hidden_size, frames)"); None where a
    dim is none of these."""
    dims = _documented_shape(model, name)
    for other, tensor in batch.items():
        if dims and _documented_shape(model, other) == dims and tensor.ndim == len(dims):
            return tuple(tensor.shape)
    shape = []
    for dim in dims:
        attr = dim.removeprefix("config.")
        value = config_value(config, attr) if attr.isidentifier() else None
        if dim == "batch_size":
            shape.append(BATCH)
        elif dim in _LENGTHS:
            shape.append(SEQ)
        elif isinstance(value, int) and not isinstance(value, bool) and value > 0:
            shape.append(value)
        else:
            return None
    return tuple(shape) or None


def _series(config, g) -> torch.Tensor:
    """A time series' past values: (batch, length) for one variable, (batch, length, channels)
    for several (PatchTST's `num_input_channels`, a multivariate `input_size`). The length is
    the context the model reads (`context_length`, defaulting to the forecast horizon as the
    GluonTS-style models do) plus the largest lag those models look back; a long context
    (TimesFM's 512 and 16,384, which it pads to) is cut to two patches."""
    context = (
        config_value(config, "context_length") or config_value(config, "prediction_length") or SEQ
    )
    patch = config_value(config, "patch_length")
    if context > 4 * SEQ and isinstance(patch, int) and patch > 0:
        context = 2 * patch
    lags = config_value(config, "lags_sequence") or [0]
    length = context + max(lags)
    channels = config_value(config, "num_input_channels")  # PatchTST: always a channel dim
    if channels is None and (config_value(config, "input_size") or 1) > 1:
        channels = config_value(config, "input_size")
    shape = (BATCH, length) if channels is None else (BATCH, length, channels)
    return torch.randn(*shape, generator=g)


def _frames_second(config, model, name: str) -> bool:
    """Whether the forward documents `name` with its frames second of three dims (FunASR's
    encoder: "(batch_size, sequence_length, feature_dim)"), for a model whose feature
    extractor cannot say (cannot run here: the docs of Whisper-style encoders say the same of
    their (batch, bins, frames) input)."""
    if _extract(config, "input_features") is not None:
        return False
    documented = _documented_shape(model, name)
    return len(documented) == 3 and documented[1] in _LENGTHS


def _steps(config, name: str, batch, model=None) -> tuple[int, int]:
    """(batch, time steps) of the input `name` in `batch`: its second dim, but the last of a
    (batch, bins, frames) spectrogram."""
    t = batch[name]
    bins_last = _bins_last(config) or (model is not None and _frames_second(config, model, name))
    if name == "input_features" and t.ndim == 3 and not bins_last:
        return (t.shape[0], t.shape[2])
    return (t.shape[0], t.shape[1])


def _input_linear_width(model, config) -> int | None:
    """The width of stacked features where the model's first module is a Linear reading them
    and its feature extractor cannot say (cannot be built here: Granite Speech 5's needs
    torchaudio, and stacks 2 frames of 80 mel bins with their deltas into 320; its config
    gives only the 80): that Linear's `in_features`, where it is a whole multiple (> 1) of
    the bins and the config does not name that factor as its own stacking (Nemotron 3.5
    Transcribe's `subsampling_factor` 8: it stacks 8 frames of 128 into its 1024-wide
    projection itself, from (batch, frames, 128)); else None."""
    if _extract(config, "input_features") is not None:
        return None
    first = next((m for m in model.modules() if not list(m.children())), None)
    bins = _bins(config)
    if (
        not isinstance(first, torch.nn.Linear)
        or first.in_features % bins
        or first.in_features == bins
    ):
        return None
    own = (_nested_value(config, n) for n in ("subsampling_factor", "num_stacked_frames"))
    return None if first.in_features // bins in own else first.in_features


def _bins(config) -> int:
    """Features per frame: the mel bins, times the frames stacked into one (FunASR's low
    frame rate input, `num_stacked_frames`); where the config does not say, its feature
    extractor's (Gemma 4 audio's 128), else 80."""
    projected = config_value(config, "feature_projection_input_dim")
    if isinstance(projected, int) and projected > 0:
        # the width the feature projection (a Linear over the last dim) reads: W2V-BERT's two
        # stacked frames of 80 mel bins (160); its AutoFeatureExtractor entry is Wav2Vec2's
        # waveform one, not the SeamlessM4T extractor its checkpoints use
        return projected
    stacked = config_value(config, "num_stacked_frames") or 1
    for name in ("num_mel_bins", "feature_size", "input_feat_size"):
        value = config_value(config, name)
        if isinstance(value, int) and value > 0:
            return value * stacked
    out = _extract(config, "input_features")
    bins = out and (getattr(out[0], "num_mel_bins", None) or getattr(out[0], "feature_size", None))
    return (bins if isinstance(bins, int) and bins > 0 else 80) * stacked


def _spectrogram(config, g, name: str, frames_second: bool = False) -> torch.Tensor:
    """(batch, bins, frames) as Whisper, (batch, frames, bins) where the extractor says so or
    the forward documents its frames second of three dims (FunASR's encoder: "(batch_size,
    sequence_length, feature_dim)", its extractor unable to run here), (batch, channels,
    frames, bins) where it gives a channel dim (CLAP)."""
    bins = _bins(config)
    frames = 2 * (config_value(config, "max_source_positions") or SEQ)
    window = config_value(config, "n_window")  # Qwen3-ASR reads whole windows of 2 x n_window
    if isinstance(window, int) and window > 0:
        frames = -(-frames // (2 * window)) * 2 * window
    shape = (
        _extractor_shape(config, "input_features", feature_size=7) if name != "audio_mel" else None
    )
    if shape is not None and len(shape) == 4:
        # one channel: the extractor's extra ones are CLAP's "fusion" crops (`enable_fusion`)
        channels = shape[1] if config_value(config, "enable_fusion") else 1
        return torch.randn(BATCH, channels, frames, bins, generator=g)
    bins_last = name == "audio_mel" or frames_second or _bins_last(config)
    shape = (BATCH, frames, bins) if bins_last else (BATCH, bins, frames)
    return torch.randn(*shape, generator=g)


def _waveform_or_spectrogram(config, g) -> torch.Tensor:
    """`input_values` in the extractor's layout: a (batch, samples) waveform (Wav2Vec2), a
    (batch, channels, samples) one (DAC, EnCodec: the config's `audio_channels`), or a
    (batch, frames, bins) spectrogram (the Audio Spectrogram Transformer: `max_length`
    frames of `num_mel_bins`)."""
    shape = _extractor_shape(config, "input_values")
    samples = _samples(config)
    if shape is None or len(shape) == 2:
        return torch.randn(BATCH, samples, generator=g)
    if shape[-1] >= _SAMPLES // 2:  # samples last: a multi-channel waveform
        channels = config_value(config, "audio_channels") or shape[1]
        return torch.randn(BATCH, channels, samples, generator=g)
    frames = config_value(config, "max_length") or 2 * SEQ
    return torch.randn(BATCH, frames, _bins(config), generator=g)


def _samples(config) -> int:
    """The waveform length: `_SAMPLES`, rounded up to whole tokens where the model takes a
    whole number of them (MuseSpark's `samples_per_token`, the product of its patch sizes,
    which its feature extractor pads to), or two hops of a codec whose hop is longer."""
    per_token = config_value(config, "samples_per_token")
    if isinstance(per_token, int) and per_token > 0:
        return -(-_SAMPLES // per_token) * per_token
    # a codec's samples per frame, in a sub-config or one of its own (PE Audio's DAC, its
    # `audio_config.dac_config`: 1920)
    hop = _nested_value(config, "hop_length")
    if isinstance(hop, int) and 0 < _SAMPLES < 2 * hop:
        return 2 * hop  # two frames: its last strided conv needs one whole hop per output
    return _SAMPLES


def _nested_value(config, name: str, depth: int = 3):
    """`config_value`, or else the value of `name` in a sub-config of a sub-config (depth
    first, at most `depth` levels down); None where none has it."""
    value = config_value(config, name)
    if value is not None or depth <= 1:
        return value
    for sub in vars(config).values():
        if hf_shrink.is_config(sub):
            value = _nested_value(sub, name, depth - 1)
            if value is not None:
                return value
    return None


def _extractor_shape(config, key: str, feature_size: int | None = None):
    """The shape of `key` in the model's own feature extractor's output for a 0.2 s tone (its
    class defaults, nothing downloaded); None when it has none or cannot run."""
    out = _extract(config, key, feature_size)
    return None if out is None else out[1]


def _extract(config, key: str, feature_size: int | None = None):
    """(the extractor, the shape of `key` in its output for a 0.2 s tone), as
    `_extractor_shape`; None when there is none."""
    import numpy as np
    import transformers
    from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES

    name = _family_entry(config, FEATURE_EXTRACTOR_MAPPING_NAMES)
    cls = getattr(transformers, name, None) if isinstance(name, str) else None
    if cls is None:
        return None
    try:
        fe = cls(feature_size=feature_size) if feature_size else cls()
        rate = getattr(fe, "sampling_rate", 16000)
        tone = np.sin(np.arange(3200, dtype=np.float32) * 0.05)
        return fe, tuple(fe([tone], sampling_rate=rate, return_tensors="pt")[key].shape)
    except Exception:  # noqa: BLE001 - an extractor that cannot run says nothing: the default
        return None


def _family_entry(config, mapping):
    """The entry of `config`'s model type in one of transformers' auto tables (a feature
    extractor's, an image processor's), or of its family's: a sub-model type
    (fun_asr_nano_encoder) uses its family's (fun_asr_nano). None where there is none."""
    parts = str(getattr(config, "model_type", "")).split("_")
    families = ["_".join(parts[:n]) for n in range(len(parts), 0, -1)]
    return next((mapping[f] for f in families if f in mapping), None)


def _image_processor_shape(config, pairs: bool = False) -> tuple[int, ...] | None:
    """The shape of `pixel_values` from the model's own image processor (its class defaults,
    nothing downloaded) for one 64 px image, or (`pairs`) for a pair of them where it refuses
    one image and takes only pairs (the keypoint matchers LightGlue and EfficientLoFTR:
    (1, 2, channels, height, width)); None where it has none or cannot run."""
    import numpy as np
    import transformers
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES

    names = _family_entry(config, IMAGE_PROCESSOR_MAPPING_NAMES)
    names = names.values() if isinstance(names, dict) else [names]
    image = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    for name in names:
        cls = getattr(transformers, name, None) if isinstance(name, str) else None
        for images in ([image], [[image, image]]):
            try:
                out = cls()(images, return_tensors="pt")
                # the pixels of its BatchFeature, or the tensor itself where the processor
                # returns one (Idefics's): read inside the `try`, as any other processor fault
                shape = tuple((out if isinstance(out, torch.Tensor) else out["pixel_values"]).shape)
            except Exception:  # noqa: BLE001 - refused (a pair wanted) or cannot run here
                continue
            if pairs == (len(images[0]) == 2 and not isinstance(images[0], np.ndarray)):
                return shape
            return None
    return None


def _grouped_images(config) -> bool:
    """Whether the model takes each prompt's images grouped (`_GROUPED_IMAGES`)."""
    return getattr(config, "model_type", None) in _GROUPED_IMAGES


def _video_only(config) -> bool:
    """Whether the model's processors are a video processor without an image processor (a
    video model whose config counts no frames: InstructBLIP-Video's clips)."""
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    return (
        _family_entry(config, VIDEO_PROCESSOR_MAPPING_NAMES) is not None
        and _family_entry(config, IMAGE_PROCESSOR_MAPPING_NAMES) is None
    )


def _bins_last(config) -> bool:
    """Whether the model takes its features as (batch, frames, bins) (Parakeet, Cohere ASR)
    rather than Whisper's (batch, bins, frames): the extractor run with an odd bin count that
    no frame count matches, or, for an extractor whose bin count is another argument
    (Speech2Text's `num_mel_bins`), run with its defaults: its bins (or a stack of them,
    W2V-BERT's two frames of 80) last, and the frames of the short tone not a multiple of them."""
    if isinstance(config_value(config, "feature_projection_input_dim"), int):
        return True  # read by a Linear: the features last (`_bins`)
    shape = _extractor_shape(config, "input_features", feature_size=7)
    if shape is not None and len(shape) == 3 and shape[-1] == 7 and shape[1] != 7:
        return True
    out = _extract(config, "input_features")
    if out is None or len(out[1]) != 3:
        return False
    fe, (_, first, last) = out
    bins = getattr(fe, "num_mel_bins", None) or getattr(fe, "feature_size", None)
    return isinstance(bins, int) and bins > 0 and last % bins == 0 and first % bins != 0


def _pixels(config, g: torch.Generator, name: str = "pixel_values") -> dict[str, torch.Tensor]:
    """Images (batch, channels, height, width) of the config's `image_size` (a (height, width)
    pair where it gives one: MGP-STR's 32 x 128 text lines; its `crop_size` where it has no
    image size: V-JEPA 2), or clips (batch, frames, channels, height, width) for a video model
    (a config with `num_frames` / `frames_per_clip`, a `*_videos` input, or a model with a
    video processor and no image processor), or groups (batch, n, channels, height, width)
    where the model's image processor groups them (a keypoint matcher's pairs, n = 2)."""
    size = (
        config_value(config, "image_size")
        or config_value(config, "crop_size")
        or config_value(config, "max_img_size")  # TVP's frames
    )
    if not size and config_value(config, "max_2d_position_embeddings"):
        size = config_value(config, "input_size")  # a document model's page (LayoutLMv3)
    size = size or hf_shrink.SIZES["image_size"]
    ratios, patch = config_value(config, "scaled_images_ratios"), config_value(config, "patch_size")
    if isinstance(ratios, list | tuple) and ratios and isinstance(patch, int) and min(ratios) > 0:
        # a model that tiles scaled copies of its image into patches of `patch_size` (Depth
        # Pro: ratios 0.25, 0.5, 1 of a 1536 px image, patches of 384): the image as large as
        # its smallest copy still holds one patch
        size = max(size if isinstance(size, int) else 0, math.ceil(patch / min(ratios)))
    height, width = (size[0], size[-1]) if isinstance(size, list | tuple) else (size, size)
    channels = config_value(config, "num_channels") or 3
    frames = config_value(config, "num_frames") or config_value(config, "frames_per_clip")
    if name.endswith("_videos") or isinstance(frames, int) or _video_only(config):
        shape = (BATCH, frames or _FRAMES, channels, height, width)
    elif name == "pixel_values" and _grouped_images(config):
        shape = (BATCH, 1, channels, height, width)  # one image per prompt (`_GROUPED_IMAGES`)
    else:
        shape = (BATCH, channels, height, width)
        processed = _image_processor_shape(config, pairs=True) if name == "pixel_values" else None
        if processed is not None and len(processed) == 5:
            # images in pairs, as the processor gives them (a keypoint matcher's)
            shape = (BATCH, processed[1], channels, height, width)
    return {name: torch.randn(*shape, generator=g)}


def _naflex(config, g) -> dict[str, torch.Tensor]:
    """SigLIP 2's native-resolution input: each image as its (h, w) patches, flattened to
    (batch, h * w, channels * patch^2), with their `spatial_shapes` and a `pixel_attention_mask`
    of valid patches (all): a 32 px image, 2 x 2 patches of 16."""
    patch = config_value(config, "patch_size") or 16
    patch = patch[0] if isinstance(patch, list | tuple) else patch
    channels = config_value(config, "num_channels") or 3
    side = max(2, (config_value(config, "image_size") or hf_shrink.SIZES["image_size"]) // patch)
    return {
        "pixel_values": torch.randn(BATCH, side * side, channels * patch * patch, generator=g),
        "pixel_attention_mask": torch.ones(BATCH, side * side, dtype=torch.long),
        "spatial_shapes": torch.tensor([[side, side]] * BATCH),
    }


def _positioned_patches(config, g) -> dict[str, torch.Tensor]:
    """Gemma 4's vision input: each image as its patches (batch, patches, channels * patch^2)
    with their (x, y) grid positions `pixel_position_ids` (batch, patches, 2), no padding
    (-1, -1); the grid's side a multiple of the pooling kernel (`pooling_kernel_size`, which
    pools kernel^2 patches into one token), at least the 32 px image's."""
    patch = config_value(config, "patch_size") or 16
    patch = patch[0] if isinstance(patch, list | tuple) else patch
    pool = config_value(config, "pooling_kernel_size") or 1
    channels = config_value(config, "num_channels") or 3
    side = max(2, (config_value(config, "image_size") or hf_shrink.SIZES["image_size"]) // patch)
    side = -(-side // pool) * pool
    rows, cols = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    positions = torch.stack([cols.flatten(), rows.flatten()], dim=-1)
    return {
        "pixel_values": torch.randn(BATCH, side * side, channels * patch * patch, generator=g),
        "pixel_position_ids": positions.expand(BATCH, -1, -1).clone(),
    }


def _packed_patches(config, g) -> dict[str, torch.Tensor]:
    """A NaViT-style packed input, where the forward takes each image's patch grid as
    `target_sizes` (MiniCPM-V's vision towers): the patches of all images in one sequence, as
    their image processor packs them, (1, channels, patch, patches x patch) (each image's
    patches side by side in width, the model's patch conv cutting them apart again), and
    `target_sizes` (images, 2) the (h, w) grid of each, int32: one image per batch row, its
    grid the shrunk image's, at least 2 and a multiple of the window merger's kernel
    (`window_kernel_size`, which refuses a grid it does not divide)."""
    patch = config_value(config, "patch_size") or 14
    patch = patch[0] if isinstance(patch, list | tuple) else patch
    channels = config_value(config, "num_channels") or 3
    kernel = config_value(config, "window_kernel_size") or 1
    kernel = max(kernel) if isinstance(kernel, list | tuple) else kernel
    size = config_value(config, "image_size") or hf_shrink.SIZES["image_size"]
    side = max(2, (size[0] if isinstance(size, list | tuple) else size) // patch)
    side = -(-side // kernel) * kernel
    return {
        "pixel_values": torch.randn(1, channels, patch, BATCH * side * side * patch, generator=g),
        "target_sizes": torch.tensor([[side, side]] * BATCH, dtype=torch.int32),
    }


def _patches(config, g, name: str, flat_name: str) -> dict[str, torch.Tensor]:
    """Qwen2-VL-style vision input: `grid_thw` rows (t, h, w) in patches, and the patches
    flattened to (sum t*h*w, channels * temporal_patch * patch^2) as `flat_name`."""
    merge = config_value(config, "spatial_merge_size") or 1
    temporal = (
        config_value(config, "temporal_patch_size") or config_value(config, "patch_temporal") or 1
    )
    patch = config_value(config, "patch_size") or 14
    channels = config_value(config, "in_channels") or config_value(config, "num_channels") or 3
    temporal = temporal[0] if isinstance(temporal, list | tuple) else temporal
    patch = patch[0] if isinstance(patch, list | tuple) else patch
    side = 2 * merge
    grid = torch.tensor([[1, side, side]] * BATCH)
    flat = torch.randn(BATCH * side * side, channels * temporal * patch * patch, generator=g)
    processed = _image_processor_shape(config) if flat_name == "pixel_values" else None
    block = merge * patch
    if processed is not None and processed[1:] == (channels, patch, patch) and temporal == 1:
        # patches left as (patches, channels, patch, patch) by the model's image processor
        # (Kimi K2.5's vision tower convolves each one)
        flat = flat.reshape(-1, channels, patch, patch)
    elif processed is not None and processed[1:] == (block, block, channels) and temporal == 1:
        # pixels in merge blocks, channels last (Inkling 2's processor: (blocks, merge x
        # patch, merge x patch, channels), cut into patches by the model), the grid counted
        # in blocks (its language model's image tokens)
        flat = flat.reshape(-1, block, block, channels)
        grid = grid // torch.tensor([1, merge, merge])
    return {flat_name: flat, name: grid}


def _boxes(config, g) -> torch.Tensor:
    """(batch, seq, coords) boxes, corners ordered: coords is the config's `dim_bbox` (BROS's
    eight, four corners) or 4; integer in [0, 1000) when the model embeds them in a position
    table (LayoutLM's `max_2d_position_embeddings`), else floats in [0, 1)."""
    coords = config_value(config, "dim_bbox") or 4
    table = config_value(config, "max_2d_position_embeddings")
    # rows (x0, y0), (x1, y1), each column sorted: x0 <= x1, y0 <= y1
    corners = torch.rand(BATCH, SEQ, 2, 2, generator=g).sort(dim=2).values
    flat = corners.reshape(BATCH, SEQ, 4)  # x0, y0, x1, y1
    boxes = flat.repeat(1, 1, coords // 4)
    return (boxes * min(table, 1000)).long() if table else boxes
