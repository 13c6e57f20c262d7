"""Metric learning the way the library's README trains: an embedder, a miner and a loss, one step compiled."""

import torch
from pytorch_metric_learning import distances, losses, miners, reducers
from torch import nn


class Embedder(nn.Module):
    def __init__(self, features=12, dim=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, dim))

    def forward(self, x):
        return self.net(x)


distance = distances.CosineSimilarity()
reducer = reducers.ThresholdReducer(low=0)
loss_func = losses.TripletMarginLoss(margin=0.2, distance=distance, reducer=reducer)
mining_func = miners.TripletMarginMiner(margin=0.2, distance=distance, type_of_triplets="semihard")
pair_miner = miners.MultiSimilarityMiner(epsilon=0.1)
contrastive = losses.ContrastiveLoss(pos_margin=0, neg_margin=1)


def train_step(model, data, labels):
    embeddings = model(data)
    indices_tuple = mining_func(embeddings, labels)
    loss = loss_func(embeddings, labels, indices_tuple)
    loss.backward()
    return loss


def pair_train_step(model, data, labels):
    embeddings = model(data)
    loss = contrastive(embeddings, labels, pair_miner(embeddings, labels))
    loss.backward()
    return loss


compiled_train_step = torch.compile(train_step)
compiled_pair_train_step = torch.compile(pair_train_step)
