"""Serving the posterior: the GP module itself compiled, in eval mode (its __call__ predicts)."""

import torch
from gp_model import exact_model, sparse_model


def serve_exact():
    return torch.compile(exact_model().eval())


def serve_sparse():
    return torch.compile(sparse_model().eval())
