"""Whether a value is certainly a tensor, and in which code: the one place that decides it.

Facts give every expression a kind (`facts.py`); their TENSOR includes two guesses that are
right for what Dynamo traces and no evidence for what eager code holds: a Python
`random.uniform/randint/randrange` draw (Dynamo traces it as a 0-d tensor; eager code gets a
float or an int) and an untyped `forward` parameter (a tensor by default). The switch says
which question is asked:

- `Under.DYNAMO`: a tensor as Dynamo traces it, on evidence: a random draw counts, the
  forward-parameter default does not (a parameter counts when every call of the file passes
  a tensor on evidence, or by its `Tensor` annotation). Facts ask it to decide what a call
  passes on (`DynamoCertainty`).
- `Under.EAGER`: a tensor in eager code too: a torch call, a `torch.Tensor` method on a
  tensor, a `Tensor` annotation, a method only tensors have called on the parameter, a
  torch.nn submodule's output. What a fix may rest on (`tensor_evidence`).
- `certain_one_tensor`: one tensor in eager code, not a tuple or list of them (what a
  `for` loop over it iterates: JIT503), judged more strictly still.

Where the questions disagree each caller keeps its own answer: a random draw is certain
under Dynamo only; a parameter every call passes a tensor is certain under Dynamo only, one
that calls a method only tensors have (`x.amax()`) under EAGER only; `d.get(k)` on a tensor
is certain under Dynamo (any method of a tensor) but not under EAGER (not a `torch.Tensor`
method); `certain_one_tensor` takes a parameter only by its annotation, a local when one of
its bindings is a tensor and none a container, and no torch op that returns a tuple.

`definite_kind`, `tensor_before` and `may_hold_non_tensor` narrow a MAYBE_TENSOR local that
is never None to a tensor, for the branch rewrites.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import libcst as cst

from compile_lint.analysis.file.reaching import Binding
from compile_lint.analysis.kinds.bindings import annotation_kind, find_param, is_none, tuple_items
from compile_lint.analysis.kinds.calls import TRACED_RANDOM_DRAWS
from compile_lint.analysis.kinds.expressions import array_index
from compile_lint.analysis.kinds.lattice import Kind
from compile_lint.analysis.kinds.parts import FactsParts
from compile_lint.analysis.kinds.tensor_methods import TENSOR_METHODS, TENSOR_ONLY_METHODS
from compile_lint.analysis.syntax.names import names_read
from compile_lint.analysis.syntax.walk import iter_nodes

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


class Under(enum.Enum):
    """Which code a value must be a tensor in for `certain_tensor` to say it is one."""

    DYNAMO = "dynamo"  # as Dynamo traces it: a random draw counts, the forward-parameter default does not
    EAGER = "eager"  # in eager code too: what a fix may rest on


def certain_tensor(context: FileContext, expr: cst.BaseExpression, under: Under) -> bool:
    """True when `expr`, read in the function being visited, is a tensor on evidence in the code `under` names."""
    if under is Under.DYNAMO:
        # Rules ask inside a traced function: module level holds no evidence.
        return context.function is not None and context.facts.certain_under_dynamo(expr, context.function)
    return _eager_certain(context, expr, 0)


# ----- under Dynamo: the facts' own question ---------------------------------------------------

# How deep `certain_under_dynamo` follows names, calls and operands.
_CERTAINTY_DEPTH = 8


class DynamoCertainty(FactsParts):
    """`Under.DYNAMO` (a part of `Facts`, which asks it to judge what a call passes on)."""

    def certain_under_dynamo(self, expr: cst.BaseExpression, function: cst.FunctionDef, depth: int = 0) -> bool:
        """True when `expr` is a tensor on evidence, not only on the default for untyped forward parameters.

        An untyped forward parameter is taken to be a tensor, and so are the items of what
        an unknown submodule returns; that default is fine for deciding what `x.sum() > 0`
        is, but it is no evidence to pass on: a parameter that every call passes a tensor
        is a tensor, not one that every call passes its own untyped parameter
        (`output_attentions`, a `window_size` tuple, sizes unpacked from a submodule).
        """
        key = (expr, function)
        cached = self.memo.certain.get(key) if not self.memo.param_bindings else None
        if cached is not None:
            return cached
        if depth > _CERTAINTY_DEPTH or key in self.memo.in_progress:
            return False
        self.memo.in_progress.add(key)
        try:
            result = self._dynamo_certain(expr, function, depth + 1)
        finally:
            self.memo.in_progress.discard(key)
        if not self.memo.param_bindings:
            self.memo.certain[key] = result
        return result

    def _dynamo_certain(self, expr: cst.BaseExpression, function: cst.FunctionDef, depth: int) -> bool:
        if self.kind(expr, function) is not Kind.TENSOR:
            return False
        if isinstance(expr, cst.Name):
            reaching = self.reaching(function).reads.get(expr)
            if reaching is not None:
                return all(self._certain_binding(b, function, depth) for b in reaching)
            if self.param_kind(function, expr.value) is not None:
                return self._certain_parameter(function, expr.value, depth)
            values = self.assignments(function).get(expr.value, [])
            return bool(values) and all(self._certain_value(v, function, depth) for v in values)
        if isinstance(expr, cst.Call):
            func = expr.func
            qualified = self.imports.qualname(func)
            if qualified is not None:
                return qualified.startswith("torch.") or qualified in TRACED_RANDOM_DRAWS
            if isinstance(func, cst.Attribute) and not (
                    isinstance(func.value, cst.Name) and func.value.value == "self"):
                # A tensor method: only a tensor (or array) has it, whatever the receiver was taken for.
                return self.kind(func.value, function).tensorish or self.kind(func.value, function) is Kind.NDARRAY
            target = self.call_target(expr, function)
            return target is not None and all(
                self.certain_under_dynamo(v, target, depth) for v in self.returned_values(target))
        if isinstance(expr, cst.Subscript):
            return array_index(expr) or self.certain_under_dynamo(expr.value, function, depth)
        if isinstance(expr, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation)):
            parts = [expr.left, expr.right] if not isinstance(expr, cst.Comparison) else [
                expr.left, *(t.comparator for t in expr.comparisons)]
            return any(self.certain_under_dynamo(part, function, depth) for part in parts)
        if isinstance(expr, cst.UnaryOperation):
            return self.certain_under_dynamo(expr.expression, function, depth)
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return True  # a registered buffer or an nn.Parameter
            return self.certain_under_dynamo(expr.value, function, depth)
        if isinstance(expr, cst.IfExp):
            return (self.certain_under_dynamo(expr.body, function, depth)
                    and self.certain_under_dynamo(expr.orelse, function, depth))
        return False

    def _certain_parameter(self, function: cst.FunctionDef, name: str, depth: int) -> bool:
        bound = self.memo.param_bindings.get((function, name))
        if bound is not None:
            return bound is Kind.TENSOR
        param = find_param(function, name)
        if param is not None and annotation_kind(param.annotation, self.imports) is Kind.TENSOR:
            return True
        if ("argument", function, name) in self.memo.in_progress:
            return True  # a loop through calls (x = block(x)): its other inputs decide
        return self.argument_kind(function, name) is Kind.TENSOR

    def _certain_binding(self, binding: Binding, function: cst.FunctionDef, depth: int) -> bool:
        if binding.value is None:
            return self._certain_parameter(function, binding.name, depth)
        return self._certain_value(binding.value, function, depth)

    def _certain_value(self, value: object, function: cst.FunctionDef, depth: int) -> bool:
        if isinstance(value, cst.BaseExpression):
            return self.certain_under_dynamo(value, function, depth)
        if not isinstance(value, tuple):
            return False
        tag = value[0]
        if tag == "aug":
            return (self.certain_under_dynamo(value[1], function, depth)
                    or self.certain_under_dynamo(value[2], function, depth))
        if tag == "iter":
            return isinstance(value[1], cst.BaseExpression) and self.certain_under_dynamo(value[1], function, depth)
        if tag == "element" and isinstance(value[1], cst.Call):
            target = self.call_target(value[1], function)
            if target is None:
                return False  # the items of what an unknown callable returns are a guess
            items = [tuple_items(v) for v in self.returned_values(target) if not is_none(v)]
            return bool(items) and all(
                item is not None and value[2] < len(item) and self.certain_under_dynamo(item[value[2]], target, depth)
                for item in items)
        if tag == "element" and isinstance(value[1], tuple) and value[1][0] == "iter":
            return self._certain_value(value[1], function, depth)  # `for a, b in tensor`: rows of rows
        return False


# ----- in eager code too ------------------------------------------------------------------------


def _eager_certain(context: FileContext, expr: cst.BaseExpression, depth: int) -> bool:
    """Under.EAGER: a tensor for reasons a fix can rest on, not only by facts' default.

    A torch function, a `torch.Tensor` method on a tensor, a comparison or arithmetic with
    one, a Tensor-annotated parameter, a parameter the function calls a method only
    tensors have on (`x.amax()`), or a local bound to one of these. A Python random draw
    is not: Dynamo traces it as a 0-d tensor, eager code gets a float. A method that
    `torch.Tensor` lacks (`session.get_obj_num()`) is not: facts type untyped parameters as
    tensors, and a fix must not rest on that guess.
    """
    if depth > 8:
        return False
    if isinstance(expr, cst.Call):
        qualified = context.qualname(expr.func) or ""
        if qualified.startswith("torch."):
            return context.kind(expr) is Kind.TENSOR
        if isinstance(expr.func, cst.Name):
            # `for block in self.blocks: x = block(x)` over an nn.ModuleList of torch.nn modules
            values = context.local_values(expr.func.value)
            if values and all(
                    isinstance(v, tuple) and v[0] == "iter" and isinstance(v[1], cst.Attribute)
                    and isinstance(v[1].value, cst.Name) and v[1].value.value == "self"
                    and _torch_module_output(context, v[1].attr.value) for v in values):
                return True
            # `for layer in self.layers: x = layer(x)` over the file's own blocks: their
            # forward's returns are the evidence (`x + torch.tanh(self.fc(x))`).
            target = context.call_target(expr)
            return (target is not None and target.name.value == "forward"
                    and certain_tensor(context, expr, Under.DYNAMO))
        if isinstance(expr.func, cst.Attribute):
            receiver = expr.func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                return _torch_module_output(context, expr.func.attr.value)
            if expr.func.attr.value not in TENSOR_METHODS:
                return False
            return context.kind(receiver).tensorish or _eager_certain(context, receiver, depth + 1)
        return False
    if isinstance(expr, cst.Comparison):
        return any(_eager_certain(context, side, depth + 1)
                   for side in (expr.left, *(c.comparator for c in expr.comparisons)))
    if isinstance(expr, cst.BinaryOperation):
        return _eager_certain(context, expr.left, depth + 1) or _eager_certain(context, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return _eager_certain(context, expr.expression, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _eager_certain(context, expr.value, depth + 1)
    if isinstance(expr, cst.Attribute):
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return context.kind(expr) is Kind.TENSOR
        return expr.attr.value in ("T", "mT", "data", "real", "imag") and _eager_certain(context, expr.value, depth + 1)
    if isinstance(expr, cst.Name):
        if annotated_tensor(context, expr.value) or _tensor_only_method_on(context, expr.value):
            return True
        if context.tensor_on_some_paths(expr):
            return False  # `skip = False` on the other paths: `skip.bool()` would fail there
        return _eager_certain_values(context, expr.value, depth)
    return False


def _eager_certain_values(context: FileContext, name: str, depth: int) -> bool:
    """Whether a value the visited function binds `name` to is a tensor on evidence. Asked once per
    name and depth: each read of a name rebound N times (`x = x + i`) would follow N values, N ** depth."""
    memo, key = context.facts.memo, (context.function, name, depth)
    found = memo.eager_certain.get(key)
    if found is None:
        found = any(_eager_certain(context, value, depth + 1) if isinstance(value, cst.BaseExpression) else (
            isinstance(value, tuple) and value[0] in ("iter", "element") and isinstance(value[1], cst.BaseExpression)
            and _eager_certain(context, value[1], depth + 1)) for value in context.local_values(name))
        if not memo.param_bindings:
            memo.eager_certain[key] = found
    return found


def annotated_tensor(context: FileContext, name: str) -> bool:
    """True when parameter `name` of the function being visited is annotated as a Tensor."""
    function = context.function
    if function is None:
        return False
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return annotation_kind(param.annotation, context.imports) is Kind.TENSOR
    return False


def _tensor_only_method_on(context: FileContext, name: str) -> bool:
    """True when `name` is the receiver of a method only tensors have, on the value it holds here.

    `x.amax()` on an untyped parameter's own value, or `h.mean()` on a local bound once: the
    original code needs it to be a tensor, in eager code too. `img.resize(...)`,
    `F.hflip(img)` or returning `img` are no such evidence.
    """
    function = context.function
    facts = context.facts
    if function is None:
        return False
    parameter = facts.param_kind(function, name) is not None
    if not parameter and len(context.local_values(name)) != 1:
        return False
    receivers = _tensor_only_receivers(context, function).get(name, ())
    if not parameter:
        return bool(receivers)
    reads = facts.reaching(function).reads
    for receiver in receivers:
        reaching = reads.get(receiver)
        if reaching is not None and any(binding.value is None for binding in reaching):
            return True
    return False


def _tensor_only_receivers(context: FileContext, function: cst.FunctionDef) -> dict[str, list[cst.Name]]:
    """Name -> its reads in `function` that receive a method only tensors have (`x` of `x.amax()`): one walk."""
    found = context.facts.memo.tensor_only_receivers.get(function)
    if found is None:
        found = context.facts.memo.tensor_only_receivers[function] = {}
        for node in iter_nodes(function.body):
            if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and isinstance(node.func.value, cst.Name) and node.func.attr.value in TENSOR_ONLY_METHODS):
                found.setdefault(node.func.value.value, []).append(node.func.value)
    return found


def receives_tensor_only_method(node: cst.CSTNode, name: str) -> bool:
    """True when `node` is `name.method(...)` with a method only tensors have."""
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name) and node.func.value.value == name
            and node.func.attr.value in TENSOR_ONLY_METHODS)


# torch.nn modules whose output is not one tensor computed from the input: a pass-through
# (`nn.Identity` returns what it is given), containers, and modules returning tuples.
_NOT_TENSOR_MODULES = frozenset({
    "Identity", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Module",
    "RNN", "LSTM", "GRU", "MultiheadAttention", "RNNBase", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
})


def _torch_module_output(context: FileContext, attr: str) -> bool:
    """True when `self.attr(...)` calls a torch.nn module (`nn.Linear`) whatever the class assigns it.

    Such a module computes a tensor and rejects anything else in eager code too.
    """
    function = context.function
    facts = context.facts
    cls = facts.regions.owner_class.get(function) if function is not None else None
    if cls is None:
        return False
    values = facts.self_attributes(cls).values.get(attr)
    if not values:
        return False
    return all(_makes_torch_module(context, value) for value in values)


def _makes_torch_module(context: FileContext, value: object) -> bool:
    """`nn.Linear(...)`, or an `nn.Sequential` (or, to iterate, an `nn.ModuleList`) of such modules."""
    if not isinstance(value, cst.Call):
        return False
    qualified = context.qualname(value.func)
    if not qualified or not qualified.startswith("torch.nn.") or qualified.count(".") != 2:
        return False
    if qualified == "torch.nn.ModuleList":  # what iterating it gives
        items = value.args[0].value if len(value.args) == 1 else None
        if isinstance(items, (cst.ListComp, cst.GeneratorExp)):
            return _makes_torch_module(context, items.elt)
        return isinstance(items, cst.List) and bool(items.elements) and all(
            _makes_torch_module(context, element.value) for element in items.elements)
    if qualified == "torch.nn.Sequential":
        return bool(value.args) and all(arg.keyword is None and not arg.star and _makes_torch_module(context, arg.value)
                                        for arg in value.args)
    return qualified.rsplit(".", 1)[1] not in _NOT_TENSOR_MODULES


# ----- what a fix may rest on ---------------------------------------------------------------------

# What a fix rests on, operand by operand: the one notion every rewrite into a torch op
# (a torch twin of a Python call, a kept 0-d tensor, a torch.where / torch.cond selection)
# checks, and records in its FixPlan's `rests_on` (benchmarks/fix_operands.py audits them).
EAGER_TENSOR = "tensor"  # a tensor in eager code too: evidence (`Under.EAGER`)
DYNAMO_ONLY = "tensor only under Dynamo"  # a random.uniform/randint/randrange draw: a float or int eagerly
BY_DEFAULT = "tensor by default"  # an untyped forward parameter, an unknown submodule's output
PY_NUMBER = "python value"  # a number, size or flag that stays what it was
NOT_TENSOR = "not a tensor"  # data read into Python, a container, an unknown object
SAFE_OPERANDS = frozenset({EAGER_TENSOR, PY_NUMBER})


def tensor_evidence(context: FileContext, expr: cst.BaseExpression) -> str:
    """What `expr` is for a fix to rest on: EAGER_TENSOR, DYNAMO_ONLY, BY_DEFAULT, PY_NUMBER or NOT_TENSOR.

    Facts call a random draw a tensor (Dynamo traces it as a 0-d tensor input) and an
    untyped forward parameter a tensor (the default); both are fine for saying what the
    compiler does and no evidence for what eager code holds.
    """
    kind = context.kind(expr)
    if kind in (Kind.PY, Kind.SHAPE):
        return PY_NUMBER
    if kind.tensorish and certain_tensor(context, expr, Under.EAGER):
        return EAGER_TENSOR
    if not kind.tensorish:
        return NOT_TENSOR
    return DYNAMO_ONLY if _from_random_draw(context, expr) else BY_DEFAULT


def _from_random_draw(context: FileContext, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True when `expr` reads a Python random draw, directly or through locals bound to one."""
    if depth > 4:
        return False
    for node in iter_nodes(expr):
        if isinstance(node, cst.Call) and context.qualname(node.func) in TRACED_RANDOM_DRAWS:
            return True
        if isinstance(node, cst.Name) and _bound_to_random_draw(context, node.value, depth):
            return True
    return False


def _bound_to_random_draw(context: FileContext, name: str, depth: int) -> bool:
    """Whether a value the visited function binds `name` to reads a random draw (once per name and depth)."""
    memo, key = context.facts.memo, (context.function, name, depth)
    found = memo.random_draws.get(key)
    if found is None:
        values = [value[2] if isinstance(value, tuple) and value[0] == "aug" else value
                  for value in context.local_values(name)]
        found = memo.random_draws[key] = any(
            isinstance(value, cst.BaseExpression) and _from_random_draw(context, value, depth + 1) for value in values)
    return found


# ----- locals never None ---------------------------------------------------------------------------

def definite_kind(context: FileContext, value: cst.BaseExpression) -> Kind:
    """The kind of `value`, TENSOR where facts say MAYBE_TENSOR only for locals never None.

    Facts merge a local's assignments flow-insensitively (`scale = x.new_ones(())` then
    `scale = scale * 2` reads as a tensor or a number); a local never assigned None, and
    not an optional parameter, is a tensor wherever one of its values is.
    """
    kind = context.kind(value)
    if kind is not Kind.MAYBE_TENSOR:
        return kind
    maybes = [name for name in names_read(value) if context.kind(cst.Name(name)) is Kind.MAYBE_TENSOR]
    if maybes and not any(may_hold_non_tensor(context, name) for name in maybes):
        return Kind.TENSOR
    return kind


def tensor_before(context: FileContext, name: str) -> bool:
    """True when local `name` holds a tensor (not None) before a branch that may reassign it."""
    return definite_kind(context, cst.Name(name)) is Kind.TENSOR


_NOT_TENSOR_VALUES = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp,
                      cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


def may_hold_non_tensor(context: FileContext, name: str) -> bool:
    """True when `name` may hold something other than a tensor: an optional parameter, or a
    local ever assigned None, a literal number or string, or a Python container."""
    function = context.function
    if function is None:
        return True
    for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
        if param.name.value == name:
            if param.default is not None and isinstance(param.default, (cst.Name, *_NOT_TENSOR_VALUES)) and (
                    not isinstance(param.default, cst.Name) or param.default.value == "None"):
                return True
            if context.facts.param_kind(function, name) is Kind.MAYBE_TENSOR:
                return True
    for value in context.local_values(name):
        if isinstance(value, tuple) and value[0] == "aug":
            value = value[2]
        if not isinstance(value, cst.BaseExpression):
            continue
        for inner in (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,):
            if isinstance(inner, cst.Name) and inner.value in ("None", "True", "False"):
                return True
            if isinstance(inner, _NOT_TENSOR_VALUES):
                return True
    return False


# ----- one tensor, for a loop over it --------------------------------------------------------------


def certain_one_tensor(context: FileContext, expr: cst.BaseExpression) -> bool:
    """True when `expr` is one tensor for sure, in eager code too: a loop over it runs over its first dim.

    Not a bare forward parameter (often a list of feature maps): a parameter counts only by
    its `Tensor` annotation. A local counts when one of its values is one tensor and none is
    certainly a container; a torch op that returns a tuple (`x.max(0)`, `torch.split`) and a
    submodule that may return several tensors do not.
    """
    return _one_tensor(context, expr, set())


def _one_tensor(context: FileContext, expr: cst.BaseExpression, in_progress: set[str]) -> bool:
    if isinstance(expr, cst.Name):
        if expr.value in in_progress:
            return False  # `x = x.flip(0)`: judged by its other assignments
        in_progress.add(expr.value)
        try:
            return _one_tensor_name_or_value(context, expr, in_progress)
        finally:
            in_progress.discard(expr.value)
    return _one_tensor_name_or_value(context, expr, in_progress)


def _one_tensor_name_or_value(context: FileContext, expr: cst.BaseExpression, in_progress: set[str]) -> bool:
    function = context.function
    if function is None:
        return False
    if isinstance(expr, cst.Name):
        param = find_param(function, expr.value)
        if param is not None:
            return annotation_kind(param.annotation, context.imports) is Kind.TENSOR
        values = context.local_values(expr.value, function)
        # The analysis is flow-insensitive: in `masks = [m for m in masks if m is not None]`
        # then `masks = torch.cat(masks)` the loop runs over the list, so a binding that
        # is certainly a container vetoes the tensor ones.
        if any(_container_value(context, v) for v in values):
            return False
        return any(isinstance(v, cst.BaseExpression) and _one_tensor_value(context, v, in_progress) for v in values)
    return _one_tensor_value(context, expr, in_progress)


def _one_tensor_value(context: FileContext, expr: cst.BaseExpression, in_progress: set[str]) -> bool:
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "data"):
        return _one_tensor_value(context, expr.value, in_progress)
    if isinstance(expr, cst.Name):
        return _one_tensor(context, expr, in_progress)
    if isinstance(expr, cst.BinaryOperation):
        return _one_tensor_value(context, expr.left, in_progress) or _one_tensor_value(context, expr.right, in_progress)
    if isinstance(expr, cst.Subscript):
        return _one_tensor(context, expr.value, in_progress)
    if isinstance(expr, cst.Call):
        func = expr.func
        qualified = context.qualname(func) or ""
        if qualified.startswith("torch."):
            short = qualified.rsplit(".", 1)[-1]
            return short not in _TUPLE_RESULTS and context.kind(expr) is Kind.TENSOR
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return _one_tensor_submodule(context, func.attr.value)
        # A tensor method (`x.float()`) on a tensor.
        return (isinstance(func, cst.Attribute) and func.attr.value not in _TUPLE_RESULTS
                and func.attr.value not in _CONTAINER_METHODS and context.kind(func.value) is Kind.TENSOR)
    return False


def _one_tensor_submodule(context: FileContext, name: str) -> bool:
    """True when `self.NAME` is a built-in torch.nn layer that returns one tensor.

    The model's own submodules may return dicts or tuples (detection heads, HF outputs),
    and so may recurrent and attention layers; those are not taken as tensors.
    """
    cls = context.owner_class
    if cls is None:
        return False
    values = context.facts.self_attributes(cls).values.get(name, [])
    for value in values:
        qualified = context.qualname(value.func) if isinstance(value, cst.Call) else None
        if not qualified or not qualified.startswith("torch.nn."):
            return False
        short = qualified.rsplit(".", 1)[-1]
        if short in _MULTI_OUTPUT_MODULES or not short[:1].isupper():
            return False
    return bool(values)


def _container_value(context: FileContext, value: object) -> bool:
    """A list/tuple/dict display or comprehension, or `list(...)`/`tuple(...)`/`torch.split(...)`."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp, cst.SetComp, cst.GeneratorExp)):
        return True
    if isinstance(value, cst.Call):
        qualified = context.qualname(value.func) or ""
        if qualified in ("builtins.list", "builtins.tuple", "builtins.dict", "builtins.sorted"):
            return True
        short = qualified.rsplit(".", 1)[-1] if qualified.startswith("torch.") else (
            value.func.attr.value if isinstance(value.func, cst.Attribute) else "")
        return short in ("split", "chunk", "unbind", "tensor_split")
    return False


# Kept by hand: what an op returns (a tuple, not a tensor) is in its schema, not in a tag or
# trace rule, and this list names the Python spellings, several of them Python-level.
# Ops that return a tuple of a fixed length (values, indices), not a tensor to iterate.
_TUPLE_RESULTS = frozenset({
    "max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "aminmax", "std_mean",
    "var_mean", "frexp", "unique", "unique_consecutive", "split", "chunk", "unbind", "tensor_split",
    "nonzero", "where", "meshgrid", "broadcast_tensors", "histogram", "slogdet", "svd", "qr", "eig",
    "eigh", "lu", "cummax", "cummin", "hsplit", "vsplit", "dsplit", "split_with_sizes",
})


# torch.nn layers whose call is not one tensor.
_MULTI_OUTPUT_MODULES = frozenset({
    "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "RNN", "LSTM", "GRU",
    "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "FractionalMaxPool2d",
    "FractionalMaxPool3d", "AdaptiveLogSoftmaxWithLoss",
})


_CONTAINER_METHODS = frozenset({"keys", "values", "items", "get", "pop", "copy", "tolist", "numpy"})
