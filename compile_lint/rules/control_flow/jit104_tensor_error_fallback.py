"""JIT104 tensor-error-fallback: An `except` that falls back when a tensor operation
raises never runs under torch.compile."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import visit
from compile_lint.rules.base import Invalid, Rule, Valid


class TensorErrorFallback(Rule):
    """An `except` that falls back when a tensor operation raises never runs under torch.compile.

    Why: Dynamo runs tensor operations on fake tensors while it traces and inside the
    compiled graph afterwards; an error raised there (a shape mismatch in `x.view(...)`,
    `linalg.cholesky` on a matrix that is not positive-definite, an index out of range) is
    not delivered to the `except` around it. Measured on torch 2.13: a shape error makes
    `torch.compile` itself fail, with or without `fullgraph=True`, and an error of the
    compiled graph propagates out of the compiled call, where eager code took the
    fallback. (An `except` that re-raises, or one that catches only Python errors such
    as `KeyError`, behaves the same in both.)

    Instead: test the condition before the operation (`if x.numel() % 3 == 0:` on
    shapes, which Dynamo guards), use the operation that cannot fail (`reshape` instead
    of `view`, `torch.linalg.cholesky_ex` and its `info`), or move the fallback outside
    the compiled function.
    """

    code = "JIT104"
    name = "tensor-error-fallback"
    kind = "break"
    message = (
        "under torch.compile an error in the tensor operations of this `try` does not reach "
        "this `except`: the compile or the compiled call fails; test shapes first (`if x.numel() % 3 == 0:`), "
        "or use an operation that cannot fail (`x.reshape(-1, 3)`, `torch.linalg.cholesky_ex(a)`)"
    )
    steps = ("if x.numel() % 3 == 0:", "x.reshape(-1, 3)", "torch.linalg.cholesky_ex(a)")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Regroup(nn.Module):
                def forward(self, x):
                    try:
                        y = x.view(-1, 3)
                    except RuntimeError:
                        y = x.reshape(-1, 4)
                    return y * 2
            """,
            entry="Regroup",
            lines=[8],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Whitening(nn.Module):
                def forward(self, x):
                    covariance = x @ x.T
                    try:
                        factor = torch.linalg.cholesky(covariance)
                    except Exception:
                        factor = torch.eye(x.shape[0])
                    return factor @ x
            """,
            calls="[(torch.zeros(4, 8),)]",
            entry="Whitening",
            lines=[9],
            note="the error comes from the compiled graph, at run time",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Embeddings(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.table = nn.Embedding(16, 8)

                def forward(self, ids):
                    try:
                        out = self.table(ids)
                    except IndexError as error:
                        raise ValueError("ids must be below 16") from error
                    return out
            """,
            calls="[(torch.tensor([1, 2, 3]),)]",
            entry="Embeddings",
            note="re-raising behaves the same compiled and eager",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scales = {"small": 0.5}

                def forward(self, x, name="large"):
                    try:
                        scale = self.scales[name]
                    except KeyError:
                        scale = 1.0
                    return x * scale
            """,
            note="a Python error in Python code is caught while tracing",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Regroup(nn.Module):
                def forward(self, x):
                    cache = {}
                    try:
                        y = cache["grouped"] + x.view(-1, 4)
                    except KeyError:
                        y = x.reshape(-1, 4)
                    return y * 2
            """,
            entry="Regroup",
            note="the handler catches only KeyError, which tensor operations do not raise",
        ),
    ]

    def visit_Try(self, node: cst.Try) -> None:
        if not self._runs_tensor_operations(node.body):
            return
        for handler in node.handlers:
            if self._catches_tensor_errors(handler) and not _raises(handler):
                self.report(handler)

    def _catches_tensor_errors(self, handler: cst.ExceptHandler) -> bool:
        """True for a bare `except:` or one naming an error tensor operations raise."""
        if handler.type is None:
            return True
        caught = handler.type.elements if isinstance(handler.type, cst.Tuple) else None
        types = [element.value for element in caught] if caught is not None else [handler.type]
        return any((self.context.qualname(kind) or "") in _TENSOR_ERRORS for kind in types)

    def _runs_tensor_operations(self, body: cst.BaseSuite) -> bool:
        """True when the `try` body calls something that returns a tensor."""
        return any(self.context.kind(call) is Kind.TENSOR for call in _calls(body))


# What torch raises for bad shapes, values and indices, and the bases that catch them.
_TENSOR_ERRORS = frozenset({
    "builtins.Exception", "builtins.BaseException", "builtins.RuntimeError", "builtins.IndexError",
    "builtins.ValueError", "torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError",
    "torch.linalg.LinAlgError", "torch._C._LinAlgError",
})


def _raises(handler: cst.ExceptHandler) -> bool:
    """True when the handler's own statements include a `raise`: an error path, not a fallback."""
    body = handler.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for statement in statements:
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else []
        if any(isinstance(part, cst.Raise) for part in small):
            return True
    return False


def _calls(body: cst.CSTNode) -> Iterator[cst.Call]:
    """The calls in `body`, not inside nested functions, lambdas or classes."""
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> Optional[bool]:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    visit(body, _Calls())
    return iter(found)
