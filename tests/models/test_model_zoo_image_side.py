"""The model zoo's image side (issue 26): a 32 px image is too small for a model whose strides
and pooling leave nothing of it (MobileViTv2's output stride 32 before a 2 x 2 unfold, PP-OCR's
recognizers, made for 48 px text lines), so the builder takes the smallest side of
`hf_shrink.IMAGE_SIDES` at which the model's CPU forward runs, no larger than the default
image; a model that runs at 32 px keeps it."""

from __future__ import annotations

from zoo_support import needs_transformers

from torch_neuronx.testing.model_zoo import zoo

pytestmark = needs_transformers


def _built(model_type: str):
    zoo.torchvision_shim.install()
    from torch_neuronx.testing.model_zoo import hf_models

    return hf_models.build_with_inputs(model_type)


def test_a_model_strided_past_a_32_px_image_gets_a_larger_one():
    _, config, batch = _built("mobilevitv2")  # 256 px by default, output stride 32
    assert config.image_size == batch["pixel_values"].shape[-1] == 64


def test_a_model_without_an_image_size_gets_a_larger_image():
    _, _, batch = _built("pp_ocrv5_server_rec")  # height strided by 16, then pooled by 3
    assert batch["pixel_values"].shape[-2] >= 48


def test_a_model_that_runs_at_32_px_keeps_it():
    _, config, batch = _built("vit")
    assert config.image_size == batch["pixel_values"].shape[-1] == 32


def test_the_side_is_restored_after_the_build():
    from torch_neuronx.testing.model_zoo import hf_shrink

    _built("mobilevitv2")
    assert hf_shrink.SIZES["image_size"] == hf_shrink.IMAGE_SIDES[0] == 32
