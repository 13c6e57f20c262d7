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

from reach_units import Entry, Unit, forward_entry, randn, token_ids, user_module

# Distribution -> import package (the pins are the `reach` extra's, as for the first eleven).
NEW_KIND_PACKAGES = {
    "torchdiffeq": "torchdiffeq",
    "gpytorch": "gpytorch",
    "stable-baselines3": "stable_baselines3",
    "torch-geometric": "torch_geometric",
    "pytorch-metric-learning": "pytorch_metric_learning",
    "monai": "monai",
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
    # `.mean` is torch's own MultivariateNormal property; `.variance` is gpytorch's getter.
    moments = ("gpytorch/distributions/multivariate_normal.py:MultivariateNormal.variance",)
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


# ----------------------------------------------------------------------------- stable-baselines3 (RL)

def _sb3_units():
    # Policies pick a distribution class per action space (Categorical, DiagGaussian,
    # SquashedDiagGaussian) and build and fill it in traced code (proba_distribution returns
    # self); predict() goes numpy -> tensor -> numpy around _predict.
    def policy(kind):
        return lambda: getattr(user_module("stable_baselines3", "agent"), kind)()

    def observations(model):
        return (randn(4, 6),), {}

    def numpy_observations(model):
        import numpy as np

        return (np.random.RandomState(0).rand(4, 6).astype(np.float32),), {}

    def frames(model):
        import numpy as np

        return ((np.random.RandomState(0).rand(2, 3, 36, 36) * 255).astype(np.uint8),), {}

    def dict_observations(model):
        import numpy as np

        return ({"state": np.random.RandomState(0).rand(4, 6).astype(np.float32), "mode": np.array([1, 2, 3, 0])},), {}

    def rollout(discrete):
        def inputs(model):

            actions = token_ids(3, 4) if discrete else randn(4, 2)
            return (randn(4, 6), actions, randn(4), randn(4), randn(4)), {}
        return inputs

    policies = "stable_baselines3/common/policies.py"
    predict = f"{policies}:BasePolicy.predict"
    evaluate = f"{policies}:ActorCriticPolicy.evaluate_actions"
    def act(inputs=numpy_observations):
        return _user_entry("predict", "stable_baselines3", "agent", "act", inputs, ("eval",), predict)

    ppo = functools.partial(_user_entry, "ppo_step", "stable_baselines3", "update", "ppo_step")
    return [
        Unit("stable_baselines3", "ActorCriticPolicy-Discrete", policy("discrete_policy"), (
            forward_entry(observations), act(),
            ppo(rollout(True), ("train",), evaluate),
            _user_entry("entropy_bonus", "stable_baselines3", "update", "entropy_bonus", observations, ("eval",),
                        f"{policies}:ActorCriticPolicy.get_distribution"),
        )),
        Unit("stable_baselines3", "ActorCriticPolicy-Box", policy("continuous_policy"), (
            forward_entry(observations), act(), ppo(rollout(False), ("train",), evaluate),
        )),
        Unit("stable_baselines3", "SACPolicy", policy("sac_policy"), (
            forward_entry(observations), act(),
            _user_entry("sac_actor_step", "stable_baselines3", "update", "sac_actor_step", observations, ("train",),
                        ("stable_baselines3/sac/policies.py:Actor.action_log_prob",
                         "stable_baselines3/common/policies.py:ContinuousCritic.forward")),
        )),
        Unit("stable_baselines3", "DQNPolicy", policy("dqn_policy"), (forward_entry(observations), act())),
        Unit("stable_baselines3", "ActorCriticCnnPolicy", policy("pixel_policy"), (act(frames),)),
        Unit("stable_baselines3", "MultiInputActorCriticPolicy", policy("multi_input_policy"),
             (act(dict_observations),)),
    ]


# ----------------------------------------------------------------------------- torch-geometric (graphs, point clouds)

def _pyg_units():
    # The models are a user's (benchmarks/reach_users/torch_geometric/models.py) built from PyG
    # layers: MessagePassing.propagate, aggregation modules (their __call__ overrides forward),
    # self-loop and scatter utilities, pooling functions called by the user's forward.
    def model(name):
        return lambda: getattr(user_module("torch_geometric", "models"), name)()

    def graphs(model):
        import torch

        return (randn(10, 8), token_ids(10, 2, 30), torch.tensor([0] * 5 + [1] * 5)), {}

    def labelled_graphs(model):
        args, _ = graphs(model)
        return args + (token_ids(3, 2),), {}

    def clouds(model):
        import torch

        return (randn(12, 3), torch.tensor([0] * 6 + [1] * 6)), {}

    def labelled_clouds(model):
        args, _ = clouds(model)
        return args + (token_ids(4, 2),), {}

    def forward(name, inputs, library_entries, modes=("eval", "train")):
        return Entry("forward", lambda m: m, inputs, modes, library_entries, True,
                     f"reach_users/torch_geometric/models.py:{name}.forward")

    def train_step(inputs, library_entries):
        return _user_entry("train_step", "torch_geometric", "train", "train_step", inputs, ("train",), library_entries)

    pool = "torch_geometric/nn/pool/glob.py"
    mean_pool, add_pool, max_pool = (f"{pool}:global_mean_pool", f"{pool}:global_add_pool", f"{pool}:global_max_pool")
    dense = "torch_geometric/utils/_to_dense_batch.py:to_dense_batch"
    return [
        Unit("torch_geometric", "GCN-graph-classifier", model("GraphClassifier"), (
            forward("GraphClassifier", graphs, mean_pool), train_step(labelled_graphs, mean_pool))),
        Unit("torch_geometric", "GAT-graph-classifier", model("AttentionClassifier"), (
            forward("AttentionClassifier", graphs, add_pool), train_step(labelled_graphs, add_pool))),
        Unit("torch_geometric", "GraphSAGE-dense-batch", model("SageSetEncoder"), (
            forward("SageSetEncoder", graphs, dense),)),
        Unit("torch_geometric", "PointNet-EdgeConv", model("PointNet"), (
            forward("PointNet", clouds, max_pool), train_step(labelled_clouds, max_pool))),
    ]


# ----------------------------------------------------------------------------- pytorch-metric-learning

def _pml_units():
    # Losses call their distance and reducer modules, unpack index tuples returned by the
    # mining utilities (get_all_pairs_indices, convert_to_triplets), and dispatch per sub-loss
    # through a loss dict; training steps add a miner whose output the loss consumes.
    def loss(name, **options):
        def build():
            from pytorch_metric_learning import losses

            return getattr(losses, name)(**options)
        return build

    def embeddings(model):
        import torch

        return (randn(8, 16), torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])), {}

    def batch(model):
        import torch

        return (randn(8, 12), torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])), {}

    base = ("pytorch_metric_learning/losses/base_metric_loss_function.py:BaseMetricLossFunction.forward",
            "pytorch_metric_learning/miners/base_miner.py:BaseMiner.forward")
    both = forward_entry(embeddings)
    train = forward_entry(embeddings, ("train",))
    return [
        Unit("pytorch_metric_learning", "TripletMarginLoss", loss("TripletMarginLoss", margin=0.1), (both,)),
        Unit("pytorch_metric_learning", "NTXentLoss", loss("NTXentLoss", temperature=0.1), (both,)),
        Unit("pytorch_metric_learning", "MultiSimilarityLoss", loss("MultiSimilarityLoss"), (both,)),
        Unit("pytorch_metric_learning", "SupConLoss", loss("SupConLoss"), (both,)),
        Unit("pytorch_metric_learning", "ArcFaceLoss", loss("ArcFaceLoss", num_classes=4, embedding_size=16), (train,)),
        Unit("pytorch_metric_learning", "ProxyAnchorLoss", loss("ProxyAnchorLoss", num_classes=4, embedding_size=16),
             (train,)),
        Unit("pytorch_metric_learning", "Embedder-miner-loss", lambda: user_module("pytorch_metric_learning",
                                                                                     "train").Embedder(), (
            _user_entry("train_step", "pytorch_metric_learning", "train", "train_step", batch, ("train",), base),
            _user_entry("pair_train_step", "pytorch_metric_learning", "train", "pair_train_step", batch, ("train",),
                        base),
        )),
    ]


# ----------------------------------------------------------------------------- MONAI (medical imaging)

def _monai_units():
    # Patch-wise inference: the user compiles a function that calls sliding_window_inference
    # (or an inferer object's __call__) with the network as a callable argument.
    def unet():
        return user_module("monai", "segment").unet()

    def image(model):
        return (randn(1, 1, 24, 24),), {}

    def labelled(model):
        return (randn(1, 1, 24, 24), token_ids(3, 1, 1, 24, 24)), {}

    windows = "monai/inferers/utils.py:sliding_window_inference"
    return [
        Unit("monai", "UNet", unet, (
            forward_entry(image),
            _user_entry("sliding_window_inference", "monai", "segment", "infer", image, ("eval",), windows),
            _user_entry("SlidingWindowInferer", "monai", "segment", "infer_with_inferer", image, ("eval",),
                        "monai/inferers/inferer.py:SlidingWindowInferer.__call__"),
            _user_entry("train_step", "monai", "segment", "train_step", labelled, ("train",),
                        "monai/losses/dice.py:DiceCELoss.forward"),
        )),
    ]


NEW_KIND_BUILDERS = {
    "torchdiffeq": _torchdiffeq_units,
    "gpytorch": _gpytorch_units,
    "stable_baselines3": _sb3_units,
    "torch_geometric": _pyg_units,
    "pytorch_metric_learning": _pml_units,
    "monai": _monai_units,
}
