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


NEW_KIND_BUILDERS = {
    "torchdiffeq": _torchdiffeq_units,
}
