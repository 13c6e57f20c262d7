"""The reach corpus's sixth round (issue 39): libraries of kinds the first seventeen lacked, chosen
and labelled by Dynamo before anyone looked at compile-lint's output on them.

Optimizers (pytorch-optimizer, schedulefree): an `Optimizer` subclass's `step` under
`@torch.no_grad()`, called inside a compiled training step or compiled alone (PyTorch's
"compiled optimizer" recipe), optimizers found in a registry by name, wrappers holding another
optimizer, closures passed to `step`, the library's loss modules. Probabilistic programs
(pyro-ppl): `PyroModule`'s metaclass `__call__`, effect handlers, `Predictive` and
`Trace_ELBO` objects built and called in traced code. Normalizing flows (zuko): a flow called
on its context builds a distribution and its transforms in traced code, then `log_prob` /
`sample` / `rsample_and_log_prob`; `autograd.Function`s for bisection, quadrature and the
continuous flow's ODE adjoint. Metrics (torchmetrics): `update` and `compute` wrapped by
closures stored on the instance, `forward`'s state juggling, the functional API. Equivariant
networks (e3nn): irreps objects parsed in traced code, tensor products whose code is generated
at build time, spherical harmonics. Neural operators (neuraloperator): spectral convolutions
with complex weights, factorised (tensorly) weights chosen by name, loss objects that are not
modules. Adapters (peft): LoRA / DoRA layers dispatched at build time around a transformers
model, `generate`, the `disable_adapter()` context manager. Weight averaging (ema-pytorch): an
`EMA` whose `__new__` picks the class and whose `__call__` runs the averaged copy, `update()`
called after the optimizer's step. Position embeddings (rotary-embedding-torch): frequencies
cached on the module in traced code, `rotate_queries_with_cached_keys` for decoding, axial
frequencies of image patches.

Every non-forward entry calls a user project's own function (benchmarks/reach_users/<package>/,
`user_site`) holding the `torch.compile(...)` a user writes; `lint_entry` names where that
step enters the library (reach_catalog_new_kinds.py's convention).
"""

from __future__ import annotations

import functools

from reach_units import Entry, Unit, forward_entry, randn, token_ids, user_module

# Distribution -> import package (the pins are the `reach` extra's).
ROUND6_PACKAGES = {
    "pytorch-optimizer": "pytorch_optimizer",
    "schedulefree": "schedulefree",
    "pyro-ppl": "pyro",
    "zuko": "zuko",
    "torchmetrics": "torchmetrics",
    "e3nn": "e3nn",
    "neuraloperator": "neuralop",
    "peft": "peft",
    "ema-pytorch": "ema_pytorch",
    "rotary-embedding-torch": "rotary_embedding_torch",
}


def _own(built):
    return (built,)


def _model_and_optimizer(setup):
    return setup.model, setup.optimizer


def _step(name, library, module, function, inputs, modes, lint_entry, bind=_own):
    """An entry calling the user project's FUNCTION(*bind(built), *inputs): what `user_site` names."""
    def target(built):
        return functools.partial(getattr(user_module(library, module), function), *bind(built))
    return Entry(name, target, inputs, modes, lint_entry, user_site=f"reach_users/{library}/{module}.py:{function}")


def _user_forward(library, site, inputs, lint_entry, modes=("eval", "train")):
    """`torch.compile(model)` of a user's module whose forward calls into the library."""
    return Entry("forward", lambda m: m, inputs, modes, lint_entry, True, f"reach_users/{library}/{site}")


def _training_steps(library, batch, loss, step_target, with_optimizer_step=True):
    """The user's train.py:train_step (forward, loss, backward, the optimizer's step) and, unless told
    not to, train.py:optimizer_step: the step alone, after one batch's gradients computed eagerly."""
    def gradients(setup):
        import torch.nn.functional as F

        (x, y), _ = batch(setup)
        getattr(F, loss)(setup.model(x), y).backward()
        return (), {}

    found = (_step("train_step", library, "train", "train_step", batch, ("train",), step_target, _model_and_optimizer),)
    if with_optimizer_step:
        found += (_step("optimizer_step", library, "train", "optimizer_step", gradients, ("train",), step_target,
                        lambda s: (s.optimizer,)),)
    return found


# ----------------------------------------------------------------------------- pytorch-optimizer

def _pytorch_optimizer_units():
    def setup(factory, *args, **options):
        return lambda: getattr(user_module("pytorch_optimizer", "model"), factory)(*args, **options)

    def batch(setup):
        return (randn(8, 12), token_ids(3, 8)), {}

    def entries(step_target, with_optimizer_step=True):
        return _training_steps("pytorch_optimizer", batch, "cross_entropy", step_target, with_optimizer_step)

    def loss(name, inputs):
        return Unit("pytorch_optimizer", name, lambda: getattr(user_module("pytorch_optimizer", "losses"),
                                                                  name.lower()),
                    (forward_entry(inputs, ("train",)),))

    optimizer = "pytorch_optimizer/optimizer"
    sam = f"{optimizer}/sam.py:SAM"
    logits_and_masks = lambda m: ((randn(2, 1, 8, 8), (randn(2, 1, 8, 8) > 0).float()), {})  # noqa: E731
    return [
        Unit("pytorch_optimizer", "AdaBelief-by-name", setup("by_name", "adabelief", lr=1e-3),
             entries(f"{optimizer}/adabelief.py:AdaBelief.step")),
        Unit("pytorch_optimizer", "Lamb-create_optimizer", setup("from_factory", "lamb", weight_decay=1e-2),
             entries(f"{optimizer}/lamb.py:Lamb.step")),
        Unit("pytorch_optimizer", "Ranger21-create_optimizer",
             setup("from_factory", "ranger21", num_iterations=100, weight_decay=1e-2),
             entries(f"{optimizer}/ranger21.py:Ranger21.step", with_optimizer_step=False)),
        Unit("pytorch_optimizer", "Prodigy-by-name", setup("by_name", "prodigy", lr=1.0),
             entries(f"{optimizer}/prodigy.py:Prodigy.step")),
        Unit("pytorch_optimizer", "SOAP-by-name", setup("by_name", "soap", precondition_frequency=1),
             entries(f"{optimizer}/soap.py:SOAP.step")),
        Unit("pytorch_optimizer", "Muon", setup("muon"), entries(f"{optimizer}/muon/muon.py:Muon.step")),
        Unit("pytorch_optimizer", "Lookahead-AdamP", setup("lookahead_adamp"),
             entries(f"{optimizer}/lookahead.py:Lookahead.step")),
        Unit("pytorch_optimizer", "SAM-SGD", setup("sharpness_aware"), (
            _step("sam_train_step", "pytorch_optimizer", "train", "sam_train_step", batch, ("train",),
                  (f"{sam}.first_step", f"{sam}.second_step"), _model_and_optimizer),
            _step("sam_closure_step", "pytorch_optimizer", "train", "sam_closure_step", batch, ("train",),
                  f"{sam}.step", _model_and_optimizer),
        )),
        loss("Focal", logits_and_masks),
        loss("Dice", lambda m: ((randn(2, 3, 8, 8), token_ids(3, 2, 8, 8)), {})),
        loss("Jaccard", lambda m: ((randn(2, 3, 8, 8), (randn(2, 3, 8, 8) > 0).float()), {})),
        loss("Tversky", lambda m: ((randn(2, 1, 8, 8).sigmoid(), (randn(2, 1, 8, 8) > 0).float()), {})),
        loss("Lovasz", logits_and_masks),
        loss("Bi_tempered", lambda m: ((randn(4, 3), token_ids(3, 4)), {})),
    ]


# ----------------------------------------------------------------------------- schedulefree

def _schedulefree_units():
    def setup(factory):
        return lambda: getattr(user_module("schedulefree", "setup"), factory)()

    def batch(setup):
        return (randn(8, 6), randn(8, 1)), {}

    def entries(cls, evaluate=True):
        found = _training_steps("schedulefree", batch, "mse_loss", f"schedulefree/{cls}.step")
        if evaluate:
            found += (_step("evaluate", "schedulefree", "train", "evaluate", batch, ("train",),
                            (f"schedulefree/{cls}.eval", f"schedulefree/{cls}.train"), _model_and_optimizer),)
        return found

    return [
        Unit("schedulefree", "AdamWScheduleFree", setup("adamw"),
             entries("adamw_schedulefree.py:AdamWScheduleFree")),
        Unit("schedulefree", "RAdamScheduleFree", setup("radam"),
             entries("radam_schedulefree.py:RAdamScheduleFree", evaluate=False)),
        Unit("schedulefree", "ScheduleFreeWrapper-SGD", setup("wrapped_sgd"),
             entries("wrap_schedulefree.py:ScheduleFreeWrapper")),
        Unit("schedulefree", "SGDScheduleFreeClosure", setup("sgd_closure"), (
            _step("closure_step", "schedulefree", "train", "closure_step", batch, ("train",),
                  "schedulefree/sgd_schedulefree_closure.py:SGDScheduleFreeClosure.step", _model_and_optimizer),
        )),
    ]


# ----------------------------------------------------------------------------- pyro-ppl

def _pyro_units():
    def fitted(factory):
        return lambda: getattr(user_module("pyro", "model"), factory)()

    def regression_data(fitted):
        return (randn(4, 3), randn(4)), {}

    def features(fitted):
        return (randn(4, 3),), {}

    def mixture_data(fitted):
        return (randn(6),), {}

    both = lambda f: (f.model, f.guide)  # noqa: E731
    elbo = ("pyro/infer/trace_elbo.py:Trace_ELBO.differentiable_loss",)
    median = ("pyro/infer/autoguide/guides.py:AutoNormal.median",)
    return [
        Unit("pyro", "BayesianRegression-AutoNormal", fitted("regression"), (
            Entry("forward", lambda f: f.model, features, ("eval",), "pyro/nn/module.py:PyroModule.__call__", True,
                  "reach_users/pyro/model.py:BayesianRegression.forward"),
            Entry("guide", lambda f: f.guide, regression_data, ("eval",), "pyro/nn/module.py:PyroModule.__call__",
                  True),
            _step("elbo_step", "pyro", "infer", "elbo_step", regression_data, ("train",), elbo, both),
            _step("predict", "pyro", "infer", "predict", features, ("eval",),
                  "pyro/infer/predictive.py:Predictive.forward", both),
            _step("log_joint", "pyro", "infer", "log_joint", regression_data, ("eval",),
                  ("pyro/poutine/trace_messenger.py:TraceHandler.get_trace",
                   "pyro/poutine/trace_struct.py:Trace.log_prob_sum"), both),
            _step("posterior_median", "pyro", "infer", "posterior_median", features, ("eval",), median,
                  lambda f: (f.guide,)),
        )),
        Unit("pyro", "GaussianMixture-AutoDiagonalNormal", fitted("mixture_model"), (
            _step("elbo_step", "pyro", "infer", "elbo_step", mixture_data, ("train",), elbo, both),
            _step("posterior_median", "pyro", "infer", "posterior_median", mixture_data, ("eval",),
                  "pyro/infer/autoguide/guides.py:AutoContinuous.median", lambda f: (f.guide,)),
        )),
    ]


# ----------------------------------------------------------------------------- zuko

def _zuko_units():
    def flow(factory):
        return lambda: getattr(user_module("zuko", "flows"), factory)()

    def pairs(flow):
        return (randn(8, 3), randn(8, 2)), {}

    def observation(flow):
        return (randn(2),), {}

    def contexts(flow):
        return (randn(8, 2),), {}

    call = "zuko/lazy.py:Flow.forward"
    distribution = "zuko/distributions.py:NormalizingFlow"
    train = _step("train_step", "zuko", "train", "train_step", pairs, ("train",), (call, f"{distribution}.log_prob"))
    sample = _step("posterior_samples", "zuko", "train", "posterior_samples", observation, ("eval",),
                   (call, f"{distribution}.rsample"))
    return [
        Unit("zuko", "MAF", flow("maf"), (
            train, sample,
            _step("log_density", "zuko", "train", "log_density", pairs, ("eval",), (call, f"{distribution}.log_prob")),
            _step("reparameterized", "zuko", "train", "reparameterized", contexts, ("train",),
                  (call, f"{distribution}.rsample_and_log_prob")),
        )),
        Unit("zuko", "NSF", flow("nsf"), (train, sample)),
        Unit("zuko", "RealNVP", flow("real_nvp"), (train, sample)),
        Unit("zuko", "NAF", flow("naf"), (train, sample)),
        Unit("zuko", "UNAF", flow("unaf"), (train, sample)),
        Unit("zuko", "CNF", flow("cnf"), (train, sample)),
    ]


# ----------------------------------------------------------------------------- torchmetrics

def _torchmetrics_units():
    def metric(factory):
        return lambda: getattr(user_module("torchmetrics", "metrics"), factory)()

    def scores(metric):
        return (randn(8, 4).softmax(-1), token_ids(4, 8)), {}

    def images(metric):
        import torch

        target = torch.rand(2, 1, 16, 16)
        return (target * 0.9 + 0.05 * torch.rand(2, 1, 16, 16), target), {}

    def values(metric):
        return (randn(8), randn(8)), {}

    def accumulated(batch):
        def inputs(metric):
            args, kwargs = batch(metric)
            metric.update(*args, **kwargs)
            return (), {}
        return inputs

    def update(batch, target):
        return _step("update", "torchmetrics", "validate", "validation_step", batch, ("eval",), target)

    def compute(batch, target):
        return _step("compute", "torchmetrics", "validate", "epoch_value", accumulated(batch), ("eval",), target)

    classification = "torchmetrics/classification"
    stat_scores = f"{classification}/stat_scores.py:MulticlassStatScores.update"
    curve = f"{classification}/precision_recall_curve.py:MulticlassPrecisionRecallCurve.update"
    forward = lambda batch: forward_entry(batch, ("eval",))  # noqa: E731
    return [
        Unit("torchmetrics", "MulticlassAccuracy", metric("accuracy"), (
            forward(scores), update(scores, stat_scores),
            compute(scores, f"{classification}/accuracy.py:MulticlassAccuracy.compute"),
            _step("functional", "torchmetrics", "validate", "functional_scores", scores, ("eval",),
                  ("torchmetrics/functional/classification/accuracy.py:accuracy",
                   "torchmetrics/functional/classification/f_beta.py:f1_score",
                   "torchmetrics/functional/classification/auroc.py:auroc"), lambda m: ()),
        )),
        Unit("torchmetrics", "MulticlassF1Score", metric("f1"), (forward(scores), update(scores, stat_scores))),
        Unit("torchmetrics", "MulticlassAUROC", metric("auroc"), (
            forward(scores), update(scores, curve),
            compute(scores, f"{classification}/auroc.py:MulticlassAUROC.compute"),
        )),
        Unit("torchmetrics", "MetricCollection", metric("classification_suite"), (
            forward(scores), update(scores, "torchmetrics/collections.py:MetricCollection.update"),
            compute(scores, "torchmetrics/collections.py:MetricCollection.compute"),
        )),
        Unit("torchmetrics", "SSIM", metric("ssim"), (
            forward(images), update(images, "torchmetrics/image/ssim.py:StructuralSimilarityIndexMeasure.update"),
        )),
        Unit("torchmetrics", "PSNR", metric("psnr"), (forward(images),)),
        Unit("torchmetrics", "MeanSquaredError", metric("mse"), (forward(values),)),
        Unit("torchmetrics", "PearsonCorrCoef", metric("pearson"), (
            forward(values), compute(values, "torchmetrics/regression/pearson.py:PearsonCorrCoef.compute"),
        )),
    ]


# ----------------------------------------------------------------------------- e3nn

def _e3nn_units():
    def graph(model):
        import torch

        return (randn(5, 4), randn(5, 3), torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([1, 2, 3, 4, 0, 2])), {}

    def labelled_graph(model):
        args, _ = graph(model)
        return args + (randn(()),), {}

    def cloud(model):
        import torch

        return ({"pos": randn(5, 3) * 0.8, "x": randn(5, 2), "batch": torch.zeros(5, dtype=torch.long)},), {}

    def labelled_cloud(model):
        args, _ = cloud(model)
        return args + (randn(1, 4),), {}

    def rotation(model):
        from e3nn import o3

        return ("2x0e+1x1o+1x2e", randn(3, 10), o3.rand_matrix()), {}

    o3, nn = "e3nn/o3", "e3nn/nn"
    interaction = (f"{o3}/_spherical_harmonics.py:spherical_harmonics",
                   "e3nn/math/_soft_one_hot_linspace.py:soft_one_hot_linspace",
                   f"{o3}/_tensor_product/_tensor_product.py:TensorProduct.forward", f"{nn}/_fc.py:_Layer.forward",
                   f"{nn}/_gate.py:Gate.forward", f"{o3}/_linear.py:Linear.forward")
    network = "e3nn/nn/models/v2106/gate_points_networks.py:SimpleNetwork.forward"
    return [
        Unit("e3nn", "Interaction", lambda: user_module("e3nn", "model").interaction(), (
            _user_forward("e3nn", "model.py:Interaction.forward", graph, interaction),
            _step("energy_and_forces", "e3nn", "train", "energy_and_forces", graph, ("train",), interaction),
            _step("train_step", "e3nn", "train", "train_step", labelled_graph, ("train",), interaction),
        )),
        Unit("e3nn", "SimpleNetwork", lambda: user_module("e3nn", "model").point_network(), (
            forward_entry(cloud, ("eval",)),
            _step("point_cloud_step", "e3nn", "train", "point_cloud_step", labelled_cloud, ("train",), network),
        )),
        Unit("e3nn", "FullyConnectedTensorProduct", lambda: user_module("e3nn", "model").tensor_product(), (
            forward_entry(lambda m: ((randn(3, 5), randn(3, 4)), {})),
            _step("rotate_features", "e3nn", "train", "rotate_features", rotation, ("eval",),
                  f"{o3}/_irreps.py:Irreps.D_from_matrix", lambda m: ()),
            _step("edge_harmonics", "e3nn", "train", "edge_harmonics", lambda m: ((randn(6, 3),), {}), ("eval",),
                  f"{o3}/_spherical_harmonics.py:spherical_harmonics", lambda m: ()),
        )),
    ]


# ----------------------------------------------------------------------------- neuraloperator

def _neuralop_units():
    def model(factory):
        return lambda: getattr(user_module("neuralop", "models"), factory)()

    def fields(model):
        return (randn(2, 1, 16, 16),), {}

    def pairs(model):
        return (randn(2, 1, 16, 16), randn(2, 1, 16, 16)), {}

    losses = "neuralop/losses/data_losses.py"
    l2 = f"{losses}:LpLoss.__call__"

    def train(name):
        return _step("train_step", "neuralop", "train", "train_step", pairs, ("train",), (l2, name))

    fno, uno = "neuralop/models/fno.py:FNO.forward", "neuralop/models/uno.py:UNO.forward"
    h1 = Entry("h1_loss", lambda m: user_module("neuralop", "train").h1loss, pairs, ("train",),
               f"{losses}:H1Loss.__call__")
    return [
        Unit("neuralop", "FNO", model("fno"), (
            forward_entry(fields), train(fno),
            _step("evaluate", "neuralop", "train", "evaluate", pairs, ("eval",),
                  (l2, f"{losses}:H1Loss.__call__", fno)),
            h1,
        )),
        Unit("neuralop", "TFNO-tucker", model("tfno"), (forward_entry(fields), train(fno))),
        Unit("neuralop", "FNO-padded", model("fno_padded"), (forward_entry(fields),)),
        Unit("neuralop", "UNO", model("uno"), (forward_entry(fields), train(uno))),
    ]


# ----------------------------------------------------------------------------- peft

def _peft_units():
    def adapted(factory):
        return lambda: getattr(user_module("peft", "adapters"), factory)()

    def tokens(model):
        return (), {"input_ids": token_ids(61, 2, 6) + 3}

    def labelled(model):
        ids = token_ids(61, 2, 6) + 3
        return (ids, ids), {}

    def prompt(model):
        return (token_ids(61, 1, 4) + 3,), {}

    causal = "peft/peft_model.py:PeftModelForCausalLM"
    train = _step("train_step", "peft", "train", "train_step", labelled, ("train",), f"{causal}.forward")
    return [
        Unit("peft", "LoRA-Llama", adapted("lora_llama"), (
            forward_entry(tokens), train,
            _step("base_logits", "peft", "train", "base_logits", lambda m: ((token_ids(61, 2, 6) + 3,), {}),
                  ("eval",), ("peft/peft_model.py:PeftModel.disable_adapter", f"{causal}.forward")),
            _step("generate", "peft", "train", "generate", prompt, ("eval",), f"{causal}.generate"),
        )),
        Unit("peft", "DoRA-Llama", adapted("dora_llama"), (forward_entry(tokens, ("train",)), train)),
        Unit("peft", "LoRA-MLP", adapted("lora_mlp"), (forward_entry(lambda m: ((randn(3, 10),), {})),)),
    ]


# ----------------------------------------------------------------------------- ema-pytorch

def _ema_units():
    def setup(factory):
        return lambda: getattr(user_module("ema_pytorch", "train"), factory)()

    def batch(setup):
        return (randn(8, 8), token_ids(2, 8)), {}

    def entries(cls, evaluate=True):
        update = f"ema_pytorch/{cls}.update"
        found = [_step("train_step", "ema_pytorch", "train", "train_step", batch, ("train",), update,
                       lambda s: (s.model, s.optimizer, s.ema)),
                 _step("update", "ema_pytorch", "train", "update_ema", lambda s: ((), {}), ("train",), update,
                       lambda s: (s.ema,))]
        if evaluate:
            found.append(_step("evaluate", "ema_pytorch", "train", "evaluate", lambda s: ((randn(3, 8),), {}),
                               ("eval",), f"ema_pytorch/{cls}.__call__", lambda s: (s.ema,)))
        return tuple(found)

    return [
        Unit("ema_pytorch", "EMA", setup("with_ema"), entries("ema_pytorch.py:EMA")),
        Unit("ema_pytorch", "PostHocEMA", setup("with_post_hoc_ema"), entries("post_hoc_ema.py:PostHocEMA", False)),
    ]


# ----------------------------------------------------------------------------- rotary-embedding-torch

def _rotary_units():
    def layer(factory):
        return lambda: getattr(user_module("rotary_embedding_torch", "attention"), factory)()

    def sequence(model):
        return (randn(2, 6, 32),), {}

    def cached(model):
        return (randn(2, 1, 32), randn(2, 2, 5, 16), randn(2, 2, 5, 16)), {}

    rotary = "rotary_embedding_torch/rotary_embedding_torch.py"
    return [
        Unit("rotary_embedding_torch", "RotaryAttention", layer("attention"), (
            _user_forward("rotary_embedding_torch", "attention.py:RotaryAttention.forward", sequence,
                          f"{rotary}:RotaryEmbedding.rotate_queries_or_keys"),
            _step("decode_step", "rotary_embedding_torch", "attention", "decode_step", cached, ("eval",),
                  f"{rotary}:RotaryEmbedding.rotate_queries_with_cached_keys"),
        )),
        Unit("rotary_embedding_torch", "RotaryAttention-xpos", layer("xpos_attention"), (
            _user_forward("rotary_embedding_torch", "attention.py:RotaryAttention.forward", sequence,
                          f"{rotary}:RotaryEmbedding.rotate_queries_and_keys"),
        )),
        Unit("rotary_embedding_torch", "RotaryEmbedding-pixel-axial", layer("pixel_rotary"), (
            _step("rotate_patches", "rotary_embedding_torch", "attention", "rotate_patches",
                  lambda m: ((randn(2, 4, 4, 32),), {}), ("eval", "train"),
                  (f"{rotary}:RotaryEmbedding.get_axial_freqs", f"{rotary}:apply_rotary_emb")),
        )),
    ]


ROUND6_BUILDERS = {
    "pytorch_optimizer": _pytorch_optimizer_units,
    "schedulefree": _schedulefree_units,
    "pyro": _pyro_units,
    "zuko": _zuko_units,
    "torchmetrics": _torchmetrics_units,
    "e3nn": _e3nn_units,
    "neuralop": _neuralop_units,
    "peft": _peft_units,
    "ema_pytorch": _ema_units,
    "rotary_embedding_torch": _rotary_units,
}
