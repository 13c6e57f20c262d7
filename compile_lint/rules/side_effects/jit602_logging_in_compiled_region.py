"""JIT602 logging-in-compiled-region: A logger call (`logger.info`, `logger.warning_once`,
`logging.debug`) breaks the graph."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.fixes.deferred_logging import report_deferrable
from compile_lint.fixes.guards import (
    StatementCalls,
    compile_only_message,
    gated_by_compile_test,
    guard_predicate,
)
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import made_by


class LoggingInCompiledRegion(StatementCalls, Rule):
    """A logger call (`logger.info`, `logger.warning_once`, `logging.debug`) breaks the graph.

    Why: Dynamo does not trace `logging.Logger` methods ("logging.Logger method not
    supported for non-export cases"); every method breaks, `logger.debug` with DEBUG
    disabled and `logger.isEnabledFor(...)` included, and so do transformers'
    `logger.warning_once` helpers.

    Instead: log outside the compiled region, or only eagerly under
    `if not torch.compiler.is_compiling():` (the unsafe fix: compiled runs log nothing;
    spelled with the file's own is-compiling helper, e.g. transformers'
    `is_torchdynamo_compiling`, when it imports one). A log call only compiled runs reach
    (the `else` of `if not is_torchdynamo_compiling():`) gets no fix: a guard would make it
    dead code.
    `torch._dynamo.config.ignore_logger_methods = {logging.Logger.info, ...}` makes the
    listed methods compile as no-ops.
    """

    code = "JIT602"
    name = "logging-in-compiled-region"
    kind = "break"
    gb_type = "logging.Logger method not supported for non-export cases"
    gb_id = "GB0291"
    gb_types = ("Unsupported python_type() call",)  # the same pattern, reported differently
    fix_applicability = "unsafe"
    config_note = "torch._dynamo.config.ignore_logger_methods makes the listed logger methods compile"
    message = (
        "logger calls break the graph (even with the level disabled); log outside the "
        "compiled region, or only eagerly: `if not torch.compiler.is_compiling(): logger.info(...)`"
    )
    steps = ("if not torch.compiler.is_compiling(): logger.info(...)", "torch._dynamo.config.ignore_logger_methods = "
             "{logging.Logger.{method}}", "@torch.compiler.disable")
    invalid = [
        Invalid(
            """
            import logging

            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.out = nn.Linear(8, 8)

                def forward(self, x):
                    logger.debug("decoder input %s", tuple(x.shape))
                    return self.out(x)
            """,
            fixed="""
            import logging

            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.out = nn.Linear(8, 8)

                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        logger.debug("decoder input %s", tuple(x.shape))
                    return self.out(x)
            """,
            entry="Decoder",
            lines=[14],
        ),
        Invalid(
            """
            import functools
            import logging

            import torch as T
            from torch import nn


            @functools.lru_cache(None)
            def warning_once(self, *args):
                self.warning(*args)


            logging.Logger.warning_once = warning_once
            logger = logging.getLogger(__name__)


            class LlamaAttention(nn.Module):
                def forward(self, hidden_states, output_attentions: bool = True):
                    if output_attentions:
                        logger.warning_once("output_attentions is not supported with sdpa; ignoring it")
                    return hidden_states.softmax(-1)
            """,
            fixed="""
            import functools
            import logging

            import torch as T
            from torch import nn


            @functools.lru_cache(None)
            def warning_once(self, *args):
                self.warning(*args)


            logging.Logger.warning_once = warning_once
            logger = logging.getLogger(__name__)


            class LlamaAttention(nn.Module):
                def forward(self, hidden_states, output_attentions: bool = True):
                    if output_attentions:
                        if not T.compiler.is_compiling():
                            logger.warning_once("output_attentions is not supported with sdpa; ignoring it")
                    return hidden_states.softmax(-1)
            """,
            entry="LlamaAttention",
            lines=[20],
        ),
        Invalid(
            """
            import logging

            from torch import nn

            class Policy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.log = logging.getLogger("rl.policy")
                    self.pi = nn.Linear(8, 4)

                def forward(self, obs):
                    logits = self.pi(obs)
                    if self.log.isEnabledFor(logging.DEBUG):
                        self.log.debug("logits %s", logits.shape)
                    return logits.log_softmax(-1)
            """,
            fixed="""
            import logging

            from torch import nn
            import torch

            class Policy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.log = logging.getLogger("rl.policy")
                    self.pi = nn.Linear(8, 4)

                def forward(self, obs):
                    logits = self.pi(obs)
                    if not torch.compiler.is_compiling() and self.log.isEnabledFor(logging.DEBUG):
                        self.log.debug("logits %s", logits.shape)
                    return logits.log_softmax(-1)
            """,
            entry="Policy",
            lines=[13, 14],
        ),
        Invalid(
            """
            import logging

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    logging.info("forward on %d rows", x.shape[0])
                    return x.tanh()
            """,
            fixed="""
            import logging

            from torch import nn
            import torch

            class Model(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        logging.info("forward on %d rows", x.shape[0])
                    return x.tanh()
            """,
            lines=[7],
        ),
        Invalid(
            """
            import logging

            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            def is_torchdynamo_compiling():
                return torch.compiler.is_compiling()

            class XIELU(nn.Module):
                def forward(self, x):
                    if not is_torchdynamo_compiling():
                        return self.fused(x)
                    else:
                        logger.warning("torch._dynamo is compiling, using the Python version of xIELU.")
                    return torch.nn.functional.silu(x)

                def fused(self, x):
                    return torch.nn.functional.silu(x)
            """,
            entry="XIELU",
            note="as in transformers' activations.py: only compiled runs reach the log call, so no guard (dead code)",
            lines=[16],
        ),
    ]
    valid = [
        Valid(
            """
            import logging

            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.out = nn.Linear(8, 8)
                    logger.info("decoder with %d features", 8)

                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        logger.debug("decoder input %s", tuple(x.shape))
                    return self.out(x)
            """,
            entry="Decoder",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    log = torch.log1p(x.abs())
                    return log + math.log(2.0)
            """,
        ),
        Valid(
            """
            import logging

            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            class Trainer:
                def step(self, loss):
                    logger.info("loss %.3f", loss)

            class Model(nn.Module):
                def forward(self, x):
                    levels = {"debug": 10, "info": 20}
                    return x * levels["info"]
            """,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._guarded_tests: dict[cst.Call, cst.If] = {}  # `if logger.isEnabledFor(...)` tests to guard
        self._covered: set[cst.CSTNode] = set()  # lines those guards make eager-only

    def visit_If(self, node: cst.If) -> None:
        # `if logger.isEnabledFor(DEBUG): logger.debug(...)`: the test breaks too, so guarding the
        # log line alone leaves a break; guarding the test covers both.
        test, body = node.test, node.body
        if (node.orelse is None and isinstance(test, cst.Call) and self._logger_method(test) is not None
                and isinstance(body, cst.IndentedBlock) and all(self._log_line(line) for line in body.body)):
            self._guarded_tests[test] = node
            self._covered.update(body.body)

    def visit_Call(self, node: cst.Call) -> None:
        method = self._logger_method(node)
        if method is None:
            return
        on_logger = not (self.context.qualname(node.func) or "").startswith(_LOGGING_MODULES)
        setting = IGNORE_SETTING.format(method=method) if on_logger and method in _LOGGER_METHODS else None
        if node in self._guarded_tests:
            self.report(node, message=compile_only_message(self.context, node, "log call", setting),
                        fix=self._guard_test(node))
        elif method in _EMITTING_METHODS and self.statement_of(node) not in self._covered:
            report_deferrable(self, node, "log call", setting)  # logging.info(...) runs after the graph
        else:
            self.report(node, message=compile_only_message(self.context, node, "log call", setting))

    def _logger_method(self, node: cst.Call) -> Optional[str]:
        """The logging method `node` calls (`info`, `isEnabledFor`, ...), or None."""
        func = node.func
        name = self.context.qualname(func) or ""
        if name.startswith(_LOGGING_MODULES) and name.rsplit(".", 1)[-1] in _LOGGING_MODULE_FUNCTIONS:
            return name.rsplit(".", 1)[-1]
        if isinstance(func, cst.Attribute) and is_logger(self, func.value):
            return func.attr.value
        return None

    def _log_line(self, line: cst.BaseStatement) -> bool:
        """True for a line that only emits a log record (`logger.debug(...)`)."""
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
                and isinstance(line.body[0], cst.Expr) and isinstance(line.body[0].value, cst.Call)):
            return False
        return self._logger_method(line.body[0].value) in _EMITTING_METHODS

    def _guard_test(self, test: cst.Call) -> Optional[FixPlan]:
        """`if not torch.compiler.is_compiling() and <test>:`: compiled runs skip the block."""
        if gated_by_compile_test(self.context, test):
            return None
        predicate, imports = guard_predicate(self.context)
        guarded = cst.BooleanOperation(
            left=cst.parse_expression(f"not {predicate}()"), operator=cst.And(), right=test,
        )
        return FixPlan([(test, guarded)], f"Log only eagerly: `if not {predicate}() and ...:`", "unsafe", imports)


# Calls that make a logger: logging.getLogger, transformers/diffusers/accelerate get_logger.
# Makes a call of a `logging.Logger` method compile, as a no-op (measured on torch 2.13).
IGNORE_SETTING = "torch._dynamo.config.ignore_logger_methods = {{logging.Logger.{method}}}"
_LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
_LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})


# Names of imported objects that are loggers by convention (`from .utils import logger`).
_LOGGER_IMPORT_NAMES = frozenset({"logger", "_logger", "LOGGER", "_LOGGER", "log", "_log"})


_LOGGING_MODULES = ("logging.", "absl.logging.")


_LOGGING_MODULE_FUNCTIONS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"}
)


# Logger methods that emit a record; the fix guards these (any logger method breaks).
_EMITTING_METHODS = _LOGGING_MODULE_FUNCTIONS | frozenset(
    {"warning_once", "info_once", "warning_advice", "debug_once"}
)


def is_logger(rule: Rule, expr: cst.BaseExpression) -> bool:
    """True when `expr` holds a logger, judged by what created it or how it was imported."""
    context = rule.context
    for maker in made_by(context, expr):
        if maker.rsplit(".", 1)[-1] in _LOGGER_FACTORIES:
            return True
    if isinstance(expr, cst.Name):
        imported = context.imports.names.get(expr.value)
        if imported is not None and imported.rsplit(".", 1)[-1] in _LOGGER_IMPORT_NAMES:
            return "." in imported  # `from pkg import logger`, not a bare module called log
    return False

