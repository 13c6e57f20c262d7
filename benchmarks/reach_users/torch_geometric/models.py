"""Graph and point-cloud models built from PyG's layers, the way its examples write them."""

import torch
from torch import nn
from torch_geometric.nn import (
    GAT,
    GCN,
    EdgeConv,
    GraphSAGE,
    PointNetConv,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)
from torch_geometric.utils import to_dense_batch


class GraphClassifier(nn.Module):
    """GCN node embeddings, mean-pooled per graph, then a linear head."""

    def __init__(self, features=8, hidden=16, classes=3):
        super().__init__()
        self.gnn = GCN(features, hidden, num_layers=2)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, edge_index, batch):
        return self.head(global_mean_pool(self.gnn(x, edge_index), batch))


class AttentionClassifier(nn.Module):
    """GAT with edge-wise softmax attention, sum-pooled."""

    def __init__(self, features=8, hidden=16, classes=3):
        super().__init__()
        self.gnn = GAT(features, hidden, num_layers=2, heads=2)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, edge_index, batch):
        return self.head(global_add_pool(self.gnn(x, edge_index), batch))


class SageSetEncoder(nn.Module):
    """GraphSAGE with LSTM neighbour aggregation, then each graph's nodes padded into a dense batch."""

    def __init__(self, features=8, hidden=16):
        super().__init__()
        self.gnn = GraphSAGE(features, hidden, num_layers=2, aggr="mean")

    def forward(self, x, edge_index, batch):
        dense, mask = to_dense_batch(self.gnn(x, edge_index), batch)
        return dense.sum(dim=1) / mask.sum(dim=1, keepdim=True)


def knn_edges(pos, batch, k=4):
    """Each point's k nearest neighbours within its own cloud, as an edge index (no torch_cluster)."""
    distance = torch.cdist(pos, pos)
    distance = distance.masked_fill(batch[:, None] != batch[None, :], float("inf"))
    distance.fill_diagonal_(float("inf"))
    neighbours = distance.topk(k, largest=False).indices
    source = neighbours.reshape(-1)
    target = torch.arange(pos.size(0), device=pos.device).repeat_interleave(k)
    return torch.stack([source, target])


class PointNet(nn.Module):
    """PointNet++-style local feature learning (PointNetConv), then EdgeConv, max-pooled per cloud."""

    def __init__(self, classes=4):
        super().__init__()
        self.local = PointNetConv(nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 16)))
        self.edge = EdgeConv(nn.Sequential(nn.Linear(32, 16), nn.ReLU()), aggr="max")
        self.head = nn.Linear(16, classes)

    def forward(self, pos, batch):
        edge_index = knn_edges(pos, batch)
        features = self.local(None, pos, edge_index)
        features = self.edge(features, edge_index)
        return self.head(global_max_pool(features, batch))
