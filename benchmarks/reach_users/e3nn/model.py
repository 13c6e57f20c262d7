"""An E(3)-equivariant interatomic-potential-style network, written from e3nn's pieces as its
tutorials do: spherical harmonics of the edges, a radial MLP giving the tensor product's weights,
a gated nonlinearity, a scatter over neighbours; and e3nn's own point-cloud network."""

import torch
from e3nn import o3
from e3nn.math import soft_one_hot_linspace
from e3nn.nn import FullyConnectedNet, Gate
from e3nn.nn.models.v2106.gate_points_networks import SimpleNetwork

MAX_RADIUS = 2.5
BASIS = 6


class Interaction(torch.nn.Module):
    def __init__(self, irreps_in="4x0e", irreps_sh="1x0e+1x1o+1x2e", irreps_out="4x0e+2x1o"):
        super().__init__()
        self.irreps_in, self.irreps_sh = o3.Irreps(irreps_in), o3.Irreps(irreps_sh)
        scalars, vectors = o3.Irreps(irreps_out).count("0e"), o3.Irreps(irreps_out).count("1o")
        self.gate = Gate(f"{scalars}x0e", [torch.nn.functional.silu], f"{vectors}x0e", [torch.sigmoid],
                         f"{vectors}x1o")
        self.tp = o3.FullyConnectedTensorProduct(self.irreps_in, self.irreps_sh, self.gate.irreps_in,
                                                 shared_weights=False)
        self.radial = FullyConnectedNet([BASIS, 16, self.tp.weight_numel], torch.nn.functional.silu)
        self.readout = o3.Linear(self.gate.irreps_out, "1x0e")

    def forward(self, features, positions, edge_src, edge_dst):
        edge_vec = positions[edge_dst] - positions[edge_src]
        sh = o3.spherical_harmonics(self.irreps_sh, edge_vec, normalize=True, normalization="component")
        embedded = soft_one_hot_linspace(edge_vec.norm(dim=1), 0.0, MAX_RADIUS, BASIS, basis="smooth_finite",
                                         cutoff=True)
        messages = self.tp(features[edge_src], sh, self.radial(embedded))
        summed = torch.zeros(features.shape[0], messages.shape[1]).index_add(0, edge_dst, messages)
        return self.readout(self.gate(summed)).sum()


def interaction() -> Interaction:
    return Interaction()


def point_network() -> SimpleNetwork:
    return SimpleNetwork(irreps_in="2x0e", irreps_out="1x0e+1x1o", max_radius=MAX_RADIUS, num_neighbors=3.0,
                         num_nodes=5.0, mul=4, layers=1, lmax=1)


def tensor_product():
    return o3.FullyConnectedTensorProduct("2x0e+1x1o", "1x0e+1x1o", "2x0e+2x1o")
