"""Per-file state shared by every rule: the parse and the analyses, each computed once, lazily.

This is the analysis's public face: rules ask the context, never a `_name` of an analysis.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Callable, Hashable, Iterable, Optional, TypeVar, cast

import libcst as cst

from compile_lint.analysis.file import module_facts
from compile_lint.analysis.file.eager_branches import predicate_sense
from compile_lint.analysis.file.module_index import ModuleIndex
from compile_lint.analysis.file.paths import Modes, PathModes
from compile_lint.analysis.file.regions import Regions, find_regions
from compile_lint.analysis.kinds.facts import AssignedValue, Facts, Kind
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.analysis.syntax.calls import calls_in
from compile_lint.analysis.syntax.codegen import render_with_spans
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.walk import children

if TYPE_CHECKING:  # the engine passes it; importing it here would load the call graph
    from compile_lint.analysis.project.reach import FileReach

_Built = TypeVar("_Built")


class FileContext:
    """One parsed file and the analyses rules share; each is computed lazily, once.

    The engine keeps `function_stack` in step with its walk, so `function` and
    `owner_class` name where the rule being called is looking.
    """

    def __init__(
        self, path: str, module: cst.Module, module_bases: Iterable[str] = (), source: Optional[str] = None,
        symbols: Optional[SymbolIndex] = None, branch_fix: Optional[str] = None,
        reach: Optional[FileReach] = None,
    ) -> None:
        self.path = path
        self.module = module
        self.source = source  # the module's text, when known: lets analyses skip work
        self.module_bases = tuple(module_bases)
        # Other files' classes and functions (None: this file is analysed on its own).
        self.symbols = symbols
        # What the project's entry points reach in this file (analysis.project.reach.FileReach), if known.
        self.reach = reach
        self.function_stack: list[cst.FunctionDef] = []
        self._function_parents: dict[cst.FunctionDef, dict[cst.CSTNode, cst.CSTNode]] = {}
        self._calls_in: dict[cst.FunctionDef, list[cst.Call]] = {}
        # Top-level statement -> (lines before it, its lines, its nodes' spans); None where it cannot be placed.
        self._placed: dict[cst.CSTNode, Optional[tuple[int, list[str], dict]]] = {}
        self._inherited_makers: dict[tuple[cst.ClassDef, str], Optional[tuple[Optional[str], ...]]] = {}
        self._memo: dict[Hashable, object] = {}
        # The `tensor-branch-fix` setting ("where" | "cond"), None for the rules' default.
        self.branch_fix = branch_fix

    def memo(self, key: Hashable, build: Callable[[], _Built]) -> _Built:
        """`build()`, computed once per file for `key`: what the layers above keep per file
        (the branch rewrites' `Scope` of a function), shared by every rule that asks."""
        if key not in self._memo:
            self._memo[key] = build()
        return cast(_Built, self._memo[key])

    # ----- analyses ------------------------------------------------------------------
    @cached_property
    def imports(self) -> ImportMap:
        """Local names resolved to qualified names."""
        return ImportMap(self.module)

    @cached_property
    def regions(self) -> Regions:
        """The functions torch.compile traces in this file."""
        return find_regions(self.module, self.imports, self.module_bases, self.source, self.symbols, self.path,
                            self.reach)

    @cached_property
    def facts(self) -> Facts:
        """Kinds of expressions inside traced functions."""
        return Facts(self.imports, self.regions, self.call_returns if self.reach is not None else None,
                     self.type_aliases)

    @cached_property
    def type_aliases(self) -> dict[str, cst.BaseExpression]:
        """Module-level type aliases (`Size_ = Tuple[int, int]`: a subscripted generic), by name."""
        return {name: values[-1] for name, values in self.module_assignments.items()
                if isinstance(values[-1], cst.Subscript)}

    def calls_in(self, function: cst.FunctionDef) -> list[cst.Call]:
        """The calls `function` makes under compile: nested defs and eager-only branches left out."""
        found = self._calls_in.get(function)
        if found is None:
            found = self._calls_in[function] = calls_in(function, self.regions.eager_only)
        return list(found)

    # ----- what the program model found of calls into other files ---------------------
    def call_returns(self, call: cst.Call, function: cst.FunctionDef) -> Optional[frozenset]:
        """The abstract values `call` (made in traced `function`) returns when it runs functions of other files,
        joined over the contexts the program model evaluated them in; None when the model has no answer."""
        site = self._model_site(call, function)
        return self.reach.call_returns(*site) if site is not None and self.reach is not None else None

    def helpers_reading_item(self, call: cst.Call, function: cst.FunctionDef) -> tuple[tuple[str, str, int], ...]:
        """(path, qualified name, `def` line) of each function of another file `call` (made in traced
        `function`) runs that reads tensor data with `.item()` on a tensor on every run (JIT201)."""
        site = self._model_site(call, function)
        return self.reach.helpers_reading_item(*site) if site is not None and self.reach is not None else ()

    def _model_site(self, call: cst.Call, function: cst.FunctionDef) -> Optional[tuple[int, int, str]]:
        """`call` as the program model keys it: (line, column in UTF-8 bytes, callee as spelled)."""
        func = call.func
        spelled = dotted_name(func)
        if spelled is None or spelled not in self._answered_spellings or (
                isinstance(func, (cst.Name, cst.Attribute)) and func.lpar):
            return None  # `(f)(x)`: the model's column is the parenthesis's
        top = self._top_statements.get(function)
        placed = self._place(top) if top is not None else None
        span = placed[2].get(id(func)) if placed is not None else None
        if placed is None or span is None:
            return None
        shift, lines, _ = placed
        text = lines[span[0] - 1] if span[0] - 1 < len(lines) else ""
        return span[0] + shift, len(text[:span[1]].encode("utf-8", "surrogatepass")), spelled

    @cached_property
    def _answered_spellings(self) -> frozenset[str]:
        """The callees, as spelled, of the calls the program model answered for this file."""
        return frozenset(site[2] for site in self.reach.calls) if self.reach is not None else frozenset()

    @cached_property
    def _top_statements(self) -> dict[cst.FunctionDef, cst.CSTNode]:
        """Each function of the module (nested ones too) -> the top-level statement holding it."""
        found: dict[cst.FunctionDef, cst.CSTNode] = {}
        for top in self.module.body:
            pending: list[cst.CSTNode] = [top]
            while pending:
                node = pending.pop()
                if isinstance(node, cst.FunctionDef):
                    found[node] = top
                pending.extend(child for child in children(node) if isinstance(child, _HOLDS_STATEMENTS))
        return found

    def _place(self, top: cst.CSTNode) -> Optional[tuple[int, list[str], dict]]:
        """A top-level statement rendered alone and placed in the source by its text (once): (the number of
        lines before it, its lines, its nodes' spans counted from 1 at its first line); None when its text
        is not in the source exactly once, at the start of a line."""
        if top not in self._placed:
            source = self.source if self.source is not None else self.module.code
            text, spans, _ = render_with_spans(self.module, top)
            offset = source.find(text)
            if offset < 0 and text.endswith("\n") and source.endswith(text[:-1]):
                text = text[:-1]  # the last statement of a file without a final line break
                offset = source.find(text)
            unique = offset >= 0 and source.find(text, offset + 1) < 0 and (
                offset == 0 or source[offset - 1] in "\r\n") and source.count("\r") == source.count("\r\n")
            self._placed[top] = (source.count("\n", 0, offset), text.splitlines(), spans) if unique else None
        return self._placed[top]

    @cached_property
    def paths(self) -> PathModes:
        """The modes (`self.training` or not) in which traced code runs."""
        facts = self.facts
        return PathModes(self.regions.roots | set(self.regions.external), lambda: self.parents, facts.call_sites,
                         facts.assignments, lambda test: predicate_sense(test, self.imports), self._parents_within)

    def _parents_within(self, function: cst.FunctionDef) -> dict[cst.CSTNode, cst.CSTNode]:
        """Child node -> parent node below `function` (the module's map once that is built)."""
        if "parents" in self.__dict__:
            return self.parents
        local = self._function_parents.get(function)
        if local is None:
            local = self._function_parents[function] = _parents_below(function)
        return local

    @cached_property
    def module_index(self) -> ModuleIndex:
        """Calls, assignments, functions, decorators and loops of the whole module (one walk)."""
        return ModuleIndex(self.module)

    @cached_property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """Child node -> parent node, for the whole module (built on first use)."""
        return _parents_below(self.module)

    # ----- module-wide facts ---------------------------------------------------------
    @cached_property
    def compiled_callables(self) -> dict[str, Optional[cst.Call]]:
        """Name (`model`, `self.model`, a decorated `fn`) -> its torch.compile call (None: bare decorator)."""
        return module_facts.compiled_callables(self.module_index, self.imports)

    @cached_property
    def compiled_bindings(self) -> dict[str, list[tuple[cst.CSTNode, Optional[cst.Call]]]]:
        """Name -> every (Assign or decorated FunctionDef, torch.compile call) binding it, in source order."""
        return module_facts.compiled_bindings(self.module_index, self.imports)

    @cached_property
    def fake_registrations(self) -> set[str]:
        """Ops this file gives a fake implementation, by Python name or "ns::name"."""
        return module_facts.fake_registrations(self.module_index, self.imports)

    @cached_property
    def library_ops(self) -> module_facts.LibraryOps:
        """Ops defined through `torch.library`, with the dispatch keys of their kernels."""
        return module_facts.library_ops(self.module_index, self.imports)

    @cached_property
    def native_handles(self) -> module_facts.NativeHandles:
        """Names and `self.` attributes bound to a loaded native library (ctypes, cpp_extension)."""
        if self.source is not None and not any(word in self.source for word in module_facts.NATIVE_LOADER_WORDS):
            return module_facts.NativeHandles(self.imports)  # no loader can be named: no module walk
        return module_facts.native_handles(self.module_index, self.imports)

    @cached_property
    def module_assignments(self) -> dict[str, list[cst.BaseExpression]]:
        """Top-level `NAME = value` bindings (also inside top-level if/try blocks)."""
        return module_facts.module_assignments(self.module)

    def calls_named(self, name: str) -> list[cst.Call]:
        """Every call in the module whose callee is spelled `name` (`f`, `self.model`)."""
        return [call for call in self.module_index.calls if dotted_name(call.func) == name]

    # ----- where the walk is ---------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The node that contains `node`, or None for the module."""
        if "parents" not in self.__dict__ and self.function_stack:
            # Rules ask about nodes near the walk: the outermost function being visited
            # usually holds them, and its parent map is much smaller than the module's.
            root = self.function_stack[0]
            local = self._function_parents.get(root)
            if local is None:
                local = self._function_parents[root] = _parents_below(root)
            found = local.get(node)
            if found is not None:
                return found
        return self.parents.get(node)

    @property
    def function(self) -> Optional[cst.FunctionDef]:
        """The innermost function being visited."""
        return self.function_stack[-1] if self.function_stack else None

    @property
    def owner_class(self) -> Optional[cst.ClassDef]:
        """The class whose method is being visited, if any."""
        function = self.function
        return self.regions.owner_class.get(function) if function is not None else None

    def modes_at(self, node: cst.CSTNode, function: Optional[cst.FunctionDef] = None) -> frozenset:
        """The modes (`paths.TRAINING`, `paths.INFERENCE`) in which `node` runs under compile.

        A local in `node` that is a tensor only after some bindings ran (`skip = False`,
        `if self.training: skip = torch.rand([]) < p`), or only past a short circuit (`skip =
        self.training and p < drop`), narrows them to the modes in which those run, as far
        as the kinds asked so far know.
        """
        function = function or self.function
        modes = self.paths.modes_at(node, function)
        stack = [node]
        while stack:
            current = stack.pop()
            sources = self.facts.conditional_tensor_bindings(current) or self._short_circuit_tensors(current, function)
            if sources:
                reached: Modes = frozenset()
                for source in sources:
                    reached |= self.paths.modes_at(source, function)
                modes &= reached
            stack.extend(children(current))
        return modes

    def tensor_on_some_paths(self, expr: cst.BaseExpression) -> bool:
        """True for a local read that is a tensor only when some bindings ran (`skip = False`,
        then `if self.training: skip = torch.rand([]) < p`): on the other paths it is a Python
        value, so a rewrite that calls tensor methods on it would fail there."""
        self.kind(expr)  # the flow-sensitive kind records the conditional bindings
        return bool(self.facts.conditional_tensor_bindings(expr)) or bool(
            self._short_circuit_tensors(expr, self.function))

    def _short_circuit_tensors(self, node: cst.CSTNode, function: Optional[cst.FunctionDef]) -> list[cst.CSTNode]:
        """For a local bound only to `a and <tensor>` (`skip = self.training and p < drop`), the tensor parts.

        The local is a tensor only when `a` held, so the modes that evaluate the tensor part
        are the ones it is a tensor in.
        """
        if not isinstance(node, cst.Name) or function is None:
            return []
        values = self.local_values(node.value, function)
        if not values or not all(isinstance(v, cst.BooleanOperation) and isinstance(v.operator, cst.And)
                                 for v in values):
            return []
        return [v.right for v in values]  # type: ignore[union-attr]

    # ----- questions about expressions -----------------------------------------------
    def kind(self, expr: cst.BaseExpression) -> Kind:
        """The kind of `expr` in the function being visited."""
        return self.facts.kind(expr, self.function)

    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """The qualified name `expr` refers to, through the file's imports."""
        return self.imports.qualname(expr)

    def argument_kind(self, name: str, function: Optional[cst.FunctionDef] = None) -> Optional[Kind]:
        """What this file's traced calls of `function` (default: the one visited) pass to parameter `name`.

        None when no call with a certain target passes it (an entry point, or a helper
        called only through names the analysis cannot follow).
        """
        function = function or self.function
        return self.facts.argument_kind(function, name) if function is not None else None

    def call_target(self, call: cst.Call, function: Optional[cst.FunctionDef] = None) -> Optional[cst.FunctionDef]:
        """The function of this file `call` certainly runs: a helper, `self.method`, a submodule's forward."""
        function = function or self.function
        return self.facts.call_target(call, function) if function is not None else None

    def returned_values(self, function: cst.FunctionDef) -> list[cst.BaseExpression]:
        """What `function`'s `return` statements return."""
        return self.facts.returned_values(function)

    def local_assignments(self, function: Optional[cst.FunctionDef] = None) -> dict[str, list[AssignedValue]]:
        """Local name -> what `function` (default: the one being visited) assigns to it.

        Flow-insensitive and in source order; nested functions and classes are not
        looked into. Besides expressions, a value may be a tuple describing how the
        name was bound (see `facts.AssignedValue`).
        """
        function = function or self.function
        return self.facts.assignments(function) if function is not None else {}

    def local_values(self, name: str, function: Optional[cst.FunctionDef] = None) -> list[AssignedValue]:
        """What `function` (default: the one being visited) assigns to local `name`."""
        return self.local_assignments(function).get(name, [])

    def inherited_makers(self, expr: cst.BaseExpression) -> Optional[list[Optional[str]]]:
        """For `self.attr` that only a base class in another file assigns: what makes it there.

        One qualified call name per assignment (None for a value that is no call), or None
        when the class binds the attribute itself, or no base the symbol index reads does.
        """
        cls = self.owner_class
        if (self.symbols is None or cls is None or not isinstance(expr, cst.Attribute)
                or not isinstance(expr.value, cst.Name) or expr.value.value != "self"
                or expr.attr.value in self.facts.self_attributes(cls).values):
            return None
        key = (cls, expr.attr.value)
        if key not in self._inherited_makers:
            # Rules ask once per `self.attr` read (JIT409 asks for every one); the answer
            # depends only on the class and the attribute, so resolve the bases once.
            symbol = self.symbols.resolve_in_file(self.path, cls.name.value)
            found = None
            if symbol is not None and symbol.kind == "class":
                found = self.symbols.inherited_makers(symbol, expr.attr.value)
            self._inherited_makers[key] = tuple(found) if found is not None else None
        cached = self._inherited_makers[key]
        return list(cached) if cached is not None else None

    def bases_mention(self, words: frozenset[str]) -> bool:
        """Whether a file holding a base class of the visited class (as the symbol index finds them)
        names one of `words`.

        False when no base can be read: then no base's assignments can name them either.
        """
        cls = self.owner_class
        if self.symbols is None or cls is None:
            return False
        symbol = self.symbols.resolve_in_file(self.path, cls.name.value)
        if symbol is None or symbol.kind != "class":
            return False
        return any(self.symbols.mentions(base.path, words) for base in self.symbols.base_classes(symbol))

    def bound_values(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The expressions `expr` was bound to: a local, else a module-level name, or `self.attr`."""
        function = self.function
        if isinstance(expr, cst.Name):
            if function is not None:
                local = self.local_values(expr.value, function)
                if local:
                    return [value for value in local if isinstance(value, cst.BaseExpression)]
            return list(self.module_assignments.get(expr.value, ()))
        if (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)
                and expr.value.value == "self"):
            cls = self.owner_class
            if cls is not None:
                return list(self.facts.self_attributes(cls).values.get(expr.attr.value, ()))
        return []



# Nodes whose children may be statements that hold a function definition.
_HOLDS_STATEMENTS = (cst.BaseCompoundStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
                     cst.Finally, cst.MatchCase)


def _parents_below(root: cst.CSTNode) -> dict[cst.CSTNode, cst.CSTNode]:
    """Child node -> parent node for every node below `root` (whitespace included)."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack = [root]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        for child in children(current):
            parents[child] = current
            push(child)
    return parents
