"""The language server's incremental parser gives exactly the tree a full parse gives.

After each edit, `IncrementalParser.parse` must return a module that `deep_equals` the one
`libcst.parse_module` returns for the new text (and renders to it), or raise the same kind
of error when the text does not parse. Random edits (characters, indentation, brackets,
quotes, comments, copied lines) on rule examples and real model code, and the edits the
splice must refuse: the first line, the header, the first block, a statement's first
character, comments the block before may take.
"""

from __future__ import annotations

import random
import textwrap

import libcst as cst
import pytest

from compile_lint.engine.incremental import IncrementalParser, _starts_by_rendering, _starts_from_lines
from compile_lint.rules import ALL_RULES
from tests.helpers import real_files

SNIPPETS = ["x", " ", "    ", "\n", "\n    ", "(", ")", "'''", '"', "#", "# c\n", "\n\n", "    # c\n", "  # c\n",
            "pass\n", "\tx", "if x:\n", "\\\n", "]", ":", "def f():\n", "    return 1\n", "class A:\n", "@d\n"]


def _edit(text: str, rng: random.Random) -> str:
    position = rng.randrange(len(text) + 1)
    kind = rng.random()
    if kind < 0.45:
        return text[:position] + rng.choice(SNIPPETS) + text[position:]
    if kind < 0.75:
        return text[:position] + text[position + rng.randrange(1, 40):]
    lines = text.splitlines(True)
    index = rng.randrange(len(lines) + 1)
    lines.insert(index, rng.choice(lines) if lines else "x = 1\n")
    return "".join(lines)


def _check_edits(text: str, rng: random.Random, edits: int) -> tuple[int, int]:
    """Apply random edits; every parse must equal the full parse. (parses compared, splices)"""
    parser = IncrementalParser()
    parser.parse(text)
    good = text
    compared = spliced = 0
    for _ in range(edits):
        text = _edit(text, rng)
        try:
            expected = cst.parse_module(text)
        except Exception as error:  # noqa: BLE001 - whatever the full parse raises, so must the splice
            with pytest.raises(type(error)):
                parser.parse(text)
            text = good  # carry on from the last text that parsed, as an editor would
            assert parser.parse(text).deep_equals(cst.parse_module(text))
            continue
        module = parser.parse(text)
        assert module.deep_equals(expected), text
        assert module.code == expected.code
        compared += 1
        spliced += parser.reused > 0
        good = text
    return compared, spliced


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.slow
def test_random_edits_of_real_files_parse_as_full_parses():
    rng = random.Random(15)
    compared = spliced = 0
    texts = [text for text in map(_read, real_files(40)) if 200 < text.count("\n") < 900][:4]
    assert texts
    for text in texts:
        counts = _check_edits(text, rng, 40)
        compared += counts[0]
        spliced += counts[1]
    assert compared > 40
    assert spliced > compared // 2  # most edits really were spliced


@pytest.mark.slow
def test_random_edits_of_rule_examples_parse_as_full_parses():
    rng = random.Random(16)
    for rule in ALL_RULES[::2]:
        for example in rule.invalid[:2]:
            _check_edits(example.code, rng, 12)


BASE = textwrap.dedent('''\
    """Docstring."""
    import torch


    class First(torch.nn.Module):
        def forward(self, x):
            return x


    # before Second
    class Second(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x


    def helper(y):
        return y.item()


    VALUE = 1
''')


@pytest.mark.parametrize("old,new", [
    ('"""Docstring."""', '"""Doc."""'),  # the first line
    ("class First", "class Firsts"),  # the first block
    ("class Second", "    class Second"),  # a statement's first character: joins the block before
    ("# before Second", "        # before Second"),  # a comment the block before may take
    ("def helper(y):", "def helper(y, z):"),  # a middle statement
    ("        return y.item()\n", "        return y.item()\n    # trailing\n"),  # a footer comment of a block
    ("VALUE = 1\n", "VALUE = 1\n# last\n"),  # the footer
    ("VALUE = 1\n", "VALUE = (\n"),  # does not parse
    ("            return -x\n", "            return -x\n  # odd\n"),  # a comment at no block's indentation
])
def test_edits_near_boundaries_parse_as_full_parses(old, new):
    parser = IncrementalParser()
    parser.parse(BASE)
    text = BASE.replace(old, new, 1)
    try:
        expected = cst.parse_module(text)
    except cst.ParserSyntaxError:
        with pytest.raises(cst.ParserSyntaxError):
            parser.parse(text)
        return
    module = parser.parse(text)
    assert module.deep_equals(expected)
    assert module.code == text


def test_an_edit_in_one_function_keeps_every_other_statement():
    parser = IncrementalParser()
    first = parser.parse(BASE)
    module = parser.parse(BASE.replace("return y.item()", "return y.item() + 1"))
    assert parser.reused == len(first.body) - 1
    kept = [statement for statement in module.body if any(statement is old for old in first.body)]
    assert len(kept) == len(first.body) - 1


def _indented_comment_edit(text: str, rng: random.Random) -> str:
    """Insert a comment or blank line before a random line, at that line's indentation: the code stays valid."""
    lines = text.splitlines(True)
    index = rng.randrange(len(lines))
    line = lines[index]
    indent = line[:len(line) - len(line.lstrip(" "))]
    lines.insert(index, rng.choice([f"{indent}# edited\n", "\n", f"{indent}pass_ = 0\n" if indent else "\n"]))
    return "".join(lines)


@pytest.mark.slow
def test_linting_edit_after_edit_finds_what_a_fresh_lint_finds():
    from compile_lint.engine.lint import lint_text
    from compile_lint.engine.positions import RenderCache
    from compile_lint.settings.config import Config

    config = Config(select=("ALL",))
    rng = random.Random(17)
    texts = [example.code for rule in ALL_RULES if rule.fix_applicability for example in rule.invalid[:1]]
    texts += [text for text in map(_read, real_files(20)) if "forward" in text and text.count("\n") < 900][:2]
    compared = 0
    for text in texts:
        parser, cache = IncrementalParser(), RenderCache()
        for _ in range(6):
            try:
                cst.parse_module(text)
            except cst.ParserSyntaxError:
                break
            incremental = lint_text(text, "m.py", config, parse=parser.parse, prefilter=False, render_cache=cache)
            assert incremental == lint_text(text, "m.py", config)
            compared += bool(incremental)
            text = _indented_comment_edit(text, rng)
    assert compared > 30


@pytest.mark.slow
def test_statement_starts_from_ast_lines_are_the_rendered_ones():
    # `prepare` reads where statements start off `ast`'s line numbers; rendering every
    # statement is the definition. Real files, every rule example, and random edits of them.
    rng = random.Random(5)
    texts = [_read(path) for path in real_files(12)]
    texts += [example.code for rule in ALL_RULES for example in (*rule.invalid, *rule.valid)]
    texts += ["# header\n\nx = 1; y = 2\n\n@d\n# between\n@e\ndef f():\n    pass\n    # footer\n# tail\n",
              "x = 1\r\ny = 2\r\n", "x = (\n    1)\nif x:\n    pass\n\n\n# end\n",
              "import torch\nfrom torch import nn\n\\\n\nclass Model(nn.Module):\n    pass\n"]
    compared = 0
    for text in texts + [_edit(text, rng) for text in texts for _ in range(3)]:
        try:
            module = cst.parse_module(text)
        except Exception:  # noqa: BLE001 - an edit that does not parse has no statements to place
            continue
        found = _starts_from_lines(module, text)
        if found is not None:
            assert found == _starts_by_rendering(module), text
            compared += 1
    assert compared > len(texts)
