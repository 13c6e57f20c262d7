"""Verify targets for the bundled models: `compile-lint verify examples/targets.py:moe_router`.

Each factory returns a model and its example calls. The models are imported as siblings
(`models.*`), so a copy of examples/ (e.g. after `--fix`) verifies its own models.
"""

import torch

from models.detection_head import CleanScoreFilter, DetectionHead, ScoreFilter
from models.moe_router import MoERouter, SparseDispatch
from models.transformer_block import TransformerBlock


def transformer_block():
    """Two calls with the same shapes: any recompile is a real trap."""
    torch.manual_seed(0)
    x = torch.randn(2, 8, 32)
    return TransformerBlock(), [(x,), (x + 1,)]


def detection_head():
    """Two upscale factors: a float reaching interpolate's scale_factor."""
    torch.manual_seed(0)
    features = torch.randn(1, 16, 8, 8)
    return DetectionHead(), [(features, 2.0), (features, 3.0)]


def score_filter():
    torch.manual_seed(0)
    return ScoreFilter(), [(torch.rand(2, 3, 5), torch.randn(2, 4, 5))]


def clean_score_filter():
    torch.manual_seed(0)
    return CleanScoreFilter(), [(torch.rand(2, 3, 5), torch.randn(2, 4, 5))]


def moe_router():
    """Two temperatures and one shape: the float argument costs one recompile."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 32)
    return MoERouter(), [(x, 1.0), (x, 0.5)]


def moe_router_fixed_temperature():
    """The same router at one temperature: what remains once the static findings are fixed."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 32)
    return MoERouter(), [(x,), (x + 1,)]


def sparse_dispatch():
    """Data-dependent split sizes: a break no rewrite removes (JIT203 and JIT207 offer no fix for it)."""
    torch.manual_seed(0)
    return SparseDispatch(), [(torch.randn(12, 32),)]
