"""Everything the facts of one file keep: answers by question, and the questions being answered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.analysis.file.reaching import Binding, ReachingBindings
from compile_lint.analysis.kinds.lattice import Kind

if TYPE_CHECKING:
    from compile_lint.analysis.kinds.bindings import AssignedValue, SelfAttributes

CallSites = dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]
# The answers that rest on what names hold: `kind_with_bindings` sets them aside and restores them.
_KIND_FIELDS = ("names", "read_kinds", "returns", "conditional_tensors", "param_bindings", "binding_kinds",
                "argument_kinds", "read_cursor")


@dataclass(slots=True)
class KindMemo:
    """The facts' memo: one field per question, filled as questions are asked."""

    # What the syntax says, once per function or class.
    assignments: dict[cst.FunctionDef, dict[str, list[AssignedValue]]] = field(default_factory=dict)
    # `.append(x)` and the like
    added: dict[cst.FunctionDef, dict[str, list[AssignedValue]]] = field(default_factory=dict)
    returned_values: dict[cst.FunctionDef, list[cst.BaseExpression]] = field(default_factory=dict)
    self_attributes: dict[cst.ClassDef, SelfAttributes] = field(default_factory=dict)
    methods: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = field(default_factory=dict)
    reaching: dict[cst.FunctionDef, ReachingBindings] = field(default_factory=dict)
    call_sites: Optional[CallSites] = None
    resolved_sites: Optional[CallSites] = None
    # Kinds: of names, reads, returns, bindings, what calls pass, certainty under Dynamo.
    names: dict[tuple[cst.FunctionDef, str], Kind] = field(default_factory=dict)
    read_kinds: dict[cst.Name, Kind] = field(default_factory=dict)
    returns: dict[cst.FunctionDef, Kind] = field(default_factory=dict)
    binding_kinds: dict[Binding, Kind] = field(default_factory=dict)
    argument_kinds: dict[tuple, Optional[Kind]] = field(default_factory=dict)
    certain: dict[tuple, bool] = field(default_factory=dict)
    # Certainty in eager code (`certainty.Under.EAGER`): (function, name, depth) -> whether a
    # value bound to the name is a tensor on evidence; function -> the receivers of methods
    # only tensors have, by name; (function, name, depth) -> whether a value reads a random draw.
    eager_certain: dict[tuple, bool] = field(default_factory=dict)
    tensor_only_receivers: dict[cst.FunctionDef, dict[str, list[cst.Name]]] = field(default_factory=dict)
    random_draws: dict[tuple, bool] = field(default_factory=dict)
    # A read that is a tensor only when some bindings ran -> the statements that bind the tensor.
    conditional_tensors: dict[cst.Name, list[cst.CSTNode]] = field(default_factory=dict)
    # Parameters bound to given kinds while `kind_with_bindings` asks (empty otherwise).
    param_bindings: dict[tuple[cst.FunctionDef, str], Kind] = field(default_factory=dict)
    # The questions being answered (recursion guards), and how many guards fired: results
    # built on one are not kept.
    in_progress: set[object] = field(default_factory=set)
    cycles: int = 0
    read_steps: dict[cst.FunctionDef, int] = field(default_factory=dict)  # reads worked out, per function
    # Reads in the order `reaching` met them, per function; how far they were worked out in that
    # order; how many reads of each function are being worked out now.
    read_order: dict[cst.FunctionDef, tuple[list[cst.Name], dict[cst.Name, int]]] = field(default_factory=dict)
    read_cursor: dict[cst.FunctionDef, int] = field(default_factory=dict)
    reading: dict[cst.FunctionDef, int] = field(default_factory=dict)

    def kinds_so_far(self) -> tuple[dict, ...]:
        """Copies of the answers that rest on what names hold, for `restore_kinds`."""
        return tuple(dict(getattr(self, name)) for name in _KIND_FIELDS)

    def restore_kinds(self, saved: tuple[dict, ...]) -> None:
        """Put back the answers `kinds_so_far` copied (those worked out meanwhile rested on guessed bindings)."""
        for name, value in zip(_KIND_FIELDS, saved):
            setattr(self, name, value)
