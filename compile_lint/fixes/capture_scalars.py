"""A number read from a tensor and used only as a size: capture it (`capture_scalar_outputs`), keep the code.

Measured by benchmarks/scalar_size_capture.py (torch 2.13 CPU, backend="eager"; results in
benchmarks/results/scalar_size_capture.txt): with
`torch._dynamo.config.capture_scalar_outputs = True`, a number read with `.item()` or
`int()` compiles with no break, no recompile over new values, and outputs equal to eager
(errors where eager errs, at values past the ends) when it is used as a slice bound
(`x[:n]`, `x[n:]`, `x[:, :n]`), the one index of a tensor (`x[n]`), a size of
`torch.zeros/ones/empty/full/arange/randn`, of `x.new_zeros/new_ones`, `x.expand`,
`x.repeat`, `x.narrow`, `x.topk`, `x.roll`, or a pad of `F.pad`. Not clean, so never
offered: `x.view(n, ...)`/`reshape` and `torch.split`/`x.split` (a recompile per value
when the number is read from a 0-d tensor passed in; split fails when it is computed),
an index after the first (`x[:, n]`: IndexError), and any use in `if`, `range()`, Python
arithmetic or a return.

The setting is global and read when Dynamo traces, so it goes right before the file's
one compile call (fixes/settings.py; once: a file that already sets it gets no second line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from compile_lint.fixes.branches.blocks import BranchFix, with_reason
from compile_lint.fixes.keep_tensor import every_use
from compile_lint.fixes.setting_hazards import number_hazard
from compile_lint.fixes.settings import CAPTURE_SCALARS, file_sets, setting_fix, setting_message, setting_outcome

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

CAPTURED_NOTE = ("; it is only a size, slice bound or index: the fix sets "
                 "`torch._dynamo.config.capture_scalar_outputs = True` before `torch.compile` and keeps it")

# torch functions whose positional arguments are sizes (`torch.arange` only with one argument).
_SIZE_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.randn"})
# Tensor methods whose positional arguments measured clean: sizes, `narrow`'s start and length,
# `topk`'s k, `roll`'s shift.
_SIZE_METHODS = {"new_zeros": None, "new_ones": None, "expand": None, "repeat": None,
                 "narrow": (1, 2), "topk": (0,), "roll": (0,)}
# The same for a 0-d tensor passed as the size: `narrow`'s start and a `roll` shift failed
# ("Pending unbacked symbols not in returned outputs").
_TENSOR_SIZE_METHODS = {name: positions for name, positions in _SIZE_METHODS.items() if name != "roll"} | {
    "narrow": (2,)}
# Functions taking a tuple of sizes at a positional argument: `torch.full((n,), v)`, `F.pad(x, (0, n))`.
_SIZE_TUPLES = {"torch.full": 0, "torch.nn.functional.pad": 1}


# A rule's `report` (rules/base.Rule.report): the node, then `message=` and `fix=`.
Report = Callable[..., None]


def report_captured_size(context: FileContext, report: Report, conversion: cst.Call, message: str) -> bool:
    """Report a read whose number is only a size (with the capture fix, or why not); False for other reads.

    `report` is the reporting rule's `report`. Where the file already sets
    capture_scalar_outputs, the read compiles as it is and is not reported.
    """
    if not only_captured_sizes(context, conversion):
        return False
    _report_capture(context, report, conversion, message)
    return True


def report_captured_tensor_size(context: FileContext, report: Report, value: cst.BaseExpression, message: str) -> bool:
    """`report_captured_size` for a 0-d tensor passed straight as a size (`torch.zeros(t.max())`, JIT204).

    Torch reads the number itself there; measured clean once captured for fewer uses than
    `.item()`: not as `narrow`'s start, a `roll` shift, an `F.pad` pad or an index.
    """
    if not captured_size(context, value, implicit=True):
        return False
    _report_capture(context, report, value, message)
    return True


def _report_capture(context: FileContext, report: Report, node: cst.CSTNode, message: str) -> None:
    """Report `node` with the capture fix, or with why there is none; nothing where the file captures already."""
    if captures_scalars(context):
        return
    fix, reason = setting_fix(context, CAPTURE_SCALARS)
    what_breaks = message.split("; ")[0]  # the rule's advice (keep a tensor) does not apply to a size
    if fix is not None:
        report(node, message=what_breaks + CAPTURED_NOTE, fix=fix)
        return
    report(node, message=setting_message(what_breaks, BranchFix(fix, reason)), fix=fix)


def report_kept_or_captured(context: FileContext, report: Report, conversion: cst.Call, message: str,
                            kept: BranchFix) -> None:
    """Report a tensor read into a number with `kept`, keeping a tensor (or why not); where that is withheld
    and every use of the number compiles once captured (fixes/setting_hazards.number_hazard), with
    `capture_scalar_outputs` instead: its fix before the file's compile call, or its line to add."""
    if kept.fix is None and number_hazard(context, conversion) is None:
        if captures_scalars(context):
            return
        outcome = setting_outcome(context, CAPTURE_SCALARS, None, "the number")
        report(conversion, message=setting_message(message.split("; ")[0], outcome), fix=outcome.fix)
        return
    report(conversion, message=with_reason(message, kept), fix=kept.fix)


def only_captured_sizes(context: FileContext, conversion: cst.Call) -> bool:
    """True when every use of the number `conversion` reads is one that compiles once captured."""
    return every_use(context, conversion, captured_size)


def captured_size(context: FileContext, node: cst.CSTNode, implicit: bool = False) -> bool:
    """True when `node` is a slice bound, the one index of a tensor, or a size argument measured clean.

    `implicit`: `node` is the 0-d tensor itself, which torch reads (JIT204's uses), not a number.
    """
    parent = context.parent(node)
    if isinstance(parent, cst.Slice):
        return (node in (parent.lower, parent.upper) and _subscripted_tensor(context, context.parent(parent), False)
                and not _starts_in_two_dims(context, parent))
    if isinstance(parent, cst.Index):
        return not implicit and parent.value is node and _subscripted_tensor(context, context.parent(parent), True)
    if isinstance(parent, cst.Element):
        sequence = context.parent(parent)
        argument = context.parent(sequence) if isinstance(sequence, (cst.Tuple, cst.List)) else None
        return isinstance(argument, cst.Arg) and argument.value is sequence and _size_tuple(context, argument, implicit)
    if isinstance(parent, cst.Arg) and parent.value is node and parent.keyword is None and parent.star == "":
        return _size_argument(context, parent, implicit)
    return False


def _subscripted_tensor(context: FileContext, element: Optional[cst.CSTNode], only_index: bool) -> bool:
    """`element` is part of `x[...]` with `x` a tensor; with `only_index`, its one element."""
    subscript = context.parent(element) if isinstance(element, cst.SubscriptElement) else None
    if not isinstance(subscript, cst.Subscript) or (only_index and len(subscript.slice) != 1):
        return False
    return context.kind(subscript.value).tensorish


def _starts_in_two_dims(context: FileContext, bound: cst.Slice) -> bool:
    """`x[:, a:, b:]` read (not written): slices with computed starts in more than one dimension.

    Measured on torch 2.13: with the starts captured, Dynamo fails on the read
    ("PendingUnbackedSymbolNotFound"), under `fullgraph=True` too; one such dimension, or
    the same slices written into (`y[:, a:, b:] = v`), compile.
    """
    element = context.parent(bound)
    subscript = context.parent(element) if isinstance(element, cst.SubscriptElement) else None
    if not isinstance(subscript, cst.Subscript) or isinstance(context.parent(subscript), cst.AssignTarget):
        return False
    starts = [item.slice.lower for item in subscript.slice
              if isinstance(item.slice, cst.Slice) and item.slice.lower is not None]
    return sum(not isinstance(start, cst.Integer) for start in starts) > 1


def _call_of(context: FileContext, argument: cst.Arg) -> tuple[Optional[cst.Call], int]:
    """The call `argument` is passed to, and its position among the positional arguments."""
    call = context.parent(argument)
    if not isinstance(call, cst.Call):
        return None, -1
    positional = [arg for arg in call.args if arg.keyword is None and arg.star == ""]
    return call, next((index for index, arg in enumerate(positional) if arg is argument), -1)


def _size_argument(context: FileContext, argument: cst.Arg, implicit: bool) -> bool:
    call, position = _call_of(context, argument)
    if call is None or position < 0:
        return False
    qualified = context.qualname(call.func) or ""
    if qualified in _SIZE_FACTORIES:
        return True
    if qualified == "torch.arange":
        return len(call.args) == 1
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SIZE_METHODS and qualified == "":
        positions = (_TENSOR_SIZE_METHODS if implicit else _SIZE_METHODS).get(func.attr.value, ())
        return (positions is None or position in positions) and context.kind(func.value).tensorish
    return False


def _size_tuple(context: FileContext, argument: cst.Arg, implicit: bool) -> bool:
    call, position = _call_of(context, argument)
    if call is None:
        return False
    qualified = context.qualname(call.func) or ""
    return (_SIZE_TUPLES.get(qualified, -1) == position) and not (implicit and qualified == "torch.nn.functional.pad")


def captures_scalars(context: FileContext) -> bool:
    """True when the file sets `torch._dynamo.config.capture_scalar_outputs = True` (a plain assignment)."""
    return file_sets(context, CAPTURE_SCALARS)
