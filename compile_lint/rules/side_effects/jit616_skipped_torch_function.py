"""JIT616 skipped-torch-function: A torch function Dynamo is told never to trace, called in a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.side_effects.jit613_rng_state_in_forward import RNG_STATE_FUNCTIONS
from compile_lint.rules.support.torch_tables import SKIPPED_TORCH_FUNCTIONS


class SkippedTorchFunction(Rule):
    """A torch function Dynamo is told never to trace, called in a compiled region.

    Why: Dynamo's trace rules (`torch._dynamo.trace_rules`) mark some torch functions as
    skipped: `torch.nn.utils.rnn.pack_padded_sequence` / `pad_packed_sequence`,
    `torch.jit.isinstance`, `torch.to_dlpack`, `torch.autograd.backward`,
    `torch.cuda.set_device`, the `torch._C.set_autocast_*` setters... A call to one from
    traced code stops the graph ("Attempted to call function marked as skipped");
    `fullgraph=True` fails. The functions are read from the installed torch's trace
    rules (rules/support/torch_tables.py); the seeding and RNG-state ones are JIT613's.

    Instead: call it outside the compiled function, or use what Dynamo traces: padded
    tensors with a mask (`pad_sequence` compiles) instead of packed sequences,
    `isinstance(x, torch.Tensor)` instead of `torch.jit.isinstance`, `torch.autocast`
    instead of the `set_autocast_*` setters.
    """

    code = "JIT616"
    name = "skipped-torch-function"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    message = (
        "`{name}` is a function Dynamo never traces (its trace rules skip it): the graph breaks here and "
        "fullgraph fails; call it outside the compiled code, or from a `@torch.compiler.disable` helper"
    )
    steps = ("@torch.compiler.disable", "pad_sequence(seqs, batch_first=True)", "isinstance(x, torch.Tensor)")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x, lengths):
                    packed = pack_padded_sequence(self.proj(x), lengths, batch_first=True, enforce_sorted=False)
                    out, _ = pad_packed_sequence(packed, batch_first=True)
                    return out
            """,
            calls="[(torch.randn(2, 3, 4), torch.tensor([3, 2]))]",
            entry="Encoder",
            lines=[11, 12],
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def scale(x):
                if torch.jit.isinstance(x, torch.Tensor):
                    return x * 2
                return x
            """,
            entry="scale",
            lines=[5],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pad_sequence

            class Encoder(nn.Module):
                def forward(self, x):
                    padded = pad_sequence([x, x[:2]], batch_first=True)
                    return padded * 2
            """,
            entry="Encoder",
        ),
        Valid(
            """
            import torch

            @torch.compile(backend="eager")
            def scale(x):
                if isinstance(x, torch.Tensor) and torch.is_tensor(x):
                    return x * 2
                return x
            """,
            entry="scale",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Packer:
                def pack_padded_sequence(self, x, lengths):
                    return x

            packer = Packer()

            class Encoder(nn.Module):
                def forward(self, x, lengths):
                    return packer.pack_padded_sequence(x, lengths) * 2
            """,
            calls="[(torch.randn(2, 3, 4), torch.tensor([3, 2]))]",
            entry="Encoder",
            note="a method of the same name on an object that is not torch",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        if name in _SKIPPED and name not in RNG_STATE_FUNCTIONS:
            message = self.message.format(name=name)
            if name in _TRACED_INSTEAD:
                message = message[:message.rindex("; ") + 2] + _TRACED_INSTEAD[name]
            self.report(node, message)


# What Dynamo traces instead, for the skipped functions models call most.
_TRACED_INSTEAD = dict.fromkeys(
    ("torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.utils.rnn.pad_packed_sequence",
     "torch.nn.utils.rnn.pack_sequence"),
    "keep padded tensors with a mask, which compile (`pad_sequence(seqs, batch_first=True)`), or "
    "call it outside the compiled code") | {
    "torch.jit.isinstance": "use `isinstance(x, torch.Tensor)`, which Dynamo traces",
}

_SKIPPED = frozenset(SKIPPED_TORCH_FUNCTIONS)
