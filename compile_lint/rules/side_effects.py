"""Side effects and untraceable calls: printing, logging, warnings, frames, locks, hooks.

Dynamo records tensor operations into a graph; a call whose effect lives outside the
program's tensors (text on a terminal, a log record, a lock, a C function) cannot be put
in that graph, so the graph ends there. Each rule below was measured on torch 2.13
(CPU, backend="eager"); look-alikes that compile are listed as valid examples.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.autofix.guards import StatementCalls, eager_only_guard
from compile_lint.linter.facts import Kind
from compile_lint.rules._bindings import call_name, made_by
from compile_lint.rules.base import Invalid, Rule, Valid

_PRINT_FUNCTIONS = frozenset({"builtins.print", "sys.stdout.write", "sys.stderr.write", "pprint.pprint", "pprint.pp"})


class PrintInForward(StatementCalls, Rule):
    """`print(...)` (or `sys.stdout.write`, `pprint`) in a compiled region breaks the graph.

    Why: printing is a side effect Dynamo cannot record in a graph ("Failed to trace
    builtin operator"), so the graph ends at the call; with `fullgraph=True` compilation
    fails.

    Instead: drop the print, or run it only eagerly under
    `if not torch.compiler.is_compiling():` (the unsafe fix: compiled runs print nothing).
    Setting `torch._dynamo.config.reorderable_logging_functions = {print}` also compiles
    it, printing after the graph runs.
    """

    code = "JIT601"
    name = "print-in-compiled-region"
    kind = "break"
    gb_type = "Failed to trace builtin operator"
    gb_id = "GB0059"
    fix_applicability = "unsafe"
    config_note = "torch._dynamo.config.reorderable_logging_functions = {print} makes print compile"
    message = (
        "print() breaks the graph; remove it or guard it with "
        "`if not torch.compiler.is_compiling():`"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    # debug: shapes
                    print("encoder out", h.shape)
                    return h.relu()
            """,
            fixed="""
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    # debug: shapes
                    if not torch.compiler.is_compiling():
                        print("encoder out", h.shape)
                    return h.relu()
            """,
            entry="Encoder",
        ),
        Invalid(
            """
            import sys
            from torch import nn

            class Head(nn.Module):
                def _log(self, x):
                    sys.stderr.write(f"head input {tuple(x.shape)}\\n")

                def forward(self, x):
                    self._log(x)
                    return x.softmax(-1)
            """,
            fixed="""
            import sys
            from torch import nn
            import torch

            class Head(nn.Module):
                def _log(self, x):
                    if not torch.compiler.is_compiling():
                        sys.stderr.write(f"head input {tuple(x.shape)}\\n")

                def forward(self, x):
                    self._log(x)
                    return x.softmax(-1)
            """,
            entry="Head",
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def step(x, verbose: bool = True):
                y = x * 2
                if verbose: print("step", y.shape)
                return y
            """,
            entry="step",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    print("built encoder")

                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        print("encoder input", x.shape)
                    return self.proj(x)
            """,
            entry="Encoder",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def extra_repr(self):
                    return "block"

                def forward(self, x):
                    name = f"{self.extra_repr()}:{x.shape[-1]}"
                    return x * len(name)
            """,
            entry="Block",
        ),
        Valid(
            """
            import torch
            from torch import nn

            def report(model):
                print(model)

            class Model(nn.Module):
                def forward(self, x):
                    pretty = repr(x.shape)
                    return x + len(pretty)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        if name in _PRINT_FUNCTIONS:
            self.report(node, fix=eager_only_guard(self.context, self.statement_of(node), "print"))


# Calls that make a logger: logging.getLogger, transformers/diffusers/accelerate get_logger.
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


class LoggingInForward(StatementCalls, Rule):
    """A logger call (`logger.info`, `logger.warning_once`, `logging.debug`) breaks the graph.

    Why: Dynamo does not trace `logging.Logger` methods ("logging.Logger method not
    supported for non-export cases"); every method breaks, `logger.debug` with DEBUG
    disabled and `logger.isEnabledFor(...)` included, and so do transformers'
    `logger.warning_once` helpers.

    Instead: log outside the compiled region, or only eagerly under
    `if not torch.compiler.is_compiling():` (the unsafe fix: compiled runs log nothing).
    `torch._dynamo.config.ignore_logger_methods = {logging.Logger.info, ...}` makes the
    listed methods compile as no-ops.
    """

    code = "JIT602"
    name = "logging-in-compiled-region"
    kind = "break"
    gb_type = "logging.Logger method not supported for non-export cases"
    gb_id = "GB0291"
    fix_applicability = "unsafe"
    config_note = "torch._dynamo.config.ignore_logger_methods makes the listed logger methods compile"
    message = (
        "logger calls break the graph (even with the level disabled); log outside the "
        "compiled region or under `if not torch.compiler.is_compiling():`"
    )
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
            entry="Policy",
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

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = self.context.qualname(func) or ""
        method: Optional[str] = None
        if name.startswith(_LOGGING_MODULES) and name.rsplit(".", 1)[-1] in _LOGGING_MODULE_FUNCTIONS:
            method = name.rsplit(".", 1)[-1]
        elif isinstance(func, cst.Attribute) and is_logger(self, func.value):
            method = func.attr.value
        if method is None:
            return
        fix = eager_only_guard(self.context, self.statement_of(node), "log call") if method in _EMITTING_METHODS else None
        self.report(node, fix=fix)


_WARNING_FUNCTIONS = frozenset({"warnings.warn", "warnings.warn_explicit"})


class WarningsInForward(StatementCalls, Rule):
    """`warnings.warn(...)` in a compiled region breaks the graph.

    Why: the warnings machinery inspects the caller's frame and global registry, which
    Dynamo skips ("Attempted to call function marked as skipped"); this holds for every
    category, filtered or not.

    Instead: warn once at construction (`__init__`) or outside the compiled call, or
    under `if not torch.compiler.is_compiling():` (the unsafe fix). Adding
    `warnings.warn` to `torch._dynamo.config.reorderable_logging_functions` also compiles.
    """

    code = "JIT603"
    name = "warning-in-compiled-region"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    fix_applicability = "unsafe"
    config_note = "adding warnings.warn to torch._dynamo.config.reorderable_logging_functions makes it compile"
    message = (
        "warnings.warn breaks the graph; warn in __init__ or under "
        "`if not torch.compiler.is_compiling():`"
    )
    invalid = [
        Invalid(
            """
            import warnings

            import torch
            from torch import nn

            class BertSelfOutput(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.dense = nn.Linear(8, 8)

                def forward(self, hidden_states, head_mask=None):
                    if head_mask is None:
                        warnings.warn("head_mask is deprecated and ignored", FutureWarning)
                    return self.dense(hidden_states)
            """,
            fixed="""
            import warnings

            import torch
            from torch import nn

            class BertSelfOutput(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.dense = nn.Linear(8, 8)

                def forward(self, hidden_states, head_mask=None):
                    if head_mask is None:
                        if not torch.compiler.is_compiling():
                            warnings.warn("head_mask is deprecated and ignored", FutureWarning)
                    return self.dense(hidden_states)
            """,
            entry="BertSelfOutput",
        ),
        Invalid(
            """
            from warnings import warn

            from torch import nn

            class Resize(nn.Module):
                def forward(self, x):
                    if x.shape[-1] % 2:
                        warn("odd width; the last column is dropped")
                    return x[..., : x.shape[-1] // 2 * 2]
            """,
            calls="[(torch.randn(4, 7),)]",
            entry="Resize",
        ),
    ]
    valid = [
        Valid(
            """
            import warnings

            from torch import nn

            class BertSelfOutput(nn.Module):
                def __init__(self, legacy=False):
                    super().__init__()
                    if legacy:
                        warnings.warn("legacy mode is deprecated", FutureWarning)
                    self.dense = nn.Linear(8, 8)

                def forward(self, hidden_states):
                    return self.dense(hidden_states)
            """,
            entry="BertSelfOutput",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    warn_threshold = 10.0
                    return x.clamp(max=warn_threshold)
            """,
        ),
        Valid(
            """
            import warnings

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        warnings.warn("eager path is slow")
                    return x * 2
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) in _WARNING_FUNCTIONS:
            self.report(node, fix=eager_only_guard(self.context, self.statement_of(node), "warning"))


_ORDERING_OPERATORS = (cst.Equal, cst.NotEqual, cst.LessThan, cst.GreaterThan, cst.LessThanEqual,
                       cst.GreaterThanEqual, cst.Is, cst.IsNot)


def _is_data_ptr_call(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "data_ptr")


class DataPtrComparison(Rule):
    """Comparing or doing arithmetic on `t.data_ptr()` breaks the graph.

    Why: under the compiler tensors have no real storage address; Dynamo lets a bare
    `data_ptr()` call through but cannot evaluate `a.data_ptr() == b.data_ptr()`
    ("Data pointer comparison") or `ptr % 16`, and `untyped_storage().data_ptr()` is an
    unsupported method call.

    Instead: do aliasing or alignment checks outside the compiled region (or in a
    `@torch.compiler.disable` helper); Inductor handles alignment itself.
    """

    code = "JIT604"
    name = "data-ptr-comparison"
    kind = "break"
    gb_type = "Data pointer comparison"
    gb_id = "GB5976"
    message = (
        "comparing data_ptr() breaks the graph (no real addresses while compiling); "
        "check aliasing/alignment outside the compiled region"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class TiedProjection(nn.Module):
                def forward(self, x, weight):
                    if x.data_ptr() == weight.data_ptr():
                        weight = weight.clone()
                    return x @ weight.t()
            """,
            calls="[(torch.randn(4, 8), torch.randn(8, 8))]",
            entry="TiedProjection",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class AlignedCopy(nn.Module):
                def forward(self, x):
                    aligned = x.data_ptr() % 16 == 0
                    return x * 2 if aligned else x.contiguous() * 2
            """,
            entry="AlignedCopy",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    key = x.untyped_storage().data_ptr()
                    return x * 2, key
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, y):
                    if x is y:
                        y = y.clone()
                    return x + y
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    same_shape = x.shape == (4, 8)
                    return x * 2 if same_shape and x.is_contiguous() else x
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    cache_key = (tuple(x.shape), x.dtype, x.data_ptr())
                    return x.flatten() * len(cache_key)
            """,
        ),
    ]

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left] + [target.comparator for target in node.comparisons]
        ordered = any(isinstance(target.operator, _ORDERING_OPERATORS) for target in node.comparisons)
        if ordered and any(_is_data_ptr_call(operand) for operand in operands):
            self.report(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if _is_data_ptr_call(node.left) or _is_data_ptr_call(node.right):
            self.report(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (_is_data_ptr_call(node) and isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Attribute)
                and func.value.func.attr.value in ("untyped_storage", "storage", "_typed_storage")):
            self.report(node)


_FRAME_FUNCTIONS = frozenset(
    {
        "inspect.stack", "inspect.currentframe", "inspect.getframeinfo", "inspect.getouterframes",
        "inspect.getinnerframes", "inspect.trace", "inspect.getsource", "inspect.getsourcelines",
        "inspect.getsourcefile", "inspect.getfile", "sys._getframe", "sys.exc_info",
    }
)


class FrameInspection(Rule):
    """Reading Python frames or source (`inspect.stack()`, `sys._getframe`, `traceback`) breaks.

    Why: frames and source files are interpreter state Dynamo does not model; these
    functions are skipped ("Attempted to call function marked as skipped"). Signature
    introspection is fine: `inspect.signature`, `inspect.getfullargspec`,
    `inspect.isfunction` and friends compile on torch 2.13.

    Instead: compute caller/source information once, outside the compiled region.
    """

    code = "JIT605"
    name = "frame-inspection"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    message = (
        "inspecting frames or source breaks the graph; compute it once outside the "
        "compiled region"
    )
    invalid = [
        Invalid(
            """
            import inspect

            from torch import nn

            class Traced(nn.Module):
                def forward(self, x):
                    caller = inspect.stack()[1].function
                    return x * (2 if caller else 1)
            """,
            entry="Traced",
        ),
        Invalid(
            """
            import traceback

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    self.where = traceback.format_stack(limit=2)
                    return x.relu()
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import inspect

            import torch
            from torch import nn

            class Wrapper(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, **kwargs):
                    accepted = inspect.signature(self.fc.forward).parameters
                    extra = {k: v for k, v in kwargs.items() if k in accepted}
                    return self.fc(x, **extra)
            """,
            entry="Wrapper",
        ),
        Valid(
            """
            import inspect

            import torch
            from torch import nn

            class Model(nn.Module):
                def helper(self, a, b=2):
                    return a * b

                def forward(self, x):
                    n = len(inspect.getfullargspec(self.helper).args)
                    return self.helper(x) * n if inspect.ismethod(self.helper) else x
            """,
        ),
        Valid(
            """
            import inspect
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    stack = torch.stack([x, x])
                    return stack.sum(0)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name in _FRAME_FUNCTIONS or name.startswith("traceback."):
            self.report(node)


_THREAD_PRIMITIVES = frozenset(
    {
        "threading.Lock", "threading.RLock", "threading.Condition", "threading.Semaphore",
        "threading.BoundedSemaphore", "threading.Event", "threading.Barrier",
        "multiprocessing.Lock", "multiprocessing.RLock", "_thread.allocate_lock",
    }
)
_UNSUPPORTED_CONTEXT_CALLS = frozenset({"warnings.catch_warnings", "torch.random.fork_rng"})


def _is_thread_primitive(rule: Rule, expr: cst.BaseExpression) -> bool:
    return any(maker in _THREAD_PRIMITIVES for maker in made_by(rule.context, expr))


class UnsupportedContextManager(Rule):
    """`with lock:`, `with warnings.catch_warnings():` or `with torch.random.fork_rng():` breaks.

    Why: Dynamo only traces context managers it knows (`torch.no_grad`, `autocast`,
    `contextlib.nullcontext`, `record_function`...). A threading lock, condition or
    semaphore is an "Unsupported context manager"; `catch_warnings` and `fork_rng` run
    skipped code. The whole frame then falls back to eager.

    Instead: take locks outside the compiled call (compiled code runs in one thread per
    call anyway), set warning filters once at start-up, and seed generators outside.
    """

    code = "JIT606"
    name = "unsupported-context-manager"
    kind = "break"
    gb_type = "Unsupported context manager"
    gb_id = "GB0142"
    message = (
        "this context manager is not traceable and breaks the graph; enter it outside "
        "the compiled region"
    )
    invalid = [
        Invalid(
            """
            import threading

            import torch
            from torch import nn

            class CachedEmbedding(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lock = threading.Lock()
                    self.emb = nn.Linear(8, 8)

                def forward(self, x):
                    with self.lock:
                        out = self.emb(x)
                    return out
            """,
            entry="CachedEmbedding",
        ),
        Invalid(
            """
            import threading

            from torch import nn

            _STATS_LOCK = threading.RLock()

            class Model(nn.Module):
                def forward(self, x):
                    with _STATS_LOCK:
                        y = x * 2
                    return y
            """,
        ),
        Invalid(
            """
            import warnings

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        y = x.sqrt()
                    return y
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import contextlib

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with torch.no_grad(), contextlib.nullcontext():
                        y = x * 2
                    with torch.autocast("cpu", enabled=False):
                        y = y + 1
                    return y
            """,
        ),
        Valid(
            """
            import contextlib

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with torch.profiler.record_function("block"):
                        y = x.relu()
                    with contextlib.suppress(ValueError):
                        y = y * 2
                    return y
            """,
        ),
        Valid(
            """
            import threading

            import torch
            from torch import nn

            _LOCK = threading.Lock()

            def load_weights(model):
                with _LOCK:
                    model.loaded = True

            class Model(nn.Module):
                def forward(self, x):
                    lock_free = x * 2
                    return lock_free
            """,
        ),
    ]

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if isinstance(item, cst.Call) and call_name(self.context, item) in _UNSUPPORTED_CONTEXT_CALLS:
            self.report(item)
        elif _is_thread_primitive(self, item):
            self.report(item)


_THREAD_METHODS = frozenset({"acquire", "release", "locked", "wait", "notify", "notify_all", "set", "clear", "is_set"})


class ThreadingCall(Rule):
    """Calling `threading` (`lock.acquire()`, `threading.get_ident()`) in a compiled region breaks.

    Why: thread identities and locks are interpreter state Dynamo skips ("Attempted to
    call function marked as skipped" / "Unsupported method call").

    Instead: synchronise outside the compiled call; keep per-thread state out of forward.
    """

    code = "JIT607"
    name = "threading-call"
    kind = "break"
    gb_type = "Unsupported method call"
    gb_id = "GB0156"
    message = "threading calls break the graph; synchronise outside the compiled region"
    invalid = [
        Invalid(
            """
            import threading

            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mutex = threading.Lock()

                def forward(self, x):
                    self.mutex.acquire()
                    y = x * 2
                    self.mutex.release()
                    return y
            """,
        ),
        Invalid(
            """
            import threading

            from torch import nn

            class PerThreadScale(nn.Module):
                def forward(self, x):
                    worker = threading.get_ident() % 2
                    return x * (worker + 1)
            """,
            entry="PerThreadScale",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, mask):
                    seen = set()
                    seen.clear()
                    return x.masked_fill(mask, 0.0)
            """,
            calls="[(torch.randn(4, 8), torch.zeros(4, 8, dtype=torch.bool))]",
        ),
        Valid(
            """
            import threading

            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.ready = threading.Event()
                    self.ready.set()

                def forward(self, x):
                    return x.relu()
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    out = {}
                    out.setdefault("y", x * 2)
                    return out["y"]
            """,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._with_items: set[cst.BaseExpression] = set()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self._with_items.add(node.item)  # JIT606 reports `with threading.Lock():`

    def visit_Call(self, node: cst.Call) -> None:
        if node in self._with_items:
            return
        name = call_name(self.context, node) or ""
        if name.startswith("threading."):
            self.report(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _THREAD_METHODS:
            if _is_thread_primitive(self, func.value):
                self.report(node)


_CUDA_RUNTIME_CALLS = frozenset(
    {
        "torch.cuda.synchronize", "torch.cuda.memory_allocated", "torch.cuda.max_memory_allocated",
        "torch.cuda.memory_reserved", "torch.cuda.max_memory_reserved", "torch.cuda.memory_stats",
        "torch.cuda.device_count", "torch.cuda.mem_get_info",
    }
)


class CudaRuntimeCall(Rule):
    """`torch.cuda.synchronize()` or a CUDA memory query in a compiled region breaks the graph.

    Why: `torch.cuda.synchronize` is skipped by Dynamo (measured on an H200 with torch
    2.11: "Attempted to call function marked as skipped"), and memory queries such as
    `torch.cuda.memory_allocated()` return Python ints, not tensors ("torch.* op returned
    non-Tensor"; measured on torch 2.13). `torch.cuda.is_available()`, `empty_cache()`
    and stream/event `synchronize()` compile.

    Instead: synchronise and read memory statistics around the compiled call, e.g. in
    the benchmark loop, not inside forward.
    """

    code = "JIT608"
    name = "cuda-runtime-call"
    kind = "break"
    gb_type = "torch.* op returned non-Tensor"
    gb_id = "GB0208"
    message = (
        "torch.cuda.synchronize()/memory queries break the graph; call them around the "
        "compiled model, not inside it"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Profiled(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.peak = 0

                def forward(self, x):
                    y = self.fc(x)
                    self.peak = max(self.peak, torch.cuda.max_memory_allocated())
                    return y
            """,
            entry="Profiled",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    budget = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
                    chunks = 1 if budget >= 0 else 2
                    return torch.cat([c * 2 for c in x.chunk(chunks)])
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if torch.cuda.is_available() and x.is_cuda:
                        x = x.half()
                    return x * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            def benchmark(model, x):
                torch.cuda.synchronize()
                out = model(x)
                torch.cuda.synchronize()
                return out, torch.cuda.max_memory_allocated()

            class Model(nn.Module):
                def forward(self, x):
                    return x.relu()
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    torch.cpu.synchronize()
                    return x.sigmoid()
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) in _CUDA_RUNTIME_CALLS:
            self.report(node)


class RequiresGradInForward(Rule):
    """`t.requires_grad_()` or `t.requires_grad = ...` inside a compiled region breaks the graph.

    Why: Dynamo cannot change a tensor's autograd leaf status mid-graph: it reports
    "Unsupported Tensor.requires_grad_() call" for inputs with grad enabled, "returning
    intermediate with requires_grad_()" for results, and "setattr() on
    Tensor.requires_grad" for the attribute.

    Instead: set `requires_grad` on parameters and inputs before calling the compiled
    model (in `__init__` or the training loop); inside forward use `torch.no_grad()` /
    `.detach()` to stop gradients.
    """

    code = "JIT609"
    name = "requires-grad-in-forward"
    kind = "break"
    gb_type = "returning intermediate with requires_grad_()"
    gb_id = "GB7324"
    message = (
        "changing requires_grad inside a compiled region breaks the graph; set it before "
        "the call or use .detach()/torch.no_grad()"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class SaliencyInput(nn.Module):
                def forward(self, x):
                    x = x * 1.0
                    x.requires_grad_(True)
                    return x
            """,
            entry="SaliencyInput",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    y = x.detach()
                    y.requires_grad = True
                    return y * 2
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Frozen(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.fc.weight.requires_grad_(False)

                def forward(self, x):
                    return self.fc(x)
            """,
            entry="Frozen",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if x.requires_grad:
                        x = x * 1.0
                    return x.detach() * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with torch.no_grad():
                        target = x.softmax(-1)
                    return x - target
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            self.report(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
            self.report(target)


_MODULE_HOOK_METHODS = frozenset(
    {
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
        "register_full_backward_pre_hook", "register_backward_hook",
        "register_state_dict_pre_hook", "register_load_state_dict_post_hook",
    }
)
_GLOBAL_MODULE_HOOKS = ("torch.nn.modules.module.register_module_", "torch.nn.modules.register_module_")


class ModuleHookInForward(Rule):
    """Registering a module hook (`register_forward_hook`, ...) in a compiled region breaks.

    Why: registering mutates the module's hook dictionaries, which Dynamo cannot replay
    ("setattr() on unsupported type"). Tensor hooks (`t.register_hook(fn)`) are fine on
    torch 2.13 and are not flagged.

    Instead: register module hooks once, after building the model and before compiling.
    """

    code = "JIT610"
    name = "module-hook-in-forward"
    kind = "break"
    gb_type = "setattr() on unsupported type"
    gb_id = "GB0467"
    message = "registering a module hook in forward breaks the graph; register it once before compiling"
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class FeatureTap(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.backbone = nn.Linear(8, 8)
                    self.features = {}

                def forward(self, x):
                    handle = self.backbone.register_forward_hook(
                        lambda module, args, out: self.features.update(out=out)
                    )
                    y = self.backbone(x)
                    handle.remove()
                    return y
            """,
            entry="FeatureTap",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class FeatureTap(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.backbone = nn.Linear(8, 8)
                    self.features = {}
                    self.backbone.register_forward_hook(self._save)

                def _save(self, module, args, out):
                    self.features["out"] = out

                def forward(self, x):
                    return self.backbone(x)
            """,
            entry="FeatureTap",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class GradScale(nn.Module):
                def forward(self, x):
                    y = x * 2
                    if y.requires_grad:
                        y.register_hook(lambda grad: grad * 0.5)
                    return y
            """,
            entry="GradScale",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("scale", torch.ones(8))

                def forward(self, x):
                    return x * self.scale
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = self.context.qualname(func) or ""
        if name.startswith(_GLOBAL_MODULE_HOOKS):
            self.report(node)
        elif isinstance(func, cst.Attribute) and func.attr.value in _MODULE_HOOK_METHODS:
            if self.context.kind(func.value) is not Kind.TENSOR:
                self.report(node)


class CompilerDisabledCall(Rule):
    """A call to a `@torch.compiler.disable` function from a compiled region (an intended break).

    Why: Dynamo ends the graph before the call, runs the function eagerly and starts a
    new graph after it ("Skip calling `torch.compiler.disable()`d function"). That is
    usually deliberate, so this perf rule is off by default; enable it to see where
    compiled graphs are split.

    Instead: keep such calls out of hot loops, or make the function traceable (or a
    custom op) and drop the decorator.
    """

    code = "JIT611"
    name = "compiler-disabled-call"
    kind = "perf"
    default_enabled = False
    gb_type = "Skip calling `torch.compiler.disable()`d function"
    gb_id = "GB0098"
    message = "calls a @torch.compiler.disable function: the graph is split here"
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def host_nms(boxes):
                return boxes[boxes[:, 0] > 0]

            class Detector(nn.Module):
                def forward(self, boxes):
                    keep = host_nms(boxes)
                    return keep * 2
            """,
            entry="Detector",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                @torch._dynamo.disable
                def _debug_stats(self, x):
                    return x.mean()

                def forward(self, x):
                    stats = self._debug_stats(x)
                    return x - stats
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def host_nms(boxes):
                return boxes[boxes[:, 0] > 0]

            def postprocess(model, boxes):
                return host_nms(model(boxes))

            class Detector(nn.Module):
                def forward(self, boxes):
                    return boxes * 2
            """,
            entry="Detector",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def debug_dump(x):
                print(x)

            class Model(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        debug_dump(x)
                    return x * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            def host_nms(boxes):
                return boxes * 2

            class Model(nn.Module):
                def forward(self, x):
                    return host_nms(x)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        target: Optional[cst.FunctionDef] = None
        regions = self.context.regions
        if isinstance(func, cst.Name):
            target = regions.disabled.get(func.value)
            if target is not None and target in regions.owner_class:
                target = None  # a method of that name, not this free function
        elif (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
              and func.value.value == "self"):
            target = regions.disabled.get(func.attr.value)
            if target is not None and target not in regions.owner_class:
                target = None
        if target is not None:
            self.report(node)
