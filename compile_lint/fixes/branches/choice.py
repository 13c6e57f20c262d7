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

Calibrated on the H200 (torch 2.11, bf16; `benchmarks/fix_payoff_device.sh branches,shapes`,
benchmarks/results/h200_payoff/part2/), each row an arm of N matmuls (a tanh each) against
the compiled broken `if`, default compile / reduce-overhead:

| size | N | where | cond | untaken arm ms | cond overhead ms |
| --- | --- | --- | --- | --- | --- |
| [1, 16, 256] | 0 / 1 / 4 | 1.89 / 1.43 / 0.82x | 1.17 / 1.15 / 1.06x | 0.00 / 0.03 / 0.15 | 0.06 |
| [8, 512, 1024] | 0 / 1 / 4 | 1.53 / 1.20 / 0.91x | 1.18 / 1.12 / 1.13x | 0.05 / 0.08 / 0.25 | 0.09 |
| [16, 1024, 2048] | 0 / 1 / 4 | 1.47 / 0.86 / 0.62x | 1.15 / 1.10 / 1.07x | 0.04 / 0.21 / 0.93 | 0.08 |

`REFERENCE` is the largest size, where a wrong choice costs most (torch.where 0.62x with
four matmuls, 0.86x with one): a matmul's untaken cost there is (0.93 - 0.04) / 4 = 0.22 ms
and torch.cond's overhead 0.078 ms. Pointwise work costs an arm 0: it fuses into the
select's kernel (an untaken arm of two pointwise ops cost 0.04 ms or less, and torch.where
beat torch.cond at every size without a matmul). The other heavy kinds keep the matmul's
cost until measured, and a submodule of unknown class costs as a matmul (nn.Linear is the
common one). So "auto" writes `torch.cond` for an arm with any heavy operation: never slower
than the broken original beyond the noise in the table, where torch.where was 0.62x. Under
reduce-overhead at the two smaller sizes torch.where was the faster (torch.cond turns CUDA
graphs off: 0.78x and 0.80x with four matmuls); the setting "where" is for such models.
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
REFERENCE = ((16, 1024, 2048), "bfloat16", "default")

# What one operation of each kind costs an arm (ms at REFERENCE; see the module docstring).
ARM_COSTS = {
    "elementwise": 0.0,  # pointwise math, reductions, views: fused into the select's kernel
    "matmul": 0.22,  # measured: (0.93 - 0.04) / 4 ms
    "convolution": 0.22,  # the heavy kinds below: the matmul's cost until measured
    "attention": 0.22,
    "linalg": 0.22,
    "fft": 0.22,
    "interpolate": 0.22,
    "submodule": 0.22,  # a call of a submodule whose class is not known here
}
COND_OVERHEAD = 0.078  # measured: torch.cond over the taken arm alone, no matmul (ms at REFERENCE)

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
