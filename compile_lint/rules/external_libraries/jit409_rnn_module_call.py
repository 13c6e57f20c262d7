"""JIT409 rnn-module-call: Using an `nn.LSTM`, `nn.GRU` or `nn.RNN` module in a compiled
region makes Dynamo give up on that forward."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.settings import ALLOW_RNN, file_sets, setting_message, setting_outcome
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
    measured on 2.13: LSTM, GRU and RNN, bidirectional and stacked, compile with
    `fullgraph=True` and the default compile shows no break, outputs equal), or step an
    `nn.LSTMCell` / `nn.GRUCell` in a loop of fixed length, which Dynamo traces. The fix
    (unsafe) sets it right before the file's one `torch.compile` call; not where the
    function packs sequences (`pack_padded_sequence` stays a break with the setting) and
    not where the file sets it already. It is a global setting, and the traced RNN can be
    slower than cuDNN's fused kernel run eagerly: measure with `compile-lint verify --bench`.
    """

    code = "JIT409"
    name = "rnn-module-call"
    kind = "break"
    gb_type = "Attempted to wrap RNN, GRU, or LSTM"
    gb_id = "GB0014"
    fix_applicability = "unsafe"
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

            class Tagger(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.GRU(8, 16, batch_first=True, bidirectional=True)
                    self.head = nn.Linear(32, 4)

                def forward(self, x):
                    out, _ = self.rnn(x)
                    return self.head(out)

            model = torch.compile(Tagger())
            """,
            calls="[(torch.randn(2, 5, 8),), (torch.randn(2, 5, 8) * 2,)]",
            fixed="""
            import torch
            from torch import nn

            class Tagger(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.GRU(8, 16, batch_first=True, bidirectional=True)
                    self.head = nn.Linear(32, 4)

                def forward(self, x):
                    out, _ = self.rnn(x)
                    return self.head(out)

            torch._dynamo.config.allow_rnn = True
            model = torch.compile(Tagger())
            """,
            entry="Tagger",
            lines=[11],
            note="The file compiles the model: the fix sets allow_rnn right before that call.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class PackedEncoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lstm = nn.LSTM(8, 8, batch_first=True)

                def forward(self, x, lengths):
                    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
                    out, _ = self.lstm(packed)
                    return nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]

            model = torch.compile(PackedEncoder())
            """,
            calls="[(torch.randn(2, 5, 8), torch.tensor([5, 3]))]",
            entry="PackedEncoder",
            lines=[11],
            note="No fix: packed sequences break the graph with allow_rnn too.",
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
            self._report_with_setting(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) in _RNN_MODULES:
            self._report_with_setting(node)

    def _report_with_setting(self, node: cst.CSTNode) -> None:
        """Report the use with `allow_rnn`'s fix (or why none); nothing where the file sets it and
        nothing packs sequences."""
        hazard = _packs_sequences(self)
        if hazard is None and file_sets(self.context, ALLOW_RNN):
            return
        outcome = setting_outcome(self.context, ALLOW_RNN, hazard, "this forward")
        self.report(node, message=setting_message(HEADLINE, outcome), fix=outcome.fix)


HEADLINE = "Dynamo does not trace nn.LSTM/GRU/RNN: the forward using it runs eagerly"
# Packed sequences stay a break with allow_rnn (torch.nn.utils.rnn's helpers are skipped by Dynamo).
_PACKING = frozenset({"pack_padded_sequence", "pack_sequence", "pad_packed_sequence", "PackedSequence",
                      "pad_sequence"})


def _packs_sequences(rule: Rule) -> "str | None":
    """Why `allow_rnn` would not make the function whole: it packs sequences; None otherwise."""
    function = rule.context.function
    if function is None:
        return None
    for node in iter_nodes(function.body):
        if isinstance(node, cst.Call):
            name = (rule.context.qualname(node.func) or "").rsplit(".", 1)[-1]
            if name in _PACKING:
                return f"`{name}` packs the sequences, which Dynamo does not trace with the setting either"
    return None


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
