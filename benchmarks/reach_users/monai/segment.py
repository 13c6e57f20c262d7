"""A small 2-D segmentation network, patch-wise inference over a larger image, and a training step."""

import torch
from monai.inferers import SlidingWindowInferer, sliding_window_inference
from monai.losses import DiceCELoss
from monai.networks.nets import UNet

loss_function = DiceCELoss(to_onehot_y=True, softmax=True)


def unet() -> UNet:
    return UNet(spatial_dims=2, in_channels=1, out_channels=3, channels=(8, 16), strides=(2,), num_res_units=1)


def infer(model, image):
    """The whole image, predicted 16x16 window by window with overlap, blended with a Gaussian."""
    return sliding_window_inference(image, roi_size=(16, 16), sw_batch_size=2, predictor=model, overlap=0.25,
                                    mode="gaussian")


inferer = SlidingWindowInferer(roi_size=(16, 16), sw_batch_size=2, overlap=0.25)


def infer_with_inferer(model, image):
    return inferer(image, model)


def train_step(model, image, label):
    loss = loss_function(model(image), label)
    loss.backward()
    return loss


compiled_infer = torch.compile(infer)
compiled_infer_with_inferer = torch.compile(infer_with_inferer)
compiled_train_step = torch.compile(train_step)
