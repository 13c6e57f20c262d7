"""Arguments that Dynamo specialises on: a new value compiles a new graph."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from compile_lint.rules.base import Rule

# Arguments Dynamo bakes into the graph as constants: every new value recompiles.
SPECIALIZED_KEYWORDS = {
    "torch.nn.functional.interpolate": ("scale_factor", 2),
    "torch.nn.functional.upsample": ("scale_factor", 2),
    "torch.nn.functional.dropout": ("p", 1),
    "torch.nn.functional.dropout1d": ("p", 1),
    "torch.nn.functional.dropout2d": ("p", 1),
    "torch.nn.functional.dropout3d": ("p", 1),
    "torch.nn.functional.alpha_dropout": ("p", 1),
    "torch.nn.functional.feature_alpha_dropout": ("p", 1),
    "torch.nn.functional.layer_norm": ("eps", 4),
    "torch.nn.functional.group_norm": ("eps", 4),
    "torch.nn.functional.rms_norm": ("eps", 3),
    "torch.nn.functional.batch_norm": ("eps", 7),
    "torch.nn.functional.pad": ("value", 3),
    "builtins.range": (None, 0),
}


def specialized_arguments(rule: Rule, call: cst.Call) -> Iterator[tuple[cst.BaseExpression, str]]:
    """(argument, description) pairs of `call` that Dynamo specializes on."""
    qualified = rule.context.qualname(call.func) or ""
    if qualified in SPECIALIZED_KEYWORDS:
        keyword, position = SPECIALIZED_KEYWORDS[qualified]
        short = qualified.rsplit(".", 1)[-1]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if keyword is None:  # range(): every argument
            for arg in positional:
                yield arg.value, "range()"
            return
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                yield arg.value, f"{short}({keyword}=)"
        if len(positional) > position:
            yield positional[position].value, f"{short}({keyword}=)"
        return

