"""A fix plan: what a rule wants changed, before it is rendered to text edits (`fixes.rendering`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import libcst as cst


@dataclass
class FixPlan:
    """What a rule wants changed: node replacements and imports the new code needs."""

    replacements: Sequence[tuple[cst.CSTNode, object]]
    message: str
    applicability: str = "safe"
    imports: Sequence[str] = field(default_factory=tuple)
    # `(source, evidence)` of each operand a rewrite into a torch op rests on
    # (analysis/kinds/certainty.tensor_evidence); benchmarks/fix_operands.py audits them.
    rests_on: Sequence[tuple[str, str]] = field(default_factory=tuple)
