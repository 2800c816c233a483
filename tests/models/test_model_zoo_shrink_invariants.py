"""More harness rules of the model zoo (torch_neuronx/testing/model_zoo), each for a kind of
`cpu_error` the sweep recorded although the model runs on CPU from its config (issue 26):
invariants the shrink broke (a window larger than the last stage, channels tied across
sub-configs, a width split in sixths or in parts), values the default leaves unset, and
inputs the batch lacked. Checked on the shrunk configs and synthetic batches, with one CPU
forward of the tiny model where the input is the rule (no training)."""

from __future__ import annotations

import pytest
from zoo_support import batch as _batch
from zoo_support import needs_transformers, shrunk
from zoo_support import runs as _runs

pytestmark = needs_transformers


@pytest.mark.parametrize("model_type", ["swin", "donut-swin"])
def test_a_window_fits_the_last_stage_of_the_hierarchy(model_type):
    # Swin cuts a window larger than a stage's grid at run time, but not its position table
    config = shrunk(model_type)
    last_grid = config.image_size // config.patch_size // 2 ** (len(config.depths) - 1)
    assert 1 < config.window_size <= last_grid


def test_the_last_width_of_a_hierarchy_follows_its_first_stage():
    audio = shrunk("clap").audio_config  # CLAP's Swin-like audio tower: 96 -> 768 by default
    merges = 2 ** (len(audio.depths) - 1)
    assert audio.hidden_size == audio.patch_embeds_hidden_size * merges < 768


def test_sizes_the_default_leaves_unset_are_given():
    nemotron = shrunk("nemotron")  # None meant multi-head attention; its code divides by it
    assert nemotron.num_key_value_heads == nemotron.num_attention_heads
    assert shrunk("deepseek_v2").num_experts_per_tok == 2  # top-k of None fails
    assert shrunk("xmod").default_language == "en_XX"  # the first of its `languages`


def test_parts_and_factors_of_a_size_follow_it():
    config = shrunk("reformer")  # axial position embeddings: (64, 192) of 256, (64, 64) of 4096
    assert sum(config.axial_pos_embds_dim) == config.hidden_size
    assert config.axial_pos_shape[0] * config.axial_pos_shape[1] == _seq()


def _seq() -> int:
    from torch_neuronx.testing.model_zoo import hf_inputs

    return hf_inputs.SEQ


def test_a_document_width_stays_split_in_sixths():
    config = shrunk("layoutlmv3")  # 4 coordinates + 2 shape embeddings, concatenated
    assert 4 * config.coordinate_size + 2 * config.shape_size == config.hidden_size
    assert config.input_size < 224  # its page image, shrunk like an image size
    lilt = shrunk("lilt")  # hidden_size // 6 per box feature, / channel_shrink_ratio per head
    assert lilt.hidden_size % 6 == 0
    assert (lilt.hidden_size // lilt.channel_shrink_ratio) % lilt.num_attention_heads == 0


def test_channels_tied_to_a_sibling_width_follow_it():
    config = shrunk("sam")
    width = config.prompt_encoder_config.hidden_size
    assert config.mask_decoder_config.hidden_size == width
    assert config.vision_config.output_channels == width
    assert 2 * config.vision_config.num_pos_feats == width
    grid = config.vision_config.image_size // config.vision_config.patch_size
    assert config.prompt_encoder_config.image_embedding_size == grid


def test_depthwise_groups_follow_the_width():
    config = shrunk("mimi")
    assert config.upsample_groups == config.hidden_size


def test_the_model_config_is_the_sub_config_automodel_builds_from():
    from torch_neuronx.testing.model_zoo import hf_models

    model, config, batch = _batch("musicgen")  # MusicgenModel takes the decoder's config
    assert type(config).__name__ == "MusicgenDecoderConfig"
    # "(batch_size * num_codebooks, sequence_length)", as its forward documents
    assert batch["input_ids"].shape[0] == hf_models.BATCH * config.num_codebooks
    _runs(model, batch)


def test_embedded_inputs_of_a_modality_free_model():
    model, config, batch = _batch("perceiver")
    assert tuple(batch["inputs"].shape[::2]) == (2, config.d_model)
    assert config.num_self_attends_per_block == 2 and config.d_latents == 64
    _runs(model, batch)


def test_an_image_led_model_gets_its_prompt_and_image_positions():
    model, config, batch = _batch("kosmos-2")
    assert {"pixel_values", "input_ids", "image_embeds_position_mask"} <= set(batch)
    assert int(batch["image_embeds_position_mask"][0].sum()) == config.latent_query_num
    _runs(model, batch)


def test_image_tokens_hold_the_q_former_outputs():
    model, config, batch = _batch("blip-2")
    assert isinstance(config.image_token_index, int)
    per_row = (batch["input_ids"] == config.image_token_index).sum(dim=1)
    assert per_row.tolist() == [config.num_query_tokens] * per_row.numel()
    _runs(model, batch)


def test_features_are_as_wide_as_the_projection_reads():
    model, config, batch = _batch("wav2vec2-bert")  # two stacked frames of 80 mel bins
    assert batch["input_features"].shape[-1] == config.feature_projection_input_dim == 160
    _runs(model, batch)


def test_an_unnamed_input_takes_its_documented_shape():
    model, config, batch = _batch("mimi_decoder")  # "(batch_size, hidden_size, frames)"
    assert tuple(batch["latents"].shape) == (2, config.hidden_size, _seq())
    _runs(model, batch)


def test_a_hidden_size_tied_to_the_siblings_follows_them():
    config = shrunk("sam3")  # its vision FPN feeds the DETR encoder
    assert config.vision_config.fpn_hidden_size == config.detr_encoder_config.hidden_size


def test_each_image_of_a_patch_grid_gets_its_merge_size():
    model, config, batch = _batch("video_llama_3_vision")
    from torch_neuronx.testing.model_zoo import hf_inputs

    merge = hf_inputs.config_value(config, "spatial_merge_size") or 1  # (its config has none)
    assert batch["merge_sizes"].tolist() == [merge] * batch["grid_thw"].shape[0]
    _runs(model, batch)


def test_per_stage_widths_follow_the_shrunk_first_stage():
    # SAM 2's Hiera: `embed_dim_per_stage` [96, ..., 768] starts at hidden_size 96
    config = shrunk("sam2_hiera_det_model")
    assert config.embed_dim_per_stage[0] == config.hidden_size == 64
    assert config.embed_dim_per_stage == [64, 128, 256, 512]
    assert list(config.image_size) == [32, 32]  # its 1024 px square, given as a list


def test_a_square_image_size_list_is_shrunk():
    assert list(shrunk("pvt_v2").image_size) == [32, 32]  # was [224, 224]


def test_channel_lists_follow_the_scaled_stage_widths():
    # SAM 2's neck reads the Hiera stages, last first: [768, 384, 192, 96] by default
    vision = shrunk("sam2_vision_model")
    assert vision.backbone_channel_list == vision.backbone_config.embed_dim_per_stage[::-1]
    assert vision.backbone_channel_list == [512, 256, 128, 64]


def test_feature_sizes_follow_the_backbone_image():
    # SAM 2's neck declares its feature maps of the 1024 px image: 256, 128, 64 a side
    vision = shrunk("sam2_vision_model")
    side = vision.backbone_config.image_size[0]
    assert vision.backbone_feature_sizes == [[side // 4] * 2, [side // 8] * 2, [side // 16] * 2]


def test_mrope_sections_are_the_code_defaults_scaled():
    # Ernie 4.5 VL's config leaves `mrope_section` out and its rotary embedding defaults to
    # [22, 22, 20] (height, width, time), stacking the height and width sections pairwise:
    # they must stay equal (the 2:3:3 shares gave [2, 3, 3]: "stack expects each tensor to be
    # equal size")
    text = shrunk("ernie4_5_vl_moe").text_config
    section = text.rope_parameters["mrope_section"]
    assert section == [3, 3, 2]
    assert sum(section) == text.hidden_size // text.num_attention_heads // 2


def test_an_image_whose_sides_are_whole_multiples_keeps_its_ratio():
    # SegGPT's canvas is its prompt and its image stacked in height: 896 x 448 (it stayed)
    assert list(shrunk("seggpt").image_size) == [64, 32]
    assert list(shrunk("yolos").image_size) == [512, 864]  # no whole ratio: left alone


def test_a_timm_backbone_image_side_follows_the_shrunk_image():
    # OmDet-Turbo hands its timm Swin `img_size` 640 to timm.create_model: it follows the
    # shrunk image side, as the model's `image_size`
    config = shrunk("omdet-turbo")
    assert config.backbone_config.img_size == config.image_size == 32
    assert config.timm_kwargs["img_size"] == 32


def test_sizes_named_for_a_tower_follow_its_width():
    # OmDet-Turbo's text_projection_in_dim (and its equals, the projection's output and the
    # class embedding) are its CLIP text width 512 in the default; X-CLIP's projection_dim,
    # equal to its text width with no name tying them, is kept
    config = shrunk("omdet-turbo")
    width = config.text_config.hidden_size
    assert width < 512
    assert config.text_projection_in_dim == config.text_projection_out_dim == width
    assert config.class_embed_dim == width
    assert shrunk("xclip").projection_dim == 512


def test_a_size_a_model_keeps_by_name():
    # OmDet-Turbo's d_model stays 256 (hf_shrink.KEPT_SIZES: equal to the shrunk text width
    # its decoder would skip `task_project` it calls)
    config = shrunk("omdet-turbo")
    assert config.d_model == 256 and config.class_embed_dim != config.decoder_hidden_dim


def test_a_layer_index_maps_onto_the_shrunk_stack():
    # MiniCPM-V's insert_layer_id 6 of 12 (its window merger runs after that layer): at its
    # relative depth in the shrunk stack, in the vision config and the composite's own copy
    vision = shrunk("minicpm_ocr_vision")
    assert vision.insert_layer_id == 6 * vision.num_hidden_layers // 12
    composite = shrunk("minicpm_ocr")
    assert composite.insert_layer_id == composite.vision_config.insert_layer_id
    assert composite.insert_layer_id < composite.vision_config.num_hidden_layers
