"""JIT613 rng-state-in-forward: Seeding or saving the random state, or using a `torch.Generator`,
inside a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import call_name, made_only_by
from compile_lint.rules.support.syntax import keyword_argument
from compile_lint.rules.support.torch_tables import SKIPPED_TORCH_FUNCTIONS


class RngStateInForward(Rule):
    """Seeding or saving the random state, or using a `torch.Generator`, inside a compiled region breaks the graph.

    Why: `torch.manual_seed`, `torch.get_rng_state`/`set_rng_state` and
    `torch.initial_seed` are skipped by Dynamo, and every method of a `torch.Generator`
    (`.seed()`, `.manual_seed()`, `.get_state()`...) is "a stateful RNG operation that
    cannot be soundly traced"; creating a `torch.Generator()` or passing one as
    `generator=` breaks too (measured on torch 2.13). Reseeding in forward to make
    dropout or hashing repeatable (Reformer's reversible layers) breaks on every call.
    (`torch.seed()` alone compiles.)

    Instead: seed once outside the compiled call; inside, draw from the default generator
    (`torch.rand`, `F.dropout`), or pass the random tensor in as an input.
    """

    code = "JIT613"
    name = "rng-state-in-forward"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    gb_types = (  # the same pattern, reported differently
        "torch.Generator method",
        "torch.* op returned non-Tensor",
        "An opaque object was created in the middle of the program.",
        "Failed to convert args/kwargs to proxy",
    )
    message = (
        "seeding, saving the RNG state or using a torch.Generator inside a compiled region "
        "breaks the graph; seed outside (`torch.manual_seed(seed)` before the compiled call) and draw from "
        "the default generator"
    )
    steps = ("torch.manual_seed(seed)",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class RepeatableDropout(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.seed = 1234

                def forward(self, x):
                    torch.manual_seed(self.seed)
                    return torch.nn.functional.dropout(x, 0.1, training=True)
            """,
            entry="RepeatableDropout",
            lines=[10],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class NoisyGate(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.generator = torch.Generator()

                def forward(self, x):
                    self.generator.manual_seed(0)
                    noise = torch.rand(x.shape, generator=self.generator)
                    return x * noise
            """,
            entry="NoisyGate",
            lines=[10, 11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    state = torch.get_rng_state()
                    y = x + torch.rand_like(x)
                    torch.set_rng_state(state)
                    return y
            """,
            lines=[6, 8],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    noise = torch.rand_like(x)
                    return torch.nn.functional.dropout(x + noise, 0.1, training=True)
            """,
        ),
        Valid(
            """
            import sys

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    seed = int(torch.seed() % sys.maxsize)
                    return x * (seed % 2 + 1)
            """,
            note="torch.seed() is traced",
        ),
        Valid(
            """
            import torch
            from torch import nn

            def make_generator(seed):
                generator = torch.Generator()
                generator.manual_seed(seed)
                return generator

            class Model(nn.Module):
                def __init__(self, seed=0):
                    super().__init__()
                    noise = torch.rand(8, generator=make_generator(seed))
                    self.register_buffer("noise", noise)

                def forward(self, x, generator=None):
                    return x + self.noise + torch.rand(x.shape, generator=generator)
            """,
            note="generators used at construction; forward's generator argument is None",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = call_name(self.context, node) or ""
        if name in RNG_STATE_FUNCTIONS:
            self.report(node)
            return
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value in _GENERATOR_METHODS
                and _is_generator(self, func.value)):
            self.report(node)
            return
        generator = keyword_argument(node, "generator")
        if generator is not None and _is_generator(self, generator.value):
            self.report(generator.value)


# The seeding and RNG-state functions Dynamo skips, from its trace rules (the generated
# table), plus what the table does not name: the `torch.random` spellings of the same
# functions, `initial_seed` and the Generator constructor (measured breaking on 2.13).
# The table's other skipped functions are JIT616's.
RNG_STATE_FUNCTIONS = frozenset({
    *(name for name in SKIPPED_TORCH_FUNCTIONS if "rng_state" in name or "manual_seed" in name),
    "torch.random.manual_seed", "torch.random.get_rng_state", "torch.random.set_rng_state",
    "torch.initial_seed", "torch.random.initial_seed", "torch.Generator", "torch._C.Generator",
})

_GENERATOR_METHODS = frozenset({"seed", "manual_seed", "initial_seed", "get_state", "set_state", "clone_state"})


def _is_generator(rule: Rule, expr: cst.BaseExpression) -> bool:
    """True when every value bound to `expr` was made by `torch.Generator(...)`."""
    # `torch.Generator()` itself is reported as a call.
    return not isinstance(expr, cst.Call) and made_only_by(rule.context, expr, _GENERATOR_CONSTRUCTORS)


_GENERATOR_CONSTRUCTORS = frozenset({"torch.Generator", "torch._C.Generator"})
