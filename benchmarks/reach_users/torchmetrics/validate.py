"""The validation loop's per-batch step and its end-of-epoch value, compiled."""

import torch
import torchmetrics.functional as FM


def validation_step(metric, preds, target):
    """Accumulate one batch into the metric's state (no value computed)."""
    metric.update(preds, target)


def batch_value(metric, preds, target):
    """The metric of this batch alone, also accumulated (Metric.forward)."""
    return metric(preds, target)


def epoch_value(metric):
    return metric.compute()


def functional_scores(preds, target):
    """One-off scores with the functional API."""
    return (FM.accuracy(preds, target, task="multiclass", num_classes=4),
            FM.f1_score(preds, target, task="multiclass", num_classes=4, average="macro"),
            FM.auroc(preds, target, task="multiclass", num_classes=4))


compiled_validation_step = torch.compile(validation_step)
compiled_batch_value = torch.compile(batch_value)
compiled_epoch_value = torch.compile(epoch_value)
compiled_functional_scores = torch.compile(functional_scores)
