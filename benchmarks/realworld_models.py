"""The pinned model catalog of the real-world calibration, and how to build each model tiny.

Every model is built from its config class with random weights (no download): transformers
configs are shrunk to a couple of 32-wide layers, timm models use `pretrained=False`, and
the diffusers blocks get small channel counts. `build(name)` returns the module in eval
mode and a function that makes inputs for a batch size and a sequence length (or image
side), so the sweep can call it again with other sizes to count recompiles.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

# Pinned: the versions the committed results were measured with (pyproject extra `realworld`).
PINNED = {"transformers": "5.23.0", "timm": "1.0.31", "diffusers": "0.42.1"}

# transformers model types (AutoConfig.for_model keys), text, vision and audio.
TRANSFORMERS_MODELS = (
    "bert", "roberta", "distilbert", "albert", "electra", "xlm-roberta", "camembert",
    "deberta", "deberta-v2", "mobilebert", "squeezebert", "convbert", "roformer", "ernie",
    "mpnet", "layoutlm", "megatron-bert", "xlnet", "big_bird", "longformer",
    "gpt2", "gpt_neo", "gptj", "gpt_neox", "gpt_bigcode", "codegen", "opt", "bloom", "xglm",
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
    "gemma2", "phi", "phi3", "falcon", "mpt", "stablelm", "starcoder2", "olmo", "olmo2",
    "cohere", "granite", "persimmon", "nemotron", "glm", "helium", "biogpt", "ctrl",
    "t5", "bart", "mbart", "pegasus", "marian", "blenderbot-small", "m2m_100",
    "vit", "deit", "beit", "swin", "convnext", "resnet", "regnet", "mobilenet_v2",
    "dinov2", "segformer", "levit", "poolformer",
    "wav2vec2", "hubert",
    # older or unusual architectures, more likely to hold graph breaks
    "reformer", "canine", "rwkv", "mamba", "led", "bigbird_pegasus", "perceiver", "clip_text_model",
    "mra", "nystromformer", "fnet", "ibert",
)

TIMM_MODELS = (
    "resnet18", "resnet50d", "efficientnet_b0", "mobilenetv3_small_100", "convnext_atto",
    "vit_tiny_patch16_224", "deit_tiny_patch16_224", "swin_tiny_patch4_window7_224",
    "regnetx_002", "densenet121", "mixer_s16_224", "levit_128s", "coat_lite_tiny",
    "beit_base_patch16_224", "efficientformer_l1", "ghostnet_100", "rexnet_100",
    "poolformer_s12", "mobilevit_xxs", "fastvit_t8",
    "crossvit_tiny_240", "xcit_nano_12_p16_224", "twins_svt_small", "nest_tiny", "tnt_s_patch16_224",
)

DIFFUSERS_MODELS = ("UNet2DModel", "UNet2DConditionModel", "AutoencoderKL", "DiTTransformer2DModel")

ALL_MODELS = (
    tuple(f"transformers/{name}" for name in TRANSFORMERS_MODELS)
    + tuple(f"timm/{name}" for name in TIMM_MODELS)
    + tuple(f"diffusers/{name}" for name in DIFFUSERS_MODELS)
)

# Small sizes for every spelling transformers configs use; only keys a config has are set.
_TINY = {
    "hidden_size": 32, "d_model": 32, "n_embd": 32, "embed_dim": 32, "dim": 32,
    "num_hidden_layers": 2, "n_layer": 2, "n_layers": 2, "num_layers": 2,
    "encoder_layers": 2, "decoder_layers": 2,
    "num_attention_heads": 4, "n_head": 4, "n_heads": 4, "num_heads": 4,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "num_key_value_heads": 2, "multi_query_group_num": 2,
    "intermediate_size": 64, "ffn_dim": 64, "n_inner": 64, "d_ff": 64, "d_inner": 64,
    "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "dim_feedforward": 64,
    "d_kv": 8, "head_dim": 8, "embedding_size": 32,
    "num_local_experts": 4, "num_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
    "vocab_size": 256, "max_position_embeddings": 128, "n_positions": 128,
    "image_size": 32, "patch_size": 8,
}
_VISION_TINY = {
    # CNN / hierarchical vision configs take per-stage lists.
    "hidden_sizes": [16, 32], "depths": [1, 1], "num_channels": 3,
}


def _shrink_transformers_config(config: Any) -> Any:
    """Set every size field `config` has to a tiny value, keeping the rest as the class defaults."""
    for key, value in _TINY.items():
        if hasattr(config, key) and isinstance(getattr(config, key), int):
            try:
                setattr(config, key, value)
            except (AttributeError, NotImplementedError):  # derived (read-only) fields
                pass
    for key, value in _VISION_TINY.items():
        current = getattr(config, key, None)
        if isinstance(current, list) and isinstance(value, list):
            setattr(config, key, value[: len(current)] if len(current) <= len(value) else value)
    return config


def _transformers_model(model_type: str):
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(model_type)
    _shrink_transformers_config(config)
    vocab_size = getattr(config, "vocab_size", None)
    if getattr(config, "pad_token_id", None) is not None and vocab_size and config.pad_token_id >= vocab_size:
        config.pad_token_id = config.vocab_size - 1
    if model_type in ("gptj", "codegen"):
        config.rotary_dim = 4
    if model_type == "nemotron":
        config.head_dim = 8
    if model_type in ("swin",):
        config.embed_dim, config.depths, config.num_heads, config.window_size = 16, [1, 1], [2, 2], 2
    if model_type in ("convnext", "regnet", "resnet", "poolformer"):
        config.depths = [1, 1]
        config.hidden_sizes = [16, 32]
        if hasattr(config, "num_stages"):
            config.num_stages = 2
    if model_type == "segformer":
        config.num_encoder_blocks, config.depths, config.sr_ratios = 2, [1, 1], [2, 1]
        config.hidden_sizes, config.num_attention_heads = [16, 32], [1, 2]
        config.patch_sizes, config.strides, config.mlp_ratios = [7, 3], [4, 2], [2, 2]
    if model_type == "levit":
        config.hidden_sizes, config.num_attention_heads, config.depths = [16, 32, 48], [1, 2, 3], [1, 1, 1]
        config.key_dim, config.patch_size, config.image_size = [8, 8, 8], 16, 64
    if model_type in ("wav2vec2", "hubert"):
        config.conv_dim, config.conv_stride, config.conv_kernel = (16, 16), (5, 2), (10, 3)
        config.num_feat_extract_layers = 2
        config.num_conv_pos_embeddings, config.num_conv_pos_embedding_groups = 16, 2
    if model_type == "mobilenet_v2":
        config.depth_multiplier = 0.35
    model = transformers.AutoModel.from_config(config).eval()
    main_input = getattr(model, "main_input_name", "input_ids")
    vocab = getattr(config, "vocab_size", 256) or 256
    image = getattr(config, "image_size", 32)
    image = image if isinstance(image, int) else 32

    def inputs(batch: int, length: int) -> dict:
        generator = torch.Generator().manual_seed(batch * 1000 + length)
        if main_input == "pixel_values":
            side = image if model_type in ("vit", "deit", "beit", "dinov2", "levit") else 16 + length
            return {"pixel_values": torch.rand(batch, 3, side, side, generator=generator)}
        if main_input == "input_values":
            return {"input_values": torch.rand(batch, 200 + 10 * length, generator=generator)}
        ids = torch.randint(3, min(vocab, 200), (batch, length), generator=generator)
        kwargs = {"input_ids": ids, "attention_mask": torch.ones(batch, length, dtype=torch.long)}
        if getattr(config, "is_encoder_decoder", False):
            kwargs["decoder_input_ids"] = ids[:, : max(1, length // 2)]
        return kwargs

    return model, inputs


def _timm_model(name: str):
    import torch

    ensure_torchvision_importable()
    import timm

    model = timm.create_model(name, pretrained=False, num_classes=10).eval()
    fixed_side = name.startswith(("vit", "deit", "swin", "mixer", "beit", "levit", "coat", "efficientformer",
                                  "mobilevit", "fastvit", "xcit", "twins", "nest", "tnt"))

    def inputs(batch: int, length: int) -> dict:
        generator = torch.Generator().manual_seed(batch * 1000 + length)
        side = 224 if fixed_side else 32 + 2 * length
        if name.startswith("mobilevit") or name.startswith("crossvit"):
            side = 256 if name.startswith("mobilevit") else 240
        return {"x": torch.rand(batch, 3, side, side, generator=generator)}

    return model, inputs


def _diffusers_model(name: str):
    import diffusers
    import torch

    if name == "UNet2DModel":
        model = diffusers.UNet2DModel(
            sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
            block_out_channels=(32, 64), norm_num_groups=8,
            down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        )
    elif name == "UNet2DConditionModel":
        model = diffusers.UNet2DConditionModel(
            sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
            block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=32, attention_head_dim=8,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        )
    elif name == "AutoencoderKL":
        model = diffusers.AutoencoderKL(
            in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64), norm_num_groups=8,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        )
    elif name == "DiTTransformer2DModel":
        model = diffusers.DiTTransformer2DModel(
            num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4, num_layers=2,
            sample_size=8, patch_size=2, norm_num_groups=8, num_embeds_ada_norm=10,
        )
    else:
        raise KeyError(name)
    model = model.eval()

    def inputs(batch: int, length: int) -> dict:
        generator = torch.Generator().manual_seed(batch * 1000 + length)
        side = 8 + (length // 8) * 8
        if name == "UNet2DModel":
            return {"sample": torch.rand(batch, 3, side, side, generator=generator), "timestep": 10}
        if name == "UNet2DConditionModel":
            return {
                "sample": torch.rand(batch, 4, side, side, generator=generator), "timestep": 10,
                "encoder_hidden_states": torch.rand(batch, length, 32, generator=generator),
            }
        if name == "AutoencoderKL":
            return {"sample": torch.rand(batch, 3, side, side, generator=generator)}
        return {
            "hidden_states": torch.rand(batch, 4, 8, 8, generator=generator),
            "timestep": torch.tensor([10] * batch), "class_labels": torch.tensor([1] * batch),
        }

    return model, inputs


def build(name: str) -> tuple[Any, Callable[[int, int], dict]]:
    """The tiny model called `name` ("library/model") in eval mode, and its input maker."""
    library, _, model_name = name.partition("/")
    ensure_torchvision_importable()  # transformers and timm both import torchvision when installed
    builders = {"transformers": _transformers_model, "timm": _timm_model, "diffusers": _diffusers_model}
    if library not in builders:
        raise KeyError(f"unknown library in {name!r}")
    return builders[library](model_name)


def library_root(name: str) -> str:
    """The installed package folder of the model's library: files inside it are 'library code'."""
    library = name.partition("/")[0]
    ensure_torchvision_importable()
    module = __import__(library)
    return os.path.dirname(os.path.abspath(module.__file__))


_torchvision_schema_library = None


def ensure_torchvision_importable() -> None:
    """Let timm import torchvision's pure-Python parts where torchvision's C ops cannot load.

    PyPI ships only CUDA builds of torchvision for Linux; beside a CPU-only torch its `_C`
    library fails to load, and torchvision 0.28 then crashes at import while registering
    fake kernels for `torchvision::nms`/`qnms`. timm needs torchvision only for pure-Python
    helpers (FrozenBatchNorm2d, transforms), so when the import fails we declare the two op
    schemas (no kernels: calling nms would still fail loudly) and import again. None of the
    measured models calls a torchvision op.
    """
    global _torchvision_schema_library
    try:
        import torchvision  # noqa: F401
        return
    except RuntimeError:
        pass
    import torch

    for module_name in [key for key in sys.modules if key == "torchvision" or key.startswith("torchvision.")]:
        del sys.modules[module_name]
    library = torch.library.Library("torchvision", "DEF")
    library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    library.define("qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor")
    _torchvision_schema_library = library
    import torchvision  # noqa: F401
