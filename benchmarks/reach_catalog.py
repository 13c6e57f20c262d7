"""The cross-file reach corpus: real model libraries laid out across files, and their units.

Each library is a pip-installable package nobody here wrote, outside transformers, timm and
diffusers, whose models spread over a model file plus layers / commons / utils modules and
that is compiled through entry points other than `forward` where the library has them
(whisper's `decode`, x-transformers' `generate`, k-diffusion's samplers and `loss`,
kokoro's `forward_with_tokens`, segmentation-models' `predict`). The pinned versions are the
`reach` extra of pyproject.toml (`make reach-score` installs them).

A *unit* is one model class built tiny with random weights (no download: configs and sizes
are written here); each has one or more *entries*: what is compiled (`torch.compile(model)`
for `forward`, `torch.compile(model.method)` or a function of the library for the others),
the inputs of one call, the modes it runs in (eval: `no_grad`; train: `enable_grad`), and,
for entries the code alone does not show, the `entry-points` target compile-lint needs
(`"package/file.py:Class.method"`, relative to the folder holding the package).

    python benchmarks/reach_catalog.py            # the units and entries, one a line
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

from reach_catalog_new_kinds import NEW_KIND_BUILDERS, NEW_KIND_PACKAGES  # noqa: E402
from reach_catalog_round6 import ROUND6_BUILDERS, ROUND6_PACKAGES  # noqa: E402
from reach_units import Entry, Unit  # noqa: E402
from reach_units import forward_entry as _forward  # noqa: E402
from reach_units import image as _image  # noqa: E402
from reach_units import method_entry as _method  # noqa: E402
from reach_units import randn as _t  # noqa: E402
from reach_units import token_ids as _ids  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# ultralytics writes a settings file at import: into the git-ignored cache, not the home folder.
os.environ.setdefault("YOLO_CONFIG_DIR", os.path.join(HERE, ".cache", "ultralytics"))
os.environ.setdefault("YOLO_OFFLINE", "1")

# Distribution -> import package; the versions are the `reach` extra's pins in pyproject.toml.
PACKAGES = {
    "kornia": "kornia",
    "openai-whisper": "whisper",
    "x-transformers": "x_transformers",
    "vector-quantize-pytorch": "vector_quantize_pytorch",
    "segment-anything": "segment_anything",
    "open-clip-torch": "open_clip",
    "k-diffusion": "k_diffusion",
    "segmentation-models-pytorch": "segmentation_models_pytorch",
    "kokoro": "kokoro",
    "ultralytics": "ultralytics",
    "brevitas": "brevitas",
    **NEW_KIND_PACKAGES,
    **ROUND6_PACKAGES,
}


def _pins() -> dict[str, str]:
    import tomllib

    with open(os.path.join(os.path.dirname(HERE), "pyproject.toml"), "rb") as handle:
        extra = tomllib.load(handle)["project"]["optional-dependencies"]["reach"]
    return dict(requirement.split("==", 1) for requirement in extra)


# Distribution -> (pinned version, import package).
LIBRARIES = {dist: (_pins()[dist], package) for dist, package in PACKAGES.items()}
PACKAGE_OF = {package: dist for dist, package in PACKAGES.items()}


# ----------------------------------------------------------------------------- kornia

def _kornia_units():
    def aug():
        import kornia.augmentation as K

        return K.AugmentationSequential(K.RandomAffine(15.0, p=1.0), K.ColorJitter(0.2, 0.2, 0.2, 0.1, p=1.0),
                                        K.RandomHorizontalFlip(), data_keys=["input"])

    def canny():
        import kornia.filters

        return kornia.filters.Canny()

    def sift():
        import kornia.feature

        return kornia.feature.SIFTFeature(num_features=16)

    def vit():
        import kornia.models.vit

        return kornia.models.vit.VisionTransformer(image_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2)

    def local_feature():
        import kornia.feature as KF

        return KF.LocalFeature(KF.ScaleSpaceDetector(16, ori_module=KF.LAFOrienter(19)),
                               KF.LAFDescriptor(KF.HardNet(pretrained=False)))

    return [
        Unit("kornia", "AugmentationSequential", aug, (_forward(lambda m: _image(2)),)),
        Unit("kornia", "Canny", canny, (_forward(lambda m: _image(1)),)),
        Unit("kornia", "SIFTFeature", sift, (_forward(lambda m: _image(1, 1, 64), ("eval",)),)),
        Unit("kornia", "LocalFeature-HardNet", local_feature, (_forward(lambda m: _image(1, 1, 64), ("eval",)),)),
        Unit("kornia", "VisionTransformer", vit, (_forward(lambda m: _image(2)),)),
    ]


# ----------------------------------------------------------------------------- whisper

def _whisper_units():
    def build():
        import whisper.model

        dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=16, n_audio_state=32, n_audio_head=2,
                                             n_audio_layer=2, n_vocab=51865, n_text_ctx=16, n_text_state=32,
                                             n_text_head=2, n_text_layer=2)
        return whisper.model.Whisper(dims)

    def decode_inputs(model, beam=None):
        import whisper

        options = whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False, sample_len=4,
                                          beam_size=beam)
        return (_t(1, 80, 32), options), {}

    return [
        Unit("whisper", "Whisper", build, (
            _forward(lambda m: ((_t(1, 80, 32), _ids(50000, 1, 6)), {})),
            _method("embed_audio", lambda m: ((_t(1, 80, 32),), {}), "whisper/model.py:Whisper.embed_audio"),
            Entry("decode", lambda m: functools.partial(_call_decode, m), decode_inputs, ("eval",),
                  "whisper/decoding.py:decode"),
            Entry("decode_beam", lambda m: functools.partial(_call_decode, m), functools.partial(decode_inputs, beam=2),
                  ("eval",), "whisper/decoding.py:decode"),
            _method("detect_language", lambda m: ((_t(1, 80, 32),), {}), "whisper/decoding.py:detect_language"),
        )),
    ]


def _call_decode(model, mel, options):
    return model.decode(mel, options)


# ----------------------------------------------------------------------------- x-transformers

def _x_transformers_units():
    def decoder():
        from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

        net = TransformerWrapper(num_tokens=64, max_seq_len=32, attn_layers=Decoder(dim=32, depth=2, heads=2))
        return AutoregressiveWrapper(net)

    def decoder_rich():
        from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

        net = TransformerWrapper(num_tokens=64, max_seq_len=32, num_memory_tokens=2,
                                 attn_layers=Decoder(dim=32, depth=2, heads=2, rotary_pos_emb=True, ff_glu=True,
                                                     attn_qk_norm=True, layer_dropout=0.1, residual_attn=True))
        return AutoregressiveWrapper(net)

    def xtransformer():
        from x_transformers import XTransformer

        return XTransformer(dim=32, enc_num_tokens=64, enc_depth=1, enc_heads=2, enc_max_seq_len=32,
                            dec_num_tokens=64, dec_depth=1, dec_heads=2, dec_max_seq_len=32)

    def continuous():
        from x_transformers import ContinuousTransformerWrapper, Encoder

        return ContinuousTransformerWrapper(dim_in=8, dim_out=8, max_seq_len=32,
                                            attn_layers=Encoder(dim=32, depth=2, heads=2))

    def gen(model):
        return (_ids(64, 1, 4), 4), {}

    return [
        Unit("x_transformers", "AutoregressiveWrapper", decoder, (
            _forward(lambda m: ((_ids(64, 2, 12),), {})),
            _method("generate", gen, "x_transformers/autoregressive_wrapper.py:AutoregressiveWrapper.generate"),
        )),
        Unit("x_transformers", "AutoregressiveWrapper-rope-memory", decoder_rich, (
            _forward(lambda m: ((_ids(64, 2, 12),), {})),
            _method("generate", gen, "x_transformers/autoregressive_wrapper.py:AutoregressiveWrapper.generate"),
        )),
        Unit("x_transformers", "XTransformer", xtransformer, (
            _forward(lambda m: ((_ids(64, 2, 10), _ids(64, 2, 8)), {})),
            _method("generate", lambda m: ((_ids(64, 1, 10), _ids(64, 1, 1), 4), {}),
                    "x_transformers/x_transformers.py:XTransformer.generate"),
        )),
        Unit("x_transformers", "ContinuousTransformerWrapper", continuous, (
            _forward(lambda m: ((_t(2, 12, 8),), {})),
        )),
    ]


# ----------------------------------------------------------------------------- vector-quantize-pytorch

def _vq_units():
    def vq():
        from vector_quantize_pytorch import VectorQuantize

        return VectorQuantize(dim=16, codebook_size=32, decay=0.8, commitment_weight=1.0, kmeans_init=True,
                              threshold_ema_dead_code=2)

    def rvq():
        from vector_quantize_pytorch import ResidualVQ

        return ResidualVQ(dim=16, num_quantizers=3, codebook_size=32, quantize_dropout=True)

    def fsq():
        from vector_quantize_pytorch import FSQ

        return FSQ(levels=[8, 5, 5], dim=16)

    def lfq():
        from vector_quantize_pytorch import LFQ

        return LFQ(dim=16, codebook_size=64, entropy_loss_weight=0.1)

    def rfsq():
        from vector_quantize_pytorch import ResidualFSQ

        return ResidualFSQ(dim=16, levels=[8, 5, 5], num_quantizers=2)

    seq = lambda m: ((_t(2, 12, 16),), {})  # noqa: E731
    return [
        Unit("vector_quantize_pytorch", "VectorQuantize", vq, (_forward(seq),)),
        Unit("vector_quantize_pytorch", "ResidualVQ", rvq, (_forward(seq),)),
        Unit("vector_quantize_pytorch", "FSQ", fsq, (_forward(seq),)),
        Unit("vector_quantize_pytorch", "LFQ", lfq, (_forward(seq),)),
        Unit("vector_quantize_pytorch", "ResidualFSQ", rfsq, (_forward(seq),)),
    ]


# ----------------------------------------------------------------------------- segment-anything

def _sam_units():
    def sam():
        import torch
        from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

        return Sam(
            image_encoder=ImageEncoderViT(img_size=64, patch_size=16, embed_dim=32, depth=2, num_heads=2,
                                          out_chans=32, use_rel_pos=True, window_size=2, global_attn_indexes=(1,),
                                          norm_layer=functools.partial(torch.nn.LayerNorm, eps=1e-6)),
            prompt_encoder=PromptEncoder(embed_dim=32, image_embedding_size=(4, 4), input_image_size=(64, 64),
                                         mask_in_chans=8),
            mask_decoder=MaskDecoder(num_multimask_outputs=3, transformer_dim=32, iou_head_depth=2,
                                     iou_head_hidden_dim=32,
                                     transformer=TwoWayTransformer(depth=2, embedding_dim=32, mlp_dim=64,
                                                                   num_heads=2)),
        )

    def batched(model):
        import torch

        return ([{"image": torch.rand(3, 64, 48) * 255, "original_size": (64, 48),
                  "point_coords": torch.rand(1, 2, 2) * 48, "point_labels": torch.ones(1, 2, dtype=torch.long),
                  "boxes": torch.tensor([[4.0, 4.0, 40.0, 40.0]])}], True), {}

    def predictor_unit():
        from segment_anything import SamPredictor

        predictor = SamPredictor(sam())
        import numpy as np

        predictor.set_image((np.random.RandomState(0).rand(64, 48, 3) * 255).astype("uint8"))
        return predictor

    def predict_torch(predictor):
        import torch

        return (torch.rand(1, 2, 2) * 64, torch.ones(1, 2, dtype=torch.long)), {"multimask_output": True}

    return [
        Unit("segment_anything", "Sam", sam, (
            _forward(batched, ("eval",)),
            Entry("image_encoder", lambda m: m.image_encoder, lambda m: ((_t(1, 3, 64, 64),), {}),
                  ("eval", "train"), None, True),
            Entry("postprocess_masks", lambda m: m.postprocess_masks,
                  lambda m: ((_t(1, 3, 16, 16), (60, 64), (64, 48)), {}), ("eval",),
                  "segment_anything/modeling/sam.py:Sam.postprocess_masks"),
        )),
        Unit("segment_anything", "SamPredictor", predictor_unit, (
            _method("predict_torch", predict_torch, "segment_anything/predictor.py:SamPredictor.predict_torch"),
        )),
    ]


# ----------------------------------------------------------------------------- open_clip

def _open_clip_units():
    vision = dict(layers=2, width=32, head_width=16, patch_size=8, image_size=32)
    text = dict(context_length=16, vocab_size=100, width=32, heads=2, layers=2)

    def clip():
        import open_clip

        return open_clip.CLIP(embed_dim=32, vision_cfg=vision, text_cfg=text)

    def coca():
        import open_clip

        # The shape of open_clip's coca_ViT-B-32.json, shrunk.
        return open_clip.CoCa(embed_dim=32, vision_cfg=dict(vision, attentional_pool=True, attn_pooler_heads=2,
                                                            output_tokens=True),
                              text_cfg=dict(text, embed_cls=True, output_tokens=True),
                              multimodal_cfg=dict(context_length=16, vocab_size=100, width=32, heads=2, layers=1,
                                                  attn_pooler_heads=2))

    def timm_clip():
        import open_clip

        return open_clip.CLIP(embed_dim=32, vision_cfg=dict(timm_model_name="resnet18", timm_model_pretrained=False,
                                                            timm_pool="avg", timm_proj="linear", image_size=32),
                              text_cfg=text)

    pair = lambda m: ((_t(2, 3, 32, 32), _ids(100, 2, 16)), {})  # noqa: E731
    return [
        Unit("open_clip", "CLIP", clip, (
            _forward(pair),
            _method("encode_image", lambda m: ((_t(2, 3, 32, 32),), {}), "open_clip/model.py:CLIP.encode_image"),
            _method("encode_text", lambda m: ((_ids(100, 2, 16),), {}), "open_clip/model.py:CLIP.encode_text"),
        )),
        Unit("open_clip", "CLIP-timm", timm_clip, (_forward(pair),)),
        # CoCa.generate needs transformers' BeamSearchScorer, gone from transformers 5 (the corpus's
        # transformers): open_clip 3.3.0 then refuses to generate, so only forward is measured.
        Unit("open_clip", "CoCa", coca, (_forward(pair),)),
    ]


# ----------------------------------------------------------------------------- k-diffusion

def _k_diffusion_units():
    def denoiser():
        import k_diffusion as K

        inner = K.models.ImageDenoiserModelV1(c_in=3, feats_in=16, depths=[1, 1], channels=[16, 32],
                                              self_attn_depths=[False, True], dropout_rate=0.0)
        return K.layers.Denoiser(inner, sigma_data=0.5)

    def sample_inputs(model):
        import k_diffusion as K

        return (_t(1, 3, 16, 16) * 10, K.sampling.get_sigmas_karras(3, 0.1, 10.0)), {}

    def sampler(name):
        def target(model):
            import k_diffusion as K

            function = getattr(K.sampling, name)
            return lambda x, sigmas: function(model, x, sigmas, disable=True)
        return Entry(name, target, sample_inputs, ("eval",), f"k_diffusion/sampling.py:{name}")

    def loss_inputs(model):
        import torch

        return (_t(2, 3, 16, 16), torch.rand(2, 3, 16, 16) * 0 + _t(2, 3, 16, 16) * 0.1, torch.rand(2) + 0.1), {}

    def loss_target(model):
        return lambda x, noise, sigma: model.loss(x, noise, sigma)

    sigma_call = lambda m: ((_t(2, 3, 16, 16), _t(2).abs() + 0.1), {})  # noqa: E731
    return [
        Unit("k_diffusion", "ImageDenoiserModelV1", denoiser, (
            _forward(sigma_call),
            Entry("loss", loss_target, lambda m: ((_t(2, 3, 16, 16), _t(2, 3, 16, 16), _t(2).abs() + 0.1), {}),
                  ("train",), "k_diffusion/layers.py:Denoiser.loss"),
            sampler("sample_euler"), sampler("sample_euler_ancestral"), sampler("sample_dpmpp_2m"),
            sampler("sample_heun"), sampler("sample_dpmpp_2s_ancestral"), sampler("sample_lms"),
        )),
    ]


# ----------------------------------------------------------------------------- segmentation-models-pytorch

def _smp_units():
    def arch(name, **kwargs):
        def build():
            import segmentation_models_pytorch as smp

            options = dict(kwargs)
            return getattr(smp, name)(encoder_name=options.pop("encoder", "resnet18"), encoder_weights=None,
                                      classes=2, **options)
        return build

    image = lambda m: _image(2, 3, 64)  # noqa: E731
    predict = _method("predict", image, "segmentation_models_pytorch/base/model.py:SegmentationModel.predict")
    return [
        Unit("segmentation_models_pytorch", "Unet", arch("Unet", encoder_depth=3, decoder_channels=(32, 16, 8)),
             (_forward(image), predict)),
        Unit("segmentation_models_pytorch", "FPN", arch("FPN", encoder_depth=3), (_forward(image),)),
        Unit("segmentation_models_pytorch", "DeepLabV3Plus", arch("DeepLabV3Plus"), (_forward(image),)),
        Unit("segmentation_models_pytorch", "Segformer", arch("Segformer", encoder="mit_b0"), (_forward(image),)),
        Unit("segmentation_models_pytorch", "UPerNet", arch("UPerNet"), (_forward(image),)),
        Unit("segmentation_models_pytorch", "DPT",
             arch("DPT", encoder="tu-vit_tiny_patch16_224", dynamic_img_size=True),
             (_forward(lambda m: _image(1, 3, 64)),)),
    ]


# ----------------------------------------------------------------------------- kokoro

KOKORO_CONFIG = {
    "n_token": 64, "hidden_dim": 512, "style_dim": 128, "n_layer": 1, "max_dur": 8, "dropout": 0.1,
    "text_encoder_kernel_size": 5, "n_mels": 16,
    "plbert": {"hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 64,
               "max_position_embeddings": 64, "num_hidden_layers": 2, "dropout": 0.1},
    "istftnet": {"upsample_kernel_sizes": [8, 8], "upsample_rates": [4, 4], "gen_istft_hop_size": 4,
                 "gen_istft_n_fft": 8, "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5]],
                 "resblock_kernel_sizes": [3, 5], "upsample_initial_channel": 512},
    "vocab": {chr(ord("a") + i): i + 1 for i in range(26)},
}


def _kokoro_units():
    def build(disable_complex=False):
        import torch
        from kokoro import KModel

        # hidden_dim and upsample_initial_channel 512: istftnet.Decoder hard-codes those widths.
        # The real loading code, with a weights file made here: an empty state dict (random init).
        handle, path = tempfile.mkstemp(suffix=".pth")
        os.close(handle)
        try:
            torch.save({}, path)
            return KModel(repo_id="hexgrad/Kokoro-82M", config=KOKORO_CONFIG, model=path,
                          disable_complex=disable_complex)
        finally:
            os.remove(path)

    tokens = lambda m: ((_ids(26, 1, 8) + 1, _t(1, 256)), {"speed": 1.0})  # noqa: E731
    return [
        Unit("kokoro", "KModel", build, (
            _method("forward_with_tokens", tokens, "kokoro/model.py:KModel.forward_with_tokens"),
            Entry("forward", lambda m: m, lambda m: (("hello", _t(1, 256)), {}), ("eval",), None, True),
        )),
        Unit("kokoro", "KModel-disable-complex", functools.partial(build, True), (
            _method("forward_with_tokens", tokens, "kokoro/model.py:KModel.forward_with_tokens"),
        )),
        Unit("kokoro", "Decoder", lambda: build().decoder, (
            _forward(lambda m: ((_t(1, 512, 10), _t(1, 20), _t(1, 20), _t(1, 128)), {})),
        )),
    ]


# ----------------------------------------------------------------------------- ultralytics

def _ultralytics_units():
    def model(kind, yaml):
        def build():
            import ultralytics.nn.tasks as tasks
            from ultralytics.cfg import get_cfg

            built = getattr(tasks, kind)(yaml, nc=4, verbose=False)
            built.args = get_cfg()  # what the trainer sets: the loss reads its gains from here
            return built
        return build

    def batch(model):
        import torch

        return ({"img": _t(2, 3, 64, 64), "batch_idx": torch.tensor([0.0, 1.0]), "cls": torch.tensor([[1.0], [2.0]]),
                 "bboxes": torch.tensor([[0.5, 0.5, 0.2, 0.2], [0.3, 0.4, 0.1, 0.2]])},), {}

    image = lambda m: _image(1, 3, 64)  # noqa: E731
    loss = Entry("loss", lambda m: m.loss, batch, ("train",), "ultralytics/nn/tasks.py:BaseModel.loss")
    return [
        Unit("ultralytics", "DetectionModel-yolov8n", model("DetectionModel", "yolov8n.yaml"), (_forward(image), loss)),
        Unit("ultralytics", "DetectionModel-yolov10n", model("DetectionModel", "yolov10n.yaml"), (_forward(image),)),
        Unit("ultralytics", "DetectionModel-yolo26n", model("DetectionModel", "yolo26n.yaml"), (_forward(image),)),
        Unit("ultralytics", "SegmentationModel-yolov8n-seg", model("SegmentationModel", "yolov8n-seg.yaml"),
             (_forward(image),)),
        Unit("ultralytics", "RTDETRDetectionModel-rtdetr-l", model("RTDETRDetectionModel", "rtdetr-l.yaml"),
             (_forward(image, ("eval",)),)),
    ]


# ----------------------------------------------------------------------------- brevitas

def _brevitas_units():
    def conv_net():
        import brevitas.nn as qnn
        import torch

        return torch.nn.Sequential(
            qnn.QuantIdentity(return_quant_tensor=True),
            qnn.QuantConv2d(3, 8, 3, weight_bit_width=4, return_quant_tensor=True),
            qnn.QuantReLU(return_quant_tensor=True),
            qnn.TruncAvgPool2d(2, return_quant_tensor=True),
            qnn.QuantConv2d(8, 8, 3, weight_bit_width=4))

    def mlp():
        import brevitas.nn as qnn
        import torch

        return torch.nn.Sequential(
            qnn.QuantIdentity(bit_width=8, return_quant_tensor=True),
            qnn.QuantLinear(16, 32, bias=True, weight_bit_width=4, return_quant_tensor=True),
            qnn.QuantReLU(bit_width=4, return_quant_tensor=True),
            qnn.QuantLinear(32, 8, bias=True))

    def attention():
        import brevitas.nn as qnn

        return qnn.QuantMultiheadAttention(embed_dim=16, num_heads=2, packed_in_proj=False)

    def lstm():
        import brevitas.nn as qnn

        return qnn.QuantLSTM(input_size=8, hidden_size=16)

    return [
        # Plain torch containers of brevitas layers: the library's code is every layer's forward
        # and the quant proxies, injectors and QuantTensor they call across brevitas' files.
        Unit("brevitas", "QuantConvNet", conv_net, (_forward(lambda m: _image(1, 3, 16)),)),
        Unit("brevitas", "QuantLinear-MLP", mlp, (_forward(lambda m: ((_t(4, 16),), {})),)),
        Unit("brevitas", "QuantMultiheadAttention", attention,
             (_forward(lambda m: ((_t(5, 2, 16), _t(5, 2, 16), _t(5, 2, 16)), {})),)),
        Unit("brevitas", "QuantLSTM", lstm, (_forward(lambda m: ((_t(6, 2, 8),), {})),)),
    ]


CATALOG_BUILDERS = {
    "kornia": _kornia_units, "whisper": _whisper_units, "x_transformers": _x_transformers_units,
    "vector_quantize_pytorch": _vq_units, "segment_anything": _sam_units, "open_clip": _open_clip_units,
    "k_diffusion": _k_diffusion_units, "segmentation_models_pytorch": _smp_units, "kokoro": _kokoro_units,
    "ultralytics": _ultralytics_units,
    "brevitas": _brevitas_units,
    **NEW_KIND_BUILDERS,
    **ROUND6_BUILDERS,
}


def units(libraries=None) -> list[Unit]:
    """Every unit of the corpus (or of the named import packages), in a fixed order."""
    found = []
    for package, builder in CATALOG_BUILDERS.items():
        if libraries is None or package in libraries:
            found.extend(builder())
    return found


def unit(key: str) -> Unit:
    for candidate in units([key.split("/", 1)[0]]):
        if candidate.key == key:
            return candidate
    raise KeyError(key)


def entry_points(package: str) -> list[str]:
    """The `entry-points` targets compile-lint needs for a library (what the code alone does not show)."""
    found = set()
    for item in units([package]):
        for entry in item.entries:
            # One target, or several where the compiled code enters the library at more than one place.
            found.update([entry.lint_entry] if isinstance(entry.lint_entry, str) else entry.lint_entry or ())
    return sorted(found)


def package_root(package: str) -> str:
    """The installed package's folder (imports nothing of it)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(package)
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def prepare_imports() -> None:
    """torchvision's C ops do not load beside CPU torch: declare the op schemas its import needs."""
    import realworld_models

    realworld_models.ensure_torchvision_importable()


def main() -> int:
    for item in units():
        for entry in item.entries:
            targets = [entry.lint_entry] if isinstance(entry.lint_entry, str) else entry.lint_entry or ["-"]
            print(f"{item.key}\t{entry.name}\t{','.join(entry.modes)}\t{','.join(targets)}"
                  + (f"\t{entry.user_site}" if entry.user_site else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
