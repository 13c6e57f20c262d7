"""Arguments that Dynamo specialises on: a new value compiles a new graph."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from compile_lint.rules.base import Rule

# Arguments Dynamo bakes into the graph as constants: every new value recompiles
# (each measured on torch 2.13 with six float values: six graphs). Function -> its
# (keyword, position) pairs; None as keyword means every positional argument.
_F = "torch.nn.functional."
SPECIALIZED_KEYWORDS: dict[str, tuple[tuple[Optional[str], int], ...]] = {
    _F + "interpolate": (("scale_factor", 2),),
    _F + "upsample": (("scale_factor", 2),),
    _F + "dropout": (("p", 1),),
    _F + "dropout1d": (("p", 1),),
    _F + "dropout2d": (("p", 1),),
    _F + "dropout3d": (("p", 1),),
    _F + "alpha_dropout": (("p", 1),),
    _F + "feature_alpha_dropout": (("p", 1),),
    _F + "layer_norm": (("eps", 4),),
    _F + "group_norm": (("eps", 4),),
    _F + "rms_norm": (("eps", 3),),
    _F + "batch_norm": (("eps", 7),),
    _F + "pad": (("value", 3),),
    _F + "scaled_dot_product_attention": (("dropout_p", 4), ("scale", 6)),
    _F + "cosine_similarity": (("eps", 3),),
    _F + "rrelu": (("lower", 1), ("upper", 2)),
    _F + "cross_entropy": (("label_smoothing", 7),),
    _F + "smooth_l1_loss": (("beta", 5),),
    _F + "huber_loss": (("delta", 3),),
    "torch.cdist": (("p", 2),),
    "torch.nan_to_num": (("nan", 1),),
    "builtins.range": ((None, 0),),
}


def specialized_arguments(rule: Rule, call: cst.Call) -> Iterator[tuple[cst.BaseExpression, str]]:
    """(argument, description) pairs of `call` that Dynamo specializes on."""
    qualified = rule.context.qualname(call.func) or ""
    short = qualified.rsplit(".", 1)[-1]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for keyword, position in SPECIALIZED_KEYWORDS.get(qualified, ()):
        if keyword is None:  # range(): every argument
            for arg in positional:
                yield arg.value, "range()"
            continue
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                yield arg.value, f"{short}({keyword}=)"
        if len(positional) > position:
            yield positional[position].value, f"{short}({keyword}=)"
