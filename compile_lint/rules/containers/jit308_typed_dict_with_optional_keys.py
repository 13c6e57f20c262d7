"""JIT308 typed-dict-with-optional-keys: Calling a TypedDict with optional keys (`total=False`,
`NotRequired`) in compiled code breaks the graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

import libcst as cst

from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.syntax import find_param

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


class TypedDictWithOptionalKeys(Rule):
    """Calling a TypedDict with optional keys (`total=False`, `NotRequired`) in compiled code breaks the graph.

    Why: Dynamo does not trace the call of a TypedDict whose `__optional_keys__` is not
    empty ("TypedDict with optional keys"): the default compile breaks the graph there
    and `fullgraph=True` fails, in forward and in a compiled function (measured on torch
    2.13). That covers `class Out(TypedDict, total=False)`, a field annotated
    `NotRequired[...]`, a subclass of such a class and the functional form
    `TypedDict("Out", {...}, total=False)`. A TypedDict whose keys are all required, a
    dict literal annotated with the TypedDict, `dict(...)`, `typing.cast` and
    `**kwargs: Unpack[Out]` all compile.

    Instead: calling a TypedDict only builds a plain `dict` (`Out(a=x)` is `dict(a=x)`),
    so write the dict literal (`{"a": x}`, annotated `out: Out = {...}` where a type
    checker should see the TypedDict). The fix does this for calls with keyword
    arguments only, and is safe: the same dict, in the same order.
    Only TypedDicts defined in the linted file are recognised; under
    `from __future__ import annotations` Python 3.11 ignores `NotRequired[...]`, so such
    fields are not taken as optional there.
    """

    code = "JIT308"
    name = "typed-dict-with-optional-keys"
    kind = "break"
    gb_type = "TypedDict with optional keys"
    gb_id = "GB0257"
    fix_applicability = "safe"
    message = (
        "calling `{name}`, a TypedDict with optional keys, breaks the graph (Dynamo does not trace it); "
        'it only builds a plain dict: write the dict literal (`{"key": value}`)'
    )
    steps = ('{"key": value}',)
    invalid = [
        Invalid(
            """
            from typing import TypedDict

            import torch
            from torch import nn

            class HeadOutput(TypedDict, total=False):
                logits: torch.Tensor
                aux_loss: torch.Tensor

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 4)

                def forward(self, x):
                    out = HeadOutput(logits=self.proj(x))
                    return out["logits"].softmax(-1)
            """,
            entry="Head",
            lines=[16],
            fixed="""
            from typing import TypedDict

            import torch
            from torch import nn

            class HeadOutput(TypedDict, total=False):
                logits: torch.Tensor
                aux_loss: torch.Tensor

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 4)

                def forward(self, x):
                    out = {"logits": self.proj(x)}
                    return out["logits"].softmax(-1)
            """,
        ),
        Invalid(
            """
            from typing_extensions import NotRequired, TypedDict

            import torch

            class Stats(TypedDict):
                mean: torch.Tensor
                std: NotRequired[torch.Tensor]

            class Normalised(Stats):
                scale: float

            @torch.compile(backend="eager")
            def normalise(x):
                stats = Normalised(
                    mean=x.mean(0),  # per column
                    scale=2.0,
                )
                return (x - stats["mean"]) * stats["scale"]
            """,
            entry="normalise",
            lines=[14],
            note="NotRequired, inherited, in a compiled function",
            fixed="""
            from typing_extensions import NotRequired, TypedDict

            import torch

            class Stats(TypedDict):
                mean: torch.Tensor
                std: NotRequired[torch.Tensor]

            class Normalised(Stats):
                scale: float

            @torch.compile(backend="eager")
            def normalise(x):
                stats = {
                    "mean": x.mean(0),  # per column
                    "scale": 2.0,
                }
                return (x - stats["mean"]) * stats["scale"]
            """,
        ),
        Invalid(
            """
            from typing import TypedDict

            import torch
            from torch import nn

            Extras = TypedDict("Extras", {"mask": torch.Tensor, "bias": torch.Tensor}, total=False)

            class Model(nn.Module):
                def forward(self, x):
                    extras = Extras({"mask": x > 0})
                    return torch.where(extras["mask"], x, 0.0)
            """,
            lines=[10],
            note="the functional form; a positional mapping gets no fix",
        ),
    ]
    valid = [
        Valid(
            """
            from typing import Optional, TypedDict

            import torch
            from torch import nn

            class HeadOutput(TypedDict):
                logits: torch.Tensor
                aux_loss: Optional[torch.Tensor]

            class Head(nn.Module):
                def forward(self, x):
                    out = HeadOutput(logits=x * 2, aux_loss=None)
                    return out["logits"]
            """,
            entry="Head",
            note="every key required (total=True, no NotRequired): compiles",
        ),
        Valid(
            """
            from typing import TypedDict

            import torch
            from torch import nn

            class HeadOutput(TypedDict, total=False):
                logits: torch.Tensor

            class Head(nn.Module):
                def forward(self, x):
                    out: HeadOutput = {"logits": x * 2}
                    more = dict(logits=x + 1)
                    return out["logits"] + more["logits"]
            """,
            entry="Head",
            note="a dict literal annotated with the TypedDict, and dict(...)",
        ),
        Valid(
            """
            from typing import TypedDict

            import torch
            from torch import nn
            from typing_extensions import Unpack

            class ScaleKwargs(TypedDict, total=False):
                scale: float

            def scaled(x, **kwargs: Unpack[ScaleKwargs]):
                return x * kwargs.get("scale", 1.0)

            class Model(nn.Module):
                def forward(self, x, HeadOutput=dict):
                    return scaled(x, scale=2.0) + HeadOutput(a=x)["a"]
            """,
            note="a TypedDict as the type of **kwargs; a parameter that shadows a class name",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Name) or self._shadowed(func.value) or self.context.qualname(func) is not None:
            return  # an import or a builtin of that name binds it too
        verdicts = self.context.memo(_MEMO_KEY, lambda: _optional_key_verdicts(self.context))
        if verdicts.get(func.value) is not True:
            return
        self.report(node, self.message.replace("{name}", func.value), fix=_dict_literal_fix(node))

    def _shadowed(self, name: str) -> bool:
        """True when `name` is a parameter or a local of the function being visited."""
        function = self.context.function
        return function is not None and (find_param(function, name) is not None
                                         or bool(self.context.local_values(name)))


_MEMO_KEY = "jit308-typeddict-optional-keys"
_TYPEDDICT = frozenset({"typing.TypedDict", "typing_extensions.TypedDict"})
_REQUIRED = frozenset({"typing.Required", "typing_extensions.Required"})
_NOT_REQUIRED = frozenset({"typing.NotRequired", "typing_extensions.NotRequired"})
_GENERIC = frozenset({"typing.Generic", "typing_extensions.Generic"})

# A top-level name -> True: a TypedDict with optional keys; False: a TypedDict whose keys are
# all required; None: not a TypedDict, or not known (bound twice, a base from another file).
Verdicts = dict[str, Optional[bool]]


def _optional_key_verdicts(context: FileContext) -> Verdicts:
    """What each top-level name of the file is, as a TypedDict (see `Verdicts`)."""
    bindings: dict[str, list[Union[cst.ClassDef, cst.BaseExpression, None]]] = {}
    for statement in context.module.body:
        if isinstance(statement, cst.ClassDef):
            bindings.setdefault(statement.name.value, []).append(statement)
        elif isinstance(statement, cst.FunctionDef):
            bindings.setdefault(statement.name.value, []).append(None)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            value = small.value if len(small.targets) == 1 else None
                            bindings.setdefault(target.target.value, []).append(value)
    for name, values in context.module_assignments.items():
        if name in bindings and len(bindings[name]) == 1 and len(values) > 1:
            bindings[name].append(None)  # also bound inside a top-level if/try: not one class
    future_annotations = _future_annotations(context.module)
    verdicts: Verdicts = {}

    def judge(name: str, depth: int = 0) -> Optional[bool]:
        if name in verdicts:
            return verdicts[name]
        values = bindings.get(name, [])
        verdicts[name] = None  # also what a cycle reads
        if len(values) == 1 and depth < 20:
            value = values[0]
            if isinstance(value, cst.ClassDef):
                verdicts[name] = _class_verdict(context, value, future_annotations, lambda base: judge(base, depth + 1))
            elif isinstance(value, cst.Call):
                verdicts[name] = _functional_verdict(context, value)
        return verdicts[name]

    for name in bindings:
        judge(name)
    return verdicts


def _class_verdict(context: FileContext, cls: cst.ClassDef, future_annotations: bool,
                   judge: Callable[[str], Optional[bool]]) -> Optional[bool]:
    """Whether class `cls` is a TypedDict with optional keys (None: not a TypedDict, or not known)."""
    inherited: list[bool] = []  # the verdicts of the bases that are TypedDicts of this file
    typed_dict = False
    for base in cls.bases:
        if base.keyword is not None or base.star:
            return None
        head = base.value.value if isinstance(base.value, cst.Subscript) else base.value
        qualified = context.qualname(head)
        if qualified in _TYPEDDICT:
            typed_dict = True
        elif qualified in _GENERIC:
            continue  # `class Pair(TypedDict, Generic[T])`
        elif isinstance(base.value, cst.Name) and (verdict := judge(base.value.value)) is not None:
            typed_dict = True
            inherited.append(verdict)
        else:
            return None  # another class, or a TypedDict of another file: unknown
    if not typed_dict:
        return None
    total = _total(cls.keywords)
    if total is None:
        return None
    own = [_key_optional(context, field.annotation.annotation, total, future_annotations) for field in _fields(cls)]
    return _optional_keys(inherited + own)


def _total(arguments: Sequence[cst.Arg]) -> Optional[bool]:
    """The `total=` a TypedDict is declared with (True by default); None when it is not a literal."""
    for argument in arguments:
        if argument.keyword is not None and argument.keyword.value == "total":
            value = argument.value
            if not isinstance(value, cst.Name) or value.value not in ("True", "False"):
                return None
            return value.value == "True"
    return True


def _optional_keys(keys: Sequence[Optional[bool]]) -> Optional[bool]:
    """True when some key is certainly optional, False when every key is certainly required, else None."""
    if any(key is True for key in keys):
        return True
    return False if all(key is False for key in keys) else None


def _fields(cls: cst.ClassDef) -> list[cst.AnnAssign]:
    """The `name: type` statements of a class body."""
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return [small for statement in body if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)]


def _key_optional(context: FileContext, annotation: cst.BaseExpression, total: bool,
                  deferred: bool) -> Optional[bool]:
    """Whether a key of this type is optional: True, False, or None (it depends on the Python version).

    `deferred`: the annotations are not evaluated (`from __future__ import annotations`), and
    Python 3.11 then reads no `Required`/`NotRequired` in them; a quoted annotation neither.
    """
    deferred = deferred or isinstance(annotation, (cst.SimpleString, cst.ConcatenatedString))
    head = context.qualname(annotation.value) if isinstance(annotation, cst.Subscript) else None
    if head in _REQUIRED:
        return None if deferred else False
    if head in _NOT_REQUIRED:
        return None if deferred else True
    return not total


def _functional_verdict(context: FileContext, call: cst.Call) -> Optional[bool]:
    """`TypedDict("Name", {...}, total=False)`: whether it has optional keys (None: not that, or not known)."""
    if context.qualname(call.func) not in _TYPEDDICT:
        return None
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    total = _total(call.args)
    if len(positional) != 2 or not isinstance(positional[1], cst.Dict) or total is None:
        return None
    fields = [element for element in positional[1].elements if isinstance(element, cst.DictElement)]
    if len(fields) != len(positional[1].elements):
        return None  # `**other` fields
    # The field types are values here, evaluated whatever the future imports.
    return _optional_keys([_key_optional(context, field.value, total, deferred=False) for field in fields])


def _future_annotations(module: cst.Module) -> bool:
    """True when the module starts with `from __future__ import annotations`."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name)
                    and small.module.value == "__future__" and not isinstance(small.names, cst.ImportStar)
                    and any(alias.name.value == "annotations" for alias in small.names
                            if isinstance(alias.name, cst.Name))):
                return True
    return False


def _keywords_only(call: cst.Call) -> bool:
    return all(arg.keyword is not None for arg in call.args)


def _dict_literal_fix(call: cst.Call) -> Optional[FixPlan]:
    """`Out(a=x, b=y)` -> `{"a": x, "b": y}`: the dict the call builds. Keyword arguments only."""
    if not _keywords_only(call):
        return None
    elements = []
    for arg in call.args:
        assert arg.keyword is not None  # keywords only, checked above
        elements.append(cst.DictElement(
            key=cst.SimpleString(f'"{arg.keyword.value}"'),
            value=arg.value,
            whitespace_before_colon=cst.SimpleWhitespace(""),
            whitespace_after_colon=cst.SimpleWhitespace(" "),
            comma=arg.comma,
        ))
    closing = call.args[-1].whitespace_after_arg if call.args else cst.SimpleWhitespace("")
    literal = cst.Dict(
        elements,
        lbrace=cst.LeftCurlyBrace(whitespace_after=call.whitespace_before_args),
        rbrace=cst.RightCurlyBrace(whitespace_before=closing),
        lpar=call.lpar,
        rpar=call.rpar,
    )
    return FixPlan([(call, literal)], "Write the dict literal: calling the TypedDict builds the same plain dict",
                   "safe")

