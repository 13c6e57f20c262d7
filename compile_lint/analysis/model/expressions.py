"""Evaluating expressions to value sets (the `Frame`'s half that reads, frames.py holds the statements).

Each expression kind is one method, `ev_<ast class name>`: a new Python feature is one
case here. Calls go to `calls.py`; attribute reads, subscripts and iteration to
`objects.py`; data values combine in the file analysis's lattice (`Kind`).
"""

from __future__ import annotations

import ast
import builtins
import operator
from typing import TYPE_CHECKING, Callable, Optional

from compile_lint.analysis.kinds.lattice import Kind, combine
from compile_lint.analysis.model.arguments import Args
from compile_lint.analysis.model.calls import call, call_values, instantiate, module_forward
from compile_lint.analysis.model.objects import attribute_values, iterate, merge_dict, store_key, subscript
from compile_lint.analysis.model.values import (
    EMPTY,
    FALSE,
    NONE,
    ONLY_UNKNOWN,
    PY,
    TRUE,
    BoundV,
    ClassV,
    ConstV,
    ContainerV,
    ExternalInstanceV,
    ExternalV,
    FlagV,
    FunctionV,
    InstanceV,
    KindV,
    PartialV,
    PatternV,
    TupleV,
    UnknownV,
    Value,
    const,
    join,
    set_truth,
)

if TYPE_CHECKING:
    from compile_lint.analysis.model.heap import Heap
    from compile_lint.analysis.model.program import LoadedModule, Model
    from compile_lint.analysis.model.scopes import Scope
    from compile_lint.analysis.model.values import Node

_BUILTIN_NAMES = frozenset(dir(builtins))
_MAX_STRINGS = 16
_MAX_PAIRS = 16  # value pairs an operator combines one by one
_FOLDED: dict[type, Callable] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
}
_COMPARED: dict[type, Callable] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
# Operator dunders a loaded class may define (`a @ b` on a LinearOperator runs its `__matmul__`).
_DUNDERS: dict[type, str] = {
    ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.MatMult: "__matmul__",
    ast.Div: "__truediv__", ast.FloorDiv: "__floordiv__", ast.Mod: "__mod__", ast.Pow: "__pow__",
}


class Expressions:
    """Expression evaluation for a frame (the frame holds the names, the node and the eager flag)."""

    model: "Model"
    heap: "Heap"
    node: "Node"
    module: "LoadedModule"
    path: str
    scope: "Scope"
    eager: bool
    # While a branch's test runs: the (first, last) lines of the operands an `and`/`or` never evaluated.
    short_circuits: Optional[list] = None

    # The frame's (frames.py) own methods, used here.
    def read_name(self, name: str, read: Optional[ast.AST] = None) -> frozenset:
        raise NotImplementedError

    def write_name(self, name: str, found: frozenset, definition: Optional[int] = None) -> None: ...

    def definitions(self, reaching: frozenset) -> frozenset:
        raise NotImplementedError

    @property
    def flow(self): ...

    def assign(self, target: ast.expr, found: frozenset, value: Optional[ast.expr]) -> None: ...

    def defaults(self, statement, function: FunctionV) -> None: ...

    # ----- calls, for the modules below (objects, externals, entries): they call through the frame -----
    def invoke(self, func: frozenset, args: Args, where: Optional[ast.AST], spelled: Optional[str],
               implicit: bool = False, how: str = "call") -> frozenset:
        """What calling any value of `func` gives (edges from this frame's node at `where`)."""
        return call_values(self, func, args, where, spelled, implicit, how)

    def instantiate(self, cls: ClassV, args: Args, where: Optional[ast.AST], spelled: Optional[str],
                    implicit: bool = False, through_metaclass: bool = True) -> frozenset:
        """Calling class `cls` (its metaclass's `__call__` unless `through_metaclass` is False)."""
        return instantiate(self, cls, args, where, spelled, implicit, through_metaclass)

    def module_forward(self, instance: Value, args: Args, where: Optional[ast.AST],
                       spelled: Optional[str]) -> frozenset:
        """nn.Module.__call__ on `instance`: its class's `forward`."""
        return module_forward(self, instance, args, where, spelled)

    # ----- the one entry -----
    def eval(self, expression: Optional[ast.expr]) -> frozenset:
        """The values `expression` may evaluate to."""
        if expression is None:
            return EMPTY
        handler = getattr(self, "ev_" + type(expression).__name__, None)
        if handler is None:
            for child in ast.iter_child_nodes(expression):
                if isinstance(child, ast.expr):
                    self.eval(child)
            return ONLY_UNKNOWN
        return handler(expression)

    def builtin(self, name: str) -> Optional[frozenset]:
        """The value of a builtin name, None for a name that is no builtin."""
        return frozenset((ExternalV("builtins." + name),)) if name in _BUILTIN_NAMES else None

    def ev_Constant(self, expression: ast.Constant) -> frozenset:
        return frozenset((const(expression.value),))

    def ev_Name(self, expression: ast.Name) -> frozenset:
        return self.read_name(expression.id, expression)

    def ev_Attribute(self, expression: ast.Attribute) -> frozenset:
        return attribute_values(self.model, self.eval(expression.value), expression.attr, self, expression)

    def ev_Call(self, expression: ast.Call) -> frozenset:
        func = self.eval(expression.func)
        args = self.arguments(expression)
        return call(self, func, args, expression, _spelled(expression.func))

    def arguments(self, expression: ast.Call) -> Args:
        """The evaluated arguments of a call."""
        args = Args()
        for argument in expression.args:
            if isinstance(argument, ast.Starred):
                args.starred.append(self.eval(argument.value))
                args.positional_after_star |= bool(args.starred)
            elif args.starred:
                args.starred.append(frozenset((TupleV((self.eval(argument),)),)))
            else:
                args.positional.append(self.eval(argument))
        for keyword in expression.keywords:
            if keyword.arg is None:
                args.double_starred.append(self.eval(keyword.value))
            else:
                args.keywords[keyword.arg] = self.eval(keyword.value)
        args.nodes = expression
        return args

    def ev_BinOp(self, expression: ast.BinOp) -> frozenset:
        return self.binary(expression.op, self.eval(expression.left), self.eval(expression.right), expression)

    def binary(self, op: ast.operator, left: frozenset, right: frozenset, where: ast.AST) -> frozenset:
        """`left op right`: folded for constants, a loaded class's dunder, else the lattice's kind."""
        found: set = set()
        dunder = _DUNDERS.get(type(op))
        plain: list[Value] = []
        for value in left:
            if dunder is not None and isinstance(value, InstanceV):
                method = attribute_values(self.model, frozenset((value,)), dunder, self, where)
                if method:
                    found.update(call_values(self, method, Args(positional=[right]), where, dunder))
                    continue
            if isinstance(value, (ContainerV, TupleV)) and isinstance(op, ast.Add):
                found.add(value)
                continue
            plain.append(value)
        if len(plain) * len(right) > _MAX_PAIRS:
            # Many values on each side: their kinds combine (constants are no longer folded one by one).
            plain = list({value if isinstance(value, PatternV) else _kind_of(value) for value in plain})
            right = frozenset(value if isinstance(value, PatternV) else _kind_of(value) for value in right)
        for value in plain:
            for other in right:
                found.add(_combined(op, value, other))
        return join(found)

    def ev_UnaryOp(self, expression: ast.UnaryOp) -> frozenset:
        operand = self.eval(expression.operand)
        found: set[Value] = set()
        if isinstance(expression.op, ast.Not):
            for value in operand:
                if isinstance(value, FlagV):
                    found.add(FlagV("eager" if value.name == "compiling" else "compiling"))
                    continue
                truth = set_truth((value,), compiling=False)
                found.add(PY if truth is None else ConstV(not truth))
            return frozenset(found)
        for value in operand:
            number = isinstance(value, ConstV) and isinstance(value.value, (int, float))
            if number and not isinstance(value.value, bool):
                found.add(const(-value.value) if isinstance(expression.op, ast.USub) else value)
            else:
                found.add(_kind_of(value))
        return frozenset(found)

    def ev_BoolOp(self, expression: ast.BoolOp) -> frozenset:
        found: set = set()
        stop_on = isinstance(expression.op, ast.Or)  # `or` stops at a true operand, `and` at a false one
        eager = self.eager
        try:
            for index, operand in enumerate(expression.values):
                values = self.eval(operand)
                last = index == len(expression.values) - 1
                truth_eager = set_truth(values, compiling=False)
                truth_compiled = set_truth(values, compiling=True)
                if last:
                    found.update(values)
                    break
                # The operand itself is the result when it stops the chain.
                found.update(value for value in values if set_truth((value,), compiling=False) is not (not stop_on))
                if truth_eager is stop_on and (truth_compiled is stop_on or self.eager):
                    if self.short_circuits is not None:
                        rest = expression.values[index + 1:]
                        self.short_circuits.append((rest[0].lineno, rest[-1].end_lineno or rest[-1].lineno))
                    break
                if truth_compiled is stop_on:
                    self.eager = True  # the operands after it run only eagerly
        finally:
            self.eager = eager
        return join(found)

    def ev_Compare(self, expression: ast.Compare) -> frozenset:
        left = self.eval(expression.left)
        results = set()
        for op, comparator in zip(expression.ops, expression.comparators):
            right = self.eval(comparator)
            results.add(_compared(op, left, right))
            left = right
        if len(results) == 1:
            return frozenset(results)
        if FALSE in results:
            return frozenset((FALSE,))
        kinds = [value.kind for value in results if isinstance(value, KindV)]
        return frozenset((KindV(combine(kinds)) if kinds else PY,))

    def ev_IfExp(self, expression: ast.IfExp) -> frozenset:
        eager_truth, compiled_truth = self.test_truth(expression.test)
        found: set = set()
        for branch, truth_e, truth_c in ((expression.body, eager_truth, compiled_truth),
                                         (expression.orelse, _not(eager_truth), _not(compiled_truth))):
            compiled = truth_c is not False and not self.eager
            if truth_e is False and not compiled:
                continue
            eager = self.eager
            self.eager = eager or not compiled
            try:
                found.update(self.eval(branch))
            finally:
                self.eager = eager
        return join(found)

    def test_truth(self, test: ast.expr) -> tuple[Optional[bool], Optional[bool]]:
        """The truth of a branch's test (eagerly, under Dynamo): each True, False or None (either)."""
        found = self.eval(test)
        return set_truth(found, compiling=False), set_truth(found, compiling=True)

    def ev_Lambda(self, expression: ast.Lambda) -> frozenset:
        scope = self.module.scopes.scope_of(expression)
        function = FunctionV((self.path, scope.qualname))
        self.defaults(expression, function)
        return frozenset((function,))

    def ev_Tuple(self, expression: ast.Tuple) -> frozenset:
        items: list[frozenset] = []
        for element in expression.elts:
            if isinstance(element, ast.Starred):
                spread = self.eval(element.value)
                if len(spread) == 1 and isinstance(next(iter(spread)), TupleV):
                    items.extend(next(iter(spread)).items)
                    continue
                self._container("list", expression, [iterate(self, spread)])
                return frozenset((ContainerV("list", (self.path, expression.lineno, expression.col_offset)),))
            items.append(self.eval(element))
        return frozenset((TupleV(tuple(items)),))

    def ev_List(self, expression: ast.List | ast.Set) -> frozenset:
        elements = []
        positional = isinstance(expression, ast.List)
        for element in expression.elts:
            if isinstance(element, ast.Starred):
                elements.append(iterate(self, self.eval(element.value)))
                positional = False
            else:
                elements.append(self.eval(element))
        kind = "list" if isinstance(expression, ast.List) else "set"
        made = self._container(kind, expression, elements)
        if positional:
            # A list display knows its items by position until something mutates it (`ls[1]()`).
            self.heap.add(("len", made.site), frozenset((const(len(elements)),)))
            for index, found in enumerate(elements):
                self.heap.add(("ei", made.site, index), found)
        return frozenset((made,))

    ev_Set = ev_List

    def _container(self, kind: str, expression: ast.expr, elements: list[frozenset]) -> ContainerV:
        site = (self.path, expression.lineno, expression.col_offset)
        if elements:
            self.heap.add(("e", site), join(*elements))
        return ContainerV(kind, site)

    def ev_Dict(self, expression: ast.Dict) -> frozenset:
        site = (self.path, expression.lineno, expression.col_offset)
        for key, value in zip(expression.keys, expression.values):
            values = self.eval(value)
            if key is None:
                merge_dict(self, site, values)
                continue
            keys = self.eval(key)
            store_key(self, site, keys, values)
            if isinstance(key, ast.Constant):
                self.heap.add(("dve", site, key.value), values)  # the entry as the display made it
        return frozenset((ContainerV("dict", site),))

    def ev_ListComp(self, expression: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> frozenset:
        self._generators(expression.generators)
        kind = "set" if isinstance(expression, ast.SetComp) else "list"
        return frozenset((self._container(kind, expression, [self.eval(expression.elt)]),))

    ev_SetComp = ev_GeneratorExp = ev_ListComp

    def ev_DictComp(self, expression: ast.DictComp) -> frozenset:
        self._generators(expression.generators)
        site = (self.path, expression.lineno, expression.col_offset)
        store_key(self, site, self.eval(expression.key), self.eval(expression.value))
        return frozenset((ContainerV("dict", site),))

    def _generators(self, generators: list[ast.comprehension]) -> None:
        for generator in generators:
            self.assign(generator.target, iterate(self, self.eval(generator.iter)), None)
            for condition in generator.ifs:
                self.eval(condition)

    def ev_Subscript(self, expression: ast.Subscript) -> frozenset:
        flow = self.flow
        reaching = flow.reaching.get(id(expression))
        place = flow.subscript_places.get(id(expression))
        if reaching and place is not None and flow.tracked(place):
            found = self._place_values(reaching, place)
            if found is not None:
                return found
        return subscript(self, self.eval(expression.value), self.eval(expression.slice), expression)

    def _place_values(self, reaching: frozenset, place: tuple) -> Optional[frozenset]:
        """`d["a"]["b"]` from the bindings that reach it: a store to it, or a display bound to a prefix
        (its entries as the display made them). None when a display cannot be followed."""
        found: set = set()
        heap = self.heap
        for definition in reaching:
            if isinstance(definition, int):
                found.update(heap.read(("def", self.node, definition)))
                continue
            if not (isinstance(definition, tuple) and definition[0] == "via"):
                return None
            values = heap.read(("def", self.node, definition[1]))
            for key in place[definition[2]:]:
                following: set = set()
                for value in values:
                    if not (isinstance(value, ContainerV) and value.kind == "dict"):
                        return None
                    following.update(heap.read(("dve", value.site, key)))
                values = frozenset(following)
            found.update(values)
        return frozenset(found)

    def ev_Slice(self, expression: ast.Slice) -> frozenset:
        for part in (expression.lower, expression.upper, expression.step):
            self.eval(part)
        return frozenset((PY,))

    def ev_Starred(self, expression: ast.Starred) -> frozenset:
        return self.eval(expression.value)

    def ev_NamedExpr(self, expression: ast.NamedExpr) -> frozenset:
        found = self.eval(expression.value)
        self.assign(expression.target, found, expression.value)
        return found

    def ev_JoinedStr(self, expression: ast.JoinedStr) -> frozenset:
        """An f-string: its strings when every part is a constant (a few), else a pattern of its known ends."""
        parts: list[Optional[list[str]]] = []
        for value in expression.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append([value.value])
                continue
            found = self.eval(value)
            if isinstance(value, ast.FormattedValue):
                found = self.eval(value.value) if value.format_spec is None and value.conversion == -1 else EMPTY
            texts = [str(item.value) for item in found if isinstance(item, ConstV)
                     and isinstance(item.value, (str, int)) and not isinstance(item.value, bool)]
            parts.append(texts if texts and len(texts) == len(found) else None)
        if all(part is not None for part in parts):
            combined = [""]
            for part in parts:
                combined = [text + piece for text in combined for piece in part]  # type: ignore[union-attr]
                if len(combined) > _MAX_STRINGS:
                    return frozenset((PY,))
            return frozenset(const(text) for text in combined)
        prefix = "".join(part[0] for part in _leading(parts))
        suffix = "".join(part[0] for part in reversed(_leading(list(reversed(parts)))))
        return frozenset((PatternV(prefix, suffix),)) if prefix or suffix else frozenset((PY,))

    def ev_FormattedValue(self, expression: ast.FormattedValue) -> frozenset:
        self.eval(expression.value)
        if expression.format_spec is not None:
            self.eval(expression.format_spec)
        return frozenset((PY,))

    def ev_Await(self, expression: ast.Await) -> frozenset:
        return self.eval(expression.value)

    def ev_Yield(self, expression: ast.Yield) -> frozenset:
        if expression.value is not None:
            self.heap.add(("y", self.node), self.eval(expression.value))
        return ONLY_UNKNOWN

    def ev_YieldFrom(self, expression: ast.YieldFrom) -> frozenset:
        self.heap.add(("y", self.node), iterate(self, self.eval(expression.value)))
        return ONLY_UNKNOWN

    # ----- decorators, context managers -----
    def decorate(self, decorator: frozenset, target: frozenset, where: ast.expr,
                 keep_unknown: bool = False) -> frozenset:
        """`@decorator` applied to `target`: decorators are calls. A loaded decorator gives what it returns
        (nothing yet while it is not evaluated); an external one the model cannot follow keeps the target."""
        if not decorator:
            return target  # a decorator the model cannot find (an unresolved import) keeps what it decorates
        found: set = set()
        for value in decorator:
            result = call_values(self, frozenset((value,)), Args(positional=[target]), where, _spelled(where),
                                 implicit=True)
            known = frozenset(item for item in result if not isinstance(item, UnknownV))
            loaded = isinstance(value, (FunctionV, ClassV, InstanceV)) or (
                isinstance(value, (BoundV, PartialV)) and not isinstance(getattr(value, "function", None), ExternalV))
            if loaded:
                found.update(known)
            elif not known or (keep_unknown and len(known) < len(result)):
                found.update(known | target)
            else:
                found.update(known)
        return join(found)

    def entered(self, manager: frozenset, where: ast.expr) -> frozenset:
        """What `with manager as x` binds: its `__enter__`'s result, the manager for an external one."""
        found: set = set()
        for value in manager:
            if isinstance(value, InstanceV):
                method = attribute_values(self.model, frozenset((value,)), "__enter__", self, where)
                found.update(call_values(self, method, Args(), where, "__enter__", implicit=True) if method else
                             (value,))
            elif isinstance(value, ExternalInstanceV):
                found.add(ExternalInstanceV(value.name + ".__enter__()"))
            else:
                found.add(value)
        return frozenset(found) or ONLY_UNKNOWN


def _leading(parts: list) -> list:
    """The parts before the first that is not one known string."""
    found = []
    for part in parts:
        if part is None or len(part) != 1:
            break
        found.append(part)
    return found


def _spelled(expression: ast.AST) -> Optional[str]:
    """A callee as spelled when it is a dotted name (`self.head.loss`), else None."""
    parts = []
    while isinstance(expression, ast.Attribute):
        parts.append(expression.attr)
        expression = expression.value
    if isinstance(expression, ast.Name):
        parts.append(expression.id)
        return ".".join(reversed(parts))
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name) and expression.func.id == "super":
        parts.append("super()")
        return ".".join(reversed(parts))
    return None


def _not(truth: Optional[bool]) -> Optional[bool]:
    return None if truth is None else not truth


def _kind_of(value: Value) -> Value:
    """The lattice's kind of a value in arithmetic."""
    if isinstance(value, KindV):
        return KindV(value.kind, value.by_default) if value.kind is not Kind.PY else value
    if isinstance(value, ConstV):
        return PY
    if isinstance(value, (ClassV, FunctionV)):
        return PY
    return KindV(Kind.UNKNOWN)


def _combined(op: ast.operator, left: Value, right: Value) -> Value:
    if isinstance(op, ast.Add) and (isinstance(left, (ConstV, PatternV)) or isinstance(right, (ConstV, PatternV))):
        joined = _joined_text(left, right)
        if joined is not None:
            return joined
    if isinstance(left, ConstV) and isinstance(right, ConstV):
        fold = _FOLDED.get(type(op))
        if fold is not None:
            try:
                return const(fold(left.value, right.value))
            except Exception:  # noqa: BLE001 - any failure of Python's own arithmetic: unknown
                return PY
        return PY
    kinds = [_kind_of(value) for value in (left, right)]
    found = combine([kind.kind for kind in kinds if isinstance(kind, KindV)])
    by_default = any(isinstance(kind, KindV) and kind.by_default for kind in kinds)
    return KindV(found, by_default and found is Kind.TENSOR)


def _joined_text(left: Value, right: Value) -> Optional[Value]:
    """`left + right` where one side is a known string or pattern: a pattern of the known ends."""
    texts = [isinstance(side, ConstV) and isinstance(side.value, str) for side in (left, right)]
    if texts == [True, True]:
        return None  # folded as constants
    prefix = _text(left) if texts[0] else left.prefix if isinstance(left, PatternV) else None
    suffix = _text(right) if texts[1] else right.suffix if isinstance(right, PatternV) else None
    if prefix is None and suffix is None:
        return None
    return PatternV(prefix or "", suffix or "")


def _text(value: Value) -> str:
    return value.value if isinstance(value, ConstV) and isinstance(value.value, str) else ""


def _compared(op: ast.cmpop, left: frozenset, right: frozenset) -> Value:
    """The value of one comparison: a constant when every pair decides it, a tensor for tensors."""
    answers: set = set()
    kinds: list[Kind] = []
    for a in left:
        for b in right:
            answer = _decided(op, a, b)
            if answer is not None:
                answers.add(answer)
            elif isinstance(a, KindV) or isinstance(b, KindV):
                kinds += [value.kind for value in (a, b) if isinstance(value, KindV)]
                answers.add(None)
            else:
                answers.add(None)
    if len(answers) == 1 and None not in answers:
        return TRUE if answers.pop() else FALSE
    if kinds and combine(kinds) in (Kind.TENSOR, Kind.MAYBE_TENSOR):
        return KindV(combine(kinds))
    return PY


def _decided(op: ast.cmpop, a: Value, b: Value) -> Optional[bool]:
    """`a op b` when the values decide it (identity of None, constants), else None."""
    if isinstance(op, (ast.Is, ast.IsNot)):
        if a == NONE or b == NONE:
            other = b if a == NONE else a
            if other == NONE:
                same = True
            elif isinstance(other, (ConstV, FunctionV, ClassV, InstanceV, ContainerV, TupleV, ExternalInstanceV)):
                same = False
            elif isinstance(other, KindV) and other.kind is not Kind.MAYBE_TENSOR and other.kind is not Kind.UNKNOWN:
                same = False
            else:
                return None
            return same if isinstance(op, ast.Is) else not same
        return None
    if isinstance(a, ConstV) and isinstance(b, ConstV):
        compare = _COMPARED.get(type(op))
        if compare is not None:
            try:
                return bool(compare(a.value, b.value))
            except Exception:  # noqa: BLE001 - incomparable constants: unknown
                return None
    return None
