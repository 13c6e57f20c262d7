"""What a person does where a tensor-branch or tensor-to-Python fix is withheld.

Every reason a rewrite gives for withholding itself (`BranchFix.reason`) maps to one
`NextStep`: the recipe a person would follow instead. `with_reason` appends it to the
finding's message, so no message ends in "no automatic fix" without a next step, and
`--explain` / docs/rules.md list the whole table for the rules whose fixes can be
withheld. tests/test_next_steps.py fails when a reason the fixes can give has no entry, or
a recipe ends in no code to write (in backticks).

Where a number read from a tensor (`.item()`, `int(t)`) keeps no tensor, the reason names
what the number is used for (fixes/number_uses.py) and the recipe fits that use: a size
gets `capture_scalar_outputs`, a Python test gets `torch.where`, a print leaves the
compiled code; no use gets a recipe meant for another.

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


# First match wins: the specific kinds come before the general ones they overlap. Every recipe
# ends in code to write (in backticks), which tests/test_next_steps.py checks parses.
NEXT_STEPS: tuple[NextStep, ...] = (
    NextStep(
        "a bincount whose captured size something later reads in Python",
        r"would not help `[^`]*bincount`",
        "count into a fixed number of bins `k`: `torch.zeros(k, dtype=torch.long).index_add_(0, t, "
        "torch.ones_like(t))`",
    ),
    NextStep(
        "a repeat_interleave whose captured size something later reads in Python",
        r"would not help `[^`]*repeat_interleave`",
        "pass the total length when it is known: `torch.repeat_interleave(x, r, dim=0, output_size=n)`",
    ),
    NextStep(
        "unique values whose number something later reads in Python",
        r"would not help `[^`]*unique(_consecutive)?`",
        "compute them before the compiled call and pass them in, or keep a presence mask: "
        "`torch.zeros(k, dtype=torch.bool).index_fill_(0, t, True)`",
    ),
    NextStep(
        "a selection whose captured size something later reads in Python",
        r"`capture_dynamic_output_shape_ops` would not help",
        "keep the shape static: `torch.where(mask, x, 0)` or `x * mask`, then reduce over it",
    ),
    NextStep(
        "numbers read from a tensor that something later uses in Python",
        r"`capture_scalar_outputs` would not help",
        "keep the values in a tensor (`t.unbind(0)`), or read them before the compiled call and pass them in",
    ),
    NextStep(
        "an RNN module fed packed sequences",
        r"`allow_rnn` would not help",
        "pad instead of packing, mask the padded steps (`out * mask[..., None]`), then set allow_rnn",
    ),
    NextStep(
        "a value a setting would capture that something later uses in Python",
        r"` would not help ",
        "run the code that reads it outside the compiled code: a helper under `@torch.compiler.disable`",
    ),
    NextStep(
        "a masked update whose value may differ per selected element (JIT207)",
        r"may hold one value per selected element",
        "update outside compiled code, unless it is one value per element of `x`; then write "
        "`x.copy_(torch.where(mask, new, x))`, the mask shaped like `x`",
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
        "a number printed, logged or formatted (JIT201, JIT202)",
        r"the number is printed, logged or formatted",
        "move the print or log out of the compiled code, or run it only eagerly under "
        "`if not torch.compiler.is_compiling():`",
    ),
    NextStep(
        "a number that decides a Python test (JIT201, JIT202)",
        r"the number decides a Python test",
        "keep the test a tensor (`t > 0`, not `t.item() > 0`) and pick values with `torch.where(cond, a, b)`",
    ),
    NextStep(
        "a number that bounds a Python loop (JIT201, JIT202)",
        r"the number bounds a Python loop",
        "loop to a fixed bound, keeping each step's result only where it counts: "
        "`x = torch.where(i < n, step(x), x)` for `i` in `range(max_steps)`",
    ),
    NextStep(
        "a number used as a size or slice bound beyond those that compile once captured (JIT201, JIT202)",
        r"the number is a size or slice bound beyond",
        "take the size from a shape or config (`x.shape[0]`), or keep the full size and mask the rest: "
        "`x * (torch.arange(x.shape[0]) < n)`",
    ),
    NextStep(
        "a number used as an index beyond those that compile once captured (JIT201, JIT202)",
        r"the number is an index beyond",
        "keep the index a tensor and index with it as a 1-d tensor (`torch.stack(items)` first for a list): "
        "`x.index_select(dim, i.view(1)).squeeze(dim)`",
    ),
    NextStep(
        "a number passed to a call (JIT201, JIT202)",
        r"the number is passed to a call",
        "read the number before the compiled call and pass it in, or pass the 0-d tensor (`t.detach()`) "
        "where the callee computes with tensors",
    ),
    NextStep(
        "a number returned to the caller",
        r"the number is returned",
        "return the tensor (`t.detach()`) and read the number in the caller, outside the compiled code",
    ),
    NextStep(
        "a number only used as a size, slice bound or index that compiles once captured (JIT201, JIT202)",
        r"the number is only a size, slice bound or index that compiles once",
        "set `torch._dynamo.config.capture_scalar_outputs = True` before the `torch.compile(...)` call "
        "(the read stays as it is)",
    ),
    NextStep(
        "a number used in arithmetic (JIT201, JIT202)",
        r"the number is used in arithmetic",
        "keep it a tensor: `t.detach()` (`t.detach().long()` for `int(t)`) in place of the number, "
        "and compute with tensors",
    ),
    NextStep(
        "a loop over the indices `nonzero()` finds, not rewritten to run every candidate (JIT207)",
        r"^(the loop body|the loop unpacks|the number of candidates|the indices come from|the `nonzero\(\)` is"
        r"|the file has no statement to put|`[^`]+`(, which the loop body binds| may be rebound| is used as more)"
        r"|`[^`]+\(\)` in the loop body)",
        "run every candidate where an empty selection changes nothing, `for i in range(num_candidates):`; "
        "else keep the loop eager: `@torch.compiler.disable`",
    ),
    NextStep(
        "a loop over the experts a router picked (MoE)",
        r"`for [^`]*expert[^`]*` iterates over a tensor",
        "run every expert on all tokens, weighted by the routing (num_experts/top_k x the FLOPs), or sort "
        "tokens by expert for `F.grouped_mm(x, w, offs=ends)` (bf16)",
    ),
    NextStep(
        "a loop over a tensor",
        r"iterates over a tensor",
        "loop over a fixed range (a size or a config value) and keep each step's result with "
        "`torch.where(taken, new, old)`, or `torch.cond` per step",
    ),
    NextStep(
        "a number of iterations that depends on data (`break`, `while`)",
        r"data-dependent number of iterations|number of iterations depends on data",
        "loop a fixed number of times (an upper bound) and freeze finished values with "
        "`x = torch.where(done, x, step(x))`",
    ),
    NextStep(
        "a skipped layer that would update a cache or be recorded by output hooks (layer-drop)",
        r"a cache it may update|records each layer's outputs through hooks",
        "decide the skip outside the compiled code: for a training-only skip (layer-drop) compile the "
        "eval model (`torch.compile(model.eval())`), or train with it off",
    ),
    NextStep(
        "an untaken branch that may fail or put NaN into gradients",
        r"^an arm ",
        "run one branch: `torch.cond(cond, true_fn, false_fn, (x,))`; or make the untaken side safe "
        "(divide by `torch.where(cond, d, 1)`) and select with `torch.where`",
    ),
    NextStep(
        "branches of different shapes whose gradient torch.cond cannot take",
        r"cannot differentiate a torch.cond",
        "give both branches one shape; or run it under `torch.no_grad()` (the eval model), where torch.cond "
        "takes the shapes",
    ),
    NextStep(
        "branches of different shapes that torch.cond cannot take here",
        r"torch.cond does not apply|differ in rank|the result's size is known only at run time|may broadcast"
        r"|flows further than the fix follows|meets the next iteration",
        "give both branches one shape and dtype (keepdim=True, pad or expand, `.to(dtype)`), then "
        "`torch.where(cond, a, b)`",
    ),
    NextStep(
        "branches of different shapes",
        r"may differ in shape",
        "give both one shape (keepdim=True); or `torch.cond(cond, true_fn, false_fn, (x,))`, which runs one "
        "branch and takes outputs of different sizes (same rank)",
    ),
    NextStep(
        "branches that give different values or None",
        r"tuples of different lengths|one branch gives None",
        "make both branches give the same values (a tensor where one gives None), then "
        "`torch.where(cond, a, b)`",
    ),
    NextStep(
        "branches of different dtypes",
        r"may differ in dtype",
        "cast both to one dtype, then `torch.where(cond, a, b.to(a.dtype))`",
    ),
    NextStep(
        "a branch that calls something for its effect",
        r"for its effect|has a side effect",
        "move the call out of the compiled code, then select the values with `torch.where(cond, new, old)`",
    ),
    NextStep(
        "a branch that changes state",
        r"state that outlives the call|writes into `[^`]*` in place|updates `[^`]*` in place"
        r"|reads a value the skipped code changes",
        "compute new values out of place, select them, then update the state once: "
        "`state.copy_(torch.where(cond, new, state))`",
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
        "make the values tensors before selecting: `torch.where(cond, torch.as_tensor(a), torch.as_tensor(b))`",
    ),
    NextStep(
        "a value not known to be a tensor",
        r"no evidence it is one in eager code|is not certainly a tensor|cannot tell that|the test is not a tensor",
        "where it is a tensor, annotate it (`x: torch.Tensor`) or make it with a torch call, and --fix "
        "rewrites it; else write `torch.where(cond, a, b)` yourself",
    ),
    NextStep(
        "a Python flag set by the tensor test",
        r"the Python flag|`[^`]*` is read more than once$|is not reset to False|tensor test that sets the flag",
        "keep the flag a bool tensor (`drop = cond`) and select with `torch.where(drop, old, new)` where it is "
        "read",
    ),
    NextStep(
        "a check the rewrite cannot keep",
        r"error message|a bare `raise`|exception takes more than one|negated tensor assert"
        r"|tensor test in the assert",
        "check before the compiled call, or write `torch._assert_async(ok, \"a literal message\")` (the check "
        "stays in the graph)",
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
        "split it: the Python test in its own `if`, the tensor tests joined inside it (`if flag:` then "
        "`torch.where(a & b, x, y)`)",
    ),
    NextStep(
        "a chained or identity comparison",
        r"chained or identity comparison",
        "spell it with `&` and `==` (`(a < b) & (b < c)`, not `is`), then `torch.where(cond, a, b)`",
    ),
    NextStep(
        "a shortcut that sets a name to None",
        r"sets a name to None",
        "drop the shortcut (the general path gives the same result), or keep a tensor (an all-True mask, "
        "`torch.ones_like(x, dtype=torch.bool)`)",
    ),
    NextStep(
        "a number `capture_scalar_outputs` captures, with no single compile call in the file",
        r"call to set `capture_scalar_outputs` before",
        "put `torch._dynamo.config.capture_scalar_outputs = True` right before the `torch.compile(...)` "
        "that compiles this code",
    ),
    NextStep(
        "a size `capture_dynamic_output_shape_ops` captures, with no single compile call in the file",
        r"call to set `capture_dynamic_output_shape_ops` before",
        "put `torch._dynamo.config.capture_dynamic_output_shape_ops = True` right before the `torch.compile(...)` "
        "that compiles this code",
    ),
    NextStep(
        "an RNN module `allow_rnn` lets Dynamo trace, with no single compile call in the file",
        r"call to set `allow_rnn` before",
        "put `torch._dynamo.config.allow_rnn = True` right before the `torch.compile(...)` that compiles this code",
    ),
    NextStep(
        "a print `reorderable_logging_functions` defers, with no single compile call in the file",
        r"call to set `reorderable_logging_functions\.add\(print\)` before",
        "put `torch._dynamo.config.reorderable_logging_functions.add(print)` right before the "
        "`torch.compile(...)` that compiles this code",
    ),
    NextStep(
        "a warning `reorderable_logging_functions` defers, with no single compile call in the file",
        r"call to set `reorderable_logging_functions\.add\(warnings\.warn\)` before",
        "put `torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)` right before the "
        "`torch.compile(...)` that compiles this code",
    ),
    NextStep(
        "a compiler setting that removes the break, with no single compile call in the file",
        r"call to set `[^`]*` before",
        "put the setting's line (`torch._dynamo.config.allow_rnn = True`, say) right before the "
        "`torch.compile(...)` that compiles this code",
    ),
    NextStep(
        "a branch shape the rewrite does not take",
        r"^not inside a function|the branch assigns nothing|^the temporary|assigned and then read more than once"
        r"|assigned on one side only|the branch's assignments read|does more than assign names|unpacks into"
        r"|among other statements|nested control flow|does not end in|returns nothing|`return` has no value"
        r"|guarded return reads|`elif` after a guarded return|guard is not in a block|part of an `elif` chain"
        r"|`continue`|skipped code branches on a tensor|skipped code has an `elif`|no tensor value before"
        r"|read no tensor to pass",
        "compute both values, then `name = torch.where(cond, new, old)` per name (`torch.cond` where the "
        "branches do different work)",
    ),
)


def next_step(reason: str) -> Optional[NextStep]:
    """The entry whose pattern matches `reason`, the first in table order; None when none does."""
    return next((step for step in NEXT_STEPS if step.matches(reason)), None)
