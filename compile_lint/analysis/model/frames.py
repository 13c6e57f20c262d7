"""Evaluating one node: a module's code, or a function in a context, statement by statement.

Locals are flow-insensitive (a name holds every value any of its bindings gives it, in
that context), which is what a fixed point over re-evaluations needs. Branches are not:
a test a constant decides (`if _DEBUG:`, `if verbose:` where every call passes False,
`if kwargs:` where no call passes keywords) skips the branch it rules out, and a test
that differs between eager runs and Dynamo's trace (`if not torch.compiler.is_compiling():`)
runs its branch as eager-only: the calls there never join the traced set. The names
follow Python's scoping (scopes.py); expressions are `expressions.py`'s.
"""

from __future__ import annotations

import ast
from typing import Optional

from compile_lint.analysis.kinds.lattice import Kind
from compile_lint.analysis.model.expressions import Expressions
from compile_lint.analysis.model.objects import attribute_values, iterate, store_attribute, store_subscript
from compile_lint.analysis.model.program import LoadedModule, Model
from compile_lint.analysis.model.scopes import Scope, default_nodes
from compile_lint.analysis.model.values import (
    EMPTY,
    NONE,
    ONLY_UNKNOWN,
    ClassV,
    ExternalInstanceV,
    ExternalV,
    FunctionV,
    InstanceV,
    KindV,
    ModuleV,
    Node,
    TupleV,
    Value,
    join,
    set_truth,
)

_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def evaluate_node(model: Model, node: Node) -> None:
    """Evaluate `node` once (its cells grow; nodes that read them are queued again)."""
    module = model.module_of(node)
    if module is None:
        return
    model.skipped.pop(node, None)  # a later evaluation skips no more than an earlier one: keep the last
    value = node[0]
    if isinstance(value, ModuleV):
        frame = Frame(model, node, module, module.scopes.module)
        if node[1]:
            # A library module's global, read: only the statements that bind it run (read lazily, as
            # the names they need are read in turn), never the whole library's import graph.
            name = node[1][0][1].value  # type: ignore[attr-defined]
            frame.only_name = name
            for statement in module.scopes.module_bindings(name):
                try:
                    frame.statement(statement)
                except RecursionError:
                    continue
            return
        frame.block(module.tree.body)
        return
    for scope in model.definitions(value.key):
        frame = Frame(model, node, module, scope)
        function = scope.function
        if isinstance(function, ast.Lambda):
            frame.add_return(frame.eval(function.body))
            continue
        assert function is not None
        exits = frame.block(function.body)
        if not exits:
            frame.add_return(frozenset((NONE,)))


class Frame(Expressions):
    """The state of one evaluation: where names live, whether the code runs only eagerly."""

    def __init__(self, model: Model, node: Node, module: LoadedModule, scope: Scope) -> None:
        self.model = model
        self.heap = model.heap
        self.node = node
        self.module = module
        self.path = module.path
        self.scope = scope
        self.eager = False  # in a branch only eager runs take: its calls are not traced
        self.class_key: Optional[tuple[str, str]] = None  # the class whose body is running
        self.last_test: dict[int, tuple[Optional[bool], Optional[bool]]] = {}  # if statement -> its test's truth
        self.only_name: Optional[str] = None  # a library module's node that runs the bindings of one name

    # ----- names -----
    def read_name(self, name: str, read: Optional[ast.AST] = None) -> frozenset:
        """The values `name` may hold here (at the read `read`: only what its reaching bindings gave it),
        found as Python finds it (LEGB)."""
        scope = self.scope
        heap = self.heap
        if read is not None and (scope.kind != "class" or name in scope.local_names) and not (
                scope.kind == "module" and self.node[1]):
            flow = self.flow
            reaching = flow.reaching.get(id(read))
            if reaching and flow.tracked((name,)):
                return self.definitions(reaching)
        if scope.kind == "class" and self.class_key is not None and name in scope.local_names:
            found = heap.read(("ca", self.class_key, name))
            if found:
                return found
        elif scope.kind in ("function", "lambda") and self.module.scopes.local(scope, name):
            return heap.read(("l", self.node, name))
        if name not in scope.global_names:
            enclosing = scope.enclosing_function(name)
            if enclosing is not None:
                return heap.read(("la", (self.path, enclosing.qualname), name))
        found = heap.read(("g", self.path, name))
        if found:
            return found
        if self.module.library and name in self.module.scopes.module.local_names:
            self.model.library_global(self.path, name)  # its binding runs; this read waits for it
            return EMPTY
        if name == "__name__":
            return frozenset((ExternalV("builtins.__name__"),))
        builtin = self.builtin(name)
        return builtin if builtin is not None else EMPTY

    @property
    def flow(self):
        """The reaching definitions of the scope running now."""
        return self.module.scopes.flow(self.scope)

    def definitions(self, reaching: frozenset) -> frozenset:
        """The values the bindings `reaching` gave (a parameter's: what calls passed)."""
        heap = self.heap
        found: set = set()
        for definition in reaching:
            if isinstance(definition, tuple) and definition[0] == "param":
                found.update(heap.read(("p", self.node, definition[1])))
            elif isinstance(definition, int):
                found.update(heap.read(("def", self.node, definition)))
        return frozenset(found)

    def write_name(self, name: str, found: frozenset, definition: Optional[int] = None) -> None:
        """Bind `name` here to `found` (added to what it holds); `definition` is the binding's node id."""
        scope = self.scope
        heap = self.heap
        if definition is not None:
            heap.add(("def", self.node, definition), found)
        if scope.kind == "class" and self.class_key is not None:
            heap.add(("ca", self.class_key, name), found)
            return
        if scope.kind in ("function", "lambda"):
            if name in scope.nonlocal_names:
                enclosing = scope.enclosing_function(name)
                if enclosing is not None:
                    heap.add(("la", (self.path, enclosing.qualname), name), found)
                return
            if name not in scope.global_names:
                heap.add(("l", self.node, name), found)
                if scope.has_nested:
                    heap.add(("la", (self.path, scope.qualname), name), found)
                return
        heap.add(("g", self.path, name), found)

    def add_return(self, found: frozenset) -> None:
        """What the function returns."""
        self.heap.add(("r", self.node), found)

    # ----- statements -----
    def block(self, body: list[ast.stmt]) -> bool:
        """Run a statement list; whether it always leaves (return, raise, break, continue) at its end."""
        eager = self.eager
        try:
            for index, statement in enumerate(body):
                try:
                    self.statement(statement)
                except RecursionError:
                    continue
                if isinstance(statement, _EXITS):
                    return True
                if isinstance(statement, ast.If) and not statement.orelse and statement.body \
                        and isinstance(statement.body[-1], _EXITS):
                    eager_truth, compiled_truth = self.last_test.get(id(statement), (None, None))
                    leaves_compiled = compiled_truth is True or self.eager
                    if leaves_compiled and eager_truth is True:
                        # Every run leaves here (`if True: return`): the rest of the block never runs.
                        if index + 1 < len(body):
                            self.model.skipped.setdefault(self.node, set()).add(
                                (body[index + 1].lineno, body[-1].end_lineno or body[-1].lineno))
                        return True
                    if compiled_truth is True:
                        self.eager = True  # `if is_compiling(): return x`: the rest runs only eagerly
            return False
        finally:
            self.eager = eager

    def branch(self, body: list[ast.stmt], runs_eagerly: Optional[bool], runs_compiled: Optional[bool]) -> bool:
        """Run `body` if some run takes it (eager-only when only eager runs do); whether it always leaves."""
        compiled = runs_compiled is not False and not self.eager
        if runs_eagerly is False and not compiled:
            if body:
                self.model.skipped.setdefault(self.node, set()).add(
                    (body[0].lineno, body[-1].end_lineno or body[-1].lineno))
            return False
        eager = self.eager
        self.eager = eager or not compiled
        try:
            return self.block(body)
        finally:
            self.eager = eager

    def statement(self, statement: ast.stmt) -> None:
        """Run one statement."""
        handler = getattr(self, "do_" + type(statement).__name__, None)
        if handler is not None:
            handler(statement)
        else:
            for child in ast.iter_child_nodes(statement):
                if isinstance(child, ast.expr):
                    self.eval(child)

    def do_Expr(self, statement: ast.Expr) -> None:
        self.eval(statement.value)
        call = statement.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "update" \
                and len(call.args) == 1 and isinstance(call.args[0], ast.Dict):
            # `d.update({"a": f})` binds d["a"] for the flow of places (flow.py).
            for key, value in zip(call.args[0].keys, call.args[0].values):
                if isinstance(key, ast.Constant):
                    self.heap.add(("def", self.node, id(key)), self.eval(value))

    def do_Return(self, statement: ast.Return) -> None:
        found = self.eval(statement.value) if statement.value is not None else frozenset((NONE,))
        if not self.eager:
            # What an eager-only branch returns (`if not is_compiling(): return Debug()`) is never a
            # value in the trace; the model keeps one view of a function's return, the traced one.
            self.add_return(found)

    def do_Assign(self, statement: ast.Assign) -> None:
        found = self.eval(statement.value)
        for target in statement.targets:
            self.assign(target, found, statement.value)

    def do_AnnAssign(self, statement: ast.AnnAssign) -> None:
        if statement.value is not None:
            self.assign(statement.target, self.eval(statement.value), statement.value)

    def do_AugAssign(self, statement: ast.AugAssign) -> None:
        target = statement.target
        current = self.eval(ast.Subscript(target.value, target.slice, ast.Load(), lineno=target.lineno,
                                          col_offset=target.col_offset) if isinstance(target, ast.Subscript) else
                            ast.Attribute(target.value, target.attr, ast.Load(), lineno=target.lineno,
                                          col_offset=target.col_offset) if isinstance(target, ast.Attribute) else
                            target) if not isinstance(target, ast.Name) else self.read_name(target.id)
        self.assign(statement.target, self.binary(statement.op, current, self.eval(statement.value), statement),
                    None)

    def do_If(self, statement: ast.If) -> None:
        eager_truth, compiled_truth = self.branch_test(statement)
        self.last_test[id(statement)] = (eager_truth, compiled_truth)
        self.branch(statement.body, eager_truth, compiled_truth)
        self.branch(statement.orelse, _negated(eager_truth), _negated(compiled_truth))

    def branch_test(self, statement: ast.If | ast.While) -> tuple[Optional[bool], Optional[bool]]:
        """The truth of an `if`/`while` test; the operands of an `and`/`or` in it that no run evaluates (a
        constant stopped the chain: `if FLAG and x.sum() > 0:` with FLAG False) are skipped code, when they
        share no line with the branch."""
        outer, self.short_circuits = self.short_circuits, []
        try:
            found = self.eval(statement.test)
            truth = set_truth(found, compiling=False), set_truth(found, compiling=True)
            if not self.eager and any(isinstance(value, KindV) and value.kind is Kind.TENSOR for value in found):
                self.model.data_reads.setdefault(self.node, set()).add(("branch", statement.lineno))
            first_body = statement.body[0].lineno if statement.body else None
            for first, last in self.short_circuits:
                if first_body is None or last < first_body:
                    self.model.skipped.setdefault(self.node, set()).add((first, last))
            return truth
        finally:
            self.short_circuits = outer

    def do_While(self, statement: ast.While) -> None:
        eager_truth, compiled_truth = self.branch_test(statement)
        self.branch(statement.body, eager_truth, compiled_truth)
        self.block(statement.orelse)

    def do_For(self, statement: ast.For | ast.AsyncFor) -> None:
        self.assign(statement.target, iterate(self, self.eval(statement.iter)), None)
        self.block(statement.body)
        self.block(statement.orelse)

    do_AsyncFor = do_For

    def do_With(self, statement: ast.With | ast.AsyncWith) -> None:
        for item in statement.items:
            manager = self.eval(item.context_expr)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, self.entered(manager, item.context_expr), None)
        self.block(statement.body)

    do_AsyncWith = do_With

    def do_Try(self, statement: ast.Try) -> None:
        self.block(statement.body)
        for handler in statement.handlers:
            if handler.type is not None:
                caught = self.eval(handler.type)
                if handler.name:
                    self.write_name(handler.name, _raised(caught), id(handler))
            self.block(handler.body)
        self.block(statement.orelse)
        self.block(statement.finalbody)

    do_TryStar = do_Try

    def do_Match(self, statement: ast.Match) -> None:
        subject = self.eval(statement.subject)
        for case in statement.cases:
            for node in ast.walk(case.pattern):
                name = getattr(node, "name", None)
                if isinstance(name, str):
                    self.write_name(name, subject | ONLY_UNKNOWN)
            if case.guard is not None:
                self.eval(case.guard)
            self.block(case.body)

    def do_Import(self, statement: ast.Import) -> None:
        for alias in statement.names:
            if alias.asname:
                self.write_name(alias.asname, self.model.import_module(alias.name, self.path, statement.lineno),
                                id(alias))
            else:
                top = alias.name.split(".")[0]
                if "." in alias.name:
                    self.model.import_module(alias.name, self.path, statement.lineno)  # loads the submodule
                self.write_name(top, self.model.import_module(top, self.path, statement.lineno), id(alias))

    def do_ImportFrom(self, statement: ast.ImportFrom) -> None:
        base = "." * statement.level + (statement.module or "")
        for alias in statement.names:
            if alias.name == "*":
                self.star_import(base, statement.lineno)
                continue
            # `from pkg import name` is the package's attribute `name`, else its submodule `name`.
            package = self.model.import_module(base, self.path, statement.lineno) if base.strip(".") or \
                statement.level else EMPTY
            if any(isinstance(value, ModuleV) for value in package):
                found = attribute_values(self.model, package, alias.name, self, statement)
            else:
                qualified = f"{base}.{alias.name}" if statement.module or statement.level == 0 else base + alias.name
                found = self.model.import_module(qualified, self.path, statement.lineno)
            self.write_name(alias.asname or alias.name, found, id(alias))

    def star_import(self, base: str, line: int) -> None:
        """`from m import *`: every public global of m, as m binds it."""
        for value in self.model.import_module(base, self.path, line):
            if not isinstance(value, ModuleV):
                continue
            module = self.model.modules.get(value.path)
            if module is None:
                continue
            if not module.library:
                self.model.run_module(value.path)
            names = [self.only_name] if self.only_name is not None else sorted(module.scopes.module.local_names)
            for name in names:
                if module.library:
                    self.model.library_global(value.path, name)
                if not name.startswith("_"):
                    found = self.heap.read(("g", value.path, name))
                    if found:
                        self.write_name(name, found)

    def do_FunctionDef(self, statement: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        scope = self.module.scopes.scope_of(statement)
        function = FunctionV((self.path, scope.qualname))
        self.defaults(statement, function)
        if isinstance(statement, ast.Lambda):
            return
        found: frozenset = frozenset((function,))
        for decorator in reversed(statement.decorator_list):
            found = self.decorate(self.eval(decorator), found, decorator)
        self.write_name(statement.name, found, id(statement))

    do_AsyncFunctionDef = do_FunctionDef

    def defaults(self, statement: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, function: FunctionV) -> None:
        """Evaluate a function's parameter defaults (where it is defined, as Python does)."""
        for name, default in default_nodes(statement).items():
            self.heap.add(("d", function.key, name), self.eval(default))

    def do_ClassDef(self, statement: ast.ClassDef) -> None:
        scope = self.module.scopes.scope_of(statement)
        key = (self.path, scope.qualname)
        for index, base in enumerate(statement.bases):
            self.heap.add(("cb", key, index), self.eval(base))
        for keyword in statement.keywords:
            found = self.eval(keyword.value)
            if keyword.arg == "metaclass":
                self.heap.add(("cm", key), found)
            elif keyword.arg == "total":
                self.heap.add(("ca", key, "__total__"), found)
        outer = (self.scope, self.class_key, self.eager)
        self.scope, self.class_key = scope, key
        try:
            self.block(statement.body)
        finally:
            self.scope, self.class_key, self.eager = outer
        found = frozenset((ClassV(key),))
        for decorator in reversed(statement.decorator_list):
            decorated = self.eval(decorator)
            self.heap.add(("cd", key), decorated)
            found = self.decorate(decorated, found, decorator, keep_unknown=True)
        self.write_name(statement.name, found, id(statement))

    def do_Raise(self, statement: ast.Raise) -> None:
        if statement.exc is not None:
            raised = self.eval(statement.exc)
            if not isinstance(statement.exc, ast.Call):
                # `raise A` makes an instance of class A, as `raise A()` does.
                from compile_lint.analysis.model.calls import Args, instantiate  # noqa: PLC0415 - one call

                for value in raised:
                    if isinstance(value, ClassV):
                        instantiate(self, value, Args(), statement.exc, None, implicit=True)
        if statement.cause is not None:
            self.eval(statement.cause)

    def do_Assert(self, statement: ast.Assert) -> None:
        self.eval(statement.test)
        if statement.msg is not None:
            self.eval(statement.msg)

    def do_Global(self, statement: ast.stmt) -> None:
        return None

    do_Nonlocal = do_Pass = do_Break = do_Continue = do_Global

    # ----- assignment targets -----
    def assign(self, target: ast.expr, found: frozenset, value: Optional[ast.expr]) -> None:
        """Bind `target` (a name, attribute, subscript or unpacking) to `found`."""
        if isinstance(target, ast.Name):
            self.write_name(target.id, found, id(target))
        elif isinstance(target, ast.Attribute):
            store_attribute(self, self.eval(target.value), target.attr, found)
        elif isinstance(target, ast.Subscript):
            store_subscript(self, self.eval(target.value), self.eval(target.slice), found)
            if id(target) in self.flow.subscript_places:
                self.heap.add(("def", self.node, id(target)), found)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target.elts, found)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, found, None)

    def unpack(self, targets: list[ast.expr], found: frozenset) -> None:
        """`a, b = value` / `a, *rest = value`: items by position where the tuple is known, else any element."""
        starred = next((index for index, target in enumerate(targets) if isinstance(target, ast.Starred)), None)
        by_position: list[set] = [set() for _ in targets]
        rest = [value for value in found if not (isinstance(value, TupleV) and starred is None
                                                 and len(value.items) == len(targets))]
        for value in found:
            if isinstance(value, TupleV) and starred is None and len(value.items) == len(targets):
                for index, item in enumerate(value.items):
                    by_position[index].update(item)
        elements = iterate(self, frozenset(rest)) if rest else EMPTY
        for index, target in enumerate(targets):
            item = join(by_position[index], elements)
            if index == starred:
                self.assign(target, frozenset((TupleV((item,)),)) if item else EMPTY, None)
            else:
                self.assign(target, item, None)


def _negated(truth: Optional[bool]) -> Optional[bool]:
    return None if truth is None else not truth


def _raised(caught: frozenset) -> frozenset:
    """What `except E as e` binds `e` to: an instance of each class caught."""
    found: set[Value] = set()
    for value in caught:
        if isinstance(value, ClassV):
            found.add(InstanceV(value.key))
        elif isinstance(value, ExternalV):
            found.add(ExternalInstanceV(value.name))
        elif isinstance(value, TupleV):
            for item in value.items:
                found.update(_raised(item))
    return frozenset(found) or ONLY_UNKNOWN
