"""Validation metrics of a classifier and an image restorer, as a training script defines them."""

from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassAUROC, MulticlassF1Score
from torchmetrics.image import PeakSignalNoiseRatio, StructuralSimilarityIndexMeasure
from torchmetrics.regression import MeanSquaredError, PearsonCorrCoef

CLASSES = 4


def accuracy():
    return MulticlassAccuracy(num_classes=CLASSES, average="macro")


def f1():
    return MulticlassF1Score(num_classes=CLASSES, average="weighted")


def auroc():
    return MulticlassAUROC(num_classes=CLASSES, thresholds=None)


def classification_suite():
    return MetricCollection({"acc": accuracy(), "f1": f1()}, prefix="val_")


def ssim():
    return StructuralSimilarityIndexMeasure(data_range=1.0, kernel_size=5)


def psnr():
    return PeakSignalNoiseRatio(data_range=1.0)


def mse():
    return MeanSquaredError()


def pearson():
    return PearsonCorrCoef()
