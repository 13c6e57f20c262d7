"""A number read from a tensor that compiles once captured: keep the read, set `capture_scalar_outputs`.

Which uses compile once `torch._dynamo.config.capture_scalar_outputs = True` is set is
measured and tabled in fixes/captured_sizes.py (sizes, slice bounds, one index). A number
used only so is reported with the setting's fix (`report_captured_size`, JIT201/JIT202;
`report_captured_tensor_size` for a 0-d tensor passed as a size, JIT204); where keeping a
tensor is withheld and every use is one of those, tensor arithmetic, or Python arithmetic
used so in turn (fixes/setting_hazards.number_hazard), the setting is the fix too
(`report_kept_or_captured`).

The setting is global and read when Dynamo traces, so it goes right before the file's
one compile call (fixes/settings.py; once: a file that already sets it gets no second line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import libcst as cst

from compile_lint.fixes.branches.blocks import BranchFix, with_reason
from compile_lint.fixes.captured_sizes import captured_size
from compile_lint.fixes.keep_tensor import every_use
from compile_lint.fixes.setting_hazards import number_hazard
from compile_lint.fixes.settings import CAPTURE_SCALARS, file_sets, setting_fix, setting_message, setting_outcome

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

CAPTURED_NOTE = ("; it is only a size, slice bound or index: the fix sets "
                 "`torch._dynamo.config.capture_scalar_outputs = True` before `torch.compile` and keeps it")

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


def captures_scalars(context: FileContext) -> bool:
    """True when the file sets `torch._dynamo.config.capture_scalar_outputs = True` (a plain assignment)."""
    return file_sets(context, CAPTURE_SCALARS)
