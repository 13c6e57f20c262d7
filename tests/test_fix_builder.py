"""Fixes built from the findings' anchors are exactly the fixes the module-wide path builds.

With anchors, `FixBuilder` rewrites only the innermost statement holding the replaced
nodes, splices it into the top-level statement's text and checks it parses where it
stands; without, it rewrites, renders and parses the whole top-level statement. Both diff
the same text, so the edits (and whether there is a fix at all) must be identical: for
every fix a rule builds on its examples, and for probe fixes at many places of real code
(a renamed name, a removed statement, an expression that does not parse).
"""

from __future__ import annotations

import libcst as cst
import pytest

from compile_lint.engine import lint as engine
from compile_lint.engine.dispatch import Dispatcher
from compile_lint.engine.positions import NodePositions
from compile_lint.fixes.plan import FixPlan
from compile_lint.fixes.rendering import FixBuilder
from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import Rule
from tests.helpers import real_files


class _Probe(Rule):
    """Proposes a fix at every few names and statements: some valid, some that cannot parse."""

    code, name, kind, message = "JIT998", "fix-probe", "perf", "probe"
    scope = "module"
    every = 1

    def __init__(self, context) -> None:
        super().__init__(context)
        self.seen = 0

    def _due(self) -> bool:
        self.seen += 1
        return self.seen % self.every == 0

    def visit_Name(self, node: cst.Name) -> None:
        if self._due():
            self.report(node, fix=FixPlan([(node, cst.Name(node.value + "_renamed"))], "rename"))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if self._due():  # a keyword renders as a name, but does not parse
            self.report(node, fix=FixPlan([(node.left, cst.Name("lambda"))], "break it"))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if self._due():  # may leave a block empty: no fix then
            self.report(node, fix=FixPlan([(node, cst.RemoveFromParent())], "remove", imports=("math",)))


class _WholeStatementProbe(Rule):
    """Replaces statements of blocks whole, by statements: a line wrapped in an `if` (as an eager-only
    guard does), an `if` after a new line (as a branch rewrite puts lines in its place)."""

    code, name, kind, message = "JIT997", "whole-statement-probe", "perf", "probe"
    scope = "module"

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        guard = cst.If(test=cst.Name("True"), body=cst.IndentedBlock([node.with_changes(leading_lines=())]),
                       leading_lines=node.leading_lines)
        self.report(node, fix=FixPlan([(node, guard)], "guard"))

    def visit_If(self, node: cst.If) -> None:
        first = cst.SimpleStatementLine([cst.Pass()], leading_lines=node.leading_lines)
        self.report(node, fix=FixPlan([(node, cst.FlattenSentinel([first, node.with_changes(leading_lines=())]))],
                                      "pass first"))


def _fixes_both_ways(code: str, rule_classes) -> list[tuple]:
    module = cst.parse_module(code)
    context = engine.FileContext("m.py", module, (), code)
    rules = [rule_class(context) for rule_class in rule_classes]
    dispatcher = Dispatcher(context, rules, prune=False)
    for rule in rules:
        rule.findings = engine._AnchoredFindings(dispatcher.anchors)
    dispatcher.run(module)
    anchored = FixBuilder(module, lambda: context.parents, code, NodePositions(module, code))
    plain = FixBuilder(module, context.parents)
    pairs = []
    for rule in rules:
        for finding, anchors in rule.findings.with_anchors():
            if finding.fix is None:
                continue
            plan = finding.fix
            arguments = (plan.replacements, plan.message, plan.applicability, plan.imports)
            pairs.append((anchored.build(*arguments, anchors), plain.build(*arguments)))
    return pairs


FIXED = [
    (f"{rule.code}-{index}", rule, example.code)
    for rule in ALL_RULES if rule.fix_applicability
    for index, example in enumerate(rule.invalid)
]


@pytest.mark.parametrize("name,rule,code", FIXED, ids=[name for name, _, _ in FIXED])
def test_rule_fixes_are_the_same_both_ways(name, rule, code):
    pairs = _fixes_both_ways(code, [rule])
    for anchored, plain in pairs:
        assert anchored == plain


@pytest.mark.parametrize("name,rule,code", FIXED[::3], ids=[name for name, _, _ in FIXED[::3]])
def test_probe_fixes_in_examples_are_the_same_both_ways(name, rule, code):
    pairs = _fixes_both_ways(code, [_Probe])
    assert pairs
    for anchored, plain in pairs:
        assert anchored == plain


@pytest.mark.parametrize("name,rule,code", FIXED[1::3], ids=[name for name, _, _ in FIXED[1::3]])
def test_statements_replaced_whole_are_the_same_both_ways(name, rule, code):
    """The anchored path renders and parses only such a statement (not the function around it)."""
    pairs = _fixes_both_ways(code, [_WholeStatementProbe])
    assert any(anchored for anchored, _ in pairs)
    for anchored, plain in pairs:
        assert anchored == plain


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.slow
def test_probe_fixes_in_real_files_are_the_same_both_ways():
    # The module-wide path renders and parses a whole class per fix: small files, few probes.
    texts = [text for text in map(_read, real_files(40)) if text.count("\n") < 700][:4]
    assert texts
    _Probe.every = 29
    outcomes = {"fix": 0, "none": 0}
    try:
        for index, text in enumerate(texts):
            pairs = _fixes_both_ways(text, [_Probe]) + _fixes_both_ways(text, [_WholeStatementProbe])[::29]
            for anchored, plain in pairs:
                assert anchored == plain, index
                outcomes["fix" if anchored else "none"] += 1
    finally:
        _Probe.every = 1
    assert outcomes["fix"] and outcomes["none"]  # both kinds of answer were compared
