"""Conditional density estimators of a 3-D parameter given 2-D observations (simulation-based
inference), built with zuko as its tutorials do."""

import zuko


def maf():
    return zuko.flows.MAF(features=3, context=2, transforms=2, hidden_features=[16, 16])


def nsf():
    return zuko.flows.NSF(features=3, context=2, transforms=2, bins=4, hidden_features=[16, 16])


def real_nvp():
    return zuko.flows.RealNVP(features=3, context=2, transforms=2, hidden_features=[16, 16])


def naf():
    """Neural autoregressive flow: monotonic networks, inverted by bisection."""
    return zuko.flows.NAF(features=3, context=2, transforms=1, signal=4, network=dict(hidden_features=[8]),
                          hidden_features=[16])


def unaf():
    """Unconstrained monotonic networks: integrated by Gauss-Legendre quadrature."""
    return zuko.flows.UNAF(features=3, context=2, transforms=1, signal=4, network=dict(hidden_features=[8]),
                           hidden_features=[16])


def cnf():
    """Continuous flow: an ODE solved by zuko's own adaptive solver (an autograd.Function)."""
    return zuko.flows.CNF(features=3, context=2, hidden_features=[16, 16])
