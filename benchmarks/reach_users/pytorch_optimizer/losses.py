"""Segmentation and classification losses from the library, compiled as a training step's loss."""

import torch
from pytorch_optimizer import BiTemperedLogisticLoss, DiceLoss, FocalLoss, JaccardLoss, LovaszHingeLoss, TverskyLoss

focal = FocalLoss(alpha=0.25, gamma=2.0)
dice = DiceLoss(mode="multiclass", from_logits=True)
jaccard = JaccardLoss(mode="multilabel")
tversky = TverskyLoss(alpha=0.3, beta=0.7)
lovasz = LovaszHingeLoss(per_image=True)
bi_tempered = BiTemperedLogisticLoss(t1=0.8, t2=1.2, label_smooth=0.1)

compiled_focal = torch.compile(focal)
compiled_dice = torch.compile(dice)
compiled_jaccard = torch.compile(jaccard)
compiled_tversky = torch.compile(tversky)
compiled_lovasz = torch.compile(lovasz)
compiled_bi_tempered = torch.compile(bi_tempered)
