"""Energy-and-forces training step, equivariant data augmentation and edge features: compiled."""

import torch
from e3nn import o3


def energy_and_forces(model, features, positions, edge_src, edge_dst):
    """Forces are minus the energy's gradient with respect to the positions."""
    positions = positions.requires_grad_(True)
    energy = model(features, positions, edge_src, edge_dst)
    forces = -torch.autograd.grad(energy, positions, create_graph=True)[0]
    return energy, forces


def train_step(model, features, positions, edge_src, edge_dst, target_energy):
    energy = model(features, positions, edge_src, edge_dst)
    loss = (energy - target_energy).pow(2)
    loss.backward()
    return loss


def rotate_features(irreps, features, rotation):
    """A feature tensor of the given irreps, rotated (what an equivariance check or augmentation does)."""
    return features @ o3.Irreps(irreps).D_from_matrix(rotation).T


def edge_harmonics(vectors, lmax: int = 2):
    return o3.spherical_harmonics(list(range(lmax + 1)), vectors, normalize=True, normalization="component")


def point_cloud_step(network, data, target):
    loss = (network(data) - target).pow(2).mean()
    loss.backward()
    return loss


compiled_energy_and_forces = torch.compile(energy_and_forces)
compiled_train_step = torch.compile(train_step)
compiled_rotate_features = torch.compile(rotate_features)
compiled_edge_harmonics = torch.compile(edge_harmonics)
compiled_point_cloud_step = torch.compile(point_cloud_step)
