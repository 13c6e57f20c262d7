"""The `tensor-branch-fix` setting: which rewrite a tensor branch gets where both are valid.

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

BRANCH_FIX_CHOICES = ("auto", "where", "cond")
DEFAULT_BRANCH_FIX = "auto"


def branch_fix_choice(context: FileContext) -> str:
    """"where" or "cond": what the configuration asks for where both are valid."""
    choice = context.branch_fix
    return choice if choice in BRANCH_FIX_CHOICES else DEFAULT_BRANCH_FIX
