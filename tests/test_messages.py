"""Messages read as ruff's: one short sentence saying what breaks, then the fix or the step by hand, once.

Checked on every rule's examples (issue 41, item 6): the first sentence stays short, the
help part names no piece of code twice, a withheld fix's recipe replaces the rule's general
advice instead of following it, and the text formats show the help on a `help:` line while
JSON keeps the whole message and the help apart.
"""

from __future__ import annotations

import collections
import json
import re

import pytest

from compile_lint.core.diagnostics import split_message
from compile_lint.engine.api import lint_source
from compile_lint.reporters.formats import render
from compile_lint.rules import ALL_RULES, RULES_BY_CODE
from compile_lint.settings.config import Config
from compile_lint.testing import only
from tests.helpers import code_spans, rule_text

HEADLINE_LIMIT = 200


def _findings(rule):
    for index, example in enumerate(rule.invalid):
        for diagnostic in lint_source(example.code, "example.py", only(rule)).diagnostics:
            if diagnostic.code == rule.code:
                yield index, diagnostic


@pytest.mark.parametrize("rule", ALL_RULES, ids=[rule.code for rule in ALL_RULES])
def test_every_message_is_a_short_sentence_then_one_step(rule):
    general_advice = split_message(rule.message)[1]
    for index, diagnostic in _findings(rule):
        text = rule_text(diagnostic)
        headline, help_part = split_message(text)
        where = f"{rule.code} example {index}: {text!r}"
        assert len(headline) <= HEADLINE_LIMIT, where
        assert diagnostic.help == help_part, where
        snippets = [span for span in code_spans(help_part or "") if "(" in span]  # code to write, not a name
        repeated = [span for span, count in collections.Counter(snippets).items() if count > 1]
        assert not repeated, f"{where} names {repeated} twice"
        if help_part and help_part.startswith("no automatic fix: ") and general_advice:
            assert general_advice not in text, f"{where} gives the rule's advice and a recipe"


def test_a_bincount_is_never_told_to_use_a_masked_where():
    source = ("import torch\nfrom torch import nn\n\nclass Counts(nn.Module):\n"
              "    def forward(self, t: torch.Tensor):\n"
              "        counts = torch.bincount(t, minlength=4)\n        return counts.tolist()\n")
    [diagnostic] = lint_source(source, "m.py", only(RULES_BY_CODE["JIT207"])).diagnostics
    assert "torch.where(mask, x, 0)" not in diagnostic.message
    assert "index_add_" in diagnostic.message  # a fixed number of bins


SOURCE = ("import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
          "        if x.sum() > 0:\n            x = x * 2\n        return x.item()\n")


def test_text_formats_show_what_breaks_then_a_help_line_and_json_keeps_both():
    result = lint_source(SOURCE, "m.py", Config())
    text = render("text", result.diagnostics, {"m.py": SOURCE})
    full = render("full", result.diagnostics, {"m.py": SOURCE})
    for report in (text, full):
        opening = [line for line in report.splitlines() if line.startswith("m.py:")]
        helps = [line for line in report.splitlines() if line.strip().startswith("= help: ")]
        assert len(opening) == len(result.diagnostics) == len(helps)
        assert all("; " not in re.sub(r"`[^`]*`", "", line) for line in opening)
    concise = render("concise", result.diagnostics, {"m.py": SOURCE})
    assert [line.split(": ", 1)[1] for line in concise.splitlines()] == [
        f"{d.code}{' [unsafe fix]' if d.fix else ''} {d.message}" for d in result.diagnostics]
    for item, diagnostic in zip(json.loads(render("json", result.diagnostics, {})), result.diagnostics):
        assert item["message"] == diagnostic.message and item["help"] == diagnostic.help
        assert item["help"] and item["message"].startswith(diagnostic.headline.split(" (")[0])
