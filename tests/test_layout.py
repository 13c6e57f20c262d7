"""The package reads one way: one rule per file, named after its code; layers import downwards only.

core <- storage <- analysis <- fixes <- rules <- settings <- engine <- reporters <- verifier <- frontends,
one folder each (docs/architecture.md says why); no module imports a module that (transitively)
imports it back. The CLI lints through the engine's one pipeline, and no module of the engine or
the frontends is longer than MAX_LINES.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import sys

import pytest

import compile_lint
from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import Rule

PACKAGE_ROOT = os.path.dirname(os.path.abspath(compile_lint.__file__))
FAMILIES = {
    "1": "control_flow", "2": "tensor_to_python", "3": "containers", "4": "external_libraries",
    "5": "recompile", "6": "side_effects", "7": "custom_ops", "8": "perf_hints",
}
# A module may import only from its own layer or a layer listed after it. `compile_lint`
# itself (the version) is below every layer.
LAYERS = [
    # What rule authors test with: examples, flagged lines, fix proofs (the verifier's probe, lazily).
    ("testing helpers", "compile_lint.testing."),
    ("frontends", ("compile_lint.frontends.", "compile_lint.__main__.")),
    ("verifier", "compile_lint.verifier."),
    ("reporters", "compile_lint.reporters."),
    ("engine", "compile_lint.engine."),
    # Settings name rules (codes are checked against the rule files), so they sit above them.
    ("settings", "compile_lint.settings."),
    ("rules", "compile_lint.rules."),
    # Rules build their fixes from fixes/: plans, branch rewrites, rendering.
    ("fixes", "compile_lint.fixes."),
    ("analysis", "compile_lint.analysis."),
    # Files on disk: the one walker, file stamps, atomic writes.
    ("storage", "compile_lint.storage."),
    ("core", "compile_lint.core."),
]


def _module_files() -> dict[str, str]:
    """Dotted module name -> file, for every module of the package."""
    found = {}
    for directory, _, files in os.walk(PACKAGE_ROOT):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, os.path.dirname(PACKAGE_ROOT))[:-3].replace(os.sep, ".")
            found[relative[: -len(".__init__")] if relative.endswith(".__init__") else relative] = path
    return found


MODULES = _module_files()
MAX_LINES = 600


def _type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _run_as_program(test: ast.expr) -> bool:
    """`if __name__ == "__main__":`: what runs only when the module is the program is a frontend's."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


def _runtime_imports(path: str) -> set[str]:
    """compile_lint modules a file imports when imported (not under `if TYPE_CHECKING:` or a `__main__` guard)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    skipped = {id(node) for stmt in ast.walk(tree) if isinstance(stmt, ast.If) and (_type_checking(stmt.test)
               or _run_as_program(stmt.test)) for node in ast.walk(stmt)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in MODULES and name.startswith("compile_lint."))
    return found


def _every_import(path: str) -> set[str]:
    """Every module a file imports or imports from, also under `if TYPE_CHECKING:` and in functions."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(name for alias in node.names if (name := f"{node.module}.{alias.name}") in MODULES)
    return found


def _layer(module: str) -> int:
    for index, (_, prefixes) in enumerate(LAYERS):
        if (module + ".").startswith(prefixes):
            return index
    return len(LAYERS)  # compile_lint itself (the version): below everything


def _layer_name(module: str) -> str:
    index = _layer(module)
    return LAYERS[index][0] if index < len(LAYERS) else "the package root"


@pytest.mark.parametrize("rule", ALL_RULES, ids=[rule.code for rule in ALL_RULES])
def test_each_rule_lives_in_its_own_file_named_after_its_code(rule):
    family = FAMILIES[rule.code[3]]
    expected_module = f"compile_lint.rules.{family}.{rule.code.lower()}_{rule.name.replace('-', '_')}"
    assert rule.__module__ == expected_module
    assert rule.__name__ == "".join(part.capitalize() for part in rule.name.split("-"))
    module = sys.modules[rule.__module__]
    rules_here = [value for value in vars(module).values()
                  if isinstance(value, type) and issubclass(value, Rule) and "code" in vars(value)
                  and value.__module__ == module.__name__]
    assert rules_here == [rule], f"{rule.__module__} must define exactly one rule"
    assert inspect.getdoc(module), f"{rule.__module__} needs a module docstring"


def test_every_rule_file_is_discovered():
    rule_files = {name for name in MODULES if re.search(r"\.jit\d{3}_\w+$", name)}
    assert rule_files == {rule.__module__ for rule in ALL_RULES}


def test_layers_import_downwards_only():
    wrong = []
    for module, path in MODULES.items():
        for imported in _runtime_imports(path):
            if _layer(imported) < _layer(module):
                wrong.append(f"{module} ({_layer_name(module)}) imports {imported} ({_layer_name(imported)})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles_between_modules():
    graph = {module: _runtime_imports(path) for module, path in MODULES.items()}
    # A package's __init__ is run by importing any module in it: an edge from its modules too.
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, stack: list[str]) -> bool:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycle.extend(stack[stack.index(target):] + [target] if target in stack else [node, target])
                return True
            if state.get(target) is None and visit(target, stack + [target]):
                return True
        state[node] = 2
        return False

    for module in sorted(graph):
        if state.get(module) is None and visit(module, [module]):
            break
    assert not cycle, " -> ".join(cycle)


def test_fixes_never_name_a_rule():
    """fixes/ sits below the rules: its functions take the file's context, not the rule asking."""
    wrong = [f"{module} imports {imported}" for module, path in MODULES.items()
             if module.startswith("compile_lint.fixes.")
             for imported in sorted(_every_import(path))
             if imported == "compile_lint.rules" or imported.startswith("compile_lint.rules.")]
    assert not wrong, "\n".join(wrong)


CERTAINTY_MODULE = "compile_lint.analysis.kinds.certainty"
_CERTAINTY_NAME = re.compile(r"(?:^|_)certain(?:_|$)")
MAX_MODULE_LINES = 600
# Over the limit, not split yet: none since issue 29 (regions.py split into eager_branches.py
# and compile_spellings.py). A module added here must still be over it: take it off once split.
NOT_YET_SPLIT: frozenset[str] = frozenset()


def _defined_functions(path: str) -> set[str]:
    """The names of every function and method a file defines, nested ones too.

    A declaration for the type checker (a body of `...` alone, as analysis/kinds/parts.py
    declares what the parts of Facts ask one another) defines nothing.
    """
    tree = ast.parse(open(path, encoding="utf-8").read())
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not _declaration_only(node)}


def _declaration_only(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = function.body
    return (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and body[0].value.value is Ellipsis)


def _line_count(path: str) -> int:
    return len(open(path, encoding="utf-8").read().splitlines())


def _lines_outside_examples(path: str) -> int:
    """A rule file's lines less its `invalid = [...]` and `valid = [...]` examples (its docs and tests)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    examples = sum(item.end_lineno - item.lineno + 1 for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                   for item in node.body if isinstance(item, ast.Assign)
                   and any(isinstance(target, ast.Name) and target.id in ("invalid", "valid")
                           for target in item.targets))
    return _line_count(path) - examples


def test_one_module_decides_whether_a_value_is_certainly_a_tensor():
    """analysis/kinds/certainty.py, with its Dynamo / eager switch; no other module keeps a test of its own."""
    elsewhere = [f"{module}: {name}" for module, path in MODULES.items() if module != CERTAINTY_MODULE
                 for name in sorted(_defined_functions(path)) if _CERTAINTY_NAME.search(name)]
    assert not elsewhere, "\n".join(elsewhere)
    assert {"certain_tensor", "certain_one_tensor", "tensor_evidence"} <= _defined_functions(MODULES[CERTAINTY_MODULE])


def test_no_module_is_over_600_lines():
    """A rule file counts the lines outside its examples (the examples are its docs and tests)."""
    too_long = []
    for module, path in sorted(MODULES.items()):
        rule_file = re.search(r"\.jit\d{3}_\w+$", module) is not None
        lines = _lines_outside_examples(path) if rule_file else _line_count(path)
        if lines > MAX_MODULE_LINES and module not in NOT_YET_SPLIT:
            too_long.append(f"{path}: {lines} lines" + (" outside its examples" if rule_file else ""))
    assert not too_long, "\n".join(too_long)
    split = [module for module in sorted(NOT_YET_SPLIT)
             if module not in MODULES or _line_count(MODULES[module]) <= MAX_MODULE_LINES]
    assert not split, f"split now: take {split} off NOT_YET_SPLIT"


def test_rules_and_fixes_read_only_the_public_analysis_api():
    """No `context._x`, `context.facts._x`, `symbols._x`, ... and no `from ... import _x` of the package."""
    private_use = re.compile(r"\b(?:context|facts|regions|imports|module_index|symbols|paths)\.(_[a-z]\w*)")
    private_import = re.compile(r"^\s*from compile_lint[\w.]* import .*\b_[a-z]\w*")
    offenders = []
    for module, path in MODULES.items():
        if module.startswith(("compile_lint.rules.", "compile_lint.fixes.")):
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                if private_use.search(line) or private_import.search(line):
                    offenders.append(f"{path}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_rule_codes_are_read_from_the_rule_files_without_importing_them():
    from compile_lint.rules import rule_codes

    assert rule_codes() == {rule.code for rule in ALL_RULES}


def test_the_cli_lints_through_the_engines_one_pipeline():
    """Reading, decoding, the cache, the project index and the pool are the engine's: the CLI asks engine.api."""
    imported = _runtime_imports(MODULES["compile_lint.frontends.cli"])
    engine = {module for module in imported if module.startswith("compile_lint.engine.")}
    assert engine == {"compile_lint.engine.api"}


@pytest.mark.parametrize("layer", ["compile_lint.engine.", "compile_lint.frontends."])
def test_no_module_of_the_engine_or_the_frontends_is_too_long(layer):
    too_long = {}
    for module, path in MODULES.items():
        if (module + ".").startswith(layer):
            with open(path, encoding="utf-8") as handle:
                lines = sum(1 for _ in handle)
            if lines > MAX_LINES:
                too_long[module] = lines
    assert not too_long, f"split these into modules of one job each (at most {MAX_LINES} lines): {too_long}"


def test_the_project_has_one_summary_of_a_file():
    """One summary type (analysis/project/summary.py) serves the symbol index and the stored index."""
    summary_classes = {}
    for module, path in MODULES.items():
        if module.startswith("compile_lint.analysis."):
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                if isinstance(node, ast.ClassDef) and node.name.endswith("Summary"):
                    summary_classes.setdefault(node.name, []).append(module)
    assert summary_classes == {"FileSummary": ["compile_lint.analysis.project.summary"]}
    from compile_lint.analysis.project.summary import FileSummary

    assert not hasattr(FileSummary("m.py", ""), "__dict__"), "summaries are slotted: a project holds one per file"


def test_project_modules_stay_small():
    too_long = {module: lines for module, path in MODULES.items()
                if module.startswith("compile_lint.analysis.project.")
                and (lines := sum(1 for _ in open(path, encoding="utf-8"))) > 600}
    assert not too_long, too_long


def test_one_program_model_answers_what_runs():
    """Issue 39: which calls run and what values are is the program model's alone (analysis/model/).
    The project analysis keeps no second call graph, no second lattice of value tags ("tensor",
    "param:x", "ret:LINE:CALLEE") and no dispatch spellings (`{}A`, `self._*_step`, `<return>`)."""
    retired = {"callgraph", "dispatch", "dispatch_spellings", "decorators", "properties", "values"}
    present = {module.rsplit(".", 1)[1] for module in MODULES if module.startswith("compile_lint.analysis.project.")}
    assert not retired & present
    from compile_lint.analysis.project.summary import CallSite, FunctionInfo

    fields = set(FunctionInfo.__slots__) | set(CallSite.__slots__)
    assert not fields & {"local_tags", "returns", "returned_spellings", "called_params", "args"}
    for module, path in MODULES.items():
        if module.startswith("compile_lint.analysis.project."):
            text = open(path, encoding="utf-8").read()
            for tag in ('"ret"', '"elem"', '"<return>"', '"{}"'):
                assert tag not in text, (module, tag)
