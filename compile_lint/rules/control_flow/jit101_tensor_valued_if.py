"""JIT101 tensor-valued-if: `if`/`elif` on tensor data (`x.sum() > 0`, `mask.any()`) breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.fixes.branches.blocks import with_reason
from compile_lint.fixes.branches.conditions import data_dependent
from compile_lint.fixes.branches.dispatch import ElifTracker, linearise_if
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.allowed_calls import allowed_break


class TensorValuedIf(ElifTracker, Rule):
    """`if`/`elif` on tensor data (`x.sum() > 0`, `mask.any()`) breaks the graph.

    Why: Dynamo cannot know which branch a tensor's value picks without running it,
    so it stops the graph, runs the condition eagerly and resumes in a new graph
    ("Data-dependent branching"); with `fullgraph=True` compilation fails.

    Instead: choose between tensors with `torch.where(cond, a, b)`, or use
    `torch.cond(pred, true_fn, false_fn, operands)` when the branches do different work.

    The fix (unsafe) handles these shapes; Python tests in front of the tensor test
    (`mask is not None and mask.any()`) stay a Python `if`:
    - `if`/`else` and `elif` chains assigning names: one `x = torch.where(c, a, b)` per
      name; without `else`, `x = torch.where(c, new, x)`; augmented assignments;
      temporaries only the branch reads run unconditionally.
    - returns: `if c: return a`, more assignments, `return b` -> `return torch.where(c, a, b)`.
    - checks: `if c: raise E("...")` or `torch._assert(False, "...")`, after lines that only
      build the message -> under torch.compile `torch._assert_async(~c, "...")` (a
      RuntimeError there; a formatted message keeps its text, `...` for each value),
      eagerly the original branch. (`torch._check_with(E, ...)` and
      `torch._check_tensor_all_with` keep `E` only eagerly: compiled they need
      `capture_scalar_outputs` and raise a RuntimeError without the message.)
    - layer-drop: `if c: continue`, or a `to_drop = True` flag read by `if not to_drop:`,
      -> the skipped code runs and torch.where keeps the old values. The layer always
      runs: slower, and its random draws and zero gradients differ from skipping it.
    - shortcuts: `if (mask == 1).all(): mask = None` is taken only eagerly, `if m.any():
      x[m] = v` always under compile, so compiled code takes the general route.
    `torch.where` computes both branches; `torch.cond` runs one. With the default
    `tensor-branch-fix = "auto"` ([tool.compile-lint]) torch.cond is written where an arm
    calls a submodule or does heavy work (matmul, conv, attention, linalg: torch.where
    would run it on the untaken side too, measured slower on an H200), torch.where where
    both arms only compute values; "where" / "cond" force one. torch.cond is also written
    where computing the untaken branch may fail (linalg, division by a guarded value),
    when both branches are single tensor expressions of one shape, and where the arms
    differ in shape only in their first dimension (`h.mean(0, keepdim=True)` vs `h * 2`,
    `x[:2]` vs `x`), under `torch.no_grad()` / `torch.inference_mode()` (torch 2.13 cannot
    differentiate such a cond), with a result not broadcast against another tensor (its
    size is known only at run time).

    No fix, and the message says why, where a rewrite could change results: arms of
    different shapes otherwise (a reduction without `keepdim`, `unsqueeze`, a second
    dimension, gradients, a broadcast result);
    an untaken arm that may raise or put NaN into gradients (linalg, indexing or division
    by what the condition guards, `torch.autograd.grad`) when torch.cond cannot take it;
    state changed by a branch or between a guard and its return (`self.x = ...`,
    in-place ops, a cache passed to a skipped layer, layers whose outputs transformers'
    `@capture_outputs` hooks record); `break`; loops over a data-dependent tensor; names
    that may be None or Python values; other control flow in a branch.
    """

    code = "JIT101"
    name = "tensor-valued-if"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    fix_applicability = "unsafe"
    withheld_fix_steps = True
    message = (
        "`if` on a tensor value breaks the graph (data-dependent branching); "
        "use `torch.where(cond, a, b)`, or `torch.cond(cond, true_fn, false_fn, (x,))` where the branches do "
        "different work"
    )
    steps = ("torch.where(cond, a, b)", "torch.cond(cond, true_fn, false_fn, (x,))")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class GatedResidual(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    if h.mean() > 0:
                        out = x + h
                    else:
                        out = x - h
                    return out
            """,
            fixed="""
            import torch
            from torch import nn

            class GatedResidual(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    out = torch.where(h.mean() > 0, x + h, x - h)
                    return out
            """,
            entry="GatedResidual",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class SafeSoftmax(nn.Module):
                def forward(self, scores):
                    if torch.isnan(scores).any():
                        return torch.zeros_like(scores)
                    else:
                        return scores.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn

            class SafeSoftmax(nn.Module):
                def forward(self, scores):
                    return torch.where(torch.isnan(scores).any(), torch.zeros_like(scores), scores.softmax(-1))
            """,
            entry="SafeSoftmax",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ClampedNorm(nn.Module):
                def _too_large(self, x):
                    return x.abs().max() > 10

                def forward(self, x, mask=None):
                    if mask is not None and self._too_large(x):
                        x = x / 10
                    return x
            """,
            calls="[(torch.randn(4, 8), torch.ones(4, 8))]",
            entry="ClampedNorm",
            lines=[9],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LayerDrop(nn.Module):
                def __init__(self, p=0.5):
                    super().__init__()
                    self.p = p
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    skip = False
                    if self.training:
                        skip = torch.rand([]) < self.p
                    if not skip:
                        x = self.proj(x)
                        x = torch.relu(x)
                    return x
            """,
            entry="LayerDrop",
            lines=[14],
            note="`skip` is a tensor once `self.training` assigned it, so the finding says "
                 "\"only when self.training\": a compiled eval() model never breaks here.",
        ),
        Invalid(
            """
            import random

            import torch
            from torch import nn

            class RandomDepth(nn.Module):
                def __init__(self, layerdrop=0.5):
                    super().__init__()
                    self.layerdrop = layerdrop
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    if random.uniform(0, 1) < self.layerdrop:
                        return x
                    return self.proj(x)
            """,
            entry="RandomDepth",
            lines=[13],
            note="Dynamo traces `random.uniform` as a 0-d tensor input, so comparing it branches on data.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class EarlyExit(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    if x.abs().amax() < 1.0:
                        return x
                    h = self.proj(x)
                    h = torch.tanh(h)
                    return x + h
            """,
            calls="[(torch.randn(4, 8),), (torch.randn(4, 8) * 0.1,)]",
            fixed="""
            import torch
            from torch import nn

            class EarlyExit(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    h = torch.tanh(h)
                    return torch.where(x.abs().amax() < 1.0, x, x + h)
            """,
            entry="EarlyExit",
            lines=[10],
            note="A guarded return: the code after it runs always, then one torch.where.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Renorm(nn.Module):
                def forward(self, x):
                    scale = x.new_ones(())
                    steps = torch.zeros((), dtype=torch.long)
                    if x.abs().amax() > 2.0:
                        x = x / 2
                        scale = scale * 2
                        steps += 1
                    return x * scale + steps
            """,
            calls="[(torch.randn(4, 8),), (torch.randn(4, 8) * 0.1,)]",
            fixed="""
            import torch
            from torch import nn

            class Renorm(nn.Module):
                def forward(self, x):
                    scale = x.new_ones(())
                    steps = torch.zeros((), dtype=torch.long)
                    take_branch = x.abs().amax() > 2.0
                    x = torch.where(take_branch, x / 2, x)
                    scale = torch.where(take_branch, scale * 2, scale)
                    steps = torch.where(take_branch, steps + 1, steps)
                    return x * scale + steps
            """,
            entry="Renorm",
            lines=[8],
            note="A guarded update of several names (one torch.where each, the test computed once).",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Piecewise(nn.Module):
                def forward(self, x: torch.Tensor):
                    m = x.mean()
                    if m > 0.1:
                        y = x * 2
                    elif m < -0.1:
                        y = -x
                    else:
                        y = x
                    return y
            """,
            calls="[(torch.randn(4, 8) + 1,), (torch.randn(4, 8) - 1,), (torch.randn(4, 8) * 0.01,)]",
            fixed="""
            import torch
            from torch import nn

            class Piecewise(nn.Module):
                def forward(self, x: torch.Tensor):
                    m = x.mean()
                    y = torch.where(m > 0.1, x * 2, torch.where(m < -0.1, -x, x))
                    return y
            """,
            entry="Piecewise",
            lines=[7, 9],
            note="An elif chain: nested torch.where.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Overflow(nn.Module):
                def forward(self, hidden_states):
                    hidden_states = hidden_states * 1e38
                    if not torch.isfinite(hidden_states).all():
                        clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                        hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
                    return hidden_states
            """,
            calls="[(torch.randn(4, 8) * 0.01,), (torch.randn(4, 8) * 10,)]",
            fixed="""
            import torch
            from torch import nn

            class Overflow(nn.Module):
                def forward(self, hidden_states):
                    hidden_states = hidden_states * 1e38
                    clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                    hidden_states = torch.where(~torch.isfinite(hidden_states).all(), torch.clamp(hidden_states, min=-clamp_value, max=clamp_value), hidden_states)
                    return hidden_states
            """,  # noqa: E501 - example code, linted and compared as written
            entry="Overflow",
            lines=[7],
            note="A temporary only the branch reads runs unconditionally.",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class LabelCheck(nn.Module):
                def forward(self, logits, labels):
                    if labels.max() >= logits.shape[-1]:
                        raise ValueError("a label is out of range")
                    return F.cross_entropy(logits, labels)
            """,
            calls="[(torch.randn(4, 5), torch.randint(0, 5, (4,)))]",
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch import nn

            class LabelCheck(nn.Module):
                def forward(self, logits, labels):
                    if torch.compiler.is_compiling():
                        torch._assert_async(~(labels.max() >= logits.shape[-1]), "a label is out of range")
                    elif labels.max() >= logits.shape[-1]:
                        raise ValueError("a label is out of range")
                    return F.cross_entropy(logits, labels)
            """,
            entry="LabelCheck",
            lines=[7],
            note="A check: the same error eagerly, a runtime assertion under torch.compile.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BoxCheck(nn.Module):
                def forward(self, boxes: torch.Tensor):
                    degenerate = boxes[:, 2:] <= boxes[:, :2]
                    if degenerate.any():
                        first = boxes[degenerate.any(dim=1)][0].tolist()
                        torch._assert(False, f"boxes need positive sizes; found {first}")
                    return boxes[:, 2:] - boxes[:, :2]
            """,
            calls="[(torch.tensor([[0.0, 0.0, 2.0, 3.0], [1.0, 1.0, 4.0, 2.0]]),)]",
            fixed="""
            import torch
            from torch import nn

            class BoxCheck(nn.Module):
                def forward(self, boxes: torch.Tensor):
                    degenerate = boxes[:, 2:] <= boxes[:, :2]
                    if torch.compiler.is_compiling():
                        torch._assert_async(~degenerate.any(), "boxes need positive sizes; found ...")
                    elif degenerate.any():
                        first = boxes[degenerate.any(dim=1)][0].tolist()
                        torch._assert(False, f"boxes need positive sizes; found {first}")
                    return boxes[:, 2:] - boxes[:, :2]
            """,
            entry="BoxCheck",
            lines=[7],
            note=("torchvision's degenerate-box check: the lines that only build the message run eagerly; "
                  "under torch.compile the message keeps its text without the values."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class StochasticDepth(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.drop_prob = 0.5

                def forward(self, x: torch.Tensor):
                    for block in self.blocks:
                        if self.drop_prob > 0:
                            draw = torch.rand([])
                            if draw < self.drop_prob:
                                continue
                        x = block(x)
                    return x
            """,
            fixed="""
            import torch
            from torch import nn

            class StochasticDepth(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.drop_prob = 0.5

                def forward(self, x: torch.Tensor):
                    for block in self.blocks:
                        if self.drop_prob > 0:
                            draw = torch.rand([])
                            x = torch.where(draw < self.drop_prob, x, block(x))
                            continue
                        x = block(x)
                    return x
            """,
            entry="StochasticDepth",
            lines=[14],
            note="Layer-drop: every block runs, torch.where keeps the old value when the draw says skip.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LayerDrop(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.layerdrop = 0.5

                def forward(self, hidden_states: torch.Tensor):
                    for layer in self.layers:
                        to_drop = False
                        if self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            if dropout_probability < self.layerdrop:  # skip the layer
                                to_drop = True

                        if not to_drop:
                            hidden_states = layer(hidden_states)
                    return hidden_states
            """,
            fixed="""
            import torch
            from torch import nn

            class LayerDrop(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.layerdrop = 0.5

                def forward(self, hidden_states: torch.Tensor):
                    for layer in self.layers:
                        to_drop = False
                        if self.layerdrop > 0.0:
                            dropout_probability = torch.rand([])
                            hidden_states = torch.where(dropout_probability < self.layerdrop, hidden_states, layer(hidden_states))  # skip the layer
                            to_drop = True

                        if not to_drop:
                            hidden_states = layer(hidden_states)
                    return hidden_states
            """,  # noqa: E501 - example code, linted and compared as written
            entry="LayerDrop",
            lines=[15],
            note="The transformers layer-drop flag.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, x, mask):
                    if (mask == 1).all():
                        mask = None
                    if mask is None:
                        return x.mean(1)
                    return (x * mask).sum(1) / mask.sum(1)
            """,
            calls=("[(torch.randn(2, 4, 8), torch.ones(2, 4, 1)), "
                   "(torch.randn(2, 4, 8), (torch.rand(2, 4, 1) > 0.3).float())]"),
            fixed="""
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, x, mask):
                    if not torch.compiler.is_compiling() and (mask == 1).all():
                        mask = None
                    if mask is None:
                        return x.mean(1)
                    return (x * mask).sum(1) / mask.sum(1)
            """,
            entry="MaskedMean",
            lines=[6],
            note="A shortcut: dropping an all-ones mask only eagerly.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class FillInvalid(nn.Module):
                def forward(self, logits, invalid):
                    logits = logits.clone()
                    if invalid.any():
                        logits[invalid] = -1e4
                    return logits.softmax(-1)
            """,
            calls=("[(torch.randn(4, 8), torch.randn(4, 8) > 1), "
                   "(torch.randn(4, 8), torch.zeros(4, 8, dtype=torch.bool))]"),
            fixed="""
            import torch
            from torch import nn

            class FillInvalid(nn.Module):
                def forward(self, logits, invalid):
                    logits = logits.clone()
                    if torch.compiler.is_compiling() or invalid.any():
                        logits[invalid] = -1e4
                    return logits.softmax(-1)
            """,
            entry="FillInvalid",
            lines=[7],
            note="A shortcut: writing through an empty mask is a no-op, so compiled code always writes.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class SafeCholesky(nn.Module):
                def forward(self, a):
                    if torch.linalg.eigvalsh(a).amin() > 0:
                        factor = torch.linalg.cholesky(a)
                    else:
                        factor = torch.zeros_like(a)
                    return factor
            """,
            calls="[(torch.eye(4) * 2,), (-torch.eye(4),)]",
            fixed="""
            import torch
            from torch import nn

            class SafeCholesky(nn.Module):
                def forward(self, a):
                    factor = torch.cond(torch.linalg.eigvalsh(a).amin() > 0, lambda a: torch.linalg.cholesky(a).contiguous(), lambda a: torch.zeros_like(a).contiguous(), (a,))
                    return factor
            """,  # noqa: E501 - example code, linted and compared as written
            entry="SafeCholesky",
            lines=[6],
            note=("torch.where would run cholesky on a matrix that is not positive definite: "
                  "torch.cond runs one branch."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class CountedExit(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("calls", torch.zeros(()))

                def forward(self, x):
                    if x.abs().amax() < 1.0:
                        return x
                    self.calls.add_(1)
                    return x * 2
            """,
            calls="[(torch.randn(4, 8),), (torch.randn(4, 8) * 0.1,)]",
            entry="CountedExit",
            lines=[10],
            note="No fix: the code between the guard and its return mutates a buffer.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class PoolOrKeep(nn.Module):
                def forward(self, x):
                    if x.mean() > 0:
                        y = x.sum(1, keepdim=True)
                    else:
                        y = x
                    return y
            """,
            entry="PoolOrKeep",
            lines=[6],
            note="No fix: (B, 1, E) and (B, W, E) arms, which torch.where would broadcast.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class RunningPeak(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("peak", torch.ones(()))

                def forward(self, x):
                    if x.amax() > self.peak:
                        self.peak = x.amax()
                    return x / self.peak
            """,
            entry="RunningPeak",
            lines=[10],
            note="No fix: the branch assigns module state.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Normalize(nn.Module):
                def forward(self, x):
                    n = x.norm()
                    if n == 0:
                        return x
                    y = x / n
                    return y
            """,
            calls="[(torch.randn(4, 8),), (torch.zeros(4, 8),)]",
            entry="Normalize",
            lines=[7],
            note="No fix: computed always, the division by a zero norm would put NaN into gradients.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Experts(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.num_experts = 4
                    self.weight = nn.Parameter(torch.randn(4, 8, 8))

                def forward(self, x, expert_ids):
                    out = torch.zeros_like(x)
                    for expert in expert_ids:
                        if expert == self.num_experts:
                            continue
                        out = out + x @ self.weight[expert]
                    return out
            """,
            calls="[(torch.randn(6, 8), torch.tensor([0, 4, 2]))]",
            entry="Experts",
            lines=[13],
            note=("No fix: the loop steps through tensor data, "
                  "and weight[expert] is out of range when the branch is taken."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class CachedLayer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, past_key_values=None):
                    if past_key_values is not None:
                        past_key_values.append(x)
                    return self.fc(x)

            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([CachedLayer() for _ in range(2)])
                    self.layerdrop = 0.5

                def forward(self, hidden_states, past_key_values=None):
                    for layer in self.layers:
                        if torch.rand([]) < self.layerdrop:
                            continue
                        hidden_states = layer(hidden_states, past_key_values=past_key_values)
                    return hidden_states
            """,
            entry="Decoder",
            lines=[22],
            note="No fix: the skipped layer would update a cache.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Forces(nn.Module):
                def forward(self, pos):
                    with torch.enable_grad():
                        pos = pos.detach().requires_grad_()
                        energy = (pos ** 2).sum()
                        if energy > 1.0:
                            force = torch.autograd.grad(energy, pos)[0]
                        else:
                            force = torch.zeros_like(pos)
                    return force
            """,
            calls="[(torch.randn(4, 3),), (torch.randn(4, 3) * 0.01,)]",
            entry="Forces",
            lines=[9],
            note="No fix: autograd in forward.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            def capture_outputs(forward):
                # Stands for transformers' decorator: forward hooks record every layer's output.
                return forward

            class HookedDecoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.layerdrop = 0.5

                @capture_outputs
                def forward(self, hidden_states):
                    for layer in self.layers:
                        if torch.rand([]) < self.layerdrop:
                            continue
                        hidden_states = layer(hidden_states)
                    return hidden_states
            """,
            entry="HookedDecoder",
            lines=[17],
            note="No fix: transformers' @capture_outputs hooks would record the outputs of layers run when skipped.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Router(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.small = nn.Linear(8, 8)
                    self.large = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))

                def forward(self, x):
                    if x.abs().mean() > 1:
                        y = self.large(x)
                    else:
                        y = self.small(x)
                    return y
            """,
            fixed="""
            import torch
            from torch import nn

            class Router(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.small = nn.Linear(8, 8)
                    self.large = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))

                def forward(self, x):
                    y = torch.cond(x.abs().mean() > 1, lambda x: self.large(x).clone(memory_format=torch.contiguous_format), lambda x: self.small(x).clone(memory_format=torch.contiguous_format), (x,))
                    return y
            """,  # noqa: E501 - example code, linted and compared as written
            calls="[(torch.randn(4, 8),), (torch.randn(4, 8) * 3,)]",
            entry="Router",
            lines=[11],
            note=("arms that call submodules get torch.cond under the default `tensor-branch-fix = \"auto\"`: "
                  "torch.where would run both (measured slower on an H200)"),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Summary(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    with torch.no_grad():
                        h = self.proj(x)
                        if h.mean() > 0:
                            pooled = h.mean(0, keepdim=True)
                        else:
                            pooled = h * 2
                        return pooled.sum(-1)
            """,
            fixed="""
            import torch
            from torch import nn

            class Summary(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    with torch.no_grad():
                        h = self.proj(x)
                        pooled = torch.cond(h.mean() > 0, lambda h: h.mean(0, keepdim=True).contiguous(), lambda h: (h * 2).contiguous(), (h,))
                        return pooled.sum(-1)
            """,  # noqa: E501 - example code, linted and compared as written
            calls="[(torch.randn(4, 8) + 3,), (torch.randn(4, 8) - 3,)]",
            entry="Summary",
            lines=[12],
            note=("arms of one rank and dtype that differ in shape get torch.cond where no gradient flows "
                  "and the result is not broadcast against another tensor (its size is known only at run time)"),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class TopRows(nn.Module):
                @torch.no_grad()
                def forward(self, scores):
                    if scores.mean() > 0:
                        return scores[:2] * 2
                    return scores.softmax(-1)
            """,
            fixed="""
            import torch
            from torch import nn

            class TopRows(nn.Module):
                @torch.no_grad()
                def forward(self, scores):
                    return torch.cond(scores.mean() > 0, lambda scores: (scores[:2] * 2).contiguous(), lambda scores: scores.softmax(-1).contiguous(), (scores,))
            """,  # noqa: E501 - example code, linted and compared as written
            calls="[(torch.randn(4, 8) + 1,), (torch.randn(4, 8) - 1,)]",
            entry="TopRows",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            def hflip(img):
                return img.flip(-1) if isinstance(img, torch.Tensor) else img.transpose(0)

            class RandomHorizontalFlip(nn.Module):
                def __init__(self, p=0.5):
                    super().__init__()
                    self.p = p

                def forward(self, img):
                    if torch.rand(1) < self.p:
                        return hflip(img)
                    return img
            """,
            entry="RandomHorizontalFlip",
            lines=[13],
            note=("No fix: `img` is a tensor only by the untyped-parameter default (the transform also "
                  "takes PIL images, which torch.where rejects, and the original returns `img` itself)."),
        ),
    ]
    valid = [
        # A tuple argument annotated through a module-level alias holds Python ints (timm's twins).
        Valid(
            """
            from typing import Tuple

            import torch
            import torch.nn.functional as F
            from torch import nn

            Size_ = Tuple[int, int]

            class WindowAttention(nn.Module):
                def forward(self, x, size: Size_):
                    B, N, C = x.shape
                    H, W = size
                    pad_r = (4 - W % 4) % 4
                    x = F.pad(x.view(B, H, W, C), (0, 0, 0, pad_r))
                    if pad_r > 0:
                        x = x[:, :, :W, :].contiguous()
                    return x.reshape(B, N, C)
            """,
            calls="[(torch.randn(2, 18, 8), (3, 6))]",
            entry="WindowAttention",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, q, k, mask=None):
                    scores = q @ k.transpose(-1, -2)
                    if mask is not None:
                        scores = scores.masked_fill(mask, float("-inf"))
                    if q.dim() == 3 and q.shape[-1] > 4:
                        scores = scores / q.shape[-1] ** 0.5
                    return scores.softmax(-1)
            """,
            calls="[(torch.randn(2, 4, 8), torch.randn(2, 4, 8))]",
            entry="Attention",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def __init__(self, use_bias=True):
                    super().__init__()
                    self.use_bias = use_bias
                    self.drop = nn.Dropout(0.1)
                    self.fc = nn.Linear(8, 8, bias=use_bias)

                def forward(self, x):
                    if self.training:
                        x = self.drop(x)
                    if self.use_bias and x.dtype == torch.float32:
                        x = self.fc(x)
                    if isinstance(x, torch.Tensor) and x.is_floating_point():
                        x = x * 2
                    return x
            """,
            entry="Block",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Pooler(nn.Module):
                def forward(self, hidden, lengths=None):
                    if hidden.size(0) == 0 or hidden.numel() == 0:
                        return hidden
                    if len(hidden.shape) == 2:
                        return hidden
                    return torch.where(hidden.sum(-1, keepdim=True) > 0, hidden, -hidden)
            """,
            entry="Pooler",
        ),
        Valid(
            """
            import random

            import torch
            from torch import nn

            class LayerDrop(nn.Module):
                def __init__(self, p=0.5):
                    super().__init__()
                    self.p = p
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    skip = False
                    if self.training:
                        skip = self.p > 0.9
                    if not skip:
                        x = self.proj(x)
                        x = torch.relu(x)
                    level = x.abs().mean()
                    level = 4
                    if level > 3:
                        x = x * random.uniform(0.9, 1.1)
                    return x
            """,
            entry="LayerDrop",
        ),
    ]

    def visit_If(self, node: cst.If) -> None:
        super().visit_If(node)
        culprit = data_dependent(self.context, node.test)
        if culprit is None:
            return
        outcome = linearise_if(self.context, node, self.is_elif(node))
        self.report(node.test, message=with_reason(self.message, outcome), fix=outcome.fix, path_node=culprit)

    def visit_Call(self, node: cst.Call) -> None:
        where = allowed_break(self.context, node, "branch")
        if where is not None:
            self.report(node, message=(
                f"{where} branches on a tensor value: registered with `allow_in_graph`, it runs on fake tensors "
                "that cannot decide the branch, and the graph breaks here; use `torch.where` in it, or leave it "
                "unregistered so that Dynamo traces it"))
