"""A single-level detection head: class scores, box regression, score filtering."""

import torch
import torch.nn.functional as F
from torch import nn


class DetectionHead(nn.Module):
    def __init__(self, channels=16, num_classes=3):
        super().__init__()
        self.cls = nn.Conv2d(channels, num_classes, 3, padding=1)
        self.box = nn.Conv2d(channels, 4, 3, padding=1)

    def forward(self, features, upscale=2.0):
        # Recompile trap: a Python float reaching interpolate's scale_factor.
        features = F.interpolate(features, scale_factor=upscale, mode="nearest")
        scores = self.cls(features).sigmoid()
        boxes = self.box(features)
        # Clean: training flag and shape checks.
        if self.training and features.shape[-1] > 64:
            boxes = boxes.clamp(-10, 10)
        return scores, boxes


class ScoreFilter(nn.Module):
    def __init__(self, threshold=0.5):
        super().__init__()
        self.threshold = threshold

    def forward(self, scores, boxes):
        best = scores.amax(dim=1)
        # Graph break: a Python ternary on a tensor value.
        scale = best.new_ones(()) if best.max() > self.threshold else best.new_zeros(())
        # Graph break: printing inside forward.
        print("kept fraction", (best > self.threshold).float().mean())
        return boxes * scale


class CleanScoreFilter(nn.Module):
    """The look-alike of ScoreFilter that compiles as one graph."""

    def __init__(self, threshold=0.5):
        super().__init__()
        self.threshold = threshold

    def forward(self, scores, boxes):
        best = scores.amax(dim=1)
        keep = (best > self.threshold).unsqueeze(1)
        return torch.where(keep, boxes, torch.zeros_like(boxes))
