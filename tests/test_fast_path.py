"""The fast path (ast pre-filter, fast walk, pruned rule walk) reports exactly what the full path does.

`lint_text(fast=False)` parses every file with libcst and walks every node; the default
skips files that cannot hold a finding and code no rule can see. The JSON output of the
two must be byte-identical on every rule example and on real model code.
"""

from __future__ import annotations

import json
import re
import textwrap
from types import SimpleNamespace

import libcst as cst
import pytest

from compile_lint.analysis.file.compile_spellings import COMPILED_CALLABLE_SPELLING
from compile_lint.analysis.syntax.walk import WHITESPACE_TYPES, child_fields, children, code_fields, iter_nodes, visit
from compile_lint.engine.lint import lint_text
from compile_lint.engine.prefilter import needs_lint
from compile_lint.reporters.formats import render
from compile_lint.rules import ALL_RULES, RULES_BY_CODE
from compile_lint.settings.config import Config
from compile_lint.testing import make_context
from tests.helpers import assert_findings_json, real_files

ALL = Config(select=("ALL",))
EXAMPLES = [
    (f"{rule.code}-{kind}{index}", text)
    for rule in ALL_RULES
    for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid))
    for index, example in enumerate(examples)
    for text in (example.code, example.fixed)
    if text is not None
]


def _json(text: str, path: str, fast: bool) -> str:
    rendered = render("json", lint_text(text, path, ALL, fast=fast))
    assert_findings_json(rendered)
    return rendered


@pytest.mark.parametrize("name,text", EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_rule_examples_lint_identically_both_ways(name, text):
    assert _json(text, "example.py", True) == _json(text, "example.py", False)


@pytest.mark.slow
def test_real_files_lint_identically_both_ways():
    files = real_files(60)
    assert len(files) >= 20
    for path in files:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        assert _json(text, path, True) == _json(text, path, False), path


def test_findings_in_real_looking_code_survive_the_fast_path():
    code = textwrap.dedent('''
        import torch
        from torch import nn

        def helper(x):
            if x.sum() > 0:
                return x
            return -x

        class Block(nn.Module):
            def forward(self, x):
                return helper(x)

        class Config:
            def __init__(self):
                self.flag = True
    ''')
    fast = json.loads(_json(code, "m.py", True))
    assert fast and fast == json.loads(_json(code, "m.py", False))


@pytest.mark.parametrize("code,expected", [
    ("import os\nprint(os.sep)\n", False),  # never mentions torch
    ("import torch\nx = torch.ones(3)\n", False),  # torch, but no class with forward, no compile
    ("import torch\nclass A(torch.nn.Module):\n    def forward(self, x):\n        return x\n", True),
    ("import torch\n@torch.compile\ndef f(x):\n    return x\n", True),
    ("from torch import compile as c\ndef f(x):\n    return x\ng = c(f)\n", True),
    ("import re\nimport torch\npattern = re.compile('x')\n", False),  # re.compile is not torch.compile
    ("import torch\ndef f(:\n", True),  # a syntax error: the full path reports JIT000
])
def test_prefilter_decides_which_files_need_the_full_lint(code, expected):
    assert needs_lint(code, [REGION_RULE], syntax_enabled=True) is expected


REGION_RULE = SimpleNamespace(scope="region", trigger_words=())


def test_module_scoped_rules_see_every_torch_file_unless_they_name_trigger_words():
    code = "import torch\nx = torch.ones(3)\n"
    assert needs_lint(code, [REGION_RULE, SimpleNamespace(scope="module", trigger_words=())], syntax_enabled=True)
    custom_ops = SimpleNamespace(scope="module", trigger_words=("custom_op",))
    assert not needs_lint(code, [REGION_RULE, custom_ops], syntax_enabled=True)
    assert needs_lint(code + "torch.library.custom_op\n", [custom_ops], syntax_enabled=True)


def test_syntax_errors_are_found_even_in_files_without_torch():
    assert needs_lint("def f(:\n", [REGION_RULE], syntax_enabled=True)
    assert not needs_lint("def f(:\n", [REGION_RULE], syntax_enabled=False)
    assert lint_text("def f(:\n", "m.py", ALL)[0].code == "JIT000"


def _sources() -> list[str]:
    texts = [text for _, text in EXAMPLES]
    texts += [open(path, encoding="utf-8").read() for path in real_files(12)]
    texts.append(textwrap.dedent('''
        from . import x as y
        async def f(a, /, b=1, *c, d: int = 2, **e) -> None:
            async with a as b, c:
                async for i in b:
                    yield i
            match a:
                case [1, *rest] if rest: pass
                case {"k": v, **kw}: pass
                case Point(x=0) | None: pass
            try:
                pass
            except* ValueError as err:
                raise
            finally:
                del a[1:2, ::3]
            lambda q, *r: (q := 1)
            print(f"{a!r:>{b}} {{x}}", *c, **e); global g
            return [i async for i in b if i] or {k: v for k, v in e} or {*c}
        @dec(1)
        class K(B, metaclass=M):
            x: int = 1
            def __init__(self): nonlocal_ = not -~+1 ** 2 // 3 @ m if a else b
    '''))
    return texts


def test_children_are_libcsts_children_in_libcsts_order():
    for text in _sources():
        for node in iter_nodes(cst.parse_module(text), skip=None):
            assert children(node) == list(node.children), type(node).__name__


def test_layout_fields_hold_only_layout_and_code_fields_none():
    for text in _sources():
        for node in iter_nodes(cst.parse_module(text)):
            code = set(code_fields(type(node)))
            for name in child_fields(type(node)):
                value = getattr(node, name)
                for child in value if isinstance(value, (tuple, list)) else [value]:
                    if isinstance(child, cst.CSTNode):
                        assert (type(child) in WHITESPACE_TYPES) == (name not in code), (type(node).__name__, name)


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", type(node).__name__))
        return not isinstance(node, cst.Lambda)  # children skipped, leave still called

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", type(original_node).__name__))


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.events: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.events.append(node.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.events.append("end " + original_node.name.value)


@pytest.mark.slow
@pytest.mark.parametrize("visitor_type", [_Recorder, _Names])
def test_fast_visit_calls_hooks_exactly_as_libcst_does(visitor_type):
    for text in _sources():
        module = cst.parse_module(text)
        reference, fast = visitor_type(), visitor_type()
        module.visit(reference)
        visit(module, fast)
        assert fast.events == reference.events


def test_trigger_words_appear_in_every_flagged_example():
    for rule in ALL_RULES:
        if rule.trigger_words or rule.trigger_pattern:
            assert rule.scope == "module", rule.code
            for example in rule.invalid:
                assert not rule.trigger_words or any(word in example.code for word in rule.trigger_words), rule.code
                assert not rule.trigger_pattern or re.search(rule.trigger_pattern, example.code), rule.code


def test_files_with_compiled_callables_spell_a_compile_call_or_decorator():
    # The perf hints' trigger pattern must hold wherever `compiled_callables` finds one.
    codes = [example.code for rule in ALL_RULES for example in (*rule.invalid, *rule.valid)]
    codes += [
        "import torch\n@torch.compile\ndef f(x):\n    return x\n",
        "import torch\n@(torch  # odd\n.compile)\ndef f(x):\n    return x\n",
        "from torch import compile as c\n@c\ndef f(x):\n    return x\n",
        "import torch\nm = torch.compile \\\n  (model)\n",
        "import torch._dynamo as d\n@d.optimize('eager')\ndef f(x):\n    return x\n",
    ]
    found = 0
    for code in codes:
        context = make_context(code)
        if context.compiled_callables:
            found += 1
            assert re.search(COMPILED_CALLABLE_SPELLING, code), code
    assert found >= 10


def test_files_with_library_ops_or_disabled_helpers_match_their_rules_patterns():
    library, disabled = RULES_BY_CODE["JIT704"], RULES_BY_CODE["JIT705"]
    codes = [example.code for rule in ALL_RULES for example in (*rule.invalid, *rule.valid)]
    codes.append("from torch.compiler import disable as off\n@off\ndef f(x):\n    return x + 1\n")
    defined = decorated = 0
    for code in codes:
        context = make_context(code)
        if context.library_ops.defined:
            defined += 1
            assert re.search(library.trigger_pattern, code), code
        names = {context.qualname(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                 for node in context.module_index.of_type(cst.FunctionDef) for d in node.decorators}
        if names & {"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo"}:
            decorated += 1
            assert re.search(disabled.trigger_pattern, code), code
    assert defined >= 3 and decorated >= 3
