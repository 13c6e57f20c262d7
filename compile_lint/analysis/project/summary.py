"""The one summary of one file: what the symbol index knows of it, read with `ast`.

What a value is and which calls run is the program model's (`analysis/model/`); the
summary only names things, for the per-file analysis's lookups across files and the
stored index. A `FileSummary` holds every function and method (qualified name inside the
file: `f`, `Cls.method`, `outer.inner`; span, decorators, parameters, each call it makes
as spelled, its local aliases), every class (bases and methods as spelled, what makes
each `self.NAME`), the file's imports and top-level aliases, its `torch.compile` calls and
the lines of its top-level import statements. `summariser.py` builds it; the project index
(`index.py`) keeps one per project file on disk, and the symbol index (`symbols.py`) one per
file it reads.

The classes are slotted and their names interned: a project holds a summary of every file,
each call site is kept, and the index is pickled. Summaries are plain data: built once,
never changed afterwards.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Optional, TypeVar

MODULE_SCOPE = "<module>"
# The spelling of a binding whose value names nothing.
UNKNOWN = "?"

_Record = TypeVar("_Record", bound=type)


def _pickled_by_fields(cls: _Record) -> _Record:
    """Pickle instances of the slotted dataclass `cls` as a call of the class with its fields.

    A slotted object's default pickling restores each slot by name (and a frozen dataclass's
    through Python-level `__setstate__`): loading a project's index took twice as long.
    """
    values = operator.attrgetter(*vars(cls)["__slots__"])

    def __reduce__(self):
        return type(self), values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign,assignment]  # replacing the hook is the point
    return cls


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class CallSite:
    """A call in a function: the callee as spelled, where, and whether only eager runs reach it."""

    callee: str
    line: int
    eager: bool = False


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Binding:
    """One `NAME = value` the symbol index reads (a top-level alias, `self.NAME = value`, a class attribute).

    `spellings` are what it makes `NAME` name: `a.b`; `Encoder()`, an
    instance; `[]Block`, the elements of an `nn.ModuleList`; `f` of `partial(f, ...)`;
    `UNKNOWN`. `value` is the value itself when it is a dotted name (`a.b`) or a call of
    one (`nn.LSTM()`), else None. `class_attribute` marks a binding in a class body
    (`act = staticmethod(gelu)`), not in a method.
    """

    spellings: tuple[str, ...]
    value: Optional[str] = None
    class_attribute: bool = False

    @property
    def call(self) -> Optional[str]:
        """The dotted name the value calls as spelled (`nn.LSTM`), None for a value that is no such call."""
        return self.value[:-2] if self.value is not None and self.value.endswith("()") else None

    @property
    def dotted_name(self) -> Optional[str]:
        """The dotted name bound when the value is one (`A = b.c`), else None."""
        return self.value if self.value is not None and not self.value.endswith("()") else None


@_pickled_by_fields
@dataclass(slots=True)
class FunctionInfo:
    """A function or method of the file (`qualname`: `f`, `Cls.method`, `outer.inner`).

    `line` is the `def` line; `first_line`..`end_line` span its decorators and body.
    """

    qualname: str
    name: str
    owner: Optional[str]  # the qualname of the class of a method (also of its nested functions); "" for a class body
    line: int
    first_line: int
    end_line: int
    decorators: tuple[str, ...] = ()
    params: tuple[tuple[str, bool, bool], ...] = ()  # (name, annotated, has a default)
    calls: tuple[CallSite, ...] = ()
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    nested: tuple[str, ...] = ()
    parent: Optional[str] = None  # the enclosing function of a nested one
    # Names of the `self.NAME(...)` calls of a method, in its nested functions and lambdas
    # too, sorted: what an inherited method makes a subclass run.
    self_calls: tuple[str, ...] = ()

    @staticmethod
    def bound(table: dict[str, tuple[str, ...]], name: str, added: tuple[str, ...],
              past: Optional[str] = None) -> tuple[str, ...]:
        """`table[name]` (`aliases`) with one more binding's, up to `LOCAL_BINDINGS_BUDGET`;
        past it, the last one is `past`, or nothing more is added."""
        known = table.get(name, ())
        if len(known) < LOCAL_BINDINGS_BUDGET:
            return known + added
        return known if past is None or known[-1] == past else known[:-1] + (past,)


# The bindings of one local name a function's summary records (`FunctionInfo.aliases`). The
# summariser made each binding's tuple one longer than the last and kept every one (one object
# for equal tuples): a name bound N times held N * N / 2 references, 3 GB for `x = x + i`
# written 20,000 times in one forward, and the project index summarises every file of a
# directory, so a small file beside that one cost as much to lint. Past the budget a name's
# aliases stop growing: a name bound this often in one function is no alias of one function.
LOCAL_BINDINGS_BUDGET = 64


@_pickled_by_fields
@dataclass(slots=True)
class ClassInfo:
    """A class: bases and methods as spelled, and what makes each attribute."""

    qualname: str
    line: int
    bases: tuple[str, ...]
    methods: dict[str, str]  # name -> function qualname
    makers: dict[str, tuple[Binding, ...]] = field(default_factory=dict)  # attribute -> its bindings

    def made_in_methods(self, attribute: str) -> Optional[tuple[Optional[str], ...]]:
        """The call (dotted, as spelled; None for no call) of each `self.attribute = value` in the
        class's methods; None when no method assigns it."""
        found = tuple(binding.call for binding in self.makers.get(attribute, ()) if not binding.class_attribute)
        return found or None


@_pickled_by_fields
@dataclass(slots=True)
class FileSummary:
    """What one file defines, calls and imports."""

    path: str
    digest: str
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    # Local name -> qualified name it was imported as; relative ones keep their dots
    # (`from .utils import f` -> ".utils.f"; `from . import utils` -> ".utils").
    imports: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, Binding] = field(default_factory=dict)  # top-level `A = b.c`, `A = partial(f)`, ...
    # (scope qualname, line, target spelling) of `torch.compile(X)`, `X.compile()`, `@torch.compile`
    compiled: tuple[tuple[str, int, str], ...] = ()
    # The modules of `from MODULE import *`, in order, as spelled (relative ones keep their dots).
    star_imports: tuple[str, ...] = ()

    def qualify(self, spelling: str) -> str:
        """`spelling` with its head replaced by what the file imported it as."""
        head, _, rest = spelling.partition(".")
        target = self.imports.get(head)
        if target is None:
            return spelling
        return f"{target}.{rest}" if rest else target

    def alias_target(self, name: str) -> Optional[str]:
        """The dotted name a top-level `name = a.b` binds `name` to (None for any other value)."""
        binding = self.aliases.get(name)
        return binding.dotted_name if binding is not None else None
