"""The model zoo's harness rules (torch_neuronx/testing/model_zoo): the HF shrink keeps the
invariants of the default config, the synthetic batch follows the forward signature, and a
CPU reference that cannot judge the device takes the model out of the sweep.

Each case below was a `cpu_error` of the sweep made by the harness, not by the model (issue
26): the rules are checked on the configs and batches alone, or with one CPU forward of a
tiny model, with no training (fast enough for CI)."""

from __future__ import annotations

import pytest
import torch
from zoo_support import batch, needs_transformers, runs, shrunk

from torch_neuronx.testing.model_zoo import train_check

pytestmark = needs_transformers


def test_backbone_out_indices_follow_the_shrunk_layers():
    config = shrunk("beit")  # out_features ["stage12"] of 12 layers
    assert config.num_hidden_layers == 2
    assert config.out_features == ["stage2"] and set(config.out_features) <= set(config.stage_names)


def test_stage_count_aliases_are_not_layer_counts():
    config = shrunk("convnext")  # num_hidden_layers is an alias of num_stages
    assert config.num_stages == 4 == len(config.hidden_sizes)
    assert list(config.depths) == [1, 1, 1, 1]


def test_latent_attention_keeps_its_dims_tied():
    config = shrunk("deepseek_v3")
    assert config.num_key_value_heads == config.num_attention_heads  # MLA is multi-head
    assert config.head_dim == config.qk_rope_head_dim
    assert config.n_routed_experts % config.n_group == 0 and config.topk_group <= config.n_group


def test_widths_stay_multiples_of_the_head_count():
    config = shrunk("donut-swin")  # three heads in its first stage
    assert config.embed_dim % config.num_heads[0] == 0
    assert config.embed_dim < 96


def test_mamba_heads_fit_the_mixer_width():
    for model_type in ("bamba", "falcon_h1"):  # a read-only `layer_types`; an explicit d_ssm
        config = shrunk(model_type)
        width = getattr(config, "mamba_d_ssm", None) or config.mamba_expand * config.hidden_size
        assert config.mamba_n_heads * config.mamba_d_head == width


def test_heterogeneous_per_layer_overrides_follow_the_layers():
    config = shrunk("embedding_gemma2_text")  # overrides at layers 5, 11, ... of 24
    assert config.num_hidden_layers == 2
    # the kept layers' overrides (layer 5, full attention, is the shrunk stack's layer 1),
    # renumbered: none is left past the stack
    overrides = config.to_dict()["per_layer_config"]
    assert overrides and all(int(i) < config.num_hidden_layers for i in overrides)


def test_every_kind_of_layer_is_kept():
    # the first two layers of these are all sliding / linear: the shrunk stack keeps one
    # of each kind, so the full-attention path is trained too
    for model_type in ("gemma3_text", "qwen3_next", "olmo_hybrid"):
        default = _default(model_type)
        config = shrunk(model_type)
        assert set(config.layer_types) == set(default.layer_types)
        assert len(config.layer_types) == config.num_hidden_layers == 2


def test_a_model_that_rejects_the_mix_keeps_its_first_layers():
    from torch_neuronx.testing.model_zoo import hf_models

    # Gemma 3n's KV-sharing layers cannot be built with its full-attention layer moved up
    _, config = hf_models.build("gemma3n_text")
    assert config.layer_types == _default("gemma3n_text").layer_types[:2]


def _default(model_type: str):
    from transformers import AutoConfig

    return AutoConfig.for_model(model_type)


def test_per_layer_sizes_and_shared_layers_are_shrunk():
    config = shrunk("gemma3n_text")
    assert all(v <= 128 for v in config.intermediate_size)
    assert config.vocab_size_per_layer_input == config.vocab_size == 256
    assert 0 < config.num_kv_shared_layers < config.num_hidden_layers


def test_random_masks_are_off():
    config = shrunk("data2vec-audio")  # SpecAugment draws differ between CPU and neuron
    assert config.mask_time_prob == 0.0 and config.mask_feature_prob == 0.0


def test_a_rejected_shrink_is_undone_where_the_message_points():
    # "hidden_size should be equal to the last value in out_features": hidden_size unshrunk
    config = shrunk("efficientloftr")
    assert config.hidden_size == config.out_features[-1]
    # "adaptor_config.intermediate_size must equal text_config.hidden_size // 4": those two
    # attributes of the sub-configs only, the text model otherwise shrunk
    config = shrunk("fun_asr_nano")
    assert config.adaptor_config.intermediate_size == config.text_config.hidden_size // 4
    assert config.text_config.num_hidden_layers == 2


def _parameters(config) -> int:
    from transformers import AutoModel

    with torch.device("meta"):  # shapes only: nothing allocated, nothing initialised
        return sum(p.numel() for p in AutoModel.from_config(config).parameters())


def test_sizes_a_validation_ties_stay_shrunk_together():
    # "`vision_config.text_hidden_size` (4608) must match `text_config.hidden_size` (64)":
    # undoing both sides built the text model at full width, 1,157M parameters (OOM-killed)
    config = shrunk("inkling2")
    assert config.vision_config.text_hidden_size == config.text_config.hidden_size == 64
    assert _parameters(config) < 50_000_000
    # the same across two sub-configs (audio output onto the text embeddings), and per-layer
    # tuples the message names cut to the shrunk layer count rather than the count undone
    config = shrunk("muse_spark")
    audio = config.audio_config
    assert audio.out_hidden_size == config.text_config.hidden_size == 64
    assert audio.num_hidden_layers == 2 == len(audio.patch_sizes) == len(audio.depths)
    assert _parameters(config) < 100_000_000


def test_derived_sizes_and_ids_stay_consistent():
    config = shrunk("xlnet")  # "`d_head` should be equal to `d_model // n_head`"
    assert config.d_head == config.d_model // config.n_head and config.d_model == 64
    # "`config.image_model_config.image_size` should match `config.patch_size`": tied
    config = shrunk("depth_pro")
    assert config.patch_size == config.image_model_config.image_size == 32
    config = shrunk("esm")  # no vocabulary nor padding id by default (left to the checkpoint)
    assert config.vocab_size == 256 and config.pad_token_id == 1


def _batch(model_type: str):
    from torch_neuronx.testing.model_zoo import hf_models

    model, config = hf_models.build(model_type)
    return model, hf_models.inputs(model, config)


@pytest.mark.parametrize(
    ("model_type", "expected"),
    [
        ("exaone4_5_vision", {"hidden_states", "grid_thw"}),  # required, no default
        ("cosmos3_edge_vision", {"pixel_values", "grid_thw"}),
        ("decision_transformer", {"states", "actions", "returns_to_go", "timesteps"}),
        ("blip_2_qformer", {"query_embeds", "encoder_hidden_states"}),
        ("gemma3n_audio", {"audio_mel", "audio_mel_mask"}),
        ("audioflamingo3_encoder", {"input_features", "input_features_mask"}),
        # time series: the context plus the largest lag, a horizon where the config has none
        ("autoformer", {"past_values", "past_time_features", "past_observed_mask"}),
        ("timesfm", {"past_values", "past_values_padding", "freq"}),
        ("videoprism_vision_model", {"pixel_values_videos"}),  # (batch, frames, C, H, W)
        ("siglip2_vision_model", {"pixel_values", "pixel_attention_mask", "spatial_shapes"}),
        ("lxmert", {"input_ids", "visual_feats", "visual_pos"}),  # its detected regions
        ("pe_audio_video", {"input_ids", "input_values"}),  # "at least two of" its modalities
        ("muse_spark", {"input_ids"}),  # ... but not where audio goes in at an audio token
        ("voxtral_realtime", {"input_ids", "input_features"}),  # audio added position-wise
        ("funnel", {"input_ids"}),  # two base classes in AutoModel's table: its own choice
        ("timm_backbone", {"pixel_values"}),  # its architecture, which the default leaves unset
    ],
)
def test_synthetic_batch_follows_the_forward_signature(model_type, expected):
    model, batch = _batch(model_type)
    assert set(batch) == expected
    with torch.no_grad():
        out = model(**batch, **train_check._forward_kwargs(model))  # the CPU reference runs
    assert train_check._floating_leaves(out)


@pytest.mark.parametrize(
    ("model_type", "name", "shape"),
    [
        ("videomae", "pixel_values", (2, 4, 3, 32, 32)),  # num_frames: a clip, not an image
        ("mgp-str", "pixel_values", (2, 3, 32, 128)),  # image_size (height, width)
        ("speech_to_text", "input_features", (2, 64, 80)),  # bins last: its extractor's layout
        ("muse_spark_audio", "input_values", (2, 1632)),  # whole tokens of 96 samples
    ],
)
def test_inputs_take_the_layout_the_model_reads(model_type, name, shape):
    model, batch = _batch(model_type)
    assert tuple(batch[name].shape) == shape
    with torch.no_grad():
        model(**batch, **train_check._forward_kwargs(model))


def test_multimodal_rope_sections_fit_the_shrunk_rotary_dims():
    # the modeling code's own default ([8, 12, 12] of 32) when the config has none
    for model_type, partial in (("glm4v_text", 1.0), ("glm4v_moe_text", 0.5)):
        config = shrunk(model_type)
        head_dim = config.hidden_size // config.num_attention_heads
        assert sum(config.rope_parameters["mrope_section"]) == int(head_dim * partial) // 2


def test_a_derived_stage_count_follows_the_stages():
    backbone = shrunk("mask2former").backbone_config  # Swin: num_layers is len(depths)
    assert backbone.num_layers == len(backbone.depths) == len(backbone.stage_names) - 1
    assert set(backbone.out_features) <= set(backbone.stage_names)


def test_patch_grid_matches_the_flattened_patches():
    model, batch = _batch("exaone4_5_vision")
    assert batch["hidden_states"].shape[0] == int(batch["grid_thw"].prod(dim=1).sum())


def test_boolean_padding_masks_mark_nothing_as_padding():
    _, batch = _batch("gemma3n_audio")  # True = padding, as nn.MultiheadAttention's
    assert batch["audio_mel_mask"].dtype == torch.bool and not batch["audio_mel_mask"].any()


@pytest.mark.parametrize(
    ("model_type", "layout"),
    [("dac", "channels"), ("audio-spectrogram-transformer", "spectrogram"), ("wav2vec2", "wave")],
)
def test_waveforms_follow_the_extractor(model_type, layout):
    from torch_neuronx.testing.model_zoo import hf_inputs

    config = shrunk(model_type)
    values = hf_inputs._waveform_or_spectrogram(config, torch.Generator().manual_seed(0))
    if layout == "channels":
        expected = (2, 1, 1600)  # DAC: (batch, channels, samples)
    elif layout == "spectrogram":
        expected = (2, config.max_length, config.num_mel_bins)  # AST: (batch, frames, bins)
    else:
        expected = (2, 1600)
    assert tuple(values.shape) == expected


class _Diverges(torch.nn.Module):
    """Finite at the first step, NaN after the update (a reference that diverges)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return (x * self.w).log() if self.calls > 1 else x * self.w  # log of a negative


def test_a_reference_that_is_not_finite_is_outside_the_sweep():
    def build():
        torch.manual_seed(0)
        return _Diverges(), {"x": -torch.ones(3)}

    (outcome,) = train_check.check("nan", build, modes=("eager",), device="cpu")
    assert outcome.status == "cpu_error"
    assert outcome.detail.startswith("CPU reference not finite: step 1"), outcome.detail


def test_random_draws_are_off_or_shared():
    assert shrunk("phimoe").router_jitter_noise == 0.0  # a router's jitter noise
    vits = shrunk("vits")  # a sampler's noise, drawn partly on CPU and partly on the device
    assert vits.noise_scale == 0.0 == vits.noise_scale_duration
    _, batch = _batch("vit_mae")  # ViTMAE's masking noise: drawn once, given to both devices
    assert batch["noise"].shape == (2, batch["pixel_values"].shape[-1] ** 2 // 16**2)


def test_a_block_count_that_aliases_the_layer_count_follows_it():
    # xLSTM derives `num_blocks` (its block stack) from `num_hidden_layers` when unset; the
    # default's copy fixed 32 blocks, a 29,037-node graph that timed out compiled
    config = shrunk("xlstm")
    assert config.num_blocks == config.num_hidden_layers == 2
    eomt = shrunk("eomt")  # a block count of its own (the query blocks), not an alias
    assert eomt.num_blocks == 4 and eomt.num_hidden_layers == 2


def test_scaling_coefficients_and_linear_attention_are_shrunk():
    vision = shrunk("align").vision_config  # EfficientNet-B7: 55 blocks at depth 3.1
    assert vision.depth_coefficient == 1.0 and vision.width_coefficient == 2.0
    config = shrunk("bailing_hybrid")
    assert config.num_experts_per_token <= config.num_experts
    assert config.linear_num_heads * config.linear_head_dim == config.hidden_size


def test_compiled_runs_are_judged_by_cpu_inductor_last(monkeypatch):
    model, batch = _tiny_wrapped()
    ref = train_check._train(model, lambda **b: model(**b), batch)
    off = (ref[0], [{k: v * 1.01 for k, v in g.items()} for g in ref[1]])  # 1% off CPU eager
    outcome = train_check.Outcome("tiny", "compiled", "fail", "step 0 grad", dev=off)
    monkeypatch.setattr(train_check, "_train_cpu_inductor", lambda *a: (off, None))
    train_check._judge_by_cpu_inductor(outcome, None, None, None)
    assert outcome.status == "pass" and outcome.detail.startswith("passed against CPU Inductor")
    outcome = train_check.Outcome("tiny", "compiled", "fail", "step 0 grad", dev=off)
    monkeypatch.setattr(train_check, "_train_cpu_inductor", lambda *a: (ref, None))
    train_check._judge_by_cpu_inductor(outcome, None, None, None)
    assert outcome.status == "fail" and "against CPU Inductor: step 0 grad" in outcome.detail


class _UntraceableEverywhere(torch.nn.Module):
    """hf:udop's pattern (modeling_udop.combine_image_text_embeddings): a mask indexed by
    tuples of 0-dim tensors, which Dynamo's fake tensors cannot read on any device."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, points):
        mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        ind = torch.stack([torch.zeros_like(points), points], -1).to(x.device)
        rows, cols = zip(*ind)
        mask[rows, cols] = False
        return self.lin(x) * mask[..., None]


def _untraceable():
    torch.manual_seed(0)
    return _UntraceableEverywhere(), {"x": torch.randn(1, 3, 4), "points": torch.tensor([0, 2])}


def test_a_compile_error_cpu_inductor_shares_is_cpu_error():
    (outcome,) = train_check.check("untraceable", _untraceable, modes=("compiled",))
    assert outcome.status == "cpu_error", outcome.detail
    assert outcome.detail.startswith("torch.compile on CPU (Inductor) raises the same: ")
    assert "on neuron: " in outcome.detail and outcome.to_json()["status"] == "cpu_error"
    # the model's line (Dynamo names it under "from user code:"), not Dynamo's own frames
    assert "tests/models/test_model_zoo_rules.py:" in outcome.detail, outcome.detail


def test_a_compile_error_is_cpu_inductors_only_when_the_whole_message_matches(monkeypatch):
    # Dynamo's first line is generic; the op's own error follows it
    head = "RuntimeError when making fake tensor call\n  got "
    for cpu_body, status in [
        ("IndexError('x') for FakeTensor(..., size=(2,))", "cpu_error"),
        ("IndexError('y') for FakeTensor(..., size=(2,))", "fail"),
    ]:
        dev = RuntimeError(
            head + "IndexError('x') for FakeTensor(..., device='neuron:0', size=(2,))"
        )
        outcome = train_check.Outcome("m", "compiled", "fail", "on neuron", error=dev)
        cpu = RuntimeError(head + cpu_body)
        monkeypatch.setattr(train_check, "_train_cpu_inductor", lambda *a, c=cpu: (None, c))
        train_check._judge_error_by_cpu_inductor(outcome, None, None, None)
        assert outcome.status == status, outcome.detail


def test_a_compile_error_of_the_device_alone_stays_a_failure(monkeypatch):
    real = train_check._device_train

    def broken(mode, *args, **kwargs):
        if mode == "compiled":
            raise RuntimeError("the backend broke")
        return real(mode, *args, **kwargs)

    monkeypatch.setattr(train_check, "_device_train", broken)
    (outcome,) = train_check.check("tiny", _tiny_wrapped, modes=("compiled",))
    assert outcome.status == "fail"
    assert outcome.detail.startswith("RuntimeError: the backend broke")
    assert outcome.detail.endswith("; CPU Inductor compiles and runs it"), outcome.detail


def _tiny_wrapped():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            return self.inner(x)

    return Wrapped(), {"x": torch.randn(3, 8)}


def test_boxes_have_ordered_corners():
    from torch_neuronx.testing.model_zoo import hf_inputs

    config = shrunk("layoutlm")  # widths and heights index its position tables
    boxes = hf_inputs._boxes(config, torch.Generator().manual_seed(0))
    assert boxes.dtype == torch.long and boxes.shape == (2, 16, 4)
    assert (boxes[..., 2] >= boxes[..., 0]).all() and (boxes[..., 3] >= boxes[..., 1]).all()
    assert shrunk("bros").dim_bbox_projection == 16  # its head dim, as in the default


def test_a_base_model_without_a_forward_trains_its_first_sub_model():
    # BarkModel only generates, through its sub-models (it was "_forward_unimplemented()")
    model, config, inputs = batch("bark")
    assert type(model).__name__ == "BarkSemanticModel" and config is model.config
    runs(model.train(), inputs)


def test_tables_a_config_derives_follow_its_shrunk_fields():
    # FastSpeech 2 builds encoder_config/decoder_config from its fields in __post_init__: the
    # default's tables passed back undid the shrink (4 conformer layers at dropout 0.2)
    config = shrunk("fastspeech2_conformer")
    assert config.encoder_config["layers"] == config.encoder_layers == 2
    assert config.encoder_config["dropout_rate"] == 0.0
    assert config.decoder_config["attention_dropout_rate"] == 0.0


def test_values_a_config_derives_follow_its_shrunk_fields():
    # not only tables: LW-DETR derives its projector's widths and level count, Zamba2 its
    # attention and Mamba head sizes, ViT backbones their stage names; passed back from the
    # default they undid the shrink (a 256-wide projector before a 64-wide encoder; Zamba2's
    # 640-wide Mamba heads in a 64-wide model: "shape [2, 16, 8, 640] is invalid")
    lw_detr = shrunk("lw_detr")
    assert lw_detr.projector_scale_factors == [1.0]  # UNSET_VALUES: the default lists none
    assert lw_detr.num_feature_levels == 1
    assert lw_detr.projector_in_channels == [lw_detr.d_model]
    assert lw_detr.projector_out_channels == lw_detr.d_model
    zamba2 = shrunk("zamba2")
    assert zamba2.mamba_headdim * zamba2.n_mamba_heads == zamba2.mamba_expand * zamba2.hidden_size
    assert zamba2.attention_head_dim * zamba2.num_attention_heads == zamba2.attention_hidden_size
    dinov2 = shrunk("dinov2")
    assert len(dinov2.stage_names) == dinov2.num_hidden_layers + 1


def test_a_mixture_of_experts_stack_keeps_a_sparse_layer():
    # Switch Transformers derives every how-many-th layer is sparse from the sparse-layer
    # count: 3 of a shrunk 2 gave a step of 0 (no sparse layer); 1 of 2 gives every 2nd
    config = shrunk("switch_transformers")
    assert config.num_sparse_encoder_layers == config.num_sparse_decoder_layers == 1
    assert config.encoder_sparse_step == config.num_layers == 2


def test_a_model_that_trains_on_its_targets_is_given_them():
    # "All labels must be provided to run in training mode" (FastSpeech 2's variance adaptor)
    model, _, inputs = batch("fastspeech2_conformer")
    frames = inputs["duration_labels"].sum(1)
    assert (frames == inputs["spectrogram_labels"].shape[1]).all()
    runs(model.train(), inputs)


def test_a_hybrid_left_without_layer_kinds_gets_one_of_each():
    # LFM2-MoE indexes config.layer_types, which its default leaves None
    config = shrunk("lfm2_moe")
    assert config.layer_types == ["conv", "full_attention"] and config.num_hidden_layers == 2


def test_a_window_the_model_needs_is_set_where_the_default_leaves_it_unset():
    # Step3p7's text model builds a sliding-window mask for every config; its default has none
    config = shrunk("step3p7")
    assert config.text_config.sliding_window == 8


class _Unstable(torch.nn.Module):
    """Runs forward, but its gradients overflow (as D-FINE's stem at 32 px gives 1e9
    gradients at step 0 and NaN at step 1)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((4,), 1e-20))

    def forward(self, x):
        return x / self.w


def test_the_image_side_search_wants_a_model_that_trains_to_finite_values():
    from torch_neuronx.testing.model_zoo import hf_models

    batch = {"x": torch.ones(2, 4)}
    assert not hf_models._runs(_Unstable(), batch)  # its forward alone runs
    model, _ = _tiny_wrapped()
    assert hf_models._runs(model, {"x": torch.randn(3, 8)})


class _MaskedLogits(torch.nn.Module):
    """Logits padded with -inf to a fixed width (Grounding DINO's text logits)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        logits = self.lin(x)
        pad = torch.full((x.shape[0], 3), float("-inf"), device=x.device)
        return torch.cat([logits, pad], dim=1)


def test_logits_masked_to_minus_infinity_leave_the_loss_finite():
    def build():
        torch.manual_seed(0)
        return _MaskedLogits(), {"x": torch.randn(3, 8)}

    (outcome,) = train_check.check("test:masked_logits", build, modes=("eager",))
    assert outcome.status == "pass", outcome.detail  # was cpu_error: loss NaN (-inf x 0)


def test_vision_layers_a_sibling_reads_follow_the_shrunk_tower():
    # Molmo2's adapter reads vision layers [24, 18] of 25, and its config checks they exist
    config = shrunk("molmo2")
    layers = config.vision_config.num_hidden_layers
    assert all(0 <= i < layers for i in config.adapter_config.vision_feature_layer)


def test_modality_adapters_project_to_the_shrunk_text_width():
    # Dots3 Note's config checks its vision and audio adapters output the text width (5120)
    config = shrunk("dots3_note")
    width = config.text_config.hidden_size
    assert config.vision_config.adapter_out_dim == width == config.audio_config.adapter_out_dim


def test_a_robot_policy_is_given_its_cameras_and_prompt():
    # PI0's action expert reads the cache its VLM builds from the images and the prompt, both
    # optional in the forward: with the actions alone the cache was None (cpu_error)
    model, config, inputs = batch("pi0")
    pixels, cameras = inputs["pixel_values"], inputs["pixel_attention_mask"]
    assert pixels.ndim == 5 and cameras.shape == pixels.shape[:2] and cameras.all()
    vision = config.vlm_config.vision_config
    image_tokens = (inputs["input_ids"] == config.vlm_config.image_token_id).sum(1)
    assert image_tokens.tolist() == [(vision.image_size // vision.patch_size) ** 2] * len(pixels)
    runs(model, inputs)
