"""JIT201 tensor-item: `.item()` on a tensor reads its value into Python and breaks the graph."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.fixes.branches.blocks import BranchFix, with_reason
from compile_lint.fixes.branches.conditions import unsafe_operand
from compile_lint.fixes.branches.dispatch import ElifTracker, linearise_data_read
from compile_lint.fixes.capture_scalars import report_captured_size, report_kept_or_captured
from compile_lint.fixes.keep_tensor import SCALAR_CONFIG_NOTE, keep_tensor_fix
from compile_lint.fixes.number_uses import unkept_number
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.allowed_calls import allowed_break, display_path
from compile_lint.rules.support.tensor_data import (
    NOT_ARRAYS,
    method_call,
)


class TensorItem(ElifTracker, Rule):
    """`.item()` on a tensor reads its value into Python and breaks the graph.

    Why: a Python number cannot live in the graph, so the default `torch.compile` stops
    the graph at `.item()` ("Unsupported Tensor.item() call with capture_scalar_outputs=
    False"), runs it eagerly and starts a new graph; the GPU also has to sync.
    `fullgraph=True` passes (the value becomes an unbacked symbol) until Python branches
    on it or indexes with it. With `torch._dynamo.config.capture_scalar_outputs = True`
    the default compile captures it too.

    Instead: keep the value as a 0-d tensor (`t.detach()` where `.item()` cut the
    gradient) and do the arithmetic with tensors; branch with `torch.where`. The fix
    (unsafe) has two shapes:
    - the number only feeds tensor arithmetic: `.item()` -> `.detach()`. Measured identical
      for floating-point operands, but an integer tensor combined with a
      float16/bfloat16/float64 `t` then takes `t`'s dtype, not float32.
    - the number decides a test (`if t.item() > c:`, a ternary, `assert t.item() <= n`):
      the test stays a tensor (`t > c`) and the whole `if` gets the tensor-valued-if
      (JIT101) rewrite, so the two rules agree on one fix; an assert on a tensor compiles
      into a runtime check. A Python float literal is then compared in the tensor's
      dtype, not in double precision.
    - the number is only a slice bound (`x[:n]`), the one index of a tensor (`x[n]`) or a
      size (`torch.zeros/arange(n)`, `x.new_zeros`, `expand`, `repeat`, `narrow`, `topk`,
      `roll`, `F.pad`): the read stays, and `torch._dynamo.config.capture_scalar_outputs =
      True` goes right before the file's `torch.compile` call (measured clean on 2.13,
      benchmarks/results/scalar_size_capture.txt; the setting holds for every compile after
      it). With no compile call in the file the message says where the setting goes.
    - the keep-a-tensor fix is withheld (a slice bound and arithmetic, `x[:, :n].sum(1) / n`)
      but every use of the number is one of those sizes, tensor arithmetic, or Python
      arithmetic used so in turn: the same setting (fixes/setting_hazards.number_hazard).
    No fix, and the message says why, where the number is used in a call, as a `view`/
    `reshape`/`split` size, a second index (`x[:, n]`), or in Python control flow that has
    no rewrite (see JIT101 for those shapes). The step it gives then fits the use of the
    number (fixes/number_uses.py): printed or logged -> out of the compiled code or under
    `if not torch.compiler.is_compiling():`; a Python test -> a tensor test and
    `torch.where`; a `range()` bound -> a fixed bound with `torch.where`; a size or index
    that captures clean -> `capture_scalar_outputs`; another size or index -> a shape, a
    mask or a 1-d tensor index; arithmetic -> `t.detach()`.
    """

    code = "JIT201"
    name = "tensor-item"
    kind = "break"
    gb_type = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    gb_id = "GB0124"
    fix_applicability = "unsafe"
    withheld_fix_steps = True
    config_note = SCALAR_CONFIG_NOTE
    message = (
        "`.item()` reads tensor data into Python and breaks the graph; "
        "keep it a tensor (`t.detach()` in place of `t.item()`) and compute with tensors"
    )
    steps = ("t.detach()", "torch._dynamo.config.capture_scalar_outputs = True")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class AbsMaxQuant(nn.Module):
                def forward(self, x):
                    scale = x.abs().max().item()
                    q = torch.round(x / scale * 127)
                    return q * scale / 127
            """,
            fixed="""
            import torch
            from torch import nn

            class AbsMaxQuant(nn.Module):
                def forward(self, x):
                    scale = x.abs().max().detach()
                    q = torch.round(x / scale * 127)
                    return q * scale / 127
            """,
            entry="AbsMaxQuant",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class TemperatureSoftmax(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.log_temp = nn.Parameter(torch.zeros(()))

                def forward(self, logits):
                    return (logits / (self.log_temp.exp().item())).softmax(-1)
            """,
            fixed="""
            import torch
            from torch import nn

            class TemperatureSoftmax(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.log_temp = nn.Parameter(torch.zeros(()))

                def forward(self, logits):
                    return (logits / (self.log_temp.exp().detach())).softmax(-1)
            """,
            entry="TemperatureSoftmax",
            lines=[10],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class GreedyPolicy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.q = nn.Linear(8, 4)

                def forward(self, obs):
                    values = self.q(obs)
                    action = values[0].argmax().item()
                    return values[:, action]
            """,
            entry="GreedyPolicy",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MeanPooler(nn.Module):
                def forward(self, hidden_states, attention_mask):
                    mask = attention_mask.unsqueeze(-1).to(hidden_states.dtype)
                    num_tokens = attention_mask.sum().item()
                    return (hidden_states * mask).sum(dim=(0, 1)) / num_tokens
            """,
            calls="[(torch.randn(2, 4, 8), torch.ones(2, 4, dtype=torch.long))]",
            fixed="""
            import torch
            from torch import nn

            class MeanPooler(nn.Module):
                def forward(self, hidden_states, attention_mask):
                    mask = attention_mask.unsqueeze(-1).to(hidden_states.dtype)
                    num_tokens = attention_mask.sum().detach()
                    return (hidden_states * mask).sum(dim=(0, 1)) / num_tokens
            """,
            entry="MeanPooler",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x: torch.Tensor):
                    if x.mean().item() > 0:
                        x = x * 2
                    return x
            """,
            calls="[(torch.randn(4, 8) + 1,), (torch.randn(4, 8) - 1,)]",
            fixed="""
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x: torch.Tensor):
                    x = torch.where(x.mean() > 0, x * 2, x)
                    return x
            """,
            entry="Gate",
            lines=[6],
            note="A test on a value read into Python: kept a tensor, and the whole `if` rewritten with torch.where.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Embed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.table = nn.Embedding(16, 8)

                def forward(self, x, lengths):
                    assert lengths.max().item() <= x.shape[1]
                    return self.table(x) * (lengths > 0).unsqueeze(-1).unsqueeze(-1)
            """,
            calls="[(torch.randint(0, 16, (2, 4)), torch.tensor([3, 4]))]",
            fixed="""
            import torch
            from torch import nn

            class Embed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.table = nn.Embedding(16, 8)

                def forward(self, x, lengths):
                    assert lengths.max() <= x.shape[1]
                    return self.table(x) * (lengths > 0).unsqueeze(-1).unsqueeze(-1)
            """,
            entry="Embed",
            lines=[10],
            note="An assert on a tensor compiles into a runtime check.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Truncate(nn.Module):
                def forward(self, x, lengths):
                    n = lengths.max().item()
                    return x[:, :n] * 2

            model = torch.compile(Truncate())
            """,
            calls="[(torch.randn(2, 8, 4), torch.tensor([5, 3])), (torch.randn(2, 8, 4), torch.tensor([2, 7]))]",
            fixed="""
            import torch
            from torch import nn

            class Truncate(nn.Module):
                def forward(self, x, lengths):
                    n = lengths.max().item()
                    return x[:, :n] * 2

            torch._dynamo.config.capture_scalar_outputs = True
            model = torch.compile(Truncate())
            """,
            entry="Truncate",
            lines=[6],
            note="Only a slice bound: the number is captured (an unbacked size), set before the compile call.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Positions(nn.Module):
                def forward(self, x, lengths):
                    n = lengths.max().item()
                    return torch.arange(n) * x.sum()
            """,
            calls="[(torch.randn(2, 8, 4), torch.tensor([5, 3]))]",
            entry="Positions",
            lines=[6],
            note="No fix: no torch.compile call in this file; the message says where the setting goes.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Rows(nn.Module):
                def forward(self, x, groups):
                    n = groups.item()
                    return x.reshape(n, -1) * 2

            model = torch.compile(Rows())
            """,
            calls="[(torch.randn(8, 6), torch.tensor(4)), (torch.randn(8, 6), torch.tensor(3))]",
            entry="Rows",
            lines=[6],
            note=("No fix: a reshape size read from a 0-d input is guarded on (`8 % n`): "
                  "it recompiles, captured or not."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class TruncateMean(nn.Module):
                def forward(self, x, lengths):
                    n = lengths.max().item()
                    return x[:, :n].sum(1) / n

            model = torch.compile(TruncateMean())
            """,
            calls="[(torch.randn(2, 8, 4), torch.tensor([5, 3])), (torch.randn(2, 8, 4), torch.tensor([2, 7]))]",
            fixed="""
            import torch
            from torch import nn

            class TruncateMean(nn.Module):
                def forward(self, x, lengths):
                    n = lengths.max().item()
                    return x[:, :n].sum(1) / n

            torch._dynamo.config.capture_scalar_outputs = True
            model = torch.compile(TruncateMean())
            """,
            entry="TruncateMean",
            lines=[6],
            note=("A slice bound and a divisor of a tensor: no tensor can replace the bound, and every use "
                  "compiles once captured, so the fix sets capture_scalar_outputs before the compile call."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LatentStats(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("updates", torch.zeros((), dtype=torch.long))
                    self.frozen = False

                def forward(self, x):
                    if self.updates.item() >= 3:
                        self.frozen = True
                    return x * 2
            """,
            entry="LatentStats",
            lines=[11],
            note="No fix: the branch sets module state.",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class AbsMaxQuant(nn.Module):
                def forward(self, x):
                    scale = x.abs().max().clamp(min=1e-8)
                    return torch.round(x / scale * 127) * scale / 127
            """,
            entry="AbsMaxQuant",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Losses(nn.Module):
                def forward(self, x):
                    losses = {"l1": x.abs().mean(), "l2": x.pow(2).mean()}
                    total = sum(v for k, v in losses.items())
                    return total
            """,
            entry="Losses",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Normalize(nn.Module):
                def forward(self, x):
                    n = x.size(-1)
                    d = x.shape[1]
                    return x / (n * d) ** 0.5
            """,
            entry="Normalize",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = nn.Linear(8, 4)
                    self.last_confidence = 0.0

                def forward(self, x):
                    probs = self.head(x).softmax(-1)
                    if not torch.compiler.is_compiling():
                        self.last_confidence = probs.max().item()
                    return probs
            """,
            entry="Classifier",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Window(nn.Module):
                def forward(self, x, start):
                    s = start.max().item()
                    return x.narrow(1, s, 2) * 2

            torch._dynamo.config.capture_scalar_outputs = True
            compiled = torch.compile(Window())
            """,
            calls="[(torch.randn(2, 8, 4), torch.tensor([1, 3])), (torch.randn(2, 8, 4), torch.tensor([5, 2]))]",
            entry="Window",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        receiver = method_call(node, frozenset({"item"}))
        if receiver is None:
            where = _imported_helper_reading_item(self, node) or allowed_break(self.context, node, "item")
            if where is not None:
                self.report(node, message=(
                    f"{where} reads tensor data with `.item()` and breaks the graph here; keep the value a "
                    "tensor in the helper (`t.detach()` in place of `t.item()`), or pass it sizes"))
            return
        if self.context.kind(receiver) in NOT_ARRAYS:
            return
        if not self.context.kind(receiver).tensorish:
            reason = unkept_number(self.context, node,
                                   "cannot tell that the receiver is a tensor to keep (an array or an unknown object)")
            self.report(node, message=with_reason(self.message, BranchFix(None, reason)))
            return
        outcome = linearise_data_read(self.context, node, self.is_elif)
        if outcome is not None:
            self.report(node, message=with_reason(self.message, outcome), fix=outcome.fix)
            return
        if report_captured_size(self.context, self.report, node, self.message):
            return
        assert isinstance(node.func, cst.Attribute)
        detached = node.with_changes(func=node.func.with_changes(attr=cst.Name("detach")))
        fix = keep_tensor_fix(self.context, node, detached, receiver)
        reason = unkept_number(self.context, node, unsafe_operand(self.context, receiver))
        report_kept_or_captured(self.context, self.report, node, self.message, BranchFix(fix, reason))


def _imported_helper_reading_item(rule: Rule, call: cst.Call) -> Optional[str]:
    """"`helper()` (its file:line)" when `call` runs a function of another file that reads `.item()`.

    The program model evaluated the helper with what this call passes it: a read counts when
    its receiver is a tensor there and every run of the helper makes it (no branch, loop or
    early exit before it). The break happens inside the helper, but this call is the traced
    line of the file being linted.
    """
    context = rule.context
    if context.function is None:
        return None
    for path, qualname, line in context.helpers_reading_item(call, context.function):
        if context.reach is not None and context.reach.reaches(path, qualname):
            continue  # a helper of the project that is traced: linted in its own file, at its `.item()`
        return f"`{qualname.rsplit('.', 1)[-1]}()` ({display_path(context.path, path)}:{line})"
    return None
