"""The reach corpus's libraries of kinds the first eleven lacked (issue 30): ODE solvers,
Gaussian processes, reinforcement learning, graph networks, metric learning, medical
imaging inference, audio codecs.

Same units and entries as reach_catalog.py, with what users of these libraries really
compile beside `forward`: a library function through a closure (`torch.compile(lambda ...:
odeint(...))`), a training step that calls the model, a loss and backward, `predict`-style
methods, a compiled `sample()`. An entry the library's code alone does not show has its
compile-lint `entry-points` target (`lint_entry`) and, in `user_site`, the place in a small
user project under benchmarks/reach_users/<library>/ that compiles it the way a user would;
the probe calls that user project's own function, so the labelled stacks start there.
"""

from __future__ import annotations

import functools

from reach_units import Entry, Unit, forward_entry, method_entry, randn, token_ids, user_module

# Distribution -> import package (the pins are the `reach` extra's, as for the first eleven).
NEW_KIND_PACKAGES = {
    "torchdiffeq": "torchdiffeq",
    "gpytorch": "gpytorch",
}


def _user_entry(name, library, module, function, inputs, modes, lint_entry):
    """An entry that calls the user project's FUNCTION(model, *args): what `user_site` names."""
    def target(model):
        return functools.partial(getattr(user_module(library, module), function), model)
    return Entry(name, target, inputs, modes, lint_entry, user_site=f"reach_users/{library}/{module}.py:{function}")


# ----------------------------------------------------------------------------- torchdiffeq (ODE solvers)

def _torchdiffeq_units():
    def vector_field():
        return user_module("torchdiffeq", "dynamics").ODEFunc()

    def states(model):
        import torch

        return (randn(3, 4), torch.linspace(0.0, 1.0, 5)), {}

    def observed(model):
        import torch

        return (randn(3, 4), torch.linspace(0.0, 1.0, 5), randn(5, 3, 4)), {}

    odeint = "torchdiffeq/_impl/odeint.py:odeint"
    adjoint = "torchdiffeq/_impl/adjoint.py:odeint_adjoint"
    return [
        Unit("torchdiffeq", "ODEFunc", vector_field, (
            _user_entry("odeint-dopri5", "torchdiffeq", "train", "trajectory", states, ("eval", "train"), odeint),
            _user_entry("odeint-rk4", "torchdiffeq", "train", "fixed_step_trajectory", states, ("eval",), odeint),
            _user_entry("odeint_adjoint", "torchdiffeq", "train", "adjoint_trajectory", states, ("train",), adjoint),
            _user_entry("train_step", "torchdiffeq", "train", "train_step", observed, ("train",), odeint),
        )),
    ]


# ----------------------------------------------------------------------------- gpytorch (Gaussian processes)

def _gpytorch_units():
    # Every gpytorch model, kernel, mean and likelihood overrides __call__ (Module.__call__ calls
    # forward, ExactGP.__call__ builds a prediction strategy in eval mode, Kernel.__call__ returns a
    # lazily evaluated operator); predictions read @property getters memoised by @cached.
    def exact():
        return user_module("gpytorch", "gp_model").exact_model()

    def sparse():
        return user_module("gpytorch", "gp_model").sparse_model()

    def test_points(model):
        return (randn(5, 1),), {}

    def training_points(model):
        return (model.train_inputs[0],), {}

    def training_data(model):
        return (model.train_inputs[0], model.train_targets), {}

    def minibatch(model):
        import torch

        x = torch.rand(8, 1)
        return (x, torch.sin(6.0 * x).squeeze(-1)), {}

    exact_call = "gpytorch/models/exact_gp.py:ExactGP.__call__"
    approximate_call = "gpytorch/models/approximate_gp.py:ApproximateGP.__call__"
    likelihood_call = "gpytorch/likelihoods/likelihood.py:Likelihood.__call__"
    moments = ("gpytorch/distributions/multivariate_normal.py:MultivariateNormal.mean",
               "gpytorch/distributions/multivariate_normal.py:MultivariateNormal.variance")
    exact_mll = "gpytorch/mlls/exact_marginal_log_likelihood.py:ExactMarginalLogLikelihood.forward"
    elbo = "gpytorch/mlls/_approximate_mll.py:_ApproximateMarginalLogLikelihood.forward"
    return [
        Unit("gpytorch", "ExactGP-RBF", exact, (
            Entry("forward", lambda m: m, test_points, ("eval",), exact_call, True,
                  "reach_users/gpytorch/serve.py:serve_exact"),
            Entry("forward-prior", lambda m: m, training_points, ("train",), exact_call, True),
            _user_entry("train_step", "gpytorch", "fit", "train_step", training_data, ("train",),
                        (exact_call, exact_mll)),
            _user_entry("predict", "gpytorch", "fit", "predict", test_points, ("eval",),
                        (exact_call, likelihood_call) + moments),
            _user_entry("predict_fast", "gpytorch", "fit", "predict_fast", test_points, ("eval",),
                        (exact_call, likelihood_call) + moments),
        )),
        Unit("gpytorch", "ApproximateGP-Matern", sparse, (
            Entry("forward", lambda m: m, test_points, ("eval", "train"), approximate_call, True,
                  "reach_users/gpytorch/serve.py:serve_sparse"),
            _user_entry("variational_train_step", "gpytorch", "fit", "variational_train_step", minibatch, ("train",),
                        (approximate_call, elbo)),
            _user_entry("predict", "gpytorch", "fit", "predict", test_points, ("eval",),
                        (approximate_call, likelihood_call) + moments),
        )),
    ]


NEW_KIND_BUILDERS = {
    "torchdiffeq": _torchdiffeq_units,
    "gpytorch": _gpytorch_units,
}
