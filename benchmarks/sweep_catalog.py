"""What the architecture sweep measures: every buildable model of transformers, timm and diffusers.

The catalog is found, not pinned: transformers' auto mappings (every model type with a base
model, plus its main task heads), `timm.list_models()` and the diffusers model classes with
blocks and attention processors. Each model is built tiny from its own defaults:

- transformers: the config class's defaults, with every size field shrunk (widths to 32,
  layers to 2, experts to 4, vocabularies to 256 unless a token id needs more), sub-configs
  (text, vision, audio, backbone) shrunk the same way; when a tiny config does not build or
  run, a milder one is tried (layers only), then the defaults with layers cut. Inputs are
  chosen from the forward signature and `main_input_name`, trying layouts until one runs
  eagerly; what fails is recorded with the reason.
- timm: `pretrained=False`, a small input (`img_size=64` where the model takes it, else the
  model's default size for fixed-size models and 64 for convolutional ones).
- diffusers: UNets, transformers, VAEs and their blocks with small channel counts, plus
  the UNet with each attention processor the library offers for CPU.

A *unit* is one architecture ("transformers/bert", "timm/resnet18", "diffusers/AutoencoderKL");
`variants(unit)` gives the runs the sweep makes of it: the base model and the main task
heads, in `eval()` and `train()`, with and without labels, and `generate()` with a cache for
decoders. Everything here is CPU and builds without any download.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


from realworld_models import ensure_torchvision_importable

# Largest model (parameters, counted on the meta device) the sweep builds for real.
MAX_PARAMETERS = 150_000_000


@dataclass
class Variant:
    """One run of one architecture: which model class, which mode, which call."""

    unit: str
    name: str  # e.g. "base/eval", "causal-lm/train+labels", "causal-lm/generate"
    mode: str  # "eval" | "train"
    build: Callable[[], tuple[Any, Callable[[int, int], dict]]] = field(repr=False)
    generate: bool = False
    labels: bool = False
    # Three calls (static, then two new sizes: automatic dynamic, then recompiles that
    # marking the dims dynamic does not avoid) or only the first, static one.
    recompiles: bool = True
    config_level: Optional[int] = None
    inputs_kind: Optional[str] = None


class Skip(Exception):
    """An architecture or variant that cannot be built tiny here; the message is the reason."""


# ---------------------------------------------------------------------------------------
# transformers
# ---------------------------------------------------------------------------------------

# Task heads, in the order a "main" head is chosen. (mapping, short name, label kind)
LM_HEADS = (
    ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "seq2seq-lm", "decoder-tokens"),
    ("MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "speech-seq2seq", "decoder-tokens"),
    ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "causal-lm", "tokens"),
    ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "image-text-to-text", "tokens"),
    ("MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", "multimodal-lm", "tokens"),
    ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "masked-lm", "tokens"),
    ("MODEL_FOR_CTC_MAPPING_NAMES", "ctc", "ctc"),
)
TASK_HEADS = (
    ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "seq-cls", "class"),
    ("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "image-cls", "class"),
    ("MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "audio-cls", "class"),
    ("MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "token-cls", "token-class"),
    ("MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES", "qa", "span"),
    ("MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES", "semantic-seg", "pixels"),
    ("MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES", "depth", None),
    ("MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES", "detection", None),
    ("MODEL_FOR_TIME_SERIES_PREDICTION_MAPPING_NAMES", "ts-prediction", None),
)
GENERATING_HEADS = ("causal-lm", "seq2seq-lm", "speech-seq2seq")

# Tiny values for the size fields configs spell in many ways; a field is only set when the
# class has it and its default is an int (so derived and optional fields keep deriving).
_WIDTHS = ("hidden_size", "d_model", "n_embd", "embed_dim", "dim", "n_embed", "model_dim", "hidden_dim",
           "decoder_hidden_size", "text_hidden_size", "projection_dim", "out_hidden_size", "projector_hidden_size",
           "encoder_hidden_dim", "d_embed", "word_embed_proj_dim", "embedding_dim", "output_hidden_size")
_LAYERS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "encoder_layers", "decoder_layers",
           "num_decoder_layers", "num_encoder_layers", "depth", "text_layers", "vision_layers", "num_blocks",
           "decoder_num_hidden_layers", "num_adapter_layers", "num_mtp_layers", "n_layers_decoder")
_HEADS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
          "decoder_attention_heads", "decoder_num_attention_heads", "index_n_heads")
_FFN = ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "d_inner", "encoder_ffn_dim", "decoder_ffn_dim",
        "dim_feedforward", "decoder_intermediate_size", "shared_intermediate_size", "encoder_ffn_dim")
_TINY_INT = {
    **{name: 32 for name in _WIDTHS}, **{name: 2 for name in _LAYERS}, **{name: 4 for name in _HEADS},
    **{name: 64 for name in _FFN},
    "num_key_value_heads": 2, "multi_query_group_num": 2, "num_kv_heads": 2,
    "head_dim": 8, "d_kv": 8, "attention_head_dim": 8, "index_head_dim": 8, "embedding_size": 32,
    "num_local_experts": 4, "num_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_topk": 2,
    "n_group": 1, "topk_group": 1, "n_shared_experts": 1, "num_shared_experts": 1, "first_k_dense_replace": 1,
    "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32, "expert_intermediate_size": 32,
    "kv_lora_rank": 16, "q_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8,
    "max_position_embeddings": 512, "n_positions": 512, "max_source_positions": 32, "max_target_positions": 64,
    "image_size": 32, "patch_size": 8, "window_size": 4, "num_queries": 10,
    "linear_key_head_dim": 8, "linear_value_head_dim": 8, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
    "mamba_d_state": 8, "mamba_n_heads": 4, "mamba_d_head": 8, "mamba_chunk_size": 16, "state_size": 8,
    "time_step_rank": 8, "conv_kernel": 4,
}
_MAX_LAYERS_MILD = 2  # the milder fallback only cuts layers


def transformers_model_types() -> list[str]:
    """Every transformers model type that has a base model class, sorted."""
    from transformers.models.auto import modeling_auto

    return sorted(modeling_auto.MODEL_MAPPING_NAMES)


def _config_fields(config_class) -> dict[str, Any]:
    """Field name -> class default of a config class (dataclass configs and classic ones)."""
    try:
        return {f.name: f.default for f in dataclasses.fields(config_class)}
    except TypeError:
        parameters = inspect.signature(config_class.__init__).parameters
        return {name: p.default for name, p in parameters.items() if name not in ("self", "kwargs", "args")}


def _token_ids(config) -> list[int]:
    ids = []
    for key, value in vars(config).items():
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if key.endswith(("_token_id", "_token_index", "_id")) and is_int:
            ids.append(value)
        elif key.endswith("_token_id") and isinstance(value, list):
            ids.extend(v for v in value if isinstance(v, int))
    return ids


def _shrunk_list(name: str, value: list, siblings: dict) -> Optional[list]:
    """Tiny per-stage lists (depths, widths, heads) of the same length as the default."""
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    if name in ("depths", "num_layers", "layers", "stage_depths", "blocks_per_stage", "encoder_depths"):
        return [1] * len(value)
    if name in ("hidden_sizes", "embed_dims", "embed_dim", "dims", "channels", "widths", "embedding_sizes"):
        heads = siblings.get("num_heads") or siblings.get("num_attention_heads") or siblings.get("heads")
        if isinstance(heads, list) and len(heads) == len(value):
            return [8 * max(1, int(h)) for h in heads]
        return [16 * (i + 1) for i in range(len(value))]
    return None


def shrink_config(config, level: int):
    """A new config of the same class: level 0 tiny, 1 layers (and vocab) only, 2 defaults.

    Starts from the class defaults plus whatever the instance holds that a fresh default
    instance does not (a parent config's choices for its sub-config, e.g. DETR's timm
    backbone name), so derived fields (head_dim, layer_types) derive again from the new sizes.
    """
    from transformers import PreTrainedConfig

    config_class = type(config)
    defaults = _config_fields(config_class)
    current = vars(config)
    kwargs: dict[str, Any] = _customised(config, defaults)
    for name in defaults:
        value = current.get(name, defaults[name])
        if isinstance(value, PreTrainedConfig):
            kwargs[name] = shrink_config(value, level)
            continue
        if level >= 2 or isinstance(value, bool):
            continue
        if isinstance(value, int):
            if level == 1 and name not in _LAYERS:
                continue
            tiny = _TINY_INT.get(name)
            if tiny is not None and value > tiny:
                kwargs[name] = tiny
        elif isinstance(value, list) and level == 0:
            tiny_list = _shrunk_list(name, value, current)
            if tiny_list is not None:
                kwargs[name] = tiny_list
    if level < 2:
        if "conv_dim" in defaults and isinstance(current.get("conv_dim"), (list, tuple)):
            kwargs.update(conv_dim=[16, 16], conv_stride=[5, 2], conv_kernel=[10, 3], num_feat_extract_layers=2)
            if "num_conv_pos_embeddings" in defaults:
                kwargs.update(num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)
        vocab = current.get("vocab_size")
        if isinstance(vocab, int) and vocab > 256:
            needed = max([255] + [i for i in _token_ids(config) if i < vocab]) + 1
            kwargs["vocab_size"] = max(256, needed)
        _compress_layer_types(current, defaults, kwargs)
    if level >= 1 and all(name not in kwargs for name in _LAYERS):
        for name in _LAYERS:
            if isinstance(current.get(name), int) and current[name] > _MAX_LAYERS_MILD:
                kwargs[name] = _MAX_LAYERS_MILD
    for name in list(kwargs):
        if name.startswith("_") or name not in defaults:
            kwargs.pop(name)
    if level == 0:
        _consistent_sizes(defaults, current, kwargs)
    return config_class(**kwargs)


def _customised(config, defaults: dict) -> dict:
    """Fields where `config` differs from a fresh default instance of its class."""
    try:
        fresh = vars(type(config)())
    except Exception:
        return {}
    found = {}
    for name in defaults:
        value = vars(config).get(name)
        if name in fresh and value != fresh[name] and not hasattr(value, "to_dict"):
            found[name] = value
    return found


def _compress_layer_types(current: dict, defaults: dict, kwargs: dict) -> None:
    """Fewer layers, keeping one layer of each kind a per-layer list names (hybrid models).

    Lists such as `layer_types` / `mlp_layer_types` have one entry per layer; cutting to the
    first two layers could keep only linear-attention layers of a hybrid. Keep the first
    layer of every distinct combination instead (at least two layers).
    """
    layers_field = next((n for n in _LAYERS if isinstance(current.get(n), int) and n in defaults), None)
    if layers_field is None:
        return
    count = current[layers_field]
    lists = [n for n, v in current.items() if n in defaults and isinstance(v, list) and len(v) == count > 2
             and all(isinstance(x, (str, int, bool)) or x is None for x in v)]
    if not lists:
        return
    first: dict[tuple, int] = {}
    for index in range(count):
        first.setdefault(tuple(current[n][index] for n in lists), index)
    keep = sorted(first.values())
    if len(keep) < 2:
        keep = [0, 1]
    for name in lists:
        kwargs[name] = [current[name][i] for i in keep]
    kwargs[layers_field] = len(keep)


def _consistent_sizes(defaults: dict, current: dict, kwargs: dict) -> None:
    """Keep the equalities configs validate true after shrinking (hidden = heads * head_dim, ...)."""
    if "head_dim" in kwargs and "hidden_size" in kwargs and "num_attention_heads" in kwargs:
        kwargs["hidden_size"] = kwargs["num_attention_heads"] * kwargs["head_dim"]
    if "num_key_value_heads" in kwargs and current.get("num_key_value_heads") == current.get("num_attention_heads"):
        kwargs["num_key_value_heads"] = kwargs.get("num_attention_heads", kwargs["num_key_value_heads"])
    hidden = kwargs.get("hidden_size", current.get("hidden_size"))
    for expand_name, heads_name, dim_name in (("expand", "num_heads", "head_dim"),
                                              ("mamba_expand", "mamba_n_heads", "mamba_d_head")):
        expand = kwargs.get(expand_name, current.get(expand_name))
        heads = kwargs.get(heads_name, current.get(heads_name))
        if all(isinstance(v, int) for v in (expand, heads, hidden)) and dim_name in defaults and heads:
            kwargs[dim_name] = max(1, hidden * expand // heads)
    if "attention_types" in defaults and "num_layers" in kwargs:  # GPT-Neo: one global and one local layer
        kwargs["attention_types"] = [[["global", "local"], kwargs["num_layers"] // 2]]
    for name in ("prediction_length", "context_length"):
        if name in defaults and current.get(name) is None:
            kwargs[name] = 8 if name == "prediction_length" else 16


def _uses_mrope(model_class) -> bool:
    """Whether the model's modeling file reads multimodal-rope sections."""
    module = sys.modules.get(model_class.__module__)
    try:
        with open(module.__file__, encoding="utf-8") as handle:
            return "mrope_section" in handle.read()
    except (AttributeError, OSError, TypeError):
        return False


def _parameter_count_on_meta(model_class, config) -> int:
    import torch

    with torch.device("meta"):
        model = model_class(config)
    return sum(p.numel() for p in model.parameters())


def _head_classes(model_type: str) -> list[tuple[str, str, Optional[str]]]:
    """(class name, head short name, label kind) of the base model and the main heads."""
    from transformers.models.auto import modeling_auto

    base = modeling_auto.MODEL_MAPPING_NAMES[model_type]
    base = base[0] if isinstance(base, (tuple, list)) else base
    heads = [(base, "base", None)]
    for group in (LM_HEADS, TASK_HEADS):
        for mapping, short, label_kind in group:
            name = getattr(modeling_auto, mapping).get(model_type)
            if isinstance(name, (tuple, list)):
                name = name[0]
            if name and name != base and name not in [h[0] for h in heads]:
                heads.append((name, short, label_kind))
                break
    return heads


class TransformersArchitecture:
    """One model type: its tiny config (first level that builds and runs) and input maker."""

    def __init__(self, model_type: str):
        ensure_torchvision_importable()
        import transformers
        from transformers.models.auto import configuration_auto

        self.model_type = model_type
        try:
            self.config_class = configuration_auto.CONFIG_MAPPING[model_type]
        except Exception as error:  # a config module that cannot import here (missing optional deps)
            raise Skip(f"config class does not import: {_one_line(error)}") from error
        self.heads = []
        for class_name, short, label_kind in _head_classes(model_type):
            model_class = getattr(transformers, class_name, None)
            if model_class is not None:
                self.heads.append((model_class, short, label_kind))
        if not self.heads:
            raise Skip("no model class importable")
        self.level = None
        self.config = None
        self.errors: list[str] = []
        self.inputs_kind: Optional[str] = None

    def resolve(self) -> None:
        """Find the tiniest config level whose base model builds and runs one eager call."""
        import torch

        try:
            default = self.config_class()
        except Exception as error:
            raise Skip(f"default config does not build: {_one_line(error)}") from error
        base_class = self.heads[0][0]
        for level in (0, 1, 2):
            try:
                config = shrink_config(default, level)
            except Exception as error:
                self.errors.append(f"level {level} config: {_one_line(error)}")
                continue
            _prepare_config(config, mrope=_uses_mrope(base_class))
            try:
                count = _parameter_count_on_meta(base_class, config)
            except Exception as error:
                self.errors.append(f"level {level} build: {_one_line(error)}")
                continue
            if count > MAX_PARAMETERS:
                self.errors.append(f"level {level}: {count / 1e6:.0f}M parameters")
                continue
            try:
                torch.manual_seed(0)
                model = base_class(config).eval()
            except Exception as error:
                self.errors.append(f"level {level} build: {_one_line(error)}")
                continue
            kind = self._find_inputs(model, config)
            if kind is None:
                continue
            self.level, self.config, self.inputs_kind = level, config, kind
            return
        raise Skip("; ".join(self.errors[-3:]) or "no config level builds")

    def _find_inputs(self, model, config) -> Optional[str]:
        import torch

        for kind in _input_kinds(model):
            try:
                inputs = make_transformers_inputs(kind, model, config, 2, 16)
                with torch.no_grad():
                    model(**inputs)
                return kind
            except Exception as error:
                self.errors.append(f"inputs {kind}: {_one_line(error)}")
        return None

    def variants(self, unit: str) -> list[Variant]:
        """base eval/train, each head eval (no labels) and train (with labels), generate for decoders."""
        result = []
        for model_class, short, label_kind in self.heads:
            def build(model_class=model_class, label_kind=label_kind, with_labels=False):
                import torch

                torch.manual_seed(0)
                model = model_class(self.config)
                kind = self.inputs_kind

                def inputs(batch, length):
                    made = make_transformers_inputs(kind, model, self.config, batch, length)
                    if with_labels:
                        made = add_labels(made, label_kind, model, self.config, batch, length)
                    return made

                return model, inputs

            if short == "base":
                result.append(Variant(unit, "base/eval", "eval", build))
                result.append(Variant(unit, "base/train", "train", build, recompiles=False))
                continue
            result.append(Variant(unit, f"{short}/eval", "eval", build, recompiles=False))
            if label_kind:
                result.append(Variant(unit, f"{short}/train+labels", "train",
                                      lambda b=build: b(with_labels=True), labels=True, recompiles=False))
            else:
                result.append(Variant(unit, f"{short}/train", "train", build, recompiles=False))
            if short in GENERATING_HEADS:
                result.append(Variant(unit, f"{short}/generate", "eval", build, generate=True, recompiles=False))
        for variant in result:
            variant.config_level, variant.inputs_kind = self.level, self.inputs_kind
        return result


def _prepare_config(config, mrope: bool = False) -> None:
    """Settings every tiny run needs: a pad token inside the vocabulary, no hub lookups."""
    text = config
    try:
        text = config.get_text_config(decoder=True)
    except Exception:
        pass
    for target in {id(config): config, id(text): text}.values():
        vocab = getattr(target, "vocab_size", None)
        pad = getattr(target, "pad_token_id", None)
        if isinstance(vocab, int) and isinstance(pad, int) and pad >= vocab:
            target.pad_token_id = vocab - 1
        elif isinstance(vocab, int) and hasattr(target, "pad_token_id") and pad is None:
            target.pad_token_id = vocab - 1  # sequence classification needs one; inputs never use it
    for target in _all_configs(config):
        _fill_derived(target, mrope)
    if hasattr(config, "use_timm_backbone"):
        config.use_timm_backbone = False
    if hasattr(config, "use_pretrained_backbone"):
        config.use_pretrained_backbone = False


def _all_configs(config) -> list:
    """`config` and every config nested in it."""
    found, stack = [], [config]
    while stack:
        item = stack.pop()
        if any(item is seen for seen in found):
            continue
        found.append(item)
        stack.extend(v for v in vars(item).values() if hasattr(v, "to_dict") and hasattr(v, "model_type"))
    return found


def _fill_derived(config, mrope: bool) -> None:
    """Fields some default configs leave None although the model needs them; mrope sections.

    Multimodal-rope models split each head's rotary half into (t, h, w) sections whose sum
    must match the shrunk head size; the modeling code falls back to a default of [16, 24,
    24] when the config names none, so `mrope` models always get sections set here.
    """
    try:
        hidden, heads = getattr(config, "hidden_size", None), getattr(config, "num_attention_heads", None)
    except Exception:  # per-layer attributes that refuse a global read
        return
    if isinstance(hidden, int) and isinstance(heads, int) and heads:
        if "head_dim" in vars(config) and config.head_dim is None:
            config.head_dim = hidden // heads
        if "num_key_value_heads" in vars(config) and config.num_key_value_heads is None:
            config.num_key_value_heads = heads
    rope = getattr(config, "rope_parameters", None)
    if isinstance(rope, dict) and (mrope or "mrope_section" in rope) and isinstance(hidden, int) and heads:
        head_dim = getattr(config, "head_dim", None) or hidden // heads
        half, parts = head_dim // 2, len(rope.get("mrope_section") or [0, 0, 0])
        section = [half // parts] * parts
        section[0] += half - sum(section)
        rope["mrope_section"] = section


def _input_kinds(model) -> list[str]:
    """Input layouts to try for `model`, the likeliest first (from main_input_name and the signature)."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        parameters = {}
    main = getattr(model, "main_input_name", "input_ids")
    main = main[0] if isinstance(main, (list, tuple)) else main
    kinds = []
    by_main = {
        "pixel_values": ["image", "image+text"], "input_features": ["features-ct", "features-tc"],
        "input_values": ["audio", "audio-ct"], "pixel_values_videos": ["video"], "past_values": ["past-values"],
        "flattened_patches": ["flattened-patches"], "inputs_embeds": ["embeds"],
    }
    kinds += by_main.get(main, [])
    if "input_ids" in parameters:
        kinds += ["text"]
    if "pixel_values" in parameters and "image" not in kinds:
        kinds += ["image", "image+text"]
    if "pixel_values" in parameters:
        kinds += ["video"]
    if {"grid_thw", "image_grid_thw"} & set(parameters):
        kinds.insert(0, "grid")
    if "input_features" in parameters and "features-ct" not in kinds:
        kinds += ["features-ct", "features-tc"]
    if "input_values" in parameters and "audio" not in kinds:
        kinds += ["audio"]
    if "inputs_embeds" in parameters and "embeds" not in kinds:
        kinds += ["embeds"]
    return list(dict.fromkeys(kinds))


def _sub(config, *names):
    for name in names:
        sub = getattr(config, name, None)
        if sub is not None and not isinstance(sub, (int, float, str, bool, list, dict)):
            return sub
    return config


def _int_attr(config, names, default):
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], int):
            return int(value[0])
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def make_transformers_inputs(kind: str, model, config, batch: int, length: int) -> dict:
    """One input dict of layout `kind` for batch size `batch` and sequence length `length`."""
    import torch

    generator = torch.Generator().manual_seed(batch * 1000 + length)
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    vocab = _int_attr(text, ("vocab_size",), 256)
    high = max(4, min(vocab, 200))
    inputs: dict = {}
    parameters = _forward_parameters(model)
    if kind in ("text", "image+text"):
        inputs["input_ids"] = torch.randint(3, high, (batch, length), generator=generator)
        if "attention_mask" in parameters:
            inputs["attention_mask"] = torch.ones(batch, length, dtype=torch.long)
        if "bbox" in parameters:
            inputs["bbox"] = torch.zeros(batch, length, 4, dtype=torch.long)
    if kind == "grid":  # Qwen2-VL style vision towers: flattened patches and a (t, h, w) grid per image
        vision = _sub(config, "vision_config")
        patch = _int_attr(vision, ("patch_size",), 14)
        temporal = _int_attr(vision, ("temporal_patch_size",), 1)
        channels = _int_attr(vision, ("in_channels", "num_channels", "in_chans"), 3)
        side = 4
        inputs["pixel_values"] = torch.rand(batch * side * side, channels * temporal * patch * patch,
                                            generator=generator)
        grid_name = "grid_thw" if "grid_thw" in parameters else "image_grid_thw"
        inputs[grid_name] = torch.tensor([[1, side, side]] * batch)
    if kind in ("image", "image+text"):
        vision = _sub(config, "vision_config", "backbone_config", "encoder_config")
        side = _int_attr(vision, ("image_size", "img_size", "input_size"), 32)
        if side > 64 and _int_attr(vision, ("patch_size",), 0) == 0:
            side = 64  # convolutional models take any size
        channels = _int_attr(vision, ("num_channels", "in_channels", "input_channels"), 3)
        inputs["pixel_values"] = torch.rand(batch, channels, side, side, generator=generator)
    if kind == "video":
        vision = _sub(config, "vision_config")
        side = _int_attr(vision, ("image_size",), 32)
        frames = _int_attr(vision, ("num_frames",), 4)
        inputs["pixel_values" if "pixel_values" in parameters else "pixel_values_videos"] = torch.rand(
            batch, frames, 3, side, side, generator=generator)
    if kind in ("audio", "audio-ct"):
        samples = 400 + 20 * length
        shape = (batch, samples) if kind == "audio" else (batch, 1, samples)
        inputs["input_values"] = torch.rand(*shape, generator=generator)
    if kind in ("features-ct", "features-tc"):
        audio = _sub(config, "audio_config", "encoder_config")
        bins = _int_attr(audio, ("num_mel_bins", "feature_size", "input_feat_per_channel", "n_mels"), 80)
        channels = _int_attr(audio, ("input_channels",), 1)
        frames = 2 * _int_attr(audio, ("max_source_positions",), 32)
        if kind == "features-ct":
            inputs["input_features"] = torch.rand(batch, bins, frames, generator=generator)
        else:
            inputs["input_features"] = torch.rand(batch, 4 * length, bins * channels, generator=generator)
        if "attention_mask" in parameters and kind == "features-tc":
            inputs["attention_mask"] = torch.ones(batch, 4 * length, dtype=torch.long)
    if kind == "past-values":
        context = _int_attr(config, ("context_length",), 16)
        lags = getattr(config, "lags_sequence", None) or [0]
        total = context + max(lags)
        channels = _int_attr(config, ("input_size", "num_input_channels"), 1)
        univariate = channels == 1 and "num_input_channels" not in vars(config)
        shape = (batch, total) if univariate else (batch, total, channels)
        inputs["past_values"] = torch.rand(*shape, generator=generator)
        if "past_observed_mask" in parameters:
            inputs["past_observed_mask"] = torch.ones(*shape)
        features = _int_attr(config, ("num_time_features",), 0)
        if "past_time_features" in parameters and features:
            inputs["past_time_features"] = torch.rand(batch, total, features, generator=generator)
    if kind == "embeds":
        hidden = _int_attr(text, ("hidden_size", "d_model"), 32)
        inputs["inputs_embeds"] = torch.rand(batch, length, hidden, generator=generator)
    if kind == "flattened-patches":
        inputs["flattened_patches"] = torch.rand(batch, length, 2 + 3 * 16 * 16, generator=generator)
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in parameters:
        dec_vocab = _int_attr(config.get_text_config(decoder=True), ("vocab_size",), vocab)
        inputs["decoder_input_ids"] = torch.randint(3, max(4, min(dec_vocab, 200)), (batch, max(2, length // 2)),
                                                    generator=generator)
    if not inputs:
        raise Skip(f"no input layout {kind}")
    return inputs


def _forward_parameters(model) -> dict:
    try:
        return dict(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        return {}


def add_labels(inputs: dict, label_kind: Optional[str], model, config, batch: int, length: int) -> dict:
    """`inputs` with the labels of a head's loss (label kinds from LM_HEADS / TASK_HEADS)."""
    import torch

    generator = torch.Generator().manual_seed(7 + batch * 1000 + length)
    inputs = dict(inputs)
    parameters = _forward_parameters(model)
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    vocab = max(4, min(_int_attr(text, ("vocab_size",), 256), 200))
    classes = max(2, getattr(config, "num_labels", 2))
    if label_kind == "tokens" and "input_ids" in inputs:
        inputs["labels"] = inputs["input_ids"].clone()
    elif label_kind == "tokens":
        inputs["labels"] = torch.randint(3, vocab, (batch, length), generator=generator)
    elif label_kind == "decoder-tokens":
        decoder = inputs.pop("decoder_input_ids", None)
        inputs["labels"] = decoder if decoder is not None else torch.randint(3, vocab, (batch, max(2, length // 2)),
                                                                             generator=generator)
    elif label_kind == "ctc":
        inputs["labels"] = torch.randint(1, vocab, (batch, 3), generator=generator)
    elif label_kind == "class":
        inputs["labels"] = torch.randint(0, classes, (batch,), generator=generator)
    elif label_kind == "token-class":
        inputs["labels"] = torch.randint(0, classes, (batch, length), generator=generator)
    elif label_kind == "span" and "start_positions" in parameters:
        inputs["start_positions"] = torch.randint(0, length, (batch,), generator=generator)
        inputs["end_positions"] = torch.randint(0, length, (batch,), generator=generator)
    elif label_kind == "pixels" and "pixel_values" in inputs:
        side = inputs["pixel_values"].shape[-1]
        inputs["labels"] = torch.randint(0, classes, (batch, side, side), generator=generator)
    return inputs


# ---------------------------------------------------------------------------------------
# timm
# ---------------------------------------------------------------------------------------

def timm_model_names() -> list[str]:
    """Every timm architecture name (`timm.list_models()`, no pretrained tags)."""
    ensure_torchvision_importable()
    import timm

    return sorted(timm.list_models())


def timm_variants(unit: str, name: str) -> list[Variant]:
    """eval and train of one timm model, small input, pretrained=False."""
    def build():
        import torch

        ensure_torchvision_importable()
        torch.manual_seed(0)
        model, side, fixed = _timm_create(name)

        def inputs(batch, length):
            generator = torch.Generator().manual_seed(batch * 1000 + length)
            size = side if fixed else side + 4 * (length // 8 - 2)
            channels = getattr(model, "in_chans", 3) or 3
            return {"x": torch.rand(batch, channels, size, size, generator=generator)}

        return model, inputs

    return [Variant(unit, "eval", "eval", build), Variant(unit, "train", "train", build, recompiles=False)]


def _timm_create(name: str):
    """The model with the smallest input it takes: (model, side, side is fixed)."""
    import timm
    import torch

    with torch.device("meta"):
        meta = timm.create_model(name, pretrained=False, num_classes=10)
    count = sum(p.numel() for p in meta.parameters())
    if count > MAX_PARAMETERS:
        raise Skip(f"{count / 1e6:.0f}M parameters")
    cfg = getattr(meta, "pretrained_cfg", {}) or {}
    default_side = int((cfg.get("input_size") or (3, 224, 224))[-1])
    fixed = bool(cfg.get("fixed_input_size"))
    attempts = []
    for kwargs, side in (({"img_size": 64}, 64), ({}, 64 if not fixed else default_side), ({}, default_side)):
        try:
            model = timm.create_model(name, pretrained=False, num_classes=10, **kwargs)
        except Exception as error:
            attempts.append(_one_line(error))
            continue
        model.eval()
        try:
            with torch.no_grad():
                model(torch.rand(2, getattr(model, "in_chans", 3) or 3, side, side))
            return model, side, fixed or bool(kwargs)
        except Exception as error:
            attempts.append(_one_line(error))
    raise Skip("no input size runs: " + " | ".join(attempts[-2:]))


# ---------------------------------------------------------------------------------------
# diffusers
# ---------------------------------------------------------------------------------------

def _diffusers_builders() -> dict[str, Callable[[], tuple[Any, Callable[[int, int], dict]]]]:
    """Tiny diffusers models and blocks, by name."""
    import torch

    def rand(*shape, seed=0):
        return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))

    def unet2d():
        import diffusers

        model = diffusers.UNet2DModel(
            sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(32, 64),
            norm_num_groups=8, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
            up_block_types=("AttnUpBlock2D", "UpBlock2D"))
        return model, lambda b, n: {"sample": rand(b, 3, 8 + n // 2, 8 + n // 2, seed=b * n), "timestep": 10}

    def unet2d_condition(processor=None, extra=None):
        def make():
            import diffusers

            model = diffusers.UNet2DConditionModel(
                sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
                norm_num_groups=8, cross_attention_dim=32, attention_head_dim=8,
                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), **(extra or {}))
            if processor is not None:
                from diffusers.models import attention_processor

                model.set_attn_processor(getattr(attention_processor, processor)())

            def inputs(b, n):
                made = {"sample": rand(b, 4, 8 + n // 2, 8 + n // 2, seed=b * n), "timestep": torch.tensor(10),
                        "encoder_hidden_states": rand(b, n, 32, seed=b + n)}
                if extra and extra.get("addition_embed_type") == "text_time":
                    made["added_cond_kwargs"] = {"text_embeds": rand(b, 32, seed=1), "time_ids": rand(b, 6, seed=2)}
                return made

            return model, inputs

        return make

    def vae(class_name, **extra):
        def make():
            import diffusers

            cls = getattr(diffusers, class_name)
            kwargs = dict(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
                          norm_num_groups=8, down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                          up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"))
            kwargs.update(extra)
            model = cls(**kwargs)
            return model, lambda b, n: {"sample": rand(b, 3, 8 + n // 2, 8 + n // 2, seed=b * n)}

        return make

    def transformer(class_name, kwargs, make_inputs):
        def make():
            import diffusers

            model = getattr(diffusers, class_name)(**kwargs)
            return model, make_inputs

        return make

    builders = {
        "UNet2DModel": unet2d,
        "UNet2DConditionModel": unet2d_condition(),
        "UNet2DConditionModel-sdxl": unet2d_condition(extra={
            "addition_embed_type": "text_time", "addition_time_embed_dim": 8,
            "projection_class_embeddings_input_dim": 32 + 6 * 8}),
        "AutoencoderKL": vae("AutoencoderKL"),
        "VQModel": vae("VQModel", num_vq_embeddings=16),
        "AutoencoderTiny": lambda: _diffusers_tiny_vae(rand),
        "DiTTransformer2DModel": transformer("DiTTransformer2DModel", dict(
            num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4, num_layers=2,
            sample_size=8, patch_size=2, norm_num_groups=8, num_embeds_ada_norm=10),
            lambda b, n: {"hidden_states": rand(b, 4, 8, 8, seed=b), "timestep": torch.tensor([10] * b),
                          "class_labels": torch.tensor([1] * b)}),
        "PixArtTransformer2DModel": transformer("PixArtTransformer2DModel", dict(
            num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8, num_layers=2,
            sample_size=8, patch_size=2, norm_num_groups=8, cross_attention_dim=32, caption_channels=32,
            use_additional_conditions=False),
            lambda b, n: {"hidden_states": rand(b, 4, 8, 8, seed=b), "timestep": torch.tensor([10] * b),
                          "encoder_hidden_states": rand(b, n, 32, seed=n),
                          "added_cond_kwargs": {"resolution": None, "aspect_ratio": None}}),
        "SD3Transformer2DModel": transformer("SD3Transformer2DModel", dict(
            sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8, num_attention_heads=4,
            joint_attention_dim=32, caption_projection_dim=32, pooled_projection_dim=16, out_channels=4,
            pos_embed_max_size=16),
            lambda b, n: {"hidden_states": rand(b, 4, 8, 8, seed=b), "timestep": torch.tensor([10] * b),
                          "encoder_hidden_states": rand(b, n, 32, seed=n), "pooled_projections": rand(b, 16, seed=3)}),
        "FluxTransformer2DModel": transformer("FluxTransformer2DModel", dict(
            patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=8,
            num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=16, axes_dims_rope=(4, 2, 2)),
            lambda b, n: {"hidden_states": rand(b, 16, 16, seed=b), "encoder_hidden_states": rand(b, n, 32, seed=n),
                          "pooled_projections": rand(b, 16, seed=3), "timestep": torch.tensor([0.5] * b),
                          "img_ids": torch.zeros(16, 3), "txt_ids": torch.zeros(n, 3)}),
        "UNetSpatioTemporalConditionModel": transformer("UNetSpatioTemporalConditionModel", dict(
            sample_size=8, in_channels=8, out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
            cross_attention_dim=32, num_attention_heads=(2, 4), addition_time_embed_dim=8,
            projection_class_embeddings_input_dim=24,
            down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
            up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal")),
            lambda b, n: {"sample": rand(b, 2, 8, 8, 8, seed=b), "timestep": torch.tensor(10),
                          "encoder_hidden_states": rand(b, 1, 32, seed=n), "added_time_ids": rand(b, 3, seed=4)}),
    }
    # The attention processors diffusers offers on CPU (xformers and the added-KV processor
    # need a package or projections these models do not have).
    for processor in ("AttnProcessor", "AttnProcessor2_0", "SlicedAttnProcessor", "FusedAttnProcessor2_0"):
        builders[f"UNet2DConditionModel-{processor}"] = _processor_builder(unet2d_condition, processor)
    return builders


def _processor_builder(unet2d_condition, processor):
    def make():
        from diffusers.models import attention_processor

        model, inputs = unet2d_condition()()
        if processor == "SlicedAttnProcessor":
            model.set_attn_processor(attention_processor.SlicedAttnProcessor(slice_size=2))
        elif processor == "FusedAttnProcessor2_0":
            model.fuse_qkv_projections()  # sets the fused processor on every attention
        else:
            model.set_attn_processor(getattr(attention_processor, processor)())
        return model, inputs

    return make


def _diffusers_tiny_vae(rand):
    import diffusers

    model = diffusers.AutoencoderTiny(
        in_channels=3, out_channels=3, encoder_block_out_channels=(8, 8), decoder_block_out_channels=(8, 8),
        num_encoder_blocks=(1, 1), num_decoder_blocks=(1, 1), latent_channels=4)
    return model, lambda b, n: {"sample": rand(b, 3, 16 + n, 16 + n, seed=b * n)}


def diffusers_model_names() -> list[str]:
    """The diffusers models and blocks the sweep builds."""
    return sorted(_diffusers_builders())


def diffusers_variants(unit: str, name: str) -> list[Variant]:
    """eval and train of one diffusers model."""
    builder = _diffusers_builders()[name]
    return [Variant(unit, "eval", "eval", builder), Variant(unit, "train", "train", builder)]


# ---------------------------------------------------------------------------------------
# the catalog
# ---------------------------------------------------------------------------------------

def all_units() -> list[str]:
    """Every unit of the sweep: transformers model types, timm models, diffusers blocks."""
    return ([f"transformers/{t}" for t in transformers_model_types()]
            + [f"diffusers/{n}" for n in diffusers_model_names()]
            + [f"timm/{n}" for n in timm_model_names()])


def variants(unit: str) -> list[Variant]:
    """The runs of one unit; raises Skip with the reason when it cannot be built tiny."""
    library, _, name = unit.partition("/")
    if library == "transformers":
        architecture = TransformersArchitecture(name)
        architecture.resolve()
        return architecture.variants(unit)
    if library == "timm":
        return timm_variants(unit, name)
    if library == "diffusers":
        return diffusers_variants(unit, name)
    raise KeyError(unit)


def library_roots() -> dict[str, str]:
    """Installed package folder of each library (files inside are 'library code')."""
    ensure_torchvision_importable()
    roots = {}
    for library in ("transformers", "timm", "diffusers"):
        module = __import__(library)
        roots[library] = os.path.dirname(os.path.abspath(module.__file__))
    return roots


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:240]
