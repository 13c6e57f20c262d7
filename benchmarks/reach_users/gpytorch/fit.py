"""Training and prediction steps, compiled whole: the GP library is traced from here."""

import gpytorch
import torch


def train_step(model, train_x, train_y):
    """The negative marginal log likelihood of the training data, and its gradients."""
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    loss = -mll(model(train_x), train_y)
    loss.backward()
    return loss


def variational_train_step(model, train_x, train_y):
    """The negative ELBO of a sparse GP on one minibatch, and its gradients."""
    elbo = gpytorch.mlls.VariationalELBO(model.likelihood, model, num_data=train_y.size(0))
    loss = -elbo(model(train_x), train_y)
    loss.backward()
    return loss


def predict(model, test_x):
    """Posterior predictive mean and variance (model and likelihood in eval mode)."""
    observed = model.likelihood(model(test_x))
    return observed.mean, observed.variance


def predict_fast(model, test_x):
    """The same with gpytorch's LOVE predictive variances."""
    with gpytorch.settings.fast_pred_var():
        observed = model.likelihood(model(test_x))
        return observed.mean, observed.variance


compiled_train_step = torch.compile(train_step)
compiled_variational_train_step = torch.compile(variational_train_step)
compiled_predict = torch.compile(predict)
compiled_predict_fast = torch.compile(predict_fast)
