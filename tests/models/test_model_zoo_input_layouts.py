"""Harness rules of the model zoo (torch_neuronx/testing/model_zoo) for `cpu_error`s the sweep
recorded although the model runs on CPU from its config (issue 26), session hfh: inputs in the
layout the model reads (image pairs, clips, positioned or unflattened patches, a task's tokens
of its fixed length, spectrogram frames second, a waveform as long as a codec reads), and sizes
the shrink must keep tied (feature maps on a patch grid, widths summed, an undone width's
heads, head dims summing their parts, per-layer heads, layer indices, mRoPE sections the
code defaults). Checked on the shrunk configs and synthetic batches, with one CPU forward of the tiny
model where the input is the rule (no training)."""

from __future__ import annotations

import torch
from zoo_support import batch as _batch
from zoo_support import needs_transformers, shrunk
from zoo_support import runs as _runs

pytestmark = needs_transformers


def test_feature_sizes_follow_the_patch_grid_of_a_vit_backbone():
    # SAM 3's ViT: 1008 px in patches of 14 (a grid of 72), its FPN's maps 4x, 2x, 1x the grid
    vision = shrunk("sam3_tracker").vision_config
    grid = vision.backbone_config.image_size // vision.backbone_config.patch_size
    assert vision.backbone_feature_sizes == [[4 * grid] * 2, [2 * grid] * 2, [grid] * 2]


def test_a_list_of_main_inputs_and_a_task_of_fixed_length():
    model, config, batch = _batch("oneformer")  # main inputs [pixel_values, task_inputs]
    assert tuple(batch["task_inputs"].shape) == (2, config.task_seq_len)


def test_a_keypoint_matcher_gets_image_pairs():
    model, _, batch = _batch("lightglue")  # its image processor takes pairs only
    assert batch["pixel_values"].shape[:2] == (2, 2) and batch["pixel_values"].ndim == 5
    _runs(model, batch)
    _, _, single = _batch("vit")
    assert single["pixel_values"].ndim == 4


def test_an_undone_width_keeps_its_heads():
    # EfficientLoFTR's hidden_size must equal its last stage's channels (undone): its heads
    # stay, so the rotary table (4 x the head dim) still fills a quarter of the width
    config = shrunk("efficientloftr")
    assert config.hidden_size == 256 and config.num_attention_heads == 8
    model, _, batch = _batch("efficientloftr")
    _runs(model, batch)


def test_a_video_only_model_gets_clips_and_its_video_tokens():
    model, config, batch = _batch("instructblipvideo")
    frames = batch["pixel_values"].shape[1]
    assert batch["pixel_values"].ndim == 5
    per_row = (batch["input_ids"] == config.video_token_index).sum(dim=1)
    assert per_row.tolist() == [config.num_query_tokens * frames] * 2
    _runs(model, batch)


def test_positioned_patches_fill_whole_pooling_kernels():
    model, config, batch = _batch("gemma4_vision")
    patches = batch["pixel_values"].shape[1]
    assert tuple(batch["pixel_position_ids"].shape) == (2, patches, 2)
    assert patches % config.pooling_kernel_size**2 == 0
    _runs(model, batch)


def test_patches_unflattened_as_the_image_processor_gives_them():
    model, config, batch = _batch("kimi_k25_vision")
    assert batch["pixel_values"].ndim == 4  # (patches, channels, patch, patch)
    _runs(model, batch)


def test_a_codec_hop_in_a_nested_sub_config_sizes_the_waveform():
    _, config, batch = _batch("pe_audio")  # audio_config.dac_config.hop_length 1920
    assert batch["input_values"].shape[-1] >= 2 * config.audio_config.dac_config.hop_length


def test_decoder_tokens_in_a_layout_the_config_does_not_size_are_left_out():
    model, _, batch = _batch("dia")  # "(batch_size * num_codebooks, ...)", no num_codebooks
    assert "decoder_input_ids" not in batch
    _runs(model, batch)


def test_frames_second_where_documented_and_the_extractor_cannot_say():
    model, config, batch = _batch("fun_asr_nano_encoder")
    frames = batch["input_features_mask"].shape[1]
    assert batch["input_features"].shape[1] == frames
    _runs(model, batch)
    _, _, whisper = _batch("whisper")  # its extractor says (batch, bins, frames)
    assert whisper["input_features"].shape[1] == 80


def test_a_size_of_concatenated_widths_follows_their_sum():
    config = shrunk("xcodec")  # codebook_dim: semantic 768 + acoustic 256
    widths = config.semantic_model_config.hidden_size + config.acoustic_model_config.hidden_size
    assert config.codebook_dim == widths < 1024
    neucodec = shrunk("neucodec")  # quantization_dim: its own 1024 + its semantic model's
    assert neucodec.quantization_dim == (
        neucodec.hidden_size + neucodec.semantic_model_config.hidden_size
    )


def test_a_codec_waveform_spans_its_spectrogram():
    model, config, batch = _batch("xcodec2")
    frames = batch["input_features"].shape[1]
    hop = 1
    for r in config.downsampling_ratios:
        hop *= r
    assert batch["input_values"].shape[-1] == frames * hop
    _runs(model, batch)


def test_a_head_dim_that_sums_its_parts_follows_them():
    config = shrunk("longcat_flash")  # qk_head_dim 192 = nope 128 + rope 64
    assert config.qk_head_dim == config.qk_nope_head_dim + config.qk_rope_head_dim < 192


def test_mrope_sections_where_the_modeling_code_defaults_them():
    text = shrunk("paddleocr_vl").text_config  # its code: .get("mrope_section", [16, 24, 24])
    assert sum(text.rope_parameters["mrope_section"]) == text.head_dim // 2


def test_per_layer_head_counts_scale_with_the_heads():
    config = shrunk("sapiens2")
    assert all(config.num_attention_heads % kv == 0 for kv in config.num_key_value_heads_per_layer)


def test_a_hidden_size_of_a_sibling_follows_its_width():
    config = shrunk("blt")  # the byte encoder's hidden_size_global is the global model's width
    assert config.encoder_config.hidden_size_global == config.global_config.hidden_size


def test_layer_ids_follow_the_shrunk_stack():
    config = shrunk("depth_pro")  # hooks (11, 5) into a 12-layer patch encoder
    layers = config.patch_model_config.num_hidden_layers
    assert all(0 <= i < layers for i in config.intermediate_hook_ids)


def test_a_tiled_image_holds_a_patch_at_its_smallest_scale():
    model, config, batch = _batch("depth_pro")
    side = batch["pixel_values"].shape[-1]
    assert side * min(config.scaled_images_ratios) >= config.patch_size
    _runs(model, batch)


def test_a_width_documented_as_a_product():
    model, config, batch = _batch("muse_glimmer_assistant")  # "dim * len(target_layer_ids)"
    width = config.hidden_size * len(config.target_layer_ids)
    assert batch["context_hidden_states"].shape[-1] == width
    _runs(model, batch)


def test_patches_in_merge_blocks_channels_last():
    model, config, batch = _batch("inkling2_vision")
    block = config.patch_size * config.spatial_merge_size
    assert tuple(batch["pixel_values"].shape[1:]) == (block, block, config.num_channels)
    _runs(model, batch)


def test_a_documented_feature_sequence_length_is_the_frames():
    model, _, batch = _batch("nemotron3_5_transcribe_audio")
    assert batch["input_features"].shape[1] == batch["input_features_mask"].shape[1]
    _runs(model, batch)


def test_a_named_timm_vision_transformer_is_shrunk_through_its_model_args():
    vision = shrunk("pe_video_encoder").vision_config  # vit_pe_core_large_patch14_336
    assert vision.model_args["depth"] == 2 and vision.model_args["embed_dim"] == 64
    model, _, batch = _batch("pe_video_encoder")
    assert batch["pixel_values_videos"].shape[-1] == vision.model_args["img_size"]
    _runs(model, batch)


def test_an_audio_led_encoder_gets_the_video_it_fuses():
    model, _, batch = _batch("pe_audio_video_encoder")
    assert {"input_values", "pixel_values_videos"} <= set(batch)
    _runs(model, batch)


def test_an_inherited_main_input_the_forward_lacks_gives_way_to_its_own():
    # SAM 3 Lite's text encoder inherits `main_input_name` "pixel_values" from the
    # segmentation model; its forward takes input_ids, none of them required
    from torch_neuronx.testing.model_zoo import hf_models

    model, config = hf_models.build("sam3_lite_text_text_model")
    batch = hf_models.inputs(model, config)
    assert list(batch)[0] == "input_ids" and "pixel_values" not in batch
    with torch.no_grad():
        assert model(**batch).last_hidden_state.shape[:2] == batch["input_ids"].shape


def test_an_image_and_its_prompt_image_fill_the_canvas_in_height():
    # SegGPT concatenates prompt_pixel_values and pixel_values in height into its image_size
    from torch_neuronx.testing.model_zoo import hf_models

    model, config = hf_models.build("seggpt")
    batch = hf_models.inputs(model, config)
    height, width = config.image_size
    for name in ("pixel_values", "prompt_pixel_values", "prompt_masks"):
        assert tuple(batch[name].shape[-2:]) == (height // 2, width)
    with torch.no_grad():
        model(**batch)


def test_an_image_processor_that_returns_a_tensor_gives_its_shape():
    # Idefics's image processor returns the pixels as a tensor, not a BatchFeature: its shape
    # read inside the `try` (it raised IndexError out of the harness)
    from torch_neuronx.testing.model_zoo import hf_inputs, zoo

    zoo.torchvision_shim.install()
    from transformers import AutoConfig

    config = AutoConfig.for_model("idefics")
    assert hf_inputs._image_processor_shape(config) == (1, 3, 224, 224)
    assert hf_inputs._image_processor_shape(config, pairs=True) is None


def test_images_grouped_per_prompt_with_their_token_mask():
    # Idefics reads `batch_size, num_images = pixel_values.shape[:2]` and crosses each token
    # with each image through image_attention_mask (batch, text_seq, num_images)
    model, _, batch = _batch("idefics")
    assert batch["pixel_values"].ndim == 5 and batch["pixel_values"].shape[:2] == (2, 1)
    assert tuple(batch["image_attention_mask"].shape) == (*batch["input_ids"].shape, 1)
    _runs(model, batch)


def test_documented_counts_are_integer_ones():
    # OmDet-Turbo's `classes_structure` (LongTensor (batch_size): "the number of classes for
    # each task"): one class per task, as the batch holds one class row per sample
    _, _, batch = _batch("omdet-turbo")
    structure = batch["classes_structure"]
    assert structure.dtype == torch.long and structure.tolist() == [1, 1]
    assert structure.sum() == batch["classes_input_ids"].shape[0]


def test_navit_packed_patches_with_their_grids():
    # MiniCPM-V's vision tower takes `target_sizes` (each image's patch grid) and all images'
    # patches in one sequence, (1, C, patch, patches x patch), as its image processor packs them
    model, config, batch = _batch("minicpm_ocr_vision")
    sizes, pixels = batch["target_sizes"], batch["pixel_values"]
    assert sizes.dtype == torch.int32 and tuple(sizes.shape) == (2, 2)
    patch = config.patch_size
    assert tuple(pixels.shape) == (1, 3, patch, int(sizes.prod(-1).sum()) * patch)
    _runs(model, batch)


def test_values_documented_as_hidden_states_without_a_prenet():
    # SpeechT5Model (AutoModel's base) builds its encoder and decoder without pre-nets: its
    # input_values / decoder_input_values ("... or hidden states") are (batch, seq, hidden)
    model, config, batch = _batch("speecht5")
    for name in ("input_values", "decoder_input_values"):
        assert tuple(batch[name].shape) == (2, 16, config.hidden_size)
    _runs(model, batch)
    _, _, wav2vec2 = _batch("wav2vec2")
    assert wav2vec2["input_values"].ndim == 2  # a waveform where the docs say only that


def test_a_codec_half_built_alone_gets_its_stream():
    # VibeVoice's acoustic tokenizer encoder and decoder inherit `input_values` and take
    # `hidden_states`: the encoder a waveform of its audio channels, the decoder latent frames
    # of the channels its first convolution reads
    model, config, batch = _batch("vibevoice_acoustic_tokenizer_encoder")
    assert tuple(batch["hidden_states"].shape[:2]) == (2, config.channels)
    assert batch["hidden_states"].shape[-1] % 3200 == 0  # whole hops of its strides
    _runs(model, batch)
    model, config, batch = _batch("vibevoice_acoustic_tokenizer_decoder")
    assert tuple(batch["hidden_states"].shape) == (2, config.hidden_size, 16)


def test_token_streams_by_the_embedding_offsets():
    # Kyutai speech-to-text embeds a text token and one per audio codebook at each step (its
    # `audio_tokens_offsets`, 1 + num_codebooks); CSM documents a 2-D prompt beside that layout
    model, config, batch = _batch("kyutai_speech_to_text")
    assert tuple(batch["input_ids"].shape) == (2, 16, 1 + config.num_codebooks)
    _runs(model, batch)
    _, _, csm = _batch("csm")
    assert csm["input_ids"].ndim == 2


def test_stacked_features_take_the_width_their_linear_reads():
    # Granite Speech 5 reads 2 stacked frames of 80 mel bins with their deltas (320) through
    # its first Linear; its feature extractor needs torchaudio and its config says 80
    model, config, batch = _batch("granite_speech5_encoder")
    assert batch["input_features"].shape[-1] == model.input_linear.in_features == 4 * 80
    _runs(model, batch)
