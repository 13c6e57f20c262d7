"""The `tensor-branch-fix` setting: which rewrite a tensor branch gets where both are valid.

`torch.where` computes both branches and keeps one graph that CUDA graphs can capture (a
held-back H200 measurement: 3-10x with `mode="reduce-overhead"`); `torch.cond` runs only the
taken branch but measured 0.80x the broken original on a per-arm-submodule branch. The
default is set from the H200 measurement: change `DEFAULT_BRANCH_FIX` here.
"""

BRANCH_FIX_CHOICES = ("where", "cond")
DEFAULT_BRANCH_FIX = "where"
