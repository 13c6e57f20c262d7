"""The abstract values of the program model: what an expression may evaluate to.

Every expression evaluates to a `Values` set (a frozenset of the classes below). Callables
and objects are exact (a function, a class, an instance of a class, a module, a bound
method, a partial, a compiled or disabled wrapper); constants are kept up to a bound
(None, bools, small ints, short strings); data values are a `Kind` of the file analysis's
one lattice (`analysis/kinds/lattice.py`: a tensor, a size, a Python number, data read
from a tensor, ...); containers are either known by their items (a tuple display, the
`**kwargs` a call made) or by where they were made (a list, a dict, a set: their
elements live in the model's heap); anything else is `UNKNOWN`.

Values are small, frozen and hashed: they are the keys of the model's tables and of the
contexts functions are analysed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

from compile_lint.analysis.kinds.lattice import Kind

# (absolute path, qualified name inside the file: `f`, `Cls.method`, `outer.inner`, `f.<lambda1>`)
Key = tuple[str, str]
# Where a container was made: (path, line, column) of its display or call.
Site = tuple[str, int, int]


class Value:
    """Base of every abstract value."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class FunctionV(Value):
    """A function, method or lambda defined in a loaded file, not bound to anything."""

    key: Key


@dataclass(frozen=True, slots=True)
class ClassV(Value):
    """A class defined in a loaded file."""

    key: Key


@dataclass(frozen=True, slots=True)
class InstanceV(Value):
    """An instance of a loaded class (made by calling it, or `self` of its methods)."""

    cls: Key


@dataclass(frozen=True, slots=True)
class ModuleV(Value):
    """A loaded module, by its file."""

    path: str


@dataclass(frozen=True, slots=True)
class ExternalV(Value):
    """A name of code the model does not read: `torch.nn.functional.relu`, `builtins.len`, `numpy.sin`."""

    name: str


@dataclass(frozen=True, slots=True)
class ExternalInstanceV(Value):
    """An object made by calling an external class: `torch.nn.Linear(...)`, `threading.Lock()`."""

    name: str


@dataclass(frozen=True, slots=True)
class BoundV(Value):
    """A method bound to its receiver (an instance, or a class for a classmethod)."""

    function: Value  # FunctionV, or ExternalV for an external method
    receiver: Value

    depth: int = field(default=0, compare=False, repr=False)  # how deeply values nest in it (bounded by join)

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + max(_depth(self.function), _depth(self.receiver)))


@dataclass(frozen=True, slots=True)
class PartialV(Value):
    """`functools.partial(func, *args, **keywords)`: the arguments it was made with are passed first."""

    function: "Values"
    args: tuple["Values", ...] = ()
    keywords: tuple[tuple[str, "Values"], ...] = ()

    depth: int = field(default=0, compare=False, repr=False)  # how deeply values nest in it (bounded by join)

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + max([_set_depth(self.function)] + [_set_depth(item) for item in self.args]
                                               + [_set_depth(item) for _, item in self.keywords]))


@dataclass(frozen=True, slots=True)
class SuperV(Value):
    """`super()` in a method of class `cls`, for `receiver`."""

    cls: Key
    receiver: Value

    depth: int = field(default=0, compare=False, repr=False)  # how deeply values nest in it (bounded by join)

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + _depth(self.receiver))


@dataclass(frozen=True, slots=True)
class WrappedV(Value):
    """A callable Dynamo treats specially: `how` is "compiled" (torch.compile's result), "disabled"
    (`torch.compiler.disable`), "allowed" (`allow_in_graph`: put in the graph untraced), "opaque" (a
    custom op), "static" / "class" (staticmethod / classmethod), "property" (the getter)."""

    how: str
    function: "Values"

    depth: int = field(default=0, compare=False, repr=False)  # how deeply values nest in it (bounded by join)

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + _set_depth(self.function))


@dataclass(frozen=True, slots=True)
class ConstV(Value):
    """A constant: None, a bool, a small int, a float, a short string, `...`."""

    value: object


@dataclass(frozen=True, slots=True)
class KindV(Value):
    """A data value known only by its kind (the file analysis's lattice): a tensor, a size, a number."""

    kind: Kind
    by_default: bool = False  # a tensor only by default (an entry point's untyped parameter)


@dataclass(frozen=True, slots=True)
class TupleV(Value):
    """A tuple whose items are known one by one (a display, `*args` a call filled)."""

    items: tuple["Values", ...]

    depth: int = field(default=0, compare=False, repr=False)  # how deeply values nest in it (bounded by join)

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + max([0] + [_set_depth(item) for item in self.items]))


@dataclass(frozen=True, slots=True)
class KeywordsV(Value):
    """The `**kwargs` a call filled: each keyword's values; `open` when a splat of unknown keys went in."""

    items: tuple[tuple[str, "Values"], ...] = ()
    open: bool = False

    depth: int = field(default=0, compare=False, repr=False)  # how deeply values nest in it (bounded by join)

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + max([0] + [_set_depth(item) for _, item in self.items]))


@dataclass(frozen=True, slots=True)
class ContainerV(Value):
    """A list, dict or set (or an nn.ModuleList/Sequential/ModuleDict) known by where it was made.

    Its elements (a dict's values) are in the model's heap, under its site.
    """

    kind: str  # "list", "dict", "set", "modulelist", "sequential", "moduledict"
    site: Site


@dataclass(frozen=True, slots=True)
class GeneratorV(Value):
    """What calling a generator function gives: iterating it gives what the function yields."""

    node: "Node"


@dataclass(frozen=True, slots=True)
class PatternV(Value):
    """A string known by its ends: `f"_{mode}_step"` with `mode` unknown is `PatternV("_", "_step")`."""

    prefix: str
    suffix: str

    def matches(self, text: str) -> bool:
        """Whether `text` may be this string."""
        return len(text) >= len(self.prefix) + len(self.suffix) and text.startswith(self.prefix) \
            and text.endswith(self.suffix)


@dataclass(frozen=True, slots=True)
class FlagV(Value):
    """A flag whose truth differs between eager runs and Dynamo's trace: `torch.compiler.is_compiling()`."""

    name: str  # "compiling": True under Dynamo, False eagerly; "eager": its negation


@dataclass(frozen=True, slots=True)
class UnknownV(Value):
    """Anything: the model cannot tell."""


# A set of abstract values; `frozenset()` means "not evaluated yet" (no value reaches it).
Values = frozenset
# A function analysed under a context: (the function, the arguments it is specialised on).
Context = tuple[tuple[str, Value], ...]
Node = tuple[Union[FunctionV, ModuleV], Context]

UNKNOWN = UnknownV()
NONE = ConstV(None)
TRUE = ConstV(True)
FALSE = ConstV(False)
TENSOR = KindV(Kind.TENSOR)
TENSOR_BY_DEFAULT = KindV(Kind.TENSOR, by_default=True)
SHAPE = KindV(Kind.SHAPE)
DATA = KindV(Kind.DATA)
PY = KindV(Kind.PY)
NDARRAY = KindV(Kind.NDARRAY)
COMPILING = FlagV("compiling")  # what `torch.compiler.is_compiling()` returns
EMPTY: frozenset = frozenset()
ONLY_UNKNOWN: frozenset = frozenset((UNKNOWN,))

MAX_VALUES = 48  # values one set keeps before constants fold into their kind
MAX_DEPTH = 4  # how deeply values may nest (a tuple of tuples of partials...) before they are widened
# Distinct numbers and strings one set keeps before they fold into their kind: a counter that grows in a
# loop (`self.num + 1`) must not take one evaluation per value to reach its fixed point.
MAX_CONSTANTS = 16
_FOLDED_TYPES = (int, float, complex, str, bytes)
_MAX_STRING = 64
_CALLABLE_KINDS = (FunctionV, ClassV, BoundV, PartialV, WrappedV, SuperV, ExternalV, ModuleV)


def const(value: object) -> Value:
    """The abstract value of a Python constant (long strings and big containers fold to a kind)."""
    if value is None or isinstance(value, (bool, int, float, complex, bytes)) or value is Ellipsis:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1 << 20:
            return PY
        return ConstV(value)
    if isinstance(value, str):
        return ConstV(value) if len(value) <= _MAX_STRING else PY
    return PY


def values(*items: Value) -> frozenset:
    """A value set of `items`."""
    return frozenset(items)


def _depth(value: Value) -> int:
    return getattr(value, "depth", 0)


def _set_depth(found: Iterable[Value]) -> int:
    return max((getattr(value, "depth", 0) for value in found), default=0)


def shallow(value: Value) -> Value:
    """`value` with its nesting cut at `MAX_DEPTH`: a callable keeps what it calls, the rest is unknown."""
    if _depth(value) <= MAX_DEPTH:
        return value
    if isinstance(value, PartialV):
        return PartialV(frozenset(shallow(item) for item in value.function))
    if isinstance(value, WrappedV):
        return WrappedV(value.how, frozenset(shallow(item) for item in value.function))
    if isinstance(value, BoundV):
        return BoundV(shallow(value.function), UNKNOWN)
    if isinstance(value, KeywordsV):
        return KeywordsV((), open=True)
    return UNKNOWN


# Values joined so far in this process: the model's measure of its work (`Model.solve` budgets it), the
# same count for the same input on any machine.
JOINED = [0]


def join(*sets: Iterable[Value]) -> frozenset:
    """The union of value sets, bounded: past `MAX_VALUES`, constants fold into their kind; values nested
    deeper than `MAX_DEPTH` are cut (`shallow`), so that a value made in a loop from itself stays finite."""
    found: set = set()
    for each in sets:
        found.update(each)
    JOINED[0] += len(found) + 1
    if any(getattr(value, "depth", 0) > MAX_DEPTH for value in found):
        found = {shallow(value) for value in found}
    constants = [value for value in found if isinstance(value, ConstV) and isinstance(value.value, _FOLDED_TYPES)
                 and not isinstance(value.value, bool)]
    if constants and (PY in found or len(constants) > MAX_CONSTANTS):
        # Past the bound, numbers and strings are a Python value; once one is, every later one is too
        # (so a set only grows: the fixed point is reached).
        found.difference_update(constants)
        found.add(PY)
    if len(found) <= MAX_VALUES:
        return frozenset(found)
    folded = {PY if isinstance(value, ConstV) else value for value in found}
    if len(folded) > MAX_VALUES * 4:
        kept = {value for value in folded if isinstance(value, _CALLABLE_KINDS + (InstanceV, ContainerV))}
        folded = kept | {UNKNOWN}
    return frozenset(folded)


def truth(value: Value, compiling: bool) -> Optional[bool]:
    """`bool(value)`, when the model knows it (in a run under Dynamo when `compiling`, else eagerly)."""
    if isinstance(value, FlagV):
        return compiling if value.name == "compiling" else not compiling
    if isinstance(value, ConstV):
        try:
            return bool(value.value)
        except Exception:  # noqa: BLE001 - an odd constant: unknown
            return None
    if isinstance(value, BoundV) and isinstance(value.function, ExternalV):
        return None  # `self.training`: an external class's attribute may be data, not a method
    if isinstance(value, (FunctionV, ClassV, ModuleV, BoundV, PartialV, WrappedV, GeneratorV)):
        return True
    # An external name may be a function (truthy) or a value the model does not read: `self.training`
    # is `torch.nn.Module.training`, a flag Dynamo specialises on and the mode analysis splits.
    if isinstance(value, TupleV):
        return bool(value.items)
    if isinstance(value, PatternV):
        return True if value.prefix or value.suffix else None
    if isinstance(value, KeywordsV):
        return True if value.items else (None if value.open else False)
    return None


def set_truth(found: Iterable[Value], compiling: bool) -> Optional[bool]:
    """The truth of every value of a set, when they agree; None when the set is empty or they differ."""
    answers = {truth(value, compiling) for value in found}
    return answers.pop() if len(answers) == 1 else None

