"""Verify targets for the models in examples/ (run from the repository root)."""

import torch

from examples.models.detection_head import CleanScoreFilter, DetectionHead, ScoreFilter
from examples.models.moe_router import MoERouter
from examples.models.transformer_block import TransformerBlock


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
    """Two temperatures and one shape."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 32)
    return MoERouter(), [(x, 1.0), (x, 0.5)]
