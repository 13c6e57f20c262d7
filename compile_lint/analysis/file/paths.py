"""Path conditions: in which mode (`self.training`) a line of a traced function runs.

Dynamo specialises on `self.training`: it reads the flag while tracing and guards on it,
so code under `if self.training:` is traced only when a model is compiled in training
mode, code after `if not self.training: return x` only then too, and the right side of
`self.training and ...` only then. A finding there cannot happen to a user who compiles
an `eval()` model, and the other way round. Inputs are not modes: `labels is not None`
picks a branch from the value a call passes, and another value only costs a recompile,
so no other condition is tracked.

Modes are sets of `TRAINING` / `INFERENCE`: `BOTH` for code that runs either way, an
empty set for code that never runs under compile (after an unconditional return).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import libcst as cst

from compile_lint.analysis.file.callees import parameters_passed, passed_argument

Modes = frozenset
TRAINING = "training"
INFERENCE = "inference"
BOTH: Modes = frozenset({TRAINING, INFERENCE})
NEVER: Modes = frozenset()
_TRAINING_VALUE = {TRAINING: True, INFERENCE: False}
_MAX_DEPTH = 12


def only_mode(modes: Modes) -> Optional[str]:
    """The one mode `modes` allows, or None when it allows both (or none)."""
    return next(iter(modes)) if len(modes) == 1 else None


def condition_text(mode: Optional[str]) -> str:
    """How a finding's message says the mode it needs: "only when self.training"."""
    if mode == TRAINING:
        return "only when self.training"
    if mode == INFERENCE:
        return "only when not self.training"
    return ""


CallSites = Callable[[], dict]


class PathModes:
    """The modes in which statements and expressions of traced functions run.

    `call_sites()` maps a traced function to the (caller, call) pairs that reach it, so a
    helper called only under `if self.training:` runs only in training; roots (forward,
    compiled functions) run in both modes. `assignments(function)` gives a function's
    local bindings, so `training = self.training` is read as the mode too. `compiling(test)`
    says whether a test is known true or false under compile (`is_compiling()`), so the
    right side of `not is_compiling() and ...` runs in no mode.
    """

    def __init__(
        self,
        roots: set,
        parents: Callable[[], dict],
        call_sites: CallSites,
        assignments: Callable[[cst.FunctionDef], dict],
        compiling: Optional[Callable[[cst.BaseExpression], Optional[bool]]] = None,
        parents_within: Optional[Callable[[cst.FunctionDef], dict]] = None,
    ) -> None:
        self._roots = roots
        # Whether a test is known True (False) while Dynamo traces (`regions.predicate_sense`).
        self._compiling = compiling
        self._parents = parents
        # Child -> parent below one function: all `modes_at` reads for a node inside it, and
        # much cheaper than the whole module's map when few of its functions are traced.
        self._parents_within = parents_within
        self._call_sites = call_sites
        self._assignments = assignments
        self._statement_modes: dict[cst.FunctionDef, dict[cst.CSTNode, Modes]] = {}
        self._entry: dict[cst.FunctionDef, Modes] = {}
        self._in_progress: set = set()

    # ----- queries -------------------------------------------------------------------
    def modes_at(self, node: cst.CSTNode, function: Optional[cst.FunctionDef]) -> Modes:
        """The modes in which `node`, inside `function`, is evaluated under compile."""
        if function is None:
            return BOTH
        statements = self._statements_of(function)
        parents = self._parents_within(function) if self._parents_within is not None else None
        if parents is None or (node is not function and node not in parents):
            parents = self._parents()
        restriction = BOTH
        child, current = node, parents.get(node)
        while True:
            if child in statements:
                return statements[child] & restriction
            if current is None or child is function:
                return restriction & self.entry_modes(function)
            restriction &= self._expression_restriction(current, child, function)
            child, current = current, parents.get(current)

    def entry_modes(self, function: cst.FunctionDef) -> Modes:
        """The modes in which `function` is called: both for roots, else its call sites' union."""
        if function in self._entry:
            return self._entry[function]
        if function in self._roots:
            return BOTH
        key = ("entry", function)
        if key in self._in_progress:
            return NEVER  # a recursive call adds nothing its other callers do not
        sites = self._call_sites().get(function, [])
        if not sites:
            return BOTH
        self._in_progress.add(key)
        try:
            modes: Modes = NEVER
            for caller, call in sites:
                modes |= self.modes_at(call, caller)
                if modes == BOTH:
                    break
        finally:
            self._in_progress.discard(key)
        self._entry[function] = modes
        return modes

    # ----- tests ---------------------------------------------------------------------
    def evaluate(self, test: cst.BaseExpression, mode: str, function: cst.FunctionDef,
                 depth: int = 0) -> Optional[bool]:
        """The value of `test` in `mode` (True/False), or None when it depends on more than the mode."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.evaluate(test.expression, mode, function, depth + 1)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            left = self.evaluate(test.left, mode, function, depth + 1)
            right = self.evaluate(test.right, mode, function, depth + 1)
            if isinstance(test.operator, cst.And):
                if left is False or right is False:
                    return False
                return True if left is True and right is True else None
            if left is True or right is True:
                return True
            return False if left is False and right is False else None
        if self.is_mode_flag(test, function, depth):
            return _TRAINING_VALUE[mode]
        return None

    def is_mode_flag(self, expr: cst.BaseExpression, function: cst.FunctionDef, depth: int = 0) -> bool:
        """`self.training`, a local bound only to it, or a parameter every caller passes it to."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Attribute):
            return (expr.attr.value == "training" and isinstance(expr.value, cst.Name)
                    and expr.value.value == "self")
        if not isinstance(expr, cst.Name):
            return False
        values = self._assignments(function).get(expr.value, [])
        if values:
            return all(isinstance(v, cst.BaseExpression) and self.is_mode_flag(v, function, depth + 1) for v in values)
        return self._parameter_is_mode_flag(expr.value, function, depth)

    def _parameter_is_mode_flag(self, name: str, function: cst.FunctionDef, depth: int) -> bool:
        params = function.params
        if name not in [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]:
            return False
        sites = self._call_sites().get(function, [])
        if not sites or function in self._roots:
            return False
        key = ("flag", function, name)
        if key in self._in_progress:
            return False
        self._in_progress.add(key)
        try:
            for caller, call in sites:
                method = isinstance(call.func, cst.Attribute)
                argument = passed_argument(call, name, parameters_passed(function, method))
                if argument is None or not self.is_mode_flag(argument, caller, depth + 1):
                    return False
            return True
        finally:
            self._in_progress.discard(key)

    def _allowed(self, test: cst.BaseExpression, truth: bool, function: cst.FunctionDef) -> Modes:
        """The modes in which `test` can evaluate to `truth`."""
        return frozenset(mode for mode in BOTH if self.evaluate(test, mode, function) is not (not truth))

    # ----- expressions ---------------------------------------------------------------
    def _expression_restriction(self, parent: cst.CSTNode, child: cst.CSTNode, function: cst.FunctionDef) -> Modes:
        """Modes in which `child` is evaluated as part of `parent` (short-circuits, conditional expressions)."""
        if isinstance(parent, cst.IfExp):
            if child is parent.body:
                return self._allowed(parent.test, True, function)
            if child is parent.orelse:
                return self._allowed(parent.test, False, function)
        elif isinstance(parent, cst.BooleanOperation) and child is parent.right:
            # `a and b` evaluates b only when a is true; `a or b` only when a is false.
            needed = isinstance(parent.operator, cst.And)
            if self._compiling is not None and self._compiling(parent.left) is (not needed):
                return NEVER  # `not is_compiling() and b`: b never runs under compile
            return self._allowed(parent.left, needed, function)
        return BOTH

    # ----- statements ----------------------------------------------------------------
    def _statements_of(self, function: cst.FunctionDef) -> dict[cst.CSTNode, Modes]:
        modes = self._statement_modes.get(function)
        if modes is None:
            modes = self._statement_modes[function] = {}
            _Walker(self, function, modes).block(_body(function.body), self.entry_modes(function))
        return modes


class _Walker:
    """Walks one function's statements, recording the modes each runs in."""

    def __init__(self, paths: PathModes, function: cst.FunctionDef, record: dict) -> None:
        self.paths = paths
        self.function = function
        self.record = record

    def block(self, statements: Sequence[cst.CSTNode], modes: Modes) -> Modes:
        """Record `statements` and return the modes in which control falls out of the block."""
        for statement in statements:
            self.record[statement] = modes
            modes = self.statement(statement, modes)
        return modes

    def statement(self, statement: cst.CSTNode, modes: Modes) -> Modes:
        """Record what `statement` holds; return the modes after it."""
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                self.record[small] = modes
            if any(isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for small in statement.body):
                return NEVER
            return modes
        if isinstance(statement, cst.If):
            return self.if_statement(statement, modes)
        if isinstance(statement, (cst.For, cst.While)):
            self.block(_body(statement.body), modes)
            if statement.orelse is not None:
                self.block(_body(statement.orelse.body), modes)
            return modes  # a loop may run no times, or leave by `break`
        if isinstance(statement, cst.Try):
            self.block(_body(statement.body), modes)
            for handler in statement.handlers:
                self.block(_body(handler.body), modes)
            if statement.orelse is not None:
                self.block(_body(statement.orelse.body), modes)
            if statement.finalbody is not None:
                self.block(_body(statement.finalbody.body), modes)
            return modes
        if isinstance(statement, cst.With):
            return self.block(_body(statement.body), modes)
        if isinstance(statement, cst.FunctionDef):
            return modes  # a nested function is walked as a function of its own
        if isinstance(statement, cst.Match):
            for case in statement.cases:
                self.block(_body(case.body), modes)
            return modes
        return modes

    def if_statement(self, statement: cst.If, modes: Modes) -> Modes:
        self.record[statement.test] = modes
        body_modes = modes & self.paths._allowed(statement.test, True, self.function)
        else_modes = modes & self.paths._allowed(statement.test, False, self.function)
        after = self.block(_body(statement.body), body_modes)
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            self.record[orelse] = else_modes
            return after | self.if_statement(orelse, else_modes)
        if isinstance(orelse, cst.Else):
            return after | self.block(_body(orelse.body), else_modes)
        return after | else_modes


def _body(block: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    return [block]  # a one-line suite: `if x: return y`


def static_condition(
    test: cst.CSTNode, culprit: Optional[cst.CSTNode], is_static: Callable[[cst.BaseExpression], bool]
) -> Optional[str]:
    """The static part a finding needs: `a` of `if a and b:` when `b` (the culprit) breaks.

    The operands of the `and` chain before the one holding the culprit, when Python decides
    them (`is_static`: a dtype, a shape, an argument that is None; or a comparison with a
    string, `config.rope_type != "default"`), joined with "and";
    `self.training` is left to the mode. None when there is no such part.
    """
    if culprit is None or culprit is test or not isinstance(test, cst.BooleanOperation):
        return None
    operands = _and_operands(test)
    holder = next((index for index, operand in enumerate(operands) if _contains(operand, culprit)), None)
    if not holder:
        return None
    before = [operand for operand in operands[:holder]
              if (is_static(operand) or _compares_with_string(operand)) and "self.training" not in _code(operand)]
    return " and ".join(_code(operand) for operand in before) or None


def _compares_with_string(expr: cst.BaseExpression) -> bool:
    """`config.rope_type != "default"`: a tensor compared with a string would raise, so Python decides it."""
    return isinstance(expr, cst.Comparison) and any(
        isinstance(side, (cst.SimpleString, cst.ConcatenatedString))
        for side in (expr.left, *(target.comparator for target in expr.comparisons)))


def _and_operands(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And) and not expr.lpar:
        return _and_operands(expr.left) + _and_operands(expr.right)
    return [expr]


def _contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    return node is target or any(_contains(child, target) for child in node.children)


def _code(node: cst.CSTNode) -> str:
    return " ".join(cst.Module(body=[]).code_for_node(node).split())
