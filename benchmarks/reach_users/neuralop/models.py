"""Fourier neural operators for a 2-D Darcy-flow-style problem, at toy size (neuraloperator's
examples' layout: FNO, its Tucker-factorised TFNO, the U-shaped UNO)."""

from neuralop.models import FNO, TFNO, UNO


def fno():
    return FNO(n_modes=(4, 4), in_channels=1, out_channels=1, hidden_channels=8, n_layers=2,
               projection_channel_ratio=2)


def tfno():
    return TFNO(n_modes=(4, 4), in_channels=1, out_channels=1, hidden_channels=8, n_layers=2,
                factorization="tucker", implementation="factorized", rank=0.5)


def fno_padded():
    """Non-periodic boundaries: domain padding, instance norm, a linear channel-MLP skip."""
    return FNO(n_modes=(4, 4), in_channels=1, out_channels=1, hidden_channels=8, n_layers=2,
               domain_padding=0.25, norm="instance_norm", channel_mlp_skip="linear")


def uno():
    return UNO(in_channels=1, out_channels=1, hidden_channels=8, lifting_channels=8, projection_channels=8,
               n_layers=3, uno_out_channels=[8, 8, 8], uno_n_modes=[[4, 4], [2, 2], [4, 4]],
               uno_scalings=[[1.0, 1.0], [0.5, 0.5], [2.0, 2.0]], channel_mlp_skip="linear")
