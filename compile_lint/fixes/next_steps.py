"""What a person does where a tensor-branch or tensor-to-Python fix is withheld.

Every reason a rewrite gives for withholding itself (`BranchFix.reason`) maps to one
`NextStep`: the recipe a person would follow instead. `with_reason` appends it to the
finding's message, so no message ends in "no automatic fix" without a next step, and
`--explain` / docs/rules.md list the whole table for the rules whose fixes can be
withheld. tests/test_next_steps.py fails when a reason the fixes can give has no entry.

The recipes rest on what torch 2.13 does (CPU, backend="eager"): `torch.cond` compiles
branches whose outputs differ in size but not in rank; with
`torch._dynamo.config.capture_scalar_outputs = True`, an `.item()` used as a slice bound,
the one index of a tensor or a factory/pad/expand/narrow/topk size compiles with
`fullgraph=True` and by default (no `torch._check_is_size` needed; 2.13 deprecates it),
one used as `x[:, n]`, a split size, in an `if` or `range()` does not, and a view size
read from a 0-d input recompiles per value (benchmarks/results/scalar_size_capture.txt); a MoE layer written dense
(every expert on every token, weighted by the routing) or with `F.grouped_mm` over tokens
sorted by expert compiles with `fullgraph=True` (grouped_mm takes bf16 under compile).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

__all__ = ["NEXT_STEPS", "NextStep", "next_step"]


@dataclass(frozen=True)
class NextStep:
    """One kind of withheld fix: `when` names it, `pattern` finds its reasons, `recipe` says what to write."""

    when: str
    pattern: str
    recipe: str

    def matches(self, reason: str) -> bool:
        """True when `reason` (a `BranchFix.reason`) is of this kind."""
        return re.search(self.pattern, reason) is not None


# First match wins: the specific kinds come before the general ones they overlap.
NEXT_STEPS: tuple[NextStep, ...] = (
    NextStep(
        "a masked update whose value may differ per selected element (JIT207)",
        r"may hold one value per selected element",
        "if it is one value per element of `x`, write `x.copy_(torch.where(mask, new, x))`, the mask shaped "
        "like `x`; else update outside compiled code",
    ),
    NextStep(
        "a masked update whose mask rank is unknown (JIT207)",
        r"the dims of .* are unknown: torch\.where needs the mask shaped like",
        "shape the mask like `x` (`mask[..., None]` for each trailing dim it leaves out), then write "
        "`x.copy_(torch.where(mask, x + v, x))`",
    ),
    NextStep(
        "a masked update beyond `+ - * /`, or read from a tensor of another shape (JIT207)",
        r"updates through a mask are rewritten|is more than `\+ - \* /` on tensors read through|"
        r"is not known to be .*shape, so torch\.where",
        "compute the new value for every element, then write `x.copy_(torch.where(mask, new, x))` with the "
        "mask shaped like `x`",
    ),
    NextStep(
        "a masked update whose parts cannot be read twice (JIT207)",
        r"is evaluated more than once and may differ|is not a plain name the rewrite can read again|"
        r"` has a side effect",
        "bind the mask and the value to locals first (one evaluation each), then write "
        "`x.copy_(torch.where(mask, x + v, x))`",
    ),
    NextStep(
        "a loop over the experts a router picked (MoE)",
        r"`for [^`]*expert[^`]*` iterates over a tensor",
        "run all experts on all tokens, weighted by the routing (num_experts/top_k x the FLOPs), or sort "
        "tokens by expert and use F.grouped_mm (bf16, routed FLOPs only)",
    ),
    NextStep(
        "a loop over a tensor",
        r"iterates over a tensor",
        "loop over a fixed range (a size or a config value) and keep each step's result with "
        "torch.where(taken, new, old), or torch.cond per step",
    ),
    NextStep(
        "a number of iterations that depends on data (`break`, `while`)",
        r"data-dependent number of iterations|number of iterations depends on data",
        "loop a fixed number of times (an upper bound) and freeze finished values with "
        "torch.where(done, x, step(x))",
    ),
    NextStep(
        "a skipped layer that would update a cache or be recorded by output hooks (layer-drop)",
        r"a cache it may update|records each layer's outputs through hooks",
        "decide the skip outside the compiled code: for a training-only skip (layer-drop) compile the "
        "eval model, or train with it off",
    ),
    NextStep(
        "an untaken branch that may fail or put NaN into gradients",
        r"^an arm ",
        "make the untaken side safe too (divide by torch.where(cond, d, 1), clamp the index), then "
        "torch.where; or torch.cond, which runs one branch",
    ),
    NextStep(
        "branches of different shapes whose gradient torch.cond cannot take",
        r"cannot differentiate a torch.cond",
        "run it under torch.no_grad() or torch.inference_mode() (the eval model), where torch.cond takes the "
        "shapes; or give both branches one shape",
    ),
    NextStep(
        "branches of different shapes that torch.cond cannot take here",
        r"torch.cond does not apply|differ in rank|the result's size is known only at run time|may broadcast"
        r"|flows further than the fix follows|meets the next iteration",
        "give both branches one shape and dtype (keepdim=True, pad or expand, `.to(dtype)`), then "
        "torch.where(cond, a, b)",
    ),
    NextStep(
        "branches of different shapes",
        r"may differ in shape",
        "torch.cond(cond, true_fn, false_fn, (x,)) runs one branch and takes outputs of different sizes "
        "(same rank); or give both one shape (keepdim=True)",
    ),
    NextStep(
        "branches that give different values or None",
        r"tuples of different lengths|one branch gives None",
        "make both branches give the same values (a tensor where one gives None), then torch.where(cond, a, b)",
    ),
    NextStep(
        "branches of different dtypes",
        r"may differ in dtype",
        "cast both to one dtype (`b.to(a.dtype)`), then torch.where(cond, a, b)",
    ),
    NextStep(
        "a branch that calls something for its effect",
        r"for its effect|has a side effect",
        "move the call out of the compiled code, then select the values with torch.where(cond, new, old)",
    ),
    NextStep(
        "a branch that changes state",
        r"state that outlives the call|writes into `[^`]*` in place|updates `[^`]*` in place"
        r"|reads a value the skipped code changes",
        "compute new values out of place, select them with torch.where(cond, new, old), then update the "
        "state once with the selected value",
    ),
    NextStep(
        "a random draw, a tensor only under Dynamo",
        r"tensor only under Dynamo",
        "draw with torch (`torch.rand(())`) so the value is a tensor in eager code too, and --fix can rest on it",
    ),
    NextStep(
        "a value that is a tensor on some paths only",
        r"a tensor only on some paths",
        "compile the eval model when only training makes it a tensor; else make it a tensor on every path "
        "(default `torch.tensor(False)`) so --fix can rewrite it",
    ),
    NextStep(
        "values that are not tensors",
        r"is a not a tensor|neither value is certainly a tensor",
        "make the values tensors (torch.as_tensor) before selecting with torch.where(cond, a, b)",
    ),
    NextStep(
        "a value not known to be a tensor",
        r"no evidence it is one in eager code|is not certainly a tensor|cannot tell that|the test is not a tensor",
        "where it is a tensor, annotate it `torch.Tensor` (or make it with a torch call) so --fix can rest "
        "on it; else write torch.where(cond, a, b) yourself",
    ),
    NextStep(
        "a Python flag set by the tensor test",
        r"the Python flag|`[^`]*` is read more than once$|is not reset to False|tensor test that sets the flag",
        "keep the flag a bool tensor (`drop = cond`) and select with torch.where(drop, old, new) where it is read",
    ),
    NextStep(
        "a check the rewrite cannot keep",
        r"error message|a bare `raise`|exception takes more than one|negated tensor assert"
        r"|tensor test in the assert",
        "write `torch._assert_async(ok, \"a literal message\")` (the check stays in the graph), or check "
        "before the compiled call",
    ),
    NextStep(
        "a Python test after the tensor test",
        r"reorder it in front",
        "put the Python tests first (`if flag and t.any():`)",
    ),
    NextStep(
        "a test that mixes Python and tensor parts",
        r"mixes Python and tensor tests|Python test in front of its tensor test|Python test in front of the "
        r"tensor test, with an `else`",
        "split it: the Python test in its own `if`, the tensor tests joined with `&`/`|` inside it",
    ),
    NextStep(
        "a chained or identity comparison",
        r"chained or identity comparison",
        "spell it with `&` (`(a < b) & (b < c)`) and `==` instead of `is`, then torch.where(cond, a, b)",
    ),
    NextStep(
        "a shortcut that sets a name to None",
        r"sets a name to None",
        "drop the shortcut (the general path gives the same result), or keep a tensor (an all-True mask)",
    ),
    NextStep(
        "a number only used as a size, slice bound or index, with no single compile call in the file",
        r"to set capture_scalar_outputs before",
        "put `torch._dynamo.config.capture_scalar_outputs = True` right before the `torch.compile(...)` "
        "that compiles this code (the read stays as it is)",
    ),
    NextStep(
        "a number used as a size, an index or in Python control flow",
        r"used beyond tensor arithmetic",
        "only as a slice bound, `x[n]` or a zeros/pad size: set "
        "torch._dynamo.config.capture_scalar_outputs = True; in an `if` or range(): torch.where or a fixed bound",
    ),
    NextStep(
        "a number returned to the caller",
        r"the number is returned",
        "return the tensor and read the number in the caller, outside the compiled code",
    ),
    NextStep(
        "`int()` or `bool()` of a tensor",
        r"only `float\(\)` of a tensor is kept",
        "keep a tensor (`t.long()`, `t.bool()`) and compute with torch ops; for a size, take it from a shape",
    ),
    NextStep(
        "a branch shape the rewrite does not take",
        r"^not inside a function|the branch assigns nothing|^the temporary|assigned and then read more than once"
        r"|assigned on one side only|the branch's assignments read|does more than assign names|unpacks into"
        r"|among other statements|nested control flow|does not end in|returns nothing|`return` has no value"
        r"|guarded return reads|`elif` after a guarded return|guard is not in a block|part of an `elif` chain"
        r"|`continue`|skipped code branches on a tensor|skipped code has an `elif`|no tensor value before"
        r"|read no tensor to pass",
        "compute both values, then `name = torch.where(cond, new, old)` per name (torch.cond where the "
        "branches do different work)",
    ),
)


def next_step(reason: str) -> Optional[NextStep]:
    """The entry whose pattern matches `reason`, the first in table order; None when none does."""
    return next((step for step in NEXT_STEPS if step.matches(reason)), None)
