"""What calls give: torch functions and tensor methods by name, the file's own functions by what they return.

`CallKinds` is the part of `Facts` that resolves a call made in traced code to the function
of the file it certainly runs (`call_target`), and gives a call its kind: a torch function
or a tensor method by the tables below, a helper or method of the file by the join of its
returns, a submodule by its `forward`, a call of functions of other files by the values the
program model found it returns.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.bindings import is_none, returned_values, tuple_items
from compile_lint.analysis.kinds.lattice import Kind, combine, join
from compile_lint.analysis.kinds.parts import FactsParts
from compile_lint.analysis.model.values import (
    ConstV,
    ContainerV,
    ExternalInstanceV,
    FlagV,
    KeywordsV,
    KindV,
    PatternV,
    TupleV,
    Value,
)
from compile_lint.analysis.syntax.calls import calls_in
from compile_lint.analysis.syntax.imports import dotted_name

# torch functions whose result is not a tensor.
TORCH_NON_TENSOR = {
    "torch.is_tensor": Kind.PY,
    "torch.is_floating_point": Kind.PY,
    "torch.is_complex": Kind.PY,
    "torch.is_grad_enabled": Kind.PY,
    "torch.is_inference_mode_enabled": Kind.PY,
    "torch.get_default_dtype": Kind.PY,
    "torch.numel": Kind.SHAPE,
    "torch.Size": Kind.SHAPE,
    "torch.broadcast_shapes": Kind.SHAPE,
    "torch.device": Kind.PY,
    "torch.dtype": Kind.PY,
    "torch.finfo": Kind.PY,
    "torch.iinfo": Kind.PY,
    "torch.get_autocast_dtype": Kind.PY,
    "torch.is_autocast_enabled": Kind.PY,
    "torch.sym_int": Kind.SHAPE,
    "torch.sym_float": Kind.SHAPE,
    "torch.sym_max": Kind.SHAPE,
    "torch.sym_min": Kind.SHAPE,
    "torch._assert": Kind.PY,
    # Python bools computed from data: torch tags them data_dependent_output (the rules'
    # generated DATA_DEPENDENT_OUTPUT_FUNCTIONS; tests/test_torch_tables.py keeps the two equal).
    "torch.equal": Kind.DATA,
    "torch.allclose": Kind.DATA,
}
TORCH_NON_TENSOR_PREFIXES = (
    "torch.compiler.",
    "torch._dynamo.",
    "torch.jit.",
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.library.",
    "torch.utils.",
    "torch.autograd.",
    "torch.testing.",
    "torch.amp.",
    "torch.autocast",
    "torch.no_grad",
    "torch.enable_grad",
    "torch.inference_mode",
    "torch.set_grad_enabled",
    "torch.compile",
    "torch.manual_seed",
    "torch.set_",
    "torch.use_deterministic",
    "torch.nn.init.",
    "torch.nn.utils.",
    "torch.fx.",
    "torch.export.",
    "torch.onnx.",
    "torch.profiler.",
    "torch._C.",
    "torch.ops.",
)
TENSOR_SHAPE_METHODS = frozenset(
    {"size", "dim", "ndimension", "numel", "nelement", "stride", "element_size",
     "storage_offset", "__len__"}
)
TENSOR_PY_METHODS = frozenset(
    {"is_floating_point", "is_complex", "is_contiguous", "is_signed", "get_device",
     "is_pinned", "is_shared", "is_set_to", "has_names", "is_nonzero_shape"}
)
TENSOR_DATA_METHODS = frozenset({"item", "tolist", "data_ptr", "equal", "allclose"})  # see TORCH_NON_TENSOR


# Every torch.Tensor method named get_* or is_* (torch 2.13); any other such name is not a tensor's.
_TENSOR_GET_IS_METHODS = frozenset({
    "get_device", "is_coalesced", "is_complex", "is_conj", "is_contiguous", "is_cpu", "is_cuda",
    "is_distributed", "is_floating_point", "is_inference", "is_ipu", "is_leaf", "is_maia", "is_meta",
    "is_mkldnn", "is_mps", "is_mtia", "is_neg", "is_nested", "is_nonzero", "is_pinned", "is_quantized",
    "is_same_size", "is_set_to", "is_shared", "is_signed", "is_sparse", "is_sparse_csr", "is_vulkan",
    "is_xla", "is_xpu",
})


# torch arithmetic that Dynamo traces symbolically when every argument is a size or a number.
_TORCH_SIZE_ARITHMETIC = frozenset({"torch.div"})


# Python `random` draws that Dynamo traces as 0-d tensors (its RandomVariable functions,
# torch 2.13): `if random.uniform(0, 1) < p:` is data-dependent branching (measured). Eager
# code gets a float or an int: a tensor only under Dynamo, which no fix may rest on
# (certainty.tensor_evidence).
TRACED_RANDOM_DRAWS = frozenset({"random.uniform", "random.randint", "random.randrange"})


class CallKinds(FactsParts):
    """The kinds of calls, and the functions they run (a part of `Facts`)."""

    def call_sites(self) -> dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]:
        """Traced function -> (caller, call) pairs for calls made from traced functions."""
        if self.memo.call_sites is None:
            by_name: dict[str, list[cst.FunctionDef]] = {}
            for function in self.regions.functions:
                by_name.setdefault(function.name.value, []).append(function)
            sites: dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]] = {}
            for caller in self.regions.functions:
                for call in calls_in(caller):
                    func = call.func
                    name = func.value if isinstance(func, cst.Name) else (
                        func.attr.value if isinstance(func, cst.Attribute) else None)
                    for target in by_name.get(name or "", []):
                        sites.setdefault(target, []).append((caller, call))
            self.memo.call_sites = sites
        return self.memo.call_sites

    def resolved_call_sites(self) -> dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]:
        """Traced function -> the calls from traced code that certainly run it."""
        if self.memo.resolved_sites is None:
            sites: dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]] = {}
            for callers in self.call_sites().values():
                for caller, call in callers:
                    target = self.call_target(call, caller)
                    if target is not None and (caller, call) not in sites.get(target, []):
                        sites.setdefault(target, []).append((caller, call))
            for caller in self.regions.functions:
                for call in calls_in(caller):
                    forward = self.callees.module_forward(call, caller)
                    if forward is not None and forward in self.regions.functions:
                        sites.setdefault(forward, []).append((caller, call))
            self.memo.resolved_sites = sites
        return self.memo.resolved_sites

    def call_target(self, call: cst.Call, function: cst.FunctionDef) -> Optional[cst.FunctionDef]:
        """The function of this file that `call` (made in `function`) certainly runs, or None.

        A module-level or nested function called by name, `self.method(...)` through the
        class and its same-file bases, or a submodule's `forward` (`self.attn(x)`).
        """
        func = call.func
        if isinstance(func, cst.Name):
            target = self._local_function(func.value, function)
            if target is not None:
                return target
        elif (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
                and function in self.regions.owner_class):
            target = self._find_method(self.regions.owner_class[function], func.attr.value)
            if target is not None:
                return target
        return self.callees.module_forward(call, function)

    def _local_function(self, name: str, function: cst.FunctionDef) -> Optional[cst.FunctionDef]:
        for candidate in self.regions.functions:
            if candidate.name.value == name and candidate not in self.regions.owner_class:
                return candidate
        return None

    def _find_method(self, cls: cst.ClassDef, name: str, depth: int = 0) -> Optional[cst.FunctionDef]:
        method = self._methods_of(cls).get(name)
        if method is not None or depth > 20:
            return method
        for arg in cls.bases:
            base_name = dotted_name(arg.value)
            for candidate in self.regions.owner_class.values():
                if candidate.name.value == base_name and candidate is not cls:
                    found = self._find_method(candidate, name, depth + 1)
                    if found is not None:
                        return found
        return None

    def _methods_of(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        if cls not in self.memo.methods:
            self.memo.methods[cls] = {
                stmt.name.value: stmt for stmt in cls.body.body if isinstance(stmt, cst.FunctionDef)
            }
        return self.memo.methods[cls]

    def _call_kind(self, call: cst.Call, function: cst.FunctionDef) -> Kind:
        func = call.func
        qualified = self.imports.qualname(func)
        if qualified is not None:
            return self._qualified_call_kind(qualified, call, function)
        if isinstance(func, cst.Name):
            target = self._local_function(func.value, function)
            if target is not None:
                return self.return_kind(target)
            if func.value in self.regions.module_classes:
                return Kind.MODULE
            callee = self.name_kind(func.value, function)
            if callee is Kind.SELF:
                return self._self_call_kind(function)
            return self._module_call_kind(call, function) if callee is Kind.MODULE else Kind.UNKNOWN
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                cls = self.regions.owner_class.get(function)
                if cls is not None:
                    target = self._find_method(cls, method)
                    if target is not None:
                        return self.return_kind(target)
                    attr_kind = self.self_attribute_kind(method, function)
                    if attr_kind is Kind.MODULE:
                        return self._module_call_kind(call, function)
                return Kind.UNKNOWN
            base = self.kind(receiver, function)
            if base is Kind.PENDING:
                return base
            if (base is Kind.MAYBE_TENSOR and method.startswith(("get_", "is_"))
                    and method not in _TENSOR_GET_IS_METHODS):
                # An optional parameter that is not a tensor: `past_key_values.get_seq_length(i)`,
                # `cache_params.is_recording_past(i)` (transformers caches). torch.Tensor has no such method.
                return Kind.UNKNOWN
            if base.tensorish:
                if method in TENSOR_SHAPE_METHODS:
                    return Kind.SHAPE
                if method in TENSOR_PY_METHODS:
                    return Kind.PY
                if method in TENSOR_DATA_METHODS:
                    return Kind.DATA
                if method == "numpy":
                    return Kind.NDARRAY
                if method == "type" and not call.args:
                    return Kind.PY
                dict_method = method in ("get", "items", "keys", "values", "pop", "copy")
                return Kind.TENSOR if base is Kind.TENSOR or not dict_method else Kind.UNKNOWN
            if base is Kind.MODULE:
                return Kind.TENSOR if method in ("forward", "__call__") else Kind.UNKNOWN
            if base is Kind.NDARRAY:
                return Kind.NDARRAY
            if base is Kind.SHAPE and method in ("numel", "index", "count"):
                return Kind.SHAPE
            if base is Kind.DICT and method in ("keys", "values", "items"):
                return Kind.LIST
        return Kind.UNKNOWN

    def _self_call_kind(self, function: cst.FunctionDef) -> Kind:
        """What `self(x)` gives in a method of a module class (`out = self(out)` in `generate`): what its
        forward returns (a tensor unless the class's own forward says otherwise); unknown in other classes."""
        cls = self.regions.owner_class.get(function)
        if cls is None or self.regions.module_classes.get(cls.name.value) is not cls:
            return Kind.UNKNOWN
        forward = self._find_method(cls, "forward")
        if forward is not None:
            returned = self.return_kind(forward)
            if returned not in (Kind.UNKNOWN, Kind.PENDING):
                return returned
        return Kind.TENSOR

    def _module_call_kind(self, call: cst.Call, function: cst.FunctionDef) -> Kind:
        """What calling a submodule gives: its forward's return kind when this file defines its class.

        Submodules of other classes (`nn.Linear`, imported blocks) are taken to return a tensor.
        """
        forward = self.callees.module_forward(call, function)
        if forward is not None:
            returned = self.return_kind(forward)
            if returned not in (Kind.UNKNOWN, Kind.PENDING):
                return returned
        return Kind.TENSOR

    def _qualified_call_kind(self, qualified: str, call: cst.Call, function: cst.FunctionDef) -> Kind:
        if qualified in TRACED_RANDOM_DRAWS:
            return Kind.TENSOR
        if qualified in TORCH_NON_TENSOR:
            return TORCH_NON_TENSOR[qualified]
        if qualified in _TORCH_SIZE_ARITHMETIC and call.args and all(
            self.kind(arg.value, function) in (Kind.SHAPE, Kind.PY) for arg in call.args if arg.keyword is None
        ):
            # `torch.div(seq_len, window, rounding_mode="trunc")` on sizes (Longformer, LED): Dynamo
            # keeps it symbolic, and it works as a size with static and dynamic shapes (measured, 2.13).
            return Kind.SHAPE
        if qualified.startswith("torch."):
            if qualified.startswith(TORCH_NON_TENSOR_PREFIXES):
                return Kind.UNKNOWN
            last = qualified.rsplit(".", 1)[-1]
            if (qualified.startswith("torch.nn.") and not qualified.startswith("torch.nn.functional.")
                    and last[:1].isupper()):
                return Kind.MODULE
            return Kind.TENSOR
        if qualified.startswith(("numpy.", "scipy.")):
            return Kind.NDARRAY
        if qualified.startswith("math."):
            return Kind.DATA if any(self.kind(a.value, function).tensorish for a in call.args) else Kind.PY
        if not qualified.startswith("builtins."):
            returned = self.call_returns(call, function) if self.call_returns is not None else None
            if returned:
                # Functions of other files: what the program model found this call returns.
                return values_kind(returned)
        if qualified.startswith("builtins."):
            name = qualified[len("builtins."):]
            arg_kinds = [self.kind(a.value, function) for a in call.args]
            if name == "len":
                return Kind.SHAPE
            if name in ("int", "float", "bool", "complex", "round"):
                if any(k.tensorish for k in arg_kinds):
                    return Kind.DATA
                return combine(arg_kinds) if arg_kinds else Kind.PY
            if name in ("isinstance", "issubclass", "hasattr", "callable", "id", "str", "repr", "type"):
                return Kind.PY
            if name in ("list", "sorted", "reversed"):
                return Kind.LIST
            if name in ("dict",):
                return Kind.DICT
            if name in ("abs", "min", "max", "sum", "pow", "divmod"):
                return combine(arg_kinds) if arg_kinds else Kind.UNKNOWN
            if name in ("tuple",):
                return Kind.LIST
            return Kind.UNKNOWN
        return Kind.UNKNOWN

    def returned_values(self, function: cst.FunctionDef) -> list[cst.BaseExpression]:
        """The expressions `function`'s `return` statements return, computed once per function."""
        cached = self.memo.returned_values.get(function)
        if cached is None:
            cached = self.memo.returned_values[function] = returned_values(function)
        return cached

    def return_kind(self, function: cst.FunctionDef) -> Kind:
        """The join of what `function` returns."""
        if function in self.memo.returns:
            return self.memo.returns[function]
        key = ("return", function)
        if key in self.memo.in_progress:
            return Kind.UNKNOWN
        self.memo.in_progress.add(key)
        try:
            kinds = [self.kind(v, function) for v in self.returned_values(function)]
            result = join(kinds) if kinds else Kind.PY
        finally:
            self.memo.in_progress.discard(key)
        self.memo.returns[function] = result
        return result

    def returned_element_kind(self, call: cst.Call, index: int, function: cst.FunctionDef) -> Optional[Kind]:
        """The kind of item `index` of what `call` returns, when its target returns tuples; else None.

        `embeddings, height, width = self.patch_embed(x)` where the submodule's forward
        ends in `return embeddings, height, width`: the second and third are sizes, not
        tensors. A target that returns a tensor gives its rows (TENSOR).
        """
        target = self.call_target(call, function)
        key = ("element-return", target, index)
        if target is None or key in self.memo.in_progress:
            return None
        self.memo.in_progress.add(key)
        try:
            kinds = []
            for value in self.returned_values(target):
                if is_none(value):
                    continue  # unpacking None fails: the path that returns it is not this one
                items = tuple_items(value)
                if items is None:
                    whole = self.kind(value, target)
                    kinds.append(Kind.TENSOR if whole is Kind.TENSOR else Kind.UNKNOWN)
                else:
                    kinds.append(self.kind(items[index], target) if index < len(items) else Kind.UNKNOWN)
            return join(kinds) if kinds else None
        finally:
            self.memo.in_progress.discard(key)


def values_kind(found: frozenset) -> Kind:
    """The kind of an expression the program model found to hold the abstract values `found` (joined)."""
    return join([_value_kind(value) for value in found])


def _value_kind(value: Value) -> Kind:
    if isinstance(value, KindV):
        return value.kind
    if isinstance(value, (ConstV, PatternV, FlagV)):
        return Kind.PY  # None, a number, a string, a flag: as a literal is
    if isinstance(value, TupleV):
        return Kind.LIST  # as a tuple display is
    if isinstance(value, KeywordsV):
        return Kind.DICT
    if isinstance(value, ContainerV):
        return _CONTAINER_KINDS.get(value.kind, Kind.UNKNOWN)
    if isinstance(value, ExternalInstanceV):
        last = value.name.rsplit(".", 1)[-1]
        torch_module = value.name.startswith("torch.nn.") and not value.name.startswith("torch.nn.functional.")
        return Kind.MODULE if torch_module and last[:1].isupper() else Kind.UNKNOWN
    return Kind.UNKNOWN  # an object, a callable, a module: not a kind the facts tell apart


_CONTAINER_KINDS = {"list": Kind.LIST, "set": Kind.LIST, "dict": Kind.DICT, "modulelist": Kind.MODULE,
                    "sequential": Kind.MODULE, "moduledict": Kind.MODULE}
