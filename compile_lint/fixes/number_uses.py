"""What a number read from a tensor (`t.item()`, `int(t)`) is used for, where no fix keeps it a tensor.

The step a person takes depends on the use, not on the read: a size or slice bound compiles
once `capture_scalar_outputs` is set, arithmetic compiles on a 0-d tensor, a Python test
needs `torch.where`/`torch.cond`, and a print or log call has to leave the compiled code.
`number_use` names the use in words that `fixes/next_steps.py` maps to its step; the
finding's message gives both (`with_reason`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.fixes.captured_sizes import captured_size
from compile_lint.fixes.keep_tensor import RETURNED_NUMBER, number_reads

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

# The uses, most demanding first: where the number has several, the message names the first.
PRINTED = "the number is printed, logged or formatted into text"
TESTED = "the number decides a Python test"
LOOP_BOUND = "the number bounds a Python loop (`range()`)"
SIZE = "the number is a size or slice bound beyond those that compile once captured"
INDEX = "the number is an index beyond those that compile once captured"
PASSED = "the number is passed to a call"
CAPTURED_SIZE = "the number is only a size, slice bound or index that compiles once captured"
ARITHMETIC_USE = "the number is used in arithmetic"
USES = (PRINTED, TESTED, LOOP_BOUND, SIZE, INDEX, PASSED, RETURNED_NUMBER, CAPTURED_SIZE, ARITHMETIC_USE)

# Calls whose arguments end up as text: Python's, and logger methods (`logger.info`, `self.log`).
_TEXT_FUNCTIONS = frozenset({"builtins.print", "builtins.str", "builtins.repr", "builtins.format", "warnings.warn"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                          "warning_once", "info_once"})
# Python functions that give a number back: the use is what is done with their result.
_NUMBER_FUNCTIONS = frozenset({"builtins.int", "builtins.float", "builtins.round", "builtins.abs", "builtins.min",
                               "builtins.max", "math.ceil", "math.floor", "math.sqrt", "math.log"})
# Where torch takes a Python int as a size, a count or a position.
_SIZE_FUNCTIONS = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange", "torch.rand",
                             "torch.randn", "torch.randint", "torch.eye", "torch.linspace", "torch.split",
                             "torch.chunk", "torch.narrow", "torch.topk", "torch.nn.functional.pad"})
_SIZE_METHODS = frozenset({"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "new_full",
                           "narrow", "topk", "kthvalue", "split", "chunk", "roll", "select", "unflatten"})
# Expressions a number passes through on its way to a use.
_THROUGH = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget, cst.Arg,
            cst.Element, cst.Tuple, cst.List)


def number_use(context: FileContext, conversion: cst.Call) -> str:
    """The use of the number `conversion` reads that decides the next step: one of `USES`.

    Every use counts (the call itself, or each read of the name it is bound to once in
    the function), and the most demanding decides: a number both printed and added to a
    tensor must leave the compiled code for the print first.
    """
    reads: list[cst.CSTNode] = list(number_reads(context, conversion)) or [conversion]
    found = {_use(context, read) for read in reads}
    return next(use for use in USES if use in found)


def _use(context: FileContext, read: cst.CSTNode) -> str:
    """The use of one read of the number, read off the expressions around it."""
    if captured_size(context, read):
        return CAPTURED_SIZE
    node, parent = read, context.parent(read)
    while parent is not None:
        if getattr(parent, "test", None) is node and isinstance(
                parent, (cst.If, cst.While, cst.IfExp, cst.Assert, cst.CompIf)):
            return TESTED
        if isinstance(parent, cst.BooleanOperation) or (
                isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)):
            return TESTED
        if isinstance(parent, cst.FormattedStringExpression) or _formats_text(parent):
            return PRINTED
        if isinstance(parent, cst.Slice):
            return SIZE
        if isinstance(parent, cst.Index):
            return INDEX
        if isinstance(parent, cst.Return):
            return RETURNED_NUMBER if node is read else ARITHMETIC_USE  # `return x * n` returns a tensor
        if isinstance(parent, cst.Call) and node is not parent.func:
            use = _call_use(context, parent)
            if use is not None:
                return use
        elif not isinstance(parent, _THROUGH):
            break
        node, parent = parent, context.parent(parent)
    return ARITHMETIC_USE


def _formats_text(node: cst.CSTNode) -> bool:
    """`"..." % n`: old-style formatting."""
    return (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo)
            and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)))


def _call_use(context: FileContext, call: cst.Call) -> Optional[str]:
    """The use of a number passed to `call`; None where the call gives a number back (`int(n)`, `max(n, 1)`)."""
    qualified = context.qualname(call.func) or ""
    func = call.func
    if qualified in _TEXT_FUNCTIONS or (not qualified and isinstance(func, cst.Attribute)
                                         and func.attr.value in _LOG_METHODS):
        return PRINTED
    if qualified == "builtins.range":
        return LOOP_BOUND
    if qualified in _NUMBER_FUNCTIONS:
        return None
    if qualified in _SIZE_FUNCTIONS or (not qualified and isinstance(func, cst.Attribute)
                                         and func.attr.value in _SIZE_METHODS and context.kind(func.value).tensorish):
        return SIZE
    return PASSED


def unkept_number(context: FileContext, conversion: cst.Call, why: Optional[str] = None) -> str:
    """The reason no fix keeps `conversion`'s number a tensor: `why` (when there is one), and its use.

    The use comes last, so that the step the message gives fits what the number is for.
    """
    use = number_use(context, conversion)
    return f"{why}, and {use}" if why else use
