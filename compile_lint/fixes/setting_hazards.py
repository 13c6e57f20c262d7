"""Where a value a setting captures would break, crash or recompile later in the same function.

`capture_dynamic_output_shape_ops` turns `x[mask]`, `nonzero` and their kind into values of a
size known only at run time (an unbacked symbol). Measured on torch 2.13 CPU
(benchmarks/config_fix_calibration.py; results in benchmarks/results/config_fix_calibration.txt),
such a value compiles as one graph through tensor ops, reductions, `torch.cat`, a `view` or
`reshape` whose sizes are Python arithmetic on its size, `len()` and `.shape` in arithmetic,
and `torch.zeros(y.shape[0])`; but later in the traced code:

- a Python test on it or on its size (`if y.numel() > 0:`) breaks there (or fails `fullgraph=True`):
  the break moves, it does not go;
- `for i in y:` makes Dynamo run the whole frame eagerly;
- `y.tolist()` and `list(...)` of its size raise `GuardOnDataDependentSymNode` out of the
  compiled call: a crash where the original only broke;
- `assert list(t.size()) == [..., n, ...]` with a tensor `n` crashes Dynamo with every setting.

So a setting is offered only where every use of the value, followed through the names it
is bound to in its function, is one that compiles. A value passed to a Python function
(not a torch op, a tensor method or an nn module), returned from a function other than a
compiled `forward`, stored on `self` or read in a nested function is not followed: no
setting is offered for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.predicates import COMPILE_FUNCTIONS
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.captured_sizes import captured_size
from compile_lint.fixes.keep_tensor import tensor_arithmetic_operand

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

# Methods that read a tensor's data or size into Python.
_READ_METHODS = frozenset({"tolist", "item", "numpy", "__len__", "__bool__", "__int__", "__index__"})
# Python builtins that read a value into Python (a size or the data).
_READ_BUILTINS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.list", "builtins.tuple",
                            "builtins.range", "builtins.sorted", "builtins.set", "builtins.enumerate",
                            "builtins.zip", "builtins.iter", "builtins.next", "builtins.print", "builtins.str"})
# Python builtins whose result is a number the use of which is followed further.
_NUMBER_BUILTINS = frozenset({"builtins.len", "builtins.max", "builtins.min", "builtins.abs"})
# Reductions whose result, over everything or over the rows, has a fixed shape.
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "any", "all", "std", "var",
                         "logsumexp", "count_nonzero"})
# Attributes of a tensor that give its sizes.
_SIZE_ATTRIBUTES = frozenset({"shape", "size", "numel", "nelement"})
# List methods that put the value into a local list: the list is followed instead.
_COLLECTING = frozenset({"append", "extend", "insert"})
# Expressions a value passes through on its way to a use.
_THROUGH = (cst.Attribute, cst.Subscript, cst.SubscriptElement, cst.Index, cst.Slice, cst.BinaryOperation,
            cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget, cst.Element, cst.Tuple, cst.List,
            cst.StarredElement, cst.DictElement, cst.Dict, cst.Arg)
_TESTS = (cst.If, cst.While, cst.IfExp, cst.Assert, cst.CompIf)


def flow_hazard(context: FileContext, node: cst.BaseExpression) -> Optional[str]:
    """Why the value `node` computes cannot be captured without a break, crash or recompile later; None when it can.

    Every read of the value (the expression itself, then each local name bound from it,
    transitively) must reach only uses that compile with the value of unknown size.
    """
    function = context.function
    if function is None:
        return "not inside a function"
    tainted: set[str] = set()
    pending: list[cst.CSTNode] = [node]
    checked: set[int] = set()
    while pending:
        read = pending.pop()
        if id(read) in checked:
            continue
        checked.add(id(read))
        outcome = _use(context, function, read)
        if isinstance(outcome, str):
            return outcome
        new = {name for name in outcome if name not in tainted}
        tainted |= new
        for name in new:
            pending.extend(_reads(context, function, name))
    return None


def _use(context: FileContext, function: cst.FunctionDef, read: cst.CSTNode) -> "str | set[str]":
    """What one read leads to: a hazard (its reason), or the local names the value flows into.

    Followed up through the expressions around it; a full reduction (`y.sum()`, `y.sum(0)`
    of a selection's rows) and a size meeting tensor arithmetic (`x / len(y)`) give values of
    a fixed shape, where the following stops.
    """
    node, parent = read, context.parent(read)
    number = False  # the value is now a size read off it (`len(y)`, `y.shape[0]`)
    while parent is not None:
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _SIZE_ATTRIBUTES:
            number = True
        if isinstance(parent, cst.BinaryOperation) and number:
            other = parent.right if parent.left is node else parent.left
            if context.kind(other).tensorish:
                return set()  # a size in tensor arithmetic: a tensor of the other's shape
        if isinstance(parent, cst.Call) and parent.func is node and _reduces(parent):
            return set()
        if isinstance(parent, cst.Call) and (context.qualname(parent.func) or "") in _NUMBER_BUILTINS:
            number = True
        if isinstance(parent, _TESTS) and getattr(parent, "test", None) is node:
            return f"then `{_code(node)}` decides a Python test (the break would move there)"
        if isinstance(parent, cst.BooleanOperation) or (
                isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)):
            return f"then `{_code(parent)}` is a Python truth test (the break would move there)"
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            return f"then a `for` iterates over `{_code(node)}` (Dynamo would run the frame eagerly)"
        if isinstance(parent, cst.Call):
            outcome = _call(context, parent, node)
            if isinstance(outcome, (str, set)):
                return outcome
        elif isinstance(parent, cst.Assign) and parent.value is node:
            return _targets(parent.targets[0].target if len(parent.targets) == 1 else None, "an assignment")
        elif isinstance(parent, cst.AnnAssign) and parent.value is node:
            return _targets(parent.target, "an assignment")
        elif isinstance(parent, cst.AugAssign):
            return _targets(parent.target, "an update") if parent.value is node else set()
        elif isinstance(parent, cst.AssignTarget):
            return set()  # written into: `x[idx] = v` keeps shapes static
        elif isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
            return set()  # a loop variable of the same name: bound anew
        elif isinstance(parent, cst.Return):
            if _compiled_here(context, function):
                return set()  # handed to the caller of the compiled function, outside the graph
            return "then it is returned to a caller the check does not follow"
        elif isinstance(parent, (cst.Lambda, cst.FunctionDef, cst.Yield, cst.Await)):
            return "then it is read where the check does not follow (a nested function, a yield)"
        elif isinstance(parent, (cst.Expr, cst.Del)):
            return set()
        elif not isinstance(parent, _THROUGH) and not isinstance(parent, cst.Call):
            return f"then `{_code(parent)[:60]}` uses it in a way the check does not follow"
        node, parent = parent, context.parent(parent)
    return set()


def _call(context: FileContext, call: cst.Call, node: cst.CSTNode) -> "str | set[str] | None":
    """A read passed to or called on by `call`: a hazard, the names it flows into, or None to go on up."""
    func = call.func
    if node is func:
        # `y.tolist()`: the read came up through the method's attribute
        if isinstance(func, cst.Attribute) and func.attr.value in _READ_METHODS:
            return f"then `.{func.attr.value}()` reads it into Python (Dynamo fails there once it is captured)"
        return None  # a tensor method: its result is followed
    qualified = context.qualname(func) or ""
    if qualified in _READ_BUILTINS:
        return f"then `{_code(func)}()` reads it into Python"
    if qualified in _NUMBER_BUILTINS or qualified.startswith("torch.") or qualified.startswith("math."):
        return None
    if isinstance(func, cst.Attribute) and func.attr.value in _COLLECTING and isinstance(func.value, cst.Name):
        return {func.value.value}
    if isinstance(func, cst.Attribute) and _torch_module(context, func.value):
        return None  # `self.proj(y)`: a torch.nn module's forward
    if isinstance(func, cst.Attribute) and context.kind(func.value).tensorish:
        return None  # `x.index_select(0, y)`: a tensor method taking it
    return f"then it is passed to `{_code(func)}()`, which the check does not follow"


def _reduces(call: cst.Call) -> bool:
    """`y.sum()`, `y.mean(0)`, `y.max(dim=0)`: a reduction over everything or over the rows, whose result's
    shape no longer depends on how many were selected."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _REDUCTIONS:
        return False
    dims = [arg.value for arg in call.args if arg.keyword is None or arg.keyword.value == "dim"]
    return not dims or isinstance(dims[0], cst.Integer) and dims[0].value == "0"


def _compiled_here(context: FileContext, function: cst.FunctionDef) -> bool:
    """True when Dynamo starts at `function` (its return leaves the graph): it is decorated with
    `torch.compile`, passed to it by name in this file, or the `forward` of a class this file
    compiles an instance of (`torch.compile(Net())`, `model = Net(); torch.compile(model)`)."""
    if any(context.qualname(d.decorator) in COMPILE_FUNCTIONS or isinstance(d.decorator, cst.Call)
           and context.qualname(d.decorator.func) in COMPILE_FUNCTIONS for d in function.decorators):
        return True
    owner = context.owner_class
    for call in context.module_index.calls:
        if context.qualname(call.func) not in COMPILE_FUNCTIONS or not call.args:
            continue
        target = call.args[0].value
        if isinstance(target, cst.Name) and target.value == function.name.value and owner is None:
            return True
        if owner is not None and function.name.value == "forward" and _makes(context, target, owner.name.value):
            return True
    return False


def _makes(context: FileContext, expr: cst.BaseExpression, class_name: str) -> bool:
    """`Cls(...)`, `Cls(...).eval()`, or a name bound at the top level to one of these."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value  # `.eval()`, `.to(device)`
    if isinstance(expr, cst.Call):
        return isinstance(expr.func, cst.Name) and expr.func.value == class_name
    if isinstance(expr, cst.Name):
        return any(isinstance(value, cst.BaseExpression) and _makes(context, value, class_name)
                   for value in context.module_assignments.get(expr.value, ()) if not isinstance(value, cst.Name))
    return False


def _torch_module(context: FileContext, expr: cst.BaseExpression) -> bool:
    """`self.NAME` bound to an instance of a torch.nn class (`self.proj = nn.Linear(...)`)."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return False
    values = context.bound_values(expr)
    return bool(values) and all(isinstance(value, cst.Call) and (context.qualname(value.func) or "").startswith(
        "torch.nn.") for value in values)


def _targets(target: Optional[cst.BaseExpression], what: str) -> "str | set[str]":
    """The local names an assignment binds the value to; a hazard for other targets (`self.x = y`)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: set[str] = set()
        for element in target.elements:
            inner = _targets(element.value, what)
            if isinstance(inner, str):
                return inner
            names |= inner
        return names
    if isinstance(target, cst.Subscript):
        return set()  # `out[i] = y`: written into a tensor
    if isinstance(target, cst.StarredElement):
        return _targets(target.value, what)
    spelled = _code(target) if target is not None else "several targets"
    return f"then {what} stores it in `{spelled}`, which the check does not follow"


def _reads(context: FileContext, function: cst.FunctionDef, name: str) -> list[cst.Name]:
    """Every read of local `name` in `function` (attribute names and keywords are not reads)."""
    found = []
    for node in iter_nodes(function.body):
        if isinstance(node, cst.Name) and node.value == name:
            parent = context.parent(node)
            if not (isinstance(parent, cst.Attribute) and parent.attr is node
                    or isinstance(parent, cst.Arg) and parent.keyword is node):
                found.append(node)
    return found


def _number(context: FileContext, expr: cst.BaseExpression) -> bool:
    """A Python number: a literal, a size, a flag or a number read from a tensor (not a list, not a tensor)."""
    return isinstance(expr, (cst.Integer, cst.Float)) or context.kind(expr) in (Kind.PY, Kind.SHAPE, Kind.DATA)


def _shown(context: FileContext, node: Optional[cst.CSTNode]) -> cst.CSTNode:
    """The expression to quote for a use: the call an argument is passed to, not the bare argument."""
    while isinstance(node, (cst.Arg, cst.Element, cst.Index, cst.SubscriptElement, cst.Slice)):
        node = context.parent(node)
    assert node is not None
    return node


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


# Calls that take a list of sizes read with `.tolist()`: measured clean once captured.
_SIZE_LIST_FUNCTIONS = {"torch.split": 1, "torch.nn.functional.pad": 1}
_SIZE_LIST_METHODS = {"split": 0}
_INTEGER_CASTS = frozenset({"long", "int", "short"})
_INTEGER_RESULTS = frozenset({"argmax", "argmin", "argsort", "nonzero", "bincount", "count_nonzero", "searchsorted"})


def list_hazard(context: FileContext, tolist: cst.Call) -> Optional[str]:
    """Why the numbers `t.tolist()` reads cannot be captured (`capture_scalar_outputs`) without a
    break or crash later; None when every use compiles once captured.

    The list may be passed straight as split sizes or a pad; bound to a name and indexed with
    literals; unpacked into names; or looped over. Each number it gives must then be only a
    size, slice bound or index that compiles once captured, or an operand of tensor arithmetic
    (fixes/capture_scalars.py, fixes/keep_tensor.py).
    """
    def number_ok(read: cst.CSTNode) -> bool:
        return captured_size(context, read) or tensor_arithmetic_operand(context, read)

    function = context.function
    parent = context.parent(tolist)
    if isinstance(parent, cst.Arg) and _takes_size_list(context, parent):
        return None
    numbers: list[cst.CSTNode] = []
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and function is not None:
        target = parent.targets[0].target
        if isinstance(target, cst.Name):
            if len(context.local_values(target.value)) != 1:
                return f"then `{target.value}` is bound more than once, which the check does not follow"
            for read in _reads(context, function, target.value):
                if read is target:
                    continue
                numbers_or_hazard = _list_read(context, read)
                if isinstance(numbers_or_hazard, str):
                    return numbers_or_hazard
                numbers += numbers_or_hazard
        elif isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements):
            for element in target.elements:
                name = element.value
                assert isinstance(name, cst.Name)
                numbers += [read for read in _reads(context, function, name.value) if read is not name]
        else:
            return f"then `{_code(target)}` stores it, which the check does not follow"
    elif isinstance(parent, cst.For) and parent.iter is tolist and isinstance(parent.target, cst.Name) \
            and function is not None:
        numbers += [read for read in _reads(context, function, parent.target.value) if read is not parent.target]
    else:
        return f"then `{_code(_shown(context, parent))[:60]}` uses the list in a way the check does not follow"
    for number in numbers:
        if not number_ok(number):
            use = _shown(context, context.parent(number))
            return f"then `{_code(use)[:60]}` uses a number from it beyond what compiles once captured"
    return None


def _list_read(context: FileContext, read: cst.Name) -> "str | list[cst.CSTNode]":
    """One read of the list's name: the numbers it gives (`s[0]`), or why it is a hazard."""
    parent = context.parent(read)
    if isinstance(parent, cst.Arg) and _takes_size_list(context, parent):
        return []
    if (isinstance(parent, cst.Subscript) and parent.value is read and len(parent.slice) == 1
            and isinstance(parent.slice[0].slice, cst.Index) and isinstance(parent.slice[0].slice.value, cst.Integer)):
        return [parent]  # `s[1]`: one number
    if isinstance(parent, cst.For) and parent.iter is read and isinstance(parent.target, cst.Name):
        function = context.function
        assert function is not None
        return [other for other in _reads(context, function, parent.target.value) if other is not parent.target]
    return f"then `{_code(_shown(context, parent))[:60]}` uses the list in a way the check does not follow"


def _takes_size_list(context: FileContext, argument: cst.Arg) -> bool:
    """`torch.split(x, sizes)`, `x.split(sizes)`, `F.pad(x, pads)`: where a list of numbers compiles once captured."""
    call = context.parent(argument)
    if not isinstance(call, cst.Call) or argument.keyword is not None:
        return False
    position = [arg for arg in call.args if arg.keyword is None].index(argument)
    qualified = context.qualname(call.func) or ""
    if qualified in _SIZE_LIST_FUNCTIONS:
        return _SIZE_LIST_FUNCTIONS[qualified] == position
    func = call.func
    return (isinstance(func, cst.Attribute) and not qualified and _SIZE_LIST_METHODS.get(func.attr.value) == position
            and context.kind(func.value).tensorish)


def integer_evidence(context: FileContext, tensor: cst.BaseExpression) -> bool:
    """True when `tensor` certainly holds integers: a `.long()`/`.int()` cast, `argmax`, `nonzero`, ...
    (or a local bound once to one)."""
    if isinstance(tensor, cst.Name):
        values = context.local_values(tensor.value)
        return (len(values) == 1 and isinstance(values[0], cst.BaseExpression)
                and integer_evidence(context, values[0]))
    if isinstance(tensor, cst.Call) and isinstance(tensor.func, cst.Attribute):
        method = tensor.func.attr.value
        if method in _INTEGER_CASTS or method in _INTEGER_RESULTS:
            return True
        if method == "to" and any((context.qualname(arg.value) or "") in _INTEGER_DTYPES for arg in tensor.args):
            return True
    if isinstance(tensor, cst.Call):
        qualified = context.qualname(tensor.func) or ""
        if qualified.startswith("torch.") and qualified.rsplit(".", 1)[1] in _INTEGER_RESULTS:
            return True
        return any(arg.keyword is not None and arg.keyword.value == "dtype"
                   and (context.qualname(arg.value) or "") in _INTEGER_DTYPES for arg in tensor.args)
    return False


_INTEGER_DTYPES = frozenset({"torch.long", "torch.int64", "torch.int", "torch.int32", "torch.int16"})


def number_hazard(context: FileContext, read: cst.BaseExpression) -> Optional[str]:
    """Why the number `read` (`t.item()`, `int(t)`) cannot be captured (`capture_scalar_outputs`) without a
    break, crash or recompile later; None when every use compiles once captured.

    A use compiles when it is a size, slice bound or index measured clean (fixes/capture_scalars.py),
    an operand of tensor arithmetic (the result is a tensor), or Python arithmetic whose result
    is used so in turn; a name the number is bound to is followed through its reads; a
    return leaves the graph only from a function this file compiles. Anything else (a test,
    a `range()`, a call the check does not know, text) is a hazard, with what it is.
    """
    function = context.function
    if function is None:
        return "not inside a function"
    pending: list[cst.CSTNode] = [read]
    followed: set[str] = set()
    while pending:
        node = pending.pop()
        while True:
            if captured_size(context, node) or tensor_arithmetic_operand(context, node):
                break
            parent = context.parent(node)
            if parent is None:
                return "then it is used where the check does not follow"
            other = (parent.right if parent.left is node else parent.left) \
                if isinstance(parent, cst.BinaryOperation) else None
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus) or (
                    other is not None and _number(context, other)):
                node = parent  # Python arithmetic on numbers: its result is used in turn
                continue
            if isinstance(parent, (cst.Element, cst.Tuple)):
                node = parent  # `return y, n`: the tuple is used in turn
                continue
            if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1 \
                    and isinstance(parent.targets[0].target, cst.Name):
                name = parent.targets[0].target.value
                if name not in followed:
                    if len(context.local_values(name)) != 1:
                        return f"then `{name}` is bound more than once, which the check does not follow"
                    followed.add(name)
                    pending.extend(use for use in _reads(context, function, name)
                                   if use is not parent.targets[0].target)
                break
            if isinstance(parent, cst.Return) and _compiled_here(context, function):
                break
            shown = _shown(context, parent)
            return f"then `{_code(shown)[:60]}` uses it beyond what compiles once captured"
    return None
