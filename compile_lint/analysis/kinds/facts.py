"""Facts: what kind of value an expression in a traced function holds.

This is what lets a rule tell `if x.sum() > 0:` (a tensor: data-dependent) from
`if x.dim() == 4:` (a shape: guarded), `if mask is not None:` and `if self.training:`.
Reads of locals bound more than once see the bindings that reach them (`reaching`);
other names merge everything bound to them. Across calls of the file (`callees`),
parameters take the kinds the calls pass and calls the kinds their targets return.

`Facts` is the one object rules ask (`context.facts`); its parts live beside it, one
question each: `lattice` (the kinds and their join), `bindings` (names), `expressions`
(where every question starts), `calls`, `draws` (Python random draws and the arithmetic on them
Dynamo cannot trace), `containers`, `certainty` (a tensor on evidence),
all keeping their answers in one `memo.KindMemo`.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from compile_lint.analysis.file.callees import Callees
from compile_lint.analysis.file.regions import Regions
from compile_lint.analysis.kinds.bindings import (
    AssignedValue,
    BindingKinds,
    SelfAttributes,
    annotation_kind,
    returned_values,
)
from compile_lint.analysis.kinds.calls import TRACED_RANDOM_DRAWS, CallKinds
from compile_lint.analysis.kinds.certainty import DynamoCertainty
from compile_lint.analysis.kinds.containers import ContainerKinds
from compile_lint.analysis.kinds.draws import DrawKinds
from compile_lint.analysis.kinds.expressions import ExpressionKinds
from compile_lint.analysis.kinds.lattice import Kind, join
from compile_lint.analysis.kinds.memo import KindMemo
from compile_lint.analysis.syntax.imports import ImportMap

# What rules import from here, wherever it is defined.
__all__ = ["AssignedValue", "Facts", "Kind", "SelfAttributes", "TRACED_RANDOM_DRAWS", "annotation_kind", "join",
           "returned_values"]


class Facts(ExpressionKinds, BindingKinds, CallKinds, DrawKinds, ContainerKinds, DynamoCertainty):
    """Kinds of expressions within the traced functions of one file."""

    def __init__(
        self, imports: ImportMap, regions: Regions,
        call_returns: Optional[Callable[[cst.Call, cst.FunctionDef], Optional[frozenset]]] = None,
        type_aliases: Optional[dict[str, cst.BaseExpression]] = None,
    ) -> None:
        self.imports = imports
        self.regions = regions
        # Module-level `Size_ = Tuple[int, int]`: an annotation naming one means its value.
        self.type_aliases = type_aliases or {}
        # A call of functions of other files -> the values the program model found it returns:
        # `FileContext.call_returns` (None: no model answers this file's calls).
        self.call_returns = call_returns
        self.memo = KindMemo()
        self.callees = Callees(
            imports, regions.module_classes, regions.owner_class,
            lambda cls, attr: self.self_attributes(cls).values.get(attr, []), self.assignments, self._find_method,
        )
