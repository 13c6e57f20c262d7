"""Positions from the reported nodes' own statements are exactly libcst's PositionProvider's.

The engine places a finding by rendering only the statement that held it during the walk
(linter/positions.py). A module-scoped probe rule reports every node the walk visits, so
every node of every statement is placed that way and compared with PositionProvider over
the whole module, on every rule example and on real model code, plus the layouts that
could trip the placement: duplicated statements, no trailing newline, CRLF, tabs,
decorators, `match`, nested and async functions.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from compile_lint.engine import lint as engine
from compile_lint.engine.dispatch import Dispatcher
from compile_lint.engine.positions import NodePositions
from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import Rule
from tests.helpers import real_files


class _EveryNode(Rule):
    """Reports every node the walk visits (module scope: the whole module is walked)."""

    code, name, kind, message = "JIT999", "every-node", "perf", "node"
    scope = "module"

    def on_node(self, node: cst.CSTNode) -> None:
        self.report(node)


def _hook(self, node):
    self.on_node(node)


for _node_type in {t for t in vars(cst).values() if isinstance(t, type) and issubclass(t, cst.CSTNode)}:
    setattr(_EveryNode, "visit_" + _node_type.__name__, _hook)


def _placed(code: str) -> tuple[list, list]:
    """(spans from the anchors, PositionProvider's spans) for every reported node of `code`."""
    module = cst.parse_module(code)
    context = engine.FileContext("m.py", module, (), code)
    rule = _EveryNode(context)
    dispatcher = Dispatcher(context, [rule], prune=False)
    rule.findings = engine._AnchoredFindings(dispatcher.anchors)
    dispatcher.run(module)
    positions = NodePositions(module, code)
    reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    placed, expected = [], []
    for finding, anchors in rule.findings.with_anchors():
        placed.append(positions.span(finding.node, anchors))
        r = reference[finding.node]
        expected.append((r.start.line, r.start.column, r.end.line, r.end.column))
    assert rule.findings, "the probe reported nothing"
    return placed, expected


EXAMPLES = [
    (f"{rule.code}-{kind}{index}", example.code)
    for rule in ALL_RULES
    for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid))
    for index, example in enumerate(examples)
]

LAYOUTS = {
    "duplicated functions": """
        import torch
        def helper(x):
            return x.item()
        def helper(x):
            return x.item()
        class M(torch.nn.Module):
            def forward(self, x):
                return helper(x)
            def forward(self, x):
                return helper(x)
    """,
    "decorators, comments, nesting": """
        # header comment

        import torch


        @torch.compile  # trailing
        # between
        @other(
            1,
        )
        async def f(x, /, y=1, *a, k, **kw):
            # leading
            def inner():
                class Local:
                    def method(self):
                        return x.item()
                return Local
            match x:
                case [1, *rest] if rest:
                    return inner()
                case _:
                    pass
            return x
        # footer comment
    """,
}


@pytest.mark.parametrize("name,code", EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_rule_examples_are_placed_as_position_provider_places_them(name, code):
    placed, expected = _placed(code)
    assert placed == expected


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("indent", ["    ", "\t"])
@pytest.mark.parametrize("trailing_newline", [True, False])
def test_layouts_are_placed_as_position_provider_places_them(name, newline, indent, trailing_newline):
    code = textwrap.dedent(LAYOUTS[name]).lstrip("\n").replace("    ", indent).replace("\n", newline)
    if not trailing_newline:
        code = code.rstrip("\r\n")
    placed, expected = _placed(code)
    assert placed == expected


@pytest.mark.slow
def test_real_files_are_placed_as_position_provider_places_them():
    files = real_files(12)
    assert len(files) >= 8
    for path in files:
        with open(path, encoding="utf-8") as handle:
            placed, expected = _placed(handle.read())
        assert placed == expected, path


def test_ambiguous_statements_fall_back_to_the_whole_module():
    code = "import torch\ndef f(x):\n    return x.item()\ndef f(x):\n    return x.item()\n"
    module = cst.parse_module(code)
    positions = NodePositions(module, code)
    assert positions.locate(module.code_for_node(module.body[1])) is None  # the same text twice
    assert positions.locate(module.code_for_node(module.body[0])) == 0


def test_sources_libcst_does_not_reproduce_are_placed_as_position_provider_places_them():
    # libcst parses a backslash continuation inside indentation but regenerates it otherwise
    # (its issue #951): positions then come from PositionProvider, as they always did.
    code = ("import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n"
            "            y = 1\n          \\\n  z = x.item()\n        return x.item()\n\n\ndef g(x):\n"
            "    return x.item()\n")
    module = cst.parse_module(code)
    assert module.code != code
    assert not NodePositions(module, code).faithful
    placed, expected = _placed(code)
    assert placed == expected
