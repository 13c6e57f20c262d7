"""Lists and dicts rules (JIT3xx): edge cases, realistic look-alikes, fix formatting.

The rules' own examples are judged by the real compiler in test_calibration.py and
test_fix_proof.py; these tests pin down what the examples do not show.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from compile_lint.analysis.file.context import FileContext
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.engine.api import fix_text
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config

FORWARD_LINE = 11  # first line of forward's body in `module(...)`
CONTAINER_CODES = ("JIT301", "JIT302", "JIT303", "JIT304", "JIT305", "JIT306")


def findings(source: str, *codes: str) -> list[tuple[str, int]]:
    """(code, line) of each finding of `codes` (all container rules when none given)."""
    config = Config(select=codes or CONTAINER_CODES)
    return [(d.code, d.line) for d in lint_text(textwrap.dedent(source).lstrip("\n"), "m.py", config)]


def module(forward_body: str, init_body: str = "pass", extra: str = "") -> str:
    """A module class whose forward has `forward_body` (both bodies at 8 spaces)."""
    return (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        + textwrap.indent(textwrap.dedent(init_body).strip("\n"), " " * 8) + "\n\n"
        + "    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(forward_body).strip("\n"), " " * 8) + "\n"
        + textwrap.indent(textwrap.dedent(extra).strip("\n"), " " * 4) + "\n"
    )


# ----- JIT301 self-list-grown-in-forward ---------------------------------------------------


@pytest.mark.parametrize("grow", ["self.cache.append(x)", "self.cache.extend([x, x])",
                                  "self.cache.insert(0, x)", "self.cache += [x]"])
def test_every_way_of_growing_a_self_list_is_flagged(grow):
    assert findings(module(grow + "\nreturn x", "self.cache = []"), "JIT301") == [("JIT301", FORWARD_LINE)]


@pytest.mark.parametrize("reset", ["self.cache = []", "self.cache.clear()", "del self.cache[:]",
                                   "self.cache = self.cache[-4:]", "self.cache.pop(0)"])
def test_a_list_reset_or_bounded_in_forward_is_not_flagged(reset):
    source = module("self.cache.append(x)\n" + reset + "\nreturn x", "self.cache = []")
    assert findings(source, "JIT301") == []


def test_a_reset_in_another_traced_method_counts_but_one_in_an_untraced_method_does_not():
    traced = module("self._reset()\nself.cache.append(x)\nreturn x", "self.cache = []",
                    "def _reset(self):\n    self.cache = []")
    assert findings(traced, "JIT301") == []
    untraced = module("self.cache.append(x)\nreturn x", "self.cache = []",
                      "def reset_cache(self):\n    self.cache = []")
    assert findings(untraced, "JIT301") == [("JIT301", FORWARD_LINE)]


def test_only_lists_are_judged_not_deques_or_unknown_attributes():
    source = module("self.window.append(x)\nself.log.append(x)\nreturn x",
                    "self.window = collections.deque(maxlen=4)\nself.log = make_log()")
    assert findings("import collections\n" + source, "JIT301") == []


def test_growing_in_a_helper_called_from_forward_is_flagged_but_not_in_eager_code():
    source = module("self._keep(x)\nreturn x", "self.kept = list()",
                    "def _keep(self, h):\n    self.kept.append(h)")
    assert findings(source, "JIT301") == [("JIT301", FORWARD_LINE + 3)]
    plain = """
    class Recorder:
        def __init__(self):
            self.seen = []

        def forward(self, x):
            self.seen.append(x)
            return x
    """
    assert findings(plain, "JIT301") == []


def test_local_accumulators_are_never_flagged():
    source = module(
        """
        out = []
        for i in range(3):
            out.append(x * i)
        out += [x]
        out.insert(0, x)
        out.extend(x * j for j in range(2))
        return torch.cat(out)
        """
    )
    assert findings(source) == []


def test_noqa_silences_the_finding():
    source = module("self.cache.append(x)  # noqa: JIT301\nreturn x", "self.cache = []")
    assert findings(source, "JIT301") == []


# ----- JIT302 tensor-filtered-comprehension -------------------------------------------------


@pytest.mark.parametrize("comprehension", [
    "[t for t in xs if t.sum() > 0]",
    "{t for t in xs if t.any()}",
    "list(t for t in xs if (t > 0).all())",
    "{i: t for i, t in enumerate(x.unbind(0)) if t.max() > 0}",
    "[r for r in x if r.norm() < 1]",
    "[t for _, t in zip(['a', 'b'], xs) if t.mean() > 0]",
    "{k: v for k, v in {'a': x, 'b': -x}.items() if v.sum() > 0}",
])
def test_filters_on_tensor_values_are_flagged(comprehension):
    source = module(f"xs = [x, x * 2]\nkeep = {comprehension}\nreturn x")
    assert [code for code, _ in findings(source, "JIT302")] == ["JIT302"]


@pytest.mark.parametrize("comprehension", [
    "[t for t in xs if t is not None]",
    "[t for t in xs if t.dim() == 2 and t.shape[0] > 1]",
    "[m for m in self.blocks if m.training]",
    "[t for t in xs if isinstance(t, torch.Tensor)]",
    "[t for t, use in zip(xs, flags) if use]",
])
def test_filters_on_shapes_flags_and_none_are_not_flagged(comprehension):
    source = module(f"xs = [x, x * 2]\nflags = [True, False]\nkeep = {comprehension}\nreturn x",
                    "self.blocks = nn.ModuleList([nn.Linear(8, 8)])")
    assert findings(source, "JIT302") == []


def test_filter_over_a_list_of_unknown_elements_is_not_guessed():
    source = module("names = self.config_names()\nkeep = [n for n in names if n.startswith('a')]\nreturn x",
                    extra="def config_names(self):\n    return ['a', 'b']")
    assert findings(source, "JIT302") == []


# ----- JIT303 sort-tensors --------------------------------------------------------------


def test_sort_fix_keeps_other_arguments_and_formatting():
    source = module('heads = {"b": x, "a": x * 2}\n'
                    'return torch.cat([v for _, v in sorted(heads.items(), reverse=True)])')
    outcome = fix_text(source, "m.py", Config(select=("JIT303",)))
    assert "sorted(heads.items(), key=lambda kv: kv[0], reverse=True)" in outcome.text
    assert fix_text(outcome.text, "m.py", Config(select=("JIT303",))).applied == []


def test_sort_fix_on_a_multiline_call_keeps_the_layout():
    source = module('heads = {"b": x, "a": x * 2}\nordered = sorted(\n    heads.items(),\n)\nreturn ordered[0][1]')
    outcome = fix_text(source, "m.py", Config(select=("JIT303",)))
    expected = "ordered = sorted(\n            heads.items(),\n            key=lambda kv: kv[0],\n        )\n"
    assert expected in outcome.text
    trailing = module('heads = {"b": x}\nreturn sorted(heads.items(),)')
    fixed = fix_text(trailing, "m.py", Config(select=("JIT303",))).text
    assert "sorted(heads.items(), key=lambda kv: kv[0],)" in fixed


def test_list_sort_of_tensors_is_flagged_without_a_fix():
    source = module("scores = [x.sum(), x.mean()]\nscores.sort()\nreturn torch.stack(scores)")
    diagnostics = lint_text(source, "m.py", Config(select=("JIT303",)))
    assert [(d.code, d.fix) for d in diagnostics] == [("JIT303", None)]


@pytest.mark.parametrize("call", [
    "sorted(sizes)", "sorted(names, key=str.lower)", "sorted(xs, key=lambda t: t.shape[-1])",
    "sorted(xs, key=len)", "sorted(params.items())", "sorted(config_dict)",
])
def test_sorting_python_values_or_by_shape_is_not_flagged(call):
    source = module(f"sizes = [3, 1]\nnames = ['b', 'a']\nxs = [x, x[:2]]\nparams = {{'b': 1, 'a': 2}}\n"
                    f"config_dict = {{'k': x}}\nout = {call}\nreturn x")
    assert findings(source, "JIT303") == []


def test_sort_key_returning_a_python_number_from_tensor_data_is_flagged():
    source = module("xs = [x, x * 2]\nreturn sorted(xs, key=lambda t: t.sum().item())[0]")
    assert [code for code, _ in findings(source, "JIT303")] == ["JIT303"]


def test_a_lambda_parameter_does_not_leak_into_other_names():
    source = module("t = 3\nxs = [x, x * 2]\nys = sorted(xs, key=lambda t: t.sum())\nreturn x * t")
    context = FileContext("m.py", cst.parse_module(source))
    forward = next(f for f in context.regions.functions if f.name.value == "forward")
    assert lint_text(source, "m.py", Config(select=("JIT303",)))
    assert context.facts.name_kind("t", forward) is Kind.PY


# ----- JIT304 min-max-key-over-tensors --------------------------------------------------


def test_min_max_without_key_or_over_python_values_are_not_flagged():
    source = module("a = max([x.sum(), x.mean()])\nb = min(range(3), key=lambda i: -i)\n"
                    "c = max({'a': 1}, key=len)\nreturn x * b")
    assert findings(source, "JIT304") == []


def test_odd_calls_do_not_crash():
    source = module("a = max(key=len)\nb = sorted()\nc = min(*[x, x], key=len)\nself.cache.append()\n"
                    "xs = [x]\nd = sorted(xs, key=lambda: 0)\nreturn x", "self.cache = []")
    findings(source)


@pytest.mark.parametrize(
    "body",
    [
        # shapes may differ: slices by the loop variable, module outputs, several arguments
        "xs = [x[: k + 1] for k in range(3)]\nreturn max(xs, key=lambda s: s.mean())",
        "xs = [layer(x) for layer in self.layers]\nreturn max(xs, key=lambda s: s.mean())",
        "return max(x, x * 2, key=lambda s: s.mean())",
        # the list changes after it is built
        "xs = [x * k for k in range(3)]\nxs.append(x[:1])\nreturn max(xs, key=lambda s: s.mean())",
        "xs = [x * k for k in range(3)]\nxs[0] = x[:1]\nreturn max(xs, key=lambda s: s.mean())",
        # a score that is not one 0-d tensor per candidate, or no lambda
        "xs = [x * k for k in range(3)]\nreturn max(xs, key=lambda s: s.mean(0))",
        "xs = [x * k for k in range(3)]\nreturn max(xs, key=lambda s: s.shape[0])",
        "xs = [x * k for k in range(3)]\nreturn max(xs, key=self.score)",
        # candidates rebuilt elsewhere, or filtered
        "xs = [x * k for k in range(3)]\nif x.dim() > 1:\n    xs = [x]\nreturn max(xs, key=lambda s: s.mean())",
        "xs = [x * k for k in range(3) if k != 1]\nreturn max(xs, key=lambda s: s.mean())",
    ],
)
def test_stack_fix_is_withheld_where_candidates_may_differ_in_shape_or_change(body):
    source = textwrap.dedent(module(body, "self.layers = nn.ModuleList([nn.Linear(8, 4), nn.Linear(8, 2)])"))
    diagnostics = lint_text(source, "m.py", Config(select=("JIT304",)))
    assert [d.code for d in diagnostics] == ["JIT304"]
    assert diagnostics[0].fix is None


def test_stack_fix_keeps_the_first_of_tied_candidates_like_max_does():
    torch = pytest.importorskip("torch")
    from compile_lint.verifier.probe import load_module_from_source

    source = module("xs = [x * (1 - 2 * k) for k in range(3)]\nreturn max(xs, key=lambda s: s.abs().mean())")
    fixed = fix_text(source, "m.py", Config(select=("JIT304",)), unsafe=True).text
    assert "argmax(0, keepdim=True)" in fixed
    original, rewritten = (load_module_from_source(code).M() for code in (source, fixed))
    for x in (torch.randn(4, 8), torch.zeros(4, 8), torch.full((4, 8), float("inf"))):
        torch.testing.assert_close(rewritten(x), original(x), rtol=0, atol=0, equal_nan=True)
    compiled = torch.compile(rewritten, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(torch.ones(4, 8)), original(torch.ones(4, 8)))


# ----- JIT305 dict-input-key-set ---------------------------------------------------------


def test_dict_input_rule_is_off_by_default():
    source = """
    import torch
    from torch import nn

    class M(nn.Module):
        def forward(self, batch: dict):
            return sum(v for v in batch.values())
    """
    assert [d for d in lint_text(textwrap.dedent(source), "m.py", Config()) if d.code == "JIT305"] == []
    assert findings(source, "JIT305") == [("JIT305", 6)]


@pytest.mark.parametrize("use", [
    "for k in batch:\n    x = x + batch[k]",
    "x = x * len(batch)",
    "keys = list(batch)",
    "x = x + sum(v for _, v in batch.items())",
    "x = x + sum(batch['feats'].values())",
])
def test_reading_the_key_set_of_a_dict_input_is_flagged(use):
    source = module(use + "\nreturn x").replace("def forward(self, x):", "def forward(self, x, batch: dict):")
    assert [code for code, _ in findings(source, "JIT305")] == ["JIT305"]


@pytest.mark.parametrize("use", [
    "x = x * batch['scale']",
    "x = x * batch.get('mask', 1)",
    "x = x + (batch['bias'] if 'bias' in batch else 0)",
    "x = self.block(x, **kwargs)",
    "x = x.values()",
])
def test_reading_keys_by_name_or_passing_kwargs_through_is_not_flagged(use):
    source = module(use + "\nreturn x", extra="def block(self, x, **kw):\n    return x").replace(
        "def forward(self, x):", "def forward(self, x, batch: dict, **kwargs):")
    assert findings(source, "JIT305") == []


def test_a_module_dict_iterating_itself_is_not_a_dict_input():
    source = """
    import torch
    from torch import nn

    class Features(nn.ModuleDict):
        def forward(self, x):
            out = {}
            for name, module in self.items():
                x = module(x)
                out[name] = x
            return out
    """
    assert findings(source, "JIT305") == []


def test_one_finding_per_dict_input_and_none_in_helpers():
    source = module("for k, v in batch.items():\n    x = x + v\nreturn x * len(batch) + self.helper(batch)",
                    extra="def helper(self, d):\n    return sum(d.values())").replace(
        "def forward(self, x):", "def forward(self, x, batch):")
    assert findings(source, "JIT305") == [("JIT305", FORWARD_LINE)]


# ----- JIT306 self-dict-state-in-forward --------------------------------------------------


@pytest.mark.parametrize("mutation", [
    'self.stats["n"] += 1',
    'self.stats["n"] = self.stats.get("n", 0) + 1',
    "self.stats[len(self.stats)] = x",
    'self.stats.update(n=self.stats.get("n", 0) + 1)',
    'self.stats["hist"].append(x)',
    'self.stats.setdefault("hist", []).append(x)',
])
def test_self_dict_state_changing_each_call_is_flagged(mutation):
    source = module(mutation + "\nreturn x", "self.stats = {}")
    assert [code for code, _ in findings(source, "JIT306")] == ["JIT306"]


@pytest.mark.parametrize("mutation", [
    'self.stats["last"] = x.detach()',
    'self.stats["sum"] = self.stats.get("sum", 0) + x.sum()',
    'self.stats["sum"] += x.sum()',
    'self.stats["rows"] = x.shape[0]',
    'self.stats = {}\nself.stats["n"] = 1',
])
def test_tensors_shapes_and_reset_dicts_are_not_flagged(mutation):
    source = module(mutation + "\nreturn x", "self.stats = {}")
    assert findings(source, "JIT306") == []


# ----- facts: element kinds ---------------------------------------------------------------


def _forward_kind(source: str, expression: str) -> Kind:
    context = FileContext("m.py", cst.parse_module(source))
    forward = next(f for f in context.regions.functions if f.name.value == "forward")
    return context.facts.element_kind(cst.parse_expression(expression), forward)


@pytest.mark.parametrize("expression, kind", [
    ("[x, x * 2]", Kind.TENSOR),
    ("acc", Kind.TENSOR),
    ("x.unbind(0)", Kind.TENSOR),
    ("self.blocks", Kind.MODULE),
    ("sizes", Kind.PY),
    ("mixed", Kind.MAYBE_TENSOR),
    ("unknown", Kind.UNKNOWN),
    ("[]", Kind.UNKNOWN),
])
def test_element_kind(expression, kind):
    source = module("acc = []\nfor i in range(2):\n    acc.append(x * i)\nsizes = [1, 2]\n"
                    "mixed = [x, self.name]\nunknown = [self.name]\nreturn x",
                    "self.blocks = nn.ModuleList([])\nself.name = make_name()")
    assert _forward_kind(source, expression) is kind


def test_loop_variables_over_tensor_lists_are_tensors_for_every_rule():
    source = module("for t in [x, x * 2]:\n    if t.sum() > 0:\n        x = x + t\nreturn x")
    assert [d.code for d in lint_text(source, "m.py", Config(select=("JIT101",)))] == ["JIT101"]


# ----- realistic code stays silent ----------------------------------------------------------


def test_transformer_style_code_has_no_container_findings():
    source = """
    import torch
    from torch import nn


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
            self.heads = nn.ModuleDict({"cls": nn.Linear(8, 2), "reg": nn.Linear(8, 1)})
            self.scales = [1.0, 0.5]
            self.cache = {}

        def forward(self, hidden, attention_mask=None, output_hidden_states=False, **kwargs):
            all_hidden = [] if output_hidden_states else None
            for layer in self.layers:
                if all_hidden is not None:
                    all_hidden.append(hidden)
                hidden = layer(hidden)
            outputs = {name: head(hidden) for name, head in self.heads.items()}
            ordered = [outputs[k] for k in sorted(outputs)]
            scaled = [hidden * s for s in self.scales if s > 0.1]
            self.cache["last_hidden"] = hidden.detach()
            mask = kwargs.get("mask")
            if mask is not None:
                hidden = hidden * mask
            return torch.cat(ordered + scaled, -1), all_hidden
    """
    assert findings(source) == []


# ----- JIT307 tensor-list-constructor ---------------------------------------------------------


@pytest.mark.parametrize("call", [
    "torch.as_tensor(x)", "torch.as_tensor(self.proj(x))", "torch.as_tensor(x.tolist())",
    "torch.as_tensor([1.0, 2.0])", "torch.as_tensor([x.shape[0], x.shape[1]])", "torch.tensor([x.sum()])",
    "torch.as_tensor(names)",
])
def test_constructors_on_tensors_python_values_or_shapes_are_not_flagged(call):
    source = module(f"names = self.names()\ny = {call}\nreturn x", "self.proj = nn.Linear(8, 8)",
                    "def names(self):\n    return [1, 2]")
    assert findings(source, "JIT307") == []


def test_constructor_fix_follows_the_file_spelling_and_adds_an_import_when_needed():
    aliased = "import torch as T\n" + module("vals = [x.sum(), x.mean()]\nreturn T.as_tensor(vals)")
    assert "return T.tensor(vals)" in fix_text(aliased, "m.py", Config(select=("JIT307",))).text
    bare = module("vals = [x.sum(), x.mean()]\nreturn as_tensor(vals)").replace(
        "import torch\n", "from torch import as_tensor\n")
    fixed = fix_text(bare, "m.py", Config(select=("JIT307",))).text
    assert "return torch.tensor(vals)" in fixed and "import torch\n" in fixed


def test_constructor_with_extra_options_or_legacy_type_has_no_fix():
    source = module("vals = [x.sum(), x.mean()]\na = torch.asarray(vals, copy=True)\nb = torch.LongTensor(vals)\n"
                    "return a + b")
    diagnostics = lint_text(source, "m.py", Config(select=("JIT307",)))
    assert [(d.code, d.fix) for d in diagnostics] == [("JIT307", None), ("JIT307", None)]


# ----- JIT308 typed-dict-with-optional-keys ------------------------------------------------------


def _typed_dicts(declarations: str, call: str, future: bool = False) -> str:
    head = "from __future__ import annotations\n" if future else ""
    return (head + "from typing import TypedDict\nfrom typing_extensions import NotRequired, Required\n"
            + module(f"out = {call}\nreturn x", extra="") + textwrap.dedent(declarations))


@pytest.mark.parametrize(
    "declarations, call, future, flagged",
    [
        ("class Out(TypedDict, total=False):\n    a: int\n", "Out(a=1)", False, True),
        ("class Out(TypedDict, total=False):\n    a: int\n", "Out(a=1)", True, True),
        ("class Out(TypedDict):\n    a: NotRequired[int]\n", "Out(a=1)", False, True),
        # Python 3.11 ignores NotRequired/Required in annotations it does not evaluate
        ("class Out(TypedDict):\n    a: NotRequired[int]\n", "Out(a=1)", True, False),
        ("class Out(TypedDict, total=False):\n    a: Required[int]\n", "Out(a=1)", False, False),
        ("class Out(TypedDict, total=False):\n    a: Required[int]\n", "Out(a=1)", True, False),
        ("class Out(TypedDict, total=False):\n    pass\n", "Out()", False, False),  # no keys, none optional
        ("class Base(TypedDict, total=False):\n    a: int\nclass Out(Base):\n    b: int\n", "Out(b=1)", False, True),
        ("Out = TypedDict('Out', {'a': int}, total=False)\n", "Out(a=1)", False, True),
        ("Out = TypedDict('Out', {'a': int})\n", "Out(a=1)", False, False),
        ("class Out(dict):\n    a: int\n", "Out(a=1)", False, False),  # not a TypedDict
        ("from other import Base\nclass Out(Base, total=False):\n    a: int\n", "Out(a=1)", False, False),
        ("class Out(TypedDict, total=False):\n    a: int\nOut = dict\n", "Out(a=1)", False, False),  # rebound
    ],
)
def test_typed_dict_with_optional_keys(declarations, call, future, flagged):
    line = FORWARD_LINE + (3 if future else 2)
    expected = [("JIT308", line)] if flagged else []
    assert findings(_typed_dicts(declarations, call, future), "JIT308") == expected


def test_typed_dict_shadowed_by_a_local_or_a_parameter_is_silent():
    declarations = "class Out(TypedDict, total=False):\n    a: int\n"
    local = _typed_dicts(declarations, "Out(a=1)").replace("out = Out(a=1)", "Out = dict\n        out = Out(a=1)")
    assert findings(local, "JIT308") == []


def test_typed_dict_fix_writes_the_literal_and_only_for_keywords():
    declarations = "class Out(TypedDict, total=False):\n    a: int\n    b: int\n"
    fixed = fix_text(_typed_dicts(declarations, "Out(a=1, b=x)"), "m.py", Config(select=("JIT308",)))
    assert 'out = {"a": 1, "b": x}' in fixed.text
    for call in ("Out({'a': 1})", "Out(**{'a': 1})"):
        unfixed = fix_text(_typed_dicts(declarations, call), "m.py", Config(select=("JIT308",)))
        assert not unfixed.applied and f"out = {call}" in unfixed.text
