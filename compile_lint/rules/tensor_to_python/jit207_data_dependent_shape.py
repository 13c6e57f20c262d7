"""JIT207 data-dependent-shape: Boolean-mask indexing and ops like `nonzero` give outputs whose size depends on data."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.bindings import tuple_items
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.branches.blocks import with_reason
from compile_lint.fixes.index_loops import (
    in_index_loop,
    index_loop_fix,
    iterating_loop,
    nonzero_operand,
)
from compile_lint.fixes.masked_updates import masked_update_fix
from compile_lint.fixes.setting_hazards import flow_hazard
from compile_lint.fixes.settings import CAPTURE_SHAPES, file_sets, setting_message, setting_outcome
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.syntax import keyword_argument
from compile_lint.rules.support.torch_tables import DYNAMIC_OUTPUT_SHAPE_FUNCTIONS, DYNAMIC_OUTPUT_SHAPE_METHODS

# Six tokens routed to two experts each; expert 3 gets none (an empty selection once every expert runs).
_MOE_CALLS = "[(torch.randn(6, 8), torch.tensor([[0, 1], [1, 2], [0, 2], [2, 1], [0, 1], [1, 0]]), torch.rand(6, 2))]"


class DataDependentShape(Rule):
    """Boolean-mask indexing and ops like `nonzero` give outputs whose size depends on data.

    Why: `x[mask]`, `torch.nonzero`, one-argument `torch.where(mask)`, `masked_select`,
    `unique`, `bincount`, `repeat_interleave` with tensor repeats and `F.one_hot` without
    `num_classes` cannot know their output size without the values, so the default
    `torch.compile` breaks the graph ("Dynamic shape operator"). `fullgraph=True` passes
    for most (the size becomes an unbacked symbol), and so does the default compile with
    `torch._dynamo.config.capture_dynamic_output_shape_ops = True`; `F.one_hot`,
    `torch.linalg.lstsq` and `F.ctc_loss` fail even there. The ops are the ones torch
    tags `dynamic_output_shape` (rules/support/torch_tables.py, generated from the
    installed torch).

    Instead: keep shapes static: `torch.where(mask, x, 0)`, `x * mask`,
    `x.masked_fill(~mask, 0)`, masked sums (`(x * mask).sum() / mask.sum()`); assigning
    through a mask (`x[mask] = 0`) is fine, but `x[mask] += 1` reads `x[mask]` and
    breaks: write `x.copy_(torch.where(mask, x + 1, x))` (the fix, when the mask has
    `x`'s shape and the update is `+ - * /` with scalars and tensors of `x`'s shape read
    through the same mask, `x[mask] = y[mask]` too; with a mask over leading dims,
    shape it like `x` with `mask[..., None]`, and keep a row per element such as `emb[k]`
    only if it is one row for every selected element); pass `output_size=` to
    `repeat_interleave` and `num_classes` to `F.one_hot`; for a full-rank `a`,
    `torch.linalg.pinv(a) @ b` is lstsq's solution and compiles; CTC loss compiles under
    no setting (a `@torch.compiler.disable` function splits the graph there on purpose).
    Where the selection must stay, set `capture_dynamic_output_shape_ops = True` (measured
    clean on the examples; code that later branches on the selection's size is JIT212's;
    a file that sets it gets no finding for these ops).
    A `for` loop over the indices `nonzero()` finds (a mixture-of-experts loop over the
    experts hit) still breaks with the setting, at the `for`: loop over every candidate,
    `for i in range(num_experts)`, and let an empty selection do nothing (the fix, where the
    count is static (`m.sum(dims) > 0` over every dim but the first of a permuted mask) and
    the body only binds locals and scatters through its selection; it writes the setting
    after the imports, and runs every candidate's gather and matmuls, on an empty selection
    for those no token picked: fixes/index_loops.py).
    The fix is unsafe: an integer `x` with a float update raises in
    the original and is truncated by `copy_`, and an update operand that requires grad
    meets the masked-out elements in backward (a non-finite one there gives a NaN
    gradient through `*` or `/`).
    """

    code = "JIT207"
    name = "data-dependent-shape"
    kind = "break"
    gb_type = "Dynamic shape operator"
    gb_id = "GB0036"
    withheld_fix_steps = True
    gb_types = ("Attempted to use `torch.nn.functional.one_hot` with data-dependent output shape",)
    fix_applicability = "unsafe"
    config_note = (
        "With torch._dynamo.config.capture_dynamic_output_shape_ops = True the default "
        "compile captures these ops without a break; fullgraph=True passes either way."
    )
    message = (
        "output size depends on tensor data (mask indexing, nonzero, one-arg where...) and "
        "breaks the graph; keep shapes static (`torch.where(mask, x, 0)`), or set "
        "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`, which compiles it"
    )
    steps = ("torch.where(mask, x, 0)", "torch._dynamo.config.capture_dynamic_output_shape_ops = True",
             "F.one_hot(t, num_classes)", "torch.linalg.pinv(a) @ b", "@torch.compiler.disable",
             "for i in range(num_candidates):")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, loss, weights):
                    valid = weights > 0
                    return loss[valid].mean()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="MaskedMean",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class FgIndices(nn.Module):
                def forward(self, labels):
                    fg = torch.where(labels > 0)[0]
                    return fg.float().mean()
            """,
            calls="[(torch.randint(0, 3, (16,)),)]",
            entry="FgIndices",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ActiveTokens(nn.Module):
                def forward(self, x):
                    keep = torch.isfinite(x) & (x.abs() > 0.1)
                    return x.masked_select(keep).sum() + keep.nonzero().sum()
            """,
            entry="ActiveTokens",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Classes(nn.Module):
                def forward(self, labels):
                    return torch.unique(labels).sum()
            """,
            calls="[(torch.randint(0, 5, (16,)),)]",
            entry="Classes",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ScoreFilter(nn.Module):
                def __init__(self, score_thresh=0.05):
                    super().__init__()
                    self.score_thresh = score_thresh

                def forward(self, boxes, scores):
                    keep = scores > self.score_thresh
                    boxes, scores = boxes[keep], scores[keep]
                    return boxes * scores[:, None]
            """,
            calls="[(torch.rand(10, 4), torch.rand(10))]",
            entry="ScoreFilter",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BumpPositives(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    y[y > 0] += 1
                    return y
            """,
            entry="BumpPositives",
            lines=[7],
            fixed="""
            import torch
            from torch import nn

            class BumpPositives(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    y.copy_(torch.where(y > 0, y + 1, y))
                    return y
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Rescale(nn.Module):
                def __init__(self, scale=0.5):
                    super().__init__()
                    self.scale = scale

                def forward(self, x: torch.Tensor):
                    low = x < -1
                    x[low] = x[low] * self.scale - x.mean()
                    x[torch.isnan(x)] -= 1
                    return x
            """,
            entry="Rescale",
            lines=[11, 12],
            note="in place, like the original: a caller holding `x` sees the update",
            fixed="""
            import torch
            from torch import nn

            class Rescale(nn.Module):
                def __init__(self, scale=0.5):
                    super().__init__()
                    self.scale = scale

                def forward(self, x: torch.Tensor):
                    low = x < -1
                    x.copy_(torch.where(low, (x * self.scale - x.mean()).to(x.dtype), x))
                    x.copy_(torch.where(torch.isnan(x), x - 1, x))
                    return x
            """,
        ),
        Invalid(
            """
            import math
            import torch
            from torch import nn

            class WrapAngles(nn.Module):
                def forward(self, x):
                    angles = torch.atan2(x, x.flip(-1))
                    angles[angles < 0] += 2.0 * math.pi
                    degrees = torch.rad2deg(angles)
                    degrees[degrees >= 180] -= 360 - 1e-3
                    return degrees
            """,
            entry="WrapAngles",
            lines=[8, 10],
            note="kornia's keypoint orientations and angle differences",
            fixed="""
            import math
            import torch
            from torch import nn

            class WrapAngles(nn.Module):
                def forward(self, x):
                    angles = torch.atan2(x, x.flip(-1))
                    angles.copy_(torch.where(angles < 0, angles + 2.0 * math.pi, angles))
                    degrees = torch.rad2deg(angles)
                    degrees.copy_(torch.where(degrees >= 180, degrees - (360 - 1e-3), degrees))
                    return degrees
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Spline(nn.Module):
                def forward(self, inputs: torch.Tensor):
                    outputs = torch.zeros_like(inputs)
                    outside = inputs.abs() > 1
                    outputs[outside] = inputs[outside]
                    inside = ~outside
                    outputs[inside] = inputs[inside] * 0.5 - inputs[inside] * inputs[inside]
                    return outputs
            """,
            entry="Spline",
            lines=[8, 10],
            note="VITS's spline flow: tensors of one shape read through one mask pair element by element",
            fixed="""
            import torch
            from torch import nn

            class Spline(nn.Module):
                def forward(self, inputs: torch.Tensor):
                    outputs = torch.zeros_like(inputs)
                    outside = inputs.abs() > 1
                    outputs.copy_(torch.where(outside, inputs.to(outputs.dtype), outputs))
                    inside = ~outside
                    outputs.copy_(torch.where(inside, (inputs * 0.5 - inputs * inputs).to(outputs.dtype), outputs))
                    return outputs
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class AddClassEmbedding(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.emb = nn.Parameter(torch.randn(3, 8))

                def forward(self, x: torch.Tensor, labels: torch.Tensor):
                    y = x.clone()
                    y[labels == 1] += self.emb[1]
                    return y
            """,
            calls="[(torch.randn(4, 8), torch.tensor([0, 1, 1, 2]))]",
            entry="AddClassEmbedding",
            lines=[11],
            note=("no fix: `self.emb[1]` might be one row per selected element, "
                  "and the mask covers only `y`'s first dim"),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class TokenSelect(nn.Module):
                def __init__(self, token_id=3):
                    super().__init__()
                    self.token_id = token_id

                def placeholder_mask(self, ids, embeds):
                    mask = ids == self.token_id
                    return mask.unsqueeze(-1).expand_as(embeds)

                def forward(self, ids, embeds):
                    mask = self.placeholder_mask(ids, embeds)
                    return embeds[mask].sum()
            """,
            calls="[(torch.randint(0, 5, (2, 6)), torch.randn(2, 6, 4))]",
            entry="TokenSelect",
            lines=[15],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Expand(nn.Module):
                def forward(self, counts):
                    index = torch.repeat_interleave(counts)
                    return index.float().mean()
            """,
            calls="[(torch.tensor([1, 2, 3]),)]",
            entry="Expand",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Labels(nn.Module):
                def forward(self, labels):
                    return F.one_hot(labels).float().sum(0)
            """,
            calls="[(torch.tensor([0, 2, 1, 2]),)]",
            entry="Labels",
            lines=[7],
            note="from torch's table (aten::one_hot is tagged dynamic_output_shape): the class count is the data's max",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Fit(nn.Module):
                def forward(self, a, b):
                    return torch.linalg.lstsq(a, b).solution * 2
            """,
            calls="[(torch.randn(6, 3), torch.randn(6, 2))]",
            entry="Fit",
            lines=[6],
            note="from torch's table: aten::linalg_lstsq is tagged dynamic_output_shape; fullgraph=True fails too",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class CTC(nn.Module):
                def forward(self, log_probs, targets):
                    return F.ctc_loss(log_probs, targets, [5, 5], [3, 2])
            """,
            calls="[(torch.randn(5, 2, 4).log_softmax(2), torch.randint(1, 4, (2, 3)))]",
            entry="CTC",
            lines=[7],
            note="from torch's table: aten::_ctc_loss is tagged dynamic_output_shape; fullgraph=True fails too",
        ),
        Invalid(
            """
            import torch
            from torch import nn


            class Experts(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.num_experts = 4
                    self.gate_up = nn.Parameter(torch.randn(4, 16, 8))
                    self.down = nn.Parameter(torch.randn(4, 8, 8))

                def forward(self, x, top_k_index, top_k_weights):
                    out = torch.zeros_like(x)
                    with torch.no_grad():
                        expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
                        expert_mask = expert_mask.permute(2, 1, 0)
                        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
                    for expert_idx in expert_hit:
                        expert_idx = expert_idx[0]
                        if expert_idx == self.num_experts:
                            continue
                        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
                        gate, up = (x[token_idx] @ self.gate_up[expert_idx].T).chunk(2, dim=-1)
                        h = (torch.nn.functional.silu(gate) * up) @ self.down[expert_idx].T
                        out.index_add_(0, token_idx, h * top_k_weights[token_idx, top_k_pos, None])
                    return out
            """,
            calls=_MOE_CALLS,
            entry="Experts",
            lines=[17, 22],
            fixed="""
            import torch
            from torch import nn

            # Lets `torch.where(mask)` compile in a loop over every candidate index (compile-lint JIT207).
            torch._dynamo.config.capture_dynamic_output_shape_ops = True


            class Experts(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.num_experts = 4
                    self.gate_up = nn.Parameter(torch.randn(4, 16, 8))
                    self.down = nn.Parameter(torch.randn(4, 8, 8))

                def forward(self, x, top_k_index, top_k_weights):
                    out = torch.zeros_like(x)
                    with torch.no_grad():
                        expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
                        expert_mask = expert_mask.permute(2, 1, 0)
                    for expert_idx in range(self.num_experts):
                        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
                        gate, up = (x[token_idx] @ self.gate_up[expert_idx].T).chunk(2, dim=-1)
                        h = (torch.nn.functional.silu(gate) * up) @ self.down[expert_idx].T
                        out.index_add_(0, token_idx, h * top_k_weights[token_idx, top_k_pos, None])
                    return out
            """,
            note=("transformers' eager experts loop (mixtral, qwen2_moe; dbrx and gpt_oss alike): the default compile "
                  "breaks at nonzero(), and with capture_dynamic_output_shape_ops at the `for`. Fixed: every expert "
                  "runs (expert 3, picked by no token, on an empty selection), one graph, same outputs; the padding "
                  "class one_hot adds (num_experts + 1) is skipped by the original and left out by the fix"),
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn


            class Experts(nn.ModuleDict):
                def __init__(self):
                    super().__init__()
                    self.num_experts = 4
                    for idx in range(self.num_experts):
                        self[f"expert_{idx}"] = nn.Linear(8, 8)

                def forward(self, x, router_mask, router_probs):
                    out = torch.zeros_like(x)
                    expert_mask = F.one_hot(router_mask, num_classes=self.num_experts).permute(2, 1, 0)
                    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
                    for expert_idx in expert_hit:
                        idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
                        h = self[f"expert_{expert_idx[0]}"](x[top_x]) * router_probs[top_x, idx, None]
                        out.index_add_(0, top_x, h)
                    return out
            """,
            calls=_MOE_CALLS,
            entry="Experts",
            lines=[16, 18],
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch import nn

            # Lets `torch.where(mask)` compile in a loop over every candidate index (compile-lint JIT207).
            torch._dynamo.config.capture_dynamic_output_shape_ops = True


            class Experts(nn.ModuleDict):
                def __init__(self):
                    super().__init__()
                    self.num_experts = 4
                    for idx in range(self.num_experts):
                        self[f"expert_{idx}"] = nn.Linear(8, 8)

                def forward(self, x, router_mask, router_probs):
                    out = torch.zeros_like(x)
                    expert_mask = F.one_hot(router_mask, num_classes=self.num_experts).permute(2, 1, 0)
                    for expert_idx in range(self.num_experts):
                        idx, top_x = torch.where(expert_mask[expert_idx])
                        h = self[f"expert_{expert_idx}"](x[top_x]) * router_probs[top_x, idx, None]
                        out.index_add_(0, top_x, h)
                    return out
            """,
            note=("nllb_moe and switch_transformers: the loop reads the row of nonzero() itself (`expert_idx[0]`, "
                  "`mask[expert_idx].squeeze(0)`), which the fix reads as the int index"),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class PositiveMean(nn.Module):
                def forward(self, scores: torch.Tensor):
                    picked = scores[scores > 0]
                    return picked.sum() / (len(picked) + 1)

            model = torch.compile(PositiveMean())
            """,
            calls="[(torch.randn(4, 8),), (torch.randn(4, 8),)]",
            fixed="""
            import torch
            from torch import nn

            class PositiveMean(nn.Module):
                def forward(self, scores: torch.Tensor):
                    picked = scores[scores > 0]
                    return picked.sum() / (len(picked) + 1)

            torch._dynamo.config.capture_dynamic_output_shape_ops = True
            model = torch.compile(PositiveMean())
            """,
            entry="PositiveMean",
            lines=[6],
            note=("The selection's size only meets tensor arithmetic: the fix sets "
                  "capture_dynamic_output_shape_ops right before the file's compile call."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Counts(nn.Module):
                def forward(self, labels: torch.Tensor):
                    counts = torch.bincount(labels, minlength=4)
                    return counts.float() / labels.numel()

            model = torch.compile(Counts())
            """,
            calls="[(torch.tensor([0, 2, 1, 2]),), (torch.tensor([3, 3, 1, 0]),)]",
            fixed="""
            import torch
            from torch import nn

            class Counts(nn.Module):
                def forward(self, labels: torch.Tensor):
                    counts = torch.bincount(labels, minlength=4)
                    return counts.float() / labels.numel()

            torch._dynamo.config.capture_dynamic_output_shape_ops = True
            model = torch.compile(Counts())
            """,
            entry="Counts",
            lines=[6],
            note="`minlength` does not fix the size (a larger label makes more bins): the setting does.",
        ),
        Invalid(
            """
            import torch
            from torch import nn


            class Experts(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.weight = nn.Parameter(torch.randn(4, 8, 8))

                def forward(self, x, top_k_index):
                    expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=4).permute(2, 1, 0)
                    outputs = []
                    for expert_idx in (expert_mask.sum(dim=(-1, -2)) > 0).nonzero():
                        _, token_idx = torch.where(expert_mask[expert_idx].squeeze(0))
                        outputs.append(x[token_idx] @ self.weight[expert_idx[0]])
                    return torch.cat(outputs)
            """,
            calls="[(torch.randn(6, 8), torch.tensor([[0, 1], [1, 2], [0, 2], [2, 1], [0, 1], [1, 0]]))]",
            entry="Experts",
            lines=[13, 14],
            note=("No fix: the body appends one output per expert picked; every expert would append one "
                  "(an empty one for an expert no token picked)"),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class FirstHits(nn.Module):
                def forward(self, scores: torch.Tensor):
                    hits = (scores > 0).nonzero()
                    if hits.shape[0] == 0:
                        return scores.new_zeros(2)
                    return hits[0].float()

            model = torch.compile(FirstHits())
            """,
            calls="[(torch.randn(4, 8),), (-torch.ones(4, 8),)]",
            entry="FirstHits",
            lines=[6],
            note=("No fix: the number of hits then decides a Python `if`, where the break would move "
                  "with capture_dynamic_output_shape_ops."),
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            torch._dynamo.config.capture_dynamic_output_shape_ops = True


            class Experts(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.num_experts = 4
                    self.weight = nn.Parameter(torch.randn(4, 8, 8))

                def forward(self, x, top_k_index):
                    out = torch.zeros_like(x)
                    expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts).permute(2, 1, 0)
                    for expert_idx in range(self.num_experts):
                        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
                        out.index_add_(0, token_idx, x[token_idx] @ self.weight[expert_idx])
                    return out
            """,
            calls="[(torch.randn(6, 8), torch.tensor([[0, 1], [1, 2], [0, 2], [2, 1], [0, 1], [1, 0]]))]",
            entry="Experts",
            note="the file captures dynamic output shapes: the one-argument torch.where compiles in one graph",
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Labels(nn.Module):
                def forward(self, labels):
                    return F.one_hot(labels, num_classes=4).float().sum(0) + F.one_hot(labels, 4).float().sum(0)
            """,
            calls="[(torch.tensor([0, 2, 1, 2]),)]",
            entry="Labels",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, loss, weights):
                    valid = weights > 0
                    total = torch.where(valid, loss, 0).sum()
                    return total / valid.sum().clamp(min=1) + (loss * valid).mean()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="MaskedMean",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ClampNegatives(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    y[y < 0] = 0
                    y[torch.isnan(y)] = 0.0
                    return y.masked_fill(y > 5, 5)
            """,
            entry="ClampNegatives",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Gather(nn.Module):
                def forward(self, x, idx):
                    rows = x[idx]
                    last = x[:, -1]
                    return rows + last.unsqueeze(-1) + x[x.shape[0] - 1]
            """,
            calls="[(torch.randn(4, 8), torch.tensor([0, 2, 1, 3]))]",
            entry="Gather",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Repeat(nn.Module):
                def forward(self, x, counts):
                    fixed = torch.repeat_interleave(x, 2, dim=0)
                    sized = x.repeat_interleave(counts, dim=0, output_size=8)
                    return fixed + sized
            """,
            calls="[(torch.randn(4, 8), torch.tensor([2, 2, 2, 2]))]",
            entry="Repeat",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class WeightedTokens(nn.Module):
                def token_weights(self, ids, embeds):
                    mask = ids > 2
                    return mask.unsqueeze(-1).expand_as(embeds).to(embeds.dtype)

                def forward(self, ids, embeds):
                    weights = self.token_weights(ids, embeds)
                    order = torch.argsort(ids, dim=1)
                    return (embeds * weights)[:, order[0]].sum()
            """,
            calls="[(torch.randint(0, 5, (2, 6)), torch.randn(2, 6, 4))]",
            entry="WeightedTokens",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._store_targets: set[cst.BaseExpression] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        # `x[mask] = v` writes in place (index_put) and keeps shapes static. `x[mask] += v`
        # is no such target: it reads `x[mask]` first, and that breaks (measured).
        self._store_targets.add(node.target)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        # A value of unknown kind (`self.distance(a, b)`, a module's output) indexed by what is
        # certainly a boolean tensor is a tensor too: no Python container takes a mask. The fix
        # rewrites only values known to be tensors.
        kind = self.context.kind(node.value)
        if node in self._store_targets or kind not in _MASKABLE:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and (_is_mask(self, index.value)
                                                 or _compares_itself(self, index.value, node.value)):
                known = len(node.slice) == 1 and kind.tensorish
                update = masked_update_fix(self.context, node, index.value) if known else None
                if update is None or update.fix is None and self._report_captured(node, "mask indexing", only_fix=True):
                    self._report_captured(node, "mask indexing")
                else:
                    self.report(node, with_reason(self.message, update), update.fix)
                return

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.context.qualname(func)
        if qualified is not None:
            if not qualified.startswith("torch."):
                return
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if qualified == "torch.repeat_interleave":
                # `torch.repeat_interleave(counts)`: a lone argument is the repeats.
                if self._tensor_repeats(node, positional[1:2] if len(node.args) > 1 else positional[:1]):
                    self._report_captured(node, "`torch.repeat_interleave`")
            elif qualified == "torch.nn.functional.one_hot":
                if _one_hot_counts_classes(node):
                    self.report(node, ONE_HOT_MESSAGE)
            elif qualified in _NO_SHAPE_RULE:
                self.report(node, _NO_SHAPE_RULE[qualified])
            elif qualified in DYNAMIC_OUTPUT_SHAPE_FUNCTIONS or (
                qualified == "torch.where" and len(node.args) == 1 and positional
            ):
                self._report_captured(node, f"`{qualified}`")
            return
        if isinstance(func, cst.Attribute) and self.context.kind(func.value) is Kind.TENSOR:
            method = func.attr.value
            if method == "repeat_interleave":
                positional = [a for a in node.args if a.keyword is None and not a.star]
                if self._tensor_repeats(node, positional[:1]):
                    self._report_captured(node, "`repeat_interleave`")
            elif method in DYNAMIC_OUTPUT_SHAPE_METHODS and method not in _NOT_METHOD_SPELLINGS:
                self._report_captured(node, f"`{method}`")

    def _report_captured(self, node: cst.BaseExpression, subject: str, only_fix: bool = False) -> bool:
        """Report an op `capture_dynamic_output_shape_ops` captures: with the setting's fix where nothing
        later breaks on the captured size, else why not; nothing where the file sets it and nothing would.

        With `only_fix`, report nothing and answer whether the setting's fix applies (a masked
        update whose own fix is withheld takes the setting's instead, where there is one).

        A `for` loop over what a `nonzero()` finds breaks even under the setting: that `nonzero()`
        is reported with the loop's fix (fixes/index_loops.py), an op inside such a loop points at it.
        """
        loop = None
        if isinstance(node, cst.Call) and nonzero_operand(self.context, node) is not None:
            loop = iterating_loop(self.context, node)
        if loop is not None or in_index_loop(self.context, node):
            if only_fix:
                return False  # the setting alone does not compile it: the loop still breaks
            if loop is not None and isinstance(node, cst.Call):
                outcome = index_loop_fix(self.context, node, *loop)
                self.report(node, with_reason(LOOP_FINDING, outcome), outcome.fix)
            else:
                self.report(node, IN_LOOP_MESSAGE)
            return True
        hazard = flow_hazard(self.context, node)
        if hazard is None and file_sets(self.context, CAPTURE_SHAPES):
            return not only_fix
        outcome = setting_outcome(self.context, CAPTURE_SHAPES, hazard, subject)
        if only_fix:
            return outcome.fix is not None
        self.report(node, setting_message(f"{subject}: its output size depends on tensor data and breaks the graph",
                                          outcome), outcome.fix)
        return True

    def _tensor_repeats(self, node: cst.Call, repeats: list[cst.Arg]) -> bool:
        """`repeat_interleave` with a tensor of repeats and no `output_size=`."""
        if any(a.keyword is not None and a.keyword.value == "output_size" for a in node.args):
            return False
        values = [a.value for a in repeats] + [
            a.value for a in node.args if a.keyword is not None and a.keyword.value == "repeats"
        ]
        return any(self.context.kind(value) is Kind.TENSOR for value in values)


LOOP_FINDING = (
    "the `for` loop iterates the indices `nonzero()` finds: how many there are depends on data, so the graph "
    "breaks (at the `for` under capture_dynamic_output_shape_ops); loop over every candidate: "
    "`for i in range(num_candidates):`"
)
IN_LOOP_MESSAGE = (
    "output size depends on tensor data and breaks the graph, in a loop over the indices `nonzero()` finds, which "
    "breaks even with capture_dynamic_output_shape_ops; loop over every candidate (the finding at the `nonzero()`): "
    "`for i in range(num_candidates):`"
)
ONE_HOT_MESSAGE = (
    "`F.one_hot` without `num_classes` reads the class count from the data and breaks the graph under every "
    "setting; pass the count: `F.one_hot(t, num_classes)`"
)
# Ops with no shape rule for fake tensors: capture_dynamic_output_shape_ops does not compile them either.
_NO_SHAPE_RULE = {
    "torch.linalg.lstsq": (
        "`torch.linalg.lstsq` has no shape rule under compile, even with capture_dynamic_output_shape_ops, and "
        "breaks the graph; for a full-rank `a` the same solution is `torch.linalg.pinv(a) @ b`"),
} | dict.fromkeys(("torch.nn.functional.ctc_loss", "torch.ctc_loss"), (
    "CTC loss has no shape rule under compile, even with capture_dynamic_output_shape_ops, and breaks the graph; "
    "compute it in a `@torch.compiler.disable` function (the graph splits there on purpose)"))


# torch's table maps `aten::index.Tensor` to `Tensor.index`, but only a boolean index makes
# its size data-dependent, and users write it `x[mask]`: visit_Subscript decides that.
# (`torch.where(mask)` is `aten::nonzero` under another name; repeat_interleave and one_hot
# depend on their arguments: visit_Call decides those.)
_NOT_METHOD_SPELLINGS = frozenset({"index"})


def _one_hot_counts_classes(node: cst.Call) -> bool:
    """`F.one_hot(t)` / `num_classes=-1`: the class count is read from the data (`t.max() + 1`)."""
    classes = keyword_argument(node, "num_classes")
    if classes is None:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if len(positional) > 1:
            classes = positional[1]
        elif any(a.star for a in node.args):
            return False
    if classes is None:
        return True
    value = classes.value
    return (isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)
            and isinstance(value.expression, cst.Integer) and value.expression.value == "1")


_MASK_FUNCTIONS = frozenset({
    "torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf", "torch.isin",
    "torch.logical_and", "torch.logical_or", "torch.logical_not", "torch.logical_xor",
    "torch.eq", "torch.ne", "torch.gt", "torch.ge", "torch.lt", "torch.le", "torch.isclose",
})


_MASK_METHODS = frozenset({
    "bool", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor",
    "eq", "ne", "gt", "ge", "lt", "le", "isclose",
})


# Kinds of a value that mask indexing reads (an unknown one only with a certain mask, see _is_mask).
_MASKABLE = frozenset({Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.UNKNOWN})


_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


# Methods that keep a boolean tensor boolean (a view, a broadcast, a move to a device).
_MASK_PRESERVING = frozenset({
    "view", "reshape", "unsqueeze", "squeeze", "expand", "expand_as", "flatten", "permute", "transpose",
    "contiguous", "clone", "detach", "t", "all", "any",
})


def _is_mask(rule: Rule, expr: cst.BaseExpression, depth: int = 0,
             function: Optional[cst.FunctionDef] = None) -> bool:
    """True for an expression that is certainly a boolean tensor (a comparison, `~m`, `m & n`...).

    Views and moves of a mask (`m.unsqueeze(-1).expand_as(x).to(x.device)`) and what a
    helper of this file returns (`self.get_placeholder_mask(...)`) are masks too.
    `function` is where `expr` is evaluated (default: the function being visited).
    """
    context = rule.context
    function = function or context.function
    if depth > 6 or function is None:
        return False
    if isinstance(expr, cst.Comparison):
        return (all(isinstance(t.operator, _ORDERING) for t in expr.comparisons)
                and context.facts.kind(expr, function).tensorish)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _is_mask(rule, expr.expression, depth + 1, function)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _is_mask(rule, expr.left, depth + 1, function) or _is_mask(rule, expr.right, depth + 1, function)
    if isinstance(expr, cst.Call):
        qualified = context.qualname(expr.func)
        if qualified is not None:
            return qualified in _MASK_FUNCTIONS
        func = expr.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _MASK_METHODS:
                return context.facts.kind(func.value, function).tensorish
            if method in _MASK_PRESERVING or (method == "to" and _moves_only(expr)):
                return _is_mask(rule, func.value, depth + 1, function)
        target = context.call_target(expr, function)
        if target is not None:
            returned = context.returned_values(target)
            return bool(returned) and all(_is_mask(rule, value, depth + 1, target) for value in returned)
        return False
    if isinstance(expr, cst.Name):
        values = context.local_values(expr.value, function)
        return bool(values) and all(
            isinstance(v, cst.BaseExpression) and _is_mask(rule, v, depth + 1, function) for v in values)
    return False


def _compares_itself(rule: Rule, index: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """`x[x > t]`, or `keep = x > t` then `x[keep]`: a value indexed by a comparison of itself.

    Whatever `x`'s kind, only a tensor (or an array) gives an indexable comparison of itself
    that indexes it, so this is mask indexing.
    """
    if not isinstance(value, cst.Name):
        return False
    if isinstance(index, cst.Name):
        # `keep = None` before an `if` that sets the mask: on the path that indexes, it is the mask.
        values = [v for v in rule.context.local_values(index.value, rule.context.function) if not _is_none(v)]
    else:
        values = [index]
    return bool(values) and all(
        isinstance(v, cst.Comparison) and all(isinstance(t.operator, _ORDERING) for t in v.comparisons)
        and isinstance(v.left, cst.Name) and v.left.value == value.value for v in values)


def _is_none(value: object) -> bool:
    """A local bound to `None`, also as an item of an unpacked literal (`a, b = None, None`)."""
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "element" and isinstance(value[2], int):
        items = tuple_items(value[1]) if isinstance(value[1], cst.BaseExpression) else None
        value = items[value[2]] if items is not None and value[2] < len(items) else None
    return isinstance(value, cst.Name) and value.value == "None"


def _moves_only(call: cst.Call) -> bool:
    """`.to(x.device)` / `.to(device=...)`: a move, not a cast that would make a mask a number."""
    if len(call.args) != 1:
        return False
    arg = call.args[0]
    if arg.keyword is not None:
        return arg.keyword.value == "device"
    return isinstance(arg.value, cst.Attribute) and arg.value.attr.value == "device"
