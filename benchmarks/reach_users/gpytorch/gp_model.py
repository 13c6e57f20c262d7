"""An exact GP regressor and a sparse variational one, the way gpytorch's tutorials write them."""

import gpytorch
import torch


class ExactGPModel(gpytorch.models.ExactGP):
    def __init__(self, train_x, train_y, likelihood):
        super().__init__(train_x, train_y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


class SparseGPModel(gpytorch.models.ApproximateGP):
    def __init__(self, inducing_points):
        distribution = gpytorch.variational.CholeskyVariationalDistribution(inducing_points.size(0))
        strategy = gpytorch.variational.VariationalStrategy(self, inducing_points, distribution,
                                                            learn_inducing_locations=True)
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5))
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood()

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def exact_model(points: int = 12) -> ExactGPModel:
    train_x = torch.linspace(0, 1, points).unsqueeze(-1)
    train_y = torch.sin(train_x * 6.0).squeeze(-1) + 0.05 * torch.randn(points)
    return ExactGPModel(train_x, train_y, gpytorch.likelihoods.GaussianLikelihood())


def sparse_model(inducing: int = 6) -> SparseGPModel:
    return SparseGPModel(torch.linspace(0, 1, inducing).unsqueeze(-1))
