"""The `tensor-branch-fix` setting: which rewrite a tensor branch gets where both are valid,
and the cost model behind its default, "auto".

Measured on an H200 (torch 2.11, benchmarks/results/h200_fix/README.md; speed over the
compiled broken original, two sizes, bf16 and fp32, default compile / reduce-overhead):

| arms | torch.where | torch.cond |
| --- | --- | --- |
| differ only in values | 1.13-1.55x / 1.10-2.10x | 0.97-1.11x / 1.01-1.10x |
| each arm calls its own submodule | 0.51-0.79x / 0.51-1.71x | 0.83-1.05x / 0.47-1.00x |
| heavy vs cheap arm, cheap arm taken | 0.01-0.62x / 0.01-1.30x | 0.91-3.12x / 0.89-1.88x |

So the default, "auto", writes `torch.where` when both arms only compute values and
`torch.cond` when an arm calls a submodule or does heavy work (matmul, convolution,
attention, linalg, FFT); "where" and "cond" force one rewrite wherever it is valid.

The cost model. `torch.where` pays for the arm it does not need; `torch.cond` pays its own
overhead instead (and on torch 2.11 turns CUDA graphs off for the graph that holds it). So
"auto" writes `torch.cond` when an arm's estimated cost, the sum of `ARM_COSTS` over the
operations it runs (`operation_kind`), exceeds `COND_OVERHEAD`. Both are in one unit: the
milliseconds they cost at `REFERENCE`, the size the numbers were measured at.

Today's numbers are not measurements: elementwise work costs 0 and every heavy kind 1, over
an overhead of 0.5, which is exactly the rule above (`prefers_cond` is True when an arm
holds any heavy operation). To calibrate, run `benchmarks/fix_payoff.py --sections
branches` on the GPU: each row gives, per size, matmuls per arm and compile mode,
`untaken_arm_ms` (where - the arm alone) and `cond_overhead_ms` (cond - the arm alone).
Then, at the reference size and mode: `ARM_COSTS["elementwise"]` = untaken_arm_ms at 0
matmuls / 2 (its arms run two pointwise ops), `ARM_COSTS["matmul"]` = (untaken_arm_ms at
4 matmuls - at 0) / 4 (a tanh or relu per matmul is fused in), and `COND_OVERHEAD` =
cond_overhead_ms at 0 matmuls; the other heavy kinds stay at the matmul's cost until
measured, and a submodule of unknown class costs as a matmul (nn.Linear is the common one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

BRANCH_FIX_CHOICES = ("auto", "where", "cond")
DEFAULT_BRANCH_FIX = "auto"


def branch_fix_choice(context: FileContext) -> str:
    """"where" or "cond": what the configuration asks for where both are valid."""
    choice = context.branch_fix
    return choice if choice in BRANCH_FIX_CHOICES else DEFAULT_BRANCH_FIX


# The size and compile mode ARM_COSTS and COND_OVERHEAD hold for: (batch, tokens, hidden), dtype, mode.
REFERENCE = ((8, 512, 1024), "bfloat16", "default")

# What one operation of each kind costs an arm (ms at REFERENCE; see the module docstring).
ARM_COSTS = {
    "elementwise": 0.0,  # pointwise math, reductions, views: fused into the select's kernel
    "matmul": 1.0,
    "convolution": 1.0,
    "attention": 1.0,
    "linalg": 1.0,
    "fft": 1.0,
    "interpolate": 1.0,
    "submodule": 1.0,  # a call of a submodule whose class is not known here
}
COND_OVERHEAD = 0.5  # what torch.cond adds over running the taken arm alone (ms at REFERENCE)

# Operations by kind: torch functions (qualified names), then methods and name prefixes.
_FUNCTION_KINDS = {
    **dict.fromkeys(("torch.matmul", "torch.mm", "torch.bmm", "torch.einsum", "torch.baddbmm", "torch.addmm",
                     "torch.nn.functional.linear", "torch.nn.functional.bilinear"), "matmul"),
    **dict.fromkeys(("torch.conv1d", "torch.conv2d", "torch.conv3d", "torch.nn.functional.conv1d",
                     "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
                     "torch.nn.functional.conv_transpose1d", "torch.nn.functional.conv_transpose2d",
                     "torch.nn.functional.conv_transpose3d"), "convolution"),
    **dict.fromkeys(("torch.nn.functional.scaled_dot_product_attention",
                     "torch.nn.functional.multi_head_attention_forward"), "attention"),
    "torch.nn.functional.interpolate": "interpolate",
}
_PREFIX_KINDS = {"torch.linalg.": "linalg", "torch.fft.": "fft"}
_METHOD_KINDS = dict.fromkeys(("matmul", "mm", "bmm", "baddbmm", "addmm"), "matmul")


def operation_kind(qualified: Optional[str] = None, method: Optional[str] = None,
                   submodule: bool = False, matmul_operator: bool = False) -> str:
    """The ARM_COSTS kind of one operation: a call of `qualified` (its resolved name), a call of
    a method named `method`, a call of a submodule, or the `@` operator."""
    if matmul_operator:
        return "matmul"
    if qualified:
        if qualified in _FUNCTION_KINDS:
            return _FUNCTION_KINDS[qualified]
        kind = next((kind for prefix, kind in _PREFIX_KINDS.items() if qualified.startswith(prefix)), None)
        if kind is not None:
            return kind
    if method in _METHOD_KINDS:
        return _METHOD_KINDS[method]
    return "submodule" if submodule and not qualified else "elementwise"


def arm_cost(kinds: Iterable[str]) -> float:
    """An arm's estimated cost: the sum of its operations' ARM_COSTS."""
    return sum(ARM_COSTS[kind] for kind in kinds)


def prefers_cond(kinds: Iterable[str]) -> bool:
    """Whether "auto" writes torch.cond for an arm running operations of these kinds: its cost,
    which torch.where would pay when it is not taken, exceeds torch.cond's overhead."""
    return arm_cost(kinds) > COND_OVERHEAD
