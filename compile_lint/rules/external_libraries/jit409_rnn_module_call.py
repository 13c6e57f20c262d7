"""JIT409 rnn-module-call: Using an `nn.LSTM`, `nn.GRU` or `nn.RNN` module in a compiled
region makes Dynamo give up on that forward."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import made_only_by
from compile_lint.rules.support.syntax import self_attribute


class RnnModuleCall(Rule):
    """Using an `nn.LSTM`, `nn.GRU` or `nn.RNN` module in a compiled region makes Dynamo give up on that forward.

    Why: Dynamo refuses to wrap the cuDNN-style recurrent modules ("Attempted to wrap
    RNN, GRU, or LSTM"), and any use of one counts: calling it, `flatten_parameters()`,
    even reading `self.lstm.hidden_size`. Measured on torch 2.13: the whole forward that
    touches it runs eagerly (no graph at all when it is the compiled module's own
    forward; a caller's forward breaks into a graph before and one after the call), and
    `fullgraph=True` fails.

    Instead: set `torch._dynamo.config.allow_rnn = True` before compiling (experimental;
    it compiles these modules with `fullgraph=True` on 2.13), or step an `nn.LSTMCell` /
    `nn.GRUCell` in a loop of fixed length, which Dynamo traces.
    """

    code = "JIT409"
    name = "rnn-module-call"
    kind = "break"
    gb_type = "Attempted to wrap RNN, GRU, or LSTM"
    gb_id = "GB0014"
    config_note = "torch._dynamo.config.allow_rnn = True lets Dynamo trace these modules (experimental)"
    message = (
        "Dynamo does not trace nn.LSTM/GRU/RNN: the forward using it runs eagerly; set "
        "`torch._dynamo.config.allow_rnn = True`, or step an `nn.LSTMCell(n_in, n_hidden)` in a loop"
    )
    steps = ("torch._dynamo.config.allow_rnn = True", "nn.LSTMCell(n_in, n_hidden)")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class SequenceEncoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.lstm = nn.LSTM(8, 8, batch_first=True)

                def forward(self, x):
                    x = self.proj(x)
                    out, _ = self.lstm(x.unsqueeze(0))
                    return out.squeeze(0) + x
            """,
            entry="SequenceEncoder",
            lines=[12],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gru = nn.GRU(8, 8)

                def forward(self, x):
                    self.gru.flatten_parameters()
                    return self.gru(x)[0] * self.gru.hidden_size
            """,
            entry="Decoder",
            lines=[10, 11],
            note="any use of the module counts, not only calls",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.RNN(8, 8)

                def forward(self, x):
                    return self.rnn(x)[0]

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pre = nn.Linear(8, 8)
                    self.encoder = Encoder()

                def forward(self, x):
                    return self.encoder(self.pre(x).relu()).sigmoid()
            """,
            lines=[10],
            note="inside a sub-module: the caller's graph breaks around the call",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class StepDecoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.GRUCell(8, 8)

                def forward(self, x):
                    h = x.new_zeros(1, 8)
                    for t in range(4):
                        h = self.rnn(x[t:t + 1], h)
                    return h
            """,
            entry="StepDecoder",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lstm = nn.LSTMCell(8, 8)
                    self.rnn_proj = nn.Linear(8, 8)

                def forward(self, x):
                    h, c = self.lstm(x)
                    return self.rnn_proj(h + c)
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lstm = nn.LSTM(8, 8)
                    self.head = nn.Linear(8, 8)

                @torch.compiler.disable
                def encode(self, x):
                    return self.lstm(x)[0]

                def forward(self, x):
                    return self.head(x).relu()
            """,
            note="an RNN used only outside the compiled region",
        ),
    ]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self_attribute(node) is not None and _is_rnn_module(self, node):
            self.report(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) in _RNN_MODULES:
            self.report(node)


_RNN_MODULES = frozenset(
    f"torch.nn{package}.{name}"
    for package in ("", ".modules.rnn")
    for name in ("LSTM", "GRU", "RNN")
)


def _is_rnn_module(rule: Rule, expr: cst.BaseExpression) -> bool:
    """True when every value the file assigns to `self.NAME` is an nn.LSTM/GRU/RNN."""
    context = rule.context
    if (isinstance(expr, cst.Attribute) and context.owner_class is not None
            and expr.attr.value not in context.facts.self_attributes(context.owner_class).values
            and not context.bases_mention(_RNN_WORDS)):
        # Only base classes can bind it, and no file of theirs names an RNN class: reading
        # them in detail (every method, for every `self.attr` read) cannot find one.
        return False
    return made_only_by(context, expr, _RNN_MODULES | _UNRESOLVED_SPELLINGS)


# Words every spelling of an RNN class contains, whatever a file imports it as.
_RNN_WORDS = frozenset({"LSTM", "GRU", "RNN"})

# `nn.LSTM` where the file's imports do not resolve `nn` (a star import).
_UNRESOLVED_SPELLINGS = frozenset({"nn.LSTM", "nn.GRU", "nn.RNN"})
